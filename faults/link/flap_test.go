package link_test

import (
	"math"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
	"github.com/gridbed/gridbed/faults/link"
)

func exp(mean time.Duration) link.Latency {
	return link.Latency{Dist: link.DistExponential, Mean: mean}
}

// TestFlapSchedule: a flapping link is down about down/(up+down) of the
// time; its schedule depends on the link and the time only (asking about
// the links in another order, or at fewer instants, gives the same
// answers); a symmetric flap takes both directions down together, a
// one-way one only the directions in its set; links outside the set never
// flap; another seed draws another schedule.
func TestFlapSchedule(t *testing.T) {
	all := func(a, b bus.Address) bool { return true }
	oneWay := link.LinkSets(func(a bus.Address) bool { return a == 1 }, func(a bus.Address) bool { return a == 2 }, true)
	const step = 100 * time.Millisecond
	const steps = 200000 // 20000 s
	sample := func(seed uint64, in func(a, b bus.Address) bool, ow bool, every int, reverse bool) [][2]bool {
		c := bustest.NewClock()
		f := link.NewFlap(c, seed, in, exp(4*time.Second), exp(time.Second), ow)
		out := make([][2]bool, 0, steps/every)
		for i := 0; i < steps; i += every {
			c.Set(time.Duration(i) * step)
			var ab, ba bool
			if reverse {
				ba, ab = f.Drops(2, 1), f.Drops(1, 2)
			} else {
				ab, ba = f.Drops(1, 2), f.Drops(2, 1)
			}
			out = append(out, [2]bool{ab, ba})
		}
		return out
	}
	for _, seed := range []uint64{1, 2, 3} {
		sym := sample(seed, all, false, 1, false)
		down := 0
		for i, s := range sym {
			if s[0] != s[1] {
				t.Fatalf("seed %d: step %d: a symmetric flap has 1→2 down %v, 2→1 down %v", seed, i, s[0], s[1])
			}
			if s[0] {
				down++
			}
		}
		if share := float64(down) / float64(len(sym)); math.Abs(share-0.2) > 0.03 {
			t.Errorf("seed %d: link down %.3f of the time, want about 1/(4+1) = 0.2", seed, share)
		}
		rev := sample(seed, all, false, 1, true)
		sparse := sample(seed, all, false, 7, false)
		for i := range rev {
			if rev[i] != sym[i] {
				t.Fatalf("seed %d: step %d: the order of the questions changed the schedule", seed, i)
			}
		}
		for i := range sparse {
			if sparse[i] != sym[i*7] {
				t.Fatalf("seed %d: step %d: asking less often changed the schedule", seed, i*7)
			}
		}
		other := sample(seed+10, all, false, 1, false)
		same := 0
		for i := range other {
			if other[i] == sym[i] {
				same++
			}
		}
		if same == len(sym) {
			t.Errorf("seed %d and %d drew the same schedule", seed, seed+10)
		}
		ow := sample(seed, oneWay, true, 1, false)
		downs := 0
		for i, s := range ow {
			if s[1] {
				t.Fatalf("seed %d: step %d: a one-way flap 1→2 took 2→1 down", seed, i)
			}
			if s[0] {
				downs++
			}
		}
		if downs == 0 {
			t.Errorf("seed %d: the one-way flap never took 1→2 down", seed)
		}
	}
	c := bustest.NewClock()
	f := link.NewFlap(c, 1, oneWay, exp(time.Second), exp(time.Second), true)
	for i := range 10000 {
		c.Set(time.Duration(i) * step)
		if f.Drops(3, 2) || f.Drops(1, 3) {
			t.Fatalf("a link outside the set flapped at %v", c.Now())
		}
	}
}

// TestFlapInChain: a flap installed as a per-link cut drops messages while
// their link is down, counts them as partition drops, and stops when
// healed.
func TestFlapInChain(t *testing.T) {
	r, c := newChainRig(t, 1, 4)
	f := link.NewFlap(r.w, 1, func(a, b bus.Address) bool { return a == 0 || b == 0 }, exp(2*time.Second), exp(2*time.Second), false)
	c.Partition.CutLinks("flap", f.Drops)
	for i := range 2000 {
		r.sendAt(time.Duration(i)*50*time.Millisecond, c, 0, 1)
		r.sendAt(time.Duration(i)*50*time.Millisecond, c, 2, 3)
	}
	r.run()
	got := r.take()
	st := f.Faults()
	if st.Dropped == 0 || st.Downs == 0 || st.Links != 1 {
		t.Fatalf("flap stats %+v: want drops and downs on exactly one link", st)
	}
	if c.Faults().DroppedPartition != st.Dropped || len(got) != 4000-int(st.Dropped) {
		t.Fatalf("%d delivered, %d dropped by the partition layer, %d by the flap", len(got), c.Faults().DroppedPartition, st.Dropped)
	}
	if share := float64(st.Dropped) / 2000; share < 0.3 || share > 0.7 {
		t.Errorf("%.2f of 0→1 lost, want about half", share)
	}
	c.Partition.Heal("flap")
	for range 100 {
		r.send(c, 0, 1)
	}
	r.run()
	if n := len(r.take()); n != 100 {
		t.Fatalf("after the heal %d of 100 delivered", n)
	}
}

// TestLinkSets: a cut between two sets drops from → to and, unless
// one-way, to → from; nothing else.
func TestLinkSets(t *testing.T) {
	in := func(ids ...bus.Address) func(bus.Address) bool {
		return func(a bus.Address) bool {
			for _, id := range ids {
				if a == id {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		oneWay   bool
		from, to bus.Address
		want     bool
	}{
		{true, 1, 3, true}, {true, 2, 4, true}, {true, 3, 1, false}, {true, 1, 2, false}, {true, 5, 3, false},
		{false, 1, 3, true}, {false, 3, 1, true}, {false, 4, 2, true}, {false, 1, 2, false}, {false, 3, 4, false}, {false, 5, 1, false},
	} {
		if got := link.LinkSets(in(1, 2), in(3, 4), tc.oneWay)(tc.from, tc.to); got != tc.want {
			t.Errorf("oneWay %v: %d→%d dropped %v, want %v", tc.oneWay, tc.from, tc.to, got, tc.want)
		}
	}
}
