package staleness

import (
	"math"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/load"
)

const q = can.Span / 4

func zone(x0, x1, y0, y1 uint64) can.Zone {
	return can.Zone{Lo: []uint64{x0 * q, y0 * q}, Hi: []uint64{x1 * q, y1 * q}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func sameAgg(a, b load.Agg) bool {
	return near(a.Nodes, b.Nodes) && near(a.Cores, b.Cores) && near(a.Queue, b.Queue)
}

// threeZones is a small CAN in two dimensions, in quarters of the span:
//
//	C [0,2)×[2,4)  |  B [2,4)×[0,4)
//	A [0,2)×[0,2)  |
//
// A's upper neighbors are B along x (OF 2/4 of B's left face) and C along
// y (OF 1); C's is B along x (OF 1/2); B has none.
func threeZones() []Member {
	return []Member{
		{ID: 1, Zone: zone(0, 2, 0, 2), Cores: 2, Queue: 1},
		{ID: 2, Zone: zone(2, 4, 0, 4), Cores: 4, Queue: 6},
		{ID: 3, Zone: zone(0, 2, 2, 4), Cores: 1, Queue: 3},
	}
}

// The truth of the hand-built CAN, worked out by hand from 003 Eq 1:
// AI_d(N) = Σ_u (AI_d(u) + I(u)) × OF_d(N, u), I(u) = (1, cores, queue).
func TestTruthByHand(t *testing.T) {
	w := Truth(threeZones(), 2)
	want := map[int][2]load.Agg{
		0: {{Nodes: 0.5, Cores: 2, Queue: 3}, {Nodes: 1, Cores: 1, Queue: 3}}, // A: half of B's (1,4,6); all of C's (1,1,3)
		1: {{}, {}},                                                           // B: nothing above
		2: {{Nodes: 0.5, Cores: 2, Queue: 3}, {}},                             // C: half of B; top of the space along y
	}
	for i, ai := range want {
		for d := range ai {
			if got := w.TrueAI(i, d); !sameAgg(got, ai[d]) {
				t.Errorf("member %d dimension %d: true AI %+v, want %+v", w.Members[i].ID, d, got, ai[d])
			}
		}
	}
}

// An extra zone (an orphan held after a take-over) is space, not a node:
// it adds no I(u) but passes on what lies above it. Stacked along y:
// A [0,4)×[0,1), an orphan [0,4)×[1,2) held by D, D's own zone [0,4)×[2,4).
func TestTruthExtraZonePassesThrough(t *testing.T) {
	w := Truth([]Member{
		{ID: 1, Zone: zone(0, 4, 0, 1), Cores: 1, Queue: 2},
		{ID: 4, Zone: zone(0, 4, 2, 4), Extra: []can.Zone{zone(0, 4, 1, 2)}, Cores: 8, Queue: 5},
	}, 2)
	if got, want := w.TrueAI(0, 1), (load.Agg{Nodes: 1, Cores: 8, Queue: 5}); !sameAgg(got, want) {
		t.Errorf("A below an orphan below D: true AI_y %+v, want D counted once %+v", got, want)
	}
	if got := w.TrueAI(1, 1); !sameAgg(got, load.Agg{}) {
		t.Errorf("D at the top: true AI_y %+v, want zero", got)
	}
	if got := w.TrueAI(0, 0); !sameAgg(got, load.Agg{}) {
		t.Errorf("A spans x: true AI_x %+v, want zero", got)
	}
}

// Each error metric against a constructed stale state: the hand-built
// CAN's true AI (TestTruthByHand) with perturbed held values.
func TestErrorsOfAStaleState(t *testing.T) {
	ms := threeZones()
	ms[0].Held = []load.Agg{{Nodes: 0.5, Cores: 2, Queue: 3}, {Nodes: 1, Cores: 1, Queue: 1.5}} // y: half the queue
	ms[1].Held = []load.Agg{{}, {Nodes: 1, Cores: 1, Queue: 0}}                                 // y: a node where none is
	ms[2].Held = []load.Agg{{Nodes: 0.5, Cores: 2, Queue: 6}}                                   // x: twice the queue; y never heard
	w := Truth(ms, 2)
	// Errors in the order (A x, A y, B x, B y, C x, C y):
	//   nodes:            0, 0, 0, 1 (truth 0, held 1), 0, 0
	//   queue:            0, |1.5−3|/3 = 0.5, 0, 0 (truth 0, held 0), |6−3|/3 = 1, 0
	//   core utilization: |3/2 − 3/2| = 0, |1.5/1 − 3/1| = 1.5, 0, |0/1 − 0| = 0, |6/2 − 3/2| = 1.5, 0
	want := map[string][6]float64{
		"nodes":            {0, 0, 0, 1, 0, 0},
		"queue":            {0, 0.5, 0, 0, 1, 0},
		"core_utilization": {0, 1.5, 0, 0, 1.5, 0},
	}
	for _, a := range Aggregates {
		for i := range w.Members {
			for d := 0; d < 2; d++ {
				if got := a.Error(w, i, d); !near(got, want[a.Name][2*i+d]) {
					t.Errorf("%s: member %d dimension %d: error %g, want %g", a.Name, w.Members[i].ID, d, got, want[a.Name][2*i+d])
				}
			}
		}
	}
	stats := map[string]Stat{}
	for _, s := range w.Measure() {
		stats[s.Name] = s
	}
	for name, st := range map[string]Stat{
		"nodes":            {Mean: 1.0 / 6, P90: 1, N: 6},
		"queue":            {Mean: 1.5 / 6, P90: 1, N: 6},
		"core_utilization": {Mean: 3.0 / 6, P90: 1.5, N: 6},
	} {
		got := stats[name]
		if !near(got.Mean, st.Mean) || !near(got.P90, st.P90) || got.N != st.N {
			t.Errorf("%s: %+v, want mean %g, p90 %g over %d", name, got, st.Mean, st.P90, st.N)
		}
	}
	// Held exactly the truth: every error is 0.
	for i := range ms {
		ms[i].Held = nil
		for d := 0; d < 2; d++ {
			ms[i].Held = append(ms[i].Held, w.TrueAI(i, d))
		}
	}
	for _, s := range Truth(ms, 2).Measure() {
		if s.Mean != 0 || s.P90 != 0 {
			t.Errorf("%s: held = truth, yet mean %g, p90 %g", s.Name, s.Mean, s.P90)
		}
	}
}

func TestRelativeErrorAtZero(t *testing.T) {
	for _, c := range []struct{ held, truth, want float64 }{
		{0, 0, 0}, {2, 0, 1}, {0, 4, 1}, {3, 4, 0.25}, {6, 4, 0.5},
	} {
		if got := RelativeError(c.held, c.truth); !near(got, c.want) {
			t.Errorf("RelativeError(%g, %g) = %g, want %g", c.held, c.truth, got, c.want)
		}
	}
	if got := CoreUtilization(load.Agg{Queue: 3}); got != 0 {
		t.Errorf("core utilization with no cores above: %g, want 0", got)
	}
}

func TestNoMembers(t *testing.T) {
	if s := Truth(nil, 2).Measure(); s != nil {
		t.Errorf("no members: %v, want nil", s)
	}
	// A peer without a valid zone is not a member.
	if w := Truth([]Member{{ID: 1}}, 2); len(w.Members) != 0 {
		t.Errorf("a zoneless peer counted as a member")
	}
}
