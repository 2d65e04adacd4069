package emulator

import (
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
