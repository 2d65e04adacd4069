// Package runtest holds what the emulator's end-to-end tests share: a
// scenario run that fails the test on error and checks every job's
// history, and the job-conservation checks (docs/JOBS.md). It is imported
// by tests only.
package runtest

import (
	"context"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// Run runs sc on driver (emulator.DriverSim or DriverLive) within five
// minutes and checks every job's history (CheckJobs).
func Run(t *testing.T, sc scenario.Scenario, driver string) *emulator.Result {
	t.Helper()
	return RunWith(t, sc, emulator.Options{Driver: driver})
}

// RunWith is Run with the given options.
func RunWith(t *testing.T, sc scenario.Scenario, opts emulator.Options) *emulator.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := emulator.Run(ctx, sc, opts)
	if err != nil {
		t.Fatalf("seed %d, driver %s: %v", sc.Seed, opts.Driver, err)
	}
	CheckJobHistories(t, res)
	return res
}

// CheckJobHistories runs the job-history checker over a run with a
// workload (Run does): every job's events follow the job's state machine
// (ledger.Check), else the test stops with the offending histories.
func CheckJobHistories(t *testing.T, res *emulator.Result) {
	t.Helper()
	if err := res.CheckJobs(); err != nil {
		t.Fatalf("seed %d, driver %s: %v", res.Summary.Seed, res.Summary.Driver, err)
	}
}

// Conserved asserts the job-conservation invariant: every job ended
// exactly once or is still held by a live peer (unfinished), none lost or
// run twice; with drained set, every job ended.
func Conserved(t *testing.T, name string, seed uint64, j *emulator.JobsSummary, drained bool) {
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

// ConservedOverNATS is Conserved for a run on the emulator driver, with at
// least minDone jobs completed (and, with drained, none unfinished). When the run kept up with its time scale
// the check is strict. When it did not (the race detector slows the actors
// several times on two cores), owners take run nodes that are only late
// for failed and match their jobs again: no job may be lost and the books
// must balance, but a job may complete twice after such a recovery step
// (the history checker, run by Run, allows only that), fewer may
// complete, and a client may give up — the run's outcome is overloaded,
// which explains them; they are logged, not failed.
func ConservedOverNATS(t *testing.T, s emulator.Summary, minDone uint64, drained bool) {
	t.Helper()
	if e := s.Emulator; e != nil && e.KeptUp {
		Conserved(t, "emulator", s.Seed, s.Jobs, drained)
		if s.Jobs.Completed < minDone {
			t.Errorf("seed %d: only %d of %d jobs completed", s.Seed, s.Jobs.Completed, s.Jobs.Submitted)
		}
		return
	}
	j := s.Jobs
	if j == nil || j.Submitted == 0 || j.Lost != 0 || j.Completed+j.Failed+j.Unfinished+j.Lost != j.Submitted {
		t.Fatalf("seed %d (did not keep up): jobs %+v", s.Seed, j)
	}
	if s.Outcome != emulator.OutcomeOverloaded {
		t.Errorf("seed %d: a run that did not keep up has outcome %q", s.Seed, s.Outcome)
	}
	t.Logf("seed %d: the emulator did not keep up (%s): %d submitted, %d completed, %d failed %v, %d unfinished, %d duplicated after re-matching live run nodes",
		s.Seed, s.Emulator.LagJudged, j.Submitted, j.Completed, j.Failed, j.FailedBy, j.Unfinished, j.Duplicated)
}
