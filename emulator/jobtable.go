package emulator

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/gridbed/gridbed/emulator/ledger"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/workload"
)

// JobRow is one job of a run: what the workload generated and what the
// ledger recorded of it (a zero Record.ID: never submitted).
type JobRow struct {
	Job     workload.Job
	Record  ledger.Record
	RunNode ledger.RunNode // the peer whose run completed the job
}

// Outcome names how a job ended: completed (its result reached the
// client), failed, or unfinished at the end of the run.
func (r JobRow) Outcome() string {
	switch {
	case r.Record.Failed:
		return "failed"
	case r.Record.Ended && r.Record.Completions > 0:
		return "completed"
	}
	return "unfinished"
}

// jobTable pairs the generated jobs with the ledger's records.
func (j *jobRun) jobTable() []JobRow {
	recs, nodes := j.ledger.Records()
	byID := make(map[uint64]ledger.Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	rows := make([]JobRow, len(j.jobs))
	for i, job := range j.jobs {
		r := byID[job.ID]
		rows[i] = JobRow{Job: job, Record: r, RunNode: nodes[r.RunNode]}
	}
	return rows
}

// WriteJobs writes the per-job table as CSV (jobs.csv): one row per
// generated job with its requirements (empty: don't care), matchmaking,
// migrations, run node, times in emulated seconds, and outcome. The
// seconds columns are empty where the job never got that far; wait is
// jobs.wait_seconds_completed's per-job figure (completed jobs only).
func (r *Result) WriteJobs(w io.Writer) error {
	cw := csv.NewWriter(w)
	dims := r.Scenario.Overlay.Dimensions
	head := []string{"job", "submitted_seconds", "work_seconds"}
	for i := 0; i < dims; i++ {
		head = append(head, "req_"+population.ResourceAt(i).Name)
	}
	head = append(head, "attempts", "matched_seconds", "hops", "queue_seen", "pushed", "migrations",
		"run_node", "run_node_speed", "run_node_cores", "started_seconds", "completed_seconds", "wait_seconds", "outcome", "reason")
	if err := cw.Write(head); err != nil {
		return err
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	for _, row := range r.Jobs {
		job, rec := row.Job, row.Record
		submitted := job.At
		if rec.ID != 0 {
			submitted = rec.Submitted
		}
		line := []string{strconv.FormatUint(job.ID, 10), secs(submitted), secs(job.Work)}
		for i := 0; i < dims; i++ {
			v := ""
			if i < len(job.Req) && job.Req[i] != 0 {
				v = strconv.FormatFloat(population.CapabilityAt(job.Req, i), 'g', 6, 64)
			}
			line = append(line, v)
		}
		matched, hops, seen := "", "", ""
		if rec.Queued {
			matched, hops, seen = secs(rec.QueuedAt), strconv.FormatUint(uint64(rec.Hops), 10), strconv.Itoa(rec.QueueSeen)
		}
		runNode, speed, cores, started, completed, wait := "", "", "", "", "", ""
		if rec.Completions > 0 {
			runNode = strconv.FormatUint(uint64(rec.RunNode), 10)
			speed = strconv.FormatFloat(row.RunNode.Speed, 'g', 6, 64)
			cores = strconv.Itoa(row.RunNode.Cores)
			started, completed = secs(rec.StartedAt), secs(rec.CompletedAt)
		}
		out := row.Outcome()
		if out == "completed" {
			wait = secs(rec.StartedAt - rec.Submitted)
		}
		line = append(line, strconv.FormatUint(uint64(rec.Attempts), 10), matched, hops, seen, strconv.FormatBool(rec.Pushed),
			strconv.Itoa(rec.Migrations), runNode, speed, cores, started, completed, wait, out, rec.Reason)
		if err := cw.Write(line); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
