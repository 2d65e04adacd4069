package staleness

import (
	"slices"

	"github.com/gridbed/gridbed/actors/categorical"
)

// trueACIDs fills ACID: every piece's true ACID, 002 Eq 5.1 evaluated
// with fresh information — AC(n) = C(n) OR the ACIDs of n's true upper
// neighbors along every dimension (the virtual one included), recursively:
// the union of the CIDs of every member reachable from n by upper
// neighbors, what n would hold if every heartbeat arrived at once.
//
// As for the load (Truth), an extra zone counts as space, not as a node:
// it has no CID of its own and passes on the ACIDs above it, so the
// combinations above an orphan are not lost to the truth.
//
// The recursion is computed as a fixed point — pieces visited in
// descending order of the sum of their lower bounds, the order in which
// upper neighbors mostly come first, passes repeated until no ACID grows
// — so it needs no acyclic upper relation.
func (w *World) trueACIDs() {
	m := 0
	for _, mb := range w.Members {
		m = max(m, int(mb.Combo))
	}
	w.ACID = make([]categorical.Set, len(w.Pieces))
	for p, pc := range w.Pieces {
		w.ACID[p] = categorical.NewSet(m)
		if c := w.Members[pc.Owner].Combo; !pc.Extra && c != 0 {
			w.ACID[p].Add(int(c - 1))
		}
	}
	sum := func(p int) uint64 {
		var s uint64
		for _, lo := range w.Pieces[p].Zone.Lo {
			s += lo // below 2^32 each: no overflow
		}
		return s
	}
	order := make([]int, len(w.Pieces))
	for p := range order {
		order[p] = p
	}
	slices.SortFunc(order, func(a, b int) int {
		switch sa, sb := sum(a), sum(b); {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return a - b
	})
	for changed := true; changed; {
		changed = false
		for _, p := range order {
			ac := w.ACID[p]
			for d := range w.Up[p] {
				for _, e := range w.Up[p][d] {
					for k, word := range w.ACID[e.Piece] {
						if ac[k]|word != ac[k] {
							ac[k] |= word
							changed = true
						}
					}
				}
			}
		}
	}
}

// TrueACID is member i's true ACID (of its own zone); nil without
// categorical resources.
func (w *World) TrueACID(i int) categorical.Set {
	if w.ACID == nil {
		return nil
	}
	return w.ACID[w.Own[i]]
}

// ACIDError is how wrong the ACID member i holds is (002 §5.2.4 counts
// the nodes whose ACID is right): 0 when it holds exactly the true ACID
// (categorical.Set.Equal), 1 otherwise — a missing combination (a job
// that a region could run is not pushed there) as an extra one (a job is
// pushed towards a region that cannot run it). d is ignored: one ACID per
// member.
func ACIDError(w *World, i, _ int) float64 {
	if w.Members[i].HeldACID.Equal(w.TrueACID(i)) {
		return 0
	}
	return 1
}
