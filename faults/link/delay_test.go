package link_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
	"github.com/gridbed/gridbed/faults/link"
)

// TestDelayMeanPerDistribution measures, through the Delay decorator on the
// sim, the delay of 20k messages for every distribution.
func TestDelayMeanPerDistribution(t *testing.T) {
	const seed, n = 42, 20000
	const m = 50 * time.Millisecond
	for _, dist := range link.Dists {
		t.Run(dist, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, seed)
			d := link.NewDelay(r.w, r.w, seed)
			r.register(d, 2)
			l := link.Latency{Dist: dist, Mean: m}
			d.SetLatency(l)
			if d.Latency() != l {
				t.Errorf("Latency() = %v, want %v", d.Latency(), l)
			}
			for range n {
				r.send(d, 0, 1)
			}
			r.run()
			got := r.take()
			if len(got) != n {
				t.Fatalf("seed %d: %v: %d of %d delivered", seed, l, len(got), n)
			}
			var sum time.Duration
			delayed := 0
			lo := time.Duration(math.MaxInt64)
			for _, g := range got {
				lat := g.latency()
				sum += lat
				lo = min(lo, lat)
				if lat > 0 {
					delayed++
				}
				if dist == link.DistConstant && lat != m {
					t.Fatalf("seed %d: %v: a message took %v", seed, l, lat)
				}
			}
			mean := sum / n
			if math.Abs(float64(mean-m)) > 0.05*float64(m) {
				t.Errorf("seed %d: %v: measured mean %v of %d messages, want %v ±5%%", seed, l, mean, n, m)
			}
			if (dist == link.DistExponential || dist == link.DistPareto) && lo <= 0 {
				t.Errorf("seed %d: %v: a message took %v, want > 0", seed, l, lo)
			}
			if dist == link.DistPareto && lo < m/2 {
				t.Errorf("seed %d: %v: a message took %v, below the scale %v", seed, l, lo, m/2)
			}
			f := d.Faults()
			if f.Delayed != uint64(delayed) || f.Total != sum {
				t.Errorf("seed %d: %v: Faults = %+v, saw %d delayed messages totalling %v", seed, l, f, delayed, sum)
			}
		})
	}
}

func TestDelayRegions(t *testing.T) {
	const seed = 3
	region := func(a bus.Address) int { return int(a % 2) } // {0, 2} and {1, 3}
	for _, c := range []struct {
		lat          link.Latency
		same, across time.Duration
	}{
		{link.Latency{Dist: link.DistConstant, Mean: 10 * time.Millisecond}, 10 * time.Millisecond, 50 * time.Millisecond},
		{link.Latency{}, 0, 40 * time.Millisecond}, // inter-region latency only
	} {
		r := newRig(t, seed)
		d := link.NewDelay(r.w, r.w, seed)
		r.register(d, 4)
		d.SetLatency(c.lat)
		d.SetRegions(region, link.Latency{Dist: link.DistConstant, Mean: 40 * time.Millisecond})
		for f := range 4 {
			for to := range 4 {
				if f != to {
					r.send(d, uint64(f), uint64(to))
				}
			}
		}
		r.run()
		got := r.take()
		if len(got) != 12 {
			t.Fatalf("seed %d: %d of 12 delivered", seed, len(got))
		}
		delayed := 0
		for _, g := range got {
			want := c.same
			if g.from%2 != g.to%2 {
				want = c.across
			}
			if g.latency() != want {
				t.Errorf("seed %d: latency %v: %d→%d took %v, want %v", seed, c.lat, g.from, g.to, g.latency(), want)
			}
			if want > 0 {
				delayed++
			}
		}
		if f := d.Faults(); f.Delayed != uint64(delayed) {
			t.Errorf("seed %d: Delayed = %d, want %d", seed, f.Delayed, delayed)
		}
	}
}

// order sends n messages 0→1 one millisecond apart through a Delay with
// latency l and returns their sequence numbers in arrival order, and the
// latencies.
func order(t *testing.T, seed uint64, l link.Latency, n int) (seqs []uint64, lats []time.Duration) {
	r := newRig(t, seed)
	d := link.NewDelay(r.w, r.w, seed)
	r.register(d, 2)
	d.SetLatency(l)
	for i := range n {
		r.sendAt(time.Duration(i)*time.Millisecond, d, 0, 1)
	}
	r.run()
	for _, g := range r.take() {
		seqs = append(seqs, g.seq)
		lats = append(lats, g.latency())
	}
	if len(seqs) != n {
		t.Fatalf("seed %d: %v: %d of %d delivered", seed, l, len(seqs), n)
	}
	return seqs, lats
}

func inversions(seqs []uint64) int {
	inv := 0
	for i := 1; i < len(seqs); i++ {
		if seqs[i] < seqs[i-1] {
			inv++
		}
	}
	return inv
}

func TestDelayJitterReorders(t *testing.T) {
	const seed, n = 9, 200
	l := link.Latency{Dist: link.DistConstant, Mean: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}
	seqs, lats := order(t, seed, l, n)
	if inversions(seqs) == 0 {
		t.Errorf("seed %d: %v: %d messages sent 1ms apart all arrived in order", seed, l, n)
	}
	for _, lat := range lats {
		if lat < 5*time.Millisecond || lat > 15*time.Millisecond {
			t.Fatalf("seed %d: %v: a message took %v", seed, l, lat)
		}
	}
	// Any non-constant distribution reorders too (each message draws its own delay).
	l = link.Latency{Dist: link.DistExponential, Mean: 10 * time.Millisecond}
	if seqs, _ := order(t, seed, l, n); inversions(seqs) == 0 {
		t.Errorf("seed %d: %v: all messages arrived in order", seed, l)
	}
}

func TestDelayConstantKeepsOrder(t *testing.T) {
	const n = 200
	l := link.Latency{Dist: link.DistConstant, Mean: 10 * time.Millisecond}
	for seed := uint64(1); seed <= 5; seed++ {
		seqs, lats := order(t, seed, l, n)
		if inv := inversions(seqs); inv != 0 {
			t.Errorf("seed %d: %v: %d inversions, want none", seed, l, inv)
		}
		for _, lat := range lats {
			if lat != l.Mean {
				t.Fatalf("seed %d: %v: a message took %v", seed, l, lat)
			}
		}
	}
}

// TestDelayCopiesData: the caller may reuse its buffer once Publish returns
// (sim.World keeps the slice it is given, so this fails if Delay does not
// copy).
func TestDelayCopiesData(t *testing.T) {
	const seed = 4
	r := newRig(t, seed)
	d := link.NewDelay(r.w, r.w, seed)
	r.register(d, 2)
	d.SetLatency(link.Latency{Dist: link.DistConstant, Mean: time.Millisecond})
	buf := envelope(t, 0, 1, 7, 0)
	if err := d.Publish(1, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, envelope(t, 1, 0, 8, 0)) // same length: only the numbers differ
	r.run()
	got := r.take()
	if len(got) != 1 || got[0].seq != 7 || got[0].from != 0 {
		t.Fatalf("seed %d: delivered %+v, want message 7 from 0 intact", seed, got)
	}
}

func TestDelaySchedules(t *testing.T) {
	b, s := bustest.NewBus(), bustest.NewClock()
	d := link.NewDelay(b, s, 1)
	n := 0
	d.Register(1, func(bus.Address, []byte) { n++ })
	// No latency: published at once, nothing scheduled.
	d.Publish(1, envelope(t, 0, 1, 1, 0))
	if n != 1 || s.Len() != 0 || d.Faults().Delayed != 0 {
		t.Fatalf("zero latency: %d delivered, %d scheduled, Faults %+v", n, s.Len(), d.Faults())
	}
	// A latency: scheduled at Now()+delay, delivered only when run.
	d.SetLatency(link.Latency{Dist: link.DistConstant, Mean: 5 * time.Millisecond})
	d.Publish(1, envelope(t, 0, 1, 2, 0))
	if n != 1 || s.Len() != 1 || s.Pending()[0] != 5*time.Millisecond {
		t.Fatalf("5ms latency: %d delivered, scheduled at %v", n, s.Pending())
	}
	if p := d.Faults().Pending; p != 1 {
		t.Fatalf("5ms latency, not yet due: Pending = %d, want 1", p)
	}
	s.Run()
	if n != 2 || d.Faults().Pending != 0 {
		t.Fatalf("after running the scheduler: %d delivered, Pending = %d", n, d.Faults().Pending)
	}
	// A delayed message due after the bus closed counts as a publish error.
	d.Publish(1, envelope(t, 0, 1, 3, 0))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	s.Run()
	if f := d.Faults(); f.Delayed != 2 || f.PublishErrs != 1 || f.Total != 10*time.Millisecond {
		t.Errorf("Faults = %+v, want 2 delayed (10ms), 1 publish error", f)
	}
	if st := d.Stats(); st.Published != 2 || st.PublishErrs != 1 {
		t.Errorf("inner Stats = %+v", st)
	}
}

// TestDelayPendingWhenSchedulerStops: messages whose delay never ends (the
// scheduler stops first, as at the end of a run) stay counted as pending —
// in flight, not vanished.
func TestDelayPendingWhenSchedulerStops(t *testing.T) {
	const seed = 3
	b, s := bustest.NewBus(), bustest.NewClock()
	d := link.NewDelay(b, s, seed)
	d.Register(1, func(bus.Address, []byte) {})
	d.SetLatency(link.Latency{Dist: link.DistExponential, Mean: time.Second})
	for i := range 10 {
		d.Publish(1, envelope(t, 0, 1, uint64(i), 0))
	}
	s.Step() // one comes due; the scheduler then stops
	if f, st := d.Faults(), d.Stats(); f.Delayed != 10 || f.Pending != 9 || st.Published != 1 {
		t.Fatalf("seed %d: Faults %+v, inner published %d: want 10 delayed, 9 pending, 1 published", seed, f, st.Published)
	}
}

func ExampleLatency_String() {
	fmt.Println(link.DefaultLatency(), link.Latency{Mean: time.Millisecond, Jitter: time.Microsecond})
	// Output: exponential(50ms) constant(1ms±1µs)
}

// TestDelayRegionMatrix: with a matrix every ordered pair of regions gets
// its own extra latency, the diagonal included; a zero entry adds nothing.
func TestDelayRegionMatrix(t *testing.T) {
	const seed = 4
	region := func(a bus.Address) int { return int(a % 3) }
	ms := func(n int) link.Latency {
		return link.Latency{Dist: link.DistConstant, Mean: time.Duration(n) * time.Millisecond}
	}
	m := [][]link.Latency{
		{ms(0), ms(10), ms(20)},
		{ms(30), ms(5), ms(40)},
		{ms(50), ms(60), ms(0)},
	}
	r := newRig(t, seed)
	d := link.NewDelay(r.w, r.w, seed)
	r.register(d, 6)
	d.SetRegionMatrix(region, m)
	for f := range 6 {
		for to := range 6 {
			if f != to {
				r.send(d, uint64(f), uint64(to))
			}
		}
	}
	r.run()
	got := r.take()
	if len(got) != 30 {
		t.Fatalf("seed %d: %d of 30 delivered", seed, len(got))
	}
	for _, g := range got {
		if want := m[g.from%3][g.to%3].Mean; g.latency() != want {
			t.Errorf("seed %d: %d→%d (regions %d→%d) took %v, want %v", seed, g.from, g.to, g.from%3, g.to%3, g.latency(), want)
		}
	}
}
