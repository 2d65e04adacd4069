package jobs

import (
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/wire"
)

// Config holds a peer's job parameters.
type Config struct {
	// Scheme is SchemeCAN, SchemeCANP (default), SchemeCENT,
	// SchemeCENTQueue or SchemeMP.
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
	// PullTarget is which neighbor an internode PULL request goes to
	// (000 §IV-B): PullTargetWaiting (default) or PullTargetQueue.
	PullTarget PullTarget
	// QueueLoad is which jobs the normalized load L of queue balancing
	// sums (000 Eq 4): QueueLoadWaiting (default) or QueueLoadQueue.
	QueueLoad QueueLoad
	// Residue is how a multi-core node's Residue-node is represented (002
	// §3.1): ResidueNone (default), ResidueBalloon or ResidueDualCAN.
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
	// Combo is this node's combination of categorical values plus one (0:
	// the run has no categorical resources; 002 §5.1.1): its CID is bit
	// Combo-1.
	Combo uint32
	// Categorical is how matchmaking uses categorical resources:
	// CategoricalNone (default), CategoricalCID (002 Algorithm 3) or
	// CategoricalSubCAN (002 §2.4).
	Categorical CategoricalMode
	// SubCAN is the transform dimension under CategoricalSubCAN: the
	// last coordinate of every point is T, each combination's sub-CAN an
	// interval of it (categorical.Transform). Shared, never modified.
	SubCAN *categorical.Transform
	// CEs is the heterogeneous CE model (002 §4.1): a node's CEs and a
	// job's dominant CE (nil: the CPU alone). Run nodes queue and run
	// jobs per CE; SchemeCANHet matches by it.
	CEs CEModel
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
	if c.Categorical == "" {
		c.Categorical = CategoricalNone
	}
	return c
}

// batches collects one message per receiver, in the order receivers were
// first named (deterministic, unlike ranging over a map).
type batches[M any] struct {
	by    map[core.NodeID]*M
	order []core.NodeID
}

func (b *batches[M]) to(id core.NodeID) *M {
	if b.by == nil {
		b.by = map[core.NodeID]*M{}
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
	self    core.NodeID
	// searcher runs SchemeRNT's matchmaking (rnt.go); nil otherwise.
	searcher Searcher

	owned    map[uint64]*owned
	runHeard map[core.NodeID]time.Duration // owner: last word from each run node
	queue    []*held                       // run node: FIFO, running jobs first
	running  int
	done     []finished
	// ran remembers every job this node ran to completion: a late or
	// duplicated assignment of one of them is never run again.
	ran map[uint64]bool
	// ownerHeard is, per owner of a job we hold, the last word from it
	// (or when we last asked for an adoption).
	ownerHeard map[core.NodeID]time.Duration
	// disowned are the jobs whose ownership we handed on (their point left
	// our zone): run nodes still reporting them to us are told, and a
	// completion one reports is handed on too.
	disowned map[uint64]handedOn
	// ended are the owned jobs that completed, kept for a while: a copy
	// another owner placed meanwhile (a partition made each side repair
	// on its own) is cancelled when it or its ownership reaches us.
	ended map[uint64]ended
	now   time.Duration // of the message or timer being handled

	ai       []load.Agg      // AI_d of this node, from the last heartbeat
	acid     categorical.Set // AC(n) of this node (002 Eq 5.1), from the last heartbeat
	capacity Vec             // this node's resources
	used     Vec             // what its running jobs use
	sched    scheduler       // dynamic scheduling state (000 §IV)
	res      residue         // our Balloon (002 §3.1.3)
	hosted   map[core.NodeID]*hosted
	// Dual-CAN (dual.go): our Residue-node's core in the Secondary CAN
	// (nil: none now), and the neighbors' residues a search matched a job
	// to, by the heartbeat load it used (not again until the next one).
	second      View
	secondTaken map[core.NodeID]*wire.Load
	est         map[core.NodeID]estimate // our neighbors' loads (estimates.go)
	ticking     bool
	lastStatus  time.Duration
	left        bool

	ready  Ready
	status Status
	ces    []hetce.CE // this node's CEs (002 §4.1), nil without Config.CEs
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
	// ResidueMatches are jobs this node matched to a Residue-node of the
	// Secondary CAN (002 Algorithm 1 line 7).
	ResidueMatches uint64
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
		owned: map[uint64]*owned{}, ran: map[uint64]bool{}, runHeard: map[core.NodeID]time.Duration{}, ownerHeard: map[core.NodeID]time.Duration{},
		disowned: map[uint64]handedOn{}, ended: map[uint64]ended{}, hosted: map[core.NodeID]*hosted{},
		est: map[core.NodeID]estimate{},
	}
	n.capacity = n.cfg.Res.Capacity(view.Point())
	n.capacity[ResCores] = max(n.capacity[ResCores], 1)
	if n.cfg.CEs != nil {
		n.ces = n.cfg.CEs.CEs(view.Point())
	}
	n.sched.init()
	return n
}

// Status returns the counters.
func (n *Node) Status() Status { return n.status }

// Ready returns what the core wants done since the last Advance.
func (n *Node) Ready() Ready { return n.ready }

// Advance tells the core that the caller is done with what Ready returned:
// the core clears it and reuses its slices.
func (n *Node) Advance() { n.ready.advance() }

// advance clears r for reuse.
func (r *Ready) advance() {
	r.Outbox.Clear()
	*r = Ready{Outbox: r.Outbox, Events: r.Events[:0]}
}

func (n *Node) send(to core.NodeID, m proto.Message) {
	n.ready.Send(to, m)
}

func (n *Node) event(e Event) {
	e.Peer = n.self
	n.ready.Events = append(n.ready.Events, e)
}

func (n *Node) queueChanged() {
	n.ready.QueueChanged = true
	n.ready.QueueLen = len(n.queue)
	n.ready.Residual = Vec{}
	if n.running == len(n.queue) || n.ces != nil {
		// Jobs waiting here start before a newcomer: nothing is free —
		// but with CEs a job waits only behind its own CE's (002 §4.1).
		n.ready.Residual = n.residual()
	}
	if n.ces != nil {
		n.ready.CELoads = n.ceLoads()
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
	n.ready.SetTimer(core.TimerJobs, now+n.cfg.Period)
}

// Snapshot is what the oracle reads of a node's jobs.
type Snapshot struct {
	Owned []uint64 // jobs it owns
	Held  []uint64 // jobs in its run queue (queued or running)
	Done  []uint64 // jobs it ran whose owner has not acknowledged them
	// Aggregated load (003 Eq 1, 002 §3.1.4), for the oracle's staleness
	// measure: Cores and Demand are the node's own I(u) now — TNC(u)
	// (002 Eq 3.1: its cores and the discounted cores of the Balloons
	// attached to it, as its heartbeat reports them) and the cores its
	// queued and running jobs require — and AI the AI_d it holds, computed
	// at its last heartbeat (nil before its first).
	Cores, Demand float64
	AI            []load.Agg
	// Categorical resources (002 §5.1), for the oracle's ACID staleness:
	// Combo is the node's combination plus one (0: none) and ACID the
	// ACID (002 Eq 5.1) its last heartbeat carried (nil before its first
	// and without categorical resources).
	Combo uint32
	ACID  categorical.Set
}

// Snapshot copies the node's job state.
func (n *Node) Snapshot() Snapshot {
	s := Snapshot{Owned: n.sortedOwned()}
	for _, h := range n.queue {
		s.Held = append(s.Held, h.spec.Id)
	}
	s.Held = append(s.Held, n.sched.outboundIDs()...) // in flight to a neighbor, ours until acknowledged
	for _, d := range n.done {
		s.Done = append(s.Done, d.ref.Id)
	}
	s.Cores = tnc(&wire.Load{Cores: float32(n.capacity[ResCores]), Balloons: n.hostedLoad()})
	s.Demand = n.coresDemand()
	s.AI = slices.Clone(n.ai)
	s.Combo, s.ACID = n.cfg.Combo, slices.Clone(n.acid)
	return s
}

// LoadInfo computes the load our heartbeats carry (003 §4.4): our queue
// size, free cores, speed, point and AI_d for every dimension (Eq 1) from
// our estimates of our neighbors' loads. The overlay asks for it once per
// heartbeat period (overlay.LoadSource).
func (n *Node) LoadInfo() *wire.Load {
	own := n.view.Zone()
	nbs := n.view.Neighbors()
	ups := make([]load.Upper, 0, len(nbs))
	n.forgetEstimates(nbs)
	for _, nb := range nbs {
		nl := n.loadOf(&nb)
		if nl == nil {
			continue
		}
		u := load.Upper{Zone: nb.Zone, Queue: float64(nl.Queue)}
		if nl.Cores > 0 { // I(u) in cores: TNC(u) (002 §3.1.4, Eq 3.1)
			u.Cores, u.Queue = tnc(nl), float64(nl.Demand)
		}
		u.AI = make([]load.Agg, len(nl.Agg))
		for i, a := range nl.Agg {
			u.AI[i] = aggOf(a)
		}
		ups = append(ups, u)
	}
	if len(own.Lo) > 0 {
		n.ai = load.Aggregate(own, ups)
		if n.cfg.Combo != 0 && n.cfg.Categorical != CategoricalSubCAN {
			n.acid = n.aggregateACID(own, nbs)
		}
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
	if n.cfg.Combo != 0 {
		l.Combo, l.Acid = n.cfg.Combo, slices.Clone(n.acid)
	}
	if n.cfg.Scheme == SchemeCANHet {
		l.Ces = n.ceLoadInfo(own)
	}
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

// normLoad is this node's L (000 Eqs 4-5) over Queue_i (queueLoad).
func (n *Node) normLoad() float64 { return NormLoad(n.queueLoad()) }

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

// Step handles one job message from peer from.
func (n *Node) Step(now time.Duration, from core.NodeID, m proto.Message) {
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
	case *wire.DualSearch:
		n.onDualSearch(now, m)
	}
	n.syncBalloon(now)
}

// validSpec checks a job profile's shape against our space.
func (n *Node) validSpec(s *wire.JobSpec) bool {
	return s != nil && s.Id != 0 && len(s.Req) == len(n.view.Point()) && s.Work >= 0
}

// Tick handles the expiry of a job timer.
func (n *Node) Tick(now time.Duration, kind core.TimerKind) {
	if n.left {
		return
	}
	n.now = now
	switch kind {
	case core.TimerRunDone:
		n.finish(now)
	case core.TimerJobs:
		n.ticking = false
		n.periodic(now)
		if len(n.owned) > 0 || len(n.queue) > 0 || len(n.done) > 0 || len(n.sched.outbound) > 0 || len(n.disowned) > 0 || len(n.ended) > 0 || len(n.hosted) > 0 || n.res.point != nil {
			n.arm(now)
		}
	case core.TimerSched:
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

func sortedKeys[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
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
	n.hosted = map[core.NodeID]*hosted{}
	n.left = true
	n.owned, n.queue, n.done, n.running, n.used = map[uint64]*owned{}, nil, nil, 0, Vec{}
	n.sched.init()
	n.queueChanged()
}
