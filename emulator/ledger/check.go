package ledger

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
)

// CheckConfig is what the history checker needs to know of the run.
type CheckConfig struct {
	// End is the emulated time the run ended at; ClientTimeout is
	// jobs.client_timeout.
	End, ClientTimeout time.Duration
	// Aborted runs stopped early (emulator.aborted): a completion the
	// client has not heard of yet is not held against them.
	Aborted bool
	// Duplicating says links duplicated messages (link.duplicate or a
	// duplicate fault): a duplicated assignment may start a second copy
	// before its owner cancels one, with no recovery step to explain it.
	Duplicating bool
	// FalseSuspicion says the run's failure detectors could suspect live
	// peers: the emulator fell behind its time scale (kept_up failed), so
	// owners took run nodes that were only late for failed. A job may
	// then complete a second time after a recovery step — a duplicate the
	// ledger counts (jobs.duplicated) and the outcome (overloaded)
	// explains — without a broken state machine. Without a recovery step
	// before it, a second completion is still a violation.
	FalseSuspicion bool
}

// Check verifies every job's history against the job's state machine
// (docs/ARCHITECTURE.md principle 8; docs/JOBS.md, "Accounting"). The events
// are the job cores' jobs.EventKind, taken in time order (at equal times
// the client's resubmitted and submitted first, its result, duplicate
// result and failure last: actors report concurrently, so the ledger may
// receive an effect before its cause). A copy of a job is what one run
// node holds of it.
//
// The client (submitted, resubmitted, result, failed):
//   - a history starts with submitted; resubmitted (followed by its
//     submitted) comes only while the job has not ended: submitted =
//     resubmitted + 1;
//   - the job ends at most once: one result or one failed, never both;
//     failed carries a reason; a result follows a completed (the client
//     hears "done" only of a job some run node completed);
//   - nothing is submitted after the job ended.
//
// Owners (owned, adopted, disowned, rematched, returned, pushed,
// balloon_matched, route_drop): any time after the submission; rematched
// and disowned only after some node owned or adopted the job, adopted
// only after some run node had a copy (an adoption starts at a copy).
//
// Each run node's copy: queued, migrated (received from a neighbor) or
// migration_returned (taken back) make a copy there; then started once;
// then completed, or cancelled (queued or running), or returned (its node
// left). Illegal: started without a copy, or while the copy already runs;
// completed without having started; cancelled without a copy; any new
// copy (queued, migrated, started) at a node that completed the job — a
// run node never runs a job it ran to the end. A copy that migrates away
// leaves no event at its sender, so a sender's copy is not ended by it.
//
// Across copies: the job completes at most once — completed twice is a
// job that ran twice (the ledger's duplicated). A second copy may start
// while another runs only after a recovery step that presumed a copy lost
// or merged two owners' views (rematched, returned, resubmitted,
// migration_returned, adopted, disowned), or on duplicating links; such a
// copy must be cancelled or the run end before it completes. A copy that
// starts after another completed is legal on the same terms (its owner
// had not heard yet); its completion is not.
//
// At the end: a job that completed ends with a result, unless the run
// ended before the client could hear (within 3 client timeouts of the
// end, or the run was aborted). A job the client recorded failed did not
// complete — unless the verdict could not know of a live copy: the client
// gave up after its attempts, or a recovery step came before the failure
// (a re-match during a partition finds no capable node on its side while
// the first copy, cut off, runs on; its run is wasted, the job counts
// failed). A job that has not ended is unfinished — whether some live
// peer still holds it is the ledger's Tally (lost), not this check's.
//
// A history cut at the ledger's bound (HistoryDropped) is checked as far
// as it goes; the record's counts (completions, outcome) still are.
//
// Check returns nil, or a *CheckError listing the jobs that broke a rule,
// each with its whole history.
func Check(recs []Record, cfg CheckConfig) error {
	var errs CheckError
	for i := range recs {
		if problems := checkJob(&recs[i], cfg); len(problems) > 0 {
			errs.Violations = append(errs.Violations, Violation{Job: recs[i].ID, Problems: problems, History: ordered(recs[i].History), Dropped: recs[i].HistoryDropped})
		}
	}
	errs.Jobs = len(recs)
	if len(errs.Violations) == 0 {
		return nil
	}
	return &errs
}

// Violation is a job whose history broke the state machine.
type Violation struct {
	Job      uint64
	Problems []string
	History  []Step // in the order checked
	Dropped  int    // steps past the ledger's bound
}

// CheckError lists the jobs whose histories broke the state machine.
type CheckError struct {
	Jobs       int // checked
	Violations []Violation
}

// maxShown bounds the histories an error prints.
const maxShown = 5

func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d job histories break the job state machine", len(e.Violations), e.Jobs)
	for i, v := range e.Violations {
		if i == maxShown {
			fmt.Fprintf(&b, "\n(%d more)", len(e.Violations)-maxShown)
			break
		}
		fmt.Fprintf(&b, "\njob %d: %s\n%s", v.Job, strings.Join(v.Problems, "; "), FormatHistory(v.History))
		if v.Dropped > 0 {
			fmt.Fprintf(&b, "\n  … %d more steps not kept", v.Dropped)
		}
	}
	return b.String()
}

// FormatHistory prints a history one step a line: emulated seconds, event,
// the node it happened at, the other node named, the reason.
func FormatHistory(h []Step) string {
	var b strings.Builder
	for i, s := range h {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %12.3f s  %-18s node %d", s.At.Seconds(), s.Event, s.Peer)
		if s.Other != 0 {
			fmt.Fprintf(&b, "  other %d", s.Other)
		}
		if s.Reason != "" {
			fmt.Fprintf(&b, "  (%s)", s.Reason)
		}
	}
	return b.String()
}

// rank orders steps at equal times: a cause before its effect.
func rank(event string) int {
	switch event {
	case jobs.EvResubmitted.String():
		return 0
	case jobs.EvSubmitted.String():
		return 1
	case jobs.EvResult.String(), jobs.EvDuplicateResult.String(), jobs.EvFailed.String():
		return 3
	}
	return 2
}

// ordered is a history in time order (stable: a node's own steps keep
// their order).
func ordered(h []Step) []Step {
	o := slices.Clone(h)
	slices.SortStableFunc(o, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(rank(a.Event), rank(b.Event)))
	})
	return o
}

// runCopy is one run node's copy of a job.
type runCopy struct {
	present, running, completed bool
}

// checkJob runs one job's history through the state machine (Check).
func checkJob(r *Record, cfg CheckConfig) []string {
	var problems []string
	bad := func(s Step, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("at %.3f s: ", s.At.Seconds())+fmt.Sprintf(format, args...))
	}
	copies := map[core.NodeID]*runCopy{}
	at := func(id core.NodeID) *runCopy {
		c := copies[id]
		if c == nil {
			c = &runCopy{}
			copies[id] = c
		}
		return c
	}
	var submitted, resubmitted, completions int
	var outcome string
	var completedAt time.Duration
	owned, copied, recovery := false, false, false
	blindFailure := false // the failure could not know of a live copy
	for i, s := range ordered(r.History) {
		if i == 0 && s.Event != jobs.EvSubmitted.String() {
			bad(s, "the history starts with %s, not with the job's submission", s.Event)
		}
		c := at(s.Peer)
		switch s.Event {
		case jobs.EvSubmitted.String():
			if outcome != "" {
				bad(s, "submitted after it ended (%s)", outcome)
			}
			submitted++
		case jobs.EvResubmitted.String():
			if outcome != "" {
				bad(s, "resubmitted after it ended (%s)", outcome)
			}
			resubmitted++
			recovery = true
		case jobs.EvOwned.String():
			owned = true
		case jobs.EvAdopted.String():
			if !copied {
				bad(s, "adopted before any run node had a copy")
			}
			owned, recovery = true, true
		case jobs.EvDisowned.String(), jobs.EvRematched.String():
			if !owned {
				bad(s, "%s before any node owned it", s.Event)
			}
			recovery = true
		case jobs.EvReturned.String():
			// The run node named left: its copy is gone.
			*at(s.Other) = runCopy{completed: at(s.Other).completed}
			recovery = true
		case jobs.EvQueued.String(), jobs.EvMigrated.String(), jobs.EvMigrationReturned.String():
			if c.completed {
				bad(s, "%s at node %d, which had completed it", s.Event, s.Peer)
			}
			c.present, copied = true, true
			if s.Event == jobs.EvMigrationReturned.String() {
				recovery = true
			}
		case jobs.EvStarted.String():
			switch {
			case c.completed:
				bad(s, "started again at node %d, which had completed it", s.Peer)
			case !c.present:
				bad(s, "started at node %d, which had no copy", s.Peer)
			case c.running:
				bad(s, "started twice at node %d", s.Peer)
			}
			if !recovery && !cfg.Duplicating {
				for id, o := range copies {
					if id != s.Peer && o.running {
						bad(s, "a second copy started at node %d while node %d ran one, with no recovery step before", s.Peer, id)
						break
					}
				}
			}
			c.present, c.running = true, true
		case jobs.EvCompleted.String():
			if !c.running {
				bad(s, "completed at node %d, where it was not running", s.Peer)
			}
			completions++
			switch {
			case completions == 1:
				completedAt = s.At
			case !(cfg.FalseSuspicion && recovery):
				bad(s, "completed a second time (it ran twice)")
			}
			*c = runCopy{completed: true}
		case jobs.EvCancelled.String():
			if !c.present {
				bad(s, "cancelled at node %d, which had no copy", s.Peer)
			}
			c.present, c.running = false, false
		case jobs.EvResult.String(), jobs.EvFailed.String():
			if outcome != "" {
				bad(s, "ended twice (%s, then %s)", outcome, s.Event)
				break
			}
			outcome = s.Event
			if s.Event == jobs.EvFailed.String() {
				if s.Reason == "" {
					bad(s, "failed without a reason")
				}
				blindFailure = recovery || s.Reason == jobs.ReasonGaveUp
			}
			if s.Event == jobs.EvResult.String() && completions == 0 {
				bad(s, "the client has a result, but no run node completed the job")
			}
		}
	}
	last := Step{At: cfg.End}
	full := r.HistoryDropped == 0
	if full && len(r.History) > 0 && submitted != resubmitted+1 {
		bad(last, "%d submissions for %d resubmissions", submitted, resubmitted)
	}
	if r.Completions > 1 && completions < 2 && !(cfg.FalseSuspicion && recovery) {
		// The second completion lies beyond the history's cap.
		bad(last, "completed %d times (it ran %d times)", r.Completions, r.Completions)
	}
	switch {
	case full && r.Ended && r.Failed && r.Completions > 0 && !blindFailure:
		bad(last, "the client recorded it failed (%s), but a run node completed it", r.Reason)
	case !r.Ended && r.Completions > 0 && !cfg.Aborted && cfg.End-max(completedAt, r.CompletedAt) > 3*cfg.ClientTimeout:
		bad(last, "completed at %.3f s, and the client had not heard of it by the end", max(completedAt, r.CompletedAt).Seconds())
	}
	if full && (outcome != "") != r.Ended {
		bad(last, "the record says ended %v, its history %q", r.Ended, outcome)
	}
	return problems
}
