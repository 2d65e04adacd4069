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
	// Scheme is SchemeCAN, SchemeCANP (default), SchemeCENT or
	// SchemeCENTQueue.
	Scheme Scheme
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
	// Res maps coordinates to resource amounts (nil: Cores cores per
	// node, one per job).
	Res Resources
	// Mode is the dynamic scheduling mode (000 §V-B): SchedVanilla
	// (default), SchedL, SchedLIPush, SchedLIPull, SchedLIQPush,
	// SchedLIQPull.
	Mode SchedMode
	// SchedPeriod paces internode scheduling and queue balancing (default
	// Period).
	SchedPeriod time.Duration
	// Contention slows jobs sharing a node by α (002 Eq 3.5).
	Contention bool
	// PullReach is how many overlay hops an internode PULL request may
	// travel: 1 (default) asks neighbors only, as 000 §IV-B; more lets a
	// neighbor without a fitting job pass the request on towards the
	// longest queue it knows of (a gridbed extension).
	PullReach int
	// Residue is how a multi-core node's Residue-node is represented (002
	// §3.1): ResidueNone (default) or ResidueBalloon.
	Residue ResidueModel
	// StopNodes is the node count n of CAN-P's stop probability
	// 1/(1+n)^SF (003 Eq 4): StopNodesOwn (default), AI_TD(N).Nodes as
	// Eq 4 writes it — this node's overlap-weighted count along the
	// target dimension — or StopNodesTarget, 1 + AI_TD(u).Nodes of the
	// chosen target u: the nodes the push would reach (003 §4.4 reads
	// n as "the number of nodes above node N in the target dimension").
	StopNodes StopNodes
	// LoadView is where matchmaking reads its neighbors' queue lengths:
	// LoadViewHeartbeat (default, 003 §4.4) or LoadViewOracle (the
	// central view's current figures, when it is a FreshLoad: an
	// experiment switch that isolates the staleness of heartbeats).
	LoadView LoadView
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
	if c.Res == nil {
		c.Res = coresOnly{c.Cores}
	}
	if c.Mode == "" {
		c.Mode = SchedVanilla
	}
	if c.SchedPeriod <= 0 {
		c.SchedPeriod = c.Period
	}
	if c.Residue == "" {
		c.Residue = ResidueNone
	}
	if c.LoadView == "" {
		c.LoadView = LoadViewHeartbeat
	}
	if c.StopNodes == "" {
		c.StopNodes = StopNodesOwn
	}
	return c
}

// owned is a job this node owns: it holds the profile until the job ends.
type owned struct {
	spec  *wire.JobSpec
	run   overlay.NodeID // the run node of the copy we follow; 0 while matchmaking
	epoch uint32         // incremented by every (re)match
	// runEpoch and moves name the copy at run (wire.JobRef): the epoch it
	// was matched in — an older one than epoch when we took up a copy that
	// reported while a newer match was on its way — and its migrations
	// within it (000 §IV-B).
	runEpoch, moves uint32
	// assigned is the run node we assigned the current epoch's copy to
	// ourselves (0: none, or the job was pushed on): a match that times
	// out cancels it there.
	assigned overlay.NodeID
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
	run          overlay.NodeID
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
func abandoned(left []placed, from overlay.NodeID, r *wire.JobRef) bool {
	return slices.ContainsFunc(left, func(p placed) bool {
		return p.epoch == r.Epoch && (p.run == from || r.Moves > p.moves)
	})
}

// held is a job in this node's run queue.
type held struct {
	spec     *wire.JobSpec
	owner    overlay.NodeID
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
	former overlay.NodeID
	// offeredTo is the neighbor a PUSH offer for this waiting job is
	// outstanding at (0: none): the job neither starts nor moves meanwhile.
	offeredTo overlay.NodeID
}

func (h *held) ref() *wire.JobRef { return &wire.JobRef{Id: h.spec.Id, Epoch: h.epoch, Moves: h.moves} }

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
	// disowned are the jobs whose ownership we handed on (their point left
	// our zone): run nodes still reporting them to us are told, and a
	// completion one reports is handed on too.
	disowned map[uint64]handedOn
	// ended are the owned jobs that completed, kept for a while: a copy
	// another owner placed meanwhile (a partition made each side repair
	// on its own) is cancelled when it or its ownership reaches us.
	ended map[uint64]ended
	now   time.Duration // of the message or timer being handled

	ai         []load.Agg // AI_d of this node, from the last heartbeat
	capacity   Vec        // this node's resources
	used       Vec        // what its running jobs use
	sched      scheduler  // dynamic scheduling state (000 §IV)
	res        residue    // our Balloon (002 §3.1.3)
	hosted     map[overlay.NodeID]*hosted
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
	// Migrations by mechanism and direction (000 §IV), counted at the
	// receiver; rejected offers and pull requests.
	Migrations                 [2][2]uint64 // [internode, queue][push, pull]
	OfferRejects, PullRejects  uint64
	PullForwards               uint64 // PULL requests passed on (scheduling.pull_reach > 1)
	Disowned, MigrationReturns uint64
	// BalloonMatches are jobs this node matched to a Balloon (002 §3.1.4).
	BalloonMatches uint64
}

// New creates the job core of a peer whose overlay core is view. It
// panics on a Scheme, Mode, Residue, LoadView or StopNodes that is none
// of the named values: a configuration error, not some value by default.
func New(view View, cfg Config, rng *rand.Rand, central Central) *Node {
	if err := cfg.withDefaults().check(); err != nil {
		panic("jobs.New: " + err.Error())
	}
	n := &Node{
		cfg: cfg.withDefaults(), view: view, rng: rng, central: central, self: view.ID(),
		owned: map[uint64]*owned{}, ran: map[uint64]bool{}, runHeard: map[overlay.NodeID]time.Duration{}, ownerHeard: map[overlay.NodeID]time.Duration{},
		disowned: map[uint64]handedOn{}, ended: map[uint64]ended{}, hosted: map[overlay.NodeID]*hosted{},
	}
	n.capacity = n.cfg.Res.Capacity(view.Point())
	n.capacity[ResCores] = max(n.capacity[ResCores], 1)
	n.sched.init()
	return n
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
	n.ready.Residual = Vec{}
	if n.running == len(n.queue) {
		// Jobs waiting here start before a newcomer: nothing is free.
		n.ready.Residual = n.residual()
	}
}

// residual is what this node could start a job on now: its capacity less
// its running jobs and the resources promised to incoming migrations.
func (n *Node) residual() Vec { return n.capacity.sub(n.used).sub(n.sched.reserved) }

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
	for _, id := range n.sched.outboundIDs() {
		s.Held = append(s.Held, id) // in flight to a neighbor, ours until acknowledged
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
		if nb.Load.Cores > 0 { // I(u) in cores: TNC(u) (002 §3.1.4, Eq 3.1)
			u.Cores, u.Queue = tnc(nb.Load), float64(nb.Load.Demand)
		}
		for _, a := range nb.Load.Agg {
			u.AI = append(u.AI, aggOf(a))
		}
		ups = append(ups, u)
	}
	if len(own.Lo) > 0 {
		n.ai = load.Aggregate(own, ups)
	}
	l := &wire.Load{Queue: uint32(len(n.queue)), Free: uint32(n.free()), Speed: float32(n.cfg.Speed), Point: slices.Clone(n.view.Point())}
	for _, a := range n.ai {
		w := &wire.AggLoad{Nodes: float32(a.Nodes), Queue: float32(a.Queue)}
		if float32(a.Cores) != w.Nodes {
			w.Cores = float32(a.Cores) // else left out: single-core peers
		}
		l.Agg = append(l.Agg, w)
	}
	// Multi-core nodes and dynamic scheduling (002 ch. 3; 000 §IV).
	r := n.residual()
	l.Cores = float32(n.capacity[ResCores])
	l.Residual = r.wire()
	l.Demand = float32(n.coresDemand())
	l.Waiting = uint32(len(n.queue) - n.running)
	l.Nbc = n.nbc()
	if n.cfg.PullReach > 1 {
		l.NearWaiting = n.nearWaiting()
	}
	l.NormLoad = float32(n.normLoad())
	l.Balloons = n.hostedLoad()
	return l
}

// aggOf reads one dimension's aggregated load from a heartbeat; no cores
// means as many as nodes (single-core peers leave them out).
func aggOf(a *wire.AggLoad) load.Agg {
	g := load.Agg{Nodes: float64(a.Nodes), Cores: float64(a.Cores), Queue: float64(a.Queue)}
	if a.Cores == 0 {
		g.Cores = g.Nodes
	}
	return g
}

// free is the number of cores no running job uses.
func (n *Node) free() int { return max(int(n.residual()[ResCores]+1e-9), 0) }

// normLoad is this node's L (000 Eqs 4-5) over its waiting jobs.
func (n *Node) normLoad() float64 { return NormLoad(n.waitingLoad()) }

// coresDemand is the cores the node's queued and running jobs require
// (002 Eq 3.4's RequiredCores).
func (n *Node) coresDemand() float64 {
	var d float64
	for _, h := range n.queue {
		d += h.demand[ResCores]
	}
	return d
}

// nbc is the node backfilling counter: the BC of its waiting queue's head
// (000 §IV-B), 0 with nothing waiting.
func (n *Node) nbc() uint32 {
	for _, h := range n.queue[n.running:] {
		if h.offeredTo == 0 {
			return h.bc
		}
	}
	return 0
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

// Step handles one job message from peer from.
func (n *Node) Step(now time.Duration, from overlay.NodeID, m proto.Message) {
	if n.left || m == nil || !m.ProtoReflect().IsValid() {
		return
	}
	n.now = now
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
	case *wire.MigrateOffer:
		n.onOffer(now, from, m)
	case *wire.MigrateReply:
		n.onReply(now, from, m)
	case *wire.PullRequest:
		n.onPullRequest(now, from, m)
	case *wire.PullReject:
		n.onPullReject(now, from, m)
	case *wire.MigrateJob:
		n.onMigrateJob(now, from, m)
	case *wire.MigrateAck:
		n.onMigrateAck(from, m)
	case *wire.BalloonAttach:
		n.onBalloonAttach(now, m)
	case *wire.BalloonAck:
		n.onBalloonAck(now, from, m)
	}
	n.syncBalloon(now)
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
	if e, done := n.ended[spec.Id]; done || n.ran[spec.Id] {
		// A resubmission of a job that ended here: its outcome was lost.
		n.send(overlay.NodeID(spec.Client), e.status(spec.Id))
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
	n.send(overlay.NodeID(spec.Client), &wire.JobStatus{Owned: []uint64{spec.Id}})
	n.arm(now)
	n.match(now, o, hops)
}

// match starts (or restarts) matchmaking for an owned job under the
// configured scheme.
func (n *Node) match(now time.Duration, o *owned, hops uint32) {
	// The copies it replaces are cancelled once the new match is under
	// way: a run node assigned the job again keeps its copy (onAssign
	// merges it into the new epoch) and ignores the older epoch's cancel.
	defer n.cancelCopies(o.spec.Id, n.abandon(o))
	o.epoch++
	o.run, o.assigned = 0, 0
	o.since = now
	if n.cfg.Scheme.central() {
		r := overlay.NodeID(0)
		o.central = false
		if q, ok := n.central.(CentralQueue); ok && n.cfg.Scheme == SchemeCENTQueue {
			var capable bool
			if r, capable = q.PickNow(o.spec); r == 0 && capable {
				o.central = true // waits in the central queue
				n.arm(now)
				return
			}
		} else if n.central != nil {
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

// candidate is a possible run node seen from here.
type candidate struct {
	id    overlay.NodeID
	util  float64 // queue length, or required over available cores (002 Eq 3.4)
	free  bool    // it can start the job now
	speed float64
	nb    *overlay.Neighbor // nil for ourselves
}

// candidates lists the capable nodes among ourselves and our neighbors,
// from the load our neighbors' heartbeats carried (stale by up to a
// period, as in the papers).
func (n *Node) candidates(req []uint32) []candidate {
	var cs []candidate
	d := n.cfg.Res.Demand(req)
	if can.Capable(n.view.Point(), req) {
		dem := n.coresDemand()
		c := candidate{id: n.self, util: float64(len(n.queue)), free: Fits(d.clamp(n.capacity), n.residual()) && len(n.queue) == n.running, speed: n.cfg.Speed}
		if n.capacity[ResCores] > 1 || dem > 0 {
			c.util = dem / n.capacity[ResCores]
		}
		cs = append(cs, c)
	}
	fresh, _ := n.central.(FreshLoad)
	if n.cfg.LoadView != LoadViewOracle {
		fresh = nil
	}
	for _, nb := range n.view.Neighbors() {
		if l := nb.Load; l != nil && can.Capable(l.Point, req) {
			c := candidate{id: nb.ID, util: loadUtil(l), free: loadFree(l, d), speed: float64(l.Speed), nb: nb}
			if fresh != nil {
				if q, cores, ok := fresh.NodeLoad(nb.ID); ok {
					c.util, c.free = float64(q)/float64(max(cores, 1)), q < cores
				}
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// loadUtil is a neighbor's utilization as its heartbeat reported it: the
// cores its jobs require per core it has (002 Eq 3.4), or its queue length
// from a peer that reports no cores.
func loadUtil(l *wire.Load) float64 {
	if l.Cores > 0 {
		return float64(l.Demand) / float64(l.Cores)
	}
	return float64(l.Queue)
}

// loadFree reports whether a neighbor could start a job demanding d now,
// as its heartbeat reported it: nothing waiting and residual resources
// for the job (a node that reports none: a free core).
func loadFree(l *wire.Load, d Vec) bool {
	if len(l.Residual) != numRes {
		return l.Free > 0
	}
	if l.Waiting > 0 {
		return false
	}
	r := vecOf(l.Residual)
	cp := Vec{float64(l.Cores), math.Inf(1), math.Inf(1)}
	return Fits(d.clamp(cp), r)
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
		if b, ok := n.bestBalloon(m.Job.Req); ok {
			n.assignBalloon(now, b, m)
			return
		}
		if len(cs) > 0 {
			best := slices.MinFunc(cs, func(a, b candidate) int {
				return cmp.Or(cmp.Compare(a.util, b.util), cmp.Compare(b.speed, a.speed), cmp.Compare(a.id, b.id))
			})
			n.assignTo(now, best, m)
			return
		}
		n.climb(now, m)
		return
	}
	// CAN-P: remember the best candidate by Eq 5 along the path.
	for _, c := range cs {
		if s := load.Score(c.util, c.speed); m.Best == nil || s < m.Best.Score {
			m.Best = &wire.Candidate{Id: uint64(c.id), Score: s}
		}
	}
	target, td := n.pushTarget()
	limit := int(m.Pushes) >= n.cfg.MaxPushHops
	stop := target == nil || limit
	if !stop && m.Best != nil {
		nodes := 0.0
		switch {
		case n.cfg.StopNodes == StopNodesTarget:
			nodes = 1 + aggOf(target.Load.Agg[td]).Nodes
		case td < len(n.ai):
			nodes = n.ai[td].Nodes
		}
		stop = n.rng.Float64() < load.StopProbability(nodes, n.cfg.StoppingFactor)
	}
	if stop {
		// The Balloon model: a Balloon here or at a neighbor is preferred
		// (002 §3.1.4), it starts the job at once.
		if b, ok := n.bestBalloon(m.Job.Req); ok {
			n.assignBalloon(now, b, m)
			return
		}
	}
	if limit && m.Best == nil {
		n.failMatch(now, m, ReasonPushLimit)
		return
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
// AI_d(u).queue / AI_d(u).nodes² (003 Eq 3) — with multi-core nodes
// required cores over cores² (002 Eq 3.2) — and that dimension; nil when
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
		if f := load.Objective(aggOf(nb.Load.Agg[d])); f < bestF {
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
		noteSent(c.nb.Load, n.cfg.Res.Demand(m.Job.Req), false)
	}
	n.assign(now, c.id, &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}

func (n *Node) assign(now time.Duration, to overlay.NodeID, a *wire.JobAssign) {
	if o, ok := n.owned[a.Job.Id]; ok && overlay.NodeID(a.Owner) == n.self && a.Epoch == o.epoch {
		o.assigned = to
	}
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
	n.forgetFailed(o, reason)
	n.send(overlay.NodeID(o.spec.Client), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: o.spec.Id, Reason: reason}}})
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

// onAssign queues a job at this run node (003 §4.1 step 5: FIFO).
func (n *Node) onAssign(now time.Duration, m *wire.JobAssign) {
	owner := overlay.NodeID(m.Owner)
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
func (n *Node) enqueue(now time.Duration, spec *wire.JobSpec, owner overlay.NodeID, epoch, moves, bc uint32) *held {
	h := &held{spec: spec, owner: owner, epoch: epoch, moves: moves, bc: bc, demand: n.cfg.Res.Demand(spec.Req).clamp(n.capacity)}
	h.demand[ResCores] = max(h.demand[ResCores], 1)
	n.queue = append(n.queue, h)
	// The owner's silence is measured from now for this job (the last
	// word of an owner whose earlier jobs ended may be old).
	n.ownerHeard[owner] = max(n.ownerHeard[owner], now)
	return h
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
		alpha := 1.0
		if n.cfg.Contention {
			alpha = Alpha(n.running, n.used, n.capacity)
		}
		h.finishAt = now + time.Duration(float64(runTime(h.spec.Work, n.cfg.Speed))*alpha)
		n.status.Started++
		n.event(Event{Kind: EvStarted, Job: h.spec.Id, Attempt: h.spec.Attempt, Other: h.owner, BC: h.bc, Backfilled: i != head})
		n.ready.Timers = append(n.ready.Timers, overlay.Timer{Kind: TimerRunDone, At: h.finishAt})
	}
}

// nextStart picks the waiting job to start now (-1 for none) and says
// where the waiting queue's head is.
func (n *Node) nextStart() (int, int) {
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
		n.send(overlay.NodeID(h.spec.Client), &wire.JobResult{Id: h.spec.Id, Attempt: h.spec.Attempt, Run: uint64(n.self)})
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

// Tick handles the expiry of a job timer.
func (n *Node) Tick(now time.Duration, kind overlay.TimerKind) {
	if n.left {
		return
	}
	n.now = now
	switch kind {
	case TimerRunDone:
		n.finish(now)
	case TimerJobs:
		n.ticking = false
		n.periodic(now)
		if len(n.owned) > 0 || len(n.queue) > 0 || len(n.done) > 0 || len(n.sched.outbound) > 0 || len(n.disowned) > 0 || len(n.ended) > 0 || len(n.hosted) > 0 || n.res.point != nil {
			n.arm(now)
		}
	case TimerSched:
		n.schedule(now)
	}
	n.syncBalloon(now)
}

// periodic is the owner/run-node heartbeat (003 §4.1: job profiles are
// held by both, each watches the other), one role after the other: the run
// node's beats to owners (runNodePeriodic), the owner's to run nodes
// (ownerPeriodic) and clients (clientStatus), then the expiry of what the
// node remembers (expire), unacknowledged migrations and the Balloon.
func (n *Node) periodic(now time.Duration) {
	timeout := time.Duration(n.cfg.FailAfter) * n.cfg.Period
	n.runNodePeriodic(now, timeout)
	ids := n.ownerPeriodic(now, timeout)
	n.clientStatus(now, ids)
	n.expire(now, timeout)
	n.resendMigrations(now)
	n.balloonPeriodic(now)
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
			st := clients.to(overlay.NodeID(o.spec.Client))
			st.Owned = append(st.Owned, id)
		}
		for _, c := range clients.order {
			n.send(c, clients.by[c])
		}
	}
}

// expire forgets, after a while, silent run nodes, jobs handed on and
// ended jobs, and hands an ended job's completion to its point's new owner
// until it acknowledges.
func (n *Node) expire(now, timeout time.Duration) {
	for id, t := range n.runHeard { // deleting only: order does not matter
		if now-t > 4*timeout {
			delete(n.runHeard, id)
		}
	}
	for id, h := range n.disowned { // deleting only: order does not matter
		if now-h.at > 4*timeout {
			delete(n.disowned, id)
		}
	}
	for _, id := range sortedKeys(n.ended) {
		e := n.ended[id]
		switch {
		case now-e.at > endedKeep*n.cfg.Period:
			delete(n.ended, id)
		case e.failed != "": // kept for our abandoned copies, not handed on
		case n.view.Joined() && !n.view.Owns(can.Point(e.spec.Req)):
			// The point's new owner learns that the job completed and
			// acknowledges; until then we try again, less and less often.
			if !e.handing {
				e.handing, e.next, e.gap = true, now, n.cfg.Period
			}
			if now >= e.next {
				e.next, e.gap = now+e.gap, 2*e.gap
				n.routeAdopt(now, &wire.JobAdopt{Job: e.spec, Done: true, Run: uint64(n.self)})
			}
			n.ended[id] = e
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

// adoptAll routes every job we hold for silent owner o to its point: the
// zone's current owner (o's take-over node, typically) adopts it.
func (n *Node) adoptAll(now time.Duration, o overlay.NodeID) {
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
	r := &wire.JobRef{Id: m.Job.Id, Epoch: m.Epoch, Moves: m.Moves}
	o, ok := n.owned[m.Job.Id]
	if e, done := n.ended[m.Job.Id]; done && !ok {
		// It ended under us: the copy goes (or, finished, is acknowledged).
		if run != 0 {
			n.cancel(run, r)
		}
		if !m.Done {
			n.send(overlay.NodeID(m.Job.Client), e.status(m.Job.Id))
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
	n.send(overlay.NodeID(m.Job.Client), &wire.JobStatus{Owned: []uint64{m.Job.Id}})
	n.ownerBeat(run)
	n.arm(now)
}

// ownerBeat sends run node r the list of jobs we own there now, the
// copies we abandoned there included: a run node keeps a finished job's
// record, reporting it, for as long as its owner lists the job — a
// heartbeat about other jobs must not acknowledge a completion we never
// heard of (we matched the job again meanwhile, and would run it twice).
func (n *Node) ownerBeat(r overlay.NodeID) {
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

func sortedKeys[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// complete ends an owned job that run node by finished: the client hears
// it from us too, in case the run node's result was lost. Every other copy
// we know of — the one we follow, the one being matched, those we
// abandoned (matched again while by was cut off from us) — is cancelled:
// the job must not complete twice.
func (n *Node) complete(o *owned, by overlay.NodeID) {
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
func (o *owned) follow(from overlay.NodeID, r *wire.JobRef) bool {
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
func (n *Node) unknownCopy(from overlay.NodeID, r *wire.JobRef) {
	if h, ok := n.disowned[r.Id]; ok && !abandoned(h.left, from, r) {
		n.send(from, &wire.OwnerHeartbeat{Disowned: []*wire.JobRef{r}})
		return
	}
	n.cancel(from, r)
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

// onOwnerHeartbeat: an owner's periodic word about the jobs we hold for it.
func (n *Node) onOwnerHeartbeat(now time.Duration, from overlay.NodeID, m *wire.OwnerHeartbeat) {
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

// onDisowned: owner from's zone no longer holds these jobs' points (a
// split or a zone conflict moved them); the point's owner adopts each.
func (n *Node) onDisowned(now time.Duration, from overlay.NodeID, refs []*wire.JobRef) {
	for _, r := range refs {
		if h := n.holding(r.Id); h != nil && h.owner == from {
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
func (n *Node) onReturn(now time.Duration, from overlay.NodeID, m *wire.JobReturn) {
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

// onCancel drops a copy of a job the owner runs elsewhere, queued or
// running (a running copy is aborted: emulated work costs nothing, and a
// job must not complete twice); for a job we finished, it is the
// adopter's acknowledgement.
func (n *Node) onCancel(now time.Duration, from overlay.NodeID, m *wire.JobCancel) {
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
			r.Jobs = append(r.Jobs, h.ref())
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
		hb.Jobs = append(hb.Jobs, o.copyRef())
	}
	for _, r := range runs.order {
		n.send(r, runs.by[r])
	}
	if n.res.point != nil {
		n.detach(now)
	}
	n.hosted = map[overlay.NodeID]*hosted{}
	n.left = true
	n.owned, n.queue, n.done, n.running, n.used = map[uint64]*owned{}, nil, nil, 0, Vec{}
	n.sched.init()
	n.queueChanged()
}
