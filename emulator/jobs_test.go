package emulator_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// jobsScenario is a small version of examples/jobs.yaml: 003's
// lightly-constrained mixed workload on 100 peers, loaded enough that the
// schemes differ, with time to drain.
func jobsScenario(t *testing.T, seed uint64, scheme string, sf int, extra string) scenario.Scenario {
	t.Helper()
	doc := fmt.Sprintf(`
seed: %d
duration: 4h
peers: {count: 100, population: mixed}
overlay: {dimensions: 3}
link: {latency: {dist: exponential, mean: 50ms}}
workload: {jobs: 300, interarrival: 30s, runtime: 40m}
matchmaking: {scheme: %s, stopping_factor: %d}
%s`, seed, scheme, sf, extra)
	sc, err := scenario.Parse("jobs.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// conserved asserts the job-conservation invariant: every job ended
// exactly once or is still held by a live peer (unfinished), none lost or
// run twice; with drained set, every job ended.
func conserved(t *testing.T, name string, seed uint64, j *emulator.JobsSummary, drained bool) {
	t.Helper()
	if j == nil {
		t.Fatalf("%s seed %d: no jobs section", name, seed)
	}
	if j.Lost != 0 || j.Duplicated != 0 || drained && j.Unfinished != 0 || j.Completed+j.Failed+j.Unfinished != j.Submitted || j.Submitted == 0 {
		t.Errorf("%s seed %d: jobs %d submitted, %d completed, %d failed, %d unfinished, %d lost, %d duplicated; anomalies %+v",
			name, seed, j.Submitted, j.Completed, j.Failed, j.Unfinished, j.Lost, j.Duplicated, j.Anomalies)
	}
	for reason := range j.FailedBy {
		if reason != "no capable node found" {
			t.Errorf("%s seed %d: jobs failed for %q", name, seed, reason)
		}
	}
}

// checkJobHistories runs the job-history checker over a run with a
// workload (every test that runs jobs calls it; runScenario does): every
// job's events follow the job's state machine (ledger.Check), else the
// test stops with the offending histories.
func checkJobHistories(t *testing.T, res *emulator.Result) {
	t.Helper()
	if err := res.CheckJobs(); err != nil {
		t.Fatalf("seed %d, driver %s: %v", res.Summary.Seed, res.Summary.Driver, err)
	}
}

// 003 §5.4: pushing along aggregated load beats basic CAN by far, and the
// centralized matchmaker with its global view is best. The ordering, not
// the ratios, is asserted (docs/JOBS.md publishes the ratios).
func TestSchemesOrderedByWait(t *testing.T) {
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	const seed = 4
	wait := map[string]float64{}
	for _, s := range []struct {
		name, scheme string
		sf           int
	}{{"cent", "cent", 2}, {"can-p2", "can-p", 2}, {"can", "can", 2}} {
		j := runScenario(t, jobsScenario(t, seed, s.scheme, s.sf, ""), emulator.DriverSim).Summary.Jobs
		conserved(t, s.name, seed, j, false)
		if j.WaitSeconds.Mean == nil {
			t.Fatalf("%s seed %d: no wait figure", s.name, seed)
		}
		wait[s.name] = *j.WaitSeconds.Mean
		if s.scheme == "can-p" && j.Pushed == 0 {
			t.Errorf("can-p seed %d: no job was pushed", seed)
		}
		if s.scheme == "cent" && j.Pushed != 0 {
			t.Errorf("cent seed %d: %d jobs pushed, want none", seed, j.Pushed)
		}
	}
	t.Logf("seed %d: mean wait %v", seed, wait)
	if !(wait["cent"] < wait["can-p2"] && wait["can-p2"] < 0.8*wait["can"]) {
		t.Errorf("seed %d: mean wait cent %.0f s, can-p2 %.0f s, can %.0f s; want cent < can-p2 < 0.8 can", seed, wait["cent"], wait["can-p2"], wait["can"])
	}
}

// With a fifth of the peers departing mid-run — half crashing, half
// leaving gracefully — no job is lost and none runs twice, under every
// scheme; the recovery paths (re-matching, adoption by the new owner,
// jobs handed back, client resubmission) are all exercised.
func TestJobsSurviveDepartures(t *testing.T) {
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	const seed = 6
	faults := `faults:
  - {at: 40m, crash: {fraction: 0.1}}
  - {at: 70m, leave: {fraction: 0.1}}
`
	for _, scheme := range []string{"can-p", "can", "cent"} {
		sc := jobsScenario(t, seed, scheme, 2, faults)
		// Lighter load than the comparison, so that every job has ended
		// by the end of the run even with a fifth of the capacity gone.
		// Basic CAN's hot spot keeps a tail of jobs queued longer.
		sc.Workload.Jobs, sc.Workload.Interarrival, sc.Workload.Runtime = 200, 40*time.Second, 30*time.Minute
		sc.Duration = 5 * time.Hour
		sum := runScenario(t, sc, emulator.DriverSim).Summary
		j := sum.Jobs
		conserved(t, scheme, seed, j, scheme != "can")
		if j.Rematched == 0 || j.Returned == 0 {
			t.Errorf("%s seed %d: rematched %d, returned %d: the departures did not reach any run node", scheme, seed, j.Rematched, j.Returned)
		}
		if scheme != "cent" && j.Adopted == 0 {
			t.Errorf("%s seed %d: no job adopted after its owner departed", scheme, seed)
		}
		if !sum.Invariants.OK {
			t.Errorf("%s seed %d: invariants %+v", scheme, seed, sum.Invariants.Checks)
		}
	}
}

func TestJobsReplayExactly(t *testing.T) {
	sc := jobsScenario(t, 8, "can-p", 2, "faults:\n  - {at: 50m, crash: {fraction: 0.1}}\n")
	sc.Duration = sc.Duration / 2
	a := runScenario(t, sc, emulator.DriverSim).Summary.Jobs
	b := runScenario(t, sc, emulator.DriverSim).Summary.Jobs
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed %d: two runs differ:\n%+v\n%+v", sc.Seed, a, b)
	}
}

// The same job machinery over real NATS: jobs are routed, pushed, run and
// reported by actors, and every one ends exactly once.
func TestJobsOverNATS(t *testing.T) {
	doc := `
seed: 3
duration: 3h
time_scale: 1200
peers: {count: 40, population: mixed, join_window: 30s}
overlay: {dimensions: 3}
workload: {jobs: 80, interarrival: 30s, runtime: 20m, start: 2m}
matchmaking: {scheme: can-p}
faults:
  - {at: 30m, crash: {fraction: 0.1}}
`
	sc, err := scenario.Parse("jobs-nats.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	j := runScenario(t, sc, emulator.DriverEmulator).Summary.Jobs
	conserved(t, "emulator", sc.Seed, j, true)
	if j.Completed < 60 {
		t.Errorf("seed %d: only %d of %d jobs completed", sc.Seed, j.Completed, j.Submitted)
	}
}
