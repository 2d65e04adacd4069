package link_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
	"github.com/gridbed/gridbed/faults/link"
)

func newChainRig(t *testing.T, seed uint64, peers int) (*rig, *link.Chain) {
	r := newRig(t, seed)
	c := link.NewChain(r.w, r.w, seed)
	r.register(c, peers)
	return r, c
}

// checkLayers checks that Chain.Faults reports its layers' counters.
func checkLayers(t *testing.T, seed uint64, c *link.Chain) link.ChainStats {
	t.Helper()
	f := c.Faults()
	want := link.ChainStats{
		DroppedPartition: c.Partition.Faults().Dropped,
		DroppedLoss:      c.Loss.Faults().Dropped,
		Duplicated:       c.Duplicate.Faults().Duplicated,
		Delayed:          c.Delay.Faults().Delayed,
	}
	if f != want {
		t.Errorf("seed %d: Chain.Faults = %+v, layers say %+v", seed, f, want)
	}
	return f
}

// TestChainOrder checks Partition → Loss → Duplicate → Delay.
func TestChainOrder(t *testing.T) {
	const seed, n = 5, 100
	t.Run("partition before loss", func(t *testing.T) {
		r, c := newChainRig(t, seed, 4)
		c.Partition.Cut("split", low, false)
		c.Loss.SetLoss(1)
		for range n {
			r.send(c, 0, 2) // crosses the cut
			r.send(c, 0, 1) // does not
		}
		r.run()
		if got := len(r.take()); got != 0 {
			t.Errorf("seed %d: %d delivered, want 0", seed, got)
		}
		if f := checkLayers(t, seed, c); f.DroppedPartition != n || f.DroppedLoss != n {
			t.Errorf("seed %d: %+v, want %d dropped by the partition (first) and %d by loss", seed, f, n, n)
		}
	})
	t.Run("loss before duplicate", func(t *testing.T) {
		r, c := newChainRig(t, seed, 2)
		c.Loss.SetLoss(0.5)
		c.Duplicate.SetDuplicate(1)
		for range n {
			r.send(c, 0, 1)
		}
		r.run()
		f := checkLayers(t, seed, c)
		kept := n - int(f.DroppedLoss)
		if f.DroppedLoss == 0 || f.DroppedLoss == n || f.Duplicated != uint64(kept) {
			t.Errorf("seed %d: %+v, want only the %d messages that survived loss duplicated", seed, f, kept)
		}
		if got := len(r.take()); got != 2*kept {
			t.Errorf("seed %d: %d delivered, want %d", seed, got, 2*kept)
		}
	})
	t.Run("duplicate before delay", func(t *testing.T) {
		r, c := newChainRig(t, seed, 2)
		c.Duplicate.SetDuplicate(1)
		c.Delay.SetLatency(link.Latency{Dist: link.DistExponential, Mean: 50 * time.Millisecond})
		for range n {
			r.send(c, 0, 1)
		}
		r.run()
		at := map[uint64][]time.Duration{}
		for _, g := range r.take() {
			at[g.seq] = append(at[g.seq], g.at)
		}
		for seq, ts := range at {
			if len(ts) != 2 || ts[0] == ts[1] {
				t.Errorf("seed %d: message %d arrived at %v, want two copies delayed independently", seed, seq, ts)
			}
		}
		if f := checkLayers(t, seed, c); f.Duplicated != n || f.Delayed != 2*n {
			t.Errorf("seed %d: %+v, want %d duplicated and %d delayed", seed, f, n, 2*n)
		}
	})
}

// TestChainInFlight checks the documented semantics: decisions at send time.
func TestChainInFlight(t *testing.T) {
	const seed = 6
	ms := time.Millisecond
	r, c := newChainRig(t, seed, 4)
	c.Delay.SetLatency(link.Latency{Dist: link.DistConstant, Mean: 100 * ms})
	// Sent before the cut, in flight when it starts: delivered.
	r.sendAt(0, c, 0, 2)
	r.w.At(10*ms, func() { c.Partition.Cut("split", low, false) })
	// Sent during the cut, which heals before it would arrive: lost.
	r.sendAt(200*ms, c, 0, 2)
	r.w.At(210*ms, func() { c.Partition.Heal("split") })
	// Sent before loss starts: delivered; sent during loss: lost.
	r.sendAt(400*ms, c, 0, 2)
	r.w.At(410*ms, func() { c.Loss.SetLoss(1) })
	r.sendAt(420*ms, c, 0, 2)
	r.w.At(430*ms, func() { c.Loss.SetLoss(0) })
	// The latency changes while a message is in flight: it keeps its delay.
	r.sendAt(600*ms, c, 0, 2)
	r.w.At(610*ms, func() { c.Delay.SetLatency(link.Latency{Dist: link.DistConstant, Mean: ms}) })
	r.sendAt(620*ms, c, 0, 2)
	r.run()
	var got []string
	for _, g := range r.take() {
		got = append(got, fmt.Sprintf("sent %v took %v", g.sent, g.latency()))
	}
	want := []string{"sent 0s took 100ms", "sent 400ms took 100ms", "sent 620ms took 1ms", "sent 600ms took 100ms"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seed %d: delivered\n%v\nwant\n%v", seed, got, want)
	}
	if f := checkLayers(t, seed, c); f.DroppedPartition != 1 || f.DroppedLoss != 1 || f.Delayed != 4 {
		t.Errorf("seed %d: %+v", seed, f)
	}
}

// TestChainSettersMidRun changes every fault every 100ms of a run in which
// peer 0 sends to peers 1 and 2 every millisecond, and checks each phase.
func TestChainSettersMidRun(t *testing.T) {
	const seed = 8
	ms := time.Millisecond
	r, c := newChainRig(t, seed, 4)
	region := func(a bus.Address) int { return int(a % 2) } // 0 and 2 together, 1 apart
	for _, s := range []struct {
		at time.Duration
		fn func()
	}{
		{100 * ms, func() { c.Loss.SetLoss(1) }},
		{200 * ms, func() { c.Loss.SetLoss(0); c.Duplicate.SetDuplicate(1) }},
		{300 * ms, func() {
			c.Duplicate.SetDuplicate(0)
			c.Delay.SetLatency(link.Latency{Dist: link.DistConstant, Mean: 20 * ms})
		}},
		{400 * ms, func() { c.Partition.Cut("split", low, false) }}, // {0, 1} | {2, 3}
		{500 * ms, func() {
			c.Partition.HealAll()
			c.Delay.SetRegions(region, link.Latency{Dist: link.DistConstant, Mean: 30 * ms})
		}},
		{600 * ms, func() { c.Delay.SetRegions(nil, link.Latency{}); c.Delay.SetLatency(link.Latency{}) }},
	} {
		r.w.At(s.at, s.fn)
	}
	for i := range 700 {
		at := time.Duration(i)*ms + ms/2 // between setter instants: no ties
		r.sendAt(at, c, 0, 1)
		r.sendAt(at, c, 0, 2)
	}
	r.run()
	type key struct {
		phase int
		to    uint64
	}
	count := map[key]int{}
	for _, g := range r.take() {
		k := key{int(g.sent / (100 * ms)), g.to}
		count[k]++
		want := map[int]time.Duration{3: 20 * ms, 4: 20 * ms, 5: 20 * ms}[k.phase]
		if k.phase == 5 && g.to == 1 {
			want = 50 * ms // across regions
		}
		if g.latency() != want {
			t.Errorf("seed %d: phase %d: 0→%d took %v, want %v", seed, k.phase, g.to, g.latency(), want)
		}
	}
	for phase, want := range [][2]int{{100, 100}, {0, 0}, {200, 200}, {100, 100}, {100, 0}, {100, 100}, {100, 100}} {
		for i, to := range []uint64{1, 2} {
			if got := count[key{phase, to}]; got != want[i] {
				t.Errorf("seed %d: phase %d: %d deliveries to %d, want %d", seed, phase, got, to, want[i])
			}
		}
	}
	want := link.ChainStats{DroppedPartition: 100, DroppedLoss: 200, Duplicated: 200, Delayed: 500}
	if f := checkLayers(t, seed, c); f != want {
		t.Errorf("seed %d: Faults = %+v, want %+v", seed, f, want)
	}
}

// TestChainCounters runs every fault at once and checks that the counters
// account for every message.
func TestChainCounters(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		r, c := newChainRig(t, seed, 8)
		c.Partition.Cut("half", func(a bus.Address) bool { return a < 4 }, true)
		c.Loss.SetLoss(0.2)
		c.Duplicate.SetDuplicate(0.1)
		c.Delay.SetLatency(link.Latency{Dist: link.DistNormal, Mean: 30 * time.Millisecond, Jitter: 10 * time.Millisecond})
		c.Delay.SetRegions(func(a bus.Address) int { return int(a % 3) }, link.DefaultLatency())
		sent := 0
		for i := range 5000 {
			r.send(c, uint64(i%8), uint64((i*5+1)%8))
			sent++
		}
		r.run()
		got := r.take()
		f := checkLayers(t, seed, c)
		if f.DroppedPartition == 0 || f.DroppedLoss == 0 || f.Duplicated == 0 || f.Delayed == 0 {
			t.Errorf("seed %d: a fault did nothing: %+v", seed, f)
		}
		if want := sent - int(f.DroppedPartition) - int(f.DroppedLoss) + int(f.Duplicated); len(got) != want {
			t.Errorf("seed %d: %d delivered, counters say %d (%+v)", seed, len(got), want, f)
		}
		delayed := 0
		for _, g := range got {
			if g.latency() > 0 {
				delayed++
			}
			if g.from < 4 && g.to >= 4 {
				t.Errorf("seed %d: %d→%d crossed the one-way cut", seed, g.from, g.to)
			}
		}
		if uint64(delayed) != f.Delayed {
			t.Errorf("seed %d: %d messages delayed, Delayed = %d", seed, delayed, f.Delayed)
		}
		if s := c.Stats(); s.Published != uint64(len(got)) || s.Delivered != uint64(len(got)) {
			t.Errorf("seed %d: inner Stats %+v, want %d published and delivered", seed, s, len(got))
		}
	}
}

func TestChainDeterministic(t *testing.T) {
	run := func(seed uint64) string {
		r, c := newChainRig(t, seed, 4)
		c.Loss.SetLoss(0.3)
		c.Duplicate.SetDuplicate(0.3)
		c.Delay.SetLatency(link.DefaultLatency())
		for i := range 300 {
			r.send(c, uint64(i%4), uint64((i+1)%4))
		}
		r.run()
		got := r.take()
		// Loss and duplication must both have acted, or two runs could
		// agree because nothing random happened.
		if f := c.Faults(); f.DroppedLoss == 0 || f.Duplicated == 0 || len(got) == 0 {
			t.Fatalf("seed %d: %d of 300 delivered, %d lost, %d duplicated: the faults did not act", seed, len(got), f.DroppedLoss, f.Duplicated)
		}
		return fmt.Sprint(got)
	}
	first, again, other := run(10), run(10), run(11)
	if first != again {
		t.Error("seed 10: two runs differ")
	}
	if first == other {
		t.Error("seeds 10 and 11 give the same run")
	}
}

func TestChainDelegates(t *testing.T) {
	const seed = 12
	r, c := newChainRig(t, seed, 2)
	c.Unregister(1)
	r.send(c, 0, 1)
	r.run()
	if s := c.Stats(); s.Unroutable != 1 || s.Published != 1 {
		t.Errorf("seed %d: after Unregister: %+v", seed, s)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(0, envelope(t, 1, 0, 1, 0)); err == nil {
		t.Errorf("seed %d: Publish after Close did not fail", seed)
	}
	for _, b := range []bus.Bus{c.Partition, c.Loss, c.Duplicate, c.Delay} {
		if b.Stats() != c.Stats() {
			t.Errorf("%T.Stats = %+v, inner %+v", b, b.Stats(), c.Stats())
		}
	}
}

// TestChainConcurrent publishes from several goroutines while another one
// changes every fault (run with -race).
func TestChainConcurrent(t *testing.T) {
	const seed, workers, perWorker = 13, 8, 2000
	for _, mode := range []string{"immediate", "recorded"} {
		t.Run(mode, func(t *testing.T) {
			inner := bustest.NewBus()
			var sched link.Scheduler = bustest.NewImmediateClock()
			rec := bustest.NewClock()
			if mode == "recorded" {
				sched = rec
			}
			c := link.NewChain(inner, sched, seed)
			var delivered, badFrom atomic.Int64
			for a := range workers {
				c.Register(bus.Address(a), func(to bus.Address, data []byte) {
					delivered.Add(1)
					if from, ok := wire.PeekFrom(data); !ok || from >= workers {
						badFrom.Add(1)
					}
				})
			}
			c.Loss.SetLoss(0.1)
			c.Duplicate.SetDuplicate(0.1)
			c.Delay.SetLatency(link.Latency{Dist: link.DistUniform, Mean: time.Millisecond, Jitter: time.Millisecond})
			done := make(chan struct{})
			var setters sync.WaitGroup
			setters.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-done:
						return
					default:
					}
					switch i % 6 {
					case 0:
						c.Partition.Cut("odd", func(a bus.Address) bool { return a%2 == 1 }, i%12 == 0)
					case 1:
						c.Loss.SetLoss(float64(i%10) / 20)
					case 2:
						c.Duplicate.SetDuplicate(float64(i%10) / 20)
					case 3:
						c.Delay.SetLatency(link.Latency{Dist: link.Dists[i%len(link.Dists)], Mean: time.Millisecond})
					case 4:
						c.Delay.SetRegions(func(a bus.Address) int { return int(a % 3) }, link.Latency{Mean: time.Millisecond})
					case 5:
						c.Partition.Heal("odd")
						_ = c.Faults()
					}
				}
			})
			var senders sync.WaitGroup
			for w := range workers {
				senders.Go(func() {
					buf := []byte(nil)
					for i := range perWorker {
						to := uint64((w + 1 + i%(workers-1)) % workers)
						var err error
						buf, err = wire.Encode(buf[:0], wire.Header{Type: wire.MsgType_MSG_HEARTBEAT, From: uint64(w), To: to, Seq: uint64(i)}, nil)
						if err != nil {
							t.Error(err)
							return
						}
						if err := c.Publish(bus.Address(to), buf); err != nil {
							t.Error(err)
							return
						}
						// buf is reused by the next iteration: the chain must have copied what it keeps.
					}
				})
			}
			senders.Wait()
			close(done)
			setters.Wait()
			ran := rec.Run()
			f := checkLayers(t, seed, c)
			if mode == "recorded" && uint64(ran) != f.Delayed {
				t.Errorf("seed %d: %d publishes scheduled, Delayed = %d", seed, ran, f.Delayed)
			}
			sent := workers * perWorker
			want := int64(sent) - int64(f.DroppedPartition) - int64(f.DroppedLoss) + int64(f.Duplicated)
			if delivered.Load() != want || inner.Stats().Published != uint64(want) {
				t.Errorf("seed %d: %d delivered, inner published %d, counters %+v say %d", seed, delivered.Load(), inner.Stats().Published, f, want)
			}
			if f.DroppedLoss == 0 || f.Duplicated == 0 || f.Delayed == 0 {
				t.Errorf("seed %d: a fault did nothing: %+v", seed, f)
			}
			if badFrom.Load() != 0 {
				t.Errorf("seed %d: %d deliveries with a corrupted sender", seed, badFrom.Load())
			}
		})
	}
}
