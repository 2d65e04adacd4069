package emulator

import (
	"math"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/emulator/population"
)

// A Residue-node's point (002 §3.1.1) reads back as the residual amounts:
// memory, disk and cores replaced, CPU speed and the virtual coordinate
// kept, never above the node's own coordinates; amounts below the weakest
// catalog level read back as that level.
func TestResiduePointReadsBackResidualAmounts(t *testing.T) {
	res := resources{dims: 4}
	nodes, err := population.Generate(population.Mixed, 50, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		p := nd.Point
		c := res.Capacity(p)
		for _, f := range []float64{0, 0.3, 0.5, 1} {
			r := jobs.Vec{math.Floor(c[jobs.ResCores] * f), c[jobs.ResMemory] * f, c[jobs.ResDisk] * f}
			q := can.Point(res.Residue(p, r))
			if q[0] != p[0] || q[4] != p[4] {
				t.Fatalf("residue %v of %v changed the CPU speed or virtual coordinate", q, p)
			}
			back := res.Capacity(q)
			for k, dim := range map[int]int{jobs.ResMemory: 1, jobs.ResDisk: 2, jobs.ResCores: 3} {
				if q[dim] > p[dim] {
					t.Fatalf("residue %v above the node's point %v in dimension %d", q, p, dim)
				}
				weakest := population.ResourceAt(dim).Levels[0]
				want := max(r[k], weakest)
				if k == jobs.ResCores {
					want = math.Round(want)
				}
				if math.Abs(back[k]-want) > 1e-6*want {
					t.Fatalf("node %v, residual %v: residue %v reads back %v", p, r, q, back)
				}
			}
		}
	}
}
