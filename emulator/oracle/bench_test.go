package oracle

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/overlay"
)

// benchTiling builds n zones by random splits and gives every peer its
// true neighbors, as a converged overlay would.
func benchTiling(n, d int, seed uint64) []overlay.Snapshot {
	r := rand.New(rand.NewPCG(seed, 9))
	pt := func() can.Point {
		p := make(can.Point, d)
		for i := range p {
			p[i] = r.Uint32()
		}
		return p
	}
	zones := []can.Zone{can.Whole(d)}
	points := []can.Point{pt()}
	// Points are inserted through a coarse owner search: fine for a benchmark setup.
	for len(zones) < n {
		p := pt()
		for i := range zones {
			if zones[i].Contains(p) {
				if k, g, _, _, ok := can.Split(zones[i], points[i], p); ok {
					zones[i] = k
					zones = append(zones, g)
					points = append(points, p)
				}
				break
			}
		}
	}
	snaps := make([]overlay.Snapshot, n)
	for i := range snaps {
		snaps[i] = overlay.Snapshot{ID: overlay.NodeID(i + 1), Joined: true, Zone: zones[i], Point: points[i]}
	}
	for i := range snaps {
		for j := range snaps {
			if _, _, ok := can.Abut(zones[i], zones[j]); ok {
				snaps[i].Neighbors = append(snaps[i].Neighbors, snaps[j].ID)
			}
		}
		slices.Sort(snaps[i].Neighbors)
	}
	return snaps
}

func BenchmarkCheck10k(b *testing.B) {
	snaps := benchTiling(10000, 3, 1)
	b.ResetTimer()
	for b.Loop() {
		if rep := Check(snaps, 3); rep.BrokenLinks != 0 || rep.ZoneGaps != 0 {
			b.Fatalf("%+v", rep)
		}
	}
}
