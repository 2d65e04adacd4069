// The run node: its FIFO queue, emulated execution, and watching the owner
// of each job it holds (003 §4.1; 000 §IV-A).

package jobs

import (
	"math"
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/wire"
)

// held is a job in this node's run queue.
type held struct {
	spec     *wire.JobSpec
	owner    core.NodeID
	epoch    uint32
	moves    uint32 // migrations so far (000 §IV-B)
	bc       uint32 // backfilling counter: jobs that bypassed it (000 §IV-A)
	demand   Vec
	running  bool
	finishAt time.Duration
	// former is the owner an adoption replaced (confirmed by the new
	// owner's heartbeat): its cancels are stale — it took us for failed
	// and matched the job again while the new owner took it up — and are
	// ignored.
	former core.NodeID
	// offeredTo is the neighbor a PUSH offer for this waiting job is
	// outstanding at (0: none): the job neither starts nor moves meanwhile.
	offeredTo core.NodeID
	// ce is its dominant CE type (002 §4.1.2; the CPU without CEs).
	ce int
}

func (h *held) ref() *wire.JobRef { return &wire.JobRef{Id: h.spec.Id, Epoch: h.epoch, Moves: h.moves} }

// finished is a job this node ran, kept until its owner acknowledges it.
type finished struct {
	ref   *wire.JobRef
	owner core.NodeID
	spec  *wire.JobSpec
}

// onAssign queues a job at this run node (003 §4.1 step 5: FIFO).
func (n *Node) onAssign(now time.Duration, m *wire.JobAssign) {
	owner := core.NodeID(m.Owner)
	if h := n.holding(m.Job.Id); h != nil {
		if m.Epoch > h.epoch {
			h.epoch, h.moves = m.Epoch, 0 // matched here again
		}
		h.owner = owner
		n.sendQueued(owner, h.ref(), slices.Index(n.queue, h))
		return
	}
	if n.ran[m.Job.Id] {
		n.sendRun(owner, nil, []*wire.JobRef{ref(m.Job.Id, m.Epoch)})
		return
	}
	ahead := len(n.queue)
	h := n.enqueue(now, m.Job, owner, m.Epoch, 0, 0)
	n.status.Queued++
	n.event(Event{Kind: EvQueued, Job: m.Job.Id, Attempt: m.Job.Attempt, Other: owner, Hops: m.Hops, Queue: ahead})
	n.sendQueued(owner, h.ref(), ahead)
	n.start(now)
	n.queueChanged()
	n.arm(now)
}

// holding returns the queued or running job id, nil if we do not hold it.
func (n *Node) holding(id uint64) *held {
	for _, h := range n.queue {
		if h.spec.Id == id {
			return h
		}
	}
	return nil
}

// enqueue appends a job to the waiting queue.
func (n *Node) enqueue(now time.Duration, spec *wire.JobSpec, owner core.NodeID, epoch, moves, bc uint32) *held {
	h := &held{spec: spec, owner: owner, epoch: epoch, moves: moves, bc: bc, demand: n.cfg.Res.Demand(spec.Req).clamp(n.capacity), ce: n.dominant(spec.Req)}
	h.demand[ResCores] = max(h.demand[ResCores], 1)
	if h.ce != hetce.CPU {
		h.demand = Vec{} // on its GPU alone: see gpuDemand
	}
	n.queue = append(n.queue, h)
	// The owner's silence is measured from now for this job (the last
	// word of an owner whose earlier jobs ended may be old).
	n.ownerHeard[owner] = max(n.ownerHeard[owner], now)
	return h
}

func (n *Node) sendQueued(owner core.NodeID, r *wire.JobRef, ahead int) {
	q := &wire.JobQueued{Job: r, Queue: uint32(ahead)}
	if owner == n.self {
		n.onQueued(-1, n.self, q)
		return
	}
	n.send(owner, q)
}

func (n *Node) sendRun(owner core.NodeID, held, done []*wire.JobRef) {
	m := &wire.RunHeartbeat{Held: held, Done: done}
	if owner == n.self {
		n.onRunHeartbeat(-1, n.self, m)
		return
	}
	n.send(owner, m)
}

// start runs waiting jobs while they fit in the residual resources, by
// local scheduling (000 §IV-A): FCFS in vanilla mode (the head blocks the
// queue); otherwise backfilling, where a job may start only if its BC is
// at least the head's, the one minimizing BM·FM (Eqs 1-2) starts, and
// every job it bypassed has its BC incremented. A job's run time is its
// work over the node's speed, times α when it shares the node (002 Eq 3.5).
func (n *Node) start(now time.Duration) {
	for {
		i, head := n.nextStart()
		if i < 0 {
			return
		}
		h := n.queue[i]
		for _, a := range n.queue[n.running:i] {
			a.bc++
		}
		copy(n.queue[n.running+1:i+1], n.queue[n.running:i])
		n.queue[n.running] = h
		h.running = true
		n.used = n.used.add(h.demand)
		n.running++
		alpha, speed := 1.0, n.cfg.Speed
		if h.ce != hetce.CPU {
			speed = n.ces[h.ce].Speed // its dominant CE's clock; no contention across CEs (002 Table 4.1)
		} else if n.cfg.Contention {
			alpha = Alpha(n.running, n.used, n.capacity)
		}
		h.finishAt = now + time.Duration(float64(runTime(h.spec.Work, speed))*alpha)
		n.status.Started++
		n.event(Event{Kind: EvStarted, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: h.owner, BC: h.bc, Backfilled: i != head})
		n.ready.SetTimer(core.TimerRunDone, h.finishAt)
	}
}

// nextStart picks the waiting job to start now (-1 for none) and says
// where the waiting queue's head is.
func (n *Node) nextStart() (int, int) {
	if n.ces != nil && n.cfg.Mode == SchedVanilla {
		return n.nextStartCE()
	}
	res := n.residual()
	head, best, bestF := -1, -1, math.Inf(1)
	for i := n.running; i < len(n.queue); i++ {
		h := n.queue[i]
		if h.offeredTo != 0 {
			continue
		}
		if head < 0 {
			head = i
			if n.cfg.Mode == SchedVanilla {
				if Fits(h.demand, res) {
					return i, head
				}
				return -1, head
			}
		}
		if h.bc < n.queue[head].bc || !Fits(h.demand, res) {
			continue
		}
		if f := BalanceFullness(n.capacity, n.used, h.demand); f < bestF-1e-12 {
			best, bestF = i, f
		}
	}
	return best, head
}

// finish completes every running job whose emulated run time is over:
// the result goes to the client (003 §4.1 step 6) and the owner learns it
// from our next heartbeat.
func (n *Node) finish(now time.Duration) {
	changed := false
	for i := 0; i < n.running; {
		h := n.queue[i]
		if h.finishAt > now {
			i++
			continue
		}
		n.queue = slices.Delete(n.queue, i, i+1)
		n.running--
		n.used = n.used.sub(h.demand)
		changed = true
		n.status.Completed++
		n.ran[h.spec.Id] = true
		n.event(Event{Kind: EvCompleted, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: h.owner})
		n.send(core.NodeID(h.spec.Client), &wire.JobResult{Id: h.spec.Id, Attempt: h.spec.Attempt, Run: uint64(n.self)})
		r := h.ref()
		if h.owner == n.self {
			if o, ok := n.owned[h.spec.Id]; ok {
				n.complete(o, n.self)
				continue
			}
			if _, handed := n.disowned[h.spec.Id]; !handed {
				continue
			}
			// We handed its ownership on (disown) and no adopter has
			// confirmed yet: the point's owner learns of the completion
			// as of any disowned finished job (onDisowned, again each
			// period until it acknowledges) — else it would find us
			// silent and run the job again.
			n.done = append(n.done, finished{ref: r, owner: n.self, spec: h.spec})
			n.onDisowned(now, n.self, []*wire.JobRef{r})
			continue
		}
		n.done = append(n.done, finished{ref: r, owner: h.owner, spec: h.spec})
		n.send(h.owner, &wire.RunHeartbeat{Done: []*wire.JobRef{r}})
	}
	if changed {
		n.start(now)
		n.queueChanged()
		n.pullWhenIdle(now)
	}
}

// runNodePeriodic is the run node's side of periodic: tell each owner
// which of its jobs we hold and finished; an owner silent for FailAfter
// periods (timeout) is presumed failed, and each of its jobs is routed to
// the job's point, whose owner now adopts it.
func (n *Node) runNodePeriodic(now, timeout time.Duration) {
	var owners batches[wire.RunHeartbeat]
	for _, h := range n.queue {
		hb := owners.to(h.owner)
		// The copy's moves too: an owner's cancel must name this copy.
		hb.Held = append(hb.Held, h.ref())
	}
	for _, d := range n.done {
		hb := owners.to(d.owner)
		hb.Done = append(hb.Done, d.ref)
	}
	for _, o := range owners.order {
		if o == n.self {
			// We own these ourselves: nothing to watch — unless we handed
			// one's ownership on (its point left our zone) and nobody has
			// adopted it yet: ask the point again (the first adoption may
			// have found no route, or been lost), for as long as we hold
			// the copy or its unacknowledged completion — a copy nobody
			// owns would run on unreported while the client resubmits.
			var again []*wire.JobRef
			for _, r := range slices.Concat(owners.by[o].Held, owners.by[o].Done) {
				if _, ok := n.owned[r.Id]; !ok {
					if h, gone := n.disowned[r.Id]; gone {
						h.at = now
						n.disowned[r.Id] = h
						again = append(again, r)
					}
				}
			}
			n.onDisowned(now, n.self, again)
			continue
		}
		if last, ok := n.ownerHeard[o]; ok && now-last > timeout {
			n.ownerHeard[o] = now // ask again after another timeout
			n.adoptAll(now, o)
			continue
		}
		n.send(o, owners.by[o])
	}
}

// adoptAll routes every job we hold for silent owner o to its point: the
// zone's current owner (o's take-over node, typically) adopts it.
func (n *Node) adoptAll(now time.Duration, o core.NodeID) {
	for _, h := range n.queue {
		if h.owner == o {
			n.routeAdopt(now, &wire.JobAdopt{Job: h.spec, Run: uint64(n.self), Epoch: h.epoch, Moves: h.moves})
		}
	}
	// Finished jobs are handed over too, until the adopter acknowledges
	// them (a JobCancel naming them): the owner must learn the job is
	// done, or a copy it matched again meanwhile would run to the end.
	var done []finished
	for _, d := range n.done {
		if d.owner == o {
			done = append(done, d)
		}
	}
	for _, d := range done {
		n.routeAdopt(now, &wire.JobAdopt{Job: d.spec, Run: uint64(n.self), Epoch: d.ref.Epoch, Moves: d.ref.Moves, Done: true})
	}
}

// onOwnerHeartbeat: an owner's periodic word about the jobs we hold for it.
func (n *Node) onOwnerHeartbeat(now time.Duration, from core.NodeID, m *wire.OwnerHeartbeat) {
	if now >= 0 {
		n.ownerHeard[from] = now
	}
	if len(m.Disowned) > 0 {
		n.onDisowned(now, from, m.Disowned)
		return
	}
	listed := map[uint64]bool{}
	for _, r := range m.Jobs {
		listed[r.Id] = true
	}
	for _, h := range n.queue {
		if listed[h.spec.Id] && h.owner != from {
			h.former, h.owner = h.owner, from // an adoption confirmed
		}
	}
	// A finished job another owner lists was adopted after it finished
	// (the adoption was on its way while it ran out): the adopter learns
	// it is done — else it would find us silent and run it again.
	var adopted []*wire.JobRef
	for i, d := range n.done {
		if d.owner != from && listed[d.ref.Id] {
			n.done[i].owner = from
			adopted = append(adopted, d.ref)
		}
	}
	// So is a job we ran to the end whose record its owner already
	// acknowledged, listed by another owner that adopted it after all (the
	// adoption was on its way for longer than the job ran, and the owner
	// that heard of the completion did not tell it): it would find us
	// silent and run the job again.
	for _, r := range m.Jobs {
		if n.ran[r.Id] && n.holding(r.Id) == nil && n.sched.outbound[r.Id] == nil &&
			!slices.ContainsFunc(n.done, func(d finished) bool { return d.ref.Id == r.Id }) &&
			!slices.ContainsFunc(adopted, func(a *wire.JobRef) bool { return a.Id == r.Id }) {
			adopted = append(adopted, r)
		}
	}
	switch {
	case len(adopted) == 0:
	case from == n.self: // we adopted it ourselves (ownerBeat)
		for _, r := range adopted {
			if o, ok := n.owned[r.Id]; ok {
				n.complete(o, n.self)
			}
		}
	default:
		n.send(from, &wire.RunHeartbeat{Done: adopted})
	}
	// Finished jobs the owner no longer lists are acknowledged.
	n.done = slices.DeleteFunc(n.done, func(d finished) bool { return d.owner == from && !listed[d.ref.Id] })
	if m.Leaving && now >= 0 {
		n.adoptAll(now, from)
	}
}

// onCancel drops a copy of a job the owner runs elsewhere, queued or
// running (a running copy is aborted: emulated work costs nothing, and a
// job must not complete twice); for a job we finished, it is the
// adopter's acknowledgement.
func (n *Node) onCancel(now time.Duration, from core.NodeID, m *wire.JobCancel) {
	if m.Job == nil {
		return
	}
	// A finished job's record goes: its owner (or adopter) has it —
	// unless the cancel comes from the owner we report it to: that owner
	// matched the job again without hearing of the completion (it found
	// us silent) and cancels the copy it abandoned; it learns the job is
	// done, and its heartbeat acknowledges the record as usual.
	var report []*wire.JobRef
	n.done = slices.DeleteFunc(n.done, func(d finished) bool {
		if d.ref.Id != m.Job.Id {
			return false
		}
		if d.owner == from && from != n.self {
			report = append(report, d.ref)
			return false
		}
		return true
	})
	if len(report) > 0 {
		n.send(from, &wire.RunHeartbeat{Done: report})
	}
	// So does the memory of a completed job we were handing on.
	if e, ok := n.ended[m.Job.Id]; ok && e.handing {
		delete(n.ended, m.Job.Id)
	}
	for i, h := range n.queue {
		if h.spec.Id == m.Job.Id && h.epoch == m.Job.Epoch && h.moves == m.Job.Moves {
			if from == h.former {
				return // its owner now is another
			}
			n.queue = slices.Delete(n.queue, i, i+1)
			if h.running {
				n.running--
				n.used = n.used.sub(h.demand)
			}
			n.status.Cancels++
			n.event(Event{Kind: EvCancelled, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: from})
			if now >= 0 {
				n.start(now)
			}
			n.queueChanged()
			return
		}
	}
	// A copy we are moving to a neighbor (not yet acknowledged) is
	// neither resent nor taken back: a copy the neighbor got reports to
	// its owner, which cancels it.
	if ob := n.sched.outbound[m.Job.Id]; ob != nil && ob.h.epoch == m.Job.Epoch && ob.h.moves == m.Job.Moves && from != ob.h.former {
		delete(n.sched.outbound, m.Job.Id)
		n.status.Cancels++
		n.event(Event{Kind: EvCancelled, Job: m.Job.Id, Attempt: ob.h.spec.Attempt, Other: from})
	}
}
