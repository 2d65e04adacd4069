package schemes_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// dualScenario is a run of multi-core peers under Dual-CAN (002 §3.1.2)
// with a fifth of the peers departing mid-run, half crashing and half
// leaving gracefully.
func dualScenario(t *testing.T, seed uint64, extra string) scenario.Scenario {
	t.Helper()
	sc := schedScenario(t, seed, "vanilla", `faults:
  - {at: 40m, crash: {fraction: 0.1}}
  - {at: 70m, leave: {fraction: 0.1}}
`+extra)
	sc.Matchmaking.Residue = "dual-can"
	sc.Workload.Jobs, sc.Workload.Interarrival, sc.Workload.Runtime = 200, 40*time.Second, 30*time.Minute
	sc.Duration = 5 * time.Hour
	return sc
}

// dualChecks: the Secondary CAN ran — its own heartbeats, joins and leaves
// counted under their own types — and searches of it placed jobs on
// Residue-nodes.
func dualChecks(t *testing.T, s emulator.Summary) {
	t.Helper()
	for _, typ := range []string{"dual_heartbeat", "dual_join", "dual_leave", "dual_search"} {
		if s.Messages.ByType[typ].Count == 0 {
			t.Errorf("seed %d, driver %s: no %s message", s.Seed, s.Driver, typ)
		}
	}
	if j := s.Jobs; j.Residue != "dual-can" || j.ResiduePlacements == 0 || j.BalloonPlacements != 0 {
		t.Errorf("seed %d, driver %s: residue %q, %d Residue-node placements, %d Balloon placements: want some of the first only", s.Seed, s.Driver, j.Residue, j.ResiduePlacements, j.BalloonPlacements)
	}
}

// Dual-CAN conserves jobs with a fifth of the peers departing (half
// crashing) on the deterministic driver: a search that meets a departed
// Residue-node is lost with it and the owner matches the job again, as any
// push; Residue-nodes of departed peers are repaired away like any
// Secondary CAN member.
func TestDualCANSurvivesDepartures(t *testing.T) {
	t.Parallel() // a deterministic-driver run: one event loop
	if testing.Short() {
		t.Skip("a single-threaded simulator run (no data races to find); the full test run covers it")
	}
	const seed = 6
	res := emutest.Run(t, dualScenario(t, seed, ""), emulator.DriverSim)
	s := res.Summary
	emutest.Conserved(t, "dual-can", seed, s.Jobs, false)
	dualChecks(t, s)
	if j := s.Jobs; j.Rematched == 0 || j.Returned == 0 {
		t.Errorf("seed %d: rematched %d, returned %d: the departures did not reach any run node", seed, j.Rematched, j.Returned)
	}
	if !s.Invariants.OK {
		t.Errorf("seed %d: invariants %+v", seed, s.Invariants.Checks)
	}
	t.Logf("seed %d: %d Residue-node placements of %d jobs, mean wait %.0f s, %d dual_heartbeat of %d messages",
		seed, s.Jobs.ResiduePlacements, s.Jobs.Submitted, *s.Jobs.WaitSeconds.Mean, s.Messages.ByType["dual_heartbeat"].Count, s.Messages.Total)
}

// The same over real NATS: the Residue-nodes' second overlay cores run
// inside the peers' actors, their timers and messages on the same
// mailbox; no job is lost with a fifth of the peers departing.
func TestDualCANOverNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a 9-s live run over NATS")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	doc := `
seed: 3
duration: 3h
time_scale: 300
emulator: {lag_tolerance: 0.1}
peers: {count: 40, population: mixed, join_window: 30s}
overlay: {dimensions: 4}
workload: {jobs: 80, interarrival: 30s, runtime: 20m, start: 2m, constraint_ratio: 0.5}
matchmaking: {scheme: can-p, residue: dual-can}
faults:
  - {at: 30m, crash: {fraction: 0.1}}
  - {at: 50m, leave: {fraction: 0.1}}
`
	sc := emutest.Parse(t, "dual-nats.yaml", doc)
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	emutest.ConservedOverNATS(t, s, 50, false)
	if e := s.Emulator; e != nil && !e.KeptUp {
		// Behind its time scale (the race detector on two cores) the
		// Secondary CAN may not have formed before the jobs ended: only
		// conservation is judged, as conservedOverNATS does.
		t.Logf("seed %d: did not keep up: Secondary CAN checks skipped; %d Residue-node placements", s.Seed, s.Jobs.ResiduePlacements)
		return
	}
	dualChecks(t, s)
}

// A Dual-CAN run replays exactly on the deterministic driver: the
// Residue-nodes' cores draw from their own seeded sources and the Manager
// node's directory from one that follows the run's events.
func TestDualCANReplaysExactly(t *testing.T) {
	t.Parallel() // deterministic-driver runs: one event loop each
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	sc := dualScenario(t, 8, "")
	sc.Duration = 2 * time.Hour
	a := emutest.Run(t, sc, emulator.DriverSim).Summary
	b := emutest.Run(t, sc, emulator.DriverSim).Summary
	if !reflect.DeepEqual(a.Jobs, b.Jobs) || !reflect.DeepEqual(a.Messages.ByType, b.Messages.ByType) {
		t.Errorf("seed %d: two runs differ:\n%+v\n%+v\n%v\n%v", sc.Seed, a.Jobs, b.Jobs, a.Messages.ByType, b.Messages.ByType)
	}
	if a.Messages.ByType["dual_search"].Count == 0 {
		t.Errorf("seed %d: no search of the Secondary CAN to replay", sc.Seed)
	}
}
