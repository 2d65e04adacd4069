package jobs

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

// An owner that finds a run node silent matches the job again (003 §4.1);
// when the run node is alive — its reports lost or late, a latency spike,
// an emulator that falls behind — its copy runs on. The owner follows one
// copy, so before the fix a copy it left behind was cancelled only if its
// run node reported in before it finished, and both completed (seen in
// TestJobsOverNATS under -race). Now the owner cancels every copy it
// abandons and remembers them, so that a late word from any of them is
// reconciled (docs/JOBS.md, "Recovery").

// tSilentWorld: owner S (1), which cannot run job 7 and is also the
// injection node, with three free capable neighbors U0, U1, U2 (10-12, all
// speed 1: S places the job on U0, then U1, then U2, then the least
// loaded); their routes to the job's point lead to S. The client's
// timeout is long enough that it never resubmits. lost says which
// messages a run node sends S are lost.
func tSilentWorld(t *testing.T, work time.Duration, lost func(from core.NodeID, m proto.Message) bool) *tWorld {
	w := &tWorld{net: newTNet(t), views: map[core.NodeID]*fakeView{}, inject: idS}
	s := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
	for i, id := range []core.NodeID{idU0, idU1, idU2} {
		z := []func() can.Zone{zUp0, zUp1, zUp2}[i]()
		s.nbs = append(s.nbs, tNb(id, z, tLoad(0, 1, 1, pCap(uint32(i+1)))))
		w.add(&fakeView{id: id, zone: z, point: pCap(uint32(i + 1)), next: idS}, Config{Scheme: SchemeCAN})
	}
	w.add(s, Config{Scheme: SchemeCAN})
	w.net.Drop = func(m testnet.Msg[core.NodeID]) bool {
		return m.To == idS && m.From != idS && m.From != tClientID && lost(m.From, m.Msg)
	}
	w.net.setClient(NewClient(tClientID, ClientConfig{Timeout: 6 * time.Hour}, func() core.NodeID { return w.inject }))
	w.net.client.Submit(time.Second, &wire.JobSpec{Id: 7, Req: tReq(), Work: int64(work)})
	w.net.start(time.Second, tClientID)
	return w
}

// tCompletedOnce checks that job 7 completed exactly once, at node at (0:
// anywhere), that the client heard one result and no duplicate, and that
// nothing is left anywhere.
func tCompletedOnce(t *testing.T, w *tWorld, at core.NodeID) {
	t.Helper()
	done := tEvents(Ready{Events: w.net.events}, EvCompleted)
	if len(done) != 1 || at != 0 && done[0].Peer != at {
		t.Fatalf("completions %+v, want exactly one (at %d):%s", done, at, w.history())
	}
	if w.count(EvResult) != 1 || w.count(EvDuplicateResult) != 0 || w.net.client.Open() != 0 {
		t.Fatalf("client: %d results, %d duplicate results, %v open:%s", w.count(EvResult), w.count(EvDuplicateResult), w.net.client.OpenIDs(), w.history())
	}
	for id, n := range w.net.nodes {
		if s := n.Snapshot(); len(s.Owned)+len(s.Held)+len(s.Done) != 0 {
			t.Errorf("node %d still holds %+v", id, s)
		}
	}
}

// TestRematchCancelsCopyOfSilentRunNode: U0 runs job 7 (one hour) but
// nothing it sends S gets through from the second minute on — neither
// its heartbeats nor, when it takes S for silent in turn, its adoptions
// (the route_drops of the example). S matches the job again on U1. U0 is
// alive: before the fix it ran its copy to the end, told the client, and
// U1's copy completed too. Now S's re-match cancels U0's copy.
func TestRematchCancelsCopyOfSilentRunNode(t *testing.T) {
	lost := false
	w := tSilentWorld(t, time.Hour, func(from core.NodeID, _ proto.Message) bool { return lost && from == idU0 })
	w.net.RunUntil(2 * time.Minute)
	lost = true
	w.net.RunUntil(90 * time.Minute)
	if w.count(EvRematched) != 1 {
		t.Fatalf("rematched %d times, want once (run node silent):%s", w.count(EvRematched), w.history())
	}
	lost = false // U0's word gets through again: too late to matter
	w.net.RunUntil(5 * time.Hour)
	tCompletedOnce(t, w, idU1)
	if c := tEvents(Ready{Events: w.net.events}, EvCancelled); len(c) != 1 || c[0].Peer != idU0 || c[0].Other != idS {
		t.Fatalf("cancellations %+v, want U0's copy, by S:%s", c, w.history())
	}
}

// TestRepeatedRematchesLeaveOneCopy: every run node's word to S is lost
// for 70 minutes (a one-hour job), so S matches the job again and again —
// U0, U1, U2, then round again. Before the fix each of U0, U1 and U2 ran
// a copy to the end (the job ran three times; the example's job 46 ran
// four times). Now each re-match cancels the copy it leaves, and exactly
// one copy completes, after the silence. With "reports-lost" S hears the
// run nodes' JobQueued (it re-matches "run node silent"); with "all-lost"
// it hears nothing from them (it re-matches "matchmaking timed out", and
// cancels the assignment it made itself).
func TestRepeatedRematchesLeaveOneCopy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lost   func(m proto.Message) bool
		reason string
	}{
		{"reports-lost", func(m proto.Message) bool { _, q := m.(*wire.JobQueued); return !q }, "run node silent"},
		{"all-lost", func(proto.Message) bool { return true }, "matchmaking timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost := false
			w := tSilentWorld(t, time.Hour, func(from core.NodeID, m proto.Message) bool { return lost && tc.lost(m) })
			w.net.RunUntil(time.Minute)
			lost = true
			w.net.RunUntil(70 * time.Minute)
			lost = false
			w.net.RunUntil(6 * time.Hour)
			rs := tEvents(Ready{Events: w.net.events}, EvRematched)
			n := 0
			for _, e := range rs {
				if e.Reason == tc.reason {
					n++
				}
			}
			if n < 4 {
				t.Fatalf("%d re-matches %q, want at least 4:%s", n, tc.reason, w.history())
			}
			tCompletedOnce(t, w, 0)
		})
	}
}

// TestAbandonedFinishedCopyReportsItsCompletion: U0 finished job 7 just
// before S took it for silent (its heartbeats, the completion among them,
// are lost for a while); S matches the job again on U1 and, a minute
// later, places job 8 on U0, so S's owner heartbeats reach U0 again —
// listing job 8 only. Before the fix U0 took that for the
// acknowledgement of job 7 and forgot it, and U1 ran job 7 a second time.
// Now S's cancel of the abandoned copy is answered with the completion,
// and S lists the abandoned copy to U0 until it hears of it: U0 keeps
// reporting job 7 done until S has it, and S cancels U1's copy.
func TestAbandonedFinishedCopyReportsItsCompletion(t *testing.T) {
	lost := false
	w := tSilentWorld(t, 10*time.Minute, func(from core.NodeID, m proto.Message) bool {
		_, hb := m.(*wire.RunHeartbeat)
		return lost && from == idU0 && hb
	})
	w.net.RunUntil(9*time.Minute + 55*time.Second)
	lost = true
	w.net.RunUntil(11 * time.Minute)
	if w.count(EvRematched) != 1 || w.count(EvCompleted) != 1 {
		t.Fatalf("the scenario did not happen (rematched %d, completed %d):%s", w.count(EvRematched), w.count(EvCompleted), w.history())
	}
	// U0 is free again as its overlay heartbeat tells S: job 8 goes there.
	w.views[idS].nb(idU0).Load = tLoad(0, 1, 1, pCap(1))
	w.net.client.Submit(11*time.Minute, &wire.JobSpec{Id: 8, Req: tReq(), Work: int64(time.Hour)})
	w.net.start(11*time.Minute, tClientID)
	if q := tEvents(Ready{Events: w.net.events}, EvQueued); q[len(q)-1].Job != 8 || q[len(q)-1].Peer != idU0 {
		t.Fatalf("job 8 queued %+v, want at U0:%s", q[len(q)-1], w.history())
	}
	w.net.RunUntil(11*time.Minute + 5*time.Second) // S's owner heartbeat, listing job 8, reached U0
	lost = false
	w.net.RunUntil(4 * time.Hour)
	var done7 []Event
	for _, e := range tEvents(Ready{Events: w.net.events}, EvCompleted) {
		if e.Job == 7 {
			done7 = append(done7, e)
		}
	}
	if len(done7) != 1 || done7[0].Peer != idU0 {
		t.Fatalf("job 7 completed %+v, want once, at U0:%s", done7, w.history())
	}
	if w.count(EvDuplicateResult) != 0 || w.net.client.Open() != 0 {
		t.Fatalf("client: %d duplicate results, %v open:%s", w.count(EvDuplicateResult), w.net.client.OpenIDs(), w.history())
	}
}

// A copy's word sent before the owner's cancel reached it may arrive
// while the owner matches the job again: the owner must not take up the
// copy it cancelled (it would follow a copy about to vanish, and cancel
// the new one), but the new copy; the old one is cancelled again.
func TestAbandonedCopyIsNotTakenUpAgain(t *testing.T) {
	o, _ := tOwner(t) // job 7 assigned to U0, epoch 1
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	tDrain(o)
	now := tTimeout + 2*time.Second
	o.Tick(now, core.TimerJobs)
	r := tDrain(o)
	if c := tOne[*wire.JobCancel](t, r, idU0); c.Job.GetId() != 7 || c.Job.GetEpoch() != 1 || c.Job.GetMoves() != 0 {
		t.Fatalf("cancel of the abandoned copy %v", c)
	}
	tOne[*wire.JobAssign](t, r, idU1)
	// U0's heartbeat, sent before the cancel arrived.
	o.Step(now, idU0, &wire.RunHeartbeat{Held: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	if c := tOne[*wire.JobCancel](t, tDrain(o), idU0); c.Job.GetEpoch() != 1 {
		t.Fatalf("cancel %v", c)
	}
	// So does a copy that migrated on from U0 meanwhile.
	o.Step(now, idL0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1, Moves: 1}})
	if c := tOne[*wire.JobCancel](t, tDrain(o), idL0); c.Job.GetMoves() != 1 {
		t.Fatalf("cancel %v", c)
	}
	// The new copy is followed.
	o.Step(now+time.Second, idU1, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 2}})
	tNone[*wire.JobCancel](t, tDrain(o))
	o.Tick(now+tPeriod, core.TimerJobs)
	if hb := tOne[*wire.OwnerHeartbeat](t, tDrain(o), idU1); !slices.Equal(tIDs(hb.Jobs), []uint64{7}) {
		t.Fatalf("owner heartbeat %v", hb)
	}
	// A copy U0 hands back as it leaves is gone: nothing to match again.
	o.Step(now+tPeriod+time.Second, idU0, &wire.JobReturn{Jobs: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	r = tDrain(o)
	if len(tEvents(r, EvRematched))+len(tEvents(r, EvReturned)) != 0 {
		t.Fatalf("an abandoned copy handed back: %+v %s", r.Events, tMsgString(r))
	}
	// The job completes on U1: the copy S abandoned that was not handed
	// back (at L0) is cancelled again.
	o.Step(2*time.Hour, idU1, &wire.RunHeartbeat{Done: []*wire.JobRef{{Id: 7, Epoch: 2}}})
	r = tDrain(o)
	if c := tOne[*wire.JobCancel](t, r, idL0); c.Job.GetEpoch() != 1 || c.Job.GetMoves() != 1 {
		t.Fatalf("cancel at completion %v", c)
	}
}

// A run node told by the owner it reports to that its copy is cancelled,
// after it finished the job, reports the completion (the owner matched the
// job again without hearing of it) and keeps it until the owner's
// heartbeat acknowledges it; a cancel from another node (an adopter)
// still acknowledges it.
func TestCancelOfFinishedCopyReportsCompletion(t *testing.T) {
	n, _ := tHeld(t, false) // job 7 of owner 1, epoch 3
	n.Tick(time.Hour, core.TimerRunDone)
	tDrain(n)
	n.Step(time.Hour+time.Second, 1, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 3}})
	r := tDrain(n)
	if hb := tOne[*wire.RunHeartbeat](t, r, 1); !slices.Equal(tRefs(hb.Done), [][2]uint64{{7, 3}}) {
		t.Fatalf("answer %v, want job 7 done", hb)
	}
	if len(r.Events) != 0 || !slices.Equal(n.Snapshot().Done, []uint64{7}) {
		t.Fatalf("events %+v, done %v", r.Events, n.Snapshot().Done)
	}
	n.Step(time.Hour+2*time.Second, 1, &wire.OwnerHeartbeat{})
	if d := n.Snapshot().Done; len(d) != 0 {
		t.Fatalf("done %v after the acknowledgement", d)
	}

	n, _ = tHeld(t, false)
	n.Tick(time.Hour, core.TimerRunDone)
	tDrain(n)
	n.Step(time.Hour+time.Second, 9, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 3}})
	tNone[*wire.RunHeartbeat](t, tDrain(n))
	if d := n.Snapshot().Done; len(d) != 0 {
		t.Fatalf("done %v after an adopter's acknowledgement", d)
	}
}

// A cancel that reaches a copy while its run node is moving it to a
// neighbor (sent, not yet acknowledged) drops the transfer: it is neither
// resent nor taken back.
func TestCancelDropsCopyInTransfer(t *testing.T) {
	n, _ := tRunNode(Config{})
	n.Step(0, 1, tAssign(5, time.Hour, 1, 1)) // runs
	n.Step(0, 1, tAssign(7, time.Hour, 1, 2)) // waits
	tDrain(n)
	h := n.holding(7)
	n.transfer(time.Second, h, idU1, wire.MigrateKind_MIGRATE_INTERNODE, false)
	tOne[*wire.MigrateJob](t, tDrain(n), idU1)
	n.Step(2*time.Second, 1, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 2}})
	r := tDrain(n)
	if e := tOneEvent(t, r, EvCancelled); e.Job != 7 {
		t.Fatalf("cancelled %+v", e)
	}
	if s := n.Snapshot(); !slices.Equal(s.Held, []uint64{5}) {
		t.Fatalf("held %v", s.Held)
	}
	for _, at := range []time.Duration{10 * time.Second, time.Minute} {
		n.Tick(at, core.TimerJobs)
		r := tDrain(n)
		tNone[*wire.MigrateJob](t, r)
		if len(tEvents(r, EvMigrationReturned)) != 0 {
			t.Fatalf("taken back at %v", at)
		}
	}
}

// The owner heartbeat that acknowledges a run node's report lists the
// copies the owner abandoned there: a finished one stays reported until
// the owner has heard of it.
func TestOwnerBeatListsAbandonedCopies(t *testing.T) {
	o, v := tOwner(t) // job 7 assigned to U0, epoch 1
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	o.Tick(tTimeout+2*time.Second, core.TimerJobs) // U0 silent: job 7 goes to U1
	tDrain(o)
	v.nb(idU0).Load = tLoad(0, 1, 2, pCap(1)) // U0 is free again
	o.Step(time.Minute, 50, &wire.JobSubmit{Job: tSpec(8, time.Hour)})
	tOne[*wire.JobAssign](t, tDrain(o), idU0)
	o.Step(time.Minute, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 8, Epoch: 1}})
	o.Step(2*time.Hour, idU0, &wire.RunHeartbeat{Done: []*wire.JobRef{{Id: 8, Epoch: 1}}})
	if hb := tOne[*wire.OwnerHeartbeat](t, tDrain(o), idU0); !slices.Equal(tRefs(hb.Jobs), [][2]uint64{{7, 1}}) {
		t.Fatalf("owner heartbeat %v, want job 7's abandoned copy listed", hb)
	}
}

// A run node whose finished job its owner already acknowledged hears
// another owner list the job — an adoption it had routed before the job
// finished, delivered late (seen in TestJobsOverNATS under -race): it
// tells that owner the job is done. Before, it said nothing; the adopter
// found it silent and ran the job again.
func TestRanJobListedLaterReportsDone(t *testing.T) {
	n, _ := tHeld(t, false) // job 7 of owner 1, epoch 3
	n.Tick(time.Hour, core.TimerRunDone)
	tDrain(n)
	n.Step(time.Hour+time.Second, 1, &wire.OwnerHeartbeat{}) // acknowledged
	if d := n.Snapshot().Done; len(d) != 0 {
		t.Fatalf("done %v", d)
	}
	n.Step(time.Hour+time.Minute, 9, &wire.OwnerHeartbeat{Jobs: []*wire.JobRef{{Id: 7, Epoch: 3}, {Id: 8, Epoch: 1}}})
	if hb := tOne[*wire.RunHeartbeat](t, tDrain(n), 9); !slices.Equal(tIDs(hb.Done), []uint64{7}) || len(hb.Held) != 0 {
		t.Fatalf("answer %v, want job 7 done", hb)
	}
}

// A re-match that places the job on the silent run node again reaches it
// before the cancel of the old copy: the run node merges the assignment
// into its copy, which keeps running (its work is not lost), and ignores
// the cancel of the older epoch.
func TestRematchOnSameRunNodeKeepsTheCopy(t *testing.T) {
	o, v := tOwner(t) // job 7 assigned to U0, epoch 1
	u0 := tNew(&fakeView{id: idU0, zone: zUp0(), point: pCap(1)}, Config{}, 10, nil)
	u0.Step(0, idS, &wire.JobAssign{Job: tSpec(7, time.Hour), Owner: uint64(idS), Epoch: 1})
	o.Step(time.Second, idU0, tOne[*wire.JobQueued](t, tDrain(u0), idS))
	tDrain(o)
	v.nbs = []*overlay.Neighbor{tNb(idU0, zUp0(), tLoad(0, 1, 2, pCap(1)))} // only U0 in sight
	o.Tick(tTimeout+2*time.Second, core.TimerJobs)
	r := tDrain(o)
	if len(r.Messages) != 2 {
		t.Fatalf("re-match sent %s, want an assignment and a cancel, to U0", tMsgString(r))
	}
	for _, m := range r.Messages {
		if m.To != idU0 {
			t.Fatalf("message to %d: %s", m.To, tMsgString(r))
		}
		u0.Step(tTimeout+2*time.Second, idS, m.Msg)
	}
	ru := tDrain(u0)
	if len(tEvents(ru, EvCancelled)) != 0 || !slices.Equal(u0.Snapshot().Held, []uint64{7}) {
		t.Fatalf("the copy was cancelled: %+v, held %v", ru.Events, u0.Snapshot().Held)
	}
	if q := tOne[*wire.JobQueued](t, ru, idS); q.Job.GetEpoch() != 2 {
		t.Fatalf("queued %v, want epoch 2", q)
	}
	if h := u0.holding(7); !h.running || h.epoch != 2 {
		t.Fatalf("copy %+v, want running in epoch 2", h)
	}
}

// An owner whose re-match finds no capable node fails the job; the run
// node it took for failed is alive, and before the cancel reaches it, it
// takes the owner for silent in turn and asks the job's point — the same
// owner — to adopt its copy. Before, the owner had forgotten the job and
// adopted it as new: the job the client recorded failed ran on (seen in
// TestJobsOverNATS under -race, where it then ran twice). Now the owner
// remembers the failed job while copies it abandoned may report: it
// cancels the copy and tells the client the job failed.
func TestFailedRematchCancelsLateAdoption(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), next: 9}
	c := &fakeCentral{pick: idU0}
	o := tNew(v, Config{Scheme: SchemeCENT}, 1, c)
	o.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Hour)})
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	tDrain(o)
	c.pick = 0 // nothing capable any more
	o.Tick(tTimeout+2*time.Second, core.TimerJobs)
	r := tDrain(o)
	if st := tOne[*wire.JobStatus](t, r, tClientID); len(st.Failed) != 1 || st.Failed[0].Reason != ReasonNoCapableNode {
		t.Fatalf("status %v, want job 7 failed", st)
	}
	tOne[*wire.JobCancel](t, r, idU0)
	o.Step(tTimeout+3*time.Second, idU0, &wire.JobAdopt{Job: tSpec(7, time.Hour), Run: uint64(idU0), Epoch: 1})
	r = tDrain(o)
	if len(tEvents(r, EvAdopted)) != 0 || len(o.Snapshot().Owned) != 0 {
		t.Fatalf("the failed job was adopted: %+v, owned %v", r.Events, o.Snapshot().Owned)
	}
	if cn := tOne[*wire.JobCancel](t, r, idU0); cn.Job.GetEpoch() != 1 {
		t.Fatalf("cancel %v", cn)
	}
	if st := tOne[*wire.JobStatus](t, r, tClientID); len(st.Failed) != 1 || len(st.Done) != 0 {
		t.Fatalf("status %v, want job 7 failed", st)
	}
}

// A completion from an abandoned copy that finished first ends the job;
// the copy the re-match placed is cancelled even before its run node
// confirmed it (the owner assigned it there itself).
func TestCompletionCancelsCopyBeingMatched(t *testing.T) {
	o, _ := tOwner(t) // job 7 assigned to U0, epoch 1
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	o.Tick(tTimeout+2*time.Second, core.TimerJobs)
	if a := tOne[*wire.JobAssign](t, tDrain(o), idU1); a.Epoch != 2 {
		t.Fatalf("re-match %v", a)
	}
	o.Step(tTimeout+3*time.Second, idU0, &wire.RunHeartbeat{Done: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	r := tDrain(o)
	if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Done, []uint64{7}) {
		t.Fatalf("status %v", st)
	}
	if c := tOne[*wire.JobCancel](t, r, idU1); c.Job.GetEpoch() != 2 {
		t.Fatalf("cancel %v, want U1's copy (epoch 2)", c)
	}
}

// A copy another owner adopted (its heartbeat confirmed it) is not
// cancelled by the owner it replaced: that owner took the run node for
// failed and cancels the copy it abandoned, but the copy is no longer its
// own (seen in TestJobsOverNATS under -race: the run node had adopted its
// copy itself, as the point's owner, and the stale cancel left it owning
// a job nobody ran). The new owner's cancel still applies.
func TestAdoptedCopyIgnoresFormerOwnersCancel(t *testing.T) {
	n, _ := tHeld(t, false) // job 7 of owner 1, epoch 3
	// Owner 9 adopted it.
	n.Step(time.Minute, 9, &wire.OwnerHeartbeat{Jobs: []*wire.JobRef{{Id: 7, Epoch: 3}}})
	tDrain(n)
	n.Step(time.Minute+time.Second, 1, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 3}})
	if r := tDrain(n); len(r.Events) != 0 || !slices.Equal(n.Snapshot().Held, []uint64{7}) {
		t.Fatalf("the former owner's cancel dropped the copy: %+v, held %v", r.Events, n.Snapshot().Held)
	}
	n.Step(time.Minute+2*time.Second, 9, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 3}})
	if e := tOneEvent(t, tDrain(n), EvCancelled); e.Other != 9 {
		t.Fatalf("cancelled %+v", e)
	}
}

// An owner that runs its job itself and finds its copy gone (cancelled by
// a node that owned the job too) matches the job again: before, it owned
// a job nobody ran until the run ended (an unfinished job).
func TestOwnerRematchesLostOwnCopy(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfYes(), next: 9}
	v.nbs = []*overlay.Neighbor{tNb(idU0, zUp0(), tLoad(0, 1, 1, pCap(1)))}
	o := tNew(v, Config{Scheme: SchemeCAN}, 1, nil)
	o.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Hour)})
	tDrain(o)
	if s := o.Snapshot(); !slices.Equal(s.Held, []uint64{7}) || o.owned[7].run != idS {
		t.Fatalf("S does not run job 7 itself: %+v", s)
	}
	o.Step(time.Second, 30, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	tOneEvent(t, tDrain(o), EvCancelled)
	o.Tick(tPeriod, core.TimerJobs)
	r := tDrain(o)
	if e := tOneEvent(t, r, EvRematched); e.Reason != "copy lost" || e.Other != idS {
		t.Fatalf("rematch %+v", e)
	}
	if s := o.Snapshot(); !slices.Equal(s.Held, []uint64{7}) {
		t.Fatalf("after the re-match: %+v, %s", s, tMsgString(r))
	}
}

// An owner that abandoned a copy and then handed the job on (its point
// left its zone) cancels the abandoned copy when it reports, instead of
// telling it to have itself adopted at the point: the point's owner would
// take up a copy whose cancel may be on its way.
func TestDisownedJobsAbandonedCopyIsCancelled(t *testing.T) {
	o, v := tOwner(t) // job 7 assigned to U0, epoch 1
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	o.Tick(tTimeout+2*time.Second, core.TimerJobs) // U0 silent: job 7 goes to U1
	tDrain(o)
	o.Step(tTimeout+3*time.Second, idU1, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 2}})
	v.zone = zLow0() // the point left S's zone
	o.Tick(tTimeout+12*time.Second, core.TimerJobs)
	r := tDrain(o)
	tOneEvent(t, r, EvDisowned)
	if hb := tOne[*wire.OwnerHeartbeat](t, r, idU1); !slices.Equal(tIDs(hb.Disowned), []uint64{7}) {
		t.Fatalf("hand-off %v", hb)
	}
	o.Step(tTimeout+13*time.Second, idU0, &wire.RunHeartbeat{Held: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	r = tDrain(o)
	tNone[*wire.OwnerHeartbeat](t, r)
	if c := tOne[*wire.JobCancel](t, r, idU0); c.Job.GetEpoch() != 1 {
		t.Fatalf("cancel %v", c)
	}
}
