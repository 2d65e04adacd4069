package papers

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/reproduce"
)

// TestExperimentsPlan: every experiment file parses, has the header a
// reader needs (the paper's section and figure, the command reproducing
// it), and plans at its own size, its smoke scale and --scale 0.1.
func TestExperimentsPlan(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no experiments embedded")
	}
	for _, n := range names {
		sc, err := Load(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		e := sc.Experiment
		if e == nil {
			t.Errorf("%s has no experiment block", n)
			continue
		}
		data, err := os.ReadFile(n + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), "# "+e.Paper) || !strings.Contains(string(data), "gridbed reproduce "+n) {
			t.Errorf("%s: the header should start with the paper (\"# %s §… Fig …\") and give the command (gridbed reproduce %s)", n, e.Paper, n)
		}
		if len(e.Smoke.Findings) == 0 {
			t.Errorf("%s: the smoke run asserts no finding", n)
		}
		for _, scale := range []float64{1, e.Smoke.Scale, 0.1} {
			if _, err := reproduce.Plan(sc, reproduce.Options{Seeds: 2, Seed: 1, Scale: scale}); err != nil {
				t.Errorf("%s at scale %v: %v", n, scale, err)
			}
		}
	}
}

// TestReproduceAllTenth runs every experiment at a tenth of its size with
// one seed, as `gridbed reproduce all --scale 0.1 --seeds 1` does (the same
// reproduce.Execute per experiment; about a minute on two cores; the
// command's own path is tested with --smoke in cmd/gridbed). At that size
// the orderings are not the papers' (003's 30 peers are one
// neighbourhood), so it asserts what must hold at any size: every planned
// run ran and passed its own invariants, recorded every metric the
// experiment names, and every finding was judged — from values, or with
// the reason there was nothing to compare.
func TestReproduceAllTenth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment at a tenth of its size")
	}
	for _, n := range Names() {
		sc, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		cfg := reproduce.Config{Options: reproduce.Options{Seeds: 1, Seed: 1, Scale: 0.1}, Parallel: runtime.NumCPU()}
		rep, err := reproduce.Execute(context.Background(), n, sc, cfg)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if rep.RunsPlanned == 0 || len(rep.Runs) != rep.RunsPlanned || rep.Outcomes["passed"] != rep.RunsPlanned {
			t.Errorf("%s at scale 0.1, seed 1: %d of %d runs, outcomes %v", n, len(rep.Runs), rep.RunsPlanned, rep.Outcomes)
		}
		if len(rep.Findings) != len(sc.Experiment.Findings) {
			t.Errorf("%s: %d findings judged, the file has %d", n, len(rep.Findings), len(sc.Experiment.Findings))
		}
		for _, m := range rep.Runs {
			for _, metric := range rep.Metrics {
				if _, ok := m.Values[metric]; !ok {
					t.Errorf("%s: run %v recorded no %s", n, m.Point, metric)
				}
			}
		}
		for _, f := range rep.Findings {
			switch {
			case f.Verdict != reproduce.Reproduced && f.Verdict != reproduce.Ordering && f.Verdict != reproduce.NotReproduced:
				t.Errorf("%s: finding %s has verdict %q", n, f.ID, f.Verdict)
			case f.Measured == nil && !strings.Contains(f.Why, "nothing to compare"):
				t.Errorf("%s: finding %s has no value and does not say why: %q", n, f.ID, f.Why)
			}
		}
	}
}
