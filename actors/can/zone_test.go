package can

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

func randPoint(r *rand.Rand, d int) Point {
	p := make(Point, d)
	for i := range p {
		p[i] = r.Uint32()
	}
	return p
}

// splitter is a zone split rule as the join uses it: Split, or Halve (which
// may move the joiner's virtual coordinate).
type splitter func(z Zone, own, join Point) (keep, give Zone, joinVirtual uint32, ok bool)

func kdSplit(z Zone, own, join Point) (Zone, Zone, uint32, bool) {
	keep, give, _, _, ok := Split(z, own, join)
	return keep, give, join[len(join)-1], ok
}

func halveSplit(z Zone, own, join Point) (Zone, Zone, uint32, bool) {
	keep, give, _, _, v, ok := Halve(z, own, join)
	return keep, give, v, ok
}

// tiling builds a CAN by inserting n random points, splitting the zone that
// contains each new point with Split (the join protocol without messages).
func tiling(t *testing.T, r *rand.Rand, d, n int) ([]Zone, []Point) {
	return tilingBy(t, r, d, n, kdSplit)
}

// tilingBy is tiling with the given split rule.
func tilingBy(t *testing.T, r *rand.Rand, d, n int, split splitter) ([]Zone, []Point) {
	t.Helper()
	zones := []Zone{Whole(d)}
	points := []Point{randPoint(r, d)}
	for len(zones) < n {
		p := randPoint(r, d)
		owner := -1
		for i, z := range zones {
			if z.Contains(p) {
				if owner >= 0 {
					t.Fatalf("point %v in two zones", p)
				}
				owner = i
			}
		}
		if owner < 0 {
			t.Fatalf("point %v in no zone", p)
		}
		keep, give, v, ok := split(zones[owner], points[owner], p)
		if !ok {
			continue
		}
		p[d-1] = v
		if !keep.Contains(points[owner]) || !give.Contains(p) {
			t.Fatalf("split lost a point: keep %v give %v", keep, give)
		}
		if m, ok := Merge(keep, give); !ok || !m.Equal(zones[owner]) {
			t.Fatalf("split halves do not merge back: %v %v", keep, give)
		}
		zones[owner] = keep
		zones = append(zones, give)
		points = append(points, p)
	}
	return zones, points
}

func TestSplitTilesTheSpace(t *testing.T) {
	testTilesTheSpace(t, kdSplit)
}

func TestHalveTilesTheSpace(t *testing.T) {
	testTilesTheSpace(t, halveSplit)
}

func testTilesTheSpace(t *testing.T, split splitter) {
	seed := uint64(7)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, d := range []int{1, 2, 3, 6} {
		zones, _ := tilingBy(t, r, d, 300, split)
		sum := new(big.Int)
		for i, z := range zones {
			if !z.Valid(d) {
				t.Fatalf("seed %d d=%d: invalid zone %v", seed, d, z)
			}
			sum.Add(sum, z.Volume())
			for j := i + 1; j < len(zones); j++ {
				if Overlaps(z, zones[j]) {
					t.Fatalf("seed %d d=%d: zones %d and %d overlap", seed, d, i, j)
				}
			}
		}
		if sum.Cmp(SpaceVolume(d)) != 0 {
			t.Fatalf("seed %d d=%d: volumes sum to %v, want %v", seed, d, sum, SpaceVolume(d))
		}
	}
}

func TestSplitChoosesSeparatingDimension(t *testing.T) {
	z := Whole(2)
	own := Point{100, 1 << 31}
	join := Point{100, 1<<31 + 10} // identical resources, differ only in the last dimension
	keep, give, dim, at, ok := Split(z, own, join)
	if !ok || dim != 1 {
		t.Fatalf("split dim %d ok %v, want dim 1", dim, ok)
	}
	// The zone midpoint 2^31 does not separate them, so split between the points.
	if at <= uint64(own[1]) || at > uint64(join[1]) {
		t.Fatalf("split at %d does not separate %d and %d", at, own[1], join[1])
	}
	if !keep.Contains(own) || !give.Contains(join) {
		t.Fatal("points not in their halves")
	}
	// Far apart points: halve the zone like the original CAN.
	_, _, dim, at, _ = Split(z, Point{1, 1}, Point{Span32 - 1, 2})
	if dim != 0 || at != Span/2 {
		t.Fatalf("got dim %d at %d, want dim 0 at midpoint", dim, at)
	}
	if _, _, _, _, ok := Split(z, own, own); ok {
		t.Fatal("identical points split")
	}
}

const Span32 = uint32(Span - 1)

func TestHalveHalvesAndMovesOnlyTheVirtualCoordinate(t *testing.T) {
	z := Whole(3)
	// Resources separable in dimension 1 only: halve it, points unchanged.
	own, join := Point{5, 10, 1 << 31}, Point{5, Span32 - 10, 1 << 31}
	keep, give, dim, at, v, ok := Halve(z, own, join)
	if !ok || dim != 1 || at != Span/2 || v != join[2] {
		t.Fatalf("got dim %d at %d virtual %d ok %v, want dim 1 at the midpoint, virtual unchanged", dim, at, v, ok)
	}
	if !keep.Contains(own) || !give.Contains(join) || keep.Volume().Cmp(give.Volume()) != 0 {
		t.Fatalf("halves %v %v do not hold the points or differ in size", keep, give)
	}
	// Identical points (same resources and virtual coordinate): the virtual
	// dimension is halved and the joiner's coordinate moves across.
	keep, give, dim, at, v, ok = Halve(z, own, own)
	if !ok || dim != 2 || at != Span/2 {
		t.Fatalf("identical points: dim %d at %d ok %v, want the virtual dimension halved", dim, at, ok)
	}
	moved := Point{own[0], own[1], v}
	if !keep.Contains(own) || !give.Contains(moved) || v == own[2] {
		t.Fatalf("identical points: joiner's virtual %d not moved into %v", v, give)
	}
	// Odd width, joiner at the top of the upper half: it must land in the
	// lower (shorter) half.
	z = Zone{Lo: []uint64{0, 0}, Hi: []uint64{1, 7}}
	_, give, dim, at, v, ok = Halve(z, Point{0, 6}, Point{0, 6})
	if !ok || dim != 1 || at != 3 || !give.Contains(Point{0, v}) {
		t.Fatalf("odd width: dim %d at %d virtual %d give %v ok %v", dim, at, v, give, ok)
	}
	// Nothing to halve.
	if _, _, _, _, _, ok := Halve(Zone{Lo: []uint64{0, 0}, Hi: []uint64{1, 1}}, Point{0, 0}, Point{0, 0}); ok {
		t.Fatal("a zone one coordinate wide was halved")
	}
}

// meanNeighbors is the mean number of CAN neighbors per zone.
func meanNeighbors(zones []Zone) float64 {
	links := 0
	for i := range zones {
		for j := i + 1; j < len(zones); j++ {
			if _, _, ok := Abut(zones[i], zones[j]); ok {
				links += 2
			}
		}
	}
	return float64(links) / float64(len(zones))
}

// Halving keeps zones regular, so the mean neighbor count hardly grows with
// the number of zones; cuts between fixed points (Split, a KD-tree) leave big
// zones beside many small ones and the count grows (docs/OVERLAY.md).
func TestHalveKeepsNeighborCountFlat(t *testing.T) {
	t.Parallel()
	seed := uint64(11)
	count := func(n int, split splitter) float64 {
		zones, _ := tilingBy(t, rand.New(rand.NewPCG(seed, 2)), 6, n, split)
		return meanNeighbors(zones)
	}
	kdGrowth := count(1200, kdSplit) / count(300, kdSplit)
	halveGrowth := count(1200, halveSplit) / count(300, halveSplit)
	if halveGrowth > 1.15 || kdGrowth < 1.25 {
		t.Fatalf("seed %d: mean neighbors ×%.2f with Halve (want ≤ 1.15), ×%.2f with Split (want ≥ 1.25) from 300 to 1200 zones", seed, halveGrowth, kdGrowth)
	}
	t.Logf("300 → 1200 zones: mean neighbors ×%.2f with Halve, ×%.2f with Split", halveGrowth, kdGrowth)
}

func TestAbut(t *testing.T) {
	a := Zone{Lo: []uint64{0, 0}, Hi: []uint64{10, 10}}
	cases := []struct {
		b     Zone
		ok    bool
		dim   int
		upper bool
	}{
		{Zone{Lo: []uint64{10, 5}, Hi: []uint64{20, 15}}, true, 0, true},
		{Zone{Lo: []uint64{0, 10}, Hi: []uint64{3, 12}}, true, 1, true},
		{Zone{Lo: []uint64{10, 10}, Hi: []uint64{20, 20}}, false, 0, false}, // corner only
		{Zone{Lo: []uint64{11, 0}, Hi: []uint64{20, 10}}, false, 0, false},  // gap
		{Zone{Lo: []uint64{5, 5}, Hi: []uint64{20, 20}}, false, 0, false},   // overlap
	}
	for i, c := range cases {
		dim, upper, ok := Abut(a, c.b)
		if ok != c.ok || (ok && (dim != c.dim || upper != c.upper)) {
			t.Errorf("case %d: got (%d,%v,%v) want (%d,%v,%v)", i, dim, upper, ok, c.dim, c.upper, c.ok)
		}
		if _, up2, ok2 := Abut(c.b, a); ok2 != ok || (ok && up2 == upper) {
			t.Errorf("case %d: Abut not symmetric", i)
		}
	}
}

func TestDist2ZeroExactlyInside(t *testing.T) {
	z := Zone{Lo: []uint64{10, 10}, Hi: []uint64{20, 20}}
	if z.Dist2(Point{10, 19}) != 0 {
		t.Fatal("inside point has distance")
	}
	if z.Dist2(Point{20, 15}) == 0 || z.Dist2(Point{9, 15}) == 0 {
		t.Fatal("outside point has zero distance")
	}
}

// TestGreedyRoutingAlwaysProgresses checks the claim behind greedy CAN
// routing: with complete neighbor tables, from any zone not containing the
// target some neighbor is strictly closer, so routing reaches the owner.
func TestGreedyRoutingAlwaysProgresses(t *testing.T) {
	seed := uint64(11)
	r := rand.New(rand.NewPCG(seed, 2))
	for _, d := range []int{2, 3, 5} {
		zones, _ := tiling(t, r, d, 200)
		nbrs := make([][]int, len(zones))
		for i := range zones {
			for j := range zones {
				if _, _, ok := Abut(zones[i], zones[j]); ok {
					nbrs[i] = append(nbrs[i], j)
				}
			}
		}
		for trial := 0; trial < 200; trial++ {
			target := randPoint(r, d)
			cur := r.IntN(len(zones))
			for hops := 0; !zones[cur].Contains(target); hops++ {
				if hops > len(zones) {
					t.Fatalf("seed %d d=%d: routing loops", seed, d)
				}
				best, bestD := -1, zones[cur].Dist2(target)
				for _, n := range nbrs[cur] {
					if dd := zones[n].Dist2(target); dd < bestD {
						best, bestD = n, dd
					}
				}
				if best < 0 {
					t.Fatalf("seed %d d=%d: no neighbor of %v closer to %v", seed, d, zones[cur], target)
				}
				cur = best
			}
		}
	}
}

func TestExtendTilesDepartedZone(t *testing.T) {
	// over = [0,10)×[0,10) departs; its face at x=10 is tiled by a and b.
	over := Zone{Lo: []uint64{0, 0}, Hi: []uint64{10, 10}}
	a := Zone{Lo: []uint64{10, 0}, Hi: []uint64{20, 4}}
	b := Zone{Lo: []uint64{10, 4}, Hi: []uint64{15, 10}}
	ea, ok1 := Extend(a, over, 0)
	eb, ok2 := Extend(b, over, 0)
	if !ok1 || !ok2 {
		t.Fatal("face zones cannot extend")
	}
	if !ea.Equal(Zone{Lo: []uint64{0, 0}, Hi: []uint64{20, 4}}) || !eb.Equal(Zone{Lo: []uint64{0, 4}, Hi: []uint64{15, 10}}) {
		t.Fatalf("extended to %v and %v", ea, eb)
	}
	if Overlaps(ea, eb) {
		t.Fatal("extended zones overlap")
	}
	// A zone sticking out of over's face, or not touching it, cannot extend.
	if _, ok := Extend(Zone{Lo: []uint64{10, 5}, Hi: []uint64{20, 12}}, over, 0); ok {
		t.Fatal("zone wider than the face extended")
	}
	if _, ok := Extend(Zone{Lo: []uint64{11, 0}, Hi: []uint64{20, 4}}, over, 0); ok {
		t.Fatal("zone not touching extended")
	}
	if _, ok := Extend(a, over, 1); ok {
		t.Fatal("extended along the wrong dimension")
	}
}

func TestOverlaps(t *testing.T) {
	a := Zone{Lo: []uint64{0, 0}, Hi: []uint64{10, 10}}
	cases := []struct {
		b    Zone
		want bool
	}{
		{Zone{Lo: []uint64{10, 0}, Hi: []uint64{20, 10}}, false}, // abuts
		{Zone{Lo: []uint64{9, 9}, Hi: []uint64{20, 20}}, true},   // corner inside
		{Zone{Lo: []uint64{2, 2}, Hi: []uint64{3, 3}}, true},     // contained
		{Zone{Lo: []uint64{0, 10}, Hi: []uint64{10, 20}}, false}, // abuts along the other dimension
		{Zone{Lo: []uint64{11, 0}, Hi: []uint64{20, 10}}, false}, // apart
	}
	for i, c := range cases {
		if got := Overlaps(a, c.b); got != c.want || Overlaps(c.b, a) != c.want {
			t.Errorf("case %d: Overlaps = %v, want %v", i, got, c.want)
		}
	}
}

// TestSubtract: a minus b, for random boxes on a small grid, is a set of
// disjoint boxes inside a, none overlapping b, whose volume is a's minus
// the shared part's.
func TestSubtract(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	box := func() Zone {
		z := Zone{Lo: make([]uint64, 3), Hi: make([]uint64, 3)}
		for k := range z.Lo {
			x, y := r.Uint64N(8), r.Uint64N(8)
			if x == y {
				y = x + 1
			}
			z.Lo[k], z.Hi[k] = min(x, y), max(x, y)
		}
		return z
	}
	vol := func(z Zone) uint64 { return z.Volume().Uint64() }
	for i := 0; i < 2000; i++ {
		a, b := box(), box()
		parts := Subtract(a, b)
		var sum, shared uint64 = 0, 1
		for k := range a.Lo {
			shared *= uint64(max(0, int64(min(a.Hi[k], b.Hi[k]))-int64(max(a.Lo[k], b.Lo[k]))))
		}
		for j, p := range parts {
			if !p.Valid(3) || Overlaps(p, b) || len(Subtract(p, a)) != 0 {
				t.Fatalf("case %d: %v − %v: part %v invalid, overlaps b or sticks out of a", i, a, b, p)
			}
			for _, q := range parts[:j] {
				if Overlaps(p, q) {
					t.Fatalf("case %d: parts %v and %v overlap", i, p, q)
				}
			}
			sum += vol(p)
		}
		if sum != vol(a)-shared || len(parts) > 6 {
			t.Fatalf("case %d: %v − %v: %d parts of volume %d, want %d", i, a, b, len(parts), sum, vol(a)-shared)
		}
	}
}

// TestEmptyBox: the box contains the point and overlaps none of the zones
// to avoid; with nothing to avoid it is the whole space; a point inside a
// zone to avoid has no empty box.
func TestEmptyBox(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	zones, _ := tiling(t, r, 3, 40)
	for i := 0; i < 500; i++ {
		p := randPoint(r, 3)
		var avoid []Zone
		for _, z := range zones {
			if !z.Contains(p) && r.IntN(2) == 0 {
				avoid = append(avoid, z)
			}
		}
		b, ok := EmptyBox(p, avoid)
		if !ok || !b.Contains(p) || !b.Valid(3) {
			t.Fatalf("case %d: box %v for %v (ok %v)", i, b, p, ok)
		}
		for _, z := range avoid {
			if Overlaps(b, z) {
				t.Fatalf("case %d: box %v overlaps %v", i, b, z)
			}
		}
	}
	if b, _ := EmptyBox(Point{5, 5}, nil); !b.Equal(Whole(2)) {
		t.Fatalf("nothing to avoid: %v", b)
	}
	if _, ok := EmptyBox(Point{5, 5}, []Zone{Whole(2)}); ok {
		t.Fatal("a point inside a zone to avoid has an empty box")
	}
}

func TestCoverGeometry(t *testing.T) {
	const h = Span / 2
	left := Zone{Lo: []uint64{0, 0}, Hi: []uint64{h, Span}}
	right := Zone{Lo: []uint64{h, 0}, Hi: []uint64{Span, Span}}
	if !PlaneBetween(right, left, 0, h, true) || PlaneBetween(right, left, 0, h, false) || PlaneBetween(right, left, 1, h, true) {
		t.Fatal("PlaneBetween: the plane x=h lies between right (upper) and left, and no other")
	}
	if !FaceHasHole(left, nil) {
		t.Fatal("FaceHasHole: left's inner face with nothing beyond it is a hole")
	}
	if FaceHasHole(left, []Zone{right}) {
		t.Fatal("FaceHasHole: right covers left's inner face")
	}
	lower := Zone{Lo: []uint64{h, 0}, Hi: []uint64{Span, h}}
	if !FaceHasHole(left, []Zone{lower}) {
		t.Fatal("FaceHasHole: half of left's inner face is uncovered")
	}
	p := Point{uint32(h + 5), 7}
	if d := Dist2(left, []Zone{right}, p); d != 0 {
		t.Fatalf("Dist2 to a point in an extra zone = %v, want 0", d)
	}
	if d := Dist2(left, nil, p); d <= 0 {
		t.Fatalf("Dist2 to a point outside = %v, want > 0", d)
	}
	if m := Mirror([]Zone{left}, Point{uint32(h), 7}); !m.Equal(right) {
		t.Fatalf("Mirror of left across x=h = %v, want %v", m, right)
	}
	if b := BoundingBox(lower, left); !b.Equal(Whole(2)) {
		t.Fatalf("BoundingBox = %v, want the whole space", b)
	}
}
