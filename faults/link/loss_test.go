package link_test

import (
	"math"
	"testing"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
	"github.com/gridbed/gridbed/faults/link"
)

func TestLoss(t *testing.T) {
	const n = 10000
	for _, c := range []struct {
		p        float64
		seed     uint64
		min, max int // dropped
	}{
		{0, 1, 0, 0},
		{1, 1, n, n},
		{0.3, 1, 2850, 3150}, // 30% ±5% (relative; ±3.3σ)
		{0.3, 2, 2850, 3150},
		{0.3, 3, 2850, 3150},
	} {
		r := newRig(t, c.seed)
		l := link.NewLoss(r.w, c.seed)
		r.register(l, 2)
		l.SetLoss(c.p)
		if l.Probability() != c.p {
			t.Errorf("Probability = %v after SetLoss(%v)", l.Probability(), c.p)
		}
		for range n {
			r.send(l, 0, 1)
		}
		r.run()
		delivered := len(r.take())
		dropped := n - delivered
		if dropped < c.min || dropped > c.max {
			t.Errorf("seed %d: p=%v: dropped %d of %d, want in [%d, %d]", c.seed, c.p, dropped, n, c.min, c.max)
		}
		if got := l.Faults().Dropped; got != uint64(dropped) {
			t.Errorf("seed %d: p=%v: counted %d drops, %d messages missing", c.seed, c.p, got, dropped)
		}
	}
}

func TestLossDeterministic(t *testing.T) {
	pattern := func(seed uint64) []uint64 {
		r := newRig(t, seed)
		l := link.NewLoss(r.w, seed)
		r.register(l, 2)
		l.SetLoss(0.5)
		for range 200 {
			r.send(l, 0, 1)
		}
		r.run()
		var seqs []uint64
		for _, d := range r.take() {
			seqs = append(seqs, d.seq)
		}
		return seqs
	}
	a, b, c := pattern(5), pattern(5), pattern(6)
	if !equalSets(a, b) {
		t.Errorf("seed 5: two runs lost different messages")
	}
	if equalSets(a, c) {
		t.Errorf("seeds 5 and 6 lost the same messages")
	}
}

func equalSets(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[uint64]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestDuplicate(t *testing.T) {
	const n = 2000
	for _, c := range []struct {
		p        float64
		seed     uint64
		min, max int // duplicated
	}{
		{0, 1, 0, 0},
		{1, 1, n, n},
		{0.5, 1, 900, 1100},
	} {
		r := newRig(t, c.seed)
		d := link.NewDuplicate(r.w, c.seed)
		r.register(d, 2)
		d.SetDuplicate(c.p)
		if d.Probability() != c.p {
			t.Errorf("Probability = %v after SetDuplicate(%v)", d.Probability(), c.p)
		}
		for range n {
			r.send(d, 0, 1)
		}
		r.run()
		copies := map[uint64]int{}
		for _, g := range r.take() {
			copies[g.seq]++
		}
		extra := 0
		for seq := uint64(1); seq <= n; seq++ {
			switch copies[seq] {
			case 1:
			case 2:
				extra++
			default:
				t.Fatalf("seed %d: p=%v: message %d delivered %d times", c.seed, c.p, seq, copies[seq])
			}
		}
		if extra < c.min || extra > c.max {
			t.Errorf("seed %d: p=%v: %d of %d messages delivered twice, want in [%d, %d]", c.seed, c.p, extra, n, c.min, c.max)
		}
		if got := d.Faults().Duplicated; got != uint64(extra) {
			t.Errorf("seed %d: p=%v: counted %d duplicates, saw %d", c.seed, c.p, got, extra)
		}
		if s := d.Stats(); s.Published != uint64(n+extra) {
			t.Errorf("seed %d: p=%v: inner Published %d, want %d", c.seed, c.p, s.Published, n+extra)
		}
	}
}

// TestDuplicateCopiesBytes: the two copies do not share a buffer, so a
// handler that scribbles over one does not corrupt the other.
func TestDuplicateCopiesBytes(t *testing.T) {
	b := bustest.NewBus()
	d := link.NewDuplicate(b, 1)
	d.SetDuplicate(1)
	var bufs [][]byte
	b.Register(1, func(_ bus.Address, data []byte) { bufs = append(bufs, data) })
	msg := envelope(t, 0, 1, 1, 0)
	if err := d.Publish(1, msg); err != nil {
		t.Fatal(err)
	}
	if len(bufs) != 2 || string(bufs[0]) != string(msg) || string(bufs[1]) != string(msg) {
		t.Fatalf("got %d copies", len(bufs))
	}
	if &bufs[0][0] == &bufs[1][0] {
		t.Error("the two copies share one buffer")
	}
}

func TestSettersRejectInvalidValues(t *testing.T) {
	r := newRig(t, 1)
	c := link.NewChain(r.w, r.w, 1)
	for name, f := range map[string]func(){
		"SetLoss(-0.1)":        func() { c.Loss.SetLoss(-0.1) },
		"SetLoss(1.5)":         func() { c.Loss.SetLoss(1.5) },
		"SetLoss(NaN)":         func() { c.Loss.SetLoss(math.NaN()) },
		"SetDuplicate(2)":      func() { c.Duplicate.SetDuplicate(2) },
		"SetLatency(bogus)":    func() { c.Delay.SetLatency(link.Latency{Dist: "bogus"}) },
		"SetLatency(negative)": func() { c.Delay.SetLatency(link.Latency{Mean: -1}) },
		"SetRegions(negative)": func() { c.Delay.SetRegions(nil, link.Latency{Jitter: -1}) },
		"Cut(nil side)":        func() { c.Partition.Cut("x", nil, false) },
		"NewDelay(nil sched)":  func() { link.NewDelay(r.w, nil, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
	for _, p := range []float64{-1, 1.01, math.NaN(), math.Inf(1)} {
		if link.ValidateProbability(p) == nil {
			t.Errorf("ValidateProbability(%v) = nil", p)
		}
	}
	for _, p := range []float64{0, 0.5, 1} {
		if err := link.ValidateProbability(p); err != nil {
			t.Errorf("ValidateProbability(%v) = %v", p, err)
		}
	}
}
