package jobs

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// vRes is the test resource model: the virtual coordinate encodes the
// amounts, cores × 1000 + memory (GiB), for nodes (capacity) and jobs
// (demand) alike, so a test writes them into points directly.
type vRes struct{}

func vDecode(p []uint32) Vec {
	v := p[len(p)-1]
	return Vec{ResCores: float64(v / 1000), ResMemory: float64(v % 1000)}
}
func (vRes) Capacity(p []uint32) Vec { return vDecode(p) }
func (vRes) Demand(req []uint32) Vec { return vDecode(req) }

// Residue writes the residual amounts into the virtual coordinate.
func (vRes) Residue(p []uint32, r Vec) []uint32 {
	q := slices.Clone(p)
	q[len(q)-1] = vAmt(uint32(r[ResCores]+1e-9), uint32(r[ResMemory]+1e-9))
	return q
}

func vAmt(cores, mem uint32) uint32 { return cores*1000 + mem }

// vSpec is a job any test node can run, demanding cores and memory.
func vSpec(id uint64, cores, mem uint32, work time.Duration) *wire.JobSpec {
	return &wire.JobSpec{Id: id, Client: uint64(tClientID), Attempt: 1, Req: []uint32{0, 0, vAmt(cores, mem)}, Work: int64(work)}
}

const tOwnerID core.NodeID = 50

// vNode is a run node of 4 cores and 8 GiB in mode, owning zone S.
func vNode(t *testing.T, mode SchedMode, nbs ...*overlay.Neighbor) (*Node, *fakeView) {
	t.Helper()
	v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}, nbs: nbs}
	n := tNew(v, Config{Mode: mode, Res: vRes{}, SchedPeriod: 5 * time.Second}, 1, nil)
	tDrain(n)
	return n, v
}

func vAssign(n *Node, now time.Duration, spec *wire.JobSpec) Ready {
	n.Step(now, tOwnerID, &wire.JobAssign{Job: spec, Owner: uint64(tOwnerID), Epoch: 1})
	return tDrain(n)
}

func runningIDs(n *Node) []uint64 {
	var ids []uint64
	for _, h := range n.queue[:n.running] {
		ids = append(ids, h.spec.Id)
	}
	return ids
}

func TestVanillaHeadBlocksAndLocalSchedulingBackfills(t *testing.T) {
	for _, tc := range []struct {
		mode    SchedMode
		running []uint64
		bcHead  uint32
	}{
		{SchedVanilla, []uint64{1}, 0}, // FCFS: job 3 waits behind the head
		{SchedL, []uint64{1, 3}, 1},    // backfilling: job 3 bypasses the head, whose BC grows
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			n, _ := vNode(t, tc.mode)
			vAssign(n, 0, vSpec(1, 2, 0, time.Hour)) // runs: 2 of 4 cores left
			vAssign(n, 0, vSpec(2, 4, 0, time.Hour)) // the head: needs all 4
			r := vAssign(n, 0, vSpec(3, 1, 0, time.Hour))
			if got := runningIDs(n); !slices.Equal(got, tc.running) {
				t.Fatalf("running %v, want %v", got, tc.running)
			}
			if h := n.holding(2); h.running || h.bc != tc.bcHead {
				t.Fatalf("head job 2: running %v bc %d, want waiting with bc %d", h.running, h.bc, tc.bcHead)
			}
			if tc.mode == SchedL {
				if e := tOneEvent(t, r, EvStarted); e.Job != 3 || !e.Backfilled {
					t.Fatalf("started event %+v, want job 3 backfilled", e)
				}
			}
		})
	}
}

func TestBackfillingCounterStopsBypassing(t *testing.T) {
	n, _ := vNode(t, SchedL)
	vAssign(n, 0, vSpec(1, 2, 0, time.Hour))   // runs
	vAssign(n, 0, vSpec(2, 4, 0, time.Hour))   // head, waits
	vAssign(n, 0, vSpec(3, 1, 0, time.Hour))   // bypasses: head's BC = 1
	vAssign(n, 0, vSpec(4, 1, 0, time.Minute)) // BC 0 < head's 1: must wait
	if got := runningIDs(n); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("running %v, want [1 3]: job 4's BC is below the head's", got)
	}
	if nbc := n.nbc(); nbc != 1 {
		t.Fatalf("NBC %d, want the head's BC 1", nbc)
	}
}

func TestBackfillBalancedPicksMinimumBMFM(t *testing.T) {
	// 4 cores, 8 GiB; a running job uses 1 core and 6 GiB. Candidates: a
	// 1-core job with no memory and a 1-core job with 2 GiB: the second
	// fills the node more evenly (lower BM·FM).
	c, used := Vec{4, 8, 0}, Vec{1, 6, 0}
	a, b := BalanceFullness(c, used, Vec{1, 0, 0}), BalanceFullness(c, used, Vec{1, 2, 0})
	if !(b < a) {
		t.Fatalf("BM·FM with memory %v, without %v: want the fuller, more balanced one lower", b, a)
	}
	n, _ := vNode(t, SchedL)
	vAssign(n, 0, vSpec(1, 1, 6, time.Hour))
	vAssign(n, 0, vSpec(2, 4, 0, time.Hour)) // head, cannot start
	n.queue = append(n.queue, &held{spec: vSpec(3, 1, 0, time.Hour), owner: tOwnerID, epoch: 1, demand: Vec{1, 0, 0}}, &held{spec: vSpec(4, 1, 2, time.Hour), owner: tOwnerID, epoch: 1, demand: Vec{1, 2, 0}})
	n.queue[len(n.queue)-1].bc, n.queue[len(n.queue)-2].bc = 0, 0
	n.start(time.Minute)
	if got := runningIDs(n); got[1] != 4 {
		t.Fatalf("running %v: want job 4 (min BM·FM) started before job 3", got)
	}
}

func TestAlphaContention(t *testing.T) {
	c := Vec{4, 8, 100}
	for _, tc := range []struct {
		n    int
		used Vec
		want float64
	}{
		{1, Vec{1, 8, 100}, 1},                   // alone: no contention
		{2, Vec{2, 1, 0}, 1 + ContentionP},       // light: the constant penalty
		{2, Vec{2, 8, 0}, 1 + 2*ContentionSDR},   // memory full: the worst case
		{3, Vec{3, 4, 0}, 1 + ContentionP},       // half memory: 1+3·SDR/16 is below 1+p
		{4, Vec{4, 0, 100}, 1 + 4*ContentionSDR}, // disk full
	} {
		if got := Alpha(tc.n, tc.used, c); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Alpha(%d, %v) = %v, want %v", tc.n, tc.used, got, tc.want)
		}
	}
	// A job sharing a node runs longer by α.
	v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}}
	n := tNew(v, Config{Mode: SchedL, Res: vRes{}, Contention: true}, 1, nil)
	vAssign(n, 0, vSpec(1, 1, 4, time.Hour))
	vAssign(n, 0, vSpec(2, 1, 4, time.Hour))
	if got, want := n.holding(2).finishAt, time.Duration(float64(time.Hour)*(1+2*ContentionSDR)); got != want {
		t.Fatalf("second job finishes at %v, want %v (α with memory full)", got, want)
	}
}

// vLoad is a neighbor's heartbeat load for dynamic scheduling.
func vLoad(point can.Point, residual Vec, waiting, nbc uint32, L float32) *wire.Load {
	return &wire.Load{Speed: 1, Point: point, Cores: float32(vDecode(point)[ResCores]), Residual: []float32{float32(residual[0]), float32(residual[1]), float32(residual[2])}, Waiting: waiting, Nbc: nbc, NormLoad: L}
}

const tB core.NodeID = 2

// TestInternodePushHandshake: a waiting job that fits a neighbor's
// residual resources is offered, sent only after the neighbor confirms,
// kept until acknowledged, and its owner is told by the receiver.
func TestInternodePushHandshake(t *testing.T) {
	bPoint := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}
	n, _ := vNode(t, SchedLIPush, tNb(tB, zUp0(), vLoad(bPoint, Vec{4, 8, 0}, 0, 0, 0)))
	vAssign(n, 0, vSpec(1, 4, 0, time.Hour))
	vAssign(n, 0, vSpec(2, 2, 0, time.Hour)) // waits: no core free
	n.Tick(5*time.Second, core.TimerSched)
	r := tDrain(n)
	off := tOne[*wire.MigrateOffer](t, r, tB)
	if off.Job.Id != 2 || off.Kind != wire.MigrateKind_MIGRATE_INTERNODE {
		t.Fatalf("offer %v, want job 2 internode", off)
	}
	tNone[*wire.MigrateJob](t, r) // not before the handshake

	// The receiver's side: it fits, so it accepts and reserves the cores.
	b, _ := vNode(t, SchedLIPush)
	b.Step(5*time.Second, 1, off)
	rb := tDrain(b)
	if rep := tOne[*wire.MigrateReply](t, rb, 1); !rep.Accept {
		t.Fatal("receiver refused an offer that fits")
	}
	if got := b.residual()[ResCores]; got != 2 {
		t.Fatalf("receiver's residual cores %v after accepting, want 2 (reserved)", got)
	}
	n.Step(5*time.Second, tB, &wire.MigrateReply{Job: off.Job, Accept: true, Kind: off.Kind})
	r = tDrain(n)
	mj := tOne[*wire.MigrateJob](t, r, tB)
	if mj.Moves != 1 || mj.Owner != uint64(tOwnerID) {
		t.Fatalf("migrate %v, want moves 1 and the owner", mj)
	}
	if n.holding(2) != nil || !slices.Contains(n.Snapshot().Held, 2) {
		t.Fatal("the sent job must leave the queue but stay ours (held) until acknowledged")
	}
	b.Step(5*time.Second, 1, mj)
	rb = tDrain(b)
	if q := tOne[*wire.JobQueued](t, rb, tOwnerID); q.Job.Moves != 1 {
		t.Fatalf("receiver told the owner %v, want moves 1", q)
	}
	ack := tOne[*wire.MigrateAck](t, rb, 1)
	if got := runningIDs(b); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("receiver runs %v, want [2]", got)
	}
	if e := tOneEvent(t, rb, EvMigrated); e.Reason != MechInternodePush {
		t.Fatalf("migrated event %+v", e)
	}
	// A duplicated transfer is acknowledged, not queued twice.
	b.Step(6*time.Second, 1, mj)
	rb = tDrain(b)
	tOne[*wire.MigrateAck](t, rb, 1)
	if len(b.queue) != 1 {
		t.Fatalf("receiver queue %d after a duplicate transfer, want 1", len(b.queue))
	}
	n.Step(6*time.Second, tB, ack)
	tDrain(n)
	if slices.Contains(n.Snapshot().Held, 2) {
		t.Fatal("acknowledged job still held by the sender")
	}
}

func TestPushRespectsNBCAndCapability(t *testing.T) {
	fits := Vec{4, 8, 0}
	for name, l := range map[string]*wire.Load{
		"nbc below the job's BC": vLoad(can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}, fits, 1, 0, 0.5),
		"not capable":            vLoad(can.Point{0, 0, vAmt(4, 8)}, fits, 0, 0, 0),
		"no residual":            vLoad(can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}, Vec{1, 8, 0}, 0, 0, 0),
	} {
		t.Run(name, func(t *testing.T) {
			n, _ := vNode(t, SchedLIPush, tNb(tB, zUp0(), l))
			vAssign(n, 0, vSpec(1, 4, 0, time.Hour))
			spec := vSpec(2, 2, 0, time.Hour)
			spec.Req[0], spec.Req[1] = 100, 100 // needs a little of both resources
			vAssign(n, 0, spec)
			n.holding(2).bc = 3
			n.Tick(5*time.Second, core.TimerSched)
			tNone[*wire.MigrateOffer](t, tDrain(n))
		})
	}
}

// TestOwnerFollowsMigratedCopy: the owner moves to the copy that moved
// further and cancels the stale one when it reports.
func TestOwnerFollowsMigratedCopy(t *testing.T) {
	v := &fakeView{id: tOwnerID, zone: zSelf(), point: pSelfNo()}
	o := tNew(v, Config{Mode: SchedLIPull, Res: vRes{}}, 1, nil)
	spec := tSpec(9, time.Hour)
	o.owned[9] = &owned{spec: spec, run: 1, epoch: 1, runEpoch: 1}
	o.Step(time.Second, tB, &wire.JobQueued{Job: &wire.JobRef{Id: 9, Epoch: 1, Moves: 1}})
	if r := tDrain(o); len(tTo[*wire.JobCancel](r, tB)) > 0 {
		t.Fatal("owner cancelled the migrated copy")
	}
	if got := o.owned[9]; got.run != tB || got.moves != 1 {
		t.Fatalf("owner follows %d (moves %d), want %d (1)", got.run, got.moves, tB)
	}
	// The old run node reports its (stale) copy: it must go.
	o.Step(2*time.Second, 1, &wire.RunHeartbeat{Held: []*wire.JobRef{{Id: 9, Epoch: 1}}})
	c := tOne[*wire.JobCancel](t, tDrain(o), 1)
	if c.Job.Moves != 0 {
		t.Fatalf("cancel %v, want the old copy (moves 0)", c)
	}
	// A copy that did not move further is not followed.
	o.Step(3*time.Second, 3, &wire.JobQueued{Job: &wire.JobRef{Id: 9, Epoch: 1, Moves: 1}})
	tOne[*wire.JobCancel](t, tDrain(o), 3)
}

// TestUnacknowledgedMigrationIsResentThenTakenBack: a receiver that never
// acknowledges gets the job again each period; after the failure timeout
// the sender runs it itself.
func TestUnacknowledgedMigrationIsResentThenTakenBack(t *testing.T) {
	bPoint := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}
	n, _ := vNode(t, SchedLIPush, tNb(tB, zUp0(), vLoad(bPoint, Vec{4, 8, 0}, 0, 0, 0)))
	vAssign(n, 0, vSpec(1, 4, 0, time.Hour))
	vAssign(n, 0, vSpec(2, 2, 0, time.Hour))
	n.Tick(5*time.Second, core.TimerSched)
	off := tOne[*wire.MigrateOffer](t, tDrain(n), tB)
	n.Step(5*time.Second, tB, &wire.MigrateReply{Job: off.Job, Accept: true, Kind: off.Kind})
	tDrain(n)
	resent := 0
	var back Ready
	for now := tPeriod; now <= 5*tPeriod; now += tPeriod {
		n.Tick(now, core.TimerJobs)
		r := tDrain(n)
		resent += len(tTo[*wire.MigrateJob](r, tB))
		if len(tEvents(r, EvMigrationReturned)) > 0 {
			back = r
			break
		}
	}
	if resent < 2 {
		t.Fatalf("resent %d times before giving up, want every period", resent)
	}
	if len(back.Events) == 0 || n.holding(2) == nil {
		t.Fatal("the unacknowledged job was not taken back")
	}
}

func TestPullRequestGetsFittingJobOrReject(t *testing.T) {
	n, _ := vNode(t, SchedLIPull)
	vAssign(n, 0, vSpec(1, 4, 0, time.Hour))
	vAssign(n, 0, vSpec(2, 3, 0, time.Hour))
	vAssign(n, 0, vSpec(3, 1, 0, time.Hour))
	puller := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}
	// Two free cores at the puller: job 3 (1 core) fits, job 2 (3) does not.
	n.Step(time.Second, tB, &wire.PullRequest{Kind: wire.MigrateKind_MIGRATE_INTERNODE, Residual: []float32{2, 8, 0}, Point: puller})
	mj := tOne[*wire.MigrateJob](t, tDrain(n), tB)
	if mj.Job.Id != 3 || !mj.Pull {
		t.Fatalf("pulled %v, want job 3", mj)
	}
	// Nothing left that fits one free core with no memory: PULL-Reject.
	n.Step(2*time.Second, tB, &wire.PullRequest{Kind: wire.MigrateKind_MIGRATE_INTERNODE, Residual: []float32{1, 0, 0}, Point: puller})
	tOne[*wire.PullReject](t, tDrain(n), tB)
}

func TestPullRejectTriesNextNeighbor(t *testing.T) {
	p := func(v uint32) can.Point { return can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, v)} }
	n, _ := vNode(t, SchedLIPull,
		tNb(tB, zUp0(), vLoad(p(8), Vec{}, 5, 0, 2)),
		tNb(3, zUp1(), vLoad(p(8), Vec{}, 2, 0, 1)))
	n.Tick(time.Second, core.TimerSched)
	tOne[*wire.PullRequest](t, tDrain(n), tB) // the longest queue first
	n.Step(time.Second, tB, &wire.PullReject{Kind: wire.MigrateKind_MIGRATE_INTERNODE})
	r := tDrain(n)
	tOne[*wire.PullRequest](t, r, 3)
	if e := tOneEvent(t, r, EvPullRejected); e.Other != tB {
		t.Fatalf("reject event %+v", e)
	}
	// Rejected neighbors are not asked again within a heartbeat period.
	n.Step(time.Second, 3, &wire.PullReject{Kind: wire.MigrateKind_MIGRATE_INTERNODE})
	tNone[*wire.PullRequest](t, tDrain(n))
}

// TestPullTargetReadings is 000 §IV-B's two readings of "the node with
// maximum queue size among its neighbors": waiting asks only a neighbor
// whose heartbeat showed jobs waiting (here none did: no request), queue
// asks the largest queue, running jobs included, and after a PULL-Reject
// the next largest not contacted recently.
func TestPullTargetReadings(t *testing.T) {
	p := func(v uint32) can.Point { return can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, v)} }
	busy := func(queue uint32) *wire.Load { l := vLoad(p(8), Vec{}, 0, 0, 0); l.Queue = queue; return l }
	for _, target := range PullTargets {
		t.Run(target.String(), func(t *testing.T) {
			v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)},
				nbs: []*overlay.Neighbor{tNb(tB, zUp0(), busy(2)), tNb(3, zUp1(), busy(4)), tNb(4, zUp1(), busy(0))}}
			n := tNew(v, Config{Mode: SchedLIPull, Res: vRes{}, SchedPeriod: 5 * time.Second, PullTarget: target}, 1, nil)
			tDrain(n)
			n.Tick(time.Second, core.TimerSched)
			r := tDrain(n)
			if target == PullTargetWaiting {
				tNone[*wire.PullRequest](t, r)
				return
			}
			tOne[*wire.PullRequest](t, r, 3) // the largest queue
			n.Step(time.Second, 3, &wire.PullReject{Kind: wire.MigrateKind_MIGRATE_INTERNODE})
			tOne[*wire.PullRequest](t, tDrain(n), tB)
			n.Step(time.Second, tB, &wire.PullReject{Kind: wire.MigrateKind_MIGRATE_INTERNODE})
			tNone[*wire.PullRequest](t, tDrain(n)) // node 4 has no job at all
		})
	}
}

// vReachNode is vNode with PULL requests that may travel reach hops.
func vReachNode(t *testing.T, reach int, nbs ...*overlay.Neighbor) *Node {
	t.Helper()
	v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}, nbs: nbs}
	n := tNew(v, Config{Mode: SchedLIPull, Res: vRes{}, SchedPeriod: 5 * time.Second, PullReach: reach}, 1, nil)
	tDrain(n)
	return n
}

// TestPullTravelsBeyondNeighbors is scheduling.pull_reach > 1 (a gridbed
// extension of 000 §IV-B): an idle node whose neighbors have nothing
// waiting asks the one that knows a queue among its own neighbors; a node
// without a fitting job passes the request on (never back, never to the
// puller) while hops are left, and rejects to the puller when none are;
// the job holder sends the job straight to the puller; the puller takes
// the answer from whoever gives it, but not an older request's reject.
func TestPullTravelsBeyondNeighbors(t *testing.T) {
	p := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}
	near := func(l *wire.Load, w uint32) *wire.Load { l.NearWaiting = w; return l }
	// The puller: neither neighbor waits; tB knows a queue of 4 next to it.
	n := vReachNode(t, 3,
		tNb(tB, zUp0(), near(vLoad(p, Vec{}, 0, 0, 1), 4)),
		tNb(3, zUp1(), near(vLoad(p, Vec{}, 0, 0, 1), 0)))
	n.Tick(time.Second, core.TimerSched)
	req := tOne[*wire.PullRequest](t, tDrain(n), tB)
	if req.Puller != 1 || req.HopsLeft != 2 || req.Seq == 0 {
		t.Fatalf("request %v: want puller 1, 2 hops left, a number", req)
	}
	n.Step(2*time.Second, 9, &wire.PullReject{Kind: wire.MigrateKind_MIGRATE_INTERNODE, Seq: req.Seq + 7})
	if r := tDrain(n); len(tEvents(r, EvPullRejected)) != 0 {
		t.Fatal("another request's reject was taken")
	}
	n.Step(2*time.Second, 9, &wire.PullReject{Kind: wire.MigrateKind_MIGRATE_INTERNODE, Seq: req.Seq})
	r := tDrain(n)
	tOneEvent(t, r, EvPullRejected)
	tNone[*wire.PullRequest](t, r) // tB asked recently, 3 knows no queue
	// Without the extension the same neighbors get no request at all.
	plain := vReachNode(t, 1,
		tNb(tB, zUp0(), near(vLoad(p, Vec{}, 0, 0, 1), 4)))
	plain.Tick(time.Second, core.TimerSched)
	tNone[*wire.PullRequest](t, tDrain(plain))

	// A node without a fitting job passes the request on to the neighbor
	// with the longest queue, skipping the sender (tB) and the puller (7).
	f := vReachNode(t, 3,
		tNb(tB, zUp0(), vLoad(p, Vec{}, 9, 0, 1)),
		tNb(7, zUp1(), vLoad(p, Vec{}, 8, 0, 1)),
		tNb(4, zUp2(), vLoad(p, Vec{}, 3, 0, 1)))
	in := &wire.PullRequest{Kind: wire.MigrateKind_MIGRATE_INTERNODE, Residual: []float32{4, 8, 0}, Point: p, Puller: 7, HopsLeft: 2, Seq: 5}
	f.Step(time.Second, tB, in)
	r = tDrain(f)
	fwd := tOne[*wire.PullRequest](t, r, 4)
	if fwd.Puller != 7 || fwd.HopsLeft != 1 || fwd.Seq != 5 {
		t.Fatalf("forwarded %v", fwd)
	}
	tOneEvent(t, r, EvPullForwarded)
	// No hops left: the reject goes to the puller, with its number.
	in.HopsLeft = 0
	f.Step(2*time.Second, tB, in)
	if rej := tOne[*wire.PullReject](t, tDrain(f), 7); rej.Seq != 5 {
		t.Fatalf("reject %v", rej)
	}

	// The holder sends a fitting job to the puller, not to the sender.
	h, _ := vNode(t, SchedLIPull)
	vAssign(h, 0, vSpec(1, 4, 0, time.Hour))
	vAssign(h, 0, vSpec(2, 1, 0, time.Hour))
	h.Step(time.Second, 4, &wire.PullRequest{Kind: wire.MigrateKind_MIGRATE_INTERNODE, Residual: []float32{2, 8, 0}, Point: p, Puller: 7, HopsLeft: 1, Seq: 5})
	if mj := tOne[*wire.MigrateJob](t, tDrain(h), 7); mj.Job.Id != 2 || !mj.Pull {
		t.Fatalf("sent %v, want job 2 pulled", mj)
	}

	// The puller takes a pulled job from a node that is not its neighbor
	// as the answer to its request.
	n2 := vReachNode(t, 3, tNb(tB, zUp0(), near(vLoad(p, Vec{}, 0, 0, 1), 4)))
	n2.Tick(time.Second, core.TimerSched)
	tOne[*wire.PullRequest](t, tDrain(n2), tB)
	n2.Step(2*time.Second, 9, &wire.MigrateJob{Job: vSpec(5, 4, 0, time.Hour), Owner: uint64(tOwnerID), Epoch: 1, Moves: 1, Kind: wire.MigrateKind_MIGRATE_INTERNODE, Pull: true})
	r = tDrain(n2)
	tOne[*wire.MigrateAck](t, r, 9)
	if n2.sched.pulling != 0 || !slices.Equal(runningIDs(n2), []uint64{5}) {
		t.Fatalf("pulling %d, running %v after the pulled job arrived", n2.sched.pulling, runningIDs(n2))
	}
}

// TestPullWhenCoresFallIdle: PULL is eager (000 §V-B) — a node asks as
// soon as a job finishes and leaves cores idle with nothing waiting, and
// again after a pulled job that leaves cores free, not at its next round;
// a PUSH node waits for its round.
func TestPullWhenCoresFallIdle(t *testing.T) {
	p := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}
	for _, mode := range []SchedMode{SchedLIPull, SchedLIPush} {
		n, _ := vNode(t, mode, tNb(tB, zUp0(), vLoad(p, Vec{}, 5, 0, 2)))
		vAssign(n, 0, vSpec(1, 4, 0, time.Minute))
		n.Tick(time.Minute, core.TimerRunDone)
		r := tDrain(n)
		if mode == SchedLIPush {
			tNone[*wire.PullRequest](t, r)
			continue
		}
		tOne[*wire.PullRequest](t, r, tB)
		// The neighbor sends a 1-core job: three cores still idle, ask again
		// (the neighbor was not rejected: it may have more).
		n.Step(time.Minute+time.Second, tB, &wire.MigrateJob{Job: vSpec(2, 1, 0, time.Hour), Owner: uint64(tOwnerID), Epoch: 1, Moves: 1, Kind: wire.MigrateKind_MIGRATE_INTERNODE, Pull: true})
		r = tDrain(n)
		if !slices.Equal(runningIDs(n), []uint64{2}) {
			t.Fatalf("running %v, want the pulled job 2", runningIDs(n))
		}
		tOne[*wire.PullRequest](t, r, tB)
	}
}

func TestQueueBalancingPushFromLocalMaximum(t *testing.T) {
	p := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(4, 8)}
	for _, tc := range []struct {
		name  string
		nbL   float32
		offer bool
	}{{"local maximum", 0.25, true}, {"not the maximum", 5, false}} {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := vNode(t, SchedLIQPush, tNb(tB, zUp0(), vLoad(p, Vec{}, 1, 0, tc.nbL)))
			vAssign(n, 0, vSpec(1, 4, 0, time.Hour))
			vAssign(n, 0, vSpec(2, 2, 0, time.Hour))
			vAssign(n, 0, vSpec(3, 2, 0, time.Hour)) // L = 2/4 + 2/4 = 1
			n.Tick(5*time.Second, core.TimerSched)
			offers, _ := tAll[*wire.MigrateOffer](tDrain(n))
			if (len(offers) == 1) != tc.offer {
				t.Fatalf("offers %v, want offer %v", offers, tc.offer)
			}
			if tc.offer && (offers[0].Kind != wire.MigrateKind_MIGRATE_QUEUE || offers[0].NormLoad != 1) {
				t.Fatalf("offer %v, want queue balancing with L 1", offers[0])
			}
		})
	}
}

// TestDisownWhenPointLeavesZone: an owner whose zone no longer holds a
// job's point tells the run node, which has the point's owner adopt it.
func TestDisownWhenPointLeavesZone(t *testing.T) {
	v := &fakeView{id: tOwnerID, zone: zSelf(), point: pSelfNo()}
	o := tNew(v, Config{Res: vRes{}}, 1, nil)
	o.owned[9] = &owned{spec: tSpec(9, time.Hour), run: 1, epoch: 2, moves: 1}
	o.runHeard[1] = 0
	v.zone = zUp0() // the point is no longer ours
	o.Tick(tPeriod, core.TimerJobs)
	r := tDrain(o)
	hb := tOne[*wire.OwnerHeartbeat](t, r, 1)
	if len(hb.Disowned) != 1 || hb.Disowned[0].Id != 9 || len(o.owned) != 0 {
		t.Fatalf("owner heartbeat %v, owned %d: want job 9 disowned", hb, len(o.owned))
	}
	tOneEvent(t, r, EvDisowned)
	// The old owner answers the run node's next report with the same notice.
	o.Step(tPeriod+time.Second, 1, &wire.RunHeartbeat{Held: []*wire.JobRef{{Id: 9, Epoch: 2, Moves: 1}}})
	r = tDrain(o)
	tNone[*wire.JobCancel](t, r)
	tOne[*wire.OwnerHeartbeat](t, r, 1)

	// The run node routes an adoption to the job's point.
	rv := &fakeView{id: 1, zone: zLow0(), point: pCap(7), next: 77}
	run := tNew(rv, Config{Res: vRes{}}, 1, nil)
	run.Step(0, tOwnerID, &wire.JobAssign{Job: tSpec(9, time.Hour), Owner: uint64(tOwnerID), Epoch: 2})
	tDrain(run)
	run.Step(time.Second, tOwnerID, hb)
	ad := tOne[*wire.JobAdopt](t, tDrain(run), 77)
	if ad.Job.Id != 9 || ad.Epoch != 2 {
		t.Fatalf("adopt %v", ad)
	}
}

// TestCompletedJobMemoryHandedUntilAcknowledged: an owner whose zone
// lost a completed job's point hands that memory to the point (naming
// itself, so the adopter acknowledges) again and again, less often each
// time — right after a heal there may be no route yet — until the
// acknowledgement (a JobCancel) comes.
func TestCompletedJobMemoryHandedUntilAcknowledged(t *testing.T) {
	v := &fakeView{id: tOwnerID, zone: zSelf(), point: pSelfNo(), next: 77}
	o := tNew(v, Config{Res: vRes{}, FailAfter: 3}, 1, nil)
	o.ended[9] = ended{spec: tSpec(9, time.Hour), at: 1}
	v.zone = zUp0() // the point is no longer ours
	var at []int
	for i := 1; i <= 8; i++ {
		o.Tick(time.Duration(i)*tPeriod, core.TimerJobs)
		ms, tos := tAll[*wire.JobAdopt](tDrain(o))
		for k, a := range ms {
			if a.Done && a.Job.Id == 9 && tos[k] == 77 && a.Run == uint64(tOwnerID) {
				at = append(at, i)
			}
		}
	}
	if !slices.Equal(at, []int{1, 2, 4, 8}) {
		t.Fatalf("handed at periods %v, want 1 2 4 8 (the gap doubling)", at)
	}
	o.Step(8*tPeriod+time.Second, 77, &wire.JobCancel{Job: &wire.JobRef{Id: 9}})
	if _, kept := o.ended[9]; kept {
		t.Fatal("the memory was still handed on after the point's owner acknowledged it")
	}
	// The adopter side: a node that remembers the job completed
	// acknowledges the memory with a cancel to its sender.
	av := &fakeView{id: 77, zone: zSelf(), point: pCap(1)}
	a := tNew(av, Config{Res: vRes{}}, 1, nil)
	a.ended[9] = ended{spec: tSpec(9, time.Hour), at: 1}
	a.Step(time.Second, tOwnerID, &wire.JobAdopt{Job: tSpec(9, time.Hour), Done: true, Run: uint64(tOwnerID)})
	tOne[*wire.JobCancel](t, tDrain(a), tOwnerID)
}

// queueCentral is a CentralQueue whose answer a test sets.
type queueCentral struct {
	fakeCentral
	now     core.NodeID
	capable bool
}

func (c *queueCentral) PickNow(job *wire.JobSpec) (core.NodeID, bool) {
	c.asked = append(c.asked, job.Id)
	return c.now, c.capable
}

// CENT-queue (000 §V-A): a job no node can start now waits in the central
// queue, asked for again every period, and is placed once a node can.
func TestCENTQueueWaitsForAFreeNode(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfYes()}
	c := &queueCentral{capable: true}
	n := tNew(v, Config{Scheme: SchemeCENTQueue}, 1, c)
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
	r := tDrain(n)
	tNone[*wire.JobAssign](t, r)
	for _, st := range tTo[*wire.JobStatus](r, tClientID) {
		if len(st.Failed) > 0 {
			t.Fatalf("a job waiting in the central queue failed: %v", st)
		}
	}
	n.Tick(tPeriod, core.TimerJobs)
	tNone[*wire.JobAssign](t, tDrain(n))
	c.now = 42
	n.Tick(2*tPeriod, core.TimerJobs)
	if a := tOne[*wire.JobAssign](t, tDrain(n), 42); a.Job.Id != 7 {
		t.Fatalf("assign %v", a)
	}
	if len(c.asked) != 3 {
		t.Fatalf("central asked %d times, want 3 (submission and two periods)", len(c.asked))
	}
	// No capable node at all: the job fails at once.
	c2 := &queueCentral{}
	n2 := tNew(v, Config{Scheme: SchemeCENTQueue}, 1, c2)
	n2.Step(0, 50, &wire.JobSubmit{Job: tSpec(8, time.Second)})
	failed := false
	for _, st := range tTo[*wire.JobStatus](tDrain(n2), tClientID) {
		failed = failed || len(st.Failed) > 0
	}
	if !failed {
		t.Fatal("a job no node can run did not fail")
	}
}

// TestQueuePullFromNonZeroLocalMinimum: queue-balancing PULL starts at the
// node with the locally minimum non-zero L among its equal-or-less capable
// neighbors (000 §IV-C): a free (L = 0) less capable neighbor does not stop
// it, a less capable neighbor with a smaller non-zero L does.
func TestQueuePullFromNonZeroLocalMinimum(t *testing.T) {
	weak := can.Point{uint32(tQ1) + 10, uint32(tQ1) + 5, vAmt(2, 4)} // at most ours: less capable
	strong := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(8, 16)}
	for _, tc := range []struct {
		name  string
		weakL float32
		pull  bool
	}{{"free weaker neighbor", 0, true}, {"less loaded weaker neighbor", 0.25, false}} {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := vNode(t, SchedLIQPull,
				tNb(tB, zUp0(), vLoad(weak, Vec{2, 4, 0}, 0, 0, tc.weakL)),
				tNb(3, zUp1(), vLoad(strong, Vec{}, 4, 0, 3)))
			vAssign(n, 0, vSpec(1, 4, 0, time.Hour))
			vAssign(n, 0, vSpec(2, 2, 0, time.Hour)) // waiting: L = 2/4
			n.Tick(5*time.Second, core.TimerSched)
			reqs, to := tAll[*wire.PullRequest](tDrain(n))
			if got := len(reqs) == 1 && reqs[0].Kind == wire.MigrateKind_MIGRATE_QUEUE && to[0] == 3; got != tc.pull {
				t.Fatalf("PULL requests %v, want a queue-balancing PULL to the most loaded neighbor: %v", reqs, tc.pull)
			}
		})
	}
}

// TestQueueLoadReadings is scheduling.queue_load (000 Eq 4's Queue_i): a
// node whose cores are all busy with nothing waiting has L = 0 when
// Queue_i is the waiting jobs — "a free node", so it never pulls to
// balance queues — and L > 0 when Queue_i is the whole queue, so as the
// locally least loaded node it asks its most loaded neighbor.
func TestQueueLoadReadings(t *testing.T) {
	strong := can.Point{uint32(tQ2) + 10, uint32(tQ1) + 10, vAmt(8, 16)}
	for _, tc := range []struct {
		reading QueueLoad
		L       float64
		pull    bool
	}{{QueueLoadWaiting, 0, false}, {QueueLoadQueue, 1, true}} {
		t.Run(tc.reading.String(), func(t *testing.T) {
			v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)},
				nbs: []*overlay.Neighbor{tNb(3, zUp1(), vLoad(strong, Vec{}, 4, 0, 3))}}
			n := tNew(v, Config{Mode: SchedLIQPull, Res: vRes{}, SchedPeriod: 5 * time.Second, QueueLoad: tc.reading}, 1, nil)
			tDrain(n)
			vAssign(n, 0, vSpec(1, 4, 0, time.Hour)) // running on every core, nothing waiting
			if got := n.normLoad(); got != tc.L {
				t.Fatalf("L = %v, want %v", got, tc.L)
			}
			n.Tick(5*time.Second, core.TimerSched)
			reqs, to := tAll[*wire.PullRequest](tDrain(n))
			if got := len(reqs) == 1 && reqs[0].Kind == wire.MigrateKind_MIGRATE_QUEUE && to[0] == 3; got != tc.pull {
				t.Fatalf("PULL requests %v to %v, want a queue-balancing PULL to the most loaded neighbor: %v", reqs, to, tc.pull)
			}
		})
	}
}
