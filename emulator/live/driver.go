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
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/emulator/driver"
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
	// Wave, if set, gives every peer a Wave core (001).
	Wave *peer.WaveSetup
	// EagerDecoding makes every peer decode messages whole
	// (peer.DecodeEagerly).
	EagerDecoding bool
	// Clock spreads the peers' own clocks (peers.clock).
	Clock driver.ClockSpread
	// Batched makes the peers publish the messages of each step as one
	// batch (bus.fanout: batched, peer.BatchPublisher): one NATS message
	// per receiving connection instead of one per receiver.
	Batched bool
	// Worker, if set, makes the driver one worker of a run split across
	// processes (emulator/workers): it hosts the peers the coordinator
	// hands it, on the coordinator's clock epoch and member set.
	Worker *WorkerOptions
}

// WorkerOptions are a worker's settings (Options.Worker).
type WorkerOptions struct {
	// Membership is the coordinator's member set (driver.Options.Remote).
	Membership driver.Membership
	// Subscribe says which bus shards hold the worker's peers
	// (bus.NATSOptions.Subscribe).
	Subscribe func(shard int) bool
}

// Driver hosts peers as actors on a NATS bus: the bookkeeping is
// driver.Base's, the Driver is its host.
type Driver struct {
	driver.Base[*actor.PID]
	opts    Options
	clock   *clock.Clock
	timers  *clock.Timers
	system  *actor.ActorSystem
	bus     bus.Bus // the transport, or a decorator of it (WrapBus)
	raw     bus.Bus // the transport itself
	ownBus  bool
	backlog atomic.Int64
	waiting peer.Waiting // backlog by message type
	// delivered, if set, sees every message routed to a mailbox
	// (TapDeliveries; read by the bus's goroutines).
	delivered atomic.Pointer[deliveryTap]

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

	// Until Start the clock has not restarted (a worker's reads emulated
	// time since New, not the coordinator's), so what the bus delivers
	// then is held (held, guarded by heldMu) and handed to the mailboxes
	// as Start ends, after the adopted peers' StartMember. A worker's
	// peers receive messages from the workers that started first:
	// handled before the restart, they were stamped with the wrong
	// emulated time — a neighbor heard "at 3 s" by a peer that starts at
	// the 2m handover looks silent since 3 s, and the first failure check
	// declares it failed. running says Start has released them;
	// heldCount counts them.
	heldMu    sync.Mutex
	held      []heldMsg
	running   atomic.Bool
	heldCount atomic.Int64

	mu       sync.Mutex
	closed   bool
	quiesced []*actor.PID // set by Quiesce
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
	d := &Driver{opts: opts}
	dopts := driver.Options{Seed: opts.Seed, Overlay: opts.Overlay, Traffic: opts.Metrics.Traffic, Jobs: opts.Jobs, Wave: opts.Wave, Clock: opts.Clock}
	var subscribe func(int) bool
	if w := opts.Worker; w != nil {
		dopts.Remote, subscribe = w.Membership, w.Subscribe
	}
	d.Init("live", (*host)(d), dopts)
	d.bus = opts.Bus
	if d.bus == nil {
		run := opts.Run
		if run == "" {
			run = fmt.Sprintf("r%d", time.Now().UnixNano()%1e9)
		}
		nb, err := bus.OpenNATS(bus.NATSOptions{URL: opts.BusURL, Run: run, Connections: opts.Connections, Logger: opts.Logger, Batched: opts.Batched, Subscribe: subscribe})
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
		return metrics.BusStats{Published: s.Published, Dropped: s.Dropped, Unroutable: s.Unroutable, NATSMessages: s.Transport}
	})
	opts.Metrics.SetWaiting(d.waiting.Counts)
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

// env is an endpoint's clock, bus and timers; pid is its actor, set once
// it is spawned.
type env struct {
	d   *Driver
	pid *actor.PID
	sk  clock.Skew // the endpoint's own clock (peers.clock)
}

func (e *env) Now() time.Duration { return e.sk.Local(e.d.clock.Now()) }

func (e *env) Publish(to core.NodeID, data []byte) {
	_ = e.d.bus.Publish(bus.Address(to), data) // errors are counted by the bus
}

// Batched reports bus.fanout: batched (peer.BatchPublisher).
func (e *env) Batched() bool { return e.d.opts.Batched }

// PublishBatch hands a step's messages to the bus as one batch; the bus
// copies them before it returns, as Publish does.
func (e *env) PublishBatch(envs []peer.Envelope) {
	msgs := make([]bus.Message, len(envs))
	for i, m := range envs {
		msgs[i] = bus.Message{To: bus.Address(m.To), Data: m.Data}
	}
	_ = bus.PublishBatch(e.d.bus, msgs) // errors are counted by the bus
}

// PublishCopies tells peers they may reuse what they published: the NATS
// bus and the fault layers copy it (Options.Bus must too).
func (e *env) PublishCopies() bool { return true }

func (e *env) SetTimer(_ core.NodeID, kind core.TimerKind, at time.Duration) {
	root, pid, queued := e.d.system.Root, e.pid, &e.d.timerBacklog
	// The timer fires when the peer's own clock reaches at; the peer is
	// told at, the local time it asked for.
	e.d.timers.At(e.sk.Emulated(at), func(due time.Time) {
		queued.Add(1)
		root.Send(pid, &peer.TimerFired{Kind: kind, At: at, Due: due})
	})
}

// host is the Driver in its role as driver.Base's host.
type host Driver

var _ driver.Host[*actor.PID] = (*host)(nil)

// IO implements driver.Host.
func (h *host) IO(_ core.NodeID, sk clock.Skew) peer.IO { return &env{d: (*Driver)(h), sk: sk} }

// StartAt implements driver.Host.
func (h *host) StartAt(pid *actor.PID, at time.Duration) {
	d := (*Driver)(h)
	root := d.system.Root
	d.timers.At(at, func(time.Time) { root.Send(pid, &peer.StartJoin{}) })
}

// StartNow implements driver.Host.
func (h *host) StartNow(pid *actor.PID) { h.system.Root.Send(pid, &peer.StartJoin{}) }

// StartMember implements driver.Host: Start starts the adopted peers, and
// the emulated clock, at the handover.
func (h *host) StartMember(pid *actor.PID, timers []core.Timer, at time.Duration) {
	d := (*Driver)(h)
	d.mu.Lock()
	d.origin = at
	d.adopted = append(d.adopted, adoptedPeer{pid, timers})
	d.mu.Unlock()
}

type adoptedPeer struct {
	pid    *actor.PID
	timers []core.Timer
}

// AddPeer implements driver.Host: it spawns peer p's actor and routes the
// bus to its mailbox.
func (h *host) AddPeer(p *peer.Peer, io peer.IO) (*actor.PID, error) {
	d := (*Driver)(h)
	if d.opts.EagerDecoding {
		p.DecodeEagerly()
	}
	a := &peer.Actor{Endpoint: p, OnLag: d.observeLag, Backlog: &d.backlog, Waiting: &d.waiting, TimerBacklog: &d.timerBacklog, Frozen: &d.frozen, Discarded: &d.discarded, OnPanic: d.onPanic}
	pid := d.spawn(a, io)
	return pid, d.route(bus.Address(p.ID()), pid)
}

// AddClient implements driver.Host: the client is an actor on the bus.
func (h *host) AddClient(c *peer.Client, io peer.IO) error {
	d := (*Driver)(h)
	a := &peer.Actor{Endpoint: c, Backlog: &d.backlog, Waiting: &d.waiting, TimerBacklog: &d.timerBacklog, Frozen: &d.frozen, Discarded: &d.discarded, OnPanic: d.onPanic}
	pid := d.spawn(a, io)
	if err := d.route(bus.Address(peer.ClientAddress), pid); err != nil {
		return err
	}
	d.mu.Lock()
	d.client = pid
	d.mu.Unlock()
	return nil
}

// Halt implements driver.Host: messages to departed peer id become
// unroutable, and a graceful one sends its LEAVE first.
func (h *host) Halt(id core.NodeID, pid *actor.PID, graceful bool) {
	d := (*Driver)(h)
	d.bus.Unregister(bus.Address(id))
	d.system.Root.Send(pid, &peer.Halt{Graceful: graceful})
}

// spawn starts actor a for the endpoint whose environment is io.
func (d *Driver) spawn(a *peer.Actor, io peer.IO) *actor.PID {
	pid := d.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return runtimeActor{a} }))
	io.(*env).pid = pid
	return pid
}

// runtimeActor is the seam between gridbed's actors and the actor runtime:
// protoactor-go's mailbox and dispatcher run the actor, which sees only
// the messages (peer.Actor.Handle). Only this driver imports the runtime
// (with the raw ceiling of emulator/bench, which measures it alone).
type runtimeActor struct{ a *peer.Actor }

// Receive implements actor.Actor.
func (r runtimeActor) Receive(ctx actor.Context) { r.a.Handle(ctx.Message()) }

// route hands what the bus delivers to addr to pid's mailbox; before
// Start it holds it (hold).
func (d *Driver) route(addr bus.Address, pid *actor.PID) error {
	root := d.system.Root
	return d.bus.Register(addr, func(_ bus.Address, data []byte) {
		if f := d.delivered.Load(); f != nil {
			(*f)(d.clock.Now(), addr, data)
		}
		t, _ := wire.PeekType(data)
		d.backlog.Add(1)
		d.waiting.Add(t, 1)
		m := &peer.Inbound{Data: data, Type: t}
		if !d.running.Load() && d.hold(pid, m) {
			return
		}
		root.Send(pid, m)
	})
}

// heldMsg is a bus message that arrived before Start, for actor pid.
type heldMsg struct {
	pid *actor.PID
	m   *peer.Inbound
}

// hold keeps a message that arrived before Start for release; false once
// Start has released the held ones (the message goes to the mailbox at
// once, after them).
func (d *Driver) hold(pid *actor.PID, m *peer.Inbound) bool {
	d.heldMu.Lock()
	defer d.heldMu.Unlock()
	if d.running.Load() {
		return false
	}
	d.held = append(d.held, heldMsg{pid, m})
	return true
}

// release hands the messages held before Start to their mailboxes, in
// the order they arrived, and lets later ones through; it reports how
// many it held.
func (d *Driver) release() int {
	d.heldMu.Lock()
	defer d.heldMu.Unlock()
	n := len(d.held)
	for _, h := range d.held {
		d.system.Root.Send(h.pid, h.m)
	}
	d.held = nil
	d.running.Store(true)
	return n
}

// Held is how many bus messages arrived before Start and waited for it
// (release): in a run split across processes, those the peers of the
// workers that started first sent to this worker's peers.
func (d *Driver) Held() int64 { return d.heldCount.Load() }

// Submit hands a job to the client actor.
func (d *Driver) Submit(spec *wire.JobSpec) {
	d.mu.Lock()
	pid := d.client
	d.mu.Unlock()
	if pid != nil {
		d.system.Root.Send(pid, &peer.SubmitJob{Spec: spec})
	}
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

// WrapBus puts a decorator (the fault layer) between the peers and the
// bus; call it before the first Spawn. The driver is a Scheduler for it
// (Now, At: delayed messages are published from the timer goroutine).
func (d *Driver) WrapBus(wrap func(bus.Bus) bus.Bus) { d.bus = wrap(d.bus) }

// TapDeliveries reports every message the bus hands to a peer's or the
// job client's mailbox, at the emulated time it arrives (a message trace,
// emulator.MessageTap); nil stops it.
func (d *Driver) TapDeliveries(f func(at time.Duration, to bus.Address, data []byte)) {
	if f == nil {
		d.delivered.Store(nil)
		return
	}
	t := deliveryTap(f)
	d.delivered.Store(&t)
}

// deliveryTap is what TapDeliveries is given.
type deliveryTap func(at time.Duration, to bus.Address, data []byte)

// Bus is the transport under any decorator: the NATS bus when the driver
// opened it (for bus faults), else what Options.Bus was.
func (d *Driver) Bus() bus.Bus { return d.raw }

// Start restarts the emulated clock at 0 now — spawning thousands of actors
// takes wall time that must not eat into the scenario — and schedules the
// first peer's join; with adopted peers (an overlay built outside the bus)
// the clock restarts at the handover time instead, and they start.
func (d *Driver) Start() { d.StartFrom(time.Now()) }

// StartFrom is Start with the emulated origin at wall instant epoch: the
// workers of a run split across processes share the coordinator's. The
// bus messages that arrived before it (sent by the peers of workers that
// started first) reach their peers now, after the adopted peers' start,
// and are handled on the restarted clock.
func (d *Driver) StartFrom(epoch time.Time) {
	d.clock.RestartFrom(epoch, d.origin)
	d.mu.Lock()
	adopted := d.adopted
	d.adopted = nil
	d.mu.Unlock()
	for _, a := range adopted {
		d.system.Root.Send(a.pid, &peer.StartMember{Timers: a.timers})
	}
	d.heldCount.Add(int64(d.release()))
	d.Base.Start()
	d.mu.Lock()
	early := d.early
	d.early, d.started = nil, true
	d.mu.Unlock()
	for _, e := range early {
		fn := e.fn
		d.timers.At(e.at, func(time.Time) { fn() })
	}
}

// StartPeerAt makes hosted peer id begin joining at emulated time at (a
// worker, told by its coordinator); false when it is not hosted here.
func (d *Driver) StartPeerAt(id core.NodeID, at time.Duration) bool {
	pid, ok := d.Endpoint(id)
	if ok {
		(*host)(d).StartAt(pid, at)
	}
	return ok
}

// StartPeerNow makes hosted peer id begin joining at once (a worker, told
// by its coordinator); false when it is not hosted here.
func (d *Driver) StartPeerNow(id core.NodeID) bool {
	pid, ok := d.Endpoint(id)
	if ok {
		(*host)(d).StartNow(pid)
	}
	return ok
}

// AdvanceTo waits until the scaled clock reaches emulated time t.
func (d *Driver) AdvanceTo(ctx context.Context, t time.Duration) error {
	return d.clock.Await(ctx, t)
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
	pids := d.Peers()
	reply := make(chan peer.State, len(pids))
	for _, pid := range pids {
		d.system.Root.Send(pid, &peer.CollectState{Reply: reply})
	}
	out := make([]peer.State, 0, len(pids))
	for len(out) < len(pids) {
		select {
		case s := <-reply:
			out = append(out, d.Observed(s))
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
	pids, err := d.Quiesce()
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

// Quiesce is the first half of Close: timers stop, bus deliveries to the
// peers stop and every actor halts, so that nothing more is published.
// The workers of a run split across processes all quiesce before any
// closes its bus: a message one publishes to another's peer then still
// arrives, and is counted, at the end. It returns the actors (peers and
// client); it does its work once.
func (d *Driver) Quiesce() ([]*actor.PID, error) {
	d.mu.Lock()
	if d.quiesced != nil {
		pids := d.quiesced
		d.mu.Unlock()
		return pids, nil
	}
	d.mu.Unlock()
	d.markEnd()
	pids := d.Peers()
	d.mu.Lock()
	if d.client != nil {
		d.bus.Unregister(bus.Address(peer.ClientAddress))
		pids = append(slices.Clip(pids), d.client)
	}
	d.mu.Unlock()
	d.timers.Stop()
	for _, id := range d.hostedIDs() {
		d.bus.Unregister(bus.Address(id))
	}
	err := d.haltAll(pids)
	d.mu.Lock()
	d.quiesced = append(pids, nil)[:len(pids)] // non-nil even without actors
	d.mu.Unlock()
	return pids, err
}

// hostedIDs are the ids of the peers the driver hosts, in order.
func (d *Driver) hostedIDs() []core.NodeID {
	var ids []core.NodeID
	for id := core.NodeID(1); int(id) <= d.Started(); id++ {
		if _, ok := d.Endpoint(id); ok {
			ids = append(ids, id)
		}
	}
	return ids
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
