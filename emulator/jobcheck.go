package emulator

import (
	"fmt"
	"time"

	"github.com/gridbed/gridbed/emulator/ledger"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// CheckJobs runs the job-history checker (ledger.Check: every job's
// events follow the job's state machine, none ran twice, every one that
// ended ended once) over the run's jobs. It returns nil without a
// workload; the error prints each offending job's whole history.
func (r *Result) CheckJobs() error {
	var recs []ledger.Record
	for _, row := range r.Jobs {
		if row.Record.ID != 0 { // generated but never submitted: no history
			recs = append(recs, row.Record)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	sc := r.Scenario
	dup := sc.Link.Duplicate > 0
	for _, f := range sc.Faults {
		dup = dup || f.Kind == scenario.FaultDuplicate && f.P > 0
	}
	e := r.Summary.Emulator
	return ledger.Check(recs, ledger.CheckConfig{
		End:            time.Duration(r.Summary.EmulatedSeconds * float64(time.Second)),
		ClientTimeout:  sc.Jobs.ClientTimeout,
		Aborted:        e != nil && e.Aborted,
		Duplicating:    dup,
		FalseSuspicion: e != nil && !e.KeptUp,
	})
}

// jobHistories is the invariant job_histories of a run with a workload
// (false without one): CheckJobs over every job the client submitted —
// each ended exactly once (or is unfinished at the end), through legal
// states, none ran twice — with the offending histories in the detail.
func (r *Result) jobHistories() (InvariantCheck, bool) {
	n := 0
	for _, row := range r.Jobs {
		if row.Record.ID != 0 {
			n++
		}
	}
	if r.Jobs == nil {
		return InvariantCheck{}, false
	}
	c := InvariantCheck{Name: "job_histories", OK: true,
		Detail: fmt.Sprintf("the %d submitted jobs' histories follow the job's state machine: each ended at most once, through legal states, and none ran twice", n)}
	if err := r.CheckJobs(); err != nil {
		c.OK, c.Detail = false, err.Error()
	}
	return c, true
}
