package papers

import (
	"os"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/reproduce"
)

// TestExperimentsPlan: every experiment file parses, has the header a
// reader needs (the paper's section and figure, the command reproducing
// it), fixes its judging seeds and the seeds its readings were tuned on
// (experiment.seeds, experiment.tuned_on), and plans at its own size, its
// smoke scale and --scale 0.1.
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
		if len(e.Seeds) < 3 || len(e.TunedOn) == 0 {
			t.Errorf("%s: the experiment block should fix its judging seeds (seeds: [s1, s2, s3], never used to choose a reading) and the seeds its readings were chosen on (tuned_on: [...]); it has seeds %v, tuned_on %v", n, e.Seeds, e.TunedOn)
		}
		for _, scale := range []float64{1, e.Smoke.Scale, 0.1} {
			if _, err := reproduce.Plan(sc, reproduce.Options{Seeds: e.JudgingSeeds(), Scale: scale}); err != nil {
				t.Errorf("%s at scale %v: %v", n, scale, err)
			}
		}
	}
}
