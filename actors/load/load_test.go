package load

import (
	"math"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
)

func z(lo0, hi0, lo1, hi1 uint64) can.Zone {
	return can.Zone{Lo: []uint64{lo0, lo1}, Hi: []uint64{hi0, hi1}}
}

// Figure 4 of 003: A sits above C and D along memory (dimension 1); D's
// upper face covers 1/4 of A's lower face, C's the other 3/4.
func TestOverlapFractionsOfALowerFaceSumToOne(t *testing.T) {
	a := z(0, 400, 200, 400)
	c := z(0, 300, 0, 200)
	d := z(300, 400, 0, 200)
	if got := OverlapFraction(d, a, 1); got != 0.25 {
		t.Fatalf("OF_mem(D, A) = %v, want 0.25", got)
	}
	if got := OverlapFraction(c, a, 1) + OverlapFraction(d, a, 1); got != 1 {
		t.Fatalf("fractions of A's lower face sum to %v, want 1", got)
	}
	if got := OverlapFraction(a, d, 1); got != 0 {
		t.Fatalf("A is above D, not below: OF = %v, want 0", got)
	}
	if got := OverlapFraction(c, d, 1); got != 0 {
		t.Fatalf("C and D abut along dimension 0, not 1: OF = %v", got)
	}
}

// Aggregation counts every node above exactly once: on a 4×4 grid of
// equal zones, each with queue 2, the node at row r sees (3-r)·4/4 … nodes
// above it in its column's dimension — with fractions, the per-column sums
// add up to the whole rows above.
func TestAggregateCountsEachNodeAboveOnce(t *testing.T) {
	const n, side = 4, 100
	zone := func(i, j int) can.Zone {
		return z(uint64(i*side), uint64((i+1)*side), uint64(j*side), uint64((j+1)*side))
	}
	ai := make(map[[2]int][]Agg)
	// Aggregate from the top row down, as heartbeats would after n rounds.
	for j := n - 1; j >= 0; j-- {
		for i := 0; i < n; i++ {
			var ups []Upper
			for _, nb := range [][2]int{{i + 1, j}, {i, j + 1}} {
				if nb[0] < n && nb[1] < n {
					ups = append(ups, Upper{Zone: zone(nb[0], nb[1]), Queue: 2, AI: ai[nb]})
				}
			}
			ai[[2]int{i, j}] = Aggregate(zone(i, j), ups)
		}
		// dimension 0 depends on neighbors to the right in the same row:
		// recompute the row right to left.
		for i := n - 1; i >= 0; i-- {
			var ups []Upper
			for _, nb := range [][2]int{{i + 1, j}, {i, j + 1}} {
				if nb[0] < n && nb[1] < n {
					ups = append(ups, Upper{Zone: zone(nb[0], nb[1]), Queue: 2, AI: ai[nb]})
				}
			}
			ai[[2]int{i, j}] = Aggregate(zone(i, j), ups)
		}
	}
	got := ai[[2]int{0, 0}]
	if got[0].Nodes != 3 || got[0].Queue != 6 {
		t.Fatalf("AI_0 of the corner = %+v, want 3 nodes (its row), queue 6", got[0])
	}
	if got[1].Nodes != 3 || got[1].Queue != 6 {
		t.Fatalf("AI_1 of the corner = %+v, want 3 nodes (its column), queue 6", got[1])
	}
	// A wide node under two narrow ones gets both in full.
	wide := z(0, 200, 0, 100)
	ups := []Upper{{Zone: z(0, 100, 100, 200), Queue: 1}, {Zone: z(100, 200, 100, 200), Queue: 3}}
	if a := Aggregate(wide, ups)[1]; a.Nodes != 2 || a.Cores != 2 || a.Queue != 4 {
		t.Fatalf("wide node: AI_1 = %+v, want 2 nodes, 2 cores, queue 4", a)
	}
	// Multi-core (002 §3.1.4): cores and required cores add up; the
	// upper neighbor's own AI counts its nodes and cores too.
	ups = []Upper{
		{Zone: z(0, 100, 100, 200), Cores: 8, Queue: 6, AI: []Agg{{}, {Nodes: 3, Cores: 7, Queue: 5}}},
		{Zone: z(100, 200, 100, 200), Cores: 2, Queue: 1},
	}
	if a := Aggregate(wide, ups)[1]; a.Nodes != 5 || a.Cores != 17 || a.Queue != 12 {
		t.Fatalf("multi-core: AI_1 = %+v, want 5 nodes, 17 cores, 12 required cores", a)
	}
}

func TestObjectiveStopAndScore(t *testing.T) {
	if got := Objective(Agg{Nodes: 4, Cores: 4, Queue: 8}); got != 0.5 {
		t.Fatalf("F_d = %v, want 8/16", got)
	}
	// 002 Eq 3.2: required cores over cores squared, whatever the nodes.
	if got := Objective(Agg{Nodes: 2, Cores: 8, Queue: 16}); got != 0.25 {
		t.Fatalf("F_d (multi-core) = %v, want 16/64", got)
	}
	if !math.IsInf(Objective(Agg{}), 1) {
		t.Fatal("F_d with no node above must be +Inf")
	}
	// More nodes above, or a higher stopping factor: less likely to stop.
	if StopProbability(0, 2) != 1 {
		t.Fatal("at the edge a node always stops")
	}
	if !(StopProbability(3, 1) > StopProbability(3, 2) && StopProbability(3, 2) > StopProbability(9, 2)) {
		t.Fatal("PS must fall with SF and with the nodes above")
	}
	if StopProbability(3, 2) != 1.0/16 {
		t.Fatalf("PS(3 nodes, SF 2) = %v, want 1/16", StopProbability(3, 2))
	}
	if Score(3, 1.5) != 2 || !math.IsInf(Score(1, 0), 1) {
		t.Fatal("F(C) = queue / speed")
	}
}
