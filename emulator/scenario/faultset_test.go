package scenario

import (
	"strings"
	"testing"
	"time"
)

// faultsFile is a timeline with a named partition and its heal, an
// unnamed crash and a nemesis.
const faultsFile = `duration: 40m
faults:
  - at: 5m
    partition: {name: cut, fraction: 0.3}
  - at: 10m
    heal: {name: cut}
  - at: 20m
    crash: {fraction: 0.2}
  - when: {event: takeover, count: 2}
    loss: {p: 0.1}
`

func TestSetFaultFields(t *testing.T) {
	base, err := Parse("f.yaml", []byte(faultsFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		set   string
		check func(s Scenario) bool
	}{
		{"faults.0.at=6m", func(s Scenario) bool { return s.Faults[0].At == 6*time.Minute }},
		{"faults[0].at=7m", func(s Scenario) bool { return s.Faults[0].At == 7*time.Minute }},
		{"faults.cut.fraction=0.1", func(s Scenario) bool { return s.Faults[0].Fraction == 0.1 && s.Faults[1].Kind == FaultHeal }},
		{"faults.cut.oneway=true", func(s Scenario) bool { return s.Faults[0].OneWay }},
		{"faults.2.restart_after=2m", func(s Scenario) bool { return s.Faults[2].RestartAfter == 2*time.Minute && s.Faults[2].Fraction == 0.2 }},
		{"faults.3.at=12m", func(s Scenario) bool { return s.Faults[3].At == 12*time.Minute && s.Faults[3].When == "" }},
		{"faults.3.p=0.3", func(s Scenario) bool { return s.Faults[3].P == 0.3 && s.Faults[3].When == "takeover" }},
		{"faults.cut.peers=[1, 2, 3]", nil}, // fraction and peers: refused below
	}
	for _, c := range cases {
		s := base
		err := s.Set(c.set)
		if c.check == nil {
			if err == nil {
				t.Errorf("--set %s: accepted", c.set)
			}
			continue
		}
		if err != nil {
			t.Errorf("--set %s: %v", c.set, err)
			continue
		}
		if !c.check(s) {
			t.Errorf("--set %s: not applied: %+v", c.set, s.Faults)
		}
		if base.Faults[0].At != 5*time.Minute || base.Faults[0].Fraction != 0.3 || base.Faults[3].When == "" {
			t.Fatalf("--set %s changed the scenario it was applied to a copy of: %+v", c.set, base.Faults)
		}
		// The effective scenario reads back with the new value.
		y, err := s.YAML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("effective.yaml", y)
		if err != nil || !c.check(back) {
			t.Errorf("--set %s: the effective scenario does not read back with it: %v", c.set, err)
		}
	}
}

func TestSetFaultErrors(t *testing.T) {
	base, err := Parse("f.yaml", []byte(faultsFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ set, want string }{
		{"faults=[]", "--set faults=[]: the fault timeline is a list: set one field of one entry, e.g. --set faults.0.at=6m"},
		{"faults.9.at=6m", "there is no fault entry 9: the timeline has 4 (faults.0 to faults.3)"},
		{"faults.cot.fraction=0.3", `no fault entry is named "cot" — did you mean "cut"?`},
		{"faults.0=6m", "faults.0 is a whole entry (a partition) — set one of its fields, e.g. --set faults.0.at=5m"},
		{"faults.cut.fracton=0.3", `unknown field "fracton" of faults.cut (a partition) — did you mean "fraction"?`},
		{"faults.cut.fraction=2", "--set faults.cut.fraction=2: 2 is not a number from 0 to 1 — write e.g. 0.2"},
		{"faults.0.at=6", "6 is not a duration — write Go duration syntax such as 10m, 90s or 1h30m (a number needs a unit, e.g. 6s)"},
		{"faults.0.at=", "the value is empty — write the entry's new at, e.g. --set faults.0.at=5m"},
		{"faults.0.at=50m", "faults[0]: at 50m is not within the run (duration 40m)"},
		{"faults.cut.at=11m", `faults[1]: no earlier partition is named "cut"`},
	}
	for _, c := range cases {
		s := base
		err := s.Set(c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s:\n got %v\nwant … %s …", c.set, err, c.want)
		}
	}
	empty := Default()
	if err := empty.Set("faults.0.at=1m"); err == nil || !strings.Contains(err.Error(), "the scenario has no fault timeline") {
		t.Errorf("--set on no timeline: %v", err)
	}
	two, err := Parse("f.yaml", []byte("faults:\n  - {at: 1m, partition: {name: a, fraction: 0.1}}\n  - {at: 2m, flap: {name: a, fraction: 0.1, up: 10s, down: 5s, duration: 1m}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := two.Set("faults.a.at=3m"); err == nil || !strings.Contains(err.Error(), `2 fault entries are named "a": faults.0 (a partition), faults.1 (a flap)`) {
		t.Errorf("an ambiguous name: %v", err)
	}
}
