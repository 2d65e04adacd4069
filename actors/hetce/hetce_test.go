package hetce

import (
	"math"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/load"
)

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		name string
		ce   CE
		l    Load
		want float64
	}{
		// Eq 4.1: a dedicated GPU at clock 2 with one job running and two
		// queued scores 3/2.
		{"eq4.1 gpu", CE{Dedicated: true, Units: 1, Speed: 2}, Load{Queue: 3, Required: 3}, 1.5},
		// Eq 4.1 counts jobs, not cores: a slow GPU with one job scores 2.
		{"eq4.1 slow gpu", CE{Dedicated: true, Units: 1, Speed: 0.5}, Load{Queue: 1, Required: 1}, 2},
		// Eq 4.2: a 4-core CPU at 1.25 whose jobs require 6 cores:
		// (6/4)/1.25 = 1.2.
		{"eq4.2 cpu", CE{Units: 4, Speed: 1.25}, Load{Queue: 3, Required: 6}, 1.2},
		// Eq 4.2: an idle CPU scores 0 whatever its speed.
		{"eq4.2 idle", CE{Units: 8, Speed: 3}, Load{}, 0},
		// A CE the node lacks is never the best.
		{"absent gpu", CE{Dedicated: true, Units: 0, Speed: 0}, Load{}, math.Inf(1)},
	} {
		if got := Score(tc.ce, tc.l); math.Abs(got-tc.want) > 1e-12 && got != tc.want {
			t.Errorf("%s: Score = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAcceptable(t *testing.T) {
	gpu := CE{Dedicated: true, Units: 1, Speed: 1}
	cpu := CE{Units: 4, Speed: 1}
	for _, tc := range []struct {
		name    string
		ce      CE
		l       Load
		cpuFits bool
		want    bool
	}{
		{"idle gpu, a core free", gpu, Load{}, true, true},
		{"busy gpu: dedicated, one job at a time", gpu, Load{Queue: 1, Required: 1}, true, false},
		{"idle gpu but no CPU core to drive it", gpu, Load{}, false, false},
		{"cpu with free cores though running jobs", cpu, Load{Queue: 3, Required: 3}, true, true},
		{"cpu with a job of its type waiting", cpu, Load{Queue: 5, Waiting: 1, Required: 5}, true, false},
		{"cpu whose residual does not fit", cpu, Load{Queue: 4, Required: 4}, false, false},
		{"no such CE", CE{Dedicated: true}, Load{}, true, false},
	} {
		if got := Acceptable(tc.ce, tc.l, tc.cpuFits); got != tc.want {
			t.Errorf("%s: Acceptable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Eq 4.3 over Aggregate: node N owns the lower half of dimension 0; its
// upper neighbors U1 and U2 split the upper half, so N's upper face covers
// all of each one's lower face (OF = 1). U1 has a GPU running one job and
// knows 2 GPUs above it with 3 jobs among 4 nodes; U2 has no GPU and 1
// idle GPU among 2 nodes above it. AI_0(N, GPU) = (1+4 + 1+2 nodes, 1+2 +
// 0+1 units, 1+3 + 0+0 required) = (8, 4, 4); F = 4/4² = 0.25.
func TestAggregateAndObjective(t *testing.T) {
	const h, q = can.Span / 2, can.Span / 4
	n := can.Zone{Lo: []uint64{0, 0}, Hi: []uint64{h, h}}
	u1 := can.Zone{Lo: []uint64{h, 0}, Hi: []uint64{can.Span, q}}
	u2 := can.Zone{Lo: []uint64{h, q}, Hi: []uint64{can.Span, h}}
	ai := Aggregate(n, []Upper{
		{Zone: u1, Units: 1, Required: 1, AI: []load.Agg{{Nodes: 4, Cores: 2, Queue: 3}, {}}},
		{Zone: u2, Units: 0, Required: 0, AI: []load.Agg{{Nodes: 2, Cores: 1, Queue: 0}, {}}},
	})
	want := load.Agg{Nodes: 8, Cores: 4, Queue: 4}
	if ai[0] != want {
		t.Fatalf("AI_0(N, GPU) = %+v, want %+v", ai[0], want)
	}
	if ai[1] != (load.Agg{}) {
		t.Fatalf("nothing lies above N along dimension 1, got %+v", ai[1])
	}
	if f := Objective(ai[0]); f != 0.25 {
		t.Fatalf("F_0(N, GPU) = %v, want 0.25", f)
	}
	// No GPU above: nothing to push a GPU job towards.
	if f := Objective(load.Agg{Nodes: 7, Cores: 0, Queue: 0}); !math.IsInf(f, 1) {
		t.Fatalf("F with no units above = %v, want +Inf", f)
	}
}

func TestStopProbability(t *testing.T) {
	// Eq 4.4: 3 nodes above, SF 2: 1/(1+3)² = 1/16.
	if p := StopProbability(3, 2); p != 1.0/16 {
		t.Fatalf("P = %v, want 1/16", p)
	}
	// The top of the space (nothing above) always stops.
	if p := StopProbability(0, 3); p != 1 {
		t.Fatalf("P with nothing above = %v, want 1", p)
	}
}

func TestAlgorithm2Picks(t *testing.T) {
	cs := []Candidate{
		{ID: 1, Acceptable: true, Free: false, Speed: 3, Score: 0.2},
		{ID: 2, Acceptable: true, Free: true, Speed: 1, Score: 0},
		{ID: 3, Acceptable: true, Free: true, Speed: 2, Score: 0},
		{ID: 4, Acceptable: false, Speed: 4, Score: 0.1},
	}
	// Line 6: a free node beats a faster node that is only acceptable;
	// among free nodes the fastest dominant CE.
	if b, ok := PickAcceptable(cs); !ok || b.ID != 3 {
		t.Fatalf("PickAcceptable = %d %v, want node 3", b.ID, ok)
	}
	// Line 8: no free node — the fastest acceptable one.
	if b, ok := PickAcceptable(cs[:1:1]); !ok || b.ID != 1 {
		t.Fatalf("PickAcceptable (acceptable only) = %d %v, want node 1", b.ID, ok)
	}
	if _, ok := PickAcceptable(cs[3:]); ok {
		t.Fatal("PickAcceptable found a node though none is acceptable")
	}
	// Line 14: the minimum score; a tie goes to the faster CE.
	busy := []Candidate{{ID: 5, Speed: 1, Score: 1.5}, {ID: 6, Speed: 0.5, Score: 1}, {ID: 7, Speed: 2, Score: 1}}
	if b, ok := PickMinScore(busy); !ok || b.ID != 7 {
		t.Fatalf("PickMinScore = %d %v, want node 7", b.ID, ok)
	}
}
