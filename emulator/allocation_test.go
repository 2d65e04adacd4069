package emulator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

const allocationScenario = `
name: alloc-test
seed: 3
duration: 100h
time_scale: 200
allocation:
  grid: aeolus
  jobset: 2
  order: 4
  allocator: social
  relocator: same
  spikes: fig4
`

// TestAllocationRun: a 004 allocation scenario runs through emulator.Run;
// the deterministic driver gives identical summaries twice; every job
// completes, relocations move jobs, and the summary says so.
func TestAllocationRun(t *testing.T) {
	sc, err := scenario.Parse("alloc-test.yaml", []byte(allocationScenario))
	if err != nil {
		t.Fatal(err)
	}
	var summaries [2][]byte
	for i := range summaries {
		res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
		if err != nil {
			t.Fatalf("seed 3: %v", err)
		}
		s := res.Summary
		s.WallSeconds = 0
		if summaries[i], err = json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		a := s.Allocation
		if a == nil || s.Outcome != emulator.OutcomePassed || a.Completed != a.Jobs || a.Jobs != 2000 || a.MakespanSeconds == nil || a.Relocations == 0 || a.Relocator != "social" {
			t.Fatalf("seed 3: outcome %s %v, allocation %+v", s.Outcome, s.OutcomeReasons, a)
		}
	}
	if string(summaries[0]) != string(summaries[1]) {
		t.Fatalf("seed 3: two deterministic runs gave different summaries:\n%s\n%s", summaries[0], summaries[1])
	}
}

// TestAllocationIncomplete: a run whose limit comes first fails its
// invariant and has no makespan.
func TestAllocationIncomplete(t *testing.T) {
	sc, err := scenario.Parse("alloc-test.yaml", []byte(allocationScenario))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("duration=2m"); err != nil {
		t.Fatal(err)
	}
	res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Outcome != emulator.OutcomeFailed || s.Allocation.MakespanSeconds != nil || s.Invariants.OK {
		t.Fatalf("outcome %s, makespan %v, invariants %+v", s.Outcome, s.Allocation.MakespanSeconds, s.Invariants)
	}
}
