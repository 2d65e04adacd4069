package population

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
)

func TestGenerateDeterministicPerSeed(t *testing.T) {
	for _, kind := range []string{Clustered, Mixed} {
		for _, seed := range []uint64{0, 1, 42} {
			a, err := Generate(kind, 500, 3, seed)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Generate(kind, 500, 3, seed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s seed %d: two runs differ", kind, seed)
			}
			c, err := Generate(kind, 500, 3, seed+1)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.DeepEqual(a, c) {
				t.Fatalf("%s seeds %d and %d give the same population", kind, seed, seed+1)
			}
			// A prefix of the population does not depend on its size.
			d, _ := Generate(kind, 100, 3, seed)
			if !reflect.DeepEqual(a[:100], d) {
				t.Fatalf("%s seed %d: first 100 nodes depend on the count", kind, seed)
			}
		}
	}
}

func TestGenerateShape(t *testing.T) {
	for _, kind := range []string{Clustered, Mixed} {
		fractional := 0
		for _, dims := range []int{0, 1, 2, 7, 9} {
			seed := uint64(dims + 10)
			nodes, err := Generate(kind, 300, dims, seed)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != 300 {
				t.Fatalf("%s dims %d seed %d: %d nodes", kind, dims, seed, len(nodes))
			}
			virtual := map[uint32]bool{}
			for i, n := range nodes {
				if len(n.Point) != dims+1 || len(n.Levels) != dims {
					t.Fatalf("%s dims %d seed %d: node %d has point %v levels %v", kind, dims, seed, i, n.Point, n.Levels)
				}
				for d := 0; d < dims; d++ {
					res := ResourceAt(d)
					k := int(n.Levels[d])
					frac := float64(n.Levels[d]) - float64(k)
					if k < 0 || k >= len(res.Levels) || frac < 0 || frac >= 1 {
						t.Fatalf("%s dims %d seed %d: node %d level position %v of %d", kind, dims, seed, i, n.Levels[d], len(res.Levels))
					}
					if frac > 0 {
						fractional++
						if kind == Clustered || k == len(res.Levels)-1 {
							t.Fatalf("%s dims %d seed %d: node %d has fractional level %v", kind, dims, seed, i, n.Levels[d])
						}
					}
					if n.Point[d] != Coord(n.Levels[d], len(res.Levels)) {
						t.Fatalf("%s dims %d seed %d: node %d coordinate %d for level %v", kind, dims, seed, i, n.Point[d], n.Levels[d])
					}
					// The coordinate lies in the level's band.
					if lo := Coord(float64(k), len(res.Levels)); n.Point[d] < lo ||
						(k+1 < len(res.Levels) && n.Point[d] >= Coord(float64(k+1), len(res.Levels))) {
						t.Fatalf("%s dims %d seed %d: node %d coordinate %d outside level %d's band", kind, dims, seed, i, n.Point[d], k)
					}
					c, hi := n.Capability(d), res.Levels[min(k+1, len(res.Levels)-1)]
					if c < res.Levels[k] || c > hi || (frac == 0 && c != res.Levels[k]) {
						t.Fatalf("%s dims %d seed %d: node %d capability %v for level %v", kind, dims, seed, i, c, n.Levels[d])
					}
				}
				virtual[n.Point[dims]] = true
			}
			if len(virtual) < 290 {
				t.Fatalf("%s dims %d seed %d: only %d distinct virtual coordinates", kind, dims, seed, len(virtual))
			}
		}
		if kind == Mixed && fractional == 0 {
			t.Fatal("mixed nodes all sit on catalog levels")
		}
	}
	if nodes, err := Generate(Mixed, 0, 2, 1); err != nil || len(nodes) != 0 {
		t.Fatalf("empty population: %v %v", nodes, err)
	}
}

func TestCoord(t *testing.T) {
	bands := []uint32{Coord(0, 8), Coord(1, 8), Coord(2, 8), Coord(3, 8), Coord(4, 8), Coord(5, 8), Coord(6, 8), Coord(7, 8)}
	for k, c := range bands {
		if want := uint32(uint64(k) << 29); c != want {
			t.Fatalf("Coord(%d, 8) = %d, want %d", k, c, want)
		}
	}
	seven := []uint32{Coord(0, 7), Coord(1, 7), Coord(2, 7), Coord(3, 7), Coord(4, 7), Coord(5, 7), Coord(6, 7)}
	for k, c := range seven {
		if want := uint32(uint64(k) * can.Span / 7); c != want {
			t.Fatalf("Coord(%d, 7) = %d, want the band edge %d", k, c, want)
		}
	}
	// Fractional positions fall inside their band; out-of-range positions
	// are clamped into the space.
	if c := Coord(2.5, 4); c != 5<<29 {
		t.Fatalf("Coord(2.5, 4) = %d", c)
	}
	if c := Coord(4, 4); c != uint32(can.Span-1) {
		t.Fatalf("Coord(4, 4) = %d, want the last coordinate", c)
	}
	if c := Coord(-1, 4); c != 0 {
		t.Fatalf("Coord(-1, 4) = %d", c)
	}
}

func key(lv []float64) string { return fmt.Sprint(lv) }

func TestClusteredClasses(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		for _, dims := range []int{2, 4} {
			nodes, err := Generate(Clustered, 3000, dims, seed)
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			sums := map[string]float64{}
			for _, n := range nodes {
				k := key(n.Levels)
				count[k]++
				sums[k] = float64(sum(n.Levels))
				// Identical classes share resource coordinates too.
				for d := 0; d < dims; d++ {
					if n.Point[d] != Coord(n.Levels[d], len(ResourceAt(d).Levels)) {
						t.Fatalf("seed %d: point %v levels %v", seed, n.Point, n.Levels)
					}
				}
			}
			if len(count) > Classes {
				t.Fatalf("seed %d dims %d: %d distinct resource vectors, at most %d classes", seed, dims, len(count), Classes)
			}
			if len(count) < 2 {
				t.Fatalf("seed %d dims %d: a single class", seed, dims)
			}
			var common string
			minSum := math.Inf(1)
			for k, c := range count {
				if common == "" || c > count[common] {
					common = k
				}
				minSum = min(minSum, sums[k])
			}
			if sums[common] != minSum {
				t.Fatalf("seed %d dims %d: most common class %s (sum %v, %d nodes) is not the weakest (sum %v): %v",
					seed, dims, common, sums[common], count[common], minSum, count)
			}
			// The weakest class holds about half of the nodes.
			if f := float64(count[common]) / float64(len(nodes)); f < 0.4 {
				t.Fatalf("seed %d dims %d: most common class holds only %.2f", seed, dims, f)
			}
		}
	}
}

func TestMixedMostlyWeak(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		const count = 5000
		nodes, err := Generate(Mixed, count, 3, seed)
		if err != nil {
			t.Fatal(err)
		}
		for d := 0; d < 3; d++ {
			hist := make([]int, len(ResourceAt(d).Levels))
			for _, n := range nodes {
				hist[int(n.Levels[d])]++
			}
			// Geometric weights 1/2, 1/4, …: level 0 holds about half.
			if f := float64(hist[0]) / count; f < 0.46 || f > 0.55 {
				t.Fatalf("seed %d dim %d: %.3f at level 0, want about 0.5 (%v)", seed, d, f, hist)
			}
			if f := float64(hist[0]+hist[1]) / count; f < 0.7 {
				t.Fatalf("seed %d dim %d: only %.3f at the two weakest levels (%v)", seed, d, f, hist)
			}
			if !(hist[0] > hist[1] && hist[1] > hist[2]) {
				t.Fatalf("seed %d dim %d: levels not decreasing %v", seed, d, hist)
			}
			if hist[len(hist)-1] == 0 && d == 0 {
				// With 8 levels the strongest has weight 1/256: ~20 of 5000.
				t.Fatalf("seed %d: strongest cpu level never drawn %v", seed, hist)
			}
		}
		// Resources are drawn independently: far more distinct vectors than classes.
		distinct := map[string]bool{}
		for _, n := range nodes {
			distinct[key(n.Levels)] = true
		}
		if len(distinct) < count*9/10 {
			t.Fatalf("seed %d: mixed population has only %d distinct vectors of %d", seed, len(distinct), count)
		}
	}
}

// TestUniformSpreadsEvenly: uniform coordinates fill each half of every
// resource dimension about equally (mixed ones crowd the weak end).
func TestUniformSpreadsEvenly(t *testing.T) {
	const count, dims = 4000, 3
	nodes, err := Generate(Uniform, count, dims, 7)
	if err != nil {
		t.Fatal(err)
	}
	for d := 0; d < dims; d++ {
		low := 0
		for _, n := range nodes {
			if uint64(n.Point[d]) < can.Span/2 {
				low++
			}
		}
		if low < count*45/100 || low > count*55/100 {
			t.Fatalf("seed 7, dimension %d: %d of %d in the lower half", d, low, count)
		}
	}
}

func TestUnknownKind(t *testing.T) {
	for _, kind := range []string{"", "gaussian", "Clustered"} {
		nodes, err := Generate(kind, 10, 2, 1)
		if err == nil || nodes != nil {
			t.Fatalf("kind %q: %v, %v", kind, nodes, err)
		}
		if !strings.Contains(err.Error(), Clustered) || !strings.Contains(err.Error(), Mixed) {
			t.Fatalf("kind %q: error %q does not name the valid kinds", kind, err)
		}
	}
}

func TestResourceAt(t *testing.T) {
	for i := range Catalog {
		if ResourceAt(i).Name != Catalog[i].Name {
			t.Fatalf("dimension %d: %q", i, ResourceAt(i).Name)
		}
		if !slices.IsSorted(Catalog[i].Levels) {
			t.Fatalf("%s levels not weakest first: %v", Catalog[i].Name, Catalog[i].Levels)
		}
	}
	r := ResourceAt(len(Catalog) + 2)
	if r.Name != fmt.Sprintf("r%d", len(Catalog)+2) || len(r.Levels) != 8 {
		t.Fatalf("generic resource %+v", r)
	}
}

// CoordAt inverts CapabilityAt: amounts between the weakest and the
// strongest level read back (to the coordinate's resolution), amounts
// below the weakest level map to coordinate 0 and above the strongest to
// the strongest level's coordinate.
func TestCoordAtInvertsCapabilityAt(t *testing.T) {
	for i := 0; i < 5; i++ {
		lv := ResourceAt(i).Levels
		p := make(can.Point, i+1)
		for _, v := range []float64{lv[0], (lv[0] + lv[1]) / 2, lv[1], lv[len(lv)-1] * 0.99, lv[len(lv)-1]} {
			p[i] = CoordAt(i, v)
			if got := CapabilityAt(p, i); math.Abs(got-v) > 1e-6*max(1, v) {
				t.Errorf("dim %d: CapabilityAt(CoordAt(%v)) = %v", i, v, got)
			}
		}
		if c := CoordAt(i, lv[0]-0.5); c != 0 {
			t.Errorf("dim %d: below the weakest level: coordinate %d, want 0", i, c)
		}
		if c, top := CoordAt(i, lv[len(lv)-1]*2), Coord(float64(len(lv)-1), len(lv)); c != top {
			t.Errorf("dim %d: above the strongest level: coordinate %d, want %d", i, c, top)
		}
	}
}

// A peer's combination of categorical values follows from the seed and
// its point alone, lies among the first inUse, and spreads evenly over
// them (002 §5.2.1: equally many nodes in each combination).
func TestCombination(t *testing.T) {
	nodes, err := Generate(Mixed, 4000, 3, 11)
	if err != nil {
		t.Fatal(err)
	}
	count := make([]int, 16)
	for _, n := range nodes {
		c := Combination(16, 11, n.Point)
		if c < 0 || c >= 16 || Combination(16, 11, n.Point) != c {
			t.Fatalf("point %v: combination %d", n.Point, c)
		}
		count[c]++
	}
	for c, k := range count {
		if k < 4000/16*8/10 || k > 4000/16*12/10 {
			t.Errorf("combination %d drawn %d times of 4000, want about 250: %v", c, k, count)
		}
	}
	if Combination(1, 11, nodes[0].Point) != 0 {
		t.Error("with one combination in use every peer has it")
	}
}

// PlaceOnT moves each node into its combination's sub-CAN along the
// transform dimension (002 §2.4) — the combination Combination draws from
// its point before the move — and leaves its resource coordinates alone.
func TestPlaceOnT(t *testing.T) {
	const seed, inUse = 7, 12
	nodes, err := Generate(Mixed, 300, 2, seed)
	if err != nil {
		t.Fatal(err)
	}
	before := make([]can.Point, len(nodes))
	for i, n := range nodes {
		before[i] = slices.Clone(n.Point)
	}
	tr := categorical.NewTransform(categorical.Space{Values: []int{2, 2, 2, 2}})
	PlaceOnT(nodes, tr, inUse, seed)
	seen := map[int]bool{}
	for i, n := range nodes {
		want := Combination(inUse, seed, before[i])
		if got := tr.CombinationAt(n.Point[2]); got != want {
			t.Fatalf("node %d: T %d is combination %d's sub-CAN, want %d's", i, n.Point[2], got, want)
		}
		if n.Point[0] != before[i][0] || n.Point[1] != before[i][1] {
			t.Fatalf("node %d: resource coordinates moved from %v to %v", i, before[i], n.Point)
		}
		seen[want] = true
	}
	if len(seen) != inUse {
		t.Errorf("%d combinations among 300 nodes, want %d", len(seen), inUse)
	}
}

// PerCore (002 §3.3's Multiple Peers) gives every node one peer per core,
// each with the node's CPU speed, one core and an equal share of its
// memory and disk; without a cores dimension it changes nothing.
func TestPerCore(t *testing.T) {
	for _, tc := range []struct {
		dims  int
		split bool
	}{{4, true}, {5, true}, {3, false}} {
		const seed = 5
		nodes, err := Generate(Mixed, 300, tc.dims, seed)
		if err != nil {
			t.Fatal(err)
		}
		peers := PerCore(nodes, seed)
		if again := PerCore(nodes, seed); !slices.EqualFunc(peers, again, func(a, b Node) bool { return slices.Equal(a.Point, b.Point) }) {
			t.Fatalf("dims %d seed %d: PerCore is not deterministic", tc.dims, seed)
		}
		i, multi := 0, 0
		for _, n := range nodes {
			c := Cores(n.Point)
			if !tc.split && c != 1 {
				t.Fatalf("dims %d: a node without a cores dimension has %d cores", tc.dims, c)
			}
			if c > 1 {
				multi++
			}
			for k := range c {
				p := peers[i+k]
				if Cores(p.Point) != 1 || p.Point[0] != n.Point[0] {
					t.Fatalf("dims %d seed %d: peer %d of node %v: %v, want one core and the node's CPU speed", tc.dims, seed, k, n.Point, p.Point)
				}
				for _, d := range []int{1, 2} {
					want := max(CapabilityAt(n.Point, d)/float64(c), ResourceAt(d).Levels[0])
					if got := CapabilityAt(p.Point, d); math.Abs(got-want) > 1e-6*want+0.01 {
						t.Fatalf("dims %d seed %d: peer %d of a %d-core node has %v of %s, want %v", tc.dims, seed, k, c, got, ResourceAt(d).Name, want)
					}
					if got := p.Capability(d); math.Abs(got-CapabilityAt(p.Point, d)) > 0.01*got {
						t.Fatalf("dims %d seed %d: levels say %v of %s, the point %v", tc.dims, seed, got, ResourceAt(d).Name, CapabilityAt(p.Point, d))
					}
				}
			}
			i += c
		}
		if i != len(peers) {
			t.Fatalf("dims %d seed %d: %d peers for %d cores", tc.dims, seed, len(peers), i)
		}
		if tc.split && multi == 0 {
			t.Fatalf("dims %d seed %d: no multi-core node to split", tc.dims, seed)
		}
	}
}
