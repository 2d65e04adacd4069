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
    - {id: floor, claim: "CAN waits at least 10x CENT", kind: ratio, metric: m, of: {matchmaking.scheme: can}, over: {matchmaking.scheme: cent}, at_least: 10}
    - {id: cent-value, claim: "CENT's m is about 1", kind: value, metric: m, of: {matchmaking.scheme: cent}, paper: 1, tolerance: 0.1}
`

func TestPlanScalesAndReplicates(t *testing.T) {
	sc := experiment(t, schemes)
	runs, err := Plan(sc, Options{Seeds: []uint64{7, 8}, Scale: 0.5})
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
	if _, err := Plan(sc, Options{Scale: 1}); err == nil {
		t.Error("no seed planned")
	}
	if _, err := Plan(sc, Options{Seeds: []uint64{4, 4}, Scale: 1}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a seed twice: %v", err)
	}
	words := experiment(t, strings.Replace(schemes, "    peers.count: 1\n", "    peers.count: 1\n    matchmaking.scheme: 1\n", 1))
	if _, err := Plan(words, Options{Seeds: []uint64{1}, Scale: 0.5}); err == nil || !strings.Contains(err.Error(), "cannot be scaled") {
		t.Errorf("scaling a word: %v", err)
	}
	if _, err := Plan(words, Options{Seeds: []uint64{1}, Scale: 1}); err != nil {
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

// judged judges e on the measurements value(scheme, τ, seed) over seeds.
func judged(e *scenario.Experiment, seeds []uint64, value func(scheme string, tau float64, seed uint64) float64) map[string]Finding {
	return byID(Judge(e, measured(value), seeds))
}

// ratioOf gives CAN-P2 and CAN these factors of CENT (per seed: index
// seed−1) and CENT 1, flat in τ.
func ratioOf(p2, can []float64) func(string, float64, uint64) float64 {
	return func(s string, _ float64, seed uint64) float64 {
		switch s {
		case "can-p2":
			return p2[seed-1]
		case "can":
			return can[seed-1]
		}
		return 1
	}
}

func wantVerdict(t *testing.T, what string, f Finding, want string) {
	t.Helper()
	if f.Verdict != want {
		t.Errorf("%s: %s %s (%s), want %s", what, f.ID, f.Verdict, f.Why, want)
	}
}

// TestJudgeVerdicts: the verdicts on hand-made measurements where each
// rule decides — the whole interval in the band, the mean only
// (consistent, with the seeds that would settle it), the magnitude
// missed with the ordering held, the ordering against the claim.
func TestJudgeVerdicts(t *testing.T) {
	e := experiment(t, schemes).Experiment
	seeds := []uint64{1, 2, 3}
	factor := map[string]float64{"cent": 1, "can-p2": 1.6, "can": 25}
	noise := map[uint64]float64{1: 0.98, 2: 1, 3: 1.02}
	good := judged(e, seeds, func(s string, tau float64, seed uint64) float64 {
		return factor[s] * noise[seed] * 1000 / tau
	})
	for _, id := range []string{"p2", "can", "dir", "chain", "tau", "floor"} {
		wantVerdict(t, "good", good[id], Reproduced)
	}
	if m := *good["tau"].Measured; math.Abs(m+1) > 1e-9 {
		t.Errorf("exponent %v, want -1", m)
	}
	for id, class := range map[string]string{"p2": "magnitude", "can": "magnitude", "dir": "direction", "chain": "order", "tau": "magnitude", "floor": "bound"} {
		if good[id].Class != class {
			t.Errorf("%s: class %s, want %s", id, good[id].Class, class)
		}
	}
	if f := good["can"]; f.Bound == nil || f.BoundHolds == nil || !*f.BoundHolds || f.Band[0] != 21.2*0.7 {
		t.Errorf("a number with a bound: the band is the number's, the bound reported: band %v bound %v holds %v", f.Band, f.Bound, f.BoundHolds)
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
	if b, err := json.Marshal(good["floor"]); err != nil || !strings.Contains(string(b), `"band":[10,null]`) || !strings.Contains(string(b), `"class":"bound"`) {
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

	// A value: CENT's own metric, 1 in every replicate; it claims no side.
	if f := judged(e, seeds, ratioOf([]float64{1.6, 1.6, 1.6}, []float64{25, 25, 25}))["cent-value"]; f.Verdict != Reproduced || f.Class != "magnitude" || f.AboutEqual || f.Side != "" || f.PaperText() != "1" {
		t.Errorf("a value of 1 against the paper's 1: %s %s side %q (%s)", f.Verdict, f.Class, f.Side, f.Why)
	}
	if f := judged(e, seeds, func(s string, _ float64, seed uint64) float64 { return 1.5 })["cent-value"]; f.Verdict != NotReproduced {
		t.Errorf("a value of 1.5 against 1 ± 10%%: %s (%s)", f.Verdict, f.Why)
	}

	// CAN-P2 4.5× CENT: the ordering holds, not the magnitude; CAN 5×:
	// outside 21.2's band and below the bound.
	off := judged(e, seeds, ratioOf([]float64{4.5, 4.5, 4.5}, []float64{5, 5, 5}))
	wantVerdict(t, "off", off["p2"], Ordering)
	wantVerdict(t, "off", off["can"], Ordering)
	wantVerdict(t, "off", off["floor"], Ordering)
	if f := off["can"]; f.BoundHolds == nil || *f.BoundHolds {
		t.Errorf("CAN 5× against at least 10: the bound reported as %v", f.BoundHolds)
	}

	// A bound never replaces a number: CAN 12× CENT is past "at least
	// 10" but outside 21.2 ± 30%, so only the ordering holds; the bound
	// alone (floor) is reproduced by the same numbers.
	past := judged(e, seeds, ratioOf([]float64{1.6, 1.6, 1.6}, []float64{11.9, 12, 12.1}))
	wantVerdict(t, "a bound beside a number", past["can"], Ordering)
	wantVerdict(t, "the bound alone", past["floor"], Reproduced)
	if f := past["can"]; !*f.BoundHolds || *f.MagHold {
		t.Errorf("CAN 12×: bound holds %v, magnitude %v; want the bound held and the magnitude missed", *f.BoundHolds, *f.MagHold)
	}

	factor = map[string]float64{"cent": 2, "can-p2": 1.5, "can": 1.6}
	bad := judged(e, seeds, func(s string, tau float64, seed uint64) float64 {
		return factor[s] * noise[seed] * 1000 / tau
	})
	for _, id := range []string{"chain", "p2", "dir"} {
		wantVerdict(t, "bad", bad[id], NotReproduced)
	}
	if l := bad["chain"].Links; len(l) != 2 || l[0].Holds || !l[1].Holds || l[0].Status != LinkFails {
		t.Errorf("links %+v: want cent<can-p2 broken, can-p2<=can holding", l)
	}

	// An interval leaving the band is never reproduced: CAN-P2 at 1.3,
	// 1.5, 1.7× has its mean on the paper's 1.5 and its interval
	// [1.003, 1.997] past the band [1.05, 1.95] — consistent, and four
	// seeds with that spread would settle it (t(3)·0.2/√4 = 0.318 ≤ 0.45).
	scattered := judged(e, seeds, ratioOf([]float64{1.3, 1.5, 1.7}, []float64{25, 25, 25}))
	if f := scattered["p2"]; f.Verdict != Consistent || *f.MagHold || !f.OrderHold || f.SeedsNeeded != 4 || !strings.Contains(f.Why, "about 4 would settle it") {
		t.Errorf("scattered around the paper's value: %s, seeds needed %d (%s)", f.Verdict, f.SeedsNeeded, f.Why)
	}
	// Scattered across 1 as well: the side and the band both in the mean
	// only; the band's margin (0.45) decides: 24 seeds.
	wide := judged(e, seeds, ratioOf([]float64{0.5, 1.4, 2.6}, []float64{25, 25, 25}))
	if f := wide["p2"]; f.Verdict != Consistent || f.OrderHold || f.CI95[0] >= 1 || f.SeedsNeeded != 24 {
		t.Errorf("a ratio whose interval straddles 1: %s %v, seeds needed %d (%s)", f.Verdict, f.CI95, f.SeedsNeeded, f.Why)
	}
	// A bound alone: CAN at 8, 12, 16× CENT has its mean past 10 and its
	// interval reaching below: consistent (18 seeds: t(17)·4/√18 ≤ 2).
	bound := judged(e, seeds, ratioOf([]float64{1.6, 1.6, 1.6}, []float64{8, 12, 16}))
	if f := bound["floor"]; f.Verdict != Consistent || *f.MagHold || f.SeedsNeeded != 18 {
		t.Errorf("an interval across the bound: %s, %d seeds (%s)", f.Verdict, f.SeedsNeeded, f.Why)
	}
	wantVerdict(t, "a bound beside a number, mean outside the number's band", bound["can"], Ordering)
	// A direction: the mean below 1, the interval straddling it.
	straddle := judged(e, seeds, func(s string, _ float64, seed uint64) float64 {
		if s == "cent" {
			return []float64{0.5, 0.9, 1.2}[seed-1]
		}
		return map[string]float64{"can-p2": 1.6, "can": 1}[s]
	})
	if f := straddle["dir"]; f.Verdict != Consistent || f.SeedsNeeded == 0 || !strings.Contains(f.Why, "more seeds are needed") {
		t.Errorf("a direction with the interval across 1: %s (%s)", f.Verdict, f.Why)
	}

	// A chain link whose replicates all hold by a wide, scattered margin
	// (9×, 11×, 18×) holds: judged on the log scale, the interval does not
	// reach below 1 as one on the ratios themselves would.
	far := judged(e, seeds, ratioOf([]float64{9, 11, 18}, []float64{40, 40, 40}))
	if l := far["chain"].Links; len(l) != 2 || !l[0].Holds || l[0].CI95[0] <= 1 || math.Abs(*l[0].Ratio-math.Cbrt(9*11*18)) > 1e-9 {
		t.Errorf("a scattered but clear link: %+v", l)
	}
	// A "<" link whose geometric mean is above 1 but whose interval
	// reaches 1: the chain is consistent, and says how many seeds.
	loose := judged(e, seeds, ratioOf([]float64{0.9, 1.5, 2}, []float64{40, 40, 40}))
	if f := loose["chain"]; f.Verdict != Consistent || f.Links[0].Status != LinkMeanOnly || f.SeedsNeeded == 0 || !strings.Contains(f.Why, "cent < can-p2") {
		t.Errorf("a loose link: %s %+v (%s)", f.Verdict, f.Links, f.Why)
	}
	// "<=" without leeway: CAN 5% below CAN-P2 breaks can-p2 <= can (a
	// 10% leeway would have let it hold).
	worse := judged(e, seeds, ratioOf([]float64{2, 2, 2}, []float64{1.9, 1.9, 1.9}))
	if f := worse["chain"]; f.Verdict != NotReproduced || f.Links[1].Holds {
		t.Errorf("can-p2 <= can with CAN 5%% lower: %s %+v", f.Verdict, f.Links)
	}
	tie := judged(e, seeds, ratioOf([]float64{2, 2, 2}, []float64{2, 2, 2}))
	if f := tie["chain"]; !f.Links[1].Holds || f.Verdict != Reproduced {
		t.Errorf("can-p2 <= can with equal values: %s %+v", f.Verdict, f.Links)
	}

	// Zeros: a chain link compares the differences (0 < 0 does not hold,
	// 0 <= 3 does, without a ratio); a ratio over 0 is not measurable.
	zeros := judged(e, seeds, func(s string, tau float64, seed uint64) float64 {
		return map[string]float64{"cent": 0, "can-p2": 0, "can": 3}[s]
	})
	if l := zeros["chain"].Links; len(l) != 2 || l[0].Holds || !l[1].Holds || l[1].Ratio != nil || l[1].Difference == nil || *l[1].Difference != 3 {
		t.Errorf("chain over zeros: %+v; want cent < can-p2 broken (0 < 0), can-p2 <= can holding on the difference", l)
	}
	if f := zeros["p2"]; f.Verdict != NotMeasurable || f.Measured != nil || !strings.Contains(f.Why, "nothing to compare") {
		t.Errorf("0/0 judged %s (%s)", f.Verdict, f.Why)
	}

	// A metric missing at a point: not measurable, never a pass.
	missing := measured(func(string, float64, uint64) float64 { return 1 })
	missing[0].Values["m"] = nil
	for _, f := range Judge(e, missing, seeds) {
		if (f.ID == "p2" || f.ID == "chain") && f.Verdict != NotMeasurable {
			t.Errorf("%s with CENT unmeasured: %s", f.ID, f.Verdict)
		}
	}
}

// TestJudgeSeeds: one seed, two seeds and a seed the readings were tuned
// on give no verdict — not-judged, saying what the numbers show — while
// the ordering a smoke run checks is still read from them, and one value
// never prints as an interval.
func TestJudgeSeeds(t *testing.T) {
	e := experiment(t, schemes).Experiment
	good := ratioOf([]float64{1.6, 1.6, 1.6}, []float64{25, 25, 25})
	one := judged(e, []uint64{1}, good)
	for id, f := range one {
		// (the data are flat in τ: the exponent's ordering does not hold)
		if f.Verdict != NotJudged || f.Holds() == (id == "tau") || !strings.Contains(f.Why, "at least 3 seeds") {
			t.Errorf("one seed: %s %s holds %v (%s)", id, f.Verdict, f.Holds(), f.Why)
		}
	}
	if f := one["p2"]; f.CI95 != nil || !strings.Contains(f.MeasuredText(), "one replicate, no interval") || strings.Contains(f.MeasuredText(), "[") {
		t.Errorf("one replicate printed as %q (ci %v)", f.MeasuredText(), f.CI95)
	}
	if f := judged(e, []uint64{1, 2}, good)["p2"]; f.Verdict != NotJudged || f.CI95 == nil {
		t.Errorf("two seeds: %s %v", f.Verdict, f.CI95)
	}
	tuned := *e
	tuned.TunedOn = []uint64{2}
	for id, f := range byID(Judge(&tuned, measured(good), []uint64{1, 2, 3})) {
		if f.Verdict != NotJudged || !strings.Contains(f.Why, "seed(s) 2 are ones the file's readings were chosen on") {
			t.Errorf("a tuned seed: %s %s (%s)", id, f.Verdict, f.Why)
		}
	}
	// Undefined stays undefined whatever the seeds.
	zero := judged(e, []uint64{1}, func(s string, _ float64, _ uint64) float64 { return map[string]float64{"cent": 0}[s] })
	if f := zero["p2"]; f.Verdict != NotMeasurable {
		t.Errorf("0/0 on one seed: %s", f.Verdict)
	}
}

// TestWorst: the verdicts rank reproduced best; not-measurable and
// not-judged rank below not-reproduced, never as good.
func TestWorst(t *testing.T) {
	for _, c := range []struct {
		verdicts []string
		want     string
	}{
		{[]string{Reproduced, Reproduced}, Reproduced},
		{[]string{Reproduced, Consistent}, Consistent},
		{[]string{Consistent, Ordering}, Ordering},
		{[]string{Ordering, NotReproduced}, NotReproduced},
		{[]string{Reproduced, NotMeasurable}, NotMeasurable},
		{[]string{NotReproduced, NotMeasurable}, NotMeasurable},
		{[]string{Reproduced, NotJudged}, NotJudged},
		{[]string{NotMeasurable, NotJudged}, NotJudged},
		{nil, NotJudged},
	} {
		var fs []Finding
		for _, v := range c.verdicts {
			fs = append(fs, Finding{Verdict: v})
		}
		if got := Worst(fs); got != c.want {
			t.Errorf("Worst(%v) = %s, want %s", c.verdicts, got, c.want)
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
	rep, err := Execute(context.Background(), "t", sc, Config{Options: Options{Seeds: []uint64{1, 2, 3}, Scale: 1}, Parallel: 2, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 6 || rep.RunsPlanned != 6 || rep.Interrupted || rep.Outcomes["passed"] != 6 {
		t.Fatalf("runs %d of %d, outcomes %v, interrupted %v", len(rep.Runs), rep.RunsPlanned, rep.Outcomes, rep.Interrupted)
	}
	f := byID(rep.Findings)
	if f["compact-cheaper"].Verdict != Reproduced || f["nothing"].Verdict != NotMeasurable || rep.Verdict != NotMeasurable {
		t.Errorf("verdicts %s, %s, overall %s", f["compact-cheaper"].Verdict, f["nothing"].Verdict, rep.Verdict)
	}
	md := rep.Markdown()
	for _, want := range []string{"compact-cheaper", "not-measurable", "| vanilla |", "3 seeds (1, 2, 3)", "| direction |"} {
		if !strings.Contains(md, want) {
			t.Errorf("reproduce.md lacks %q:\n%s", want, md)
		}
	}

	// Interrupted before it starts: nothing measured, nothing passes.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err = Execute(ctx, "t", sc, Config{Options: Options{Seeds: []uint64{1}, Scale: 1}, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.Runs) != 0 || rep.Verdict != NotMeasurable {
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
