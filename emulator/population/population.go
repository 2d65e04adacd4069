// Package population generates the peers of a run (003 §5.3;
// 002 §3.3.1): each peer's resource capabilities, its coordinate in the
// CAN space (one dimension per resource plus the random virtual dimension),
// drawn deterministically from the run seed. Most nodes are weak, few are
// strong: resource levels are drawn with geometrically decreasing weights.
package population

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
)

// Kinds of node population.
const (
	// Clustered nodes fall into a few equivalence classes of identical nodes.
	Clustered = "clustered"
	// Mixed nodes draw every resource independently.
	Mixed = "mixed"
	// Uniform nodes draw every coordinate uniformly over the whole space:
	// not a realistic grid, but the regime of CAN's cost analysis (every
	// zone about the same size), useful as a control when a result should
	// not depend on the population's skew.
	Uniform = "uniform"
)

// Classes is the number of equivalence classes of a clustered population.
const Classes = 8

// Resource is one resource dimension of the CAN space.
type Resource struct {
	Name   string
	Unit   string
	Levels []float64 // possible capability values, weakest first
}

// Catalog lists the resource dimensions in the order overlay.dimensions
// takes them: with d dimensions, the first d are used. Beyond the named
// ones, generic resources r<i> with eight levels follow.
var Catalog = []Resource{
	{"cpu_speed", "relative to the canonical node", []float64{0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3}},
	{"memory", "GiB", []float64{1, 2, 4, 8, 16, 32, 64}},
	{"disk", "GB", []float64{50, 100, 250, 500, 1000, 2000}},
	{"cores", "cores", []float64{1, 2, 4, 8}},
	{"gpu_speed", "relative", []float64{0, 0.5, 1, 2}},
	{"gpu_memory", "GiB", []float64{0, 2, 4, 8, 16}},
	{"gpu_cores", "cores", []float64{0, 512, 1024, 2048, 4096}},
}

// ResourceAt returns the resource of dimension i.
func ResourceAt(i int) Resource {
	if i < len(Catalog) {
		return Catalog[i]
	}
	return Resource{Name: fmt.Sprintf("r%d", i), Unit: "level", Levels: []float64{1, 2, 3, 4, 5, 6, 7, 8}}
}

// Coord maps a (fractional) level position x of a resource with n levels
// to its coordinate: level k starts the k-th of n equal bands, so equal
// capabilities map to equal coordinates and a job requiring level k maps to
// the lower edge of its band.
func Coord(x float64, n int) uint32 {
	c := x / float64(n) * float64(can.Span)
	return uint32(min(max(c, 0), float64(can.Span-1)))
}

// Node is one generated peer.
type Node struct {
	// Levels is the level position per resource dimension: an integer level
	// index for clustered nodes, a level index plus a uniform fraction for
	// mixed ones (capabilities between two catalog levels).
	Levels []float64
	Point  can.Point // resource coordinates, then the virtual coordinate
}

// Capability returns the value of resource dimension i, interpolated
// between catalog levels for fractional positions.
func (n Node) Capability(i int) float64 {
	lv := ResourceAt(i).Levels
	x := n.Levels[i]
	k := int(x)
	if k >= len(lv)-1 {
		return lv[len(lv)-1]
	}
	f := x - float64(k)
	return lv[k] + f*(lv[k+1]-lv[k])
}

// Generate draws count nodes with dims resource dimensions (the virtual
// dimension is added) from the given seed.
func Generate(kind string, count, dims int, seed uint64) ([]Node, error) {
	if kind != Clustered && kind != Mixed && kind != Uniform {
		return nil, fmt.Errorf("population %q: want %s, %s or %s", kind, Clustered, Mixed, Uniform)
	}
	r := rand.New(rand.NewPCG(seed, 0x706f70)) // "pop": a stream of its own
	var classes [][]float64
	var classWeights []float64
	if kind == Clustered {
		for c := 0; c < Classes; c++ {
			classes = append(classes, drawLevels(r, dims))
		}
		// The most common class is the weakest.
		slices.SortStableFunc(classes, func(a, b []float64) int { return cmpFloat(sum(a), sum(b)) })
		classWeights = Geometric(Classes)
	}
	nodes := make([]Node, count)
	for i := range nodes {
		var lv []float64
		switch kind {
		case Clustered:
			lv = slices.Clone(classes[Pick(r, classWeights)])
		case Uniform:
			lv = make([]float64, dims)
			for d := range lv {
				lv[d] = r.Float64() * float64(len(ResourceAt(d).Levels))
			}
		default:
			// Mixed: random capabilities (003 §5.3), still mostly weak:
			// a level drawn as for clustered nodes, then a uniform
			// position within it, so that no two nodes coincide.
			lv = drawLevels(r, dims)
			for d := range lv {
				if int(lv[d]) < len(ResourceAt(d).Levels)-1 {
					lv[d] += r.Float64()
				}
			}
		}
		p := make(can.Point, dims+1)
		for d := 0; d < dims; d++ {
			p[d] = Coord(lv[d], len(ResourceAt(d).Levels))
		}
		p[dims] = r.Uint32() // the virtual dimension (003 §4.2)
		nodes[i] = Node{Levels: lv, Point: p}
	}
	return nodes, nil
}

func drawLevels(r *rand.Rand, dims int) []float64 {
	lv := make([]float64, dims)
	for d := range lv {
		lv[d] = float64(Pick(r, Geometric(len(ResourceAt(d).Levels))))
	}
	return lv
}

// Geometric returns weights 1/2, 1/4, … for n levels: most nodes weak,
// few strong (the workload draws requirements the same way).
func Geometric(n int) []float64 {
	w := make([]float64, n)
	x := 1.0
	for i := range w {
		x /= 2
		w[i] = x
	}
	return w
}

// Pick draws an index with probability proportional to its weight.
func Pick(r *rand.Rand, w []float64) int {
	var total float64
	for _, x := range w {
		total += x
	}
	u := r.Float64() * total
	for i, x := range w {
		if u < x {
			return i
		}
		u -= x
	}
	return len(w) - 1
}

func sum(a []float64) float64 {
	s := 0.0
	for _, x := range a {
		s += x
	}
	return s
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CapabilityAt returns the value of resource dimension i of a node at
// point p, read back from its coordinate (the inverse of Coord, then
// Capability's interpolation): what a peer knows of itself from its point.
func CapabilityAt(p can.Point, i int) float64 {
	lv := ResourceAt(i).Levels
	x := float64(p[i]) / float64(can.Span) * float64(len(lv))
	return Node{Levels: map1(i, x)}.Capability(i)
}

func map1(i int, x float64) []float64 {
	lv := make([]float64, i+1)
	lv[i] = x
	return lv
}

// CoordAt is the inverse of CapabilityAt: the coordinate of dimension i
// at which a node has the amount v (interpolated between catalog levels).
// An amount below the weakest level maps to coordinate 0, which reads back
// as the weakest level: coordinates cannot say less.
func CoordAt(i int, v float64) uint32 {
	lv := ResourceAt(i).Levels
	if !(v > lv[0]) {
		return 0
	}
	for k := 0; k+1 < len(lv); k++ {
		if v < lv[k+1] {
			return Coord(float64(k)+(v-lv[k])/(lv[k+1]-lv[k]), len(lv))
		}
	}
	return Coord(float64(len(lv)-1), len(lv))
}

// Combination draws the combination of categorical values of a peer at
// point p (002 §2.4, §5.2): one of the first inUse combinations,
// uniformly, from a PCG stream of the seed and a hash of the point. Every
// peer, initial or joining, gets its own without changing any other draw,
// and the global view reads it back from the point.
func Combination(inUse int, seed uint64, p can.Point) int {
	if inUse <= 1 {
		return 0
	}
	h := fnv.New64a()
	var b [4]byte
	for _, x := range p {
		binary.LittleEndian.PutUint32(b[:], x)
		h.Write(b[:])
	}
	r := rand.New(rand.NewPCG(seed, 0x636174^h.Sum64())) // "cat"
	return r.IntN(inUse)
}

// PlaceOnT moves every node into the sub-CAN of its combination (002
// §2.4): its last coordinate — the virtual one — becomes its T coordinate
// under transform t, the virtual coordinate scaled into the combination's
// interval. The combination is drawn as Combination draws it, from the
// point before the move; afterwards the point says it through
// t.CombinationAt.
func PlaceOnT(nodes []Node, t categorical.Transform, inUse int, seed uint64) {
	for i := range nodes {
		p := nodes[i].Point
		c := Combination(inUse, seed, p)
		p[len(p)-1] = t.Coord(c, p[len(p)-1])
	}
}

// Dimensions of the catalog the Multiple Peers split reads and writes.
const (
	dimMemory = 1
	dimDisk   = 2
	dimCores  = 3
)

// Cores is the number of cores of a node at point p: its cores dimension
// read back and rounded (as the run nodes read it), at least 1; 1 without
// a cores dimension.
func Cores(p can.Point) int {
	if len(p)-1 <= dimCores {
		return 1
	}
	return max(int(math.Round(CapabilityAt(p, dimCores))), 1)
}

// PerCore splits every node into one peer per core (002 §3.3's Multiple
// Peers, Condor's static partitioning): each keeps the node's CPU speed
// (and any further dimension), has one core and an equal share of the
// node's memory and disk, and draws a virtual coordinate of its own from
// seed. The peers of one node follow each other, nodes in order. A share
// below the weakest catalog level maps to coordinate 0, which reads back
// as that level (CoordAt): coordinates cannot say less. Nodes without a
// cores dimension are copied unchanged.
func PerCore(nodes []Node, seed uint64) []Node {
	r := rand.New(rand.NewPCG(seed, 0x6d70)) // "mp": a stream of its own
	var out []Node
	for _, n := range nodes {
		c := Cores(n.Point)
		if c == 1 {
			out = append(out, Node{Levels: slices.Clone(n.Levels), Point: slices.Clone(n.Point)})
			continue
		}
		dims := len(n.Point) - 1
		p := slices.Clone(n.Point)
		for _, d := range []int{dimMemory, dimDisk} {
			p[d] = CoordAt(d, CapabilityAt(n.Point, d)/float64(c))
		}
		p[dimCores] = 0
		lv := slices.Clone(n.Levels)
		for _, d := range []int{dimMemory, dimDisk, dimCores} {
			lv[d] = float64(p[d]) / float64(can.Span) * float64(len(ResourceAt(d).Levels))
		}
		for range c {
			q := slices.Clone(p)
			q[dims] = r.Uint32()
			out = append(out, Node{Levels: slices.Clone(lv), Point: q})
		}
	}
	return out
}
