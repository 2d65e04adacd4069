package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/joinorder"
	"github.com/gridbed/gridbed/emulator/members"
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
	// EagerDecoding makes every peer decode messages whole
	// (peer.DecodeEagerly): the same run, for tests and benchmarks.
	EagerDecoding bool
}

// Driver runs peers in a World. It implements the emulator's driver
// interface.
type Driver struct {
	w        *World
	bus      bus.Bus // the world, or a decorator of it (WrapBus)
	opts     DriverOptions
	peers    []*peer.Peer
	members  members.Set
	rng      *rand.Rand
	seq      joinorder.Sequence
	head     *peer.Peer // first peer of the join sequence, started by Start
	headSlot time.Duration
	client   *peer.Client
	loop     time.Duration // wall time spent in AdvanceTo's event loop
}

// NewDriver returns a deterministic driver for one run.
func NewDriver(opts DriverOptions) *Driver {
	if opts.Traffic == nil {
		opts.Traffic = metrics.NewTraffic()
	}
	w := New(opts.Seed, opts.Latency)
	w.Recycle() // the peers and the job client copy what they keep
	return &Driver{
		w:    w,
		bus:  w,
		opts: opts,
		rng:  rand.New(rand.NewPCG(opts.Seed, 0x626f6f74)), // "boot"
	}
}

// Name is "sim".
func (d *Driver) Name() string { return "sim" }

// World exposes the event loop (for tests and fault injection).
func (d *Driver) World() *World { return d.w }

// JobRand is the random source of peer id's job core (CAN-P's stops), a
// stream apart from its overlay's so that adding jobs to a run does not
// change the overlay's own draws.
func JobRand(seed uint64, id overlay.NodeID) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x6a6f62, uint64(id)))
}

// PeerRand is the random source of peer id in a run with the given seed;
// both drivers use it so a peer makes the same choices under either.
func PeerRand(seed uint64, id overlay.NodeID) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(id)))
}

type env struct {
	d  *Driver
	id overlay.NodeID
}

func (e env) Now() time.Duration { return e.d.w.now }
func (e env) Publish(to overlay.NodeID, data []byte) {
	_ = e.d.bus.Publish(bus.Address(to), data)
}

// PublishCopies: the world copies what is published (World.Recycle), and
// the fault layers between copy what they delay or duplicate.
func (e env) PublishCopies() bool { return e.d.w.Copies() }
func (e env) SetTimer(id overlay.NodeID, kind overlay.TimerKind, at time.Duration) {
	e.d.w.SetTimer(bus.Address(id), kind, at)
}
func (e env) Bootstrap(id overlay.NodeID) overlay.NodeID { return e.d.members.Pick(e.d.rng) }
func (e env) Joined(id overlay.NodeID) {
	if e.d.members.Departed(id) {
		return
	}
	e.d.members.Add(id)
	if next, at, ok := e.d.seq.Joined(id, e.d.w.now); ok {
		e.d.w.At(at, e.d.peers[next-1].Start)
	}
}

// Spawn creates peer id (1, 2, 3, … in order) of the initial population at
// point; it joins at its slot or once the previous peer has joined,
// whichever is later (package joinorder).
func (d *Driver) Spawn(id overlay.NodeID, point can.Point, slot time.Duration) error {
	p, err := d.newPeer(id, point)
	if err != nil {
		return err
	}
	if d.seq.Add(id, slot) {
		d.head, d.headSlot = p, slot
	}
	return nil
}

func (d *Driver) newPeer(id overlay.NodeID, point can.Point) (*peer.Peer, error) {
	if int(id) != len(d.peers)+1 {
		return nil, fmt.Errorf("sim: peer %d out of order", id)
	}
	return d.addPeer(peer.New(id, point, d.opts.Overlay, PeerRand(d.opts.Seed, id), env{d, id}, d.opts.Traffic))
}

// Adopt adds the next peer of an overlay built outside this run
// (BuildOverlay), already a member; it starts at emulated time at, the
// handover, where the run's virtual clock begins. Adopt the whole initial
// population, in id order, before anything else is scheduled.
func (d *Driver) Adopt(m Member, at time.Duration) error {
	id := m.Node.ID()
	if int(id) != len(d.peers)+1 {
		return fmt.Errorf("sim: peer %d out of order", id)
	}
	if len(d.peers) == 0 && len(d.w.queue) == 0 {
		d.w.now = at
	}
	p, err := d.addPeer(peer.NewMember(m.Node, env{d, id}, d.opts.Traffic))
	if err != nil {
		return err
	}
	d.members.Add(id)
	timers := m.Timers
	d.w.At(at, func() { p.StartMember(timers) })
	return nil
}

func (d *Driver) addPeer(p *peer.Peer) (*peer.Peer, error) {
	id := p.ID()
	if d.opts.Jobs != nil {
		p.EnableJobs(d.opts.Jobs, JobRand(d.opts.Seed, id))
	}
	if d.opts.EagerDecoding {
		p.DecodeEagerly()
	}
	d.peers = append(d.peers, p)
	addr := bus.Address(id)
	if err := d.bus.Register(addr, func(_ bus.Address, data []byte) { p.Deliver(data) }); err != nil {
		return nil, err
	}
	d.w.OnTimer(addr, p.Fire)
	return p, nil
}

// AddClient creates the run's job client (at peer.ClientAddress); it
// submits through random members.
func (d *Driver) AddClient(cfg jobs.ClientConfig) error {
	if d.client != nil {
		return fmt.Errorf("sim: one client per run")
	}
	var sink peer.JobSink
	if d.opts.Jobs != nil {
		sink = d.opts.Jobs.Sink
	}
	// The injector has a stream of its own: turning on a workload or
	// changing the scheme must not change which peers churn removes.
	inj := rand.New(rand.NewPCG(d.opts.Seed, 0x696e6a)) // "inj"
	c := peer.NewClient(cfg, func() overlay.NodeID { return d.members.Pick(inj) }, env{d, peer.ClientAddress}, sink, d.opts.Traffic)
	addr := bus.Address(peer.ClientAddress)
	if err := d.bus.Register(addr, func(_ bus.Address, data []byte) { c.Deliver(data) }); err != nil {
		return err
	}
	d.w.OnTimer(addr, c.Fire)
	d.client = c
	return nil
}

// Submit hands a job to the client (call it on the event loop, e.g. from At).
func (d *Driver) Submit(spec *wire.JobSpec) { d.client.Submit(spec) }

// Alive is the number of peers that should be members: spawned (or
// adopted, or joined by churn) and not departed.
func (d *Driver) Alive() int { return len(d.peers) - d.members.Departures() }

// Member reports whether peer id is a current member of the overlay.
func (d *Driver) Member(id overlay.NodeID) bool { return d.members.Has(id) }

// At runs fn at emulated time t on the event loop.
func (d *Driver) At(t time.Duration, fn func()) { d.w.At(t, fn) }

// Join adds peer id (next in order) at point; it starts joining now, not
// in the initial sequence (churn).
func (d *Driver) Join(id overlay.NodeID, point can.Point) error {
	p, err := d.newPeer(id, point)
	if err != nil {
		return err
	}
	p.Start()
	return nil
}

// Depart makes a random current member leave (gracefully, or by crashing
// when fail is set) and returns it; 0 when there is no member.
func (d *Driver) Depart(fail bool) overlay.NodeID {
	id := d.members.Depart(d.rng)
	if id == 0 {
		return 0
	}
	d.halt(id, fail)
	return id
}

// DepartPicked makes the members pick chooses (from the current members,
// in increasing order) depart at once — crash when fail is set, else leave
// gracefully — and returns those that did.
func (d *Driver) DepartPicked(pick func(members []overlay.NodeID) []overlay.NodeID, fail bool) []overlay.NodeID {
	var out []overlay.NodeID
	for _, id := range pick(d.members.IDs()) {
		if d.members.DepartID(id) {
			d.halt(id, fail)
			out = append(out, id)
		}
	}
	return out
}

// halt stops departed peer id: a graceful one sends its LEAVE first.
func (d *Driver) halt(id overlay.NodeID, fail bool) {
	if !fail {
		d.peers[id-1].Leave()
	}
	d.bus.Unregister(bus.Address(id))
	d.w.OnTimer(bus.Address(id), nil)
}

// WrapBus puts a decorator (the fault layer) between the peers and the
// world's bus; call it before the first Spawn. The driver is a Scheduler
// for it (Now, At).
func (d *Driver) WrapBus(wrap func(bus.Bus) bus.Bus) { d.bus = wrap(d.bus) }

// Start schedules the first peer's join; virtual time is already at 0.
func (d *Driver) Start() {
	if d.head != nil {
		d.w.At(d.headSlot, d.head.Start)
	}
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

// Collect copies every peer's state (outside the bus).
func (d *Driver) Collect(ctx context.Context) ([]peer.State, error) {
	out := make([]peer.State, len(d.peers))
	for i, p := range d.peers {
		out[i] = p.State()
		if d.members.Departed(p.ID()) {
			out[i].Snapshot.Joined = false // a crashed peer does not know it
		}
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
