// Package driver is the bookkeeping both drivers share (the deterministic
// one, emulator/sim, and the emulator's, emulator/live): the run's members
// and the join order of its initial population, every random stream drawn
// from the run seed, the rules for joins, departures and the oracle's view
// of a crashed peer, the job client, and the handover of an overlay built
// outside the bus. A driver embeds a Base and supplies only a Host: where
// an endpoint lives and how messages, timers and starts reach it.
//
// The rules live here once so that a peer makes the same choices, and a
// run the same draws, under either driver.
package driver

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/emulator/joinorder"
	"github.com/gridbed/gridbed/emulator/members"
	"github.com/gridbed/gridbed/metrics"
)

// The random streams a run draws from its seed (PCG's second word, the
// stream's name in ASCII). Each has a job of its own, so that turning on
// one feature does not shift the draws of another.
const (
	// StreamBoot picks bootstrap contacts and churn departures.
	StreamBoot = 0x626f6f74 // "boot"
	// StreamInject picks the member the job client submits through:
	// turning on a workload or changing the scheme must not change which
	// peers churn removes.
	StreamInject = 0x696e6a // "inj"
	// StreamWorld orders the deterministic driver's simultaneous events
	// (sim.World).
	StreamWorld = 0x73696d // "sim"
	// StreamJob is XORed into the seed for each peer's job core (JobRand).
	StreamJob = 0x6a6f62 // "job"
	// StreamClock is XORed into the seed for each peer's clock skew
	// (Base.Skew): turning skew on changes no other draw.
	StreamClock = 0x636c6b // "clk"
)

// PeerRand is the random source of peer id in a run with the given seed;
// both drivers use it so a peer makes the same choices under either.
func PeerRand(seed uint64, id core.NodeID) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(id)))
}

// JobRand is the random source of peer id's job core (CAN-P's stops), a
// stream apart from its overlay's so that adding jobs to a run does not
// change the overlay's own draws.
func JobRand(seed uint64, id core.NodeID) *rand.Rand {
	return rand.New(rand.NewPCG(seed^StreamJob, uint64(id)))
}

// Member is one peer of an overlay built outside the run's bus
// (sim.BuildOverlay): its overlay core, already a member with its zone,
// split history and neighbor table, and the timers the core had pending at
// the handover (heartbeats, at their phases).
type Member struct {
	Node   *overlay.Node
	Timers []core.Timer
}

// Host is what a driver supplies to its Base: where an endpoint (a peer or
// the job client) lives and how starts and departures reach it. E is the
// driver's handle on a hosted peer. The Base never calls a Host with its
// lock held, so a Host may call back into the Base.
type Host[E any] interface {
	// IO is the clock, bus and timer side of endpoint id's environment;
	// sk is the endpoint's own clock (the zero Skew for the client and
	// runs without peers.clock): Now reads sk.Local of emulated time, a
	// timer set for local time at fires at sk.Emulated(at), and the
	// endpoint is told it fired at the local time it asked for.
	IO(id core.NodeID, sk clock.Skew) peer.IO
	// AddPeer hosts peer p, built on io (from IO(p.ID())): it registers
	// the peer on the bus and for its timers.
	AddPeer(p *peer.Peer, io peer.IO) (E, error)
	// AddClient hosts the run's job client, built on io (from
	// IO(peer.ClientAddress)).
	AddClient(c *peer.Client, io peer.IO) error
	// StartAt makes peer e begin joining at emulated time at.
	StartAt(e E, at time.Duration)
	// StartNow makes peer e begin joining at once (churn).
	StartNow(e E)
	// StartMember starts peer e, adopted already a member, with the timers
	// its core had pending, at emulated time at (the handover).
	StartMember(e E, timers []core.Timer, at time.Duration)
	// Halt stops departed peer id: messages to it go nowhere, and a
	// graceful one sends its LEAVE first.
	Halt(id core.NodeID, e E, graceful bool)
}

// Options are the settings a Base shares with its driver.
type Options struct {
	Seed    uint64
	Overlay overlay.Config
	Traffic *metrics.Traffic
	// Jobs, if set, gives every peer a job core (runs with a workload).
	Jobs *peer.JobSetup
	// Wave, if set, gives every peer a Wave core (001).
	Wave *peer.WaveSetup
	// Clock spreads the peers' clocks (peers.clock); zero: every peer
	// runs on emulated time.
	Clock ClockSpread
	// Remote, if set, makes the Base host only some of a run's peers (a
	// worker of a run split across processes, emulator/workers): the
	// run's members, bootstrap contacts and join sequence are the
	// coordinator's, which Remote reaches. Peers may then be hosted
	// with gaps in their ids, and Spawn and Start start nobody: the
	// coordinator says when each peer starts.
	Remote Membership
}

// Membership is the run's member set as a worker's Base reaches it
// (Options.Remote): the coordinator's Contact and JoinedAt.
type Membership interface {
	// Bootstrap returns a current member for id to join through (0: none).
	Bootstrap(id core.NodeID) core.NodeID
	// Joined reports that id became a member at emulated time at.
	Joined(id core.NodeID, at time.Duration)
}

// ClockSpread is how the peers' own clocks are drawn (peers.clock): each
// peer's drift uniformly in [-Drift, +Drift] and its offset uniformly in
// [0, Offset], from the run seed and the peer id (StreamClock).
type ClockSpread struct {
	Drift  float64
	Offset time.Duration
}

// Skew is the clock of peer id, drifting from emulated time anchor (0 for
// peers that join over the bus; the handover for adopted ones, whose
// offset is 0: their state was built on emulated time). The same seed and
// id give the same clock under either driver.
func (b *Base[E]) Skew(id core.NodeID, anchor time.Duration, adopted bool) clock.Skew {
	return b.opts.Clock.Skew(b.opts.Seed, id, anchor, adopted)
}

// Skew is the clock c draws for peer id in a run with the given seed
// (Base.Skew; tests recompute a peer's clock with it).
func (c ClockSpread) Skew(seed uint64, id core.NodeID, anchor time.Duration, adopted bool) clock.Skew {
	if c.Drift == 0 && c.Offset == 0 {
		return clock.Skew{}
	}
	r := rand.New(rand.NewPCG(seed^StreamClock, uint64(id)))
	sk := clock.Skew{Drift: c.Drift * (2*r.Float64() - 1), Anchor: anchor}
	if off := r.Float64(); !adopted {
		sk.Offset = time.Duration(off * float64(c.Offset))
	}
	return sk
}

// Base is the bookkeeping a driver embeds. It is safe for concurrent use
// (the emulator's actors report joins concurrently); the deterministic
// driver's single goroutine never contends for its lock.
type Base[E any] struct {
	opts Options
	host Host[E]
	name string // in errors

	mu       sync.Mutex
	eps      []E    // hosted peers by id-1
	hosted   []bool // by id-1: eps holds a peer (a worker's Base has gaps)
	members  members.Set
	joined   []bool     // by id-1: the peer became a member at some point
	nJoined  int        // peers with joined set
	rng      *rand.Rand // StreamBoot
	seq      joinorder.Sequence
	head     E // first peer of the join sequence, started by Start
	headSlot time.Duration
	hasHead  bool
	client   bool
}

// Init sets up the base of the driver called name on host.
func (b *Base[E]) Init(name string, host Host[E], opts Options) {
	b.name, b.host, b.opts = name, host, opts
	b.rng = rand.New(rand.NewPCG(opts.Seed, StreamBoot))
}

// env is a peer's environment: its host's IO, and the base's bootstrap
// and join rules; sk is the peer's own clock, which IO reads.
type env[E any] struct {
	peer.IO
	b  *Base[E]
	sk clock.Skew
}

// PublishCopies passes on the host's answer (peer.PublishCopier).
func (e env[E]) PublishCopies() bool {
	c, ok := e.IO.(peer.PublishCopier)
	return ok && c.PublishCopies()
}

// Batched passes on the host's answer (peer.BatchPublisher).
func (e env[E]) Batched() bool {
	c, ok := e.IO.(peer.BatchPublisher)
	return ok && c.Batched()
}

// PublishBatch passes a batch on to the host (peer.BatchPublisher); it is
// called only when Batched is true.
func (e env[E]) PublishBatch(envs []peer.Envelope) { e.IO.(peer.BatchPublisher).PublishBatch(envs) }

// Bootstrap picks a random current member (the papers' external bootstrap
// mechanism, 003 §4.1).
func (e env[E]) Bootstrap(id core.NodeID) core.NodeID {
	if r := e.b.opts.Remote; r != nil {
		return r.Bootstrap(id)
	}
	return e.b.ContactFor(id, e.sk.Emulated(e.Now()))
}

// Contact picks a random current member (the papers' external bootstrap
// mechanism, 003 §4.1), 0 when there is none; a coordinator answers its
// workers' peers with it.
func (b *Base[E]) Contact() core.NodeID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.members.Pick(b.rng)
}

// ContactFor is Contact for peer id's join attempt at emulated time at
// (a coordinator calls it for its workers' peers): at the retry of the
// peer the join sequence awaits, the next peer starts
// (joinorder.Sequence.Attempt).
func (b *Base[E]) ContactFor(id core.NodeID, at time.Duration) core.NodeID {
	b.mu.Lock()
	c := b.members.Pick(b.rng)
	next, start, ok := b.seq.Attempt(id, at)
	ep := b.endpointLocked(next, ok)
	b.mu.Unlock()
	if ok {
		b.host.StartAt(ep, start)
	}
	return c
}

// endpointLocked is the endpoint of the join sequence's next peer (zero
// when ok is false); call it with b.mu held.
func (b *Base[E]) endpointLocked(next core.NodeID, ok bool) (ep E) {
	if ok {
		ep = b.eps[next-1]
	}
	return ep
}

// Joined makes id a member, unless it departed meanwhile (a late report
// must not bring it back), and starts the next peer of the join sequence.
func (e env[E]) Joined(id core.NodeID) {
	// The join sequence runs on emulated time, not the peer's clock.
	at := e.sk.Emulated(e.Now())
	b := e.b
	if r := b.opts.Remote; r != nil {
		b.mu.Lock()
		departed := b.members.Departed(id)
		if !departed {
			b.members.Add(id)
			b.markJoined(id)
		}
		b.mu.Unlock()
		if !departed {
			r.Joined(id, at)
		}
		return
	}
	b.JoinedAt(id, at)
}

// JoinedAt makes id a member at emulated time at, unless it departed
// meanwhile (a late report must not bring it back), and starts the next
// peer of the join sequence; a coordinator calls it for its workers'
// peers.
func (b *Base[E]) JoinedAt(id core.NodeID, at time.Duration) {
	b.mu.Lock()
	if b.members.Departed(id) {
		b.mu.Unlock()
		return
	}
	b.members.Add(id)
	b.markJoined(id)
	next, at, ok := b.seq.Joined(id, at)
	ep := b.endpointLocked(next, ok)
	b.mu.Unlock()
	if ok {
		b.host.StartAt(ep, at)
	}
}

// Spawn creates peer id (1, 2, 3, … in order) of the initial population at
// point; it joins at its slot or once the previous peer has joined,
// whichever is later (package joinorder).
func (b *Base[E]) Spawn(id core.NodeID, point can.Point, slot time.Duration) error {
	ep, err := b.newPeer(id, point, b.opts.Overlay)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.opts.Remote == nil && b.seq.Add(id, slot) {
		b.head, b.headSlot, b.hasHead = ep, slot, true
	}
	b.mu.Unlock()
	return nil
}

// Join adds peer id (next in order) at point; it starts joining now, not
// in the initial sequence (churn).
func (b *Base[E]) Join(id core.NodeID, point can.Point) error {
	// A churn join retries a lost JOIN after the join timeout, not
	// after overlay.Config.JoinRetry: its JOIN is usually lost to a
	// departed node whose zone is still being taken over, and a retry
	// into the repair makes zone conflicts (measured on
	// examples/churn.yaml: docs/FAULTS.md, joins under loss).
	cfg := b.opts.Overlay
	cfg.JoinRetry = 0
	ep, err := b.newPeer(id, point, cfg)
	if err != nil {
		return err
	}
	b.host.StartNow(ep)
	return nil
}

func (b *Base[E]) newPeer(id core.NodeID, point can.Point, cfg overlay.Config) (E, error) {
	if err := b.inOrder(id); err != nil {
		var zero E
		return zero, err
	}
	sk := b.Skew(id, 0, false)
	io := b.host.IO(id, sk)
	return b.addPeer(peer.New(id, point, cfg, PeerRand(b.opts.Seed, id), env[E]{io, b, sk}, b.opts.Traffic), io, sk)
}

func (b *Base[E]) inOrder(id core.NodeID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opts.Remote != nil && int(id) > len(b.eps) {
		// A worker hosts some of the ids: the others are gaps.
		var zero E
		for len(b.eps) < int(id)-1 {
			b.eps = append(b.eps, zero)
			b.hosted = append(b.hosted, false)
		}
		return nil
	}
	if int(id) != len(b.eps)+1 {
		return fmt.Errorf("%s: peer %d out of order", b.name, id)
	}
	return nil
}

func (b *Base[E]) addPeer(p *peer.Peer, io peer.IO, sk clock.Skew) (E, error) {
	if js := b.opts.Jobs; js != nil {
		if !sk.Zero() && js.Sink != nil {
			// The oracle's job ledger keeps emulated time, not the
			// peer's own clock.
			own := *js
			own.Sink = skewedSink{js.Sink, sk}
			js = &own
		}
		p.EnableJobs(js, JobRand(b.opts.Seed, p.ID()))
	}
	if ws := b.opts.Wave; ws != nil {
		if !sk.Zero() && ws.Sink != nil {
			// The Wave job-history check keeps emulated time too.
			own := *ws
			own.Sink = skewedWaveSink{ws.Sink, sk}
			ws = &own
		}
		p.EnableWave(ws)
	}
	ep, err := b.host.AddPeer(p, io)
	if err != nil {
		return ep, err
	}
	b.mu.Lock()
	b.eps = append(b.eps, ep)
	b.hosted = append(b.hosted, true)
	b.mu.Unlock()
	return ep, nil
}

// Adopt adds the next peer of an overlay built outside this run
// (sim.BuildOverlay), already a member; it starts at emulated time at, the
// handover. Adopt the whole initial population, in id order, before
// anything else is scheduled.
func (b *Base[E]) Adopt(m Member, at time.Duration) error {
	id := m.Node.ID()
	if err := b.inOrder(id); err != nil {
		return err
	}
	sk := b.Skew(id, at, true)
	io := b.host.IO(id, sk)
	ep, err := b.addPeer(peer.NewMember(m.Node, env[E]{io, b, sk}, b.opts.Traffic), io, sk)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.members.Add(id)
	b.markJoined(id)
	b.mu.Unlock()
	b.host.StartMember(ep, m.Timers, at)
	return nil
}

// Start schedules the first peer's join, at its slot.
func (b *Base[E]) Start() {
	b.mu.Lock()
	head, slot, ok := b.head, b.headSlot, b.hasHead
	b.mu.Unlock()
	if ok {
		b.host.StartAt(head, slot)
	}
}

// AddClient creates the run's job client (at peer.ClientAddress); it
// submits through random members (StreamInject).
func (b *Base[E]) AddClient(cfg jobs.ClientConfig) error {
	b.mu.Lock()
	if b.client {
		b.mu.Unlock()
		return fmt.Errorf("%s: one client per run", b.name)
	}
	b.mu.Unlock()
	var sink peer.JobSink
	if b.opts.Jobs != nil {
		sink = b.opts.Jobs.Sink
	}
	inject := b.Injector()
	if r, ok := b.opts.Remote.(RemoteInjector); ok {
		inject = r.Inject // the run's members are the coordinator's
	}
	io := b.host.IO(peer.ClientAddress, clock.Skew{})
	if err := b.host.AddClient(peer.NewClient(cfg, inject, io, sink, b.opts.Traffic), io); err != nil {
		return err
	}
	b.mu.Lock()
	b.client = true
	b.mu.Unlock()
	return nil
}

// Injector draws the member the job client submits through: a random
// current member (StreamInject), 0 when there is none. A coordinator of
// workers answers its client's worker with it (RemoteInjector).
func (b *Base[E]) Injector() jobs.Injector {
	inj := rand.New(rand.NewPCG(b.opts.Seed, StreamInject))
	return func() core.NodeID {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.members.Pick(inj)
	}
}

// RemoteInjector is a Membership that also draws the member the job
// client submits through (the coordinator's Injector): a worker hosting
// the run's client knows only its own peers.
type RemoteInjector interface {
	Inject() core.NodeID
}

// Depart makes a random current member leave (gracefully, or by crashing
// when fail is set) and returns it; 0 when there is no member.
func (b *Base[E]) Depart(fail bool) core.NodeID {
	b.mu.Lock()
	id := b.members.Depart(b.rng)
	if id == 0 {
		b.mu.Unlock()
		return 0
	}
	ep := b.eps[id-1]
	b.mu.Unlock()
	b.host.Halt(id, ep, !fail)
	return id
}

// DepartPicked makes the members pick chooses (from the current members,
// in increasing order; pick must not call the driver) depart at once —
// crash when fail is set, else leave gracefully — and returns those that
// did.
func (b *Base[E]) DepartPicked(pick func(members []core.NodeID) []core.NodeID, fail bool) []core.NodeID {
	b.mu.Lock()
	var out []core.NodeID
	var eps []E
	for _, id := range pick(b.members.IDs()) {
		if b.members.DepartID(id) {
			out = append(out, id)
			eps = append(eps, b.eps[id-1])
		}
	}
	b.mu.Unlock()
	for i, id := range out {
		b.host.Halt(id, eps[i], !fail)
	}
	return out
}

// markJoined counts id among the peers that ever joined; call with mu held.
func (b *Base[E]) markJoined(id core.NodeID) {
	for len(b.joined) < int(id) {
		b.joined = append(b.joined, false)
	}
	if !b.joined[id-1] {
		b.joined[id-1] = true
		b.nJoined++
	}
}

// Started is the number of peers hosted so far: spawned, adopted or
// joined by churn, departed ones included.
func (b *Base[E]) Started() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.eps)
}

// JoinedEver is the number of hosted peers that became members of the
// overlay at some point (adopted ones included), departed ones included.
func (b *Base[E]) JoinedEver() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nJoined
}

// Alive is the number of peers that should be members: spawned (or
// adopted, or joined by churn) and not departed.
func (b *Base[E]) Alive() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.eps) - b.members.Departures()
}

// Member reports whether peer id is a current member of the overlay.
func (b *Base[E]) Member(id core.NodeID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.members.Has(id)
}

// Members is the number of current members.
func (b *Base[E]) Members() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.members.Len()
}

// Peers returns the hosted peers in id order (a copy).
func (b *Base[E]) Peers() []E {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opts.Remote == nil {
		return append([]E(nil), b.eps...)
	}
	var out []E
	for i, e := range b.eps {
		if b.hosted[i] {
			out = append(out, e)
		}
	}
	return out
}

// Endpoint returns hosted peer id; ok is false when the Base does not
// host it.
func (b *Base[E]) Endpoint(id core.NodeID) (e E, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id < 1 || int(id) > len(b.eps) || !b.hosted[id-1] {
		return e, false
	}
	return b.eps[id-1], true
}

// HaltHosted stops hosted peer id, which the coordinator of a split run
// made depart (crashing when fail is set): it is no member here any more,
// and a late join report of it is ignored. It reports whether the Base
// hosts id.
func (b *Base[E]) HaltHosted(id core.NodeID, fail bool) bool {
	b.mu.Lock()
	if id < 1 || int(id) > len(b.eps) || !b.hosted[id-1] {
		b.mu.Unlock()
		return false
	}
	ep := b.eps[id-1]
	b.members.DepartID(id)
	b.mu.Unlock()
	b.host.Halt(id, ep, !fail)
	return true
}

// Observed is peer state s as the oracle must see it: a peer that departed
// by crashing does not know it, and still says it joined.
func (b *Base[E]) Observed(s peer.State) peer.State {
	b.mu.Lock()
	departed := b.members.Departed(s.Snapshot.ID)
	b.mu.Unlock()
	if departed {
		s.Snapshot.Joined = false
	}
	return s
}

// skewedSink hands a skewed peer's job events to the oracle's sink at
// emulated time (the peer reports them at its own clock's).
type skewedSink struct {
	peer.JobSink
	sk clock.Skew
}

func (s skewedSink) JobEvent(at time.Duration, e jobs.Event) {
	s.JobSink.JobEvent(s.sk.Emulated(at), e)
}

// skewedWaveSink hands a skewed peer's Wave events to the job-history
// check at emulated time (the Wave core reports them at its own clock's).
type skewedWaveSink struct {
	peer.WaveSink
	sk clock.Skew
}

func (s skewedWaveSink) WaveEvent(e wave.Event) {
	e.At = s.sk.Emulated(e.At)
	s.WaveSink.WaveEvent(e)
}

// CELoad passes CE loads on (peer.CESink) when the sink follows them.
func (s skewedSink) CELoad(id core.NodeID, loads []hetce.Load) {
	if cs, ok := s.JobSink.(peer.CESink); ok {
		cs.CELoad(id, loads)
	}
}
