package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
)

const tClient core.NodeID = 1 << 40

// st is one step of a test history: at seconds, kind, where, the other
// node, the reason.
type st struct {
	at     float64
	kind   jobs.EventKind
	peer   core.NodeID
	other  core.NodeID
	reason string
}

// tHistory feeds job 1's steps to a ledger, in the order given (as actors
// report them), and returns its record.
func tHistory(steps ...st) Record {
	l := New(nil, nil)
	for _, s := range steps {
		peer := s.peer
		switch s.kind {
		case jobs.EvSubmitted, jobs.EvResubmitted, jobs.EvResult, jobs.EvDuplicateResult, jobs.EvFailed:
			peer = tClient
		}
		l.JobEvent(time.Duration(s.at*float64(time.Second)), jobs.Event{Kind: s.kind, Job: 1, Peer: peer, Other: s.other, Reason: s.reason})
	}
	recs, _ := l.Records()
	return recs[0]
}

var tCfg = CheckConfig{End: 10 * time.Hour, ClientTimeout: 10 * time.Minute}

// The normal path and every recovery path the job cores take, in
// histories as the runs record them: legal.
func TestCheckAcceptsLegalHistories(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   CheckConfig
		steps []st
	}{
		{"completed", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {1, jobs.EvPushed, 5, 0, ""},
			{2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""}, {60, jobs.EvCompleted, 7, 5, ""}, {60, jobs.EvResult, 0, 7, ""}}},
		// Reported out of order by concurrent actors: the owner's event
		// before the client's, the result before the completion.
		{"reported-out-of-order", tCfg, []st{
			{1, jobs.EvOwned, 5, 0, ""}, {0, jobs.EvSubmitted, 0, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{60, jobs.EvResult, 0, 7, ""}, {60, jobs.EvCompleted, 7, 5, ""}}},
		{"failed", tCfg, []st{{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {1, jobs.EvFailed, 0, 5, jobs.ReasonNoCapableNode}}},
		{"unfinished", tCfg, []st{{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""}}},
		// Completed shortly before the end: the client may not have heard.
		{"completed-at-the-end", tCfg, []st{{0, jobs.EvSubmitted, 0, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""}, {35000, jobs.EvCompleted, 7, 5, ""}}},
		// The run node went silent (a partition): the owner re-matched, both
		// copies ran until the sides met and one was cancelled.
		{"rematched", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{100, jobs.EvRematched, 5, 7, "run node silent"}, {101, jobs.EvQueued, 8, 5, ""}, {101, jobs.EvStarted, 8, 5, ""},
			{300, jobs.EvCancelled, 7, 5, ""}, {400, jobs.EvCompleted, 8, 5, ""}, {400, jobs.EvResult, 0, 8, ""}}},
		// The client resubmitted: a second owner placed a second copy; the
		// first completed before they met (a later start is a race, not a
		// second run), the second was cancelled.
		{"resubmitted", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{5, jobs.EvDisowned, 5, 7, ""}, {6, jobs.EvRouteDrop, 7, 0, ""},
			{700, jobs.EvResubmitted, 0, 0, ""}, {700, jobs.EvSubmitted, 0, 0, ""}, {701, jobs.EvOwned, 9, 0, ""}, {701, jobs.EvQueued, 8, 9, ""},
			{800, jobs.EvCompleted, 7, 5, ""}, {800, jobs.EvResult, 0, 7, ""}, {801, jobs.EvStarted, 8, 9, ""}, {900, jobs.EvCancelled, 8, 9, ""},
			{900, jobs.EvDuplicateResult, 0, 9, ""}}},
		// A migration the sender took back while the receiver had it too.
		{"migration-taken-back", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""},
			{50, jobs.EvMigrated, 8, 7, jobs.MechInternodePush}, {51, jobs.EvStarted, 8, 5, ""},
			{150, jobs.EvMigrationReturned, 7, 8, jobs.MechInternodePush}, {150, jobs.EvStarted, 7, 5, ""},
			{160, jobs.EvCancelled, 7, 5, ""}, {400, jobs.EvCompleted, 8, 5, ""}, {401, jobs.EvResult, 0, 8, ""}}},
		// A run node left: the job came back and was placed again; its
		// owner crashed: the point's new owner adopted it.
		{"returned-then-adopted", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{50, jobs.EvReturned, 5, 7, ""}, {50, jobs.EvRematched, 5, 7, "run node left"}, {51, jobs.EvQueued, 8, 5, ""}, {51, jobs.EvStarted, 8, 5, ""},
			{200, jobs.EvAdopted, 9, 8, ""}, {400, jobs.EvCompleted, 8, 9, ""}, {400, jobs.EvResult, 0, 8, ""}}},
		// A duplicated assignment on a duplicating link: two copies start
		// with no recovery step; the owner cancels one.
		{"duplicating-links", CheckConfig{End: tCfg.End, ClientTimeout: tCfg.ClientTimeout, Duplicating: true}, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{2, jobs.EvQueued, 8, 5, ""}, {2, jobs.EvStarted, 8, 5, ""}, {3, jobs.EvCancelled, 8, 5, ""},
			{60, jobs.EvCompleted, 7, 5, ""}, {60, jobs.EvResult, 0, 7, ""}}},
		// A re-match during a partition found no capable node on its side:
		// the job failed, and the first copy, cut off, ran on.
		{"failed-while-cut-off", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{100, jobs.EvRematched, 5, 7, "run node silent"}, {100, jobs.EvFailed, 0, 6, jobs.ReasonNoCapableNode},
			{500, jobs.EvCompleted, 7, 5, ""}}},
		// The owner took a live run node for failed, matched the job again
		// and cancelled the copy it left; that copy's run node was moving
		// it to a neighbor, which reported it and had it cancelled too.
		{"abandoned-copy-in-transfer", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""},
			{100, jobs.EvRematched, 5, 7, "run node silent"}, {100, jobs.EvQueued, 9, 5, ""}, {100, jobs.EvStarted, 9, 5, ""},
			{101, jobs.EvMigrated, 8, 7, jobs.MechInternodePush}, {101, jobs.EvStarted, 8, 5, ""},
			{102, jobs.EvCancelled, 7, 5, ""}, {103, jobs.EvCancelled, 8, 5, ""},
			{400, jobs.EvCompleted, 9, 5, ""}, {400, jobs.EvResult, 0, 9, ""}}},
		// A re-match found no capable node: the job failed, and the copy
		// the owner abandoned was cancelled after the failure.
		{"failed-then-abandoned-copy-cancelled", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{100, jobs.EvRematched, 5, 7, "run node silent"}, {100, jobs.EvFailed, 0, 5, jobs.ReasonNoCapableNode},
			{150, jobs.EvCancelled, 7, 5, ""}}},
		// An emulator that fell behind its time scale (kept_up failed): the
		// owner took its live but late run node for failed and re-matched;
		// both copies completed. A duplicate the ledger counts, explained
		// by the overload — not a broken state machine.
		{"ran-twice-under-false-suspicion", CheckConfig{End: 10 * time.Hour, ClientTimeout: 10 * time.Minute, FalseSuspicion: true}, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{100, jobs.EvRematched, 5, 7, "run node silent"}, {100, jobs.EvQueued, 9, 5, ""}, {100, jobs.EvStarted, 9, 5, ""},
			{400, jobs.EvCompleted, 7, 5, ""}, {400, jobs.EvResult, 0, 7, ""}, {450, jobs.EvCompleted, 9, 5, ""}}},
		// The client gave up; a copy it could not hear of completed later.
		{"gave-up", tCfg, []st{
			{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
			{700, jobs.EvFailed, 0, 0, jobs.ReasonGaveUp}, {800, jobs.EvCompleted, 7, 5, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check([]Record{tHistory(tc.steps...)}, tc.cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Each rule, broken once: the error names the problem and prints the
// whole history.
func TestCheckRejectsIllegalHistories(t *testing.T) {
	base := []st{{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""}}
	with := func(steps ...st) []st { return append(append([]st(nil), base...), steps...) }
	for _, tc := range []struct {
		name, want string
		steps      []st
	}{
		// Two owners placed copies (a resubmission beside an orphaned
		// copy) and both ran to the end.
		{"ran-twice", "completed a second time (it ran twice)", with(
			st{700, jobs.EvResubmitted, 0, 0, ""}, st{700, jobs.EvSubmitted, 0, 0, ""}, st{701, jobs.EvOwned, 9, 0, ""},
			st{701, jobs.EvQueued, 8, 9, ""}, st{701, jobs.EvStarted, 8, 9, ""},
			st{3602, jobs.EvCompleted, 7, 5, ""}, st{3602, jobs.EvResult, 0, 7, ""}, st{4301, jobs.EvCompleted, 8, 9, ""})},
		{"second-copy-unexplained", "a second copy started at node 8 while node 7 ran one", with(
			st{3, jobs.EvQueued, 8, 5, ""}, st{3, jobs.EvStarted, 8, 5, ""})},
		{"start-without-copy", "started at node 8, which had no copy", with(st{3, jobs.EvRematched, 5, 7, "x"}, st{4, jobs.EvStarted, 8, 5, ""})},
		{"started-twice", "started twice at node 7", with(st{3, jobs.EvStarted, 7, 5, ""})},
		{"completed-not-running", "completed at node 8, where it was not running", with(st{3, jobs.EvCompleted, 8, 5, ""})},
		{"rerun-at-completer", "queued at node 7, which had completed it", with(
			st{60, jobs.EvCompleted, 7, 5, ""}, st{61, jobs.EvQueued, 7, 5, ""})},
		{"cancel-without-copy", "cancelled at node 8, which had no copy", with(st{3, jobs.EvCancelled, 8, 5, ""})},
		{"result-without-completion", "no run node completed the job", with(st{3, jobs.EvResult, 0, 5, ""})},
		{"ended-twice", "ended twice", with(st{60, jobs.EvCompleted, 7, 5, ""}, st{61, jobs.EvResult, 0, 7, ""}, st{62, jobs.EvFailed, 0, 5, "x"})},
		{"failed-without-reason", "failed without a reason", with(st{3, jobs.EvFailed, 0, 5, ""})},
		{"submitted-after-end", "resubmitted after it ended", with(
			st{60, jobs.EvCompleted, 7, 5, ""}, st{61, jobs.EvResult, 0, 7, ""}, st{800, jobs.EvResubmitted, 0, 0, ""}, st{800, jobs.EvSubmitted, 0, 0, ""})},
		{"failed-yet-ran", "recorded it failed (no capable node found), but a run node completed it", with(
			st{3, jobs.EvFailed, 0, 5, jobs.ReasonNoCapableNode}, st{60, jobs.EvCompleted, 7, 5, ""})},
		{"client-never-heard", "the client had not heard of it by the end", with(st{60, jobs.EvCompleted, 7, 5, ""})},
		{"not-started-by-submission", "starts with owned", []st{{1, jobs.EvOwned, 5, 0, ""}}},
		{"rematched-unowned", "rematched before any node owned it", []st{{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvRematched, 5, 0, "x"}}},
		{"adopted-no-copy", "adopted before any run node had a copy", []st{{0, jobs.EvSubmitted, 0, 0, ""}, {1, jobs.EvAdopted, 5, 7, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]Record{tHistory(tc.steps...)}, tCfg)
			var ce *CheckError
			if !errors.As(err, &ce) || len(ce.Violations) != 1 || ce.Jobs != 1 {
				t.Fatalf("want one violation, got %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error does not say %q:\n%s", tc.want, msg)
			}
			// The whole history, a line per step with time, event and node.
			if n := strings.Count(msg, "\n") - 1; n != len(tc.steps) {
				t.Fatalf("%d history lines for %d steps:\n%s", n, len(tc.steps), msg)
			}
			if !strings.Contains(msg, "job 1: ") || !strings.Contains(msg, "       0.000 s  submitted") && tc.steps[0].kind == jobs.EvSubmitted {
				t.Fatalf("history not printed:\n%s", msg)
			}
		})
	}
}

// A history cut at the ledger's bound is checked as far as it goes, and
// by the record's counts beyond; the error says steps were not kept.
func TestCheckTruncatedHistory(t *testing.T) {
	l := New(nil, nil)
	l.keepHistory = 6
	at := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	for _, s := range []st{
		{0, jobs.EvSubmitted, tClient, 0, ""}, {1, jobs.EvOwned, 5, 0, ""}, {2, jobs.EvQueued, 7, 5, ""}, {2, jobs.EvStarted, 7, 5, ""},
		{3, jobs.EvRematched, 5, 7, "x"}, {4, jobs.EvQueued, 8, 5, ""}, {4, jobs.EvStarted, 8, 5, ""},
		{60, jobs.EvCompleted, 7, 5, ""}, {61, jobs.EvResult, tClient, 7, ""}, {62, jobs.EvCompleted, 8, 5, ""},
	} {
		l.JobEvent(at(s.at), jobs.Event{Kind: s.kind, Job: 1, Peer: s.peer, Other: s.other, Reason: s.reason})
	}
	recs, _ := l.Records()
	if recs[0].HistoryDropped != 4 || len(recs[0].History) != 6 {
		t.Fatalf("history %d steps, %d dropped", len(recs[0].History), recs[0].HistoryDropped)
	}
	err := Check(recs, tCfg)
	if err == nil || !strings.Contains(err.Error(), "completed 2 times") || !strings.Contains(err.Error(), "4 more steps not kept") {
		t.Fatalf("want the second completion found from the record: %v", err)
	}
}

// Many offending jobs: the first few are shown in full, the rest counted.
func TestCheckErrorBounded(t *testing.T) {
	var recs []Record
	for i := 0; i < maxShown+3; i++ {
		r := tHistory(st{1, jobs.EvOwned, 5, 0, ""})
		r.ID = uint64(i + 1)
		recs = append(recs, r)
	}
	recs = append(recs, tHistory(st{0, jobs.EvSubmitted, 0, 0, ""}))
	err := Check(recs, tCfg)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "8 of 9 job histories break") || strings.Count(msg, "\njob ") != maxShown || !strings.Contains(msg, "(3 more)") {
		t.Fatalf("error:\n%s", msg)
	}
}
