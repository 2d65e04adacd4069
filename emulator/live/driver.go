// Package live is the emulator driver: every peer is a protoactor-go actor,
// peers exchange real asynchronous messages over NATS (an embedded server by
// default, or an external URL), and protocol timers fire at scaled wall
// time. It runs exactly the peer code the deterministic driver runs
// (actors/peer).
package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/emulator/joinorder"
	"github.com/gridbed/gridbed/emulator/members"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/metrics"
)

// Options configure the emulator driver.
type Options struct {
	Seed      uint64
	TimeScale float64
	Overlay   overlay.Config
	Metrics   *metrics.Run
	// Bus is the transport. Nil opens an embedded NATS server with BusURL
	// and Connections. Its Publish must be done with data when it returns
	// (as bus.NATSBus and the faults layers are): peers reuse their
	// encoding buffers (peer.PublishCopier).
	Bus         bus.Bus
	BusURL      string
	Connections int
	Run         string // run id in NATS subjects
	Logger      *slog.Logger
	// Jobs, if set, gives every peer a job core (runs with a workload).
	Jobs *peer.JobSetup
	// EagerDecoding makes every peer decode messages whole
	// (peer.DecodeEagerly).
	EagerDecoding bool
}

// Driver hosts peers as actors on a NATS bus.
type Driver struct {
	opts    Options
	clock   *clock.Clock
	timers  *clock.Timers
	system  *actor.ActorSystem
	bus     bus.Bus // the transport, or a decorator of it (WrapBus)
	raw     bus.Bus // the transport itself
	ownBus  bool
	backlog atomic.Int64

	// What the overload guard reads (pressure.go): timer lags of the
	// current window, expired timers waiting in mailboxes, and whether
	// the run was frozen for an abort.
	lagWin       lagBuckets
	timerBacklog atomic.Int64
	frozen       atomic.Bool

	// Panics counts messages whose handling panicked in a peer or the
	// client (peer.Actor.OnPanic); logger reports the first few.
	panics atomic.Int64
	logger *slog.Logger

	// discarded counts bus messages that reached the mailbox of a peer
	// (or the client) that had stopped; endMark holds it and the bus's
	// unroutable count when the run ended (Close or Freeze began), to tell
	// messages stranded by the end of the run from those lost to crashes
	// and leaves during it (Settlement).
	discarded atomic.Int64
	endOnce   sync.Once
	endMark   struct { // guarded by mu
		set        bool
		unroutable uint64
		discarded  int64
	}

	mu       sync.Mutex
	pids     []*actor.PID // by peer index (id-1)
	members  members.Set
	rng      *rand.Rand
	seq      joinorder.Sequence
	head     *actor.PID // first peer of the join sequence, started by Start
	headSlot time.Duration
	closed   bool
	client   *actor.PID
	started  bool         // Start was called
	early    []earlyTimer // At calls made before Start
	// adopted are the peers of an overlay built outside the bus, started
	// by Start at origin, the emulated time of the handover.
	adopted []adoptedPeer
	origin  time.Duration
}

// New starts the clock (emulated time 0 is now), the actor system and the bus.
func New(opts Options) (*Driver, error) {
	if opts.TimeScale <= 0 {
		return nil, errors.New("live: time scale must be positive")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Metrics == nil {
		return nil, errors.New("live: metrics are required")
	}
	d := &Driver{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x626f6f74))}
	d.bus = opts.Bus
	if d.bus == nil {
		run := opts.Run
		if run == "" {
			run = fmt.Sprintf("r%d", time.Now().UnixNano()%1e9)
		}
		nb, err := bus.OpenNATS(bus.NATSOptions{URL: opts.BusURL, Run: run, Connections: opts.Connections, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("open NATS bus: %w", err)
		}
		d.bus, d.ownBus = nb, true
	}
	d.raw = d.bus
	logger := opts.Logger
	d.logger = logger
	d.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	opts.Metrics.SetBus(func() metrics.BusStats {
		s := d.raw.Stats()
		return metrics.BusStats{Published: s.Published, Dropped: s.Dropped, Unroutable: s.Unroutable}
	})
	d.clock = clock.New(opts.TimeScale)
	d.timers = clock.NewTimers(d.clock)
	return d, nil
}

// observeLag records how late a peer handled a timer: in the run's
// metrics and in the overload guard's window.
func (d *Driver) observeLag(seconds float64) {
	d.opts.Metrics.ObserveLag(seconds)
	d.lagWin.observe(seconds)
}

// Name is "emulator".
func (d *Driver) Name() string { return "emulator" }

// Backlog is the number of bus messages waiting in actor mailboxes.
func (d *Driver) Backlog() int64 { return d.backlog.Load() }

type env struct {
	d   *Driver
	pid *actor.PID
}

func (e *env) Now() time.Duration { return e.d.clock.Now() }

func (e *env) Publish(to overlay.NodeID, data []byte) {
	_ = e.d.bus.Publish(bus.Address(to), data) // errors are counted by the bus
}

// PublishCopies tells peers they may reuse what they published: the NATS
// bus and the fault layers copy it (Options.Bus must too).
func (e *env) PublishCopies() bool { return true }

func (e *env) SetTimer(_ overlay.NodeID, kind overlay.TimerKind, at time.Duration) {
	root, pid, queued := e.d.system.Root, e.pid, &e.d.timerBacklog
	e.d.timers.At(at, func(due time.Time) {
		queued.Add(1)
		root.Send(pid, &peer.TimerFired{Kind: kind, At: at, Due: due})
	})
}

func (e *env) Bootstrap(id overlay.NodeID) overlay.NodeID {
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	return e.d.members.Pick(e.d.rng)
}

func (e *env) Joined(id overlay.NodeID) {
	d := e.d
	d.mu.Lock()
	if d.members.Departed(id) {
		d.mu.Unlock()
		return
	}
	d.members.Add(id)
	next, at, ok := d.seq.Joined(id, d.clock.Now())
	var pid *actor.PID
	if ok {
		pid = d.pids[next-1]
	}
	d.mu.Unlock()
	if ok {
		d.startAt(pid, at)
	}
}

func (d *Driver) startAt(pid *actor.PID, at time.Duration) {
	root := d.system.Root
	d.timers.At(at, func(time.Time) { root.Send(pid, &peer.StartJoin{}) })
}

// Spawn creates peer id (1, 2, 3, … in order) of the initial population at
// point, as an actor; it joins at its slot or once the previous peer has
// joined, whichever is later (package joinorder).
func (d *Driver) Spawn(id overlay.NodeID, point can.Point, slot time.Duration) error {
	pid, head, err := d.newPeer(id, point, slot, true)
	if err == nil && head {
		d.head, d.headSlot = pid, slot
	}
	return err
}

// newPeer creates peer id's actor and registers it on the bus; in the
// initial sequence it reports whether it is the sequence's head.
func (d *Driver) newPeer(id overlay.NodeID, point can.Point, slot time.Duration, initial bool) (*actor.PID, bool, error) {
	e := &env{d: d}
	return d.addPeer(e, peer.New(id, point, d.opts.Overlay, sim.PeerRand(d.opts.Seed, id), e, d.opts.Metrics.Traffic), slot, initial)
}

// Adopt adds the next peer of an overlay built outside the bus
// (sim.BuildOverlay), already a member. Start starts it, and the emulated
// clock, at at, the handover. Adopt the whole initial population, in id
// order, before Start.
func (d *Driver) Adopt(m sim.Member, at time.Duration) error {
	e := &env{d: d}
	pid, _, err := d.addPeer(e, peer.NewMember(m.Node, e, d.opts.Metrics.Traffic), 0, false)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.members.Add(m.Node.ID())
	d.origin = at
	d.adopted = append(d.adopted, adoptedPeer{pid, m.Timers})
	d.mu.Unlock()
	return nil
}

type adoptedPeer struct {
	pid    *actor.PID
	timers []overlay.Timer
}

func (d *Driver) addPeer(e *env, p *peer.Peer, slot time.Duration, initial bool) (*actor.PID, bool, error) {
	id := p.ID()
	if d.opts.Jobs != nil {
		p.EnableJobs(d.opts.Jobs, sim.JobRand(d.opts.Seed, id))
	}
	if d.opts.EagerDecoding {
		p.DecodeEagerly()
	}
	a := &peer.Actor{Peer: p, OnLag: d.observeLag, Backlog: &d.backlog, TimerBacklog: &d.timerBacklog, Frozen: &d.frozen, Discarded: &d.discarded, OnPanic: d.onPanic}
	pid := d.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	e.pid = pid
	d.mu.Lock()
	if int(id) != len(d.pids)+1 {
		d.mu.Unlock()
		return nil, false, fmt.Errorf("live: peer %d out of order", id)
	}
	d.pids = append(d.pids, pid)
	head := initial && d.seq.Add(id, slot)
	d.mu.Unlock()
	root := d.system.Root
	if err := d.bus.Register(bus.Address(id), func(_ bus.Address, data []byte) {
		d.backlog.Add(1)
		root.Send(pid, &peer.Inbound{Data: data})
	}); err != nil {
		return nil, false, err
	}
	return pid, head, nil
}

// AddClient spawns the run's job client (at peer.ClientAddress) as an
// actor on the bus; it submits through random members.
func (d *Driver) AddClient(cfg jobs.ClientConfig) error {
	d.mu.Lock()
	if d.client != nil {
		d.mu.Unlock()
		return errors.New("live: one client per run")
	}
	d.mu.Unlock()
	var sink peer.JobSink
	if d.opts.Jobs != nil {
		sink = d.opts.Jobs.Sink
	}
	e := &env{d: d}
	// The injector has a stream of its own (see the simulator's).
	inj := rand.New(rand.NewPCG(d.opts.Seed, 0x696e6a)) // "inj"
	inject := func() overlay.NodeID {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.members.Pick(inj)
	}
	a := &peer.ClientActor{Client: peer.NewClient(cfg, inject, e, sink, d.opts.Metrics.Traffic), Backlog: &d.backlog, TimerBacklog: &d.timerBacklog, Frozen: &d.frozen, Discarded: &d.discarded, OnPanic: d.onPanic}
	pid := d.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	e.pid = pid
	root := d.system.Root
	if err := d.bus.Register(bus.Address(peer.ClientAddress), func(_ bus.Address, data []byte) {
		d.backlog.Add(1)
		root.Send(pid, &peer.Inbound{Data: data})
	}); err != nil {
		return err
	}
	d.mu.Lock()
	d.client = pid
	d.mu.Unlock()
	return nil
}

// Submit hands a job to the client actor.
func (d *Driver) Submit(spec *wire.JobSpec) {
	d.mu.Lock()
	pid := d.client
	d.mu.Unlock()
	if pid != nil {
		d.system.Root.Send(pid, &peer.SubmitJob{Spec: spec})
	}
}

// Alive is the number of peers that should be members: spawned (or
// adopted, or joined by churn) and not departed.
func (d *Driver) Alive() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pids) - d.members.Departures()
}

// Member reports whether peer id is a current member of the overlay.
func (d *Driver) Member(id overlay.NodeID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.members.Has(id)
}

// At runs fn at emulated time t on the timer goroutine (it must not block).
// Calls made before Start are held until Start has restarted the clock:
// the timer service turns emulated times into wall instants when they are
// scheduled, and the clock's origin moves at Start.
func (d *Driver) At(t time.Duration, fn func()) {
	d.mu.Lock()
	if !d.started {
		d.early = append(d.early, earlyTimer{t, fn})
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.timers.At(t, func(time.Time) { fn() })
}

type earlyTimer struct {
	at time.Duration
	fn func()
}

// Join adds peer id (next in order) at point; it starts joining now, not in
// the initial sequence (churn).
func (d *Driver) Join(id overlay.NodeID, point can.Point) error {
	pid, _, err := d.newPeer(id, point, 0, false)
	if err != nil {
		return err
	}
	d.system.Root.Send(pid, &peer.StartJoin{})
	return nil
}

// Depart makes a random current member leave (gracefully, or by crashing
// when fail is set) and returns it; 0 when there is no member. Messages
// still arriving for it count as unroutable.
func (d *Driver) Depart(fail bool) overlay.NodeID {
	d.mu.Lock()
	id := d.members.Depart(d.rng)
	if id == 0 {
		d.mu.Unlock()
		return 0
	}
	pid := d.pids[id-1]
	d.mu.Unlock()
	d.halt(id, pid, fail)
	return id
}

// DepartPicked makes the members pick chooses (from the current members,
// in increasing order) depart at once — crash when fail is set, else leave
// gracefully — and returns those that did.
func (d *Driver) DepartPicked(pick func(members []overlay.NodeID) []overlay.NodeID, fail bool) []overlay.NodeID {
	d.mu.Lock()
	var out []overlay.NodeID
	var pids []*actor.PID
	for _, id := range pick(d.members.IDs()) {
		if d.members.DepartID(id) {
			out = append(out, id)
			pids = append(pids, d.pids[id-1])
		}
	}
	d.mu.Unlock()
	for i, id := range out {
		d.halt(id, pids[i], fail)
	}
	return out
}

// halt stops departed peer id: messages to it become unroutable, and a
// graceful one sends its LEAVE first.
func (d *Driver) halt(id overlay.NodeID, pid *actor.PID, fail bool) {
	d.bus.Unregister(bus.Address(id))
	d.system.Root.Send(pid, &peer.Halt{Graceful: !fail})
}

// WrapBus puts a decorator (the fault layer) between the peers and the
// bus; call it before the first Spawn. The driver is a Scheduler for it
// (Now, At: delayed messages are published from the timer goroutine).
func (d *Driver) WrapBus(wrap func(bus.Bus) bus.Bus) { d.bus = wrap(d.bus) }

// Bus is the transport under any decorator: the NATS bus when the driver
// opened it (for bus faults), else what Options.Bus was.
func (d *Driver) Bus() bus.Bus { return d.raw }

// Start restarts the emulated clock at 0 now — spawning thousands of actors
// takes wall time that must not eat into the scenario — and schedules the
// first peer's join; with adopted peers (an overlay built outside the bus)
// the clock restarts at the handover time instead, and they start.
func (d *Driver) Start() {
	d.clock.RestartAt(d.origin)
	for _, a := range d.adopted {
		d.system.Root.Send(a.pid, &peer.StartMember{Timers: a.timers})
	}
	d.adopted = nil
	if d.head != nil {
		d.startAt(d.head, d.headSlot)
	}
	d.mu.Lock()
	early := d.early
	d.early, d.started = nil, true
	d.mu.Unlock()
	for _, e := range early {
		fn := e.fn
		d.timers.At(e.at, func(time.Time) { fn() })
	}
}

// AdvanceTo waits until the scaled clock reaches emulated time t.
func (d *Driver) AdvanceTo(ctx context.Context, t time.Duration) error {
	wait := time.Until(d.clock.WallAt(t))
	if wait <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Now is the current emulated time.
func (d *Driver) Now() time.Duration { return d.clock.Now() }

// Collect asks every actor for a copy of its state through its mailbox
// (never over the bus) and waits for all answers, or until ctx ends: the
// caller bounds the wait (peers far behind their mailboxes answer late).
func (d *Driver) Collect(ctx context.Context) ([]peer.State, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("live: the oracle asked no peer: its context had ended at emulated %v: %w", d.clock.Now().Round(time.Second), err)
	}
	d.mu.Lock()
	pids := append([]*actor.PID(nil), d.pids...)
	d.mu.Unlock()
	reply := make(chan peer.State, len(pids))
	for _, pid := range pids {
		d.system.Root.Send(pid, &peer.CollectState{Reply: reply})
	}
	out := make([]peer.State, 0, len(pids))
	for len(out) < len(pids) {
		select {
		case s := <-reply:
			d.mu.Lock()
			if d.members.Departed(s.Snapshot.ID) {
				s.Snapshot.Joined = false // a crashed peer does not know it
			}
			d.mu.Unlock()
			out = append(out, s)
		case <-ctx.Done():
			return out, fmt.Errorf("live: only %d of %d peers had answered the oracle at emulated %v when its wait ended: %w",
				len(out), len(pids), d.clock.Now().Round(time.Second), ctx.Err())
		}
	}
	return out, nil
}

// onPanic counts a panic in a peer or the client and logs the first three
// with their stacks: a protocol bug, which the run's invariants report.
func (d *Driver) onPanic(v any, stack []byte) {
	if n := d.panics.Add(1); n <= 3 && d.logger != nil {
		d.logger.Error("a peer panicked handling a message; it goes on with the next one", "panic", fmt.Sprint(v), "stack", string(stack))
	}
}

// Panics is the number of messages whose handling panicked in an actor.
func (d *Driver) Panics() int64 { return d.panics.Load() }

// BusStats reports the bus counters.
func (d *Driver) BusStats() bus.Stats { return d.raw.Stats() }

// Close ends the run in an order that loses no accounting: timers stop
// (messages the fault layer still delays stay in its pending count),
// bus deliveries to peers stop (later arrivals count as unroutable), every
// actor halts (so nothing more is published), the bus is flushed and
// closed (what its subscriptions still hold is counted as discarded), and
// a last round trip through every mailbox makes sure each message the bus
// handed to an actor has been received. Bus statistics and Settlement
// stay readable afterwards.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.markEnd()
	d.mu.Lock()
	pids := d.pids
	peers := len(d.pids)
	if d.client != nil {
		d.bus.Unregister(bus.Address(peer.ClientAddress))
		pids = append(slices.Clip(pids), d.client)
	}
	d.mu.Unlock()
	d.timers.Stop()
	for i := range peers {
		d.bus.Unregister(bus.Address(i + 1))
	}
	err := d.haltAll(pids)
	if d.ownBus {
		if cerr := d.raw.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		// No bus handler runs any more: a Halt sent now is behind every
		// message the bus handed to a mailbox, so once all have answered
		// the (halted) actors have received, and counted, each of them.
		err = d.haltAll(pids)
	}
	d.system.Shutdown()
	return err
}

// haltAll sends Halt to every actor and waits (at most a minute) until all
// have answered.
func (d *Driver) haltAll(pids []*actor.PID) error {
	done := make(chan struct{}, len(pids))
	for _, pid := range pids {
		d.system.Root.Send(pid, &peer.Halt{Done: done})
	}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for range pids {
		select {
		case <-done:
		case <-deadline.C:
			return errors.New("live: peers did not halt within a minute")
		}
	}
	return nil
}

// markEnd notes, once, where the run ended for the message accounting:
// the bus's unroutable count and the messages stopped peers had discarded
// when Close (or Freeze) began.
func (d *Driver) markEnd() {
	d.endOnce.Do(func() {
		unroutable, discarded := d.raw.Stats().Unroutable, d.discarded.Load()
		d.mu.Lock()
		d.endMark.unroutable, d.endMark.discarded, d.endMark.set = unroutable, discarded, true
		d.mu.Unlock()
	})
}

// Settlement is where the bus messages that reached no running peer went,
// as the emulator driver sees them (the run's message accounting,
// emulator/accounting.go). The end of the run is when Close or Freeze
// began; before it, nothing is "at the end".
type Settlement struct {
	// UnroutableInRun are the bus's unroutable messages until the end:
	// addressed to a peer that had crashed or left (or to no peer).
	// UnroutableAtEnd arrived afterwards, for peers the end unregistered.
	UnroutableInRun, UnroutableAtEnd uint64
	// DiscardedInRun are messages that reached the mailbox of a peer that
	// had crashed or left, which ignored them, before the end;
	// DiscardedAtEnd those that reached a peer the end had halted (or
	// frozen) before it could handle them.
	DiscardedInRun, DiscardedAtEnd uint64
	// Mailbox are messages handed to a mailbox and never received by the
	// actor (0 after a Close in which every peer halted).
	Mailbox uint64
}

// Settlement reports where the messages that reached no running peer
// went; read it after Close.
func (d *Driver) Settlement() Settlement {
	unroutable, discarded := d.raw.Stats().Unroutable, d.discarded.Load()
	d.mu.Lock()
	end := d.endMark
	d.mu.Unlock()
	var s Settlement
	if end.set {
		s.UnroutableInRun, s.UnroutableAtEnd = end.unroutable, unroutable-end.unroutable
		s.DiscardedInRun, s.DiscardedAtEnd = uint64(end.discarded), uint64(discarded-end.discarded)
	} else {
		s.UnroutableInRun, s.DiscardedInRun = unroutable, uint64(discarded)
	}
	s.Mailbox = uint64(max(d.backlog.Load(), 0))
	return s
}
