package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/reproduce"
)

// TestReproducePage: a reproduction's page shows every finding with its
// class and draws the paper-vs-gridbed figure (the paper's band shaded
// around its value, on a log axis when the values span more than 20×, the
// seeds and n named) and each recorded metric against the numeric axis,
// titled in words with its unit.
func TestReproducePage(t *testing.T) {
	sc := emutest.Parse(t, "e.yaml", `
experiment:
  paper: "003"
  vary:
    - {key: matchmaking.scheme, values: [cent, can-p2, can]}
    - {key: workload.interarrival, values: [9s, 12s]}
  findings:
    - {id: p2, claim: "CAN-P2 waits 1.5x CENT", kind: ratio, metric: jobs.wait_seconds.mean, of: {matchmaking.scheme: can-p2}, over: {matchmaking.scheme: cent}, paper: 1.5}
    - {id: can, claim: "CAN waits 21.2x CENT", kind: ratio, metric: jobs.wait_seconds.mean, of: {matchmaking.scheme: can}, over: {matchmaking.scheme: cent}, paper: 21.2}
    - {id: chain, claim: "order", kind: order, metric: jobs.wait_seconds.mean, axis: matchmaking.scheme, order: "cent < can-p2 < can"}
  figures: [jobs.utilization_at_last_submission]
`)
	factor := map[string]float64{"cent": 1, "can-p2": 1.7, "can": 40}
	var runs []reproduce.Measurement
	for _, s := range []string{"cent", "can-p2", "can"} {
		for _, tau := range []string{"9s", "12s"} {
			for seed := uint64(1); seed <= 3; seed++ {
				w := factor[s] * (100 + float64(seed))
				u := 0.9
				runs = append(runs, reproduce.Measurement{Point: []string{s, tau}, Seed: seed, Outcome: "passed", Values: map[string]*float64{"jobs.wait_seconds.mean": &w, "jobs.utilization_at_last_submission": &u}})
			}
		}
	}
	rep := &reproduce.Report{Experiment: "t", Paper: "003", Axes: sc.Experiment.Vary, Metrics: sc.Experiment.Metrics(), Runs: runs, Seeds: []uint64{1, 2, 3}, JudgingSeeds: []uint64{1, 2, 3}, Scale: 1}
	rep.Findings = reproduce.Judge(sc.Experiment, runs, rep.Seeds)
	dir := t.TempDir()
	figs, err := WriteReproduce(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		checkSVG(t, filepath.Join(dir, f.SVG()))
		checkPNG(t, filepath.Join(dir, f.PNG()), 1)
	}
	if strings.Join(names, " ") != "findings metric-1 metric-2" {
		t.Errorf("figures %v: want the findings, then the wait and the utilization against the inter-arrival time", names)
	}
	findings := readAll(t, filepath.Join(dir, "figures", "findings.svg"))
	for _, want := range []string{"3 seeds (1, 2, 3)", "paper ± tolerance", "n = 3"} {
		if !strings.Contains(findings, want) {
			t.Errorf("the findings figure lacks %q", want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CAN-P2 waits 1.5x CENT", "reproduced", "magnitude", "chain", "workload interarrival (s)", "Mean job wait by matchmaking scheme and workload interarrival", "Mean job wait (s)"} {
		if !strings.Contains(string(html), want) && !strings.Contains(readAll(t, filepath.Join(dir, "figures", "metric-1.svg")), want) {
			t.Errorf("neither the page nor the figure shows %q", want)
		}
	}
}

func readAll(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
