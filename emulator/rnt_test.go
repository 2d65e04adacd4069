package emulator_test

import (
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// rntScenario is a run matched by the Rendezvous Node Tree over Chord
// (003 §5.1) with a fifth of the peers departing mid-run, half crashing
// and half leaving (a leave is repaired by the ring as a crash).
func rntScenario(t *testing.T, seed uint64, peers int, timeScale float64) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "rnt-departures.yaml", `
seed: %d
duration: 3h
time_scale: %g
peers: {count: %d, population: mixed, join_window: 30s}
overlay: {dimensions: 4}
workload: {jobs: 80, interarrival: 30s, runtime: 20m, start: 2m, constraint_ratio: 0.5}
matchmaking: {scheme: rnt}
faults:
  - {at: 30m, crash: {fraction: 0.1}}
  - {at: 50m, leave: {fraction: 0.1}}
`, seed, timeScale, peers)
}

// rntChecks: the ring and the tree ran — stabilize rounds, aggregation up
// the tree, searches down it — each counted under its own type.
func rntChecks(t *testing.T, s emulator.Summary) {
	t.Helper()
	for _, typ := range []string{"chord_stabilize", "chord_notify", "rnt_up", "rnt_down", "rnt_search"} {
		if s.Messages.ByType[typ].Count == 0 {
			t.Errorf("seed %d, driver %s: no %s message", s.Seed, s.Driver, typ)
		}
	}
}

// RNT conserves jobs with a fifth of the peers departing, half crashing,
// on the deterministic driver: a search that meets a departed node is
// lost with it and the owner matches the job again.
func TestRNTSurvivesDepartures(t *testing.T) {
	t.Parallel() // a deterministic-driver run: one event loop
	if testing.Short() {
		t.Skip("a single-threaded simulator run (no data races to find); the full test run covers it")
	}
	const seed = 4
	s := emutest.Run(t, rntScenario(t, seed, 60, 1), emulator.DriverSim).Summary
	emutest.Conserved(t, "rnt", seed, s.Jobs, false)
	rntChecks(t, s)
	if s.Jobs.Completed < 50 {
		t.Errorf("seed %d: only %d of %d jobs completed", seed, s.Jobs.Completed, s.Jobs.Submitted)
	}
	if !s.Invariants.OK {
		t.Errorf("seed %d: invariants %+v", seed, s.Invariants.Checks)
	}
}

// The same over real NATS: the ring's and the tree's cores run inside the
// peers' actors beside the CAN overlay; no job is lost.
func TestRNTOverNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a 9-s live run over NATS")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	sc := rntScenario(t, 5, 40, 300)
	sc.Emulator.LagTolerance = 0.1 // conservation is judged, not timing: 3 s of lateness on 30-s heartbeats
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	emutest.ConservedOverNATS(t, s, 50, false)
	rntChecks(t, s)
}
