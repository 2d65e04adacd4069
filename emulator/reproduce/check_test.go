package reproduce

import (
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// TestSmokeProblems: --smoke --strict's judgement on hand-made reports —
// clean when every run passed and measured and the smoke's finding holds;
// a failed run, a missing metric, an unjudged finding and a smoke finding
// that does not hold are each named; at another scale than the smoke's
// only the runs are judged.
func TestSmokeProblems(t *testing.T) {
	one := 1.0
	e := &scenario.Experiment{Smoke: scenario.Smoke{Scale: 0.25, Findings: []string{"a"}}, Findings: []scenario.Finding{{ID: "a"}, {ID: "b"}}}
	good := func() *Report {
		return &Report{Experiment: "x", Scale: 0.25, Metrics: []string{"m"}, RunsPlanned: 2, Outcomes: map[string]int{"passed": 2},
			Runs:     []Measurement{{Values: map[string]*float64{"m": &one}}, {Values: map[string]*float64{"m": &one}}},
			Findings: []Finding{{ID: "a", Verdict: Reproduced, Measured: &one, OrderHold: true}, {ID: "b", Verdict: NotReproduced, Measured: &one}}}
	}
	if p := good().SmokeProblems(e); len(p) != 0 {
		t.Fatalf("a clean smoke: %v", p)
	}
	for _, c := range []struct {
		name, want string
		spoil      func(r *Report)
	}{
		{"a run failed", "1 of 2 runs", func(r *Report) { r.Outcomes = map[string]int{"passed": 1, "failed": 1}; r.Runs = r.Runs[:1] }},
		{"a metric missing", "recorded no m", func(r *Report) { r.Runs[1].Values = map[string]*float64{} }},
		{"a finding unjudged", "has verdict", func(r *Report) { r.Findings[1].Verdict = "" }},
		{"no value, no why", "does not say why", func(r *Report) { r.Findings[1].Measured = nil }},
		{"the smoke finding fails", "smoke finding a does not hold", func(r *Report) { r.Findings[0].OrderHold = false }},
	} {
		r := good()
		c.spoil(r)
		if p := strings.Join(r.SmokeProblems(e), "\n"); !strings.Contains(p, c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, p, c.want)
		}
	}
	// The smoke's one seed judges nothing, and a quantity that does not
	// exist is said so: neither is a problem of the runs.
	r := good()
	r.Findings[0].Verdict = NotJudged
	r.Findings[1] = Finding{ID: "b", Verdict: NotMeasurable, Why: "the quantity is undefined on seed 1: … — nothing to compare"}
	if p := r.SmokeProblems(e); len(p) != 0 {
		t.Errorf("not-judged and not-measurable findings: %v", p)
	}
	r = good()
	r.Scale, r.Findings[0].OrderHold = 0.1, false
	if p := r.SmokeProblems(e); len(p) != 0 {
		t.Errorf("at a tenth the smoke's orderings are not judged, only the runs: %v", p)
	}
}
