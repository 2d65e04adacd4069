// Package can is the pure geometry of a Content-Addressable Network as the
// seed papers use it (003 §4.2; 002 §2.2, §4.2): points and
// hyper-rectangular zones in a d-dimensional space, the neighbor relation,
// greedy-routing distance, and the zone split that keeps both nodes' fixed
// points in their own part (a distributed KD-tree).
//
// Coordinates are fixed point: every dimension spans [0, 2^32). Integer
// coordinates make "two zones abut" an exact test and encode compactly as
// varints on the wire. A zone is half-open, [Lo, Hi) in every dimension, with
// Hi ≤ 2^32.
package can

import (
	"fmt"
	"math/big"
	"strings"
)

// Span is the extent of every dimension: coordinates lie in [0, Span).
const Span uint64 = 1 << 32

// Point is a node's (or a job's) coordinate, one value per dimension.
type Point []uint32

// Zone is a half-open hyper-rectangle [Lo, Hi) in every dimension.
type Zone struct {
	Lo, Hi []uint64
}

// Whole is the zone covering the entire d-dimensional space: the first
// node's zone.
func Whole(d int) Zone {
	z := Zone{Lo: make([]uint64, d), Hi: make([]uint64, d)}
	for i := range z.Hi {
		z.Hi[i] = Span
	}
	return z
}

// Dims is the number of dimensions of z.
func (z Zone) Dims() int { return len(z.Lo) }

// Clone returns a deep copy of z.
//
// Both bounds share one allocation (half the allocations, and a zone's
// corners sit side by side in memory: tables of thousands of zones are
// scanned at every message).
func (z Zone) Clone() Zone {
	nl, nh := len(z.Lo), len(z.Hi)
	if nl+nh == 0 {
		return Zone{}
	}
	c := make([]uint64, nl+nh)
	copy(c, z.Lo)
	copy(c[nl:], z.Hi)
	var out Zone
	if nl > 0 {
		out.Lo = c[:nl:nl]
	}
	if nh > 0 {
		out.Hi = c[nl:]
	}
	return out
}

// Equal reports whether a and b are the same zone.
func (z Zone) Equal(o Zone) bool {
	if len(z.Lo) != len(o.Lo) || len(z.Hi) != len(o.Hi) {
		return false
	}
	for i := range z.Lo {
		if z.Lo[i] != o.Lo[i] || z.Hi[i] != o.Hi[i] {
			return false
		}
	}
	return true
}

// Valid reports whether z has the given number of dimensions and a positive
// extent inside the space in every one of them.
func (z Zone) Valid(d int) bool {
	if len(z.Lo) != d || len(z.Hi) != d {
		return false
	}
	for i := range z.Lo {
		if z.Lo[i] >= z.Hi[i] || z.Hi[i] > Span {
			return false
		}
	}
	return true
}

// Contains reports whether p lies in z.
func (z Zone) Contains(p Point) bool {
	if len(p) != len(z.Lo) {
		return false
	}
	for i, c := range p {
		if uint64(c) < z.Lo[i] || uint64(c) >= z.Hi[i] {
			return false
		}
	}
	return true
}

// Abut reports whether a and b are CAN neighbors: their zones touch along
// exactly one dimension (returned as dim) and overlap with positive length in
// every other dimension (003 §4.2). upper is true when b lies on the
// upper side of a along dim. The space does not wrap around: resource
// dimensions are ordered, so there are "upper" neighbors (003 §4.3).
func Abut(a, b Zone) (dim int, upper bool, ok bool) {
	if len(a.Lo) != len(b.Lo) {
		return 0, false, false
	}
	dim = -1
	for i := range a.Lo {
		switch {
		case a.Hi[i] == b.Lo[i]:
			if dim >= 0 {
				return 0, false, false
			}
			dim, upper = i, true
		case b.Hi[i] == a.Lo[i]:
			if dim >= 0 {
				return 0, false, false
			}
			dim, upper = i, false
		case a.Lo[i] < b.Hi[i] && b.Lo[i] < a.Hi[i]:
			// positive overlap in this dimension
		default:
			return 0, false, false
		}
	}
	return dim, upper, dim >= 0
}

// Overlaps reports whether a and b share a region of positive volume.
func Overlaps(a, b Zone) bool {
	if len(a.Lo) != len(b.Lo) {
		return false
	}
	for i := range a.Lo {
		if !(a.Lo[i] < b.Hi[i] && b.Lo[i] < a.Hi[i]) {
			return false
		}
	}
	return true
}

// Dist2 is the squared Euclidean distance from p to the nearest coordinate
// inside z, in units of the space's span; it is 0 exactly when z contains p.
// Greedy CAN
// routing forwards to the neighbor whose zone minimizes it: with complete
// neighbor tables some neighbor is always strictly closer than the current
// zone, so greedy routing cannot loop.
func (z Zone) Dist2(p Point) float64 {
	var s float64
	for i, c := range p {
		var gap uint64
		switch v := uint64(c); {
		case v < z.Lo[i]:
			gap = z.Lo[i] - v
		case v >= z.Hi[i]:
			gap = v - (z.Hi[i] - 1) // the last coordinate inside is Hi-1

		}
		g := float64(gap) / float64(Span)
		s += g * g
	}
	return s
}

// Volume is the zone's volume in coordinate units (exact).
func (z Zone) Volume() *big.Int {
	v := big.NewInt(1)
	var w big.Int
	for i := range z.Lo {
		w.SetUint64(z.Hi[i] - z.Lo[i])
		v.Mul(v, &w)
	}
	return v
}

// SpaceVolume is the volume of the whole d-dimensional space.
func SpaceVolume(d int) *big.Int {
	return new(big.Int).Lsh(big.NewInt(1), uint(32*d))
}

// String renders a zone compactly as fractions of the span, for logs and tests.
func (z Zone) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range z.Lo {
		if i > 0 {
			b.WriteString(" × ")
		}
		fmt.Fprintf(&b, "%.4g-%.4g", float64(z.Lo[i])/float64(Span), float64(z.Hi[i])/float64(Span))
	}
	b.WriteByte(']')
	return b.String()
}

// Split divides zone z, which contains the owner's point own, so that the
// joiner's point join lands in the other part (002 §4.2.2: points are fixed,
// so the split is not always in half — a distributed KD-tree). The paper
// leaves the rule open; gridbed's choice:
//
//   - split along the dimension where the two points are farthest apart
//     relative to the zone's extent (ties: lowest dimension), which keeps
//     zones from degenerating into slivers;
//   - at the zone's midpoint when that separates the points (the original
//     CAN's halving, giving regular zones), otherwise halfway between the
//     two points.
//
// keep contains own, give contains join. ok is false when the points are
// identical or one of them is outside z: then no split separates them.
func Split(z Zone, own, join Point) (keep, give Zone, dim int, at uint64, ok bool) {
	if !z.Contains(own) || !z.Contains(join) {
		return Zone{}, Zone{}, 0, 0, false
	}
	best, bestSep := -1, 0.0
	for i := range own {
		a, b := uint64(own[i]), uint64(join[i])
		if a == b {
			continue
		}
		d := a - b
		if b > a {
			d = b - a
		}
		sep := float64(d) / float64(z.Hi[i]-z.Lo[i])
		if sep > bestSep {
			best, bestSep = i, sep
		}
	}
	if best < 0 {
		return Zone{}, Zone{}, 0, 0, false
	}
	dim = best
	lo, hi := uint64(own[dim]), uint64(join[dim])
	if lo > hi {
		lo, hi = hi, lo
	}
	mid := z.Lo[dim] + (z.Hi[dim]-z.Lo[dim])/2
	if lo < mid && mid <= hi {
		at = mid
	} else {
		at = lo + (hi-lo+1)/2 // lo < at ≤ hi
	}
	keep, give = cut(z, dim, at, own)
	return keep, give, dim, at, true
}

// cut divides z at coordinate at of dimension dim: keep is the part that
// holds own, give the other.
func cut(z Zone, dim int, at uint64, own Point) (keep, give Zone) {
	lower, upper := z.Clone(), z.Clone()
	lower.Hi[dim] = at
	upper.Lo[dim] = at
	if uint64(own[dim]) < at {
		return lower, upper
	}
	return upper, lower
}

// Halve divides zone z in half, as the original CAN does, so that the
// joiner's point join lands in the other half from the owner's point own.
// 002 §4.2.2: a node's coordinates "can never be changed, except along the
// virtual dimension" — so the virtual dimension (the last one) can always
// be halved: when both points fall in the same half of it, the joiner's
// virtual coordinate moves by half the zone's width into the other half
// (returned as joinVirtual; it equals join's own value otherwise).
//
// The dimension halved is the widest one whose midpoint separates the two
// points, the virtual dimension always counting as separable (ties: lowest
// dimension, so resource dimensions win over the virtual one). Halving
// keeps zones as regular as CAN's, where Split's cuts between fixed points
// (a KD-tree) leave large zones next to many small ones: with halving the
// mean neighbor count stays flat as peers are added (docs/OVERLAY.md).
//
// keep contains own, give contains join (with its virtual coordinate set to
// joinVirtual). ok is false when a point lies outside z or no dimension is
// wider than one coordinate.
func Halve(z Zone, own, join Point) (keep, give Zone, dim int, at uint64, joinVirtual uint32, ok bool) {
	if !z.Contains(own) || !z.Contains(join) {
		return Zone{}, Zone{}, 0, 0, 0, false
	}
	v := len(own) - 1
	dim = -1
	var widest uint64
	for i := range own {
		w := z.Hi[i] - z.Lo[i]
		if w < 2 || w <= widest {
			continue
		}
		mid := z.Lo[i] + w/2
		if i != v && (uint64(own[i]) < mid) == (uint64(join[i]) < mid) {
			continue
		}
		dim, widest = i, w
	}
	if dim < 0 {
		return Zone{}, Zone{}, 0, 0, 0, false
	}
	at = z.Lo[dim] + widest/2
	joinVirtual = join[v]
	if dim == v && (uint64(own[v]) < at) == (uint64(join[v]) < at) {
		if uint64(join[v]) < at {
			joinVirtual = uint32(uint64(join[v]) + widest/2)
		} else {
			// The lower half is the shorter one when the width is odd.
			joinVirtual = uint32(min(uint64(join[v])-widest/2, at-1))
		}
	}
	keep, give = cut(z, dim, at, own)
	return keep, give, dim, at, joinVirtual, true
}

// Merge returns the union of two zones that abut along one dimension and
// have the same extent in every other one (a take-over of a sibling's zone),
// and ok = false when their union is not a box.
func Merge(a, b Zone) (Zone, bool) {
	dim, upper, ok := Abut(a, b)
	if !ok {
		return Zone{}, false
	}
	for i := range a.Lo {
		if i != dim && (a.Lo[i] != b.Lo[i] || a.Hi[i] != b.Hi[i]) {
			return Zone{}, false
		}
	}
	m := a.Clone()
	if upper {
		m.Hi[dim] = b.Hi[dim]
	} else {
		m.Lo[dim] = b.Lo[dim]
	}
	return m, true
}

// Extend returns zone z grown along dimension k over the whole extent of
// zone over, which lies on the other side of a plane z touches: the
// take-over of a departed node's zone by a node across the plane of its
// last split (002 §4.2.2). It is a box exactly when z abuts over along k
// and z's extent in every other dimension lies within over's (z is one of
// the zones tiling over's face); ok reports that. Several such zones extend
// over the same departed zone without overlapping and together cover it.
func Extend(z, over Zone, k int) (Zone, bool) {
	if len(z.Lo) != len(over.Lo) || k < 0 || k >= len(z.Lo) {
		return Zone{}, false
	}
	for j := range z.Lo {
		if j != k && (z.Lo[j] < over.Lo[j] || z.Hi[j] > over.Hi[j]) {
			return Zone{}, false
		}
	}
	e := z.Clone()
	switch {
	case z.Hi[k] == over.Lo[k]:
		e.Hi[k] = over.Hi[k]
	case over.Hi[k] == z.Lo[k]:
		e.Lo[k] = over.Lo[k]
	default:
		return Zone{}, false
	}
	return e, true
}

// Subtract returns a minus b as disjoint zones (a itself when they do not
// overlap, nothing when b covers a): the standard box difference, peeling
// off along each dimension in turn the slabs of a that lie below and above
// b. It yields at most 2·d zones. Nodes use it to find the part of a
// departed node's zone that nobody has claimed (the orphan, CAN take-over).
func Subtract(a, b Zone) []Zone { return SubtractInto(nil, a, b, Zone.Clone) }

// SubtractInto is Subtract appending its zones to dst, with clone making
// every copy of a it needs (Subtract uses Zone.Clone; a caller with
// scratch memory can carve the copies from it and allocate nothing).
func SubtractInto(dst []Zone, a, b Zone, clone func(Zone) Zone) []Zone {
	if !Overlaps(a, b) {
		return append(dst, clone(a))
	}
	rest := clone(a)
	for k := range rest.Lo {
		if rest.Lo[k] < b.Lo[k] {
			s := clone(rest)
			s.Hi[k] = b.Lo[k]
			dst = append(dst, s)
			rest.Lo[k] = b.Lo[k]
		}
		if rest.Hi[k] > b.Hi[k] {
			s := clone(rest)
			s.Lo[k] = b.Hi[k]
			dst = append(dst, s)
			rest.Hi[k] = b.Hi[k]
		}
	}
	return dst
}

// EmptyBox returns a box containing p that overlaps none of avoid (none of
// which may contain p), grown from the whole space: each zone of avoid, in
// the order given (nearest first works best), is cut away along the
// dimension that keeps the most volume. The result is maximal with respect
// to that greedy order, not globally. Nodes use it to claim unowned space
// around a point (a hole nobody remembers).
func EmptyBox(p Point, avoid []Zone) (Zone, bool) {
	b := Whole(len(p))
	for _, z := range avoid {
		if len(z.Lo) != len(p) || !Overlaps(b, z) {
			continue
		}
		if z.Contains(p) {
			return Zone{}, false
		}
		best, bestK, bestLo := -1.0, -1, false
		for k := range p {
			w := float64(b.Hi[k] - b.Lo[k])
			var keep float64
			lo := false
			switch {
			case z.Hi[k] <= uint64(p[k]): // z below p: raise our lower bound
				keep, lo = float64(b.Hi[k]-max(b.Lo[k], z.Hi[k])), true
			case z.Lo[k] > uint64(p[k]): // z above p: lower our upper bound
				keep = float64(min(b.Hi[k], z.Lo[k]) - b.Lo[k])
			default:
				continue
			}
			if f := keep / w; f > best {
				best, bestK, bestLo = f, k, lo
			}
		}
		if bestLo {
			b.Lo[bestK] = max(b.Lo[bestK], z.Hi[bestK])
		} else {
			b.Hi[bestK] = min(b.Hi[bestK], z.Lo[bestK])
		}
	}
	return b, true
}
