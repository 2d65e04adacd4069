package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/reproduce"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/examples/papers"
)

// reproduceIndex runs `gridbed reproduce NAMES...` with args into dir
// and returns the experiments of its index, one for each name ("all":
// every experiment file). One experiment writes no index: its
// reproduce.json in dir is the report (reportDir).
func reproduceIndex(t *testing.T, dir string, names []string, args ...string) []reproduce.Report {
	t.Helper()
	args = append(append(append([]string{"reproduce"}, names...), "--out", dir, "--report=false"), args...)
	code, stdout, stderr := gridbed(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	if !strings.Contains(stdout, "outcome: ") {
		t.Errorf("%v: no outcome line:\n%s", args, stdout)
	}
	var index struct {
		Experiments []reproduce.Report `json:"experiments"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 1 && names[0] != "all" {
		var rep reproduce.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return []reproduce.Report{rep}
	}
	if err := json.Unmarshal(b, &index); err != nil {
		t.Fatal(err)
	}
	want := len(names)
	if names[0] == "all" {
		want = len(papers.Names())
	}
	if len(index.Experiments) != want {
		t.Fatalf("%v: %d experiments reproduced, want %d", args, len(index.Experiments), want)
	}
	return index.Experiments
}

// TestReproduceAllSmokeAndTenth runs `gridbed reproduce all --smoke
// --strict` (every experiment at its smoke scale, seed 1) through the
// command, which holds it to what must hold at any size — every planned
// run ran and passed its own invariants, recorded every metric the
// experiment names, and every finding was judged, from values or with
// the reason there was nothing to compare (reproduce.RunProblems) — and
// to the orderings each experiment's smoke names (SmokeProblems; the
// papers' magnitudes are not expected at these sizes: at a tenth 003's 30
// peers are one neighbourhood). The experiments whose smoke scale is
// neither a tenth nor their full size (their orderings need more peers)
// run once more with `--scale 0.1`, so that every experiment is known to
// plan and pass at a tenth; 004's, which have nothing to scale, are not
// run twice.
//
// It runs one run at a time, holding one core (emulator/emutest/cores):
// in .ci/run's long tier it is the longest job, and the other tests share
// the other core beside it.
func TestReproduceAllSmokeAndTenth(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: every experiment at its smoke scale")
	}
	// One run at a time: a core's share, beside the other long tests —
	// but in .ci/long-tier's background (niced below every other test,
	// cores.BackgroundEnv) as many as there are cores: the other tests
	// preempt it, and it is the long tier's longest job (477 CPU s).
	parallel := "1"
	if os.Getenv(cores.BackgroundEnv) != "" {
		parallel = strconv.Itoa(runtime.NumCPU())
	}
	dir := filepath.Join(t.TempDir(), "smoke")
	var tenth []string
	for _, rep := range reproduceIndex(t, dir, []string{"all"}, "--smoke", "--strict", "--parallel", parallel) {
		sc, err := papers.Load(rep.Experiment)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Scale != sc.Experiment.Smoke.Scale {
			t.Errorf("%s: --smoke ran at scale %v, its smoke scale is %v", rep.Experiment, rep.Scale, sc.Experiment.Smoke.Scale)
		}
		checkSmoke(t, reportDir(dir, []string{"all"}, rep.Experiment), rep, sc.Experiment)
		if s := sc.Experiment.Smoke.Scale; s != 0.1 && s != 1 {
			tenth = append(tenth, rep.Experiment)
		}
	}
	if len(tenth) == 0 {
		return
	}
	dir = filepath.Join(t.TempDir(), "tenth")
	for _, rep := range reproduceIndex(t, dir, tenth, "--smoke", "--scale", "0.1", "--strict", "--parallel", parallel) {
		sc, err := papers.Load(rep.Experiment)
		if err != nil {
			t.Fatal(err)
		}
		checkSmoke(t, reportDir(dir, tenth, rep.Experiment), rep, sc.Experiment)
	}
}

// TestReproduceSmoke is the fast tier's reproduction: two experiments of
// two families (002's overlay under churn, 004's allocation) at their
// smoke scale through `gridbed reproduce --smoke --strict`. Under the race
// detector only 004-fig2 runs — its three runs at once still cross the
// command's parallel runner; 002-fig4.7's deterministic-driver runs would
// take a minute there for nothing the detector can see.
func TestReproduceSmoke(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "smoke")
	names := []string{"002-fig4.7", "004-fig2"}
	parallel := "1" // one core's work: the share the test holds
	if emutest.Race {
		names, parallel = names[1:], "3"
	}
	for _, rep := range reproduceIndex(t, dir, names, "--smoke", "--strict", "--parallel", parallel) {
		sc, err := papers.Load(rep.Experiment)
		if err != nil {
			t.Fatal(err)
		}
		checkSmoke(t, reportDir(dir, names, rep.Experiment), rep, sc.Experiment)
	}
}

// reportDir is where `gridbed reproduce NAMES... --out dir` wrote
// experiment's files: dir itself for one experiment, dir/experiment for
// several or all.
func reportDir(dir string, names []string, experiment string) string {
	if len(names) == 1 && names[0] != "all" {
		return dir
	}
	return filepath.Join(dir, experiment)
}

// checkSmoke asserts reproduce.SmokeProblems finds nothing and
// reproduce.md was written into dir: what `--smoke --strict` judged (the
// command exited 0), read back from reproduce.json.
func checkSmoke(t *testing.T, dir string, rep reproduce.Report, e *scenario.Experiment) {
	t.Helper()
	for _, p := range rep.SmokeProblems(e) {
		t.Errorf("seed 1: %s", p)
	}
	if _, err := os.Stat(filepath.Join(dir, "reproduce.md")); err != nil {
		t.Errorf("%s: %v", rep.Experiment, err)
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
		{[]string{"reproduce"}, "name experiments, all,"},
		{[]string{"reproduce", "all", papers.Names()[0]}, "name experiments, all,"},
		{[]string{"reproduce", papers.Names()[0], papers.Names()[0]}, "is named twice"},
		{[]string{"reproduce", "no-such"}, `no experiment named "no-such"`},
		{[]string{"reproduce", "all", "--seeds", "0"}, "--seeds and --parallel take 1 or more"},
		{[]string{"reproduce", "../../examples/quickstart.yaml"}, "has no experiment block"},
		{[]string{"reproduce", papers.Names()[0], "--set", "no.such.key=1"}, `unknown key "no.such.key"`},
		{[]string{"reproduce", papers.Names()[0], "--set", "seed=4"}, "write --seed instead"},
		{[]string{"reproduce", "--record", "x"}, "name the page to render with --fidelity"},
		{[]string{"reproduce", "--fidelity", "no/such/page.md"}, "no such file"},
	} {
		code, _, stderr := gridbed(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestReproduceFileAndJudgeAgain: an experiment file of the user's own
// runs through the command, and --judge re-judges its recorded runs after
// the finding's published value changed, without running anything.
func TestReproduceFileAndJudgeAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the deterministic driver")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.yaml")
	exp := `duration: 12m
peers: {count: 30, join_window: 30s}
experiment:
  paper: "002"
  vary:
    - {key: overlay.heartbeat.mode, values: [vanilla, compact]}
  findings:
    - {id: cheaper, claim: "compact sends fewer bytes", kind: ratio, metric: bytes.per_node_per_minute, of: {overlay.heartbeat.mode: compact}, over: {overlay.heartbeat.mode: vanilla}, paper: PAPER}
`
	if err := os.WriteFile(file, []byte(strings.Replace(exp, "PAPER", "0.01", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := gridbed(t, "reproduce", file, "--out", out, "--report=false")
	if code != 0 || !strings.Contains(stdout, "cheaper") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	read := func() reproduce.Report {
		var rep reproduce.Report
		b, err := os.ReadFile(filepath.Join(out, "reproduce.json"))
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil || len(rep.Findings) != 1 {
			t.Fatalf("reproduce.json: %v %+v", err, rep)
		}
		return rep
	}
	first := read()
	// The file names no judging seeds: seeds 1, 2, 3.
	if f := first.Findings[0]; f.Verdict != reproduce.Ordering || len(first.Runs) != 6 || fmt.Sprint(first.Seeds) != "[1 2 3]" || first.SeedsVariant() {
		t.Fatalf("against a paper value of 0.01: %s (%s), %d runs", f.Verdict, f.Why, len(first.Runs))
	}
	// The published value corrected to what was measured: the same runs
	// now reproduce it.
	measured := *first.Findings[0].Measured
	if err := os.WriteFile(file, []byte(strings.Replace(exp, "PAPER", fmt.Sprint(measured), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := gridbed(t, "reproduce", "--judge", out, file); code != 0 {
		t.Fatalf("--judge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	again := read()
	if f := again.Findings[0]; *f.Paper != measured || len(again.Runs) != 6 || *f.Measured != measured {
		t.Errorf("judged again: paper %v, measured %v over %d runs; want the paper value %v and the same runs", *f.Paper, *f.Measured, len(again.Runs), measured)
	}
	if code, _, stderr := gridbed(t, "reproduce", "--judge", dir); code != 2 || !strings.Contains(stderr, "give the directory of an earlier") {
		t.Errorf("--judge on a directory without a reproduction: exit %d, %q", code, stderr)
	}
	// `run` on the same file measures one point and says how to get the rest.
	code, _, stderr = gridbed(t, "run", file, "--driver", "sim", "--metrics-addr", "off", "--report=false", "--out", filepath.Join(dir, "one"))
	if code != 0 || !strings.Contains(stderr, "this file is an experiment") || !strings.Contains(stderr, "gridbed reproduce "+file) {
		t.Errorf("run on an experiment file: exit %d, stderr %q", code, stderr)
	}
}

// TestReproduceOnEmulator: gridbed reproduce --driver emulator runs the
// experiment's runs as actors over NATS (004-fig2's three allocators on
// the synthetic grid, at ×30000: seconds each): reproduce.json and
// reproduce.md name the emulator driver, every planned run ran, every
// finding was judged, and the smoke's finding holds as on the
// deterministic driver.
func TestReproduceOnEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: an experiment on the emulator driver")
	}
	out := filepath.Join(t.TempDir(), "fig2")
	args := []string{"reproduce", "004-fig2", "--driver", "emulator", "--seeds", "1", "--set", "time_scale=30000", "--out", out, "--report=false"}
	code, stdout, stderr := gridbed(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "reproduce.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep reproduce.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	sc, err := papers.Load("004-fig2")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Driver != "emulator" || rep.RunsPlanned != 3 || len(rep.Runs) != 3 || len(rep.Findings) != len(sc.Experiment.Findings) {
		t.Errorf("driver %q, %d of %d runs, %d findings judged: %+v", rep.Driver, len(rep.Runs), rep.RunsPlanned, len(rep.Findings), rep.Outcomes)
	}
	for _, f := range rep.Findings {
		if f.Measured == nil {
			t.Errorf("finding %s not measured: %s", f.ID, f.Why)
		}
	}
	for _, p := range rep.SmokeFindingProblems(sc.Experiment) {
		t.Errorf("seed 1: %s", p)
	}
	md, err := os.ReadFile(filepath.Join(out, "reproduce.md"))
	if err != nil || !strings.Contains(string(md), "on the emulator driver") {
		t.Errorf("reproduce.md does not name the emulator driver (%v):\n%.300s", err, md)
	}
	t.Logf("outcomes %v; %s", rep.Outcomes, strings.TrimSpace(stdout))
}

// TestReplicateSeeds: the replicates run on the file's judging seeds
// unless --seed/--seeds say otherwise; --smoke runs one seed.
func TestReplicateSeeds(t *testing.T) {
	e := &scenario.Experiment{Seeds: []uint64{4201, 4202, 4203}}
	for _, c := range []struct {
		f                     reproduceFlags
		seedGiven, seedsGiven bool
		want                  string
	}{
		{reproduceFlags{seed: 1}, false, false, "[4201 4202 4203]"},
		{reproduceFlags{seed: 1, seeds: 5}, false, true, "[4201 4202 4203 4204 4205]"},
		{reproduceFlags{seed: 1, seeds: 2}, false, true, "[4201 4202]"},
		{reproduceFlags{seed: 7}, true, false, "[7 8 9]"},
		{reproduceFlags{seed: 7, seeds: 1}, true, true, "[7]"},
		{reproduceFlags{seed: 1, smoke: true}, false, false, "[1]"},
		{reproduceFlags{seed: 1, smoke: true, seeds: 2}, false, true, "[1 2]"},
	} {
		if got := fmt.Sprint(replicateSeeds(e, c.f, c.seedGiven, c.seedsGiven)); got != c.want {
			t.Errorf("%+v (seed given %v, seeds given %v): %s, want %s", c.f, c.seedGiven, c.seedsGiven, got, c.want)
		}
	}
}

// TestFidelityGenerated: docs/FIDELITY.md's generated section is exactly
// what docs/fidelity/record.json and the experiment files render — a hand
// edit of the tables, a finding added to a file without rendering the page
// again, or a record changed without the page fail here.
func TestFidelityGenerated(t *testing.T) {
	page, err := os.ReadFile("../../docs/FIDELITY.md")
	if err != nil {
		t.Fatal(err)
	}
	var rec reproduce.Record
	b, err := os.ReadFile(RecordPath("../../docs/FIDELITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	want, err := renderFidelity(string(page), rec)
	if err != nil {
		t.Fatal(err)
	}
	if want != string(page) {
		got, _ := reproduce.GeneratedPart(string(page))
		gen, _ := reproduce.GeneratedPart(want)
		t.Errorf("docs/FIDELITY.md's generated section differs from what docs/fidelity/record.json renders — never edit it by hand; render it with `go run ./cmd/gridbed reproduce --fidelity docs/FIDELITY.md` (from the repository's root)\n%s", firstDifference(got, gen))
	}
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	if i, a, b := emulator.FirstLineDifference(got, want); i > 0 {
		return fmt.Sprintf("line %d of the section:\n  page:     %s\n  rendered: %s", i, a, b)
	}
	return ""
}

// TestRecordFidelity: --record keeps a reproduction on the judging seeds
// in the record beside the page and renders the page's section from it;
// a variant (other seeds) is refused, and the page's text outside the
// markers is kept.
func TestRecordFidelity(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "FIDELITY.md")
	if err := os.WriteFile(page, []byte("# Fidelity\n\nby hand\n\n"+reproduce.GeneratedBegin+"\nold\n"+reproduce.GeneratedEnd+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fidelity"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := "004-fig2"
	sc, err := papers.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	e := sc.Experiment
	v := 2.5
	write := func(sub string, seeds []uint64) string {
		var runs []reproduce.Measurement
		for _, s := range seeds {
			for _, a := range e.Vary[0].Values {
				x := map[string]float64{"greedy": 0.7, "social": 0.6, "min-num": 0.25}[a] * (1 + float64(s%3)/100)
				runs = append(runs, reproduce.Measurement{Point: []string{a}, Seed: s, Outcome: "passed", Values: map[string]*float64{"allocation.spike_share": &x, "allocation.drained_share": &v}})
			}
		}
		rep := reproduce.Report{Experiment: name, File: sc.Source, Paper: e.Paper, Seeds: seeds, JudgingSeeds: e.JudgingSeeds(), TunedOn: e.TunedOn,
			Scale: 1, Driver: "sim", Axes: e.Vary, Metrics: e.Metrics(), Runs: runs, RunsPlanned: len(runs), Outcomes: map[string]int{"passed": len(runs)},
			Date: "2027-01-02T03:04:05Z", WallSeconds: 12}
		rep.Findings = reproduce.Judge(e, runs, seeds)
		rep.Verdict = reproduce.Worst(rep.Findings)
		out := filepath.Join(dir, sub)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		if err := os.WriteFile(filepath.Join(out, "reproduce.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	variant := write("variant", []uint64{1})
	if code, _, stderr := gridbed(t, "reproduce", "--record", variant, "--fidelity", page); code != 2 || !strings.Contains(stderr, "cannot be recorded") {
		t.Errorf("a variant recorded: exit %d, %q", code, stderr)
	}
	good := write("good", e.JudgingSeeds())
	code, stdout, stderr := gridbed(t, "reproduce", "--record", good, "--fidelity", page)
	if code != 0 {
		t.Fatalf("--record: exit %d\n%s\n%s", code, stdout, stderr)
	}
	text, _ := os.ReadFile(page)
	for _, want := range []string{"by hand", "after", "| `004-fig2` | social-places-on-fastest-disk | direction | above 1 |", "not recorded yet with the judging seeds", "| `004-fig2` | " + seedListText(e.JudgingSeeds()) + " | 1 | sim | 2027-01-02 | 9 of 9 | passed 9 | 12 s |", "### Counts"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the page lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(string(text), "\nold\n") {
		t.Error("the old section was kept")
	}
	var rec reproduce.Record
	b, err := os.ReadFile(filepath.Join(dir, "fidelity", "record.json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil || len(rec.Experiments) != 1 || rec.Experiments[0].Runs != 9 || len(rec.Experiments[0].Findings) != len(e.Findings) || strings.Contains(string(b), "\"runs\": [") {
		t.Errorf("record.json (%v): %s", err, b)
	}
	// Rendering again from the record alone changes nothing.
	if code, _, stderr := gridbed(t, "reproduce", "--fidelity", page); code != 0 {
		t.Fatalf("--fidelity: exit %d %s", code, stderr)
	}
	again, _ := os.ReadFile(page)
	if string(again) != string(text) {
		t.Error("rendering the page again from its record changed it")
	}
}

// seedListText is reproduce's way of listing up to three seeds.
func seedListText(seeds []uint64) string {
	var parts []string
	for _, s := range seeds {
		parts = append(parts, fmt.Sprint(s))
	}
	return strings.Join(parts, ", ")
}
