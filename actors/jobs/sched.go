package jobs

import (
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// Migration mechanism names (metric labels, summary keys).
const (
	MechInternodePush = "internode_push"
	MechInternodePull = "internode_pull"
	MechQueuePush     = "queue_push"
	MechQueuePull     = "queue_pull"
)

// Mechanism names a migration by kind and direction.
func Mechanism(kind wire.MigrateKind, pull bool) string {
	switch {
	case kind == wire.MigrateKind_MIGRATE_QUEUE && pull:
		return MechQueuePull
	case kind == wire.MigrateKind_MIGRATE_QUEUE:
		return MechQueuePush
	case pull:
		return MechInternodePull
	}
	return MechInternodePush
}

// outbound is a job sent to a neighbor and not yet acknowledged: it is
// ours until then, resent every period, and taken back when the receiver
// stays silent for the failure timeout.
type outbound struct {
	m     *wire.MigrateJob
	to    core.NodeID
	since time.Duration
	h     *held
}

// reservation holds resources a node promised to an accepted PUSH offer
// until the job arrives (or the promise expires).
type reservation struct {
	id    uint64
	d     Vec
	until time.Duration
}

// scheduler is a node's dynamic scheduling state (000 §IV).
type scheduler struct {
	reserved     Vec
	reservations []reservation
	outbound     map[uint64]*outbound
	offerJob     uint64 // the waiting job a PUSH offer is outstanding for
	offerAt      time.Duration
	pulling      core.NodeID // the neighbor a PULL request is outstanding at
	pullAt       time.Duration
	pullSeq      uint32                        // the outstanding PULL request's number
	asked        map[core.NodeID]time.Duration // last PULL reject per neighbor
	ticking      bool
}

func (s *scheduler) init() {
	*s = scheduler{outbound: map[uint64]*outbound{}, asked: map[core.NodeID]time.Duration{}}
}

func (s *scheduler) outboundIDs() []uint64 {
	ids := make([]uint64, 0, len(s.outbound))
	for id := range s.outbound {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *scheduler) reserve(id uint64, d Vec, until time.Duration) {
	s.reservations = append(s.reservations, reservation{id, d, until})
	s.reserved = s.reserved.add(d)
}

// release drops the reservation for job id (0: every expired one at now).
func (s *scheduler) release(id uint64, now time.Duration) {
	s.reservations = slices.DeleteFunc(s.reservations, func(r reservation) bool {
		if r.id == id || id == 0 && r.until <= now {
			s.reserved = s.reserved.sub(r.d)
			return true
		}
		return false
	})
	if len(s.reservations) == 0 {
		s.reserved = Vec{}
	}
}

func (n *Node) internode() bool { return n.cfg.Mode.Internode() }
func (n *Node) balancing() bool { return n.cfg.Mode.Balancing() }
func (n *Node) pulls() bool     { return n.cfg.Mode.Pulls() }

// Joined starts the node's scheduling rounds once its peer is a member
// of the overlay (the first at a random offset: rounds are not in step),
// and reports its queue and residual resources (CENT's view).
func (n *Node) Joined(now time.Duration) {
	n.queueChanged()
	if !n.internode() || n.sched.ticking || n.left {
		return
	}
	n.sched.ticking = true
	at := now + time.Duration(n.rng.Float64()*float64(n.cfg.SchedPeriod))
	n.ready.SetTimer(core.TimerSched, at)
}

// schedule is one round of internode scheduling, then queue balancing
// if internode scheduling had nothing to do (000 §IV-B, §IV-C).
func (n *Node) schedule(now time.Duration) {
	s := &n.sched
	s.release(0, now)
	for id, t := range s.asked { // deleting only: order does not matter
		if now-t >= n.cfg.Period {
			delete(s.asked, id)
		}
	}
	if s.pulling != 0 && now-s.pullAt > n.cfg.SchedPeriod {
		s.pulling = 0 // lost: ask again
	}
	if s.offerJob != 0 && now-s.offerAt > n.cfg.SchedPeriod {
		if h := n.holding(s.offerJob); h != nil {
			h.offeredTo = 0
		}
		s.offerJob = 0
		n.start(now)
	}
	if n.view.Joined() {
		var sent bool
		if n.pulls() {
			sent = n.pullInternode(now)
		} else {
			sent = n.pushInternode(now)
		}
		if !sent && n.balancing() {
			if n.pulls() {
				n.pullQueue(now)
			} else {
				n.pushQueue(now)
			}
		}
	}
	n.ready.SetTimer(core.TimerSched, now+n.cfg.SchedPeriod)
}

// known is a neighbor whose heartbeat carried dynamic-scheduling load.
type known struct {
	id  core.NodeID
	l   *wire.Load // our estimate (estimates.go)
	cap Vec
	res Vec
}

func (n *Node) knownNeighbors() []known {
	var ks []known
	for _, nb := range n.view.Neighbors() {
		if l := n.loadOf(&nb); l != nil && len(l.Residual) == numRes && len(l.Point) == len(n.view.Point()) {
			ks = append(ks, known{id: nb.ID, l: l, cap: n.cfg.Res.Capacity(l.Point), res: vecOf(l.Residual)})
		}
	}
	return ks
}

// nbcAllows is the NBC rule (000 §IV-B): a job may move to a node only if
// its BC is at most the BC of the head of the node's waiting queue.
func nbcAllows(bc uint32, waiting bool, nbc uint32) bool { return !waiting || bc <= nbc }

// pushInternode is internode PUSH (000 §IV-B): the first waiting job that
// fits a neighbor's residual resources goes, after a confirming handshake,
// to the neighbor minimizing BM·FM/CPU speed (Eq 3).
func (n *Node) pushInternode(now time.Duration) bool {
	if n.sched.offerJob != 0 {
		return false
	}
	ks := n.knownNeighbors()
	for _, h := range n.queue[n.running:] {
		if h.offeredTo != 0 {
			continue
		}
		var best *known
		bestF := math.Inf(1)
		for i := range ks {
			k := &ks[i]
			if k.l.Speed <= 0 || !capable(k.l.Point, k.l.Combo, h.spec.Req, h.spec.Cid) || !nbcAllows(h.bc, k.l.Waiting > 0, k.l.Nbc) {
				continue
			}
			d := n.cfg.Res.Demand(h.spec.Req).clamp(k.cap)
			if !Fits(d, k.res) {
				continue
			}
			if f := BalanceFullness(k.cap, k.cap.sub(k.res), d) / float64(k.l.Speed); f < bestF {
				best, bestF = k, f
			}
		}
		if best != nil {
			n.offer(now, h, best.id, wire.MigrateKind_MIGRATE_INTERNODE, 0)
			return true
		}
	}
	return false
}

// pushQueue is queue-balancing PUSH (000 §IV-C): a node whose normalized
// load L is the local maximum offers the waiting job and receiver that
// minimize TLL·MLL after the move (Eqs 6-8), among moves that leave the
// receiver below our L.
func (n *Node) pushQueue(now time.Duration) bool {
	if n.sched.offerJob != 0 || n.running == len(n.queue) {
		return false
	}
	L := n.normLoad()
	ks := n.knownNeighbors()
	if L == 0 || len(ks) == 0 {
		return false
	}
	tll := L
	for _, k := range ks {
		l := float64(k.l.NormLoad)
		if l >= L {
			return false // not the local maximum
		}
		tll += l
	}
	// others[i] is MLL's part the move leaves alone: the largest load
	// among the neighbors but i.
	others := make([]float64, len(ks))
	for i := range ks {
		for j, k := range ks {
			if j != i {
				others[i] = max(others[i], float64(k.l.NormLoad))
			}
		}
	}
	w := n.queueLoad()
	var bestH *held
	var bestK *known
	bestF := math.Inf(1)
	for _, h := range n.queue[n.running:] {
		if h.offeredTo != 0 {
			continue
		}
		ls := NormLoad(w.sub(Normalized(h.demand, n.capacity)))
		for i := range ks {
			k := &ks[i]
			if !capable(k.l.Point, k.l.Combo, h.spec.Req, h.spec.Cid) || !nbcAllows(h.bc, k.l.Waiting > 0, k.l.Nbc) {
				continue
			}
			lu0 := float64(k.l.NormLoad)
			lu := lu0 + NormLoad(Normalized(n.cfg.Res.Demand(h.spec.Req).clamp(k.cap), k.cap))
			if lu >= L {
				continue
			}
			if f := (tll - L + ls - lu0 + lu) * max(ls, lu, others[i]); f < bestF {
				bestH, bestK, bestF = h, k, f
			}
		}
	}
	if bestH == nil {
		return false
	}
	n.offer(now, bestH, bestK.id, wire.MigrateKind_MIGRATE_QUEUE, L)
	return true
}

// queueLoad is W (000 Eq 4): the normalized requirements of the jobs in
// Queue_i — the waiting ones, or with scheduling.queue_load queue the
// running ones too.
func (n *Node) queueLoad() Vec {
	from := n.running
	if n.cfg.QueueLoad == QueueLoadQueue {
		from = 0
	}
	var w Vec
	for _, h := range n.queue[from:] {
		w = w.add(Normalized(h.demand, n.capacity))
	}
	return w
}

// offer starts PUSH's confirming handshake for waiting job h.
func (n *Node) offer(now time.Duration, h *held, to core.NodeID, kind wire.MigrateKind, l float64) {
	h.offeredTo = to
	n.sched.offerJob, n.sched.offerAt = h.spec.Id, now
	n.send(to, &wire.MigrateOffer{Job: h.ref(), Req: h.spec.Req, Bc: h.bc, Kind: kind, NormLoad: float32(l), Cid: h.spec.Cid})
}

// onOffer answers a PUSH offer: accepted if we are capable, the NBC rule
// allows it and — internode — the job fits our residual resources now
// (they are reserved for it) or — queue balancing — the move leaves our L
// below the sender's.
func (n *Node) onOffer(now time.Duration, from core.NodeID, m *wire.MigrateOffer) {
	if m.Job == nil {
		return
	}
	id := m.Job.Id
	ok := n.internode() && len(m.Req) == len(n.view.Point()) && n.holding(id) == nil && !n.ran[id] &&
		capable(n.view.Point(), n.cfg.Combo, m.Req, m.Cid) && nbcAllows(m.Bc, n.running < len(n.queue), n.nbc())
	d := n.cfg.Res.Demand(m.Req).clamp(n.capacity)
	if ok {
		switch m.Kind {
		case wire.MigrateKind_MIGRATE_INTERNODE:
			ok = n.running == len(n.queue) && Fits(d, n.residual())
			if ok {
				n.sched.reserve(id, d, now+2*n.cfg.SchedPeriod)
			}
		case wire.MigrateKind_MIGRATE_QUEUE:
			ok = n.normLoad()+NormLoad(Normalized(d, n.capacity)) < float64(m.NormLoad)
		default:
			ok = false
		}
	}
	n.send(from, &wire.MigrateReply{Job: m.Job, Accept: ok, Kind: m.Kind})
}

// onReply ends PUSH's handshake: an accepted job is sent; after a refusal
// our view of the neighbor is corrected until its next heartbeat.
func (n *Node) onReply(now time.Duration, from core.NodeID, m *wire.MigrateReply) {
	if m.Job == nil {
		return
	}
	if n.sched.offerJob == m.Job.Id {
		n.sched.offerJob = 0
	}
	h := n.holding(m.Job.Id)
	if h == nil || h.running || h.offeredTo != from {
		return
	}
	h.offeredTo = 0
	if !m.Accept {
		n.status.OfferRejects++
		n.event(Event{Kind: EvOfferRejected, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: from, Reason: Mechanism(m.Kind, false)})
		if l := n.neighborLoad(from); l != nil {
			if m.Kind == wire.MigrateKind_MIGRATE_QUEUE {
				l.NormLoad = float32(math.Inf(1))
			} else if len(l.Residual) == numRes {
				l.Residual[ResCores] = 0
			}
		}
		n.start(now)
		return
	}
	n.transfer(now, h, from, m.Kind, false)
}

// neighborLoad is our estimate of neighbor id's load (nil: none).
func (n *Node) neighborLoad(id core.NodeID) *wire.Load {
	for _, nb := range n.view.Neighbors() {
		if nb.ID == id {
			return n.loadOf(&nb)
		}
	}
	return nil
}

// noteSent counts a job we sent a neighbor in our estimate of its load, so
// that the next decision before its heartbeat does not count on the same
// residual resources or short queue.
func noteSent(l *wire.Load, d Vec, waits bool) {
	l.Queue++
	if l.Free > 0 {
		l.Free--
	}
	l.Demand += float32(d[ResCores])
	if len(l.Residual) != numRes {
		return
	}
	r := vecOf(l.Residual)
	if !waits && Fits(d, r) && l.Waiting == 0 {
		r = r.sub(d)
		l.Residual = r.wire()
		return
	}
	l.Waiting++
	if l.Cores > 0 {
		l.NormLoad += float32(d[ResCores] / float64(l.Cores))
	}
}

// transfer sends waiting job h to a neighbor; we keep it (resending)
// until the neighbor acknowledges it.
func (n *Node) transfer(now time.Duration, h *held, to core.NodeID, kind wire.MigrateKind, pull bool) {
	i := slices.Index(n.queue, h)
	if i < 0 || h.running {
		return
	}
	n.queue = slices.Delete(n.queue, i, i+1)
	m := &wire.MigrateJob{Job: h.spec, Owner: uint64(h.owner), Epoch: h.epoch, Moves: h.moves + 1, Bc: h.bc, Kind: kind, Pull: pull}
	n.sched.outbound[h.spec.Id] = &outbound{m: m, to: to, since: now, h: h}
	n.send(to, m)
	if l := n.neighborLoad(to); l != nil {
		noteSent(l, n.cfg.Res.Demand(h.spec.Req), kind == wire.MigrateKind_MIGRATE_QUEUE)
	}
	n.queueChanged()
	n.arm(now)
}

// onMigrateJob queues a job a neighbor moved to us and tells its owner,
// which follows the copy that moved furthest (owned.follow). A copy we
// already hold or ran is only acknowledged.
func (n *Node) onMigrateJob(now time.Duration, from core.NodeID, m *wire.MigrateJob) {
	id := m.Job.Id
	n.sched.release(id, now)
	if n.sched.pulling == from || m.Pull && n.cfg.PullReach > 1 {
		n.sched.pulling = 0 // the answer to our PULL, from a neighbor or further
	}
	ack := &wire.MigrateAck{Job: &wire.JobRef{Id: id, Epoch: m.Epoch, Moves: m.Moves}}
	if ob := n.sched.outbound[id]; ob != nil && ob.to == from {
		delete(n.sched.outbound, id) // it came back before our transfer was acknowledged
	}
	if n.holding(id) != nil || n.ran[id] || n.sched.outbound[id] != nil {
		n.send(from, ack)
		return
	}
	owner := core.NodeID(m.Owner)
	h := n.enqueue(now, m.Job, owner, m.Epoch, m.Moves, m.Bc)
	k := 0
	if m.Kind == wire.MigrateKind_MIGRATE_QUEUE {
		k = 1
	}
	p := 0
	if m.Pull {
		p = 1
	}
	n.status.Migrations[k][p]++
	n.event(Event{Kind: EvMigrated, Job: id, Attempt: m.Job.Attempt, Other: from, Reason: Mechanism(m.Kind, m.Pull)})
	n.sendQueued(owner, h.ref(), len(n.queue)-1)
	n.send(from, ack)
	n.start(now)
	n.queueChanged()
	n.arm(now)
	if m.Pull {
		n.pullWhenIdle(now)
	}
}

func (n *Node) onMigrateAck(from core.NodeID, m *wire.MigrateAck) {
	if m.Job == nil {
		return
	}
	if ob := n.sched.outbound[m.Job.Id]; ob != nil && ob.to == from && ob.m.Moves == m.Job.Moves {
		delete(n.sched.outbound, m.Job.Id)
	}
}

// resendMigrations resends every unacknowledged job; one whose receiver
// stayed silent for the failure timeout is taken back to the head of our
// waiting queue (its owner sorts out a copy the receiver did get).
func (n *Node) resendMigrations(now time.Duration) {
	timeout := time.Duration(n.cfg.FailAfter) * n.cfg.Period
	for _, id := range n.sched.outboundIDs() {
		ob := n.sched.outbound[id]
		if now-ob.since <= timeout {
			n.send(ob.to, ob.m)
			continue
		}
		delete(n.sched.outbound, id)
		ob.h.offeredTo = 0
		n.queue = slices.Insert(n.queue, n.running, ob.h)
		n.status.MigrationReturns++
		n.event(Event{Kind: EvMigrationReturned, Job: id, Attempt: ob.h.spec.Attempt, Other: ob.to, Reason: Mechanism(ob.m.Kind, ob.m.Pull)})
		n.start(now)
		n.queueChanged()
	}
}

// pullInternode is internode PULL (000 §IV-B): a node with idle cores and
// nothing waiting asks the neighbor with the longest waiting queue, not
// asked recently, for a job that fits.
func (n *Node) pullInternode(now time.Duration) bool {
	if n.sched.pulling != 0 || n.running < len(n.queue) || n.free() < 1 {
		return false
	}
	to := n.pullTarget(n.knownNeighbors(), func(id core.NodeID) bool { return n.askedRecently(id, now) })
	if to == 0 {
		return false
	}
	n.requestPull(now, to, wire.MigrateKind_MIGRATE_INTERNODE)
	return true
}

// pullTarget is the neighbor an internode PULL request goes to (000
// §IV-B): among ks, those not skipped, the one with the longest waiting
// queue (with scheduling.pull_target queue: the largest queue, running
// jobs included, whatever it said of waiting ones); with scheduling.pull_reach > 1 and no neighbor waiting, the one
// that knows the longest queue among its own neighbors (Load's
// near_waiting). 0: none.
func (n *Node) pullTarget(ks []known, skip func(core.NodeID) bool) core.NodeID {
	var best core.NodeID
	var bestW uint32
	for _, pass := range []bool{false, true} {
		if pass && (best != 0 || n.cfg.PullReach <= 1) {
			break
		}
		for _, k := range ks {
			w := k.l.Waiting
			if pass {
				w = k.l.NearWaiting
			} else if n.cfg.PullTarget == PullTargetQueue {
				w = k.l.Queue
			}
			if w == 0 || skip(k.id) {
				continue
			}
			if w > bestW || w == bestW && k.id < best {
				best, bestW = k.id, w
			}
		}
	}
	return best
}

// nearWaiting is the longest waiting queue among our neighbors, as their
// heartbeats told it (Load's near_waiting, scheduling.pull_reach > 1).
func (n *Node) nearWaiting() uint32 {
	var w uint32
	for _, nb := range n.view.Neighbors() {
		if l := n.loadOf(&nb); l != nil {
			w = max(w, l.Waiting)
		}
	}
	return w
}

// pullWhenIdle is PULL's eagerness (000 §V-B: "idle nodes more
// aggressively try to find jobs to run"): a node whose cores fall idle —
// a job finished, or a pulled job left cores free — asks at once rather
// than at its next scheduling round.
func (n *Node) pullWhenIdle(now time.Duration) {
	if n.internode() && n.pulls() && n.view.Joined() && !n.left {
		n.pullInternode(now)
	}
}

// pullQueue is queue-balancing PULL (000 §IV-C): the node with the
// locally minimum non-zero L among its equal-or-less capable neighbors
// asks its most loaded neighbor (not asked recently) for a job. A
// neighbor with L = 0 does not count against the minimum: "zero local
// load means a free node, internode scheduling handles that case" (000
// §IV-C) — the minimum is over the non-zero loads.
func (n *Node) pullQueue(now time.Duration) bool {
	if n.sched.pulling != 0 {
		return false
	}
	L := n.normLoad()
	if L == 0 {
		return false // a free node: internode scheduling's case
	}
	var best *known
	for _, k := range n.knownNeighbors() {
		l := float64(k.l.NormLoad)
		if can.Capable(n.view.Point(), k.l.Point) && l > 0 && l < L {
			return false // a less capable neighbor is less loaded
		}
		if l > L && !n.askedRecently(k.id, now) && (best == nil || k.l.NormLoad > best.l.NormLoad) {
			kk := k
			best = &kk
		}
	}
	if best == nil {
		return false
	}
	n.requestPull(now, best.id, wire.MigrateKind_MIGRATE_QUEUE)
	return true
}

func (n *Node) askedRecently(id core.NodeID, now time.Duration) bool {
	t, ok := n.sched.asked[id]
	return ok && now-t < n.cfg.Period
}

func (n *Node) requestPull(now time.Duration, to core.NodeID, kind wire.MigrateKind) {
	r := n.residual()
	n.sched.pulling, n.sched.pullAt = to, now
	m := &wire.PullRequest{
		Kind: kind, Residual: r.wire(),
		Waiting: n.running < len(n.queue), Nbc: n.nbc(), NormLoad: float32(n.normLoad()), Point: n.view.Point(),
		Combo: n.cfg.Combo,
	}
	if kind == wire.MigrateKind_MIGRATE_INTERNODE && n.cfg.PullReach > 1 {
		n.sched.pullSeq++
		m.Puller, m.HopsLeft, m.Seq = uint64(n.self), uint32(n.cfg.PullReach-1), n.sched.pullSeq
	}
	n.send(to, m)
}

// onPullRequest answers a PULL: the waiting job the puller is capable of
// and the NBC rule allows that — internode — fits its residual resources
// with the least BM·FM there, or — queue balancing — lowers the larger of
// our two loads with the least (L_us+L_them)·max(L_us, L_them) after the
// move (Eqs 6-8 over the two nodes that change); else PULL-Reject.
//
// With scheduling.pull_reach > 1 an internode request names its puller,
// which may be further away than a neighbor: the job goes, or the reject
// comes, straight to it; a node without a fitting job passes the request
// on (hops_left permitting) to the neighbor with the longest queue it
// knows of.
func (n *Node) onPullRequest(now time.Duration, from core.NodeID, m *wire.PullRequest) {
	puller := from
	if m.Puller != 0 {
		puller = core.NodeID(m.Puller)
	}
	reject := &wire.PullReject{Kind: m.Kind, Seq: m.Seq}
	if puller == n.self {
		return // our own request came back: nobody to answer
	}
	if len(m.Point) != len(n.view.Point()) || len(m.Residual) != numRes || !n.internode() {
		n.send(puller, reject)
		return
	}
	pcap := n.cfg.Res.Capacity(m.Point)
	res := vecOf(m.Residual)
	L := n.normLoad()
	w := n.queueLoad()
	var best *held
	bestF := math.Inf(1)
	for _, h := range n.queue[n.running:] {
		if h.offeredTo != 0 || !capable(m.Point, m.Combo, h.spec.Req, h.spec.Cid) || !nbcAllows(h.bc, m.Waiting, m.Nbc) {
			continue
		}
		d := n.cfg.Res.Demand(h.spec.Req).clamp(pcap)
		var f float64
		switch m.Kind {
		case wire.MigrateKind_MIGRATE_INTERNODE:
			if !Fits(d, res) {
				continue
			}
			f = BalanceFullness(pcap, pcap.sub(res), d)
		case wire.MigrateKind_MIGRATE_QUEUE:
			ls := NormLoad(w.sub(Normalized(h.demand, n.capacity)))
			lp := float64(m.NormLoad) + NormLoad(Normalized(d, pcap))
			if max(ls, lp) >= L {
				continue
			}
			f = (ls + lp) * max(ls, lp)
		default:
			continue
		}
		if f < bestF {
			best, bestF = h, f
		}
	}
	if best != nil {
		n.transfer(now, best, puller, m.Kind, true)
		return
	}
	if m.Kind == wire.MigrateKind_MIGRATE_INTERNODE && m.HopsLeft > 0 {
		// Not back to the sender, not to the puller (which asked for
		// itself); our own recent rejects say nothing of the puller's needs.
		if to := n.pullTarget(n.knownNeighbors(), func(id core.NodeID) bool { return id == from || id == puller }); to != 0 {
			fwd := proto.Clone(m).(*wire.PullRequest)
			fwd.Puller, fwd.HopsLeft = uint64(puller), m.HopsLeft-1
			n.status.PullForwards++
			n.event(Event{Kind: EvPullForwarded, Other: puller, Reason: MechInternodePull})
			n.send(to, fwd)
			return
		}
	}
	n.send(puller, reject)
}

// onPullReject: try the next neighbor not asked recently, at once.
func (n *Node) onPullReject(now time.Duration, from core.NodeID, m *wire.PullReject) {
	// A request that travelled is answered by whoever ended its journey;
	// its number tells it apart from an older one.
	if n.sched.pulling == 0 || m.Seq == 0 && n.sched.pulling != from || m.Seq != 0 && m.Seq != n.sched.pullSeq {
		return
	}
	n.sched.asked[n.sched.pulling] = now
	n.sched.pulling = 0
	n.status.PullRejects++
	n.event(Event{Kind: EvPullRejected, Other: from, Reason: Mechanism(m.Kind, true)})
	if !n.view.Joined() {
		return
	}
	if m.Kind == wire.MigrateKind_MIGRATE_QUEUE {
		n.pullQueue(now)
	} else if !n.pullInternode(now) && n.balancing() {
		n.pullQueue(now)
	}
}
