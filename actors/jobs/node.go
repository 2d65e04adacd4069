package jobs

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// Config holds a peer's job parameters.
type Config struct {
	// Scheme is SchemeCAN, SchemeCANP (default) or SchemeCENT.
	Scheme string
	// StoppingFactor is CAN-P's SF (003 Eq 4), 1 to 3 (default 2).
	StoppingFactor int
	// Period is the owner/run-node heartbeat period (the overlay's).
	Period time.Duration
	// FailAfter is how many periods of silence declare the other side of
	// a job failed (the overlay's k).
	FailAfter int
	// StatusEvery paces the owner's status messages to the client: it
	// must hear about each of its jobs well within its resubmit timeout.
	StatusEvery time.Duration
	// Speed is the node's CPU speed (1.0: the canonical node); a job's
	// run time is its work divided by it.
	Speed float64
	// Cores is how many jobs the node runs at once (default 1).
	Cores int
	// MaxPushHops bounds a job's pushes (default 64).
	MaxPushHops int
}

func (c Config) withDefaults() Config {
	if c.Scheme == "" {
		c.Scheme = SchemeCANP
	}
	if c.StoppingFactor <= 0 {
		c.StoppingFactor = 2
	}
	if c.Period <= 0 {
		c.Period = 30 * time.Second
	}
	if c.FailAfter <= 0 {
		c.FailAfter = 3
	}
	if c.StatusEvery <= 0 {
		c.StatusEvery = 10 * c.Period
	}
	if c.Speed <= 0 {
		c.Speed = 1
	}
	if c.Cores <= 0 {
		c.Cores = 1
	}
	if c.MaxPushHops <= 0 {
		c.MaxPushHops = 64
	}
	return c
}

// owned is a job this node owns: it holds the profile until the job ends.
type owned struct {
	spec  *wire.JobSpec
	run   overlay.NodeID // 0 while matchmaking
	epoch uint32         // incremented by every (re)match
	since time.Duration  // when the current matchmaking started
}

// held is a job in this node's run queue.
type held struct {
	spec     *wire.JobSpec
	owner    overlay.NodeID
	epoch    uint32
	running  bool
	finishAt time.Duration
}

// finished is a job this node ran, kept until its owner acknowledges it.
type finished struct {
	ref   *wire.JobRef
	owner overlay.NodeID
	spec  *wire.JobSpec
}

// batches collects one message per receiver, in the order receivers were
// first named (deterministic, unlike ranging over a map).
type batches[M any] struct {
	by    map[overlay.NodeID]*M
	order []overlay.NodeID
}

func (b *batches[M]) to(id overlay.NodeID) *M {
	if b.by == nil {
		b.by = map[overlay.NodeID]*M{}
	}
	m, ok := b.by[id]
	if !ok {
		m = new(M)
		b.by[id] = m
		b.order = append(b.order, id)
	}
	return m
}

// Node is the job core of one peer.
type Node struct {
	cfg     Config
	view    View
	rng     *rand.Rand
	central Central
	self    overlay.NodeID

	owned    map[uint64]*owned
	runHeard map[overlay.NodeID]time.Duration // owner: last word from each run node
	queue    []*held                          // run node: FIFO, running jobs first
	running  int
	done     []finished
	// ran remembers every job this node ran to completion: a late or
	// duplicated assignment of one of them is never run again.
	ran map[uint64]bool
	// ownerHeard is, per owner of a job we hold, the last word from it
	// (or when we last asked for an adoption).
	ownerHeard map[overlay.NodeID]time.Duration

	ai         []load.Agg // AI_d of this node, from the last heartbeat
	ticking    bool
	lastStatus time.Duration
	left       bool

	ready  Ready
	status Status
}

// Status counts what the job core did.
type Status struct {
	Owned, Queued, Started, Completed uint64
	Pushes, Rematches, Adoptions      uint64
	Cancels, Returns, RouteDrops      uint64
}

// New creates the job core of a peer whose overlay core is view.
func New(view View, cfg Config, rng *rand.Rand, central Central) *Node {
	return &Node{
		cfg: cfg.withDefaults(), view: view, rng: rng, central: central, self: view.ID(),
		owned: map[uint64]*owned{}, ran: map[uint64]bool{}, runHeard: map[overlay.NodeID]time.Duration{}, ownerHeard: map[overlay.NodeID]time.Duration{},
	}
}

// Status returns the counters.
func (n *Node) Status() Status { return n.status }

// Ready returns what the core wants done since the last call and clears
// it. The slices are reused: consume them first.
func (n *Node) Ready() Ready {
	r := n.ready
	n.ready = Ready{Messages: r.Messages[:0], Timers: r.Timers[:0], Events: r.Events[:0]}
	return r
}

func (n *Node) send(to overlay.NodeID, m proto.Message) {
	n.ready.Messages = append(n.ready.Messages, overlay.Out{To: to, Msg: m})
}

func (n *Node) event(e Event) {
	e.Peer = n.self
	n.ready.Events = append(n.ready.Events, e)
}

func (n *Node) queueChanged() {
	n.ready.QueueChanged = true
	n.ready.QueueLen = len(n.queue)
}

// arm keeps the periodic job timer running while the node has any job.
func (n *Node) arm(now time.Duration) {
	if n.ticking || n.left {
		return
	}
	n.ticking = true
	n.ready.Timers = append(n.ready.Timers, overlay.Timer{Kind: TimerJobs, At: now + n.cfg.Period})
}

// Snapshot is what the oracle reads of a node's jobs.
type Snapshot struct {
	Owned []uint64 // jobs it owns
	Held  []uint64 // jobs in its run queue (queued or running)
	Done  []uint64 // jobs it ran whose owner has not acknowledged them
}

// Snapshot copies the node's job state.
func (n *Node) Snapshot() Snapshot {
	s := Snapshot{Owned: n.sortedOwned()}
	for _, h := range n.queue {
		s.Held = append(s.Held, h.spec.Id)
	}
	for _, d := range n.done {
		s.Done = append(s.Done, d.ref.Id)
	}
	return s
}

// LoadInfo computes the load our heartbeats carry (003 §4.4): our queue
// size, free cores, speed, point and AI_d for every dimension (Eq 1) from
// the loads our neighbors' last heartbeats carried.
func (n *Node) LoadInfo() *wire.Load {
	own := n.view.Zone()
	var ups []load.Upper
	for _, nb := range n.view.Neighbors() {
		if nb.Load == nil {
			continue
		}
		u := load.Upper{Zone: nb.Zone, Queue: float64(nb.Load.Queue)}
		for _, a := range nb.Load.Agg {
			u.AI = append(u.AI, load.Agg{Nodes: float64(a.Nodes), Queue: float64(a.Queue)})
		}
		ups = append(ups, u)
	}
	if len(own.Lo) > 0 {
		n.ai = load.Aggregate(own, ups)
	}
	l := &wire.Load{Queue: uint32(len(n.queue)), Free: uint32(n.free()), Speed: float32(n.cfg.Speed), Point: slices.Clone(n.view.Point())}
	for _, a := range n.ai {
		l.Agg = append(l.Agg, &wire.AggLoad{Nodes: float32(a.Nodes), Queue: float32(a.Queue)})
	}
	return l
}

func (n *Node) free() int { return max(n.cfg.Cores-n.running, 0) }

// Step handles one job message from peer from.
func (n *Node) Step(now time.Duration, from overlay.NodeID, m proto.Message) {
	if n.left || m == nil || !m.ProtoReflect().IsValid() {
		return
	}
	// Messages carrying a job profile are checked once, here.
	if c, ok := m.(interface{ GetJob() *wire.JobSpec }); ok && !n.validSpec(c.GetJob()) {
		return
	}
	switch m := m.(type) {
	case *wire.JobSubmit:
		n.onRoute(now, &wire.JobRoute{Job: m.Job})
	case *wire.JobRoute:
		n.onRoute(now, m)
	case *wire.JobPush:
		n.matchStep(now, m)
	case *wire.JobAssign:
		n.onAssign(now, m)
	case *wire.JobQueued:
		n.onQueued(now, from, m)
	case *wire.RunHeartbeat:
		n.onRunHeartbeat(now, from, m)
	case *wire.OwnerHeartbeat:
		n.onOwnerHeartbeat(now, from, m)
	case *wire.JobAdopt:
		n.onAdopt(now, m)
	case *wire.JobReturn:
		n.onReturn(now, from, m)
	case *wire.JobCancel:
		n.onCancel(now, from, m)
	case *wire.JobStatus:
		n.onOwnerStatus(m)
	}
}

// validSpec checks a job profile's shape against our space.
func (n *Node) validSpec(s *wire.JobSpec) bool {
	return s != nil && s.Id != 0 && len(s.Req) == len(n.view.Point()) && s.Work >= 0
}

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
		n.send(overlay.NodeID(spec.Client), &wire.JobStatus{Owned: []uint64{spec.Id}})
		return
	}
	if n.ran[spec.Id] {
		// A resubmission of a job we ran ourselves: its result was lost.
		n.send(overlay.NodeID(spec.Client), &wire.JobStatus{Done: []uint64{spec.Id}})
		return
	}
	n.status.Owned++
	o := &owned{spec: spec}
	n.owned[spec.Id] = o
	n.event(Event{Kind: EvOwned, Job: spec.Id, Attempt: spec.Attempt, Hops: hops})
	n.send(overlay.NodeID(spec.Client), &wire.JobStatus{Owned: []uint64{spec.Id}})
	n.arm(now)
	n.match(now, o, hops)
}

// match starts (or restarts) matchmaking for an owned job under the
// configured scheme.
func (n *Node) match(now time.Duration, o *owned, hops uint32) {
	o.epoch++
	o.run = 0
	o.since = now
	if n.cfg.Scheme == SchemeCENT {
		r := overlay.NodeID(0)
		if n.central != nil {
			r = n.central.Pick(o.spec)
		}
		if r == 0 {
			n.fail(o, ReasonNoCapableNode)
			return
		}
		n.assign(now, r, &wire.JobAssign{Job: o.spec, Owner: uint64(n.self), Epoch: o.epoch, Hops: hops})
		return
	}
	n.matchStep(now, &wire.JobPush{Job: o.spec, Owner: uint64(n.self), Epoch: o.epoch, Hops: hops})
}

// candidate is a possible run node seen from here.
type candidate struct {
	id    overlay.NodeID
	queue uint32
	free  bool
	speed float64
	nb    *overlay.Neighbor // nil for ourselves
}

// candidates lists the capable nodes among ourselves and our neighbors,
// from the load our neighbors' heartbeats carried (stale by up to a
// period, as in the papers).
func (n *Node) candidates(req []uint32) []candidate {
	var cs []candidate
	if Capable(n.view.Point(), req) {
		cs = append(cs, candidate{id: n.self, queue: uint32(len(n.queue)), free: n.free() > 0, speed: n.cfg.Speed})
	}
	for _, nb := range n.view.Neighbors() {
		if l := nb.Load; l != nil && Capable(l.Point, req) {
			cs = append(cs, candidate{id: nb.ID, queue: l.Queue, free: l.Free > 0, speed: float64(l.Speed), nb: nb})
		}
	}
	return cs
}

// matchStep is one matchmaking step at this node (the owner, or a node a
// job was pushed to):
//   - a free capable node, the fastest, ends the search (003 §4.4);
//   - CAN: the least loaded capable node (003 §4.2);
//   - CAN-P: push towards the upper neighbor minimizing F_d (Eq 3) unless
//     the probabilistic stop (Eq 4) ends the push, then take the
//     candidate with the least F(C) (Eq 5) here or remembered on the way.
//
// With no capable node in sight the job climbs towards nodes that are.
func (n *Node) matchStep(now time.Duration, m *wire.JobPush) {
	cs := n.candidates(m.Job.Req)
	var fastestFree *candidate
	for i := range cs {
		c := &cs[i]
		if c.free && (fastestFree == nil || c.speed > fastestFree.speed || c.speed == fastestFree.speed && c.id < fastestFree.id) {
			fastestFree = c
		}
	}
	if fastestFree != nil {
		n.assignTo(now, *fastestFree, m)
		return
	}
	if n.cfg.Scheme == SchemeCAN {
		if len(cs) > 0 {
			best := slices.MinFunc(cs, func(a, b candidate) int {
				return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(b.speed, a.speed), cmp.Compare(a.id, b.id))
			})
			n.assignTo(now, best, m)
			return
		}
		n.climb(now, m)
		return
	}
	// CAN-P: remember the best candidate by Eq 5 along the path.
	for _, c := range cs {
		if s := load.Score(float64(c.queue), c.speed); m.Best == nil || s < m.Best.Score {
			m.Best = &wire.Candidate{Id: uint64(c.id), Score: s}
		}
	}
	target, td := n.pushTarget()
	limit := int(m.Pushes) >= n.cfg.MaxPushHops
	if limit && m.Best == nil {
		n.failMatch(now, m, ReasonPushLimit)
		return
	}
	stop := target == nil || limit
	if !stop && m.Best != nil {
		nodes := 0.0
		if td < len(n.ai) {
			nodes = n.ai[td].Nodes
		}
		stop = n.rng.Float64() < load.StopProbability(nodes, n.cfg.StoppingFactor)
	}
	if stop && m.Best != nil {
		id := overlay.NodeID(m.Best.Id)
		c := candidate{id: id}
		for _, x := range cs {
			if x.id == id {
				c = x
			}
		}
		n.assignTo(now, c, m)
		return
	}
	if target == nil {
		n.climb(now, m)
		return
	}
	n.push(target.ID, m)
}

// pushTarget is the upper neighbor (in any dimension) minimizing F_d(u) =
// AI_d(u).queue / AI_d(u).nodes² (003 Eq 3), and that dimension; nil when
// no upper neighbor has nodes above it.
func (n *Node) pushTarget() (*overlay.Neighbor, int) {
	own := n.view.Zone()
	var best *overlay.Neighbor
	bestF, bestD := math.Inf(1), -1
	for _, nb := range n.view.Neighbors() {
		if nb.Load == nil {
			continue
		}
		d, upper, ok := can.Abut(own, nb.Zone)
		if !ok || !upper || d >= len(nb.Load.Agg) {
			continue
		}
		a := nb.Load.Agg[d]
		if f := load.Objective(load.Agg{Nodes: float64(a.Nodes), Queue: float64(a.Queue)}); f < bestF {
			best, bestF, bestD = nb, f, d
		}
	}
	return best, bestD
}

// climb moves a job no capable node in sight can run towards one that
// can: to the upper neighbor along a dimension where our point falls
// short of the requirement (or any upper neighbor). At the upper edge of
// the space with nothing capable, the job fails: no node can run it.
func (n *Node) climb(now time.Duration, m *wire.JobPush) {
	own, pt := n.view.Zone(), n.view.Point()
	var next *overlay.Neighbor
	short := false
	for _, nb := range n.view.Neighbors() {
		d, upper, ok := can.Abut(own, nb.Zone)
		if !ok || !upper {
			continue
		}
		s := d < len(pt)-1 && pt[d] < m.Job.Req[d]
		if next == nil || s && !short {
			next, short = nb, s
		}
	}
	switch {
	case next == nil:
		n.failMatch(now, m, ReasonNoCapableNode)
	case int(m.Pushes) >= n.cfg.MaxPushHops:
		n.failMatch(now, m, ReasonPushLimit)
	default:
		m.Hops++
		m.Pushes++
		n.send(next.ID, m) // a climb, not a CAN-P push: no push event
	}
}

func (n *Node) push(to overlay.NodeID, m *wire.JobPush) {
	m.Hops++
	m.Pushes++
	n.status.Pushes++
	n.event(Event{Kind: EvPushed, Job: m.Job.Id, Attempt: m.Job.Attempt, Hops: m.Hops})
	n.send(to, m)
}

// assignTo hands the job to run node c and counts it in our view of c's
// load, so that the next job within the same heartbeat period does not
// take c for free as well.
func (n *Node) assignTo(now time.Duration, c candidate, m *wire.JobPush) {
	if c.nb != nil && c.nb.Load != nil {
		c.nb.Load.Queue++
		if c.nb.Load.Free > 0 {
			c.nb.Load.Free--
		}
	}
	n.assign(now, c.id, &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}

func (n *Node) assign(now time.Duration, to overlay.NodeID, a *wire.JobAssign) {
	if to == n.self {
		n.onAssign(now, a)
		return
	}
	n.send(to, a)
}

// failMatch ends a job no node can run: the owner fails it; a node the job
// was pushed to tells the owner through a JobReturn-less path by failing
// it directly to the client (the owner drops it on its next status).
func (n *Node) failMatch(now time.Duration, m *wire.JobPush, reason string) {
	if o, ok := n.owned[m.Job.Id]; ok && overlay.NodeID(m.Owner) == n.self {
		n.fail(o, reason)
		return
	}
	// Not the owner: the owner's matchmaking timeout would retry forever,
	// so tell the client (the job's outcome) and the owner (drop it).
	n.send(overlay.NodeID(m.Job.Client), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: m.Job.Id, Reason: reason}}})
	n.send(overlay.NodeID(m.Owner), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: m.Job.Id, Reason: reason}}})
}

// fail ends an owned job as failed and tells the client.
func (n *Node) fail(o *owned, reason string) {
	delete(n.owned, o.spec.Id)
	n.send(overlay.NodeID(o.spec.Client), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: o.spec.Id, Reason: reason}}})
}

// onOwnerStatus handles a JobStatus sent to this peer as an owner: a node
// our job was pushed to found no capable node, and told the client.
func (n *Node) onOwnerStatus(m *wire.JobStatus) {
	for _, f := range m.Failed {
		if o, ok := n.owned[f.Id]; ok && o.run == 0 {
			delete(n.owned, f.Id)
		}
	}
}

// onAssign queues a job at this run node (003 §4.1 step 5: FIFO).
func (n *Node) onAssign(now time.Duration, m *wire.JobAssign) {
	owner := overlay.NodeID(m.Owner)
	for _, h := range n.queue {
		if h.spec.Id == m.Job.Id {
			h.owner, h.epoch = owner, max(h.epoch, m.Epoch) // matched here again
			n.sendQueued(owner, ref(m.Job.Id, m.Epoch), slices.Index(n.queue, h))
			return
		}
	}
	if n.ran[m.Job.Id] {
		n.sendRun(owner, nil, []*wire.JobRef{ref(m.Job.Id, m.Epoch)})
		return
	}
	ahead := len(n.queue)
	n.queue = append(n.queue, &held{spec: m.Job, owner: owner, epoch: m.Epoch})
	n.status.Queued++
	n.event(Event{Kind: EvQueued, Job: m.Job.Id, Attempt: m.Job.Attempt, Other: owner, Hops: m.Hops, Queue: ahead})
	// The owner's silence is measured from now for this job (the last
	// word of an owner whose earlier jobs ended may be old).
	n.ownerHeard[owner] = max(n.ownerHeard[owner], now)
	n.sendQueued(owner, ref(m.Job.Id, m.Epoch), ahead)
	n.start(now)
	n.queueChanged()
	n.arm(now)
}

func (n *Node) sendQueued(owner overlay.NodeID, r *wire.JobRef, ahead int) {
	q := &wire.JobQueued{Job: r, Queue: uint32(ahead)}
	if owner == n.self {
		n.onQueued(-1, n.self, q)
		return
	}
	n.send(owner, q)
}

func (n *Node) sendRun(owner overlay.NodeID, held, done []*wire.JobRef) {
	m := &wire.RunHeartbeat{Held: held, Done: done}
	if owner == n.self {
		n.onRunHeartbeat(-1, n.self, m)
		return
	}
	n.send(owner, m)
}

// start runs queued jobs while cores are free, in FIFO order.
func (n *Node) start(now time.Duration) {
	for n.running < n.cfg.Cores && n.running < len(n.queue) {
		h := n.queue[n.running]
		h.running = true
		h.finishAt = now + runTime(h.spec.Work, n.cfg.Speed)
		n.running++
		n.status.Started++
		n.event(Event{Kind: EvStarted, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: h.owner})
		n.ready.Timers = append(n.ready.Timers, overlay.Timer{Kind: TimerRunDone, At: h.finishAt})
	}
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
		changed = true
		n.status.Completed++
		n.ran[h.spec.Id] = true
		n.event(Event{Kind: EvCompleted, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: h.owner})
		n.send(overlay.NodeID(h.spec.Client), &wire.JobResult{Id: h.spec.Id, Attempt: h.spec.Attempt, Run: uint64(n.self)})
		if h.owner == n.self {
			if o, ok := n.owned[h.spec.Id]; ok {
				n.complete(o, n.self)
			}
			continue
		}
		r := ref(h.spec.Id, h.epoch)
		n.done = append(n.done, finished{ref: r, owner: h.owner, spec: h.spec})
		n.send(h.owner, &wire.RunHeartbeat{Done: []*wire.JobRef{r}})
	}
	if changed {
		n.start(now)
		n.queueChanged()
	}
}

// Tick handles the expiry of a job timer.
func (n *Node) Tick(now time.Duration, kind overlay.TimerKind) {
	if n.left {
		return
	}
	switch kind {
	case TimerRunDone:
		n.finish(now)
	case TimerJobs:
		n.ticking = false
		n.periodic(now)
		if len(n.owned) > 0 || len(n.queue) > 0 || len(n.done) > 0 {
			n.arm(now)
		}
	}
}

// periodic is the owner/run-node heartbeat (003 §4.1: job profiles are
// held by both, each watches the other):
//   - run node: tell each owner which of its jobs we hold and finished; an
//     owner silent for FailAfter periods is presumed failed, and each of
//     its jobs is routed to the job's point, whose owner now adopts it;
//   - owner: tell each run node which jobs we own there; a run node silent
//     for FailAfter periods is presumed failed and its jobs are matched
//     again, as is a job whose matchmaking produced no run node in time;
//     tell each client which jobs we own, every StatusEvery.
func (n *Node) periodic(now time.Duration) {
	timeout := time.Duration(n.cfg.FailAfter) * n.cfg.Period
	// Run node side.
	var owners batches[wire.RunHeartbeat]
	for _, h := range n.queue {
		hb := owners.to(h.owner)
		hb.Held = append(hb.Held, ref(h.spec.Id, h.epoch))
	}
	for _, d := range n.done {
		hb := owners.to(d.owner)
		hb.Done = append(hb.Done, d.ref)
	}
	for _, o := range owners.order {
		if o == n.self {
			continue // we own these ourselves: nothing to watch
		}
		if last, ok := n.ownerHeard[o]; ok && now-last > timeout {
			n.ownerHeard[o] = now // ask again after another timeout
			n.adoptAll(now, o)
			continue
		}
		n.send(o, owners.by[o])
	}
	// Owner side.
	ids := n.sortedOwned()
	var runs batches[wire.OwnerHeartbeat]
	var stale []*owned
	for _, id := range ids {
		o := n.owned[id]
		switch {
		case o.run == 0:
			if now-o.since > timeout {
				stale = append(stale, o)
			}
		case o.run == n.self:
		default:
			if last := n.runHeard[o.run]; now-last > timeout {
				stale = append(stale, o)
				continue
			}
			hb := runs.to(o.run)
			hb.Jobs = append(hb.Jobs, ref(id, o.epoch))
		}
	}
	for _, r := range runs.order {
		n.send(r, runs.by[r])
	}
	for _, o := range stale {
		reason := "matchmaking timed out"
		if o.run != 0 {
			reason = "run node silent"
		}
		n.rematch(now, o, reason)
	}
	if now-n.lastStatus >= n.cfg.StatusEvery && len(ids) > 0 {
		n.lastStatus = now
		var clients batches[wire.JobStatus]
		for _, id := range ids {
			st := clients.to(overlay.NodeID(n.owned[id].spec.Client))
			st.Owned = append(st.Owned, id)
		}
		for _, c := range clients.order {
			n.send(c, clients.by[c])
		}
	}
	for id, t := range n.runHeard { // deleting only: order does not matter
		if now-t > 4*timeout {
			delete(n.runHeard, id)
		}
	}
}

func (n *Node) rematch(now time.Duration, o *owned, reason string) {
	n.status.Rematches++
	n.event(Event{Kind: EvRematched, Job: o.spec.Id, Attempt: o.spec.Attempt, Other: o.run, Reason: reason})
	n.match(now, o, 0)
}

// adoptAll routes every job we hold for silent owner o to its point: the
// zone's current owner (o's take-over node, typically) adopts it.
func (n *Node) adoptAll(now time.Duration, o overlay.NodeID) {
	for _, h := range n.queue {
		if h.owner == o {
			n.routeAdopt(now, &wire.JobAdopt{Job: h.spec, Run: uint64(n.self), Epoch: h.epoch})
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
		n.routeAdopt(now, &wire.JobAdopt{Job: d.spec, Run: uint64(n.self), Epoch: d.ref.Epoch, Done: true})
	}
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
	run := overlay.NodeID(m.Run)
	o, ok := n.owned[m.Job.Id]
	if !ok {
		o = &owned{spec: m.Job}
		n.owned[m.Job.Id] = o
		if !m.Done {
			n.status.Adoptions++
			n.event(Event{Kind: EvAdopted, Job: m.Job.Id, Attempt: m.Job.Attempt, Other: run})
		}
	}
	if ok && o.run != 0 && o.run != run && !m.Done {
		// We own it and it runs elsewhere: this copy must go.
		n.cancel(run, ref(m.Job.Id, m.Epoch))
		return
	}
	n.runHeard[run] = now
	if m.Done {
		n.complete(o, run)                    // cancels a copy we placed elsewhere meanwhile
		n.cancel(run, ref(m.Job.Id, m.Epoch)) // acknowledges the finished job
	} else {
		o.run, o.epoch, o.since = run, max(o.epoch, m.Epoch), now
		n.send(overlay.NodeID(m.Job.Client), &wire.JobStatus{Owned: []uint64{m.Job.Id}})
	}
	n.ownerBeat(run)
	n.arm(now)
}

// ownerBeat sends run node r the list of jobs we own there now.
func (n *Node) ownerBeat(r overlay.NodeID) {
	hb := &wire.OwnerHeartbeat{}
	for _, id := range n.sortedOwned() {
		if o := n.owned[id]; o.run == r {
			hb.Jobs = append(hb.Jobs, ref(id, o.epoch))
		}
	}
	if r == n.self {
		n.onOwnerHeartbeat(-1, n.self, hb)
		return
	}
	n.send(r, hb)
}

func (n *Node) sortedOwned() []uint64 {
	ids := make([]uint64, 0, len(n.owned))
	for id := range n.owned {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// complete ends an owned job that run node by finished: the client hears
// it from us too, in case the run node's result was lost. Another copy
// (matched again while by was cut off from us) is cancelled: the job must
// not complete twice.
func (n *Node) complete(o *owned, by overlay.NodeID) {
	if o.run != 0 && o.run != by {
		n.cancel(o.run, ref(o.spec.Id, o.epoch))
	}
	delete(n.owned, o.spec.Id)
	n.send(overlay.NodeID(o.spec.Client), &wire.JobStatus{Done: []uint64{o.spec.Id}})
}

// onQueued: run node from queued our job.
func (n *Node) onQueued(now time.Duration, from overlay.NodeID, m *wire.JobQueued) {
	if m.Job == nil {
		return
	}
	if now >= 0 {
		n.runHeard[from] = now
	}
	o, ok := n.owned[m.Job.Id]
	switch {
	case !ok:
		n.cancel(from, m.Job)
	case o.run == 0 || o.run == from:
		o.run = from
		o.epoch = max(o.epoch, m.Job.Epoch)
	default:
		// Matched twice (a rematch raced an assignment): keep the first.
		n.cancel(from, m.Job)
	}
}

func (n *Node) cancel(to overlay.NodeID, r *wire.JobRef) {
	c := &wire.JobCancel{Job: r}
	if to == n.self {
		n.onCancel(-1, n.self, c)
		return
	}
	n.send(to, c)
}

// onRunHeartbeat: a run node's periodic word about our jobs.
func (n *Node) onRunHeartbeat(now time.Duration, from overlay.NodeID, m *wire.RunHeartbeat) {
	if now >= 0 {
		n.runHeard[from] = now
	}
	for _, r := range m.Held {
		o, ok := n.owned[r.Id]
		switch {
		case !ok:
			n.cancel(from, r)
		case o.run == 0:
			o.run = from
		case o.run != from:
			n.cancel(from, r)
		}
	}
	acked := false
	for _, r := range m.Done {
		if o, ok := n.owned[r.Id]; ok {
			n.complete(o, from)
		}
		acked = true
	}
	if acked && from != n.self {
		n.ownerBeat(from)
	}
}

// onOwnerHeartbeat: an owner's periodic word about the jobs we hold for it.
func (n *Node) onOwnerHeartbeat(now time.Duration, from overlay.NodeID, m *wire.OwnerHeartbeat) {
	if now >= 0 {
		n.ownerHeard[from] = now
	}
	listed := map[uint64]bool{}
	for _, r := range m.Jobs {
		listed[r.Id] = true
	}
	for _, h := range n.queue {
		if listed[h.spec.Id] {
			h.owner = from // an adoption confirmed
		}
	}
	// Finished jobs the owner no longer lists are acknowledged.
	n.done = slices.DeleteFunc(n.done, func(d finished) bool { return d.owner == from && !listed[d.ref.Id] })
	if m.Leaving && now >= 0 {
		n.adoptAll(now, from)
	}
}

// onReturn: a leaving run node hands our jobs back; match them again.
func (n *Node) onReturn(now time.Duration, from overlay.NodeID, m *wire.JobReturn) {
	for _, r := range m.Done {
		if o, ok := n.owned[r.Id]; ok {
			n.complete(o, from)
		}
	}
	for _, r := range m.Jobs {
		if o, ok := n.owned[r.Id]; ok && (o.run == from || o.run == 0) {
			n.status.Returns++
			n.event(Event{Kind: EvReturned, Job: r.Id, Attempt: o.spec.Attempt, Other: from})
			n.rematch(now, o, "run node left")
		}
	}
}

// onCancel drops a copy of a job the owner runs elsewhere, queued or
// running (a running copy is aborted: emulated work costs nothing, and a
// job must not complete twice); for a job we finished, it is the
// adopter's acknowledgement.
func (n *Node) onCancel(now time.Duration, from overlay.NodeID, m *wire.JobCancel) {
	if m.Job == nil {
		return
	}
	// A finished job's record goes: its owner (or adopter) has it.
	n.done = slices.DeleteFunc(n.done, func(d finished) bool { return d.ref.Id == m.Job.Id })
	for i, h := range n.queue {
		if h.spec.Id == m.Job.Id && h.epoch == m.Job.Epoch {
			n.queue = slices.Delete(n.queue, i, i+1)
			if h.running {
				n.running--
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
}

// Leave hands everything over before the peer departs gracefully:
//   - run node: jobs (and unacknowledged results) go back to their owners
//     (JobReturn), which match them again;
//   - owner: jobs still being matched or running here are routed on to the
//     job's point (our zone's take-over node owns it next); run nodes of
//     our other jobs are told to have them adopted now.
//
// Call it after the overlay core's Leave, so that our neighbors learn the
// new zone owner before the jobs reach them.
func (n *Node) Leave(now time.Duration) {
	if n.left {
		return
	}
	var returns batches[wire.JobReturn]
	for _, h := range n.queue {
		if h.owner != n.self {
			r := returns.to(h.owner)
			r.Jobs = append(r.Jobs, ref(h.spec.Id, h.epoch))
		}
	}
	for _, d := range n.done {
		if d.owner != n.self {
			r := returns.to(d.owner)
			r.Done = append(r.Done, d.ref)
		}
	}
	for _, o := range returns.order {
		n.send(o, returns.by[o])
	}
	var runs batches[wire.OwnerHeartbeat]
	for _, id := range n.sortedOwned() {
		o := n.owned[id]
		if o.run == 0 || o.run == n.self {
			spec := proto.Clone(o.spec).(*wire.JobSpec)
			r := &wire.JobRoute{}
			r.Job = spec
			p := can.Point(spec.Req)
			if next := n.view.NextHop(p, &r.Hops, &r.Best, &r.Detours); next != 0 {
				n.send(next, r)
			} else {
				n.event(Event{Kind: EvRouteDrop, Job: id, Attempt: spec.Attempt})
			}
			continue
		}
		hb := runs.to(o.run)
		hb.Leaving = true
		hb.Jobs = append(hb.Jobs, ref(id, o.epoch))
	}
	for _, r := range runs.order {
		n.send(r, runs.by[r])
	}
	n.left = true
	n.owned, n.queue, n.done, n.running = map[uint64]*owned{}, nil, nil, 0
	n.queueChanged()
}
