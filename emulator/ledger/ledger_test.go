package ledger

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/wire"
)

const sec = time.Second

func ev(k jobs.EventKind, job uint64, peer core.NodeID) jobs.Event {
	return jobs.Event{Kind: k, Job: job, Peer: peer, Attempt: 1}
}

// tRecord feeds a job's events at the given times.
type tEv struct {
	at time.Duration
	e  jobs.Event
}

func feed(l *Ledger, evs ...tEv) {
	for _, x := range evs {
		l.JobEvent(x.at, x.e)
	}
}

func none(uint64) bool { return false }

// --- Tally ---------------------------------------------------------------

func TestTallyClassifiesJobs(t *testing.T) {
	l := New(nil, nil)
	const client = core.NodeID(100)
	failed := ev(jobs.EvFailed, 2, client)
	failed.Reason = jobs.ReasonNoCapableNode
	gaveUp := ev(jobs.EvFailed, 9, client)
	gaveUp.Reason = jobs.ReasonGaveUp
	rematch := ev(jobs.EvRematched, 6, 1)
	rematch.Other, rematch.Reason = 3, "run node silent"
	feed(l,
		// 1: completed.
		tEv{0, ev(jobs.EvSubmitted, 1, client)}, tEv{1 * sec, ev(jobs.EvQueued, 1, 3)}, tEv{2 * sec, ev(jobs.EvStarted, 1, 3)},
		tEv{5 * sec, ev(jobs.EvCompleted, 1, 3)}, tEv{6 * sec, ev(jobs.EvResult, 1, client)},
		// 2: failed.
		tEv{0, ev(jobs.EvSubmitted, 2, client)}, tEv{1 * sec, failed},
		// 9: failed, another reason.
		tEv{0, ev(jobs.EvSubmitted, 9, client)}, tEv{1 * sec, gaveUp},
		// 3: held by a live peer, long ago.
		tEv{0, ev(jobs.EvSubmitted, 3, client)}, tEv{1 * sec, ev(jobs.EvQueued, 3, 3)},
		// 4: nobody holds it, nothing for longer than the timeout: lost.
		tEv{0, ev(jobs.EvSubmitted, 4, client)}, tEv{10 * sec, ev(jobs.EvOwned, 4, 1)},
		// 5: nobody holds it, but it moved within the timeout.
		tEv{0, ev(jobs.EvSubmitted, 5, client)}, tEv{60 * sec, ev(jobs.EvRouteDrop, 5, 1)},
		// 6: completed twice (a rematch raced a slow run node).
		tEv{0, ev(jobs.EvSubmitted, 6, client)}, tEv{1 * sec, ev(jobs.EvQueued, 6, 3)}, tEv{2 * sec, ev(jobs.EvStarted, 6, 3)},
		tEv{40 * sec, rematch}, tEv{41 * sec, ev(jobs.EvQueued, 6, 4)}, tEv{41 * sec, ev(jobs.EvStarted, 6, 4)},
		tEv{50 * sec, ev(jobs.EvCompleted, 6, 3)}, tEv{51 * sec, ev(jobs.EvResult, 6, client)}, tEv{60 * sec, ev(jobs.EvCompleted, 6, 4)},
		// 7: completed three times, never ended at the client, not held, old: lost and duplicated.
		tEv{0, ev(jobs.EvSubmitted, 7, client)}, tEv{1 * sec, ev(jobs.EvCompleted, 7, 3)}, tEv{2 * sec, ev(jobs.EvCompleted, 7, 4)},
		tEv{3 * sec, ev(jobs.EvCompleted, 7, 5)},
		// 8: boundary: last event exactly the timeout ago: not yet lost.
		tEv{0, ev(jobs.EvSubmitted, 8, client)}, tEv{50 * sec, ev(jobs.EvOwned, 8, 1)},
		// 10: boundary: just older than the timeout: lost.
		tEv{0, ev(jobs.EvSubmitted, 10, client)}, tEv{50*sec - 1, ev(jobs.EvOwned, 10, 1)},
	)
	held := func(id uint64) bool { return id == 3 }
	tot := l.Tally(100*sec, held, 25*sec) // lost after twice the timeout: 50 s
	want := Totals{Submitted: 10, Completed: 2, Failed: 2, Unfinished: 3, Lost: 3, Duplicated: 2, DuplicateRuns: 3}
	if tot.Submitted != want.Submitted || tot.Completed != want.Completed || tot.Failed != want.Failed ||
		tot.Unfinished != want.Unfinished || tot.Lost != want.Lost || tot.Duplicated != want.Duplicated || tot.DuplicateRuns != want.DuplicateRuns {
		t.Fatalf("totals %+v, want %+v", tot, want)
	}
	if tot.Submitted != tot.Completed+tot.Failed+tot.Unfinished+tot.Lost {
		t.Fatalf("conservation broken: %+v", tot)
	}
	if len(tot.FailedBy) != 2 || tot.FailedBy[jobs.ReasonNoCapableNode] != 1 || tot.FailedBy[jobs.ReasonGaveUp] != 1 {
		t.Fatalf("failed by %v", tot.FailedBy)
	}
	var got []string
	for _, a := range tot.Anomalies {
		got = append(got, fmt.Sprintf("%d:%s", a.Job, a.Problem))
	}
	// Lost and duplicated jobs first, in job order, then the unfinished.
	if !slices.Equal(got, []string{"4:lost", "6:duplicated", "7:duplicated", "7:lost", "10:lost", "3:unfinished", "5:unfinished", "8:unfinished"}) {
		t.Fatalf("anomalies %v", got)
	}
	// Histories: every event, in order, with where and why.
	h := tot.Anomalies[1].History
	names := make([]string, len(h))
	for i, s := range h {
		names[i] = s.Event
	}
	if !slices.Equal(names, []string{"submitted", "queued", "started", "rematched", "queued", "started", "completed", "result", "completed"}) {
		t.Fatalf("history of job 6: %v", names)
	}
	if s := h[3]; s.At != 40*sec || s.Peer != 1 || s.Other != 3 || s.Reason != "run node silent" {
		t.Fatalf("rematch step %+v", s)
	}
	if h := tot.Anomalies[0].History; len(h) != 2 || h[1].Event != "owned" || h[1].At != 10*sec || h[1].Peer != 1 {
		t.Fatalf("history of lost job 4: %+v", h)
	}
	// Held later on: job 4 is unfinished, not lost.
	tot = l.Tally(100*sec, func(id uint64) bool { return id == 3 || id == 4 }, 25*sec)
	if tot.Lost != 2 || tot.Unfinished != 4 {
		t.Fatalf("with job 4 held: %+v", tot)
	}
	if c := l.Count(jobs.EvCompleted); c != 6 {
		t.Fatalf("completed events %d, want 6", c)
	}
	if c := l.Count(jobs.EventKind(200)); c != 0 {
		t.Fatalf("unknown kind count %d", c)
	}
}

// Anomalies are capped at 20, lost jobs before unfinished ones whatever
// their ids; the counts are not capped.
func TestTallyCapsAnomalies(t *testing.T) {
	l := New(nil, nil)
	for id := uint64(1); id <= 30; id++ {
		l.JobEvent(0, ev(jobs.EvSubmitted, id, 100))
	}
	tot := l.Tally(time.Hour, none, time.Minute)
	if tot.Lost != 30 || len(tot.Anomalies) != 20 {
		t.Fatalf("lost %d, anomalies %d", tot.Lost, len(tot.Anomalies))
	}
	// Jobs 1-15 held (unfinished), 16-30 lost.
	tot = l.Tally(time.Hour, func(id uint64) bool { return id <= 15 }, time.Minute)
	if tot.Lost != 15 || tot.Unfinished != 15 || len(tot.Anomalies) != 20 {
		t.Fatalf("lost %d unfinished %d anomalies %d", tot.Lost, tot.Unfinished, len(tot.Anomalies))
	}
	for i, a := range tot.Anomalies {
		wantJob, wantProblem := uint64(16+i), "lost"
		if i >= 15 {
			wantJob, wantProblem = uint64(i-14), "unfinished"
		}
		if a.Job != wantJob || a.Problem != wantProblem {
			t.Fatalf("anomaly %d: %d %s, want %d %s", i, a.Job, a.Problem, wantJob, wantProblem)
		}
	}
}

// Random job lives: conservation holds and each job lands in the class an
// independent reading of its events gives.
func TestTallyConservationRandom(t *testing.T) {
	kinds := []jobs.EventKind{jobs.EvSubmitted, jobs.EvOwned, jobs.EvPushed, jobs.EvQueued, jobs.EvStarted, jobs.EvCompleted,
		jobs.EvRematched, jobs.EvAdopted, jobs.EvResult, jobs.EvFailed, jobs.EvResubmitted, jobs.EvDuplicateResult}
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x1ed9))
		l := New(nil, nil)
		type truth struct {
			ended, failed bool
			completions   int
			last          time.Duration
		}
		want := map[uint64]*truth{}
		heldSet := map[uint64]bool{}
		now := time.Duration(0)
		for range 500 {
			now += time.Duration(rng.IntN(5)) * sec
			id := uint64(1 + rng.IntN(40))
			k := kinds[rng.IntN(len(kinds))]
			e := ev(k, id, core.NodeID(1+rng.IntN(5)))
			if k == jobs.EvFailed {
				e.Reason = []string{"a", "b"}[rng.IntN(2)]
			}
			l.JobEvent(now, e)
			tr := want[id]
			if tr == nil {
				tr = &truth{}
				want[id] = tr
			}
			tr.last = now
			switch k {
			case jobs.EvCompleted:
				tr.completions++
			case jobs.EvResult:
				tr.ended = true
			case jobs.EvFailed:
				if !tr.ended {
					tr.ended, tr.failed = true, true
				}
			}
			if rng.IntN(10) == 0 {
				heldSet[id] = true
			}
		}
		timeout := time.Duration(rng.IntN(200)) * sec
		tot := l.Tally(now, func(id uint64) bool { return heldSet[id] }, timeout)
		var w Totals
		for id, tr := range want {
			w.Submitted++
			if tr.completions > 1 {
				w.Duplicated++
				w.DuplicateRuns += uint64(tr.completions - 1)
			}
			switch {
			case tr.ended && tr.failed:
				w.Failed++
			case tr.ended:
				w.Completed++
			case heldSet[id] || now-tr.last <= 2*timeout:
				w.Unfinished++
			default:
				w.Lost++
			}
		}
		if tot.Submitted != w.Submitted || tot.Completed != w.Completed || tot.Failed != w.Failed || tot.Unfinished != w.Unfinished ||
			tot.Lost != w.Lost || tot.Duplicated != w.Duplicated || tot.DuplicateRuns != w.DuplicateRuns {
			t.Fatalf("seed %d: totals %+v, want %+v", seed, tot, w)
		}
		if tot.Submitted != tot.Completed+tot.Failed+tot.Unfinished+tot.Lost {
			t.Fatalf("seed %d: conservation broken: %+v", seed, tot)
		}
		n := uint64(0)
		for _, c := range tot.FailedBy {
			n += c
		}
		if n != tot.Failed {
			t.Fatalf("seed %d: failed by %v sums to %d, failed %d", seed, tot.FailedBy, n, tot.Failed)
		}
	}
}

// The observer sees every event, and "first" exactly when the record's
// figure was set.
func TestObserveFirst(t *testing.T) {
	type seen struct {
		kind  jobs.EventKind
		first bool
	}
	var got []seen
	l := New(nil, func(e jobs.Event, r *Record, at time.Duration, first bool) {
		if r.ID != e.Job {
			t.Errorf("record %d for event of job %d", r.ID, e.Job)
		}
		got = append(got, seen{e.Kind, first})
	})
	fail := ev(jobs.EvFailed, 1, 100)
	feed(l, tEv{0, ev(jobs.EvSubmitted, 1, 100)}, tEv{1, ev(jobs.EvQueued, 1, 3)}, tEv{2, ev(jobs.EvQueued, 1, 4)},
		tEv{3, ev(jobs.EvCompleted, 1, 3)}, tEv{4, ev(jobs.EvCompleted, 1, 4)}, tEv{5, ev(jobs.EvResult, 1, 100)},
		tEv{6, ev(jobs.EvResult, 1, 100)}, tEv{7, fail})
	want := []seen{{jobs.EvSubmitted, false}, {jobs.EvQueued, true}, {jobs.EvQueued, false}, {jobs.EvCompleted, true},
		{jobs.EvCompleted, false}, {jobs.EvResult, true}, {jobs.EvResult, false}, {jobs.EvFailed, false}}
	if !slices.Equal(got, want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	// A failure after a result does not turn the job failed.
	if tot := l.Tally(10, none, time.Hour); tot.Completed != 1 || tot.Failed != 0 {
		t.Fatalf("totals %+v", tot)
	}
}

// --- Pick (CENT) ---------------------------------------------------------

// Requirement (1000, 2000, v); points relative to it.
var tReqCENT = []uint32{1000, 2000, 77}

func TestPickGreedyOrder(t *testing.T) {
	alive := map[core.NodeID]bool{}
	l := New(func(id core.NodeID) bool { return alive[id] }, nil)
	join := func(id core.NodeID, p can.Point, speed float64, cores int, queue int) {
		alive[id] = true
		l.NodeJoined(id, p, speed, cores)
		l.QueueLen(id, queue)
	}
	job := &wire.JobSpec{Id: 1, Req: tReqCENT}
	// A: exact fit, slow. Its virtual coordinate is far above: it does not count.
	join(1, can.Point{1000, 2100, math.MaxUint32}, 1, 1, 0)
	// B: idle, fast, but 2x the CPU asked for.
	join(2, can.Point{2000, 2000, 0}, 2, 1, 0)
	// C: idle, fastest, short in memory.
	join(3, can.Point{5000, 1999, 0}, 9, 1, 0)
	// D: idle, exact, fast, departed.
	join(4, can.Point{1000, 2000, 0}, 5, 1, 0)
	alive[4] = false
	// E: one job queued, exact, very fast.
	join(5, can.Point{1050, 2050, 0}, 10, 1, 1)

	steps := []core.NodeID{
		1, // A: least load and not over-provisioned (B is over, C incapable, D gone)
		2, // B: load 0 beats load 1, over-provisioned or not
		5, // A/B/E all at 1: A and E fit, E is faster
		1, // A (1, fit, speed 1) vs B (1, over) vs E (2)
	}
	for i, want := range steps {
		if got := l.Pick(job); got != want {
			t.Fatalf("pick %d: %d, want %d", i+1, got, want)
		}
	}
	if q, busy := l.Live(); q != 2+1+2 || busy != 3 {
		t.Fatalf("live queued %d busy %d, want 5 and 3", q, busy)
	}
	// Queue lengths reported by the nodes replace the picks' counts.
	l.QueueLen(1, 0)
	if got := l.Pick(job); got != 1 {
		t.Fatalf("after A emptied: %d", got)
	}
	// Queue per core: F with 4 cores and 2 jobs (0.5) beats everyone at >= 1.
	join(6, can.Point{1000, 2000, 0}, 1, 4, 2)
	if got := l.Pick(job); got != 6 {
		t.Fatalf("pick with a 4-core node: %d, want 6", got)
	}
	// Nothing capable, or nothing alive.
	if got := l.Pick(&wire.JobSpec{Id: 2, Req: []uint32{math.MaxUint32, 0, 0}}); got != 0 {
		t.Fatalf("impossible job picked %d", got)
	}
	for id := range alive {
		alive[id] = false
	}
	if got := l.Pick(job); got != 0 {
		t.Fatalf("no live node, picked %d", got)
	}
	if q, busy := l.Live(); q != 0 || busy != 0 {
		t.Fatalf("live with nobody alive: %d %d", q, busy)
	}
}

// A zero requirement constrains nothing: any amount is fine.
func TestPickZeroRequirementNeverOverProvisioned(t *testing.T) {
	l := New(nil, nil)
	l.NodeJoined(1, can.Point{100, 100, 0}, 1, 1)
	l.NodeJoined(2, can.Point{math.MaxUint32, 100, 0}, 3, 1)
	if got := l.Pick(&wire.JobSpec{Id: 1, Req: []uint32{0, 100, 0}}); got != 2 {
		t.Fatalf("picked %d, want the faster (no CPU requirement)", got)
	}
}

// Two equally good nodes share two jobs picked in a row.
func TestPickCountsAtOnce(t *testing.T) {
	l := New(func(core.NodeID) bool { return true }, nil)
	l.NodeJoined(7, can.Point{1000, 2000, 1}, 2, 1)
	l.NodeJoined(8, can.Point{1000, 2000, 2}, 2, 1)
	a, b := l.Pick(&wire.JobSpec{Id: 1, Req: tReqCENT}), l.Pick(&wire.JobSpec{Id: 2, Req: tReqCENT})
	if a == b || !slices.Contains([]core.NodeID{7, 8}, a) || !slices.Contains([]core.NodeID{7, 8}, b) {
		t.Fatalf("picks %d and %d, want 7 and 8 once each", a, b)
	}
}

// Random populations: the pick is alive, capable and optimal in the
// (queue per core, over-provisioning, speed) order.
func TestPickRandom(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0xce47))
		type nd struct {
			p            can.Point
			speed        float64
			cores, queue int
			alive        bool
		}
		nodes := map[core.NodeID]*nd{}
		l := New(func(id core.NodeID) bool { return nodes[id].alive }, nil)
		req := []uint32{uint32(rng.IntN(3)) * 1000, uint32(rng.IntN(3)) * 1000, rng.Uint32()}
		for i := range 1 + rng.IntN(12) {
			id := core.NodeID(i + 1)
			n := &nd{p: can.Point{uint32(rng.IntN(4000)), uint32(rng.IntN(4000)), rng.Uint32()}, speed: float64(1 + rng.IntN(4)),
				cores: 1 + rng.IntN(3), queue: rng.IntN(4), alive: rng.IntN(5) > 0}
			nodes[id] = n
			l.NodeJoined(id, n.p, n.speed, n.cores)
			l.QueueLen(id, n.queue)
		}
		for pick := range 5 {
			type key struct {
				load  float64
				over  bool
				speed float64
			}
			var best *key
			var bestIDs []core.NodeID
			for id, n := range nodes {
				if !n.alive || n.p[0] < req[0] || n.p[1] < req[1] {
					continue
				}
				over := (req[0] > 0 && float64(n.p[0]) > 1.1*float64(req[0])) || (req[1] > 0 && float64(n.p[1]) > 1.1*float64(req[1]))
				k := key{float64(n.queue) / float64(n.cores), over, n.speed}
				better := best == nil || k.load < best.load || k.load == best.load && (!k.over && best.over || k.over == best.over && k.speed > best.speed)
				switch {
				case better:
					best, bestIDs = &k, []core.NodeID{id}
				case k == *best:
					bestIDs = append(bestIDs, id)
				}
			}
			got := l.Pick(&wire.JobSpec{Id: uint64(pick), Req: req})
			if best == nil {
				if got != 0 {
					t.Fatalf("seed %d: picked %d with no capable live node", seed, got)
				}
				break
			}
			if !slices.Contains(bestIDs, got) {
				t.Fatalf("seed %d pick %d: %d, want one of %v", seed, pick, got, bestIDs)
			}
			nodes[got].queue++
		}
	}
}

// --- Figures -------------------------------------------------------------

func TestFigures(t *testing.T) {
	l := New(nil, nil)
	sub2 := ev(jobs.EvSubmitted, 1, 100)
	sub2.Attempt = 2
	q1 := ev(jobs.EvQueued, 1, 3)
	q1.Hops, q1.Queue = 4, 2
	q2 := ev(jobs.EvQueued, 1, 4)
	q2.Hops, q2.Queue = 1, 0
	feed(l,
		tEv{10 * sec, ev(jobs.EvSubmitted, 1, 100)},
		tEv{20 * sec, ev(jobs.EvPushed, 1, 1)},
		tEv{50 * sec, sub2},
		tEv{60 * sec, q1},
		tEv{70 * sec, ev(jobs.EvStarted, 1, 3)},
		tEv{90 * sec, ev(jobs.EvRematched, 1, 1)},
		tEv{100 * sec, q2},
		tEv{110 * sec, ev(jobs.EvStarted, 1, 4)},
		tEv{130 * sec, ev(jobs.EvCompleted, 1, 4)}, // node 4 finishes first
		tEv{135 * sec, ev(jobs.EvResult, 1, 100)},
		tEv{140 * sec, ev(jobs.EvCompleted, 1, 3)},
		// Job 2: queued, never started; job 3: submitted only.
		tEv{0, ev(jobs.EvSubmitted, 2, 100)}, tEv{3 * sec, ev(jobs.EvQueued, 2, 5)},
		tEv{0, ev(jobs.EvSubmitted, 3, 100)},
		// Job 4: started twice on node 6 (matched there again): the later start completed.
		tEv{0, ev(jobs.EvSubmitted, 4, 100)}, tEv{1 * sec, ev(jobs.EvQueued, 4, 6)}, tEv{2 * sec, ev(jobs.EvStarted, 4, 6)},
		tEv{20 * sec, ev(jobs.EvQueued, 4, 6)}, tEv{30 * sec, ev(jobs.EvStarted, 4, 6)}, tEv{40 * sec, ev(jobs.EvCompleted, 4, 6)},
	)
	f := l.Figures()
	if !slices.Equal(f.Wait, []float64{100}) { // job 4 completed but has no result yet
		t.Fatalf("wait %v, want [100] (start of the completing run − first submission, jobs ended with a result)", f.Wait)
	}
	if !slices.Equal(f.Turnaround, []float64{125}) { // job 4 has no result yet
		t.Fatalf("turnaround %v", f.Turnaround)
	}
	if !slices.Equal(f.MatchSecs, []float64{50, 3, 1}) || !slices.Equal(f.Hops, []float64{4, 0, 0}) || !slices.Equal(f.QueueSeen, []float64{2, 0, 0}) {
		t.Fatalf("matchmaking secs %v hops %v queue %v, want the first assignment's", f.MatchSecs, f.Hops, f.QueueSeen)
	}
	if f.Pushed != 1 {
		t.Fatalf("pushed %d", f.Pushed)
	}
	// The record agrees.
	tot := l.Tally(200*sec, none, time.Hour)
	if tot.Completed != 1 || tot.Duplicated != 1 || tot.Unfinished != 3 {
		t.Fatalf("totals %+v", tot)
	}
}

// TestWaitsCountEveryJob: Waits counts every submitted job — completed
// ones to the start of their completing run, running ones to the start of
// the run still going, failed ones to their failure and the rest to the
// end of the run — and says how many were censored.
func TestWaitsCountEveryJob(t *testing.T) {
	l := New(nil, nil)
	ret := ev(jobs.EvReturned, 6, 1) // owner 1 reports that run node 7 handed job 6 back
	ret.Other = 7
	feed(l,
		// 1: completed, result at the client: 30 s.
		tEv{10 * sec, ev(jobs.EvSubmitted, 1, 100)}, tEv{12 * sec, ev(jobs.EvQueued, 1, 3)}, tEv{40 * sec, ev(jobs.EvStarted, 1, 3)},
		tEv{90 * sec, ev(jobs.EvCompleted, 1, 3)}, tEv{91 * sec, ev(jobs.EvResult, 1, 100)},
		// 2: submitted at 20 s, queued, never started: censored at the end, 1000 − 20.
		tEv{20 * sec, ev(jobs.EvSubmitted, 2, 100)}, tEv{21 * sec, ev(jobs.EvQueued, 2, 4)},
		// 3: running at the end on node 5, started at 300 s: 300 − 50.
		tEv{50 * sec, ev(jobs.EvSubmitted, 3, 100)}, tEv{51 * sec, ev(jobs.EvQueued, 3, 5)}, tEv{300 * sec, ev(jobs.EvStarted, 3, 5)},
		// 4: started on node 6, which crashed (it no longer holds the job): censored, 1000 − 60.
		tEv{60 * sec, ev(jobs.EvSubmitted, 4, 100)}, tEv{61 * sec, ev(jobs.EvQueued, 4, 6)}, tEv{70 * sec, ev(jobs.EvStarted, 4, 6)},
		// 5: failed at 100 s without running: censored at its failure, 100 − 80.
		tEv{80 * sec, ev(jobs.EvSubmitted, 5, 100)}, tEv{100 * sec, jobs.Event{Kind: jobs.EvFailed, Job: 5, Peer: 100, Reason: jobs.ReasonNoCapableNode}},
		// 6: started on node 7, which left and handed it back; queued at 7
		// again (still held there, not started): censored, 1000 − 0.
		tEv{0, ev(jobs.EvSubmitted, 6, 100)}, tEv{5 * sec, ev(jobs.EvQueued, 6, 7)}, tEv{10 * sec, ev(jobs.EvStarted, 6, 7)},
		tEv{20 * sec, ret}, tEv{30 * sec, ev(jobs.EvQueued, 6, 7)},
		// 7: completed on node 8 (started at 400 s), its result not yet at
		// the client: 400 − 200, not censored.
		tEv{200 * sec, ev(jobs.EvSubmitted, 7, 100)}, tEv{201 * sec, ev(jobs.EvQueued, 7, 8)}, tEv{400 * sec, ev(jobs.EvStarted, 7, 8)},
		tEv{900 * sec, ev(jobs.EvCompleted, 7, 8)},
	)
	holds := map[[2]uint64]bool{{2, 4}: true, {3, 5}: true, {6, 7}: true}
	running := func(job uint64, node core.NodeID) bool { return holds[[2]uint64{job, uint64(node)}] }
	waits, censored := l.Waits(1000*sec, running)
	want := []float64{30, 980, 250, 940, 20, 1000, 200}
	if !slices.Equal(waits, want) || censored != 4 {
		t.Fatalf("waits %v, %d censored; want %v, 4 censored", waits, censored, want)
	}
	// Completed jobs only, as before: job 1 (job 7 has no result yet).
	if f := l.Figures(); !slices.Equal(f.Wait, []float64{30}) {
		t.Fatalf("completed waits %v, want [30]", f.Wait)
	}
	// The steady-state window from 50 s: jobs 3, 4, 5 and 7 (job 3's
	// submission at 50 s counts), 2 of them censored.
	if w, c := l.WaitsFrom(1000*sec, 50*sec, running); !slices.Equal(w, []float64{250, 940, 20, 200}) || c != 2 {
		t.Fatalf("waits from 50 s %v, %d censored; want [250 940 20 200], 2 censored", w, c)
	}
	if w, c := New(nil, nil).Waits(time.Hour, running); len(w) != 0 || c != 0 {
		t.Fatalf("no jobs: waits %v, %d censored", w, c)
	}
}

func TestMeanQuantile(t *testing.T) {
	if !math.IsNaN(Mean(nil)) || !math.IsNaN(Quantile(nil, 0.5)) {
		t.Fatal("empty: want NaN")
	}
	xs := []float64{5, 1, 4, 2, 3}
	if m := Mean(xs); m != 3 {
		t.Fatalf("mean %v", m)
	}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.2, 1}, {0.5, 3}, {0.9, 5}, {1, 5}} {
		if got := Quantile(slices.Clone(xs), c.q); got != c.want {
			t.Fatalf("quantile %v = %v, want %v", c.q, got, c.want)
		}
	}
}

// The ledger is safe for concurrent use (run with -race).
func TestConcurrentUse(t *testing.T) {
	l := New(func(core.NodeID) bool { return true }, func(jobs.Event, *Record, time.Duration, bool) {})
	for id := core.NodeID(1); id <= 4; id++ {
		l.NodeJoined(id, can.Point{5000, 5000, 0}, 1, 1)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := uint64(g*1000 + i + 1) // job ids start at 1
				l.JobEvent(time.Duration(i), ev(jobs.EvSubmitted, id, 100))
				l.JobEvent(time.Duration(i), ev(jobs.EvCompleted, id, 3))
				l.JobEvent(time.Duration(i), ev(jobs.EvResult, id, 100))
				l.Pick(&wire.JobSpec{Id: id, Req: tReqCENT})
				l.QueueLen(core.NodeID(1+i%4), i%3)
				l.Live()
			}
		}()
	}
	wg.Wait()
	tot := l.Tally(time.Hour, none, time.Hour)
	if tot.Submitted != 1600 || tot.Completed != 1600 || l.Count(jobs.EvSubmitted) != 1600 {
		t.Fatalf("totals %+v", tot)
	}
}

// PickNow (000 §V-A's single queue): only nodes whose residual resources
// fit the job now; none, and the job waits if some node is capable.
func TestPickNowOnlyStartable(t *testing.T) {
	l := New(nil, nil)
	l.SetDemand(func([]uint32) jobs.Vec { return jobs.Vec{2, 0, 0} })
	l.NodeJoined(1, can.Point{5000, 5000, 0}, 3, 4) // fast, one core free
	l.Residual(1, jobs.Vec{1, 0, 0})
	l.NodeJoined(2, can.Point{5000, 5000, 1}, 1, 4) // slow, three free
	l.Residual(2, jobs.Vec{3, 0, 0})
	job := &wire.JobSpec{Id: 1, Req: tReqCENT}
	if id, _ := l.PickNow(job); id != 2 {
		t.Fatalf("PickNow %d, want 2 (the only node the job fits now)", id)
	}
	// Node 2 has one core left now: nothing fits, but nodes are capable.
	if id, capable := l.PickNow(job); id != 0 || !capable {
		t.Fatalf("PickNow = %d, %v; want 0, true (wait)", id, capable)
	}
	if id, capable := l.PickNow(&wire.JobSpec{Id: 2, Req: []uint32{math.MaxUint32, 0, 0}}); id != 0 || capable {
		t.Fatalf("PickNow of an impossible job = %d, %v; want 0, false", id, capable)
	}
	if got := l.Pick(job); got == 0 {
		t.Fatal("Pick (queueing at a busy node) found no node")
	}
}

// TestBusyAndNodeLoad: utilization counts the live peers holding a job;
// NodeLoad is a peer's current queue, and nothing for a departed one.
func TestBusyAndNodeLoad(t *testing.T) {
	gone := map[core.NodeID]bool{}
	l := New(func(id core.NodeID) bool { return !gone[id] }, nil)
	for id := core.NodeID(1); id <= 4; id++ {
		l.NodeJoined(id, can.Point{1, 1}, 1, 1)
	}
	l.QueueLen(1, 2)
	l.QueueLen(2, 1)
	if b, n := l.Busy(); b != 2 || n != 4 {
		t.Fatalf("busy %d of %d, want 2 of 4", b, n)
	}
	gone[2] = true
	if b, n := l.Busy(); b != 1 || n != 3 {
		t.Fatalf("peer 2 gone: busy %d of %d, want 1 of 3", b, n)
	}
	if q, c, ok := l.NodeLoad(1); q != 2 || c != 1 || !ok {
		t.Fatalf("NodeLoad(1) = %d, %d, %v; want 2, 1, true", q, c, ok)
	}
	if _, _, ok := l.NodeLoad(2); ok {
		t.Fatal("NodeLoad of a departed peer: ok")
	}
	if _, _, ok := l.NodeLoad(9); ok {
		t.Fatal("NodeLoad of an unknown peer: ok")
	}
}
