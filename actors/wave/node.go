package wave

import (
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// View is what a Wave peer reads of the timezone CAN its overlay core
// maintains (actors/overlay.Node): whether it is a member, its zones and
// label, its neighbors, and greedy routing's next hop.
type View interface {
	ID() core.NodeID
	Joined() bool
	Owns(p can.Point) bool
	Point() can.Point
	Neighbors() []overlay.Neighbor
	NextHop(p can.Point, hops *uint32, best *float64, detours *uint32) core.NodeID
}

// Config is what every Wave peer of a run shares.
type Config struct {
	Strategy  Strategy
	Discovery Discovery
	Calendar  Calendar
	Profile   Profile
	// MigrationBytes is the size of a job's state, shipped with it.
	MigrationBytes int
	// Timeout is how long a discovery waits for an answer: to one query
	// of label-based random discovery, or to a whole expanding ring (whose
	// hosts that do not meet the criteria stay silent). 0: DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is Config.Timeout's default: ten emulated minutes, long
// against a message's delay and short against an hourly slot.
const DefaultTimeout = 10 * time.Minute

// TransferSends is how many times a peer sends a job (WaveShip or
// WaveMigrate) before it gives the transfer up unacknowledged: the first
// send and four resends, Timeout, then twice, four and eight times
// Timeout apart (150 emulated minutes in all at the default Timeout, then
// 160 more for the last answer). gridbed's choice: 001 §II-A has the
// client wait for the host's acknowledgment before it ships the job, and
// says nothing of a job lost on its way; gridbed acknowledges the
// transfer too, so that a job is never lost silently to a lost message.
const TransferSends = 5

// Job is a job a client submits (001 §V-A: one per client, at a random
// time of the day, runtime U(12, 24) h).
type Job struct {
	ID      uint32
	Runtime time.Duration
	Submit  time.Duration // emulated instant of the submission
}

// EventKind names what a Wave peer tells the run's job-history check.
type EventKind uint8

// The events of a Wave job's history.
const (
	Submitted EventKind = iota // the client starts scheduling its job
	Placed                     // a host took the job (shipped, or migrated to it)
	Left                       // the job left its host for another (Work done there)
	Completed                  // the job finished on its host (Work done there)
	Failed                     // the job was given up (Reason)
	Searched                   // a discovery for one criterion ended (Found)
	// The transfers' and discoveries' bookkeeping under message loss
	// (TransferSends; docs/WAVE.md).
	TimedOut  // a discovery query got no answer within Timeout
	Resent    // a transfer was not acknowledged within its timeout: sent again
	Duplicate // a host received a job it holds or held before: acknowledged, not run again
	Unacked   // a transfer was given up after TransferSends sends without an acknowledgment
)

// Failure reasons (Event.Reason).
const (
	ReasonInitial  = "no host at submission" // 001 §V-B: no host met the criteria at the first scheduling
	ReasonNoHost   = "no host to migrate to" // … or at a migration
	ReasonDeparted = "host departed"         // the host left gracefully holding the job
	ReasonBusy     = "host busy on arrival"  // the job reached a host that had taken another
)

// Event is one step of a job's history, reported outside the bus.
type Event struct {
	Kind EventKind
	Job  uint32
	// At is the emulated instant the step took effect (a deadline's own
	// instant, not when a late timer was handled).
	At time.Duration
	// Host is the reporting peer and Wavezone its wavezone.
	Host     core.NodeID
	Wavezone int
	// Work is the dedicated-machine seconds done on Host (Left,
	// Completed, Failed by a host).
	Work float64
	// Runtime and Submit describe the job (Submitted).
	Runtime time.Duration
	// Migration: Placed by a migration rather than the client's ship.
	Migration bool
	Reason    string
	// Found: the discovery found a host (Searched).
	Found bool
}

// Snapshot is what the oracle reads of a Wave peer.
type Snapshot struct {
	On        bool // the peer runs the Wave core and has started
	Available bool // its current hourly slot (001 §V-A)
	Holding   bool // it holds a foreign job
	Job       uint32
	Wavezone  int
}

// Ready is what the Wave core wants done.
type Ready struct {
	core.Outbox
	Events []Event
}

// Node is one peer's Wave scheduler (001 §IV): as a host, its hourly
// availability, at most one foreign job run in screensaver mode and the
// strategy's decisions for it; as a client, its own jobs' initial
// scheduling; and the discoveries both run, as messages over the
// timezone CAN. Pure: Step and Tick take the emulated time; Ready and
// Advance hand out what to send.
type Node struct {
	cfg     Config
	view    View
	id      core.NodeID
	tz      int
	rng     *rand.Rand
	out     Ready
	started bool
	left    bool
	slot    Slot
	hourAt  time.Duration // the next whole UTC hour (the slot changes)
	job     *held
	hold    hold
	reqs    uint64
	discs   []*discovery
	pending []Job // own jobs not yet submitted, by Submit
	seen    map[seenKey]time.Duration
	armed   time.Duration              // the earliest TimerWave asked for and not yet fired (0: none)
	sends   []*transfer                // jobs sent and not yet acknowledged
	taken   map[takenKey]time.Duration // jobs this host took, by id and migrations: a resent copy is acknowledged, not run again
}

// transfer is a job this peer sent — shipped as its client, or migrated
// as its last host — and keeps, with its state, until the receiver
// acknowledges it (TransferSends).
type transfer struct {
	spec      *wire.WaveJob // the job as sent, state included
	to        core.NodeID
	migration bool
	sends     int
	deadline  time.Duration
}

type takenKey struct {
	job, migrations uint32
}

type held struct {
	spec      *wire.WaveJob
	accrued   time.Duration // progress counted up to here
	work      float64       // seconds of work done on this host
	runDue    time.Duration // its completion within the current hour (0: none)
	waiting   bool          // lingering or sleeping until waitUntil
	waitUntil time.Duration
	migrating bool // a discovery for its next host is under way
}

// hold is a host's promise to one discovery: it answered yes and keeps
// itself for that job until the job arrives or until expires.
type hold struct {
	req     uint64
	origin  core.NodeID
	expires time.Duration
}

type discovery struct {
	req      uint64
	job      *wire.WaveJob // a client's job (nil: migrating the held job)
	crits    []Criterion
	ci       int
	tries    int
	region   Region
	deadline time.Duration
}

type seenKey struct {
	origin core.NodeID
	req    uint64
}

// New returns peer view.ID()'s Wave core: timezone tz (its UTC offset in
// hours), the jobs it submits as a client (none for a pure host), and its
// own random source (labels, linger times).
func New(view View, cfg Config, tz int, jobs []Job, rng *rand.Rand) *Node {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	p := slices.Clone(jobs)
	slices.SortStableFunc(p, func(a, b Job) int { return int(a.Submit - b.Submit) })
	return &Node{cfg: cfg, view: view, id: view.ID(), tz: tz, rng: rng, pending: p, seen: map[seenKey]time.Duration{}, taken: map[takenKey]time.Duration{}}
}

// Joined starts the core once its peer is a member of the timezone CAN:
// the current hourly slot, the next hour and the submissions.
func (n *Node) Joined(now time.Duration) {
	if n.started || n.left {
		return
	}
	n.started = true
	n.reslot(now)
	n.hourAt = n.cfg.Calendar.NextHour(now)
	n.due(now)
}

// Ready is what the core wants done since the last Advance.
func (n *Node) Ready() Ready { return n.out }

// Advance clears what Ready handed out.
func (n *Node) Advance() {
	n.out.Clear()
	clear(n.out.Events)
	n.out.Events = n.out.Events[:0]
}

// Snapshot is the oracle's view of the peer.
func (n *Node) Snapshot() Snapshot {
	s := Snapshot{On: n.started && !n.left, Available: n.slot.Available, Wavezone: WavezoneOf(n.tz)}
	if n.job != nil {
		s.Holding, s.Job = true, n.job.spec.Id
	}
	return s
}

// Tick handles the core's timer: every deadline due by now, each at its
// own instant.
func (n *Node) Tick(now time.Duration) {
	if n.armed != 0 && now >= n.armed {
		n.armed = 0
	}
	n.due(now)
}

// Leave makes the peer depart gracefully. 001 has no recovery for a job
// whose host leaves: the host gives it up and tells its client, and a
// job's client that leaves takes its unsubmitted job with it.
func (n *Node) Leave(now time.Duration) {
	if n.left {
		return
	}
	if n.job != nil {
		n.accrue(now)
		n.fail(now, ReasonDeparted)
	}
	n.left = true
	n.discs, n.pending, n.sends = nil, nil, nil
}

// Step handles a Wave message from peer from.
func (n *Node) Step(now time.Duration, from core.NodeID, m proto.Message) {
	if n.left || !n.started {
		return
	}
	n.due(now)
	switch m := m.(type) {
	case *wire.WaveRoute:
		n.onRoute(now, m)
	case *wire.WaveProbe:
		n.onProbe(now, from, m)
	case *wire.WaveReply:
		n.onReply(now, from, m)
	case *wire.WaveShip:
		n.take(now, from, m.Job, false)
	case *wire.WaveMigrate:
		n.take(now, from, m.Job, true)
	case *wire.WaveAck:
		n.onAck(now, m)
	case *wire.WaveRelease:
		if n.hold.req == m.GetReq() && n.hold.origin == from {
			n.hold = hold{}
		}
	case *wire.WaveFail, *wire.WaveDone:
		// The client learns its job's end; the job-history check has it
		// from the host.
	}
	n.arm(now)
}

// due handles every deadline up to now in time order, then asks for the
// timer of the next one.
func (n *Node) due(now time.Duration) {
	for {
		t, k := n.earliest()
		if k == dlNone || t > now {
			break
		}
		switch k {
		case dlRun:
			n.accrue(t)
			n.job.runDue = 0
			if n.job.spec.Remaining <= 1e-6 {
				n.finish(t)
			} else {
				n.schedule(t)
			}
		case dlHour:
			n.hour(t)
		case dlWait:
			n.accrue(t)
			n.job.waiting, n.job.waitUntil = false, 0
			n.apply(now, t, n.cfg.Strategy.OnWaitEnd(n.slot.Available))
		case dlDiscovery:
			for _, d := range n.discs {
				if d.deadline == t {
					n.event(Event{Kind: TimedOut, Job: d.jobID(n), At: t})
					n.miss(now, d)
					break
				}
			}
		case dlTransfer:
			for _, tr := range n.sends {
				if tr.deadline == t {
					n.resend(now, t, tr)
					break
				}
			}
		case dlSubmit:
			j := n.pending[0]
			n.pending = n.pending[1:]
			n.submit(now, j)
		}
	}
	n.arm(now)
}

type deadline uint8

// Deadlines at one instant are handled in this order.
const (
	dlNone deadline = iota
	dlRun
	dlHour
	dlWait
	dlDiscovery
	dlTransfer
	dlSubmit
)

func (n *Node) earliest() (time.Duration, deadline) {
	if !n.started || n.left {
		return 0, dlNone
	}
	best, k := n.hourAt, dlHour
	consider := func(t time.Duration, kind deadline) {
		if t < best || (t == best && kind < k) {
			best, k = t, kind
		}
	}
	if j := n.job; j != nil {
		if j.runDue > 0 {
			consider(j.runDue, dlRun)
		}
		if j.waiting {
			consider(j.waitUntil, dlWait)
		}
	}
	for _, d := range n.discs {
		consider(d.deadline, dlDiscovery)
	}
	for _, tr := range n.sends {
		consider(tr.deadline, dlTransfer)
	}
	if len(n.pending) > 0 {
		consider(n.pending[0].Submit, dlSubmit)
	}
	return best, k
}

// arm asks for a timer at the next deadline unless one is pending no
// later.
func (n *Node) arm(now time.Duration) {
	t, k := n.earliest()
	if k == dlNone {
		return
	}
	t = max(t, now)
	if n.armed == 0 || t < n.armed {
		n.out.SetTimer(core.TimerWave, t)
		n.armed = t
	}
}

func (n *Node) event(e Event) {
	e.Host, e.Wavezone = n.id, WavezoneOf(n.tz)
	n.out.Events = append(n.out.Events, e)
}

// reslot reads the host's hourly slot at t (001 §V-A).
func (n *Node) reslot(t time.Duration) {
	h, day := n.cfg.Calendar.LocalHour(t, n.tz)
	n.slot = n.cfg.Profile.Slot(uint64(n.id), day, h)
}

// accrue counts the held job's progress up to t in screensaver mode (001
// §IV): 1 − owner load per second while the host is available, nothing
// otherwise. The rate is constant between hours; the hour accrues first.
func (n *Node) accrue(t time.Duration) {
	j := n.job
	if j == nil || t <= j.accrued {
		return
	}
	w := min(j.spec.Remaining, n.slot.Rate()*(t-j.accrued).Seconds())
	j.spec.Remaining -= w
	j.work += w
	j.accrued = t
}

// schedule sets the held job's completion if it comes before the next
// hour.
func (n *Node) schedule(t time.Duration) {
	j := n.job
	j.runDue = 0
	r := n.slot.Rate()
	if r <= 0 {
		return
	}
	at := max(t+time.Duration(j.spec.Remaining/r*float64(time.Second)), t)
	if at <= n.hourAt {
		j.runDue = at
	}
}

// hour moves the host to its next hourly slot and lets the strategy react
// if its job's host stopped being available (001 §IV, when to migrate).
func (n *Node) hour(t time.Duration) {
	n.accrue(t)
	was := n.slot.Available
	n.reslot(t)
	n.hourAt = n.cfg.Calendar.NextHour(t)
	j := n.job
	if j == nil {
		return
	}
	if was && !n.slot.Available && !j.waiting && !j.migrating {
		n.apply(t, t, n.cfg.Strategy.OnUnavailable(n.rng))
		return
	}
	n.schedule(t)
}

// apply carries out a strategy's decision for the held job, taken at t
// (001 §IV-A).
func (n *Node) apply(now, t time.Duration, d Decision) {
	switch d.Action {
	case Stay:
		n.schedule(t)
	case Wait:
		n.job.waiting, n.job.waitUntil = true, t+d.For
		n.schedule(t) // it runs whenever the host is available meanwhile
	case Migrate:
		n.job.migrating = true
		n.schedule(t)
		n.start(now, &discovery{crits: []Criterion{Available}})
	case Fail:
		n.fail(t, ReasonNoHost)
	}
}

// fail gives the held job up and tells its client (001 §IV-A).
func (n *Node) fail(t time.Duration, reason string) {
	j := n.job
	n.out.Send(core.NodeID(j.spec.Client), &wire.WaveFail{Job: j.spec.Id})
	n.event(Event{Kind: Failed, Job: j.spec.Id, At: t, Work: j.work, Reason: reason})
	n.job = nil
}

// finish returns the finished job to its client.
func (n *Node) finish(t time.Duration) {
	j := n.job
	n.out.Send(core.NodeID(j.spec.Client), &wire.WaveDone{Job: j.spec.Id})
	n.event(Event{Kind: Completed, Job: j.spec.Id, At: t, Work: j.work})
	n.job = nil
}

// submit is a client's initial scheduling (001 §IV-A): the strategy's
// criteria in order, the first host found takes the job.
func (n *Node) submit(now time.Duration, j Job) {
	spec := &wire.WaveJob{Id: j.ID, Client: uint64(n.id), Runtime: int64(j.Runtime), Remaining: j.Runtime.Seconds(), Submitted: int64(j.Submit)}
	n.event(Event{Kind: Submitted, Job: j.ID, At: j.Submit, Runtime: j.Runtime})
	n.start(now, &discovery{job: spec, crits: n.cfg.Strategy.Initial()})
}

// start begins discovery d: its first criterion, from now.
func (n *Node) start(now time.Duration, d *discovery) {
	d.region = n.cfg.Strategy.Region(n.cfg.Calendar, now)
	d.tries = n.triesPer()
	n.discs = append(n.discs, d)
	n.try(now, d)
}

func (n *Node) triesPer() int {
	if n.cfg.Discovery == DiscoveryRing {
		return 1
	}
	return RandomTries
}

// try sends one query of d: a request routed to the owner of a random
// label in d's region (001 §IV, label-based random discovery; for the
// expanding ring, the ring's centre).
func (n *Node) try(now time.Duration, d *discovery) {
	n.reqs++
	d.req = n.reqs
	d.deadline = now + n.cfg.Timeout
	s := &wire.WaveSearch{Req: d.req, Origin: uint64(n.id), Lo: d.region.Lo, Hi: d.region.Hi, Criterion: uint32(d.crits[d.ci]), Job: d.jobID(n)}
	m := &wire.WaveRoute{Search: s, Point: Label(n.rng, d.region)}
	if n.cfg.Discovery == DiscoveryRing {
		m.Ring = RingHops
	}
	n.onRoute(now, m)
}

// miss is a query of d that found nobody: the next try, the next
// criterion, or no host.
func (n *Node) miss(now time.Duration, d *discovery) {
	d.tries--
	if d.tries > 0 {
		n.try(now, d)
		return
	}
	d.ci++
	n.event(Event{Kind: Searched, At: now})
	if d.ci < len(d.crits) {
		d.tries = n.triesPer()
		n.try(now, d)
		return
	}
	n.drop(d)
	if d.job != nil {
		n.event(Event{Kind: Failed, Job: d.job.Id, At: now, Reason: ReasonInitial})
		return
	}
	j := n.job
	if j == nil || !j.migrating {
		return
	}
	j.migrating = false
	// 001 §IV-A: the strict strategies give up, the adaptive ones linger
	// and try again.
	if dec := n.cfg.Strategy.OnNoHost(n.rng); dec.Action == Wait {
		n.apply(now, now, dec)
		return
	}
	n.fail(now, ReasonNoHost)
}

// jobID is the job discovery d is for: the client's, or the host's held
// job.
func (d *discovery) jobID(n *Node) uint32 {
	if d.job != nil {
		return d.job.Id
	}
	if n.job != nil {
		return n.job.spec.Id
	}
	return 0
}

func (n *Node) drop(d *discovery) {
	if i := slices.Index(n.discs, d); i >= 0 {
		n.discs = slices.Delete(n.discs, i, i+1)
	}
}

// onRoute forwards a routed query greedily towards its label (001 §III-A)
// or, at the label's owner, examines it.
func (n *Node) onRoute(now time.Duration, m *wire.WaveRoute) {
	if n.view.Owns(can.Point(m.Point)) {
		n.examine(now, m.Search, m.Ring, true)
		return
	}
	if next := n.view.NextHop(can.Point(m.Point), &m.Hops, &m.Best, &m.Detours); next != 0 {
		n.out.Send(next, m)
	}
	// else dropped: the origin's timeout covers it
}

func (n *Node) onProbe(now time.Duration, from core.NodeID, m *wire.WaveProbe) {
	k := seenKey{core.NodeID(m.Search.GetOrigin()), m.Search.GetReq()}
	if _, ok := n.seen[k]; ok {
		return
	}
	n.examine(now, m.Search, m.Ttl, false)
}

// examine is a host receiving a discovery query (001 §IV): if it meets
// the criteria it holds itself for the job and answers yes; a label
// query that it does not meet is answered no; an expanding ring goes on
// to the host's neighbors while it has hops left — only the hosts that
// meet the criteria answer a ring.
func (n *Node) examine(now time.Duration, s *wire.WaveSearch, ttl uint32, routed bool) {
	origin := core.NodeID(s.GetOrigin())
	n.remember(now, seenKey{origin, s.GetReq()})
	ok := n.accepts(now, s)
	if ok {
		n.hold = hold{req: s.GetReq(), origin: origin, expires: now + 2*n.cfg.Timeout}
	}
	switch {
	case ok || (routed && n.cfg.Discovery != DiscoveryRing):
		n.answer(now, origin, &wire.WaveReply{Req: s.GetReq(), Ok: ok})
	case ttl > 0:
		p := &wire.WaveProbe{Search: s, Ttl: ttl - 1}
		for _, nb := range n.view.Neighbors() {
			n.out.Send(nb.ID, p)
		}
	}
}

// answer replies to origin; to itself without a message.
func (n *Node) answer(now time.Duration, origin core.NodeID, r *wire.WaveReply) {
	if origin == n.id {
		n.onReply(now, n.id, r)
		return
	}
	n.out.Send(origin, r)
}

// accepts reports whether the host meets a query's criteria (001 §IV):
// its label in the query's region, no foreign job and no promise to
// another discovery, and — for "available" — idle in this hour.
func (n *Node) accepts(now time.Duration, s *wire.WaveSearch) bool {
	if !n.view.Joined() || n.job != nil {
		return false
	}
	if n.hold.req != 0 && now < n.hold.expires {
		return false
	}
	x := uint64(n.view.Point()[0])
	if x < s.GetLo() || x >= s.GetHi() {
		return false
	}
	return Criterion(s.GetCriterion()) == Unclaimed || n.slot.Available
}

// rememberTaken records a job the host took, for as long as its sender
// may resend it.
func (n *Node) rememberTaken(now time.Duration, k takenKey) {
	if len(n.taken) >= 64 {
		window := n.cfg.Timeout << TransferSends
		for o, t := range n.taken {
			if now-t > window {
				delete(n.taken, o)
			}
		}
	}
	n.taken[k] = now
}

func (n *Node) remember(now time.Duration, k seenKey) {
	if len(n.seen) >= 64 {
		for o, t := range n.seen {
			if now-t > 2*n.cfg.Timeout {
				delete(n.seen, o)
			}
		}
	}
	n.seen[k] = now
}

// onReply is a host's answer to one of our queries: the first yes takes
// the job there (001 §IV: "the first discovered host"); a no is a miss.
func (n *Node) onReply(now time.Duration, from core.NodeID, m *wire.WaveReply) {
	var d *discovery
	for _, x := range n.discs {
		if x.req == m.GetReq() {
			d = x
		}
	}
	if d == nil {
		// Late: the query timed out, or another host answered first.
		n.release(from, m)
		return
	}
	if !m.GetOk() {
		n.miss(now, d)
		return
	}
	n.drop(d)
	n.event(Event{Kind: Searched, At: now, Found: true})
	state := make([]byte, n.cfg.MigrationBytes)
	if d.job != nil {
		j := proto.Clone(d.job).(*wire.WaveJob)
		j.State = state
		n.send(now, &transfer{spec: j, to: from})
		return
	}
	j := n.job
	if j == nil || !j.migrating {
		n.release(from, m) // the job finished meanwhile
		return
	}
	n.accrue(now)
	spec := proto.Clone(j.spec).(*wire.WaveJob)
	spec.Migrations++
	spec.State = state
	n.event(Event{Kind: Left, Job: spec.Id, At: now, Work: j.work})
	n.job = nil
	n.send(now, &transfer{spec: spec, to: from, migration: true})
}

// release frees a host whose yes (r) we do not take from the promise it
// made (gridbed's choice: 001 §IV takes the first host found and says
// nothing of the others; without it, every other host of an expanding
// ring that answered yes would refuse every other discovery for twice
// the timeout).
func (n *Node) release(from core.NodeID, r *wire.WaveReply) {
	switch {
	case !r.GetOk():
	case from != n.id:
		n.out.Send(from, &wire.WaveRelease{Req: r.GetReq()})
	case n.hold.req == r.GetReq() && n.hold.origin == n.id:
		n.hold = hold{} // our own yes
	}
}

// send sends a job to its next host and keeps it until that host
// acknowledges it (TransferSends: gridbed's choice, after 001 §II-A's
// acknowledged scheduling).
func (n *Node) send(now time.Duration, tr *transfer) {
	n.sends = append(n.sends, tr)
	n.transmit(now, tr)
}

// transmit sends tr once more and sets its next deadline: Timeout after
// the first send, doubling with each resend.
func (n *Node) transmit(now time.Duration, tr *transfer) {
	tr.sends++
	tr.deadline = now + n.cfg.Timeout<<(tr.sends-1)
	spec := tr.spec
	if tr.sends > 1 {
		spec = proto.Clone(tr.spec).(*wire.WaveJob) // the outbox keeps the message until Advance
	}
	if tr.migration {
		n.out.Send(tr.to, &wire.WaveMigrate{Job: spec})
	} else {
		n.out.Send(tr.to, &wire.WaveShip{Job: spec})
	}
}

// resend handles a transfer's timeout at t: the job again, or, after
// TransferSends sends, the transfer given up. The sender cannot tell a
// lost job from a lost acknowledgment, so it neither runs the job again
// nor fails it (either could make the job end twice); the job-history
// check finds where it is: on its receiver, or lost with that reason.
func (n *Node) resend(now, t time.Duration, tr *transfer) {
	if tr.sends < TransferSends {
		n.event(Event{Kind: Resent, Job: tr.spec.Id, At: t})
		n.transmit(now, tr)
		return
	}
	n.dropSend(tr)
	n.event(Event{Kind: Unacked, Job: tr.spec.Id, At: t})
}

func (n *Node) dropSend(tr *transfer) {
	if i := slices.Index(n.sends, tr); i >= 0 {
		n.sends = slices.Delete(n.sends, i, i+1)
	}
}

// onAck is the receiver's answer to one of our transfers: ok, the job is
// there; not ok, the host had taken another job meanwhile (its promise
// expired), and the job fails (host busy on arrival) — the sender tells
// the client, as the receiver would have.
func (n *Node) onAck(now time.Duration, m *wire.WaveAck) {
	var tr *transfer
	for _, x := range n.sends {
		if x.spec.Id == m.GetJob() && x.spec.Migrations == m.GetMigrations() {
			tr = x
		}
	}
	if tr == nil {
		return // an acknowledgment of a resent copy, or after we gave up
	}
	n.dropSend(tr)
	if m.GetOk() {
		return
	}
	if c := core.NodeID(tr.spec.Client); c != n.id {
		n.out.Send(c, &wire.WaveFail{Job: tr.spec.Id})
	}
	n.event(Event{Kind: Failed, Job: tr.spec.Id, At: now, Reason: ReasonBusy})
}

// take is a job arriving at the host, shipped by its client or migrated
// from its last host (from), which it acknowledges: a copy of a job it
// took before (a resend, or a duplicate on the link) is acknowledged and
// not run again; a job that finds the host holding another (its promise
// expired and another job came first) is refused.
func (n *Node) take(now time.Duration, from core.NodeID, spec *wire.WaveJob, migrated bool) {
	if spec == nil {
		return
	}
	spec.State = nil // the state is the job's checkpoint: its bytes were the message
	k := takenKey{spec.Id, spec.Migrations}
	if _, ok := n.taken[k]; ok {
		n.event(Event{Kind: Duplicate, Job: spec.Id, At: now})
		n.out.Send(from, &wire.WaveAck{Job: spec.Id, Migrations: spec.Migrations, Ok: true})
		return
	}
	if n.job != nil {
		n.out.Send(from, &wire.WaveAck{Job: spec.Id, Migrations: spec.Migrations})
		return
	}
	n.rememberTaken(now, k)
	n.out.Send(from, &wire.WaveAck{Job: spec.Id, Migrations: spec.Migrations, Ok: true})
	n.hold = hold{}
	n.job = &held{spec: spec, accrued: now}
	n.event(Event{Kind: Placed, Job: spec.Id, At: now, Migration: migrated})
	if !migrated && !n.slot.Available {
		// 001 §IV-A: an adaptive job placed on a busy unclaimed host
		// sleeps U(1,3) h, then decides as after a linger.
		n.apply(now, now, n.cfg.Strategy.OnPlacedUnclaimed(n.rng))
		return
	}
	n.schedule(now)
}
