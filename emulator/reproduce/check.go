package reproduce

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// RunProblems lists what makes a reproduction unusable at any size: a
// planned run that did not run or did not pass its own invariants, a
// metric a run did not record, a finding without one of the verdicts
// (Verdicts), or without a value where it is not not-measurable with the
// word why. A finding that is not judged (the smoke's single seed) is not
// a problem here: its ordering is SmokeFindingProblems' to check. An empty list means every run ran, passed and
// was measured.
func (r *Report) RunProblems(e *scenario.Experiment) []string {
	var out []string
	at := fmt.Sprintf("%s at scale %v", r.Experiment, r.Scale)
	if r.RunsPlanned == 0 || len(r.Runs) != r.RunsPlanned || r.Outcomes["passed"] != r.RunsPlanned || r.Interrupted {
		out = append(out, fmt.Sprintf("%s: %d of %d runs ran, outcomes %v, interrupted %v", at, len(r.Runs), r.RunsPlanned, r.Outcomes, r.Interrupted))
	}
	if len(r.Findings) != len(e.Findings) {
		out = append(out, fmt.Sprintf("%s: %d findings judged, the file has %d", at, len(r.Findings), len(e.Findings)))
	}
	for _, m := range r.Runs {
		for _, metric := range r.Metrics {
			if _, ok := m.Values[metric]; !ok {
				out = append(out, fmt.Sprintf("%s: run %v recorded no %s", at, m.Point, metric))
			}
		}
	}
	for _, f := range r.Findings {
		switch {
		case !slices.Contains(Verdicts, f.Verdict):
			out = append(out, fmt.Sprintf("%s: finding %s has verdict %q", at, f.ID, f.Verdict))
		case f.Measured == nil && (f.Verdict != NotMeasurable || !strings.Contains(f.Why, "nothing to compare")):
			out = append(out, fmt.Sprintf("%s: finding %s has no value and does not say why: %q", at, f.ID, f.Why))
		}
	}
	return out
}

// SmokeProblems is RunProblems plus, at the experiment's smoke scale,
// SmokeFindingProblems: what `gridbed reproduce --smoke --strict` fails
// on. The papers' magnitudes are not expected at a smoke's size, only the
// orderings its smoke names; at another scale (--smoke --scale 0.1) only
// the runs are judged.
func (r *Report) SmokeProblems(e *scenario.Experiment) []string {
	out := r.RunProblems(e)
	if r.Scale == e.Smoke.Scale {
		out = append(out, r.SmokeFindingProblems(e)...)
	}
	return out
}

// SmokeFindingProblems lists every finding the experiment's smoke names
// (experiment.smoke.findings) that does not hold.
func (r *Report) SmokeFindingProblems(e *scenario.Experiment) []string {
	var out []string
	judged := map[string]Finding{}
	for _, f := range r.Findings {
		judged[f.ID] = f
	}
	for _, id := range e.Smoke.Findings {
		if f := judged[id]; !f.Holds() {
			out = append(out, fmt.Sprintf("%s at scale %v: the smoke finding %s does not hold: %s (%s)", r.Experiment, r.Scale, id, f.Verdict, f.Why))
		}
	}
	return out
}
