package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/reproduce"
	"github.com/gridbed/gridbed/examples/papers"
)

// TestReproduceAllSmoke runs the experiment suite's reduced versions (each
// experiment at its smoke scale, one seed) through the command and holds
// each experiment to the orderings its smoke run names.
func TestReproduceAllSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment's reduced version")
	}
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := gridbed(t, "reproduce", "all", "--smoke", "--out", dir, "--report=false")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "outcome: ") {
		t.Errorf("no outcome line:\n%s", stdout)
	}
	var index struct {
		Experiments []reproduce.Report `json:"experiments"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Experiments) != len(papers.Names()) {
		t.Fatalf("%d experiments reproduced, want %d", len(index.Experiments), len(papers.Names()))
	}
	for _, rep := range index.Experiments {
		sc, err := papers.Load(rep.Experiment)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Runs) != rep.RunsPlanned || rep.RunsPlanned == 0 || rep.Interrupted {
			t.Errorf("%s: %d of %d runs", rep.Experiment, len(rep.Runs), rep.RunsPlanned)
		}
		if _, err := os.Stat(filepath.Join(dir, rep.Experiment, "reproduce.md")); err != nil {
			t.Errorf("%s: %v", rep.Experiment, err)
		}
		judged := map[string]reproduce.Finding{}
		for _, f := range rep.Findings {
			judged[f.ID] = f
		}
		for _, id := range sc.Experiment.Smoke.Findings {
			if f := judged[id]; !f.Holds() {
				t.Errorf("%s at scale %v, seed 1: the smoke finding %s does not hold: %s (%s)", rep.Experiment, rep.Scale, id, f.Verdict, f.Why)
			}
		}
	}
}

func TestReproduceUsage(t *testing.T) {
	code, stdout, _ := gridbed(t, "reproduce", "--list")
	if code != 0 {
		t.Fatalf("--list: exit %d", code)
	}
	for _, n := range papers.Names() {
		if !strings.Contains(stdout, n) {
			t.Errorf("--list lacks %s:\n%s", n, stdout)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce"}, "name one experiment"},
		{[]string{"reproduce", "no-such"}, `no experiment named "no-such"`},
		{[]string{"reproduce", "all", "--seeds", "0"}, "--seeds and --parallel take 1 or more"},
		{[]string{"reproduce", "../../examples/quickstart.yaml"}, "has no experiment block"},
		{[]string{"reproduce", papers.Names()[0], "--set", "no.such.key=1"}, `unknown key "no.such.key"`},
	} {
		code, _, stderr := gridbed(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
