package workers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/workers"
)

// TestWorkerStartingLateKeepsItsNeighbors: a worker that handles the
// start command after the other worker's peers have begun sending to its
// own (what a loaded machine does to one of two goroutines or processes)
// keeps the overlay built in-process: the messages that arrived first are
// handled once its clock runs, so no live neighbor is declared failed.
// Handled before, they were stamped with the worker's clock from before
// the coordinator's epoch (a few emulated seconds, not the 2m handover):
// the neighbors they came from looked silent for two minutes at the first
// failure check, and CI's TestSmallWorkloadOnTwoWorkers failed
// population_formed (59 of 60 members at 2m30s) though the run kept up.
// Worker 1's start waits here until its bus has delivered
// minDelivered messages (polled, with a deadline).
func TestWorkerStartingLateKeepsItsNeighbors(t *testing.T) {
	const minDelivered = 5
	sc := emutest.Parse(t, "late-start.yaml", `name: late-start
seed: 1
time_scale: 60
duration: 5m
peers: {count: 60, population: mixed, join_window: 2m, bootstrap: direct}
overlay: {dimensions: 2, heartbeat: {period: 30s, fail_after: 3}}
oracle: {interval: 30s}
emulator: {lag_tolerance: 0.1}
`)
	var early atomic.Uint64 // worker 1's messages delivered before its start
	res, _ := emutest.Retry(t, sc, func(sc scenario.Scenario) *emulator.Result {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errs := make(chan error, 2)
		hold := func(index int, delivered func() uint64) {
			if index != 1 {
				return
			}
			// Polled on a ticker until a deadline within the start
			// command's timeout; the test fails below if it passed.
			deadline := time.NewTimer(5 * time.Second)
			defer deadline.Stop()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
		poll:
			for delivered() < minDelivered {
				select {
				case <-deadline.C:
					break poll
				case <-tick.C:
				}
			}
			early.Store(delivered())
		}
		res := runOn(t, sc, 2, func(url string) error {
			for range 2 {
				go func() { errs <- workers.WorkStartingLate(ctx, url, workers.WorkerOptions{}, hold) }()
			}
			return nil
		})
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("worker: %v", err)
			}
		}
		return res
	})
	s := res.Summary
	if n := early.Load(); n < minDelivered {
		t.Fatalf("seed %d: worker 1 had %d messages delivered before its start, want at least %d: the test did not exercise a late start", sc.Seed, n, minDelivered)
	}
	livePassed(t, sc.Seed, s)
	if s.Overlay.FalseSuspicions != 0 {
		t.Errorf("seed %d: %d false suspicions of live neighbors after worker 1 started late", sc.Seed, s.Overlay.FalseSuspicions)
	}
	t.Logf("seed %d: worker 1 started after %d messages reached it; outcome %s, false suspicions %d, lag max %.3g s", sc.Seed, early.Load(), s.Outcome, s.Overlay.FalseSuspicions, s.Clock.LagSeconds.Max)
}
