package categorical

import (
	"math/bits"
	"slices"

	"github.com/gridbed/gridbed/actors/can"
)

// Transform is 002 §2.4's transform dimension T: every combination of
// categorical values gets one interval of the CAN's last dimension, the
// intervals ordered by a Hilbert curve through the combinations (each type
// one axis of the curve), so that the sub-CAN of a combination — the
// peers whose T coordinate lies in its interval — borders those of
// combinations that differ from it in one value. The space is cut into M
// equal intervals, one per combination, whether or not any peer has it.
type Transform struct {
	order []int // order[p]: the combination at position p along the curve
	pos   []int // pos[c]: the position of combination c
}

// NewTransform orders the combinations of s along the Hilbert curve of
// side 2^b covering every type's values (002 §2.4): each combination's
// values are a cell, and the combinations are ranked by their cells'
// positions along the curve. When every type has a power-of-two number of
// values the cells fill the curve's grid, and consecutive combinations
// differ in exactly one value, by one; otherwise the curve's cells outside
// the space are skipped. s must pass Check.
func NewTransform(s Space) Transform {
	m := s.Combinations()
	b := 0
	for _, v := range s.Values {
		b = max(b, bits.Len(uint(v-1)))
	}
	type ranked struct {
		h uint64
		c int
	}
	r := make([]ranked, m)
	cell := make([]uint32, s.Types())
	for c := range m {
		for t, v := range s.ValuesOf(c) {
			cell[t] = uint32(v)
		}
		r[c] = ranked{hilbertIndex(cell, b), c}
	}
	slices.SortFunc(r, func(a, b ranked) int {
		if a.h < b.h {
			return -1
		}
		return 1 // Hilbert positions are distinct
	})
	t := Transform{order: make([]int, m), pos: make([]int, m)}
	for p, x := range r {
		t.order[p], t.pos[x.c] = x.c, p
	}
	return t
}

// Combinations is M, the number of intervals along T.
func (t Transform) Combinations() int { return len(t.order) }

// Position is combination c's rank along the Hilbert curve.
func (t Transform) Position(c int) int { return t.pos[c] }

// At is the combination at position p along the curve.
func (t Transform) At(p int) int { return t.order[p] }

// Interval is a half-open range [Lo, Hi) of T coordinates.
type Interval struct {
	Lo, Hi uint64
}

// bound is where position p's interval starts: p·Span/M.
func (t Transform) bound(p int) uint64 {
	return uint64(p) * can.Span / uint64(len(t.order))
}

// Interval is combination c's interval of T: its sub-CAN (002 §2.4).
func (t Transform) Interval(c int) Interval {
	p := t.pos[c]
	return Interval{t.bound(p), t.bound(p + 1)}
}

// Coord is the T coordinate of a peer of combination c whose virtual
// coordinate (003 §4.2) is v: v scaled into c's interval, so that peers
// of one combination still spread over their sub-CAN as the virtual
// dimension spreads identical peers over the whole space.
func (t Transform) Coord(c int, v uint32) uint32 {
	iv := t.Interval(c)
	return uint32(iv.Lo + (iv.Hi-iv.Lo)*uint64(v)>>32)
}

// positionAt is the position whose interval holds T coordinate x.
func (t Transform) positionAt(x uint64) int {
	m := len(t.order)
	p := int(x * uint64(m) / can.Span)
	for p > 0 && x < t.bound(p) {
		p--
	}
	for p < m-1 && x >= t.bound(p+1) {
		p++
	}
	return p
}

// CombinationAt is the combination whose sub-CAN holds T coordinate x
// (Coord's inverse, up to v): what a peer's point says of its values.
func (t Transform) CombinationAt(x uint32) int { return t.order[t.positionAt(uint64(x))] }

// Intervals is the set of sub-CAN intervals a job with CID cid may be
// matched in (002 §2.4): the intervals of the combinations it accepts,
// neighbouring ones merged, in T order. A job without a categorical
// constraint (a CID of no words) may be matched anywhere.
func (t Transform) Intervals(cid Set) []Interval {
	if len(cid) == 0 {
		return []Interval{{0, can.Span}}
	}
	var out []Interval
	for p, c := range t.order {
		if !cid.Has(c) {
			continue
		}
		lo, hi := t.bound(p), t.bound(p+1)
		if k := len(out) - 1; k >= 0 && out[k].Hi == lo {
			out[k].Hi = hi
		} else {
			out = append(out, Interval{lo, hi})
		}
	}
	return out
}

// Overlaps reports whether the T range [lo, hi) of a zone meets a sub-CAN
// a job with CID cid accepts: whether matchmaking may enter that zone
// (002 §2.4, pushing stays inside the job's sub-CANs). A zone over an
// interval no peer has — an unoccupied sub-space — overlaps it too: its
// owner stands for 002's virtual peer there.
func (t Transform) Overlaps(lo, hi uint64, cid Set) bool {
	if len(cid) == 0 {
		return true
	}
	if lo >= hi {
		return false
	}
	for p := t.positionAt(lo); p < len(t.order) && t.bound(p) < hi; p++ {
		if cid.Has(t.order[p]) {
			return true
		}
	}
	return false
}

// JobCoord is the T coordinate a job with CID cid is routed to (002 §2.4:
// first to a sub-CAN of its categorical values): v, the job's uniform
// virtual coordinate, picks one of the combinations it accepts — each
// with equal probability — and a point within that combination's
// interval. A job without a categorical constraint keeps v (any sub-CAN);
// one that accepts nothing keeps v too (no peer can run it anyway).
func (t Transform) JobCoord(cid Set, v uint32) uint32 {
	var acc []int
	for _, c := range t.order {
		if cid.Has(c) {
			acc = append(acc, c)
		}
	}
	if len(acc) == 0 {
		return v
	}
	k := uint64(v) * uint64(len(acc))
	c := acc[k>>32]
	return t.Coord(c, uint32(k)) // the remainder spreads the job within the interval
}
