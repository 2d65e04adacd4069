package reproduce

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// experiment parses a scenario file with an experiment block.
func experiment(t *testing.T, yaml string) scenario.Scenario {
	t.Helper()
	sc := emutest.Parse(t, "test.yaml", yaml)
	return sc
}

const schemes = `
duration: 20m
peers: {count: 40, join_window: 30s}
workload: {jobs: 100, interarrival: 10s}
experiment:
  paper: "003"
  vary:
    - {key: matchmaking.scheme, values: [cent, can-p2, can]}
    - {key: workload.interarrival, values: [10s, 20s]}
  scale:
    peers.count: 1
    workload.jobs: 1
    workload.interarrival: -1
  findings:
    - {id: p2, claim: "CAN-P2 waits 1.5x CENT", kind: ratio, metric: m, of: {matchmaking.scheme: can-p2}, over: {matchmaking.scheme: cent}, paper: 1.5}
    - {id: can, claim: "CAN waits at least 10x CENT", kind: ratio, metric: m, of: {matchmaking.scheme: can}, over: {matchmaking.scheme: cent}, paper: 21.2, at_least: 10}
    - {id: dir, claim: "CENT below CAN", kind: ratio, metric: m, of: {matchmaking.scheme: cent}, over: {matchmaking.scheme: can}, direction: below}
    - {id: chain, claim: "order", kind: order, metric: m, axis: matchmaking.scheme, order: "cent < can-p2 <= can"}
    - {id: tau, claim: "wait falls as d^-1 in tau", kind: exponent, metric: m, axis: workload.interarrival, paper: -1}
`

func TestPlanScalesAndReplicates(t *testing.T) {
	sc := experiment(t, schemes)
	runs, err := Plan(sc, Options{Seeds: 2, Seed: 7, Scale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3*2*2 {
		t.Fatalf("%d runs, want 12", len(runs))
	}
	r := runs[3] // cent, 20s, seed 8
	if got := strings.Join(r.Point, ","); got != "cent,20s" || r.Seed != 8 {
		t.Fatalf("run 3 is %s seed %d, want cent,20s seed 8", got, r.Seed)
	}
	s := r.Scenario
	if s.Seed != 8 || s.Peers.Count != 20 || s.Workload.Jobs != 50 || s.Workload.Interarrival.String() != "40s" || s.Matchmaking.Scheme != "cent" {
		t.Errorf("scaled scenario: seed %d peers %d jobs %d interarrival %s scheme %s; want 8, 20, 50, 40s, cent",
			s.Seed, s.Peers.Count, s.Workload.Jobs, s.Workload.Interarrival, s.Matchmaking.Scheme)
	}
	if !strings.Contains(r.Name(sc.Experiment.Vary), "workload.interarrival=20s_seed-8") {
		t.Errorf("run name %q", r.Name(sc.Experiment.Vary))
	}
	if _, err := Plan(sc, Options{Seeds: 0, Scale: 1}); err == nil {
		t.Error("0 seeds planned")
	}
	words := experiment(t, strings.Replace(schemes, "    peers.count: 1\n", "    peers.count: 1\n    matchmaking.scheme: 1\n", 1))
	if _, err := Plan(words, Options{Seeds: 1, Scale: 0.5}); err == nil || !strings.Contains(err.Error(), "cannot be scaled") {
		t.Errorf("scaling a word: %v", err)
	}
	if _, err := Plan(words, Options{Seeds: 1, Scale: 1}); err != nil {
		t.Errorf("scale 1 scales nothing, so it cannot fail: %v", err)
	}
}

func TestScaleValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		f    float64
		want string
	}{{"400", 0.1, "40"}, {"3", 0.1, "1"}, {"0.5", 2, "1"}, {"17.5s", 10, "2m55s"}, {"1ms", 0.01, "1ms"}} {
		if got, err := ScaleValue(c.in, c.f); err != nil || got != c.want {
			t.Errorf("ScaleValue(%s, %v) = %s, %v; want %s", c.in, c.f, got, err, c.want)
		}
	}
	if _, err := ScaleValue("mixed", 2); err == nil {
		t.Error("a word was scaled")
	}
}

// measured builds measurements of metric m: value(scheme, tau, seed).
func measured(value func(scheme string, tau float64, seed uint64) float64) []Measurement {
	var ms []Measurement
	for _, s := range []string{"cent", "can-p2", "can"} {
		for _, tau := range []string{"10s", "20s"} {
			for seed := uint64(1); seed <= 3; seed++ {
				x := 10.0
				if tau == "20s" {
					x = 20
				}
				v := value(s, x, seed)
				ms = append(ms, Measurement{Point: []string{s, tau}, Seed: seed, Values: map[string]*float64{"m": &v}})
			}
		}
	}
	return ms
}

func byID(fs []Finding) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

func TestJudgeVerdicts(t *testing.T) {
	e := experiment(t, schemes).Experiment
	seeds := []uint64{1, 2, 3}
	factor := map[string]float64{"cent": 1, "can-p2": 1.6, "can": 25}
	noise := map[uint64]float64{1: 0.98, 2: 1, 3: 1.02}
	good := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		return factor[s] * noise[seed] * 1000 / tau
	}), seeds))
	for id, want := range map[string]string{"p2": Reproduced, "can": Reproduced, "dir": Reproduced, "chain": Reproduced, "tau": Reproduced} {
		if got := good[id]; got.Verdict != want {
			t.Errorf("%s: %s (%s), want %s", id, got.Verdict, got.Why, want)
		}
	}
	if m := *good["tau"].Measured; math.Abs(m+1) > 1e-9 {
		t.Errorf("exponent %v, want -1", m)
	}
	// The same data against τ + 10: x doubles from 20 to 30 while the
	// metric halves, so the slope is ln(1/2)/ln(3/2).
	shifted := *e
	shifted.Findings = append([]scenario.Finding(nil), e.Findings...)
	for i := range shifted.Findings {
		shifted.Findings[i].AxisOffset = 10
	}
	if m := *byID(Judge(&shifted, measured(func(s string, tau float64, seed uint64) float64 {
		return factor[s] * noise[seed] * 1000 / tau
	}), seeds))["tau"].Measured; math.Abs(m-math.Log(0.5)/math.Log(1.5)) > 1e-9 {
		t.Errorf("exponent with axis_offset 10: %v, want %v", m, math.Log(0.5)/math.Log(1.5))
	}
	if b, err := json.Marshal(good["can"]); err != nil || !strings.Contains(string(b), `"band":[10,null]`) {
		t.Errorf("an open band in JSON: %s, %v", b, err)
	} else {
		var back Finding
		if err := json.Unmarshal(b, &back); err != nil || back.Band[0] != 10 || !math.IsInf(back.Band[1], 1) {
			t.Errorf("the band read back: %+v, %v", back.Band, err)
		}
	}
	if m := *good["p2"].Measured; math.Abs(m-1.6) > 1e-9 {
		t.Errorf("CAN-P2/CENT %v, want 1.6", m)
	}

	// CAN-P2 4.5× CENT: the ordering holds, not the magnitude; CAN only
	// 5×: below the bound; CENT above CAN-P2: the chain breaks.
	factor = map[string]float64{"cent": 1, "can-p2": 4.5, "can": 5}
	off := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		return factor[s] * noise[seed] * 1000 / tau
	}), seeds))
	if off["p2"].Verdict != Ordering || off["can"].Verdict != Ordering {
		t.Errorf("p2 %s, can %s; want ordering for both", off["p2"].Verdict, off["can"].Verdict)
	}
	factor = map[string]float64{"cent": 2, "can-p2": 1.5, "can": 1.6}
	bad := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		return factor[s] * noise[seed] * 1000 / tau
	}), seeds))
	if bad["chain"].Verdict != NotReproduced || bad["p2"].Verdict != NotReproduced || bad["dir"].Verdict != NotReproduced {
		t.Errorf("chain %s, p2 %s, dir %s; want not-reproduced for all", bad["chain"].Verdict, bad["p2"].Verdict, bad["dir"].Verdict)
	}
	if l := bad["chain"].Links; len(l) != 2 || l[0].Holds || !l[1].Holds {
		t.Errorf("links %+v: want cent<can-p2 broken, can-p2<=can holding", l)
	}

	// Noise that straddles 1 over the replicates: the interval decides.
	wide := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		if s == "can-p2" {
			return []float64{0.5, 1.4, 2.6}[seed-1]
		}
		return 1
	}), seeds))
	if f := wide["p2"]; f.Verdict != NotReproduced || f.CI95[0] >= 1 {
		t.Errorf("a ratio whose interval straddles 1: %s %v", f.Verdict, f.CI95)
	}

	// Scattered replicates around the paper's value: the mean is in the
	// band but the interval is wider than it — not reproduced, whatever
	// the mean.
	scattered := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		if s == "can-p2" {
			return []float64{1.3, 1.5, 1.7}[seed-1]
		}
		return 1
	}), seeds))
	if f := scattered["p2"]; f.Verdict != Ordering || *f.MagHold || !strings.Contains(f.Why, "more seeds") {
		t.Errorf("scattered: %s (%s)", f.Verdict, f.Why)
	}

	// A chain link whose replicates all hold by a wide, scattered margin
	// (9×, 11×, 18×) holds: judged on the log scale, the interval does not
	// reach below 1 as one on the ratios themselves would.
	far := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		return map[string]float64{"cent": 1, "can-p2": []float64{9, 11, 18}[seed-1], "can": 40}[s]
	}), seeds))
	if l := far["chain"].Links; len(l) != 2 || !l[0].Holds || l[0].CI95[0] <= 1 || math.Abs(*l[0].Ratio-math.Cbrt(9*11*18)) > 1e-9 {
		t.Errorf("a scattered but clear link: %+v", l)
	}

	// A bound: the whole interval must lie past it. CAN at 8, 12, 16×
	// CENT has a mean above 10 but an interval reaching below.
	bound := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		if s == "can" {
			return []float64{8, 12, 16}[seed-1]
		}
		return 1
	}), seeds))
	if f := bound["can"]; f.Verdict != Ordering || *f.MagHold {
		t.Errorf("an interval across the bound: %s (%s)", f.Verdict, f.Why)
	}

	// Zeros: a chain link compares the values themselves (0 < x holds,
	// 0 <= 0 holds, 0 < 0 does not); a ratio over 0 is not measured.
	zeros := byID(Judge(e, measured(func(s string, tau float64, seed uint64) float64 {
		return map[string]float64{"cent": 0, "can-p2": 0, "can": 3}[s]
	}), seeds))
	if l := zeros["chain"].Links; len(l) != 2 || l[0].Holds || !l[1].Holds || l[1].Ratio != nil {
		t.Errorf("chain over zeros: %+v; want cent < can-p2 broken (0 < 0), can-p2 <= can holding without a ratio", l)
	}
	if zeros["p2"].Verdict != NotReproduced || zeros["p2"].Measured != nil {
		t.Errorf("0/0 judged %s", zeros["p2"].Verdict)
	}

	// A metric missing at a point: nothing to compare, never a pass.
	missing := measured(func(string, float64, uint64) float64 { return 1 })
	missing[0].Values["m"] = nil
	for _, f := range Judge(e, missing, seeds) {
		if f.ID == "p2" && f.Verdict != NotReproduced {
			t.Errorf("p2 with CENT unmeasured: %s", f.Verdict)
		}
	}
}

func TestExecuteRunsTheSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the deterministic driver")
	}
	sc := experiment(t, `
duration: 12m
peers: {count: 30, join_window: 30s}
experiment:
  paper: "002"
  vary:
    - {key: overlay.heartbeat.mode, values: [vanilla, compact]}
  findings:
    - {id: compact-cheaper, claim: "compact heartbeats send fewer bytes", kind: ratio, metric: bytes.per_node_per_minute, of: {overlay.heartbeat.mode: compact}, over: {overlay.heartbeat.mode: vanilla}, direction: below}
    - {id: nothing, claim: "a path no summary has", kind: ratio, metric: no.such.path, of: {overlay.heartbeat.mode: compact}, over: {overlay.heartbeat.mode: vanilla}, direction: below}
`)
	dir := t.TempDir()
	rep, err := Execute(context.Background(), "t", sc, Config{Options: Options{Seeds: 2, Seed: 1, Scale: 1}, Parallel: 2, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 4 || rep.RunsPlanned != 4 || rep.Interrupted || rep.Outcomes["passed"] != 4 {
		t.Fatalf("runs %d of %d, outcomes %v, interrupted %v", len(rep.Runs), rep.RunsPlanned, rep.Outcomes, rep.Interrupted)
	}
	f := byID(rep.Findings)
	if f["compact-cheaper"].Verdict != Reproduced || f["nothing"].Verdict != NotReproduced || rep.Verdict != NotReproduced {
		t.Errorf("verdicts %s, %s, overall %s", f["compact-cheaper"].Verdict, f["nothing"].Verdict, rep.Verdict)
	}
	md := rep.Markdown()
	for _, want := range []string{"compact-cheaper", "not-reproduced", "| vanilla |", "seeds (1–2)"} {
		if !strings.Contains(md, want) {
			t.Errorf("reproduce.md lacks %q:\n%s", want, md)
		}
	}

	// Interrupted before it starts: nothing measured, nothing passes.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err = Execute(ctx, "t", sc, Config{Options: Options{Seeds: 1, Seed: 1, Scale: 1}, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.Runs) != 0 || rep.Verdict != NotReproduced {
		t.Errorf("cancelled: interrupted %v, %d runs, verdict %s", rep.Interrupted, len(rep.Runs), rep.Verdict)
	}
}

// TestMarkdownCountsReplicates: reproduce.md says how many of the planned
// replicates each point's means hold — fewer where an interrupted
// reproduction stopped.
func TestMarkdownCountsReplicates(t *testing.T) {
	one := 1.0
	rep := Report{Experiment: "x", Paper: "002", Seeds: []uint64{1, 2, 3}, Interrupted: true, Metrics: []string{"m"},
		Axes: []scenario.ExperimentAxis{{Key: "overlay.heartbeat.mode"}},
		Runs: []Measurement{
			{Point: []string{"vanilla"}, Outcome: "passed", Values: map[string]*float64{"m": &one}},
			{Point: []string{"vanilla"}, Outcome: "passed", Values: map[string]*float64{"m": &one}},
			{Point: []string{"vanilla"}, Outcome: "passed", Values: map[string]*float64{"m": &one}},
			{Point: []string{"compact"}, Outcome: "interrupted", Values: map[string]*float64{"m": &one}},
		}}
	md := rep.Markdown()
	for _, want := range []string{"| replicates | outcomes |", "| 3 of 3 | passed, passed, passed |", "| 1 of 3 | interrupted |"} {
		if !strings.Contains(md, want) {
			t.Errorf("reproduce.md lacks %q:\n%s", want, md)
		}
	}
}
