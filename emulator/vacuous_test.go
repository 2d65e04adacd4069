package emulator_test

import (
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
)

// check is the invariant named name of s, failing the test if s has none.
func check(t *testing.T, s emulator.Summary, name string) emulator.InvariantCheck {
	t.Helper()
	for _, c := range s.Invariants.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("seed %d: no invariant %s in %+v", s.Seed, name, s.Invariants.Checks)
	return emulator.InvariantCheck{}
}

// TestNoVacuousPass: a run in which nothing was left to judge fails,
// saying why — every peer crashed (population_survived), a partition
// still in force at the end (overlay_reconverged not judged, and the
// fault report says so), a workload of which no job completed (jobs_ran).
func TestNoVacuousPass(t *testing.T) {
	const base = `name: %s
seed: 7
duration: 10m
peers: {count: 60, join_window: 1m}
overlay: {heartbeat: {period: 30s, fail_after: 3}}
`
	dead := emutest.Parse(t, "dead.yaml", base+"faults:\n  - {at: 5m, crash: {fraction: 1.0}}\n", "dead")
	s := emutest.Run(t, dead, emulator.DriverSim).Summary
	if c := check(t, s, "population_survived"); c.OK || !strings.Contains(c.Detail, "0 overlay members at the end") || s.Outcome != emulator.OutcomeFailed {
		t.Errorf("seed %d: every peer crashed: outcome %s, population_survived %+v", s.Seed, s.Outcome, c)
	}

	late := emutest.Parse(t, "late.yaml", base+"faults:\n  - {at: 9m59s, partition: {fraction: 0.3}}\n", "late")
	s = emutest.Run(t, late, emulator.DriverSim).Summary
	if c := check(t, s, "overlay_reconverged"); c.OK || !strings.Contains(c.Detail, "still in force at the end") {
		t.Errorf("seed %d: a partition never healed: overlay_reconverged %+v", s.Seed, c)
	}
	if ev := s.Faults.Events; len(ev) != 1 || !ev[0].InForceAtEnd || ev[0].ExactAfterSeconds != nil {
		t.Errorf("seed %d: fault events %+v: want the partition marked in force at the end, with no exact-again time", s.Seed, ev)
	}

	jobs := emutest.Load(t, "../examples/jobs.yaml", "peers.count=60", "workload.jobs=40", "duration=30m", "workload.runtime=100h")
	s = emutest.Run(t, jobs, emulator.DriverSim).Summary
	if c := check(t, s, "jobs_ran"); c.OK || !strings.Contains(c.Detail, "0 completed by the end") {
		t.Errorf("seed %d: no job completed: jobs_ran %+v", s.Seed, c)
	}
}
