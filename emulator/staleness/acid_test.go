package staleness

import (
	"slices"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
)

// set is the Set of combinations idx (indices, not combos).
func set(idx ...int) categorical.Set {
	s := categorical.NewSet(8)
	for _, i := range idx {
		s.Add(i)
	}
	return s
}

// The true ACIDs of the hand-built CAN (threeZones) with A, B and C of
// combinations 0, 1 and 2, worked out from 002 Eq 5.1: B has nothing
// above, so AC(B) = {1}; C's upper neighbor is B, AC(C) = {2} ∪ {1}; A's
// are B and C, AC(A) = {0} ∪ {1} ∪ {1, 2}. Perturbed held ACIDs give the
// exact fraction wrong: A misses C's combination, B holds the truth, C
// holds one combination too many — 2 of 3 wrong.
func TestACIDOfAStaleState(t *testing.T) {
	ms := threeZones()
	for i := range ms {
		ms[i].Combo = uint32(i + 1)
	}
	truth := []categorical.Set{set(0, 1, 2), set(1), set(1, 2)}
	w := Truth(ms, 2)
	if !w.Categorical {
		t.Fatal("members with combos: the world is not categorical")
	}
	for i, want := range truth {
		if got := w.TrueACID(i); !got.Equal(want) {
			t.Errorf("member %d: true ACID %s, want %s", ms[i].ID, got.String(4), want.String(4))
		}
	}
	ms[0].HeldACID = set(0, 1)    // C's combination not heard of yet
	ms[1].HeldACID = set(1)       // right
	ms[2].HeldACID = set(1, 2, 3) // a combination that left
	w = Truth(ms, 2)
	var acid *Stat
	for _, s := range w.Measure() {
		if s.Name == "acid" {
			acid = &s
		}
	}
	if acid == nil {
		t.Fatal("no acid stat in a categorical world")
	}
	if !near(acid.Mean, 2.0/3) || acid.P90 != 1 || acid.N != 3 {
		t.Errorf("acid: %+v, want mean 2/3, p90 1 over 3 members", *acid)
	}
	// Held exactly the truth, in a longer bit string (trailing zero words
	// do not change a Set): none wrong. Nil (before a first heartbeat) is
	// wrong.
	for i := range ms {
		ms[i].HeldACID = append(slices.Clone(truth[i]), 0)
	}
	ms[2].HeldACID = nil
	w = Truth(ms, 2)
	for i, want := range []float64{0, 0, 1} {
		if got := ACIDError(w, i, 0); got != want {
			t.Errorf("member %d: ACID error %g, want %g", ms[i].ID, got, want)
		}
	}
}

// An extra zone has no CID of its own but passes on the ACIDs above it
// (as the load truth does): A [0,4)×[0,1) below an orphan [0,4)×[1,2) held
// by D, D's own zone [0,4)×[2,4) above.
func TestACIDExtraZonePassesThrough(t *testing.T) {
	w := Truth([]Member{
		{ID: 1, Zone: zone(0, 4, 0, 1), Combo: 1},
		{ID: 4, Zone: zone(0, 4, 2, 4), Extra: []can.Zone{zone(0, 4, 1, 2)}, Combo: 4},
	}, 2)
	if got, want := w.TrueACID(0), set(0, 3); !got.Equal(want) {
		t.Errorf("A below an orphan below D: true ACID %s, want %s", got.String(4), want.String(4))
	}
	if got, want := w.TrueACID(1), set(3); !got.Equal(want) {
		t.Errorf("D at the top: true ACID %s, want %s", got.String(4), want.String(4))
	}
}

// On a random KD tiling the true ACIDs are a fixed point of the
// protocol's own rule: every member's true ACID is categorical.ACID (002
// Eq 5.1) of its zone, its CID and its upper neighbors with their true
// ACIDs — what it computes once every heartbeat carries the truth.
func TestTrueACIDIsEq51sFixedPoint(t *testing.T) {
	const n, dims = 300, 3
	space := categorical.Space{Values: []int{2, 2, 2, 2}}
	ms := kdMembers(n, dims, 4)
	for i := range ms {
		ms[i].Combo = uint32(1 + (i*7)%space.Combinations())
	}
	w := Truth(ms, dims)
	ups := make([]categorical.Upper, len(w.Members))
	for i, m := range w.Members {
		ups[i] = categorical.Upper{Zone: m.Zone, ACID: w.TrueACID(i)}
	}
	for i, m := range w.Members {
		want := categorical.ACID(m.Zone, set(int(m.Combo-1)), ups)
		if got := w.TrueACID(i); !got.Equal(want) {
			t.Fatalf("member %d: true ACID %s, Eq 5.1 over the true upper neighbors gives %s", i, got.String(16), want.String(16))
		}
	}
	// The members at the top corner of the space hold only their own CID.
	for i, m := range w.Members {
		top := true
		for d := 0; d < dims; d++ {
			top = top && m.Zone.Hi[d] == can.Span
		}
		if top && w.TrueACID(i).Count() != 1 {
			t.Errorf("member %d at the top corner: true ACID %s", i, w.TrueACID(i).String(16))
		}
	}
}

// Without categorical resources no ACID is measured: Measure reports no
// acid stat and Names(false) leaves it out.
func TestNoACIDWithoutCategories(t *testing.T) {
	for _, s := range Truth(threeZones(), 2).Measure() {
		if s.Name == "acid" {
			t.Errorf("acid measured without categorical resources: %+v", s)
		}
	}
	if slices.Contains(Names(false), "acid") || !slices.Contains(Names(true), "acid") {
		t.Errorf("Names(false) = %v, Names(true) = %v", Names(false), Names(true))
	}
}
