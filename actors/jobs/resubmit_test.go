package jobs

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

// A client resubmits a job it heard nothing about for its timeout while
// the first copy survives at a run node whose owner lost track of it (the
// owner handed the job on when its point left its zone and nobody took it
// up, or the run node is itself the point's new owner). The two copies must
// meet — one is cancelled, or the completion of one stops the other — and
// the job must not run to the end twice (docs/JOBS.md, "Recovery").

const (
	idC  core.NodeID = 20 // owns the job's point after the zone change
	idR2 core.NodeID = 21 // C's free capable neighbor
	idR  core.NodeID = 22 // the first owner's run node (remote case)

	tZoneChange = 5 * time.Second
	tResubmitTO = 2 * time.Minute
)

// tWorld is a few job cores on instant links (tNet) whose overlay views a
// test changes as time goes on.
type tWorld struct {
	net    *tNet
	views  map[core.NodeID]*fakeView
	inject core.NodeID
}

func (w *tWorld) add(v *fakeView, cfg Config) {
	w.views[v.id] = v
	w.net.add(v.id, tNew(v, cfg, uint64(v.id), nil))
}

// count is how many events of kind k happened.
func (w *tWorld) count(k EventKind) int { return len(tEvents(Ready{Events: w.net.events}, k)) }

// history lists the events, for failure messages.
func (w *tWorld) history() string {
	s := ""
	for _, e := range w.net.events {
		s += fmt.Sprintf("\n  %v at %d (other %d, attempt %d) %s", e.Kind, e.Peer, e.Other, e.Attempt, e.Reason)
	}
	return s
}

// tZoneChangeWorld: node S (1) owns job 7's point until tZoneChange, when
// the point passes to C (20), whose free capable neighbor is R2 (21). With
// selfRun S runs the job itself; otherwise on its free capable neighbor R
// (22). The routes of S and R to the point are down (NextHop 0) until a
// test sets them to C. The client (timeout tResubmitTO) injects at S before
// the zone change and at C from then on.
func tZoneChangeWorld(t *testing.T, selfRun bool, work time.Duration, r2Speed float64) *tWorld {
	w := &tWorld{net: newTNet(t), views: map[core.NodeID]*fakeView{}, inject: idS}
	s := &fakeView{id: idS, zone: zSelf(), point: pSelfYes()}
	if !selfRun {
		s.point = pSelfNo()
		s.nbs = []*overlay.Neighbor{tNb(idR, zUp0(), tLoad(0, 1, 1, pCap(1)))}
		w.add(&fakeView{id: idR, zone: zUp0(), point: pCap(1)}, Config{Scheme: SchemeCAN})
	}
	w.add(s, Config{Scheme: SchemeCAN})
	c := &fakeView{id: idC, zone: zUp2(), point: pSelfNo()}
	c.nbs = []*overlay.Neighbor{tNb(idR2, zUp1(), tLoad(0, 1, 1, pCap(3)))}
	w.add(c, Config{Scheme: SchemeCAN})
	w.add(&fakeView{id: idR2, zone: zUp1(), point: pCap(3)}, Config{Scheme: SchemeCAN, Speed: r2Speed})
	w.net.setClient(NewClient(tClientID, ClientConfig{Timeout: tResubmitTO}, func() core.NodeID { return w.inject }))
	w.net.client.Submit(time.Second, &wire.JobSpec{Id: 7, Req: tReq(), Work: int64(work)})
	w.net.start(time.Second, tClientID)
	w.net.RunUntil(tZoneChange)
	s.zone = zLow0() // a take-over reshaped S's zone: the point left it
	c.zone = zSelf()
	w.inject = idC
	return w
}

// The owner that runs a job itself hands its ownership on when the point
// leaves its zone; the point's new owner never hears of it (the adoption
// finds no route for longer than the memory of the hand-off lasted). The
// client, silent since, resubmits; C matches the new copy on R2. When S's
// route comes back, the copies meet whichever finishes first; before the
// fix S had forgotten the hand-off after 4 failure timeouts and ran its
// copy to the end unreported, and both copies completed.
func TestResubmissionMeetsOrphanedSelfRunCopy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		work    time.Duration
		r2Speed float64
		// completedAt is the run node whose copy must complete.
		completedAt core.NodeID
	}{
		{"both-running", time.Hour, 1, idR2},
		{"original-finishes-first", 150 * time.Second, 1, idS},
		{"resubmitted-finishes-first", time.Hour, 60, idR2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tZoneChangeWorld(t, true, tc.work, tc.r2Speed)
			w.net.RunUntil(200 * time.Second)
			if w.count(EvResubmitted) != 1 || w.count(EvDisowned) != 1 || w.count(EvRouteDrop) == 0 {
				t.Fatalf("the scenario did not happen (resubmitted %d, disowned %d, route drops %d):%s",
					w.count(EvResubmitted), w.count(EvDisowned), w.count(EvRouteDrop), w.history())
			}
			w.views[idS].next = idC // the route to the point is back
			w.net.RunUntil(3 * time.Hour)
			done := tEvents(Ready{Events: w.net.events}, EvCompleted)
			if len(done) != 1 || done[0].Peer != tc.completedAt {
				t.Fatalf("completions %+v, want one at %d:%s", done, tc.completedAt, w.history())
			}
			if w.count(EvResult) != 1 || w.net.client.Open() != 0 {
				t.Fatalf("client: %d results, %v open:%s", w.count(EvResult), w.net.client.OpenIDs(), w.history())
			}
			for id, n := range w.net.nodes {
				if s := n.Snapshot(); len(s.Owned)+len(s.Held)+len(s.Done) != 0 {
					t.Errorf("node %d still holds %+v", id, s)
				}
			}
		})
	}
}

// The owner hands a job placed on a remote run node R on when the point
// leaves its zone; R's adoption finds no route. R runs the job to the end
// and reports it to the owner, but its result to the client is lost: the
// client resubmits later. Before the fix the old owner took R's report
// for an acknowledgement and forgot the completion, so C, which never
// heard of the job, ran it again. Now the old owner hands the completion
// on to the point's owner like any it remembers: C tells the client the
// job is done, or — when the resubmission got there first — cancels its
// own copy.
func TestCompletionReportedToFormerOwnerReachesPoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		// heal is when the former owner's route to the point works.
		heal       time.Duration
		r2Speed    float64
		resubmits  int
		cancelled  int
		resultFrom string
	}{
		// Handed on before the client's timeout: no resubmission.
		{"before-resubmission", tZoneChange, 1, 0, 0, "owner status"},
		// Handed on after C placed the resubmitted copy: that copy goes.
		{"after-resubmission", 200 * time.Second, 0.25, 1, 1, "owner status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tZoneChangeWorld(t, false, time.Minute, tc.r2Speed)
			w.net.Drop = func(m testnet.Msg[core.NodeID]) bool {
				_, result := m.Msg.(*wire.JobResult)
				return result && m.From == idR
			}
			if tc.heal <= tZoneChange {
				w.views[idS].next = idC
			}
			w.net.RunUntil(tc.heal)
			w.views[idS].next = idC
			w.net.RunUntil(3 * time.Hour)
			if w.count(EvDisowned) != 1 || w.count(EvRouteDrop) == 0 {
				t.Fatalf("the scenario did not happen:%s", w.history())
			}
			if done := tEvents(Ready{Events: w.net.events}, EvCompleted); len(done) != 1 || done[0].Peer != idR {
				t.Fatalf("completions %+v, want one, at R:%s", done, w.history())
			}
			if w.count(EvResubmitted) != tc.resubmits || w.count(EvCancelled) != tc.cancelled {
				t.Fatalf("resubmitted %d, cancelled %d; want %d, %d:%s", w.count(EvResubmitted), w.count(EvCancelled), tc.resubmits, tc.cancelled, w.history())
			}
			if w.count(EvResult) != 1 || w.net.client.Open() != 0 {
				t.Fatalf("client: %d results, %v open:%s", w.count(EvResult), w.net.client.OpenIDs(), w.history())
			}
			for id, n := range w.net.nodes {
				if s := n.Snapshot(); len(s.Owned)+len(s.Held)+len(s.Done) != 0 {
					t.Errorf("node %d still holds %+v", id, s)
				}
			}
		})
	}
}

// The resubmission reaches the owner of the point that itself runs the
// first copy for a silent owner (R took over the crashed owner's zone and
// has not yet noticed the silence): R owns its own copy at once instead of
// placing a second one on its free neighbor (before the fix both copies
// started, and R's adoption later cancelled the older one). A resubmission
// of a job R finished is answered "done".
func TestResubmissionReachesNodeRunningTheJob(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		n, v := tHeld(t, true)
		v.nbs = []*overlay.Neighbor{tNb(idU1, zUp1(), tLoad(0, 1, 4, pCap(3)))}
		spec := tSpec(7, time.Hour)
		spec.Attempt = 2
		n.Step(20*time.Second, 50, &wire.JobSubmit{Job: spec})
		r := tDrain(n)
		tNone[*wire.JobAssign](t, r)
		tNone[*wire.JobPush](t, r)
		if e := tOneEvent(t, r, EvAdopted); e.Job != 7 || e.Other != 2 || e.Attempt != 2 {
			t.Fatalf("adopted %+v", e)
		}
		if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Owned, []uint64{7}) {
			t.Fatalf("status %v", st)
		}
		if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) || !slices.Equal(s.Held, []uint64{7}) {
			t.Fatalf("snapshot %+v", s)
		}
		// The old owner's silence changes nothing now; the job completes here.
		for now := 30 * time.Second; now <= 120*time.Second; now += 10 * time.Second {
			n.Tick(now, core.TimerJobs)
			r := tDrain(n)
			tNone[*wire.JobAdopt](t, r)
			tNone[*wire.RunHeartbeat](t, r)
			tNone[*wire.JobAssign](t, r)
			if len(r.Events) != 0 {
				t.Fatalf("at %v: events %+v", now, r.Events)
			}
		}
		n.Tick(time.Hour, core.TimerRunDone)
		r = tDrain(n)
		tOneEvent(t, r, EvCompleted)
		tOne[*wire.JobResult](t, r, tClientID)
		if s := n.Snapshot(); len(s.Owned)+len(s.Held)+len(s.Done) != 0 {
			t.Fatalf("snapshot after completion %+v", s)
		}
	})
	t.Run("finished", func(t *testing.T) {
		n, _ := tHeld(t, true)
		n.Tick(time.Hour, core.TimerRunDone)
		tDrain(n)
		spec := tSpec(7, time.Hour)
		spec.Attempt = 2
		n.Step(time.Hour+time.Second, 50, &wire.JobSubmit{Job: spec})
		r := tDrain(n)
		if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Done, []uint64{7}) {
			t.Fatalf("status %v, want done", st)
		}
		tNone[*wire.JobAssign](t, r)
		if len(tEvents(r, EvOwned))+len(tEvents(r, EvQueued)) != 0 {
			t.Fatalf("events %+v", r.Events)
		}
	})
}

// An owner that no longer knows a job cancels the copy a run node reports
// in its heartbeat — also a copy that migrated there (its moves are not
// 0): before the fix the heartbeat named the copy without its moves, the
// cancel named another copy, and the orphan ran on to the end.
func TestUnknownMigratedCopyIsCancelled(t *testing.T) {
	n, _ := tRunNode(Config{})
	n.Step(time.Second, idU1, &wire.MigrateJob{Job: tSpec(7, time.Hour), Owner: 1, Epoch: 3, Moves: 2, Kind: wire.MigrateKind_MIGRATE_INTERNODE})
	tDrain(n)
	n.Tick(10*time.Second, core.TimerJobs)
	hb := tOne[*wire.RunHeartbeat](t, tDrain(n), 1)
	// The owner (S, which owns nothing) answers.
	o := tNew(&fakeView{id: 1, zone: zSelf(), point: pSelfNo()}, Config{}, 1, nil)
	o.Step(11*time.Second, 2, hb)
	c := tOne[*wire.JobCancel](t, tDrain(o), 2)
	n.Step(12*time.Second, 1, c)
	if r := tDrain(n); len(tEvents(r, EvCancelled)) != 1 || len(n.Snapshot().Held) != 0 {
		t.Fatalf("cancel %v left the migrated copy: held %v, events %+v", c, n.Snapshot().Held, r.Events)
	}
}
