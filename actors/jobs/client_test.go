package jobs

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// tInjector hands out the injection nodes in ids in turn (0 once they are
// used up), counting its calls.
type tInjector struct {
	ids   []core.NodeID
	calls int
}

func (i *tInjector) pick() core.NodeID {
	i.calls++
	if len(i.ids) == 0 {
		return 0
	}
	id := i.ids[0]
	i.ids = i.ids[1:]
	return id
}

const tClientTimeout = 40 * time.Second

func tNewClient(inj *tInjector, maxAttempts int) *Client {
	return NewClient(tClientID, ClientConfig{Timeout: tClientTimeout, MaxAttempts: maxAttempts}, inj.pick)
}

func tJob(id uint64) *wire.JobSpec {
	return &wire.JobSpec{Id: id, Req: tReq(), Work: int64(time.Minute)}
}

// Submit sends the job to the injector's pick, attempt 1, from us.
func TestClientSubmit(t *testing.T) {
	inj := &tInjector{ids: []core.NodeID{5}}
	c := tNewClient(inj, 3)
	if c.ID() != tClientID {
		t.Fatalf("id %d", c.ID())
	}
	now := 3 * time.Second
	c.Submit(now, tJob(7))
	r := tDrain(c)
	s := tOne[*wire.JobSubmit](t, r, 5)
	if s.Job.GetId() != 7 || s.Job.Client != uint64(tClientID) || s.Job.Attempt != 1 || s.Job.SubmittedAt != int64(now) || !slices.Equal(s.Job.Req, tReq()) {
		t.Fatalf("JobSubmit %v", s)
	}
	if e := tOneEvent(t, r, EvSubmitted); e.Job != 7 || e.Attempt != 1 || e.Peer != tClientID {
		t.Fatalf("submitted %+v", e)
	}
	if at := tTimers(r, core.TimerClient); !slices.Equal(at, []time.Duration{now + tClientTimeout/4}) {
		t.Fatalf("client timers %v", at)
	}
	if c.Open() != 1 || !slices.Equal(c.OpenIDs(), []uint64{7}) {
		t.Fatalf("open %v", c.OpenIDs())
	}
	// A second job: the timer is already running.
	c.Submit(now, tJob(8))
	if r := tDrain(c); len(r.Timers) != 0 {
		t.Fatalf("timer armed twice: %v", r.Timers)
	}
	if !slices.Equal(c.OpenIDs(), []uint64{7, 8}) {
		t.Fatalf("open %v, want submission order", c.OpenIDs())
	}
}

// Silence for the timeout: resubmitted, attempt+1, to a fresh injection
// node; word from the owner postpones it; after MaxAttempts the job fails,
// once.
func TestClientResubmitsThenGivesUp(t *testing.T) {
	inj := &tInjector{ids: []core.NodeID{5, 6, 7}}
	c := tNewClient(inj, 3)
	c.Submit(0, tJob(7))
	first := tOne[*wire.JobSubmit](t, tDrain(c), 5)

	c.Step(30*time.Second, 5, &wire.JobStatus{Owned: []uint64{7}})
	for _, now := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 69 * time.Second} {
		c.Tick(now, core.TimerClient)
		r := tDrain(c)
		if len(r.Messages)+len(r.Events) != 0 {
			t.Fatalf("at %v (last word at 30s): %s %+v", now, tMsgString(r), r.Events)
		}
		if at := tTimers(r, core.TimerClient); !slices.Equal(at, []time.Duration{now + tClientTimeout/4}) {
			t.Fatalf("at %v: timers %v", now, at)
		}
	}
	c.Tick(70*time.Second, core.TimerClient)
	r := tDrain(c)
	if e := tOneEvent(t, r, EvResubmitted); e.Job != 7 || e.Attempt != 2 {
		t.Fatalf("resubmitted %+v", e)
	}
	if e := tOneEvent(t, r, EvSubmitted); e.Attempt != 2 {
		t.Fatalf("submitted %+v", e)
	}
	s := tOne[*wire.JobSubmit](t, r, 6)
	if s.Job.GetId() != 7 || s.Job.Attempt != 2 || s.Job.Client != uint64(tClientID) || s.Job.SubmittedAt != 0 {
		t.Fatalf("resubmission %v", s)
	}
	if first.Job.Attempt != 1 {
		t.Fatalf("the first submission was changed afterwards: attempt %d", first.Job.Attempt)
	}

	c.Tick(109*time.Second, core.TimerClient)
	if r := tDrain(c); len(r.Events) != 0 {
		t.Fatalf("resubmitted early: %+v", r.Events)
	}
	c.Tick(110*time.Second, core.TimerClient)
	if s := tOne[*wire.JobSubmit](t, tDrain(c), 7); s.Job.Attempt != 3 {
		t.Fatalf("third attempt %v", s)
	}
	c.Tick(150*time.Second, core.TimerClient)
	r = tDrain(c)
	if len(r.Messages) != 0 {
		t.Fatalf("a fourth attempt: %s", tMsgString(r))
	}
	if e := tOneEvent(t, r, EvFailed); e.Job != 7 || e.Reason != ReasonGaveUp || e.Attempt != 3 {
		t.Fatalf("failed %+v", e)
	}
	if c.Open() != 0 {
		t.Fatalf("open %v", c.OpenIDs())
	}
	failed := 0
	for now := 160 * time.Second; now <= 400*time.Second; now += 10 * time.Second {
		c.Tick(now, core.TimerClient)
		r := tDrain(c)
		failed += len(tEvents(r, EvFailed))
		if len(r.Messages) != 0 {
			t.Fatalf("at %v: %s", now, tMsgString(r))
		}
	}
	if failed != 0 {
		t.Fatalf("failed %d more times", failed)
	}
	if inj.calls != 3 {
		t.Fatalf("injector asked %d times, want 3", inj.calls)
	}
	// Nothing open: the timer stopped; a new submission arms it again.
	c.Tick(500*time.Second, core.TimerClient)
	if r := tDrain(c); len(r.Timers) != 0 {
		t.Fatalf("idle client re-armed: %v", r.Timers)
	}
	inj.ids = []core.NodeID{8}
	c.Submit(600*time.Second, tJob(9))
	if at := tTimers(tDrain(c), core.TimerClient); len(at) != 1 {
		t.Fatalf("timer not re-armed by a new submission: %v", at)
	}
}

// No injection node yet: nothing sent, the job is resubmitted later.
func TestClientWithoutInjectionNodeResubmits(t *testing.T) {
	inj := &tInjector{}
	c := tNewClient(inj, 5)
	c.Submit(0, tJob(7))
	r := tDrain(c)
	if len(r.Messages) != 0 {
		t.Fatalf("sent %s with no injection node", tMsgString(r))
	}
	if e := tOneEvent(t, r, EvSubmitted); e.Attempt != 1 {
		t.Fatalf("submitted %+v", e)
	}
	inj.ids = []core.NodeID{5}
	c.Tick(tClientTimeout, core.TimerClient)
	r = tDrain(c)
	if s := tOne[*wire.JobSubmit](t, r, 5); s.Job.GetId() != 7 || s.Job.Attempt != 2 {
		t.Fatalf("resubmission %v", s)
	}
	tOneEvent(t, r, EvResubmitted)
}

// The first JobResult ends the job; another is a duplicate; the owner's
// "done" after the result is the same outcome.
func TestClientResultsAndDuplicates(t *testing.T) {
	c := tNewClient(&tInjector{ids: []core.NodeID{5, 5, 5}}, 3)
	c.Submit(0, tJob(7))
	c.Submit(0, tJob(8))
	c.Submit(0, tJob(9))
	tDrain(c)
	c.Step(10*time.Second, 3, &wire.JobResult{Id: 7, Attempt: 1, Run: 3})
	r := tDrain(c)
	if e := tOneEvent(t, r, EvResult); e.Job != 7 || e.Other != 3 || e.Attempt != 1 {
		t.Fatalf("result %+v", e)
	}
	if c.Open() != 2 || !slices.Equal(c.OpenIDs(), []uint64{8, 9}) {
		t.Fatalf("open %v", c.OpenIDs())
	}
	c.Step(11*time.Second, 1, &wire.JobStatus{Done: []uint64{7}})
	if r := tDrain(c); len(r.Events) != 0 {
		t.Fatalf("done status after the result: %+v", r.Events)
	}
	c.Step(12*time.Second, 4, &wire.JobResult{Id: 7, Attempt: 1, Run: 4})
	r = tDrain(c)
	if e := tOneEvent(t, r, EvDuplicateResult); e.Job != 7 || e.Other != 4 {
		t.Fatalf("duplicate %+v", e)
	}
	if len(tEvents(r, EvResult)) != 0 {
		t.Fatal("a second EvResult")
	}

	// Failed with the owner's reason.
	c.Step(13*time.Second, 1, &wire.JobStatus{Failed: []*wire.JobFailure{{Id: 8, Reason: ReasonNoCapableNode}}})
	r = tDrain(c)
	if e := tOneEvent(t, r, EvFailed); e.Job != 8 || e.Reason != ReasonNoCapableNode || e.Other != 1 {
		t.Fatalf("failed %+v", e)
	}
	c.Step(14*time.Second, 1, &wire.JobStatus{Failed: []*wire.JobFailure{{Id: 8, Reason: "again"}}})
	if r := tDrain(c); len(r.Events) != 0 {
		t.Fatalf("failed twice: %+v", r.Events)
	}

	// The owner's "done" ends a job whose result was lost.
	c.Step(15*time.Second, 1, &wire.JobStatus{Done: []uint64{9}})
	if e := tOneEvent(t, tDrain(c), EvResult); e.Job != 9 || e.Other != 1 {
		t.Fatalf("result by status %+v", e)
	}
	if c.Open() != 0 {
		t.Fatalf("open %v", c.OpenIDs())
	}
	// Ended jobs are never resubmitted.
	c.Tick(time.Hour, core.TimerClient)
	if r := tDrain(c); len(r.Messages)+len(r.Events) != 0 {
		t.Fatalf("ended jobs acted on: %s %+v", tMsgString(r), r.Events)
	}
	// Unknown jobs are ignored.
	c.Step(time.Hour, 1, &wire.JobResult{Id: 12345, Attempt: 1})
	c.Step(time.Hour, 1, &wire.JobStatus{Owned: []uint64{12345}, Done: []uint64{12345}, Failed: []*wire.JobFailure{{Id: 12345}}})
	if r := tDrain(c); len(r.Events) != 0 {
		t.Fatalf("unknown job: %+v", r.Events)
	}
}

// A duplicate is a second JobResult — the job ran twice. The owner's
// "done" arriving before the run node's one JobResult, or a late result
// of a job the client gave up on, is not one.
func TestClientDuplicateOnlyForSecondJobResult(t *testing.T) {
	t.Run("done-status-first", func(t *testing.T) {
		c := tNewClient(&tInjector{ids: []core.NodeID{5}}, 3)
		c.Submit(0, tJob(7))
		tDrain(c)
		c.Step(10*time.Second, 1, &wire.JobStatus{Done: []uint64{7}})
		tOneEvent(t, tDrain(c), EvResult)
		c.Step(11*time.Second, 3, &wire.JobResult{Id: 7, Attempt: 1, Run: 3})
		if es := tEvents(tDrain(c), EvDuplicateResult); len(es) != 0 {
			t.Errorf("the job's only JobResult, after the owner's done status, counted as a duplicate: %+v", es)
		}
	})
	t.Run("after-giving-up", func(t *testing.T) {
		c := tNewClient(&tInjector{ids: []core.NodeID{5}}, 1)
		c.Submit(0, tJob(7))
		c.Tick(tClientTimeout, core.TimerClient)
		tOneEvent(t, tDrain(c), EvFailed)
		c.Step(tClientTimeout+time.Second, 3, &wire.JobResult{Id: 7, Attempt: 1, Run: 3})
		if es := tEvents(tDrain(c), EvDuplicateResult); len(es) != 0 {
			t.Errorf("the only JobResult of a job given up counted as a duplicate: %+v", es)
		}
	})
}

// Random interleavings: every job ends exactly once (one EvResult or one
// EvFailed), attempts never exceed MaxAttempts, and Open lists exactly the
// jobs not ended.
func TestClientEveryJobEndsOnce(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0xc11e))
		maxAttempts := 1 + rng.IntN(4)
		inj := &tInjector{}
		for range 1000 {
			inj.ids = append(inj.ids, core.NodeID(rng.IntN(4)))
		}
		c := tNewClient(inj, maxAttempts)
		ended := map[uint64]int{}
		attempts := map[uint64]uint32{}
		var ids []uint64
		now := time.Duration(0)
		for step := range 300 {
			now += time.Duration(rng.IntN(15)) * time.Second
			switch k := rng.IntN(10); {
			case k < 2 || len(ids) == 0:
				id := uint64(step + 1)
				ids = append(ids, id)
				c.Submit(now, tJob(id))
			case k < 5:
				c.Tick(now, core.TimerClient)
			case k < 7:
				c.Step(now, 3, &wire.JobStatus{Owned: []uint64{ids[rng.IntN(len(ids))]}})
			case k < 8:
				c.Step(now, 3, &wire.JobResult{Id: ids[rng.IntN(len(ids))], Attempt: 1, Run: 3})
			case k < 9:
				c.Step(now, 3, &wire.JobStatus{Done: []uint64{ids[rng.IntN(len(ids))]}})
			default:
				c.Step(now, 3, &wire.JobStatus{Failed: []*wire.JobFailure{{Id: ids[rng.IntN(len(ids))], Reason: "x"}}})
			}
			r := tDrain(c)
			for _, e := range r.Events {
				switch e.Kind {
				case EvResult, EvFailed:
					ended[e.Job]++
				case EvSubmitted:
					attempts[e.Job] = max(attempts[e.Job], e.Attempt)
				}
			}
			for _, s := range tAllMsgs[*wire.JobSubmit](r) {
				if s.Job.Attempt > uint32(maxAttempts) || s.Job.Client != uint64(tClientID) {
					t.Fatalf("seed %d: submission %v (max attempts %d)", seed, s, maxAttempts)
				}
			}
		}
		for _, id := range ids {
			open := slices.Contains(c.OpenIDs(), id)
			if ended[id] > 1 || open == (ended[id] == 1) {
				t.Fatalf("seed %d: job %d ended %d times, open %v", seed, id, ended[id], open)
			}
			if attempts[id] > uint32(maxAttempts) || attempts[id] == 0 {
				t.Fatalf("seed %d: job %d attempts %d (max %d)", seed, id, attempts[id], maxAttempts)
			}
		}
	}
}

func tAllMsgs[T proto.Message](r Ready) []T {
	ms, _ := tAll[T](r)
	return ms
}

// Bad input to the client never panics.
func TestClientBadInput(t *testing.T) {
	for _, m := range []proto.Message{nil, &wire.JobResult{}, &wire.JobStatus{}, &wire.JobSubmit{}, &wire.OwnerHeartbeat{}} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("client Step(%T) panicked: %v", m, p)
				}
			}()
			c := tNewClient(&tInjector{ids: []core.NodeID{5}}, 3)
			c.Submit(0, tJob(7))
			tDrain(c)
			c.Step(time.Second, 1, m)
			if r := tDrain(c); len(r.Events)+len(r.Messages) != 0 || c.Open() != 1 {
				t.Errorf("client Step(%T): %+v, open %d", m, r.Events, c.Open())
			}
		}()
	}
	c := tNewClient(&tInjector{ids: []core.NodeID{5}}, 3)
	c.Tick(time.Hour, core.TimerJobs) // not the client's timer
	if r := tDrain(c); len(r.Events)+len(r.Messages)+len(r.Timers) != 0 {
		t.Fatalf("foreign timer acted: %+v", r)
	}
}

// A typed nil message (an in-process caller's) is ignored, never a panic.
func TestClientTypedNilNeverPanics(t *testing.T) {
	for _, m := range []proto.Message{(*wire.JobResult)(nil), (*wire.JobStatus)(nil)} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("client Step(%T(nil)) panicked: %v", m, p)
				}
			}()
			c := tNewClient(&tInjector{ids: []core.NodeID{5}}, 3)
			c.Submit(0, tJob(7))
			c.Step(time.Second, 1, m)
		}()
	}
}
