package sim

import (
	"context"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/metrics"
)

// DriverOptions configure the deterministic driver.
type DriverOptions struct {
	Seed    uint64
	Overlay overlay.Config
	Traffic *metrics.Traffic
	// Latency is the constant delay of every message (default 0: delivered
	// at the instant it was sent, after everything already due then).
	Latency time.Duration
	// Jobs, if set, gives every peer a job core (runs with a workload).
	Jobs *peer.JobSetup
	// Wave, if set, gives every peer a Wave core (001).
	Wave *peer.WaveSetup
	// EagerDecoding makes every peer decode messages whole
	// (peer.DecodeEagerly): the same run, for tests and benchmarks.
	EagerDecoding bool
	// Clock spreads the peers' own clocks (peers.clock).
	Clock driver.ClockSpread
	// Batched makes the peers publish the messages of each step as one
	// batch (bus.fanout: batched, peer.BatchPublisher): the same run,
	// fewer transport messages (bus.Stats.Transport).
	Batched bool
	// Connections is the bus.connections whose NATS messages batches
	// count as (World.SetConnections); 0 means bus.DefaultConnections.
	Connections int
	// Record, if set, sees every event of the run's world (the
	// determinism check, Recorder).
	Record *Recorder
}

// Driver runs peers in a World. It implements the emulator's driver
// interface: the bookkeeping is driver.Base's, the Driver is its host.
type Driver struct {
	driver.Base[*peer.Peer]
	w      *World
	bus    bus.Bus // the world, or a decorator of it (WrapBus)
	client *peer.Client
	loop   time.Duration // wall time spent in AdvanceTo's event loop
	eager  bool          // DriverOptions.EagerDecoding
	batch  bool          // DriverOptions.Batched
}

// NewDriver returns a deterministic driver for one run.
func NewDriver(opts DriverOptions) *Driver {
	if opts.Traffic == nil {
		opts.Traffic = metrics.NewTraffic()
	}
	w := New(opts.Seed, opts.Latency)
	w.Recycle() // the peers and the job client copy what they keep
	w.SetConnections(opts.Connections)
	w.Record(opts.Record)
	d := &Driver{w: w, bus: w, eager: opts.EagerDecoding, batch: opts.Batched}
	d.Init("sim", (*host)(d), driver.Options{Seed: opts.Seed, Overlay: opts.Overlay, Traffic: opts.Traffic, Jobs: opts.Jobs, Wave: opts.Wave, Clock: opts.Clock})
	return d
}

// Name is "sim".
func (d *Driver) Name() string { return "sim" }

// World exposes the event loop (for tests and fault injection).
func (d *Driver) World() *World { return d.w }

// io is an endpoint's clock, bus and timers: the world's, read through
// the endpoint's own clock sk (peers.clock).
type io struct {
	d  *Driver
	sk clock.Skew
}

func (e io) Now() time.Duration { return e.sk.Local(e.d.w.now) }
func (e io) Publish(to core.NodeID, data []byte) {
	_ = e.d.bus.Publish(bus.Address(to), data)
}

// Batched reports bus.fanout: batched (peer.BatchPublisher).
func (e io) Batched() bool { return e.d.batch }

// PublishBatch hands a step's messages to the bus as one batch.
func (e io) PublishBatch(envs []peer.Envelope) {
	_ = bus.PublishBatch(e.d.bus, toMessages(envs))
}

// toMessages converts a peer's batch to the bus's.
func toMessages(envs []peer.Envelope) []bus.Message {
	msgs := make([]bus.Message, len(envs))
	for i, m := range envs {
		msgs[i] = bus.Message{To: bus.Address(m.To), Data: m.Data}
	}
	return msgs
}

// PublishCopies: the world copies what is published (World.Recycle), and
// the fault layers between copy what they delay or duplicate.
func (e io) PublishCopies() bool { return e.d.w.Copies() }
func (e io) SetTimer(id core.NodeID, kind core.TimerKind, at time.Duration) {
	e.d.w.SetTimer(bus.Address(id), kind, e.sk.Emulated(at))
}

// host is the Driver in its role as driver.Base's host.
type host Driver

var _ driver.Host[*peer.Peer] = (*host)(nil)

// IO implements driver.Host.
func (h *host) IO(_ core.NodeID, sk clock.Skew) peer.IO { return io{(*Driver)(h), sk} }

// AddPeer implements driver.Host: the peer receives from the bus and
// fires its timers on the event loop.
func (h *host) AddPeer(p *peer.Peer, pio peer.IO) (*peer.Peer, error) {
	if h.eager {
		p.DecodeEagerly()
	}
	addr := bus.Address(p.ID())
	if err := h.bus.Register(addr, func(_ bus.Address, data []byte) { p.Deliver(data) }); err != nil {
		return nil, err
	}
	fire := p.Fire
	if sk := pio.(io).sk; !sk.Zero() {
		// The peer is told the local time its timer was set for.
		fire = func(kind core.TimerKind, at time.Duration) { p.Fire(kind, sk.Local(at)) }
	}
	h.w.OnTimer(addr, fire)
	return p, nil
}

// AddClient implements driver.Host.
func (h *host) AddClient(c *peer.Client, _ peer.IO) error {
	addr := bus.Address(peer.ClientAddress)
	if err := h.bus.Register(addr, func(_ bus.Address, data []byte) { c.Deliver(data) }); err != nil {
		return err
	}
	h.w.OnTimer(addr, c.Fire)
	h.client = c
	return nil
}

// StartAt implements driver.Host.
func (h *host) StartAt(p *peer.Peer, at time.Duration) { h.w.At(at, p.Start) }

// StartNow implements driver.Host.
func (h *host) StartNow(p *peer.Peer) { p.Start() }

// StartMember implements driver.Host: the first adopted peer, adopted
// before anything else was scheduled, moves the virtual clock to the
// handover.
func (h *host) StartMember(p *peer.Peer, timers []core.Timer, at time.Duration) {
	if h.w.events == 0 && h.w.queue.Len() == 0 {
		h.w.now = at
	}
	h.w.At(at, func() { p.StartMember(timers) })
}

// Halt implements driver.Host.
func (h *host) Halt(id core.NodeID, p *peer.Peer, graceful bool) {
	if graceful {
		p.Leave()
	}
	h.bus.Unregister(bus.Address(id))
	h.w.OnTimer(bus.Address(id), nil)
}

// Submit hands a job to the client (call it on the event loop, e.g. from At).
func (d *Driver) Submit(spec *wire.JobSpec) { d.client.Submit(spec) }

// At runs fn at emulated time t on the event loop.
func (d *Driver) At(t time.Duration, fn func()) { d.w.At(t, fn) }

// WrapBus puts a decorator (the fault layer) between the peers and the
// world's bus; call it before the first Spawn. The driver is a Scheduler
// for it (Now, At).
func (d *Driver) WrapBus(wrap func(bus.Bus) bus.Bus) { d.bus = wrap(d.bus) }

// TapDeliveries reports every message handed to a peer or the job
// client (a message trace, emulator.MessageTap).
func (d *Driver) TapDeliveries(f func(at time.Duration, to bus.Address, data []byte)) {
	d.w.TapDeliveries(f)
}

// AdvanceTo runs every event up to emulated time t.
func (d *Driver) AdvanceTo(ctx context.Context, t time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	done := d.w.RunUntilDone(t, ctx.Done())
	d.loop += time.Since(start)
	if !done {
		return ctx.Err()
	}
	return nil
}

// LoopStats reports the events the world processed and the wall time
// spent in its event loop (in AdvanceTo) so far.
func (d *Driver) LoopStats() (events uint64, loop time.Duration) { return d.w.Events(), d.loop }

// Now is the current virtual time.
func (d *Driver) Now() time.Duration { return d.w.now }

// Collect copies every peer's state (outside the bus), as the oracle must
// see it (driver.Base.Observed).
func (d *Driver) Collect(ctx context.Context) ([]peer.State, error) {
	peers := d.Peers()
	out := make([]peer.State, len(peers))
	for i, p := range peers {
		out[i] = d.Observed(p.State())
	}
	return out, nil
}

// InFlight counts the messages on the world's bus not yet delivered
// (World.InFlight); after the last AdvanceTo, those in flight at the end.
// Messages the fault layer still delays are not among them (they are not
// on the world's bus yet).
func (d *Driver) InFlight() uint64 { return d.w.InFlight() }

// BusStats reports the in-memory bus counters.
func (d *Driver) BusStats() bus.Stats { return d.bus.Stats() }

// Close ends the run.
func (d *Driver) Close() error { return d.w.Close() }
