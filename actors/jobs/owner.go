// The injection node and the owner of a job (003 §4.1): taking a job up,
// following its run node, re-matching, handing ownership on, and telling
// the client.

package jobs

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// owned is a job this node owns: it holds the profile until the job ends.
type owned struct {
	spec  *wire.JobSpec
	run   core.NodeID // the run node of the copy we follow; 0 while matchmaking
	epoch uint32      // incremented by every (re)match
	// runEpoch and moves name the copy at run (wire.JobRef): the epoch it
	// was matched in — an older one than epoch when we took up a copy that
	// reported while a newer match was on its way — and its migrations
	// within it (000 §IV-B).
	runEpoch, moves uint32
	// assigned is the run node we assigned the current epoch's copy to
	// ourselves (0: none, or the job was pushed on): a match that times
	// out cancels it there.
	assigned core.NodeID
	since    time.Duration // when the current matchmaking started
	// central: waiting in CENT's central queue (SchemeCENTQueue).
	central bool
	// left are the copies we placed and abandoned (a re-match), cancelled
	// but not known gone: we never take one up again, and a completion
	// cancels them once more.
	left []placed
}

// placed names a copy of an owned job: its run node, the epoch it was
// matched in and its migrations (wire.JobRef).
type placed struct {
	run          core.NodeID
	epoch, moves uint32
}

// maxLeft bounds the abandoned copies an owner remembers per job (the
// oldest are forgotten: their run nodes had the longest time to get the
// cancel).
const maxLeft = 16

// leftRef names abandoned copy p of job id.
func leftRef(id uint64, p placed) *wire.JobRef {
	return &wire.JobRef{Id: id, Epoch: p.epoch, Moves: p.moves}
}

// copyRef names the copy we follow.
func (o *owned) copyRef() *wire.JobRef {
	return &wire.JobRef{Id: o.spec.Id, Epoch: o.runEpoch, Moves: o.moves}
}

// abandoned reports whether copy r at run node from is one we abandoned:
// the same copy, or one that migrated on from it (more moves in its
// epoch).
func abandoned(left []placed, from core.NodeID, r *wire.JobRef) bool {
	return slices.ContainsFunc(left, func(p placed) bool {
		return p.epoch == r.Epoch && (p.run == from || r.Moves > p.moves)
	})
}

// handedOn is a job whose ownership we handed on: when (or when a copy of
// it last reported to us), and its profile.
type handedOn struct {
	at   time.Duration
	spec *wire.JobSpec
	// left are the copies we abandoned before (owned.left): cancelled if
	// they report, not sent to the point's owner for adoption.
	left []placed
}

// ended is a completed job an owner remembers (or a failed one whose
// abandoned copies may still report).
type ended struct {
	spec *wire.JobSpec
	at   time.Duration
	// handing: the point left our zone and we hand the memory on to the
	// point's owner until it acknowledges (a JobCancel) or we forget it,
	// next at next, the gap between tries doubling from a period — right
	// after a heal there may be no route yet, and a message may be lost.
	handing   bool
	next, gap time.Duration
	// failed is the reason of a job that failed (forgetFailed); "" for
	// a completed one.
	failed string
}

// status is what the client is told of ended job id (the zero ended: a
// job we ran to completion).
func (e ended) status(id uint64) *wire.JobStatus {
	if e.failed != "" {
		return &wire.JobStatus{Failed: []*wire.JobFailure{{Id: id, Reason: e.failed}}}
	}
	return &wire.JobStatus{Done: []uint64{id}}
}

// endedKeep is how many heartbeat periods an owner remembers a completed
// job: longer than the partitions a run is expected to heal.
const endedKeep = 120

// onRoute forwards a job greedily towards its point; the owner of the
// point becomes the job's owner (003 §4.1 steps 2-3).
func (n *Node) onRoute(now time.Duration, m *wire.JobRoute) {
	p := can.Point(m.Job.Req)
	if n.view.Owns(p) {
		n.own(now, m.Job, m.Hops)
		return
	}
	if next := n.view.NextHop(p, &m.Hops, &m.Best, &m.Detours); next != 0 {
		n.send(next, m)
		return
	}
	n.status.RouteDrops++
	n.event(Event{Kind: EvRouteDrop, Job: m.Job.Id, Attempt: m.Job.Attempt})
}

// own makes this node the owner of a job and starts matchmaking.
func (n *Node) own(now time.Duration, spec *wire.JobSpec, hops uint32) {
	if _, ok := n.owned[spec.Id]; ok {
		// A resubmission of a job we still own: tell the client again.
		n.send(core.NodeID(spec.Client), &wire.JobStatus{Owned: []uint64{spec.Id}})
		return
	}
	if e, done := n.ended[spec.Id]; done || n.ran[spec.Id] {
		// A resubmission of a job that ended here: its outcome was lost.
		n.send(core.NodeID(spec.Client), e.status(spec.Id))
		return
	}
	if h := n.holding(spec.Id); h != nil {
		// A resubmission of a job we run (or queue) for an owner the
		// client no longer hears from — we took over its zone, or it
		// handed the job on and nobody took it up: we own our copy, as if
		// it had asked us to adopt it, rather than place a second one.
		n.onAdopt(now, &wire.JobAdopt{Job: spec, Run: uint64(n.self), Epoch: h.epoch, Moves: h.moves})
		return
	}
	n.status.Owned++
	o := &owned{spec: spec}
	n.owned[spec.Id] = o
	n.event(Event{Kind: EvOwned, Job: spec.Id, Attempt: spec.Attempt, Hops: hops})
	n.send(core.NodeID(spec.Client), &wire.JobStatus{Owned: []uint64{spec.Id}})
	n.arm(now)
	n.match(now, o, hops)
}

// abandon gives up the copies of an owned job that a new match replaces
// (003 §4.1's owner–run-node monitoring presumes a silent run node
// failed, but it may only be slow or cut off): the copy we follow, and
// the one we assigned ourselves in the current epoch if no run node has
// confirmed it. It returns them, to be cancelled (cancelCopies), and
// remembers those of other nodes in o.left, so that none is taken up
// again and a completion cancels them once more.
func (n *Node) abandon(o *owned) []placed {
	var gone []placed
	if o.run != 0 {
		gone = append(gone, placed{run: o.run, epoch: o.runEpoch, moves: o.moves})
	}
	if a := o.assigned; a != 0 && (a != o.run || o.runEpoch != o.epoch) {
		gone = append(gone, placed{run: a, epoch: o.epoch})
	}
	for _, p := range gone {
		if p.run == n.self {
			continue // our own copy: dropped here and now
		}
		if len(o.left) == maxLeft {
			o.left = slices.Delete(o.left, 0, 1)
		}
		o.left = append(o.left, p)
	}
	return gone
}

// cancelCopies cancels abandoned copies of job id — best effort: a dead
// run node ignores it; a live one drops its copy, or, if it already
// finished the job, reports the completion (onCancel).
func (n *Node) cancelCopies(id uint64, gone []placed) {
	for _, p := range gone {
		n.cancel(p.run, leftRef(id, p))
	}
}

// fail ends an owned job as failed and tells the client.
func (n *Node) fail(o *owned, reason string) {
	n.forgetFailed(o, reason)
	n.send(core.NodeID(o.spec.Client), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: o.spec.Id, Reason: reason}}})
}

// forgetFailed drops an owned job that failed. If we abandoned copies of
// it (a re-match that found no capable node), we remember it like a
// completed job, failed: a copy we cancelled that asks us to adopt it
// later (its run node took us for silent) is cancelled again, not taken
// up as a job to run.
func (n *Node) forgetFailed(o *owned, reason string) {
	delete(n.owned, o.spec.Id)
	if len(o.left) > 0 {
		n.ended[o.spec.Id] = ended{spec: o.spec, at: n.now, failed: reason}
	}
}

// onOwnerStatus handles a JobStatus sent to this peer as an owner: a node
// our job was pushed to found no capable node, and told the client.
func (n *Node) onOwnerStatus(m *wire.JobStatus) {
	for _, f := range m.Failed {
		if o, ok := n.owned[f.Id]; ok && o.run == 0 {
			n.forgetFailed(o, f.Reason)
		}
	}
}

// ownerPeriodic is the owner's side of periodic: jobs whose point left our
// zone go to the point's owner; tell each run node which jobs we own
// there; a run node silent for FailAfter periods (timeout) is presumed
// failed and its jobs are matched again, as is a job whose matchmaking
// produced no run node in time. It returns the jobs owned after the
// hand-overs, in order.
func (n *Node) ownerPeriodic(now, timeout time.Duration) []uint64 {
	// Jobs whose point left our zone go to the point's owner.
	if n.view.Joined() {
		for _, id := range n.sortedOwned() {
			if o := n.owned[id]; !n.view.Owns(can.Point(o.spec.Req)) {
				n.disown(now, o)
			}
		}
	}
	ids := n.sortedOwned()
	var runs batches[wire.OwnerHeartbeat]
	var stale, retry, lost []*owned
	for _, id := range ids {
		o := n.owned[id]
		switch {
		case o.run == 0 && o.central:
			retry = append(retry, o)
		case o.run == 0:
			if now-o.since > timeout {
				stale = append(stale, o)
			}
		case o.run == n.self:
			if n.holding(id) == nil && n.sched.outbound[id] == nil {
				// Our own copy is gone — cancelled by a node that owned
				// the job too (zone views that disagreed): nobody would
				// ever notice.
				lost = append(lost, o)
			}
		default:
			if last := n.runHeard[o.run]; now-last > timeout {
				stale = append(stale, o)
				continue
			}
			hb := runs.to(o.run)
			hb.Jobs = append(hb.Jobs, o.copyRef())
		}
	}
	for _, id := range ids {
		for _, p := range n.owned[id].left {
			if hb, ok := runs.by[p.run]; ok {
				hb.Jobs = append(hb.Jobs, leftRef(id, p)) // keeps its completion reported
			}
		}
	}
	for _, r := range runs.order {
		n.send(r, runs.by[r])
	}
	for _, o := range retry {
		n.match(now, o, 0) // ask the central queue again
	}
	for _, o := range stale {
		reason := "matchmaking timed out"
		if o.run != 0 {
			reason = "run node silent"
		}
		n.rematch(now, o, reason)
	}
	for _, o := range lost {
		if n.owned[o.spec.Id] == o {
			n.rematch(now, o, "copy lost")
		}
	}
	return ids
}

// clientStatus tells each client which of its jobs we own, every
// StatusEvery; ids are the jobs ownerPeriodic saw owned.
func (n *Node) clientStatus(now time.Duration, ids []uint64) {
	if now-n.lastStatus >= n.cfg.StatusEvery && len(ids) > 0 {
		n.lastStatus = now
		var clients batches[wire.JobStatus]
		for _, id := range ids {
			o := n.owned[id]
			if o == nil {
				continue // failed, completed or disowned by this very tick
			}
			st := clients.to(core.NodeID(o.spec.Client))
			st.Owned = append(st.Owned, id)
		}
		for _, c := range clients.order {
			n.send(c, clients.by[c])
		}
	}
}

// disown hands the ownership of a job whose point left our zone (a join
// split it off, or a zone conflict after a partition took the zone) to
// the point's owner, so that a job has one owner: a job being matched is
// routed there and matched again; the run node of a placed job is told to
// have it adopted there (the adopter cancels any other copy).
func (n *Node) disown(now time.Duration, o *owned) {
	id := o.spec.Id
	delete(n.owned, id)
	n.disowned[id] = handedOn{at: now, spec: o.spec, left: o.left}
	n.status.Disowned++
	n.event(Event{Kind: EvDisowned, Job: id, Attempt: o.spec.Attempt, Other: o.run})
	r := o.copyRef()
	switch o.run {
	case 0:
		n.onRoute(now, &wire.JobRoute{Job: proto.Clone(o.spec).(*wire.JobSpec)})
	case n.self:
		n.onDisowned(now, n.self, []*wire.JobRef{r})
	default:
		n.send(o.run, &wire.OwnerHeartbeat{Disowned: []*wire.JobRef{r}})
	}
}

func (n *Node) rematch(now time.Duration, o *owned, reason string) {
	n.status.Rematches++
	n.event(Event{Kind: EvRematched, Job: o.spec.Id, Attempt: o.spec.Attempt, Other: o.run, Reason: reason})
	n.match(now, o, 0)
}

func (n *Node) routeAdopt(now time.Duration, m *wire.JobAdopt) {
	p := can.Point(m.Job.Req)
	if n.view.Owns(p) {
		n.onAdopt(now, m)
		return
	}
	if next := n.view.NextHop(p, &m.Hops, &m.Best, &m.Detours); next != 0 {
		n.send(next, m)
		return
	}
	n.status.RouteDrops++
	n.event(Event{Kind: EvRouteDrop, Job: m.Job.Id, Attempt: m.Job.Attempt})
}

// onAdopt takes over ownership of a job whose owner went silent, from its
// run node (003 §4.1: the run node finds the new owner of the job's point).
func (n *Node) onAdopt(now time.Duration, m *wire.JobAdopt) {
	p := can.Point(m.Job.Req)
	if !n.view.Owns(p) {
		n.routeAdopt(now, m)
		return
	}
	run := core.NodeID(m.Run)
	r := &wire.JobRef{Id: m.Job.Id, Epoch: m.Epoch, Moves: m.Moves}
	o, ok := n.owned[m.Job.Id]
	if e, done := n.ended[m.Job.Id]; done && !ok {
		// It ended under us: the copy goes (or, finished, is acknowledged).
		if run != 0 {
			n.cancel(run, r)
		}
		if !m.Done {
			n.send(core.NodeID(m.Job.Client), e.status(m.Job.Id))
		}
		return
	}
	if !ok {
		o = &owned{spec: m.Job}
		n.owned[m.Job.Id] = o
		delete(n.disowned, m.Job.Id)
		if !m.Done {
			n.status.Adoptions++
			n.event(Event{Kind: EvAdopted, Job: m.Job.Id, Attempt: m.Job.Attempt, Other: run})
		}
	}
	if !m.Done && !o.follow(run, r) {
		// We own it and it runs elsewhere: this copy must go.
		n.cancel(run, r)
		return
	}
	if m.Done {
		n.complete(o, run) // cancels a copy we placed elsewhere meanwhile
		if run != 0 {
			n.cancel(run, r) // acknowledges the finished job
			n.ownerBeat(run)
		}
		n.arm(now)
		return
	}
	n.runHeard[run] = now
	o.since = now
	n.send(core.NodeID(m.Job.Client), &wire.JobStatus{Owned: []uint64{m.Job.Id}})
	n.ownerBeat(run)
	n.arm(now)
}

// ownerBeat sends run node r the list of jobs we own there now, the
// copies we abandoned there included: a run node keeps a finished job's
// record, reporting it, for as long as its owner lists the job — a
// heartbeat about other jobs must not acknowledge a completion we never
// heard of (we matched the job again meanwhile, and would run it twice).
func (n *Node) ownerBeat(r core.NodeID) {
	hb := &wire.OwnerHeartbeat{}
	for _, id := range n.sortedOwned() {
		o := n.owned[id]
		if o.run == r {
			hb.Jobs = append(hb.Jobs, o.copyRef())
		}
		for _, p := range o.left {
			if p.run == r {
				hb.Jobs = append(hb.Jobs, leftRef(id, p))
			}
		}
	}
	if r == n.self {
		n.onOwnerHeartbeat(-1, n.self, hb)
		return
	}
	n.send(r, hb)
}

func (n *Node) sortedOwned() []uint64 { return sortedKeys(n.owned) }

// complete ends an owned job that run node by finished: the client hears
// it from us too, in case the run node's result was lost. Every other copy
// we know of — the one we follow, the one being matched, those we
// abandoned (matched again while by was cut off from us) — is cancelled:
// the job must not complete twice.
func (n *Node) complete(o *owned, by core.NodeID) {
	if o.run != 0 && o.run != by {
		n.cancel(o.run, o.copyRef())
	}
	if o.run == 0 && o.assigned != 0 && o.assigned != by {
		n.cancel(o.assigned, &wire.JobRef{Id: o.spec.Id, Epoch: o.epoch})
	}
	for _, p := range o.left {
		if p.run != by && p.run != o.run {
			n.cancel(p.run, leftRef(o.spec.Id, p))
		}
	}
	delete(n.owned, o.spec.Id)
	n.ended[o.spec.Id] = ended{spec: o.spec, at: n.now}
	n.send(core.NodeID(o.spec.Client), &wire.JobStatus{Done: []uint64{o.spec.Id}})
}

// onQueued: run node from queued our job.
func (n *Node) onQueued(now time.Duration, from core.NodeID, m *wire.JobQueued) {
	if m.Job == nil {
		return
	}
	if now >= 0 {
		n.runHeard[from] = now
	}
	o, ok := n.owned[m.Job.Id]
	switch {
	case !ok:
		n.unknownCopy(from, m.Job)
	case !o.follow(from, m.Job):
		// Matched twice (a rematch raced an assignment): keep the first.
		n.cancel(from, m.Job)
	}
}

// follow decides whether the copy r that run node from holds of owned job
// o is the one the owner follows, and follows it: never a copy it
// abandoned (its cancel may be on its way); the run node it knows; any
// when it knows none; one that moved further within the followed copy's
// epoch (a migration, 000 §IV-B). The other copies are cancelled.
func (o *owned) follow(from core.NodeID, r *wire.JobRef) bool {
	switch {
	case abandoned(o.left, from, r):
		if !slices.Contains(o.left, placed{run: from, epoch: r.Epoch, moves: r.Moves}) && len(o.left) < maxLeft {
			o.left = append(o.left, placed{run: from, epoch: r.Epoch, moves: r.Moves}) // it moved on: cancel it there
		}
		return false
	case o.run == from:
		switch {
		case r.Epoch == o.runEpoch:
			o.moves = max(o.moves, r.Moves)
		case r.Epoch > o.runEpoch: // matched there again
			o.runEpoch, o.moves = r.Epoch, r.Moves
		}
	case o.run == 0:
		o.run, o.runEpoch, o.moves = from, r.Epoch, r.Moves
		o.epoch = max(o.epoch, r.Epoch)
	case r.Epoch == o.runEpoch && r.Moves > o.moves:
		o.run, o.moves = from, r.Moves
	default:
		return false
	}
	return true
}

// unknownCopy answers a run node about a job we do not own: if we handed
// its ownership on (its point left our zone), the run node is told to have
// it adopted at its point; otherwise the copy is cancelled.
func (n *Node) unknownCopy(from core.NodeID, r *wire.JobRef) {
	if h, ok := n.disowned[r.Id]; ok && !abandoned(h.left, from, r) {
		n.send(from, &wire.OwnerHeartbeat{Disowned: []*wire.JobRef{r}})
		return
	}
	n.cancel(from, r)
}

func (n *Node) cancel(to core.NodeID, r *wire.JobRef) {
	c := &wire.JobCancel{Job: r}
	if to == n.self {
		n.onCancel(-1, n.self, c)
		return
	}
	n.send(to, c)
}

// onRunHeartbeat: a run node's periodic word about our jobs.
func (n *Node) onRunHeartbeat(now time.Duration, from core.NodeID, m *wire.RunHeartbeat) {
	if now >= 0 {
		n.runHeard[from] = now
	}
	for _, r := range m.Held {
		o, ok := n.owned[r.Id]
		switch {
		case !ok:
			n.unknownCopy(from, r)
		case !o.follow(from, r):
			n.cancel(from, r)
		}
	}
	acked := false
	for _, r := range m.Done {
		if o, ok := n.owned[r.Id]; ok {
			n.complete(o, from)
		} else if h, gone := n.disowned[r.Id]; gone {
			// It finished before the point's new owner adopted it: that
			// owner must learn the job is done — it may own a copy the
			// client resubmitted meanwhile, or be asked again later — so
			// we remember the completion and hand it on like our own
			// (periodic), and acknowledge the run node.
			if _, known := n.ended[r.Id]; !known {
				n.ended[r.Id] = ended{spec: h.spec, at: n.now}
				n.arm(n.now)
			}
		}
		acked = true
	}
	if acked && from != n.self {
		n.ownerBeat(from)
	}
}

// onDisowned: owner from's zone no longer holds these jobs' points (a
// split or a zone conflict moved them); the point's owner adopts each.
func (n *Node) onDisowned(now time.Duration, from core.NodeID, refs []*wire.JobRef) {
	for _, r := range refs {
		if h := n.holding(r.Id); h != nil && h.owner == from {
			// Whoever owns the point now decides, the owner an earlier
			// adoption replaced included: its cancel is no longer stale.
			h.former = 0
			n.routeAdopt(now, &wire.JobAdopt{Job: h.spec, Run: uint64(n.self), Epoch: h.epoch, Moves: h.moves})
		}
		for _, d := range n.done {
			if d.ref.Id == r.Id && d.owner == from {
				n.routeAdopt(now, &wire.JobAdopt{Job: d.spec, Run: uint64(n.self), Epoch: d.ref.Epoch, Moves: d.ref.Moves, Done: true})
			}
		}
	}
}

// onReturn: a leaving run node hands our jobs back; match them again.
func (n *Node) onReturn(now time.Duration, from core.NodeID, m *wire.JobReturn) {
	for _, r := range m.Done {
		if o, ok := n.owned[r.Id]; ok {
			n.complete(o, from)
		}
	}
	for _, r := range m.Jobs {
		o, ok := n.owned[r.Id]
		if ok && abandoned(o.left, from, r) {
			// A copy we abandoned is gone: nothing to match again.
			o.left = slices.DeleteFunc(o.left, func(p placed) bool { return p.run == from && p.epoch == r.Epoch })
			continue
		}
		if ok && (o.run == from || o.run == 0) {
			n.status.Returns++
			n.event(Event{Kind: EvReturned, Job: r.Id, Attempt: o.spec.Attempt, Other: from})
			n.rematch(now, o, "run node left")
		}
	}
}
