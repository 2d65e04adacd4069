package staleness

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/load"
)

// kdMembers tiles the dims-dimensional space with n zones by halving
// randomly chosen zones along a random dimension (a CAN's KD splits), each
// with a random I(u) and a held AI_d.
func kdMembers(n, dims int, seed uint64) []Member {
	r := rand.New(rand.NewPCG(seed, 1))
	zones := []can.Zone{can.Whole(dims)}
	for len(zones) < n {
		i := r.IntN(len(zones))
		z := zones[i]
		d := r.IntN(dims)
		if z.Hi[d]-z.Lo[d] < 2 {
			continue
		}
		mid := z.Lo[d] + (z.Hi[d]-z.Lo[d])/2
		a, b := z.Clone(), z.Clone()
		a.Hi[d], b.Lo[d] = mid, mid
		zones[i] = a
		zones = append(zones, b)
	}
	ms := make([]Member, n)
	for i, z := range zones {
		ms[i] = Member{Zone: z, Cores: float64(1 + r.IntN(8)), Queue: float64(r.IntN(5)), Held: make([]load.Agg, dims)}
	}
	return ms
}

// BenchmarkTruth is one oracle sample's staleness measure: the upper
// neighbor relation, the truth and the errors.
func BenchmarkTruth(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ms := kdMembers(n, 4, 1)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Truth(ms, 4).Measure()
			}
		})
	}
}

// On a random KD tiling every zone but those at the top of the space has
// an upper neighbor, and the true number of nodes above along d never
// exceeds the members (each counted at most once, with OF ≤ 1 summed
// over a face).
func TestTruthOnAKDTiling(t *testing.T) {
	const n, dims = 500, 3
	w := Truth(kdMembers(n, dims, 2), dims)
	for i := range w.Members {
		for d := 0; d < dims; d++ {
			top := w.Members[i].Zone.Hi[d] == can.Span
			if got := len(w.Up[w.Own[i]][d]); top != (got == 0) {
				t.Fatalf("member %d dimension %d: %d upper neighbors, at the top %v", i, d, got, top)
			}
			if a := w.TrueAI(i, d); a.Nodes < 0 || a.Nodes > n || top != (a.Nodes == 0) {
				t.Fatalf("member %d dimension %d: true AI %+v (top %v)", i, d, a, top)
			}
		}
	}
}

// The plane sweep finds exactly the upper neighbors an all-pairs scan
// finds.
func TestUppersMatchAllPairs(t *testing.T) {
	for _, dims := range []int{1, 2, 4} {
		w := Truth(kdMembers(300, dims, 3), dims)
		for p, pc := range w.Pieces {
			for d := 0; d < dims; d++ {
				var want []Edge
				for q, qc := range w.Pieces {
					if of := load.OverlapFraction(pc.Zone, qc.Zone, d); q != p && of > 0 {
						want = append(want, Edge{q, of})
					}
				}
				if got := w.Up[p][d]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("dims %d, piece %d, dimension %d: upper neighbors %v, all pairs give %v", dims, p, d, got, want)
				}
			}
		}
	}
}
