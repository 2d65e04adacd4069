package emulator

import (
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/emulator/ledger"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/workload"
)

// TestJobsRanCheck: jobs_ran fails when a job of the workload due before
// the end was never submitted — the client fell behind, or the run was
// aborted before its time — and tolerates, on the emulator only, jobs due
// in the last oracle interval that may still be on their way.
func TestJobsRanCheck(t *testing.T) {
	sc := scenario.Default()
	if err := sc.SetAll("workload.jobs=4", "duration=1h"); err != nil {
		t.Fatal(err)
	}
	wl := []workload.Job{{ID: 1, At: 5 * time.Minute}, {ID: 2, At: 20 * time.Minute}, {ID: 3, At: 40 * time.Minute}, {ID: 4, At: time.Hour - 10*time.Second}}
	run := func(submitted []uint64, inFlight time.Duration, aborted bool, end time.Duration) InvariantCheck {
		j := &jobRun{sc: sc, ledger: ledger.New(nil, nil), jobs: wl, inFlight: inFlight}
		if aborted {
			j.stopped = "aborted"
		}
		for _, id := range submitted {
			j.ledger.JobEvent(wl[id-1].At, jobs.Event{Kind: jobs.EvSubmitted, Job: id, Attempt: 1})
		}
		return j.ran(end, 1) // one completed: these cases judge the submissions
	}
	for _, c := range []struct {
		name      string
		submitted []uint64
		inFlight  time.Duration
		aborted   bool
		end       time.Duration
		ok        bool
		detail    string
	}{
		{"all submitted", []uint64{1, 2, 3, 4}, 0, false, time.Hour, true, "4 of 4 jobs of the workload submitted (all due by 1h0m0s)"},
		{"client fell behind", []uint64{1, 3, 4}, 0, false, time.Hour, false,
			"3 of 4 jobs of the workload submitted (all due by 1h0m0s); 1 never submitted (the first, job 2, due at 20m0s): the client fell behind"},
		{"simulator: no job in flight", []uint64{1, 2, 3}, 0, false, time.Hour, false, "job 4, due at 59m50s"},
		{"emulator: the last one on its way", []uint64{1, 2, 3}, 30 * time.Second, false, time.Hour, true,
			"3 of 4 jobs of the workload submitted (all due by 1h0m0s); 1 due in the last 30s before the end still on their way to the client"},
		{"aborted", []uint64{1, 2}, 30 * time.Second, true, 30 * time.Minute, false,
			"2 of 4 jobs of the workload submitted (all due by 1h0m0s); 2 never submitted (the first, job 3, due at 40m0s): the run was aborted at 30m0s"},
	} {
		got := run(c.submitted, c.inFlight, c.aborted, c.end)
		if got.Name != "jobs_ran" || got.OK != c.ok || !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s: %+v; want ok %v, detail containing %q", c.name, got, c.ok, c.detail)
		}
	}
}
