package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/reproduce"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// TestReproduceJobCDFs: with the runs' jobs.csv under runs/, the page
// draws a wait CDF and a hop CDF (002 Fig 5.5) per value of the numeric
// axis, one line per other grid point, from the first replicate only;
// the completed jobs' waits and every matched job's hops are read.
func TestReproduceJobCDFs(t *testing.T) {
	sc := emutest.Parse(t, "e.yaml", `
peers:
  categorical: {types: 4}
experiment:
  paper: "002"
  vary:
    - {key: matchmaking.categorical, values: [cid, subcan]}
    - {key: workload.constraint_ratio, values: [0.4, 0.8]}
  findings:
    - {id: hops, claim: "CID more hops", kind: ratio, metric: h, of: {matchmaking.categorical: cid}, over: {matchmaking.categorical: subcan}, direction: above}
`)
	dir := t.TempDir()
	var runs []reproduce.Measurement
	for _, mode := range []string{"cid", "subcan"} {
		for _, ratio := range []string{"0.4", "0.8"} {
			for seed := uint64(1); seed <= 2; seed++ {
				h := 2.0
				m := reproduce.Measurement{Point: []string{mode, ratio}, Seed: seed, Outcome: "passed", Values: map[string]*float64{"h": &h},
					Dir: filepath.Join("runs", fmt.Sprintf("%s_%s_seed-%d", mode, ratio, seed))}
				if seed == 1 {
					writeJobsCSV(t, filepath.Join(dir, m.Dir), mode == "cid")
				}
				runs = append(runs, m)
			}
		}
	}
	rep := &reproduce.Report{Experiment: "t", Paper: "002", Axes: sc.Experiment.Vary, Metrics: sc.Experiment.Metrics(), Runs: runs, Seeds: []uint64{1, 2}, Scale: 1}
	rep.Findings = reproduce.Judge(sc.Experiment, runs, rep.Seeds)
	figs, err := WriteReproduce(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		checkSVG(t, filepath.Join(dir, f.SVG()))
	}
	if got, want := strings.Join(names, " "), "metric-1 wait-cdf-1 hops-cdf-1 wait-cdf-2 hops-cdf-2"; got != want {
		t.Errorf("figures %q, want %q", got, want)
	}
	svg := readAll(t, filepath.Join(dir, "figures", "hops-cdf-2.svg"))
	for _, want := range []string{"cid", "subcan", "matchmaking hops"} {
		if !strings.Contains(svg, want) {
			t.Errorf("hops-cdf-2.svg lacks %q", want)
		}
	}
	d, err := readJobDists(filepath.Join(dir, runs[0].Dir, "jobs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.waits) != 2 || len(d.hops) != 3 || d.hops[2] != 30 {
		t.Errorf("read waits %v, hops %v: want the 2 completed jobs' waits and the 3 matched jobs' hops", d.waits, d.hops)
	}
}

// TestReproduceJobCDFsBadCSV: an unreadable jobs.csv omits the CDFs with
// the reason instead of failing the report.
func TestReproduceJobCDFsBadCSV(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "runs", "a")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "jobs.csv"), []byte("job,x\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &reproduce.Report{Axes: []scenario.ExperimentAxis{{Key: "matchmaking.categorical", Values: []string{"cid"}}}, Seeds: []uint64{1},
		Runs: []reproduce.Measurement{{Point: []string{"cid"}, Seed: 1, Dir: filepath.Join("runs", "a")}}}
	figs, omitted := jobCDFFigures(dir, rep)
	if len(figs) != 0 || len(omitted) != 1 || !strings.Contains(omitted[0].Reason, "no wait_seconds") {
		t.Errorf("figures %d, omitted %+v: want none drawn and the missing columns named", len(figs), omitted)
	}
}

// writeJobsCSV writes a jobs.csv with two completed jobs, one failed
// unmatched and one queued at the end; cid runs take ten times the hops.
func writeJobsCSV(t *testing.T, dir string, cid bool) {
	t.Helper()
	k := 1
	if cid {
		k = 10
	}
	body := "job,hops,wait_seconds,outcome\n" +
		fmt.Sprintf("1,%d,0.5,completed\n2,%d,120,completed\n3,,,failed\n4,%d,,unfinished\n", k, 2*k, 3*k)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
