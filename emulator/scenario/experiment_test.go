package scenario

import (
	"strings"
	"testing"
)

const experimentFile = `duration: 1h
workload: {jobs: 10}
experiment:
  paper: "003"
  section: "§5.4"
  figure: "Fig 6(a)"
  title: Mean wait by scheme
  vary:
    - key: matchmaking.scheme
      values: [cent, can-p2, can]
    - key: workload.interarrival
      values: [15s, 20s]
  scale:
    peers.count: 1
    workload.interarrival: -1
  smoke:
    scale: 0.2
    findings: [chain]
  seeds: [4201, 4202, 4203]
  tuned_on: [1, 2]
  findings:
    - id: p2
      claim: CAN-P2 waits 1.5x CENT
      kind: ratio
      metric: jobs.wait_seconds.mean
      of: {matchmaking.scheme: can-p2}
      over: {matchmaking.scheme: cent}
      paper: 1.5
      tolerance: 0.25
    - id: chain
      claim: the order
      kind: order
      metric: jobs.wait_seconds.mean
      axis: matchmaking.scheme
      order: "cent < can-p2 <= can"
    - id: tau
      claim: wait falls with tau
      kind: exponent
      metric: jobs.wait_seconds.mean
      axis: workload.interarrival
      where: {matchmaking.scheme: cent}
      axis_offset: 0.5
      paper: -2
  figures: [jobs.utilization_at_last_submission, jobs.wait_seconds.mean]
`

func TestExperimentBlock(t *testing.T) {
	s, err := Parse("e.yaml", []byte(experimentFile))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Experiment
	if e == nil || e.Paper != "003" || e.Figure != "Fig 6(a)" || len(e.Vary) != 2 || e.Vary[1].Values[1] != "20s" {
		t.Fatalf("experiment %+v", e)
	}
	if len(e.Scale) != 2 || e.Scale[1] != (ScaleRule{"workload.interarrival", -1}) || e.Smoke.Scale != 0.2 || e.Smoke.Findings[0] != "chain" {
		t.Errorf("scale %+v smoke %+v", e.Scale, e.Smoke)
	}
	f := e.Findings[0]
	if f.Kind != FindingRatio || *f.Paper != 1.5 || f.Tolerance != 0.25 || f.Of["matchmaking.scheme"] != "can-p2" || f.Line != 22 {
		t.Errorf("finding %+v", f)
	}
	if m := e.Metrics(); strings.Join(m, " ") != "jobs.wait_seconds.mean jobs.utilization_at_last_submission" {
		t.Errorf("metrics %v: want the findings' once, then the figures'", m)
	}
	if e.Findings[2].AxisOffset != 0.5 {
		t.Errorf("axis_offset %v, want 0.5", e.Findings[2].AxisOffset)
	}
	if len(e.Seeds) != 3 || e.Seeds[2] != 4203 || len(e.TunedOn) != 2 || e.TunedOn[0] != 1 || e.JudgingSeeds()[0] != 4201 {
		t.Errorf("seeds %v, tuned on %v", e.Seeds, e.TunedOn)
	}
	if (&Experiment{}).JudgingSeeds()[2] != 3 {
		t.Error("a block without seeds is judged on seeds 1, 2, 3")
	}
	if e.Findings[1].Tolerance != 0.3 {
		t.Errorf("default tolerance %v, want 0.3", e.Findings[1].Tolerance)
	}
	// A run ignores the block: the scenario is the file's, and the
	// effective scenario leaves it out.
	out, err := s.YAML()
	if err != nil || strings.Contains(string(out), "experiment") {
		t.Errorf("effective scenario mentions the experiment (%v):\n%s", err, out)
	}
}

func TestExperimentErrors(t *testing.T) {
	cases := []struct{ old, new, want string }{
		{"  title: Mean", "  titel: Mean", `e.yaml:7:3: experiment.titel: unknown key "titel" in experiment — did you mean "title"?`},
		{"values: [cent, can-p2, can]", "values: [cent, can-p2, can, can-p9]", "e.yaml:10:35: experiment.vary: the value can-p9 of the axis matchmaking.scheme:"},
		{"- key: matchmaking.scheme", "- key: matchmaking.schema", `e.yaml:9:12: experiment.vary.key: unknown key "matchmaking.schema"`},
		{"findings: [chain]", "findings: [chane]", `e.yaml:18:16: experiment.smoke.findings: no finding has the id "chane" — write one of: chain, p2, tau`},
		{"of: {matchmaking.scheme: can-p2}", "of: {matchmaking.scheme: can-p4}", "e.yaml:26:32: experiment.findings.of: can-p4 is not a value of the axis matchmaking.scheme — write one of: cent, can-p2, can"},
		{"kind: ratio", "kind: ratios", `e.yaml:24:13: experiment.findings.kind: "ratios" is not a kind of finding — write ratio, order, exponent or value`},
		{`order: "cent < can-p2 <= can"`, `order: "cent < < can"`, "e.yaml:35:14: experiment.findings.order:"},
		{"      paper: 1.5\n", "", "e.yaml:22:7: experiment.findings: the ratio p2 states nothing to compare"},
		{"axis: workload.interarrival", "axis: matchmaking.scheme", "experiment.findings.axis: the exponent tau needs positive numbers on the axis matchmaking.scheme"},
		{"- id: chain", "- id: p2", `experiment.findings.id: the finding id "p2" is used twice`},
		{"  paper: \"003\"\n", "", "e.yaml:4:3: experiment.paper: the experiment names no paper"},
		{"    peers.count: 1", "    peers.cnt: 1", `e.yaml:14:5: experiment.scale: unknown key "peers.cnt"`},
		{"scale: 0.2", "scale: 2", "e.yaml:17:12: experiment.smoke.scale: 2 is not a scale for a reduced run"},
		{"axis_offset: 0.5", "axis_offset: -30", "the exponent tau needs positive numbers on the axis workload.interarrival"},
		{"      tolerance: 0.25\n", "      tolerance: 0.25\n      axis_offset: 1\n", "axis_offset shifts an exponent's x; the finding p2 is a ratio"},
		{"seeds: [4201, 4202, 4203]", "seeds: [4201, 4202]", "e.yaml:19:10: experiment.seeds: 2 judging seed(s) are too few for a verdict — list at least 3 seeds"},
		{"seeds: [4201, 4202, 4203]", "seeds: [4201, 4201, 4203]", "e.yaml:19:17: experiment.seeds: seed 4201 is listed twice"},
		{"seeds: [4201, 4202, 4203]", "seeds: [4201, x, 4203]", `e.yaml:19:17: experiment.seeds: "x" is not a seed — write a whole number`},
		{"seeds: [4201, 4202, 4203]", "seeds: 4201", `e.yaml:19:10: experiment.seeds: found the value 4201 where a list of seeds belongs`},
		{"tuned_on: [1, 2]", "tuned_on: [1, 4202]", "e.yaml:19:17: experiment.seeds: seed 4202 is listed under tuned_on too"},
	}
	for _, c := range cases {
		if !strings.Contains(experimentFile, c.old) {
			t.Fatalf("the file lacks %q", c.old)
		}
		_, err := Parse("e.yaml", []byte(strings.Replace(experimentFile, c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q → %q: got %v\nwant %s", c.old, c.new, err, c.want)
		}
	}
}

func TestOrderChain(t *testing.T) {
	c, err := OrderChain("a < b <= c")
	if err != nil || len(c) != 3 || c[0] != (OrderLink{"a", "<"}) || c[1] != (OrderLink{"b", "<="}) || c[2] != (OrderLink{"c", ""}) {
		t.Errorf("%+v %v", c, err)
	}
	for _, bad := range []string{"a", "a <", "a > b", "a < < b", ""} {
		if _, err := OrderChain(bad); err == nil {
			t.Errorf("OrderChain(%q) accepted", bad)
		}
	}
}

// TestFindingClass: a finding's class follows from its keys — a published
// number is a magnitude whatever bound or direction it also has, a bound
// alone a bound, a side alone a direction, a chain an order — and a number
// equal to the pivot is an "about equal" claim.
func TestFindingClass(t *testing.T) {
	one, two, zero := 1.0, 2.0, 0.0
	for _, c := range []struct {
		f     Finding
		class string
		equal bool
	}{
		{Finding{Kind: FindingRatio, Paper: &two}, ClassMagnitude, false},
		{Finding{Kind: FindingRatio, Paper: &one, AtMost: &two}, ClassMagnitude, true},
		{Finding{Kind: FindingRatio, AtLeast: &two, Direction: "above"}, ClassBound, false},
		{Finding{Kind: FindingRatio, Direction: "below"}, ClassDirection, false},
		{Finding{Kind: FindingExponent, Paper: &zero}, ClassMagnitude, true},
		{Finding{Kind: FindingExponent, Paper: &one}, ClassMagnitude, false},
		{Finding{Kind: FindingOrder, Order: "a < b"}, ClassOrder, false},
		{Finding{Kind: FindingValue, Paper: &one}, ClassMagnitude, false},
		{Finding{Kind: FindingValue, AtMost: &two}, ClassBound, false},
	} {
		if got := c.f.Class(); got != c.class || c.f.AboutEqual() != c.equal {
			t.Errorf("%+v: class %s, about equal %v; want %s, %v", c.f, got, c.f.AboutEqual(), c.class, c.equal)
		}
	}
}

// TestValueFinding: a value is the metric itself at the points "of"
// selects, judged against the paper's number or a bound; it has no side
// of 1, so over and direction are refused with what to write instead.
func TestValueFinding(t *testing.T) {
	const file = `duration: 1h
experiment:
  paper: "002"
  vary:
    - {key: overlay.heartbeat.period, values: [30s, 300s]}
  findings:
    - {id: v, claim: "under 10% wrong", kind: value, metric: staleness.acid_wrong_fraction, of: {overlay.heartbeat.period: 300s}, at_most: 0.1}
`
	s, err := Parse("v.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Experiment.Findings[0]; f.Kind != FindingValue || f.Class() != ClassBound || f.Of["overlay.heartbeat.period"] != "300s" {
		t.Errorf("value finding %+v", f)
	}
	for _, c := range []struct{ old, new, want string }{
		{"at_most: 0.1}", "at_most: 0.1, over: {overlay.heartbeat.period: 30s}}", "v.yaml:7:151: experiment.findings.over: the value v is the metric itself"},
		{"at_most: 0.1}", "at_most: 0.1, direction: below}", "experiment.findings.direction: a value has no side of 1 to claim"},
		{", at_most: 0.1}", "}", "v.yaml:7:7: experiment.findings: the value v states nothing to compare"},
	} {
		_, err := Parse("v.yaml", []byte(strings.Replace(file, c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q → %q: got %v\nwant %s", c.old, c.new, err, c.want)
		}
	}
}
