package schemes_test

import (
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// hetScenario is a small run with heterogeneous computing elements (002
// §4.1): peers of a CPU and up to two GPU types on the 10+1-dimensional
// CAN, jobs of 20 minutes a minute apart for 3 hours, 30% of them GPU
// jobs.
func hetScenario(t *testing.T, seed uint64, peers int, timeScale float64, scheme, extra string) scenario.Scenario {
	t.Helper()
	return hetScenarioSized(t, seed, peers, timeScale, scheme, extra, "3h", 150, "20m")
}

// hetScenarioSized is hetScenario with its duration, job count and job
// runtime given.
func hetScenarioSized(t *testing.T, seed uint64, peers int, timeScale float64, scheme, extra, duration string, jobs int, runtime string) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "het.yaml", `
seed: %d
duration: %s
time_scale: %g
peers: {count: %d, population: mixed, bootstrap: direct, ces: {gpu_types: 2, gpu_fraction: 0.5}}
overlay: {dimensions: 10}
link: {latency: {dist: exponential, mean: 50ms}}
workload: {jobs: %d, interarrival: 60s, runtime: %s, kind: mixed, classes: nodes, constraint_ratio: 0.5, ces: {gpu_fraction: 0.3}, start: 5m}
matchmaking: {scheme: %s}
%s`, seed, duration, timeScale, peers, jobs, runtime, scheme, extra)
}

// With a fifth of the peers departing mid-run — half crashing, half
// leaving gracefully — no job is lost and none runs twice under the
// schemes of 002 §4.3.1, on both drivers; GPU jobs run, and the CE
// figures reach summary.json.
func TestHetSchemesSurviveDepartures(t *testing.T) {
	if testing.Short() {
		t.Skip("three runs per driver; the full test run covers them")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	const seed = 7
	faults := `faults:
  - {at: 60m, crash: {fraction: 0.1}}
  - {at: 90m, leave: {fraction: 0.1}}
`
	// The emulator's runs are shorter: 75 minutes, jobs of 10 minutes
	// until 55m, the departures at 25m and 35m while most jobs run.
	liveFaults := `faults:
  - {at: 25m, crash: {fraction: 0.1}}
  - {at: 35m, leave: {fraction: 0.1}}
`
	for _, driver := range []string{emulator.DriverSim, emulator.DriverLive} {
		for _, scheme := range []string{"can-het", "can-hom", "cent-het"} {
			// The emulator runs 40 peers at 200× (23 s a run) with 10%
			// lag tolerance (3 s of 30-s heartbeats: conservation is
			// judged, not timing) for 5× headroom on two cores; the
			// simulator 60.
			sc := hetScenario(t, seed, 60, 1200, scheme, faults)
			if driver == emulator.DriverLive {
				sc = hetScenarioSized(t, seed, 40, 200, scheme, liveFaults, "75m", 50, "10m")
				sc.Emulator.LagTolerance = 0.1
			}
			s := emutest.Run(t, sc, driver).Summary
			j := s.Jobs
			if driver == emulator.DriverSim {
				emutest.Conserved(t, scheme, seed, j, false)
				if j.Rematched+j.Returned == 0 {
					t.Errorf("%s seed %d: rematched %d, returned %d: the departures reached no run node", scheme, seed, j.Rematched, j.Returned)
				}
			} else {
				emutest.ConservedOverNATS(t, s, j.Submitted/2, false)
			}
			if driver == emulator.DriverLive && (s.Emulator == nil || !s.Emulator.KeptUp) {
				continue // conservedOverNATS logged what the late actors did
			}
			if j.CEs == nil || j.CEs.GPU.Completed == 0 || j.CEs.CPU.Completed == 0 || j.CEs.GPU.WaitSecondsMean == nil {
				t.Fatalf("%s %s seed %d: jobs.ces %+v, want CPU and GPU jobs completed", driver, scheme, seed, j.CEs)
			}
			if j.Scheme != scheme {
				t.Errorf("%s %s seed %d: summary scheme %q", driver, scheme, seed, j.Scheme)
			}
			t.Logf("%s %s seed %d: %d submitted, %d completed (GPU %d, wait %.0f s; CPU %d, wait %.0f s), lost %d, duplicated %d",
				driver, scheme, seed, j.Submitted, j.Completed, j.CEs.GPU.Completed, *j.CEs.GPU.WaitSecondsMean, j.CEs.CPU.Completed, *j.CEs.CPU.WaitSecondsMean, j.Lost, j.Duplicated)
		}
	}
}
