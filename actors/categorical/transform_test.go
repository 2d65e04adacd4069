package categorical

import (
	"math"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
)

// The Hilbert curve visits every cell of its grid once and steps between
// adjacent cells, in 1 to 4 dimensions of several sizes.
func TestHilbertCurveRoundTripsAndSteps(t *testing.T) {
	for _, c := range []struct{ n, b int }{{1, 3}, {2, 1}, {2, 3}, {3, 2}, {4, 1}, {4, 2}, {6, 2}} {
		cells := uint64(1) << (c.n * c.b)
		var prev []uint32
		for h := range cells {
			x := hilbertCell(h, c.n, c.b)
			for _, v := range x {
				if v >= 1<<c.b {
					t.Fatalf("n=%d b=%d: cell %v of %d outside the grid", c.n, c.b, x, h)
				}
			}
			if got := hilbertIndex(x, c.b); got != h {
				t.Fatalf("n=%d b=%d: hilbertIndex(hilbertCell(%d) = %v) = %d", c.n, c.b, h, x, got)
			}
			if prev != nil {
				if d := l1(prev, x); d != 1 {
					t.Fatalf("n=%d b=%d: cells %d %v and %d %v are %d apart, want adjacent", c.n, c.b, h-1, prev, h, x, d)
				}
			}
			prev = x
		}
		if got := hilbertCell(0, c.n, c.b); l1(got, make([]uint32, c.n)) != 0 {
			t.Errorf("n=%d b=%d: the curve starts at %v, want the origin", c.n, c.b, got)
		}
	}
}

func l1(a, b []uint32) int {
	d := 0
	for i := range a {
		d += int(math.Abs(float64(a[i]) - float64(b[i])))
	}
	return d
}

// Every combination gets one position along T and back; when every type
// has a power-of-two number of values, neighbouring positions hold
// combinations that differ in one value by one (the curve's steps), so a
// range of one type's values is few intervals.
func TestTransformOrdersCombinationsAlongTheCurve(t *testing.T) {
	for _, c := range []struct {
		s        Space
		adjacent bool
	}{
		{osArch, true},
		{Space{Values: []int{2, 2, 2, 2}}, true}, // 002 §5.2.1
		{Space{Values: []int{4, 4, 4}}, true},
		{Space{Values: []int{3, 5, 2}}, false},
		{Space{Values: []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}, true},
	} {
		tr := NewTransform(c.s)
		m := c.s.Combinations()
		if tr.Combinations() != m {
			t.Fatalf("%v: %d positions, want %d", c.s.Values, tr.Combinations(), m)
		}
		seen := make([]bool, m)
		for p := range m {
			k := tr.At(p)
			if seen[k] {
				t.Fatalf("%v: combination %d at two positions", c.s.Values, k)
			}
			seen[k] = true
			if tr.Position(k) != p {
				t.Fatalf("%v: Position(At(%d) = %d) = %d", c.s.Values, p, k, tr.Position(k))
			}
			if p > 0 && c.adjacent {
				a, b := c.s.ValuesOf(tr.At(p-1)), c.s.ValuesOf(k)
				if d := l1(u32(a), u32(b)); d != 1 {
					t.Fatalf("%v: positions %d %v and %d %v differ by %d, want 1", c.s.Values, p-1, a, p, b, d)
				}
			}
		}
	}
}

func u32(v []int) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}

// The intervals tile T; a peer's T coordinate lies in its combination's
// interval and reads back as that combination, at both ends of v.
func TestTransformCoordinatesRoundTrip(t *testing.T) {
	for _, s := range []Space{osArch, {Values: []int{2, 2, 2, 2}}, {Values: []int{3, 5, 2}}, {Values: []int{3, 3, 3, 3, 3, 3, 3}}} {
		tr := NewTransform(s)
		var end uint64
		for p := range tr.Combinations() {
			iv := tr.Interval(tr.At(p))
			if iv.Lo != end || iv.Hi <= iv.Lo {
				t.Fatalf("%v: position %d's interval %v does not follow %d", s.Values, p, iv, end)
			}
			end = iv.Hi
		}
		if end != can.Span {
			t.Fatalf("%v: the intervals end at %d, want %d", s.Values, end, can.Span)
		}
		for c := range s.Combinations() {
			iv := tr.Interval(c)
			for _, v := range []uint32{0, 1, 1 << 31, math.MaxUint32 - 1, math.MaxUint32} {
				x := tr.Coord(c, v)
				if uint64(x) < iv.Lo || uint64(x) >= iv.Hi {
					t.Fatalf("%v: Coord(%d, %d) = %d outside %v", s.Values, c, v, x, iv)
				}
				if got := tr.CombinationAt(x); got != c {
					t.Fatalf("%v: CombinationAt(Coord(%d, %d) = %d) = %d", s.Values, c, v, x, got)
				}
			}
			for _, x := range []uint64{iv.Lo, iv.Hi - 1} {
				if got := tr.CombinationAt(uint32(x)); got != c {
					t.Fatalf("%v: CombinationAt(%d), an end of %d's interval %v, = %d", s.Values, x, c, iv, got)
				}
			}
		}
	}
}

// A job's CID maps to the intervals of the combinations it accepts,
// merged where they touch: an exact job one sub-CAN, a don't-care job
// all of T, a range of one type of 002 §5.2.1's setup fewer intervals
// than combinations — the curve keeps them together.
func TestJobIntervals(t *testing.T) {
	s := Space{Values: []int{2, 2, 2, 2}}
	tr := NewTransform(s)
	exact := []int{1, 0, 1, 1}
	if got, want := tr.Intervals(JobCID(s, Exact(exact))), tr.Interval(s.Index(exact)); len(got) != 1 || got[0] != want {
		t.Errorf("exact job %v: intervals %v, want [%v]", exact, got, want)
	}
	for _, cid := range []Set{nil, JobCID(s, Any(s))} {
		if got := tr.Intervals(cid); len(got) != 1 || got[0] != (Interval{0, can.Span}) {
			t.Errorf("CID %v: intervals %v, want all of T", cid, got)
		}
	}
	if got := tr.Intervals(NewSet(16)); len(got) != 0 {
		t.Errorf("a CID of no combination: intervals %v, want none", got)
	}
	// Type 0 fixed to 0, the others free: 8 combinations.
	con := Any(s)
	con[0] = Accept{0, 0}
	cid := JobCID(s, con)
	ivs := tr.Intervals(cid)
	width := uint64(0)
	for i, iv := range ivs {
		width += iv.Hi - iv.Lo
		if i > 0 && ivs[i-1].Hi >= iv.Lo {
			t.Errorf("intervals %v overlap or touch unmerged", ivs)
		}
		for x := iv.Lo; x < iv.Hi; x += (iv.Hi - iv.Lo) / 4 {
			if !cid.Has(tr.CombinationAt(uint32(x))) {
				t.Errorf("T %d in interval %v holds combination %d, not accepted", x, iv, tr.CombinationAt(uint32(x)))
			}
		}
	}
	if width != can.Span/2 || len(ivs) >= 8 {
		t.Errorf("type 0 fixed: %d intervals of total width %d, want fewer than 8 of %d", len(ivs), width, can.Span/2)
	}
	t.Logf("type 0 fixed: %d intervals", len(ivs))
}

// Overlaps says whether a zone's T range meets an accepted sub-CAN,
// including an unoccupied one; JobCoord routes a job into an accepted
// sub-CAN and reaches every accepted one as v varies.
func TestOverlapsAndJobCoord(t *testing.T) {
	s := Space{Values: []int{2, 2, 2, 2}}
	tr := NewTransform(s)
	c := s.Index([]int{0, 1, 1, 0})
	cid := JobCID(s, Exact(s.ValuesOf(c)))
	iv := tr.Interval(c)
	for _, tc := range []struct {
		lo, hi uint64
		want   bool
	}{
		{iv.Lo, iv.Hi, true},
		{0, can.Span, true},
		{iv.Lo + 1, iv.Lo + 2, true},
		{iv.Hi - 1, iv.Hi + 5, true},
		{iv.Hi, can.Span, false},
		{0, iv.Lo, false},
		{iv.Lo, iv.Lo, false},
	} {
		if got := tr.Overlaps(tc.lo, tc.hi, cid); got != tc.want {
			t.Errorf("Overlaps(%d, %d) for interval %v = %v, want %v", tc.lo, tc.hi, iv, got, tc.want)
		}
	}
	if !tr.Overlaps(5, 6, nil) {
		t.Error("a job without a categorical constraint must overlap every zone")
	}
	con := Any(s)
	con[2] = Accept{1, 1}
	rng := JobCID(s, con)
	hit := map[int]bool{}
	for k := range 64 {
		v := uint32(uint64(k) << 26)
		x := tr.JobCoord(rng, v+12345)
		got := tr.CombinationAt(x)
		if !rng.Has(got) {
			t.Fatalf("JobCoord(%d) = %d in combination %d, not accepted", v, x, got)
		}
		hit[got] = true
	}
	if len(hit) != rng.Count() {
		t.Errorf("JobCoord reached %d of the %d accepted combinations", len(hit), rng.Count())
	}
	if got := tr.JobCoord(nil, 777); got != 777 {
		t.Errorf("JobCoord without a constraint = %d, want the virtual coordinate kept", got)
	}
}
