// Package peer is the driver-independent adapter around a peer's protocol
// cores: it decodes what arrives from the bus, steps the cores with the
// current emulated time, encodes their outbox into wire envelopes, counts the
// bytes, publishes them and asks the driver for timers. Both drivers — the
// emulator's actors (actors/peer/actor.go, run by protoactor in
// emulator/live) and the deterministic simulator (emulator/sim) — call the
// very same Peer, so they run the same
// code path down to the bytes on the bus.
//
// A Peer is not safe for concurrent use: each driver calls it from one
// goroutine at a time (an actor's mailbox, or the simulator's event loop).
package peer

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/metrics"
)

// IO is what a driver provides to every bus endpoint (peer or client).
type IO interface {
	// Now is the current emulated time since the start of the run.
	Now() time.Duration
	// Publish hands an encoded envelope to the bus. The peer does not touch
	// data afterwards, so the bus may keep it.
	Publish(to core.NodeID, data []byte)
	// SetTimer asks for Peer.Fire(kind) at emulated time at.
	SetTimer(id core.NodeID, kind core.TimerKind, at time.Duration)
}

// PublishCopier is implemented by an IO whose Publish is done with data
// when it returns — the emulator's: NATS copies a message into its
// connection's write buffer, and the fault layers copy what they delay.
// Peers then encode their messages into a pooled buffer instead of a fresh
// allocation per message and receiver (at 100,000 peers, hundreds of MB of
// garbage per second; docs/BENCHMARKS.md).
type PublishCopier interface {
	PublishCopies() bool
}

// Envelope is one encoded message of a batch: its receiver and bytes.
type Envelope struct {
	To   core.NodeID
	Data []byte
}

// BatchPublisher is implemented by an IO that can publish the messages of
// one step together (bus.fanout: batched): a heartbeat to its neighbors
// then travels as one transport message per receiving connection instead
// of one per neighbor. Each envelope is still a message of its own — its
// own header, receiver and sequence number, its own faults — and is
// counted as one. Batched reports whether the IO wants batches;
// PublishBatch hands them to the bus, in order, on the same terms as
// Publish.
type BatchPublisher interface {
	Batched() bool
	PublishBatch(envs []Envelope)
}

// envelopeSlack bounds what an envelope adds to its payload: the header's
// tags and varints (type, from, to, seq, sent-at), the payload's tag and
// length, and the frame check.
const envelopeSlack = 64

// payloadBufs lend publish the buffer it encodes payloads into.
var payloadBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// encodeBufs lends publish its encoding buffer when the IO copies.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// decoders lend Deliver a wire.Decoder: a received heartbeat is decoded
// into the decoder's own block instead of a new one per message (half a
// steady overlay's garbage: BenchmarkDriverEvents, 1.38 → 0.69 MB per
// emulated second). One pool serves every peer, so the block a peer
// decodes into is one that is warm in the cache.
var decoders = sync.Pool{New: func() any { return new(wire.Decoder) }}

// Env is what a driver provides to a peer.
type Env interface {
	IO
	// Bootstrap returns a current member of the overlay for id to join
	// through, or 0 when there is none yet (id founds the overlay).
	Bootstrap(id core.NodeID) core.NodeID
	// Joined tells the driver that id became a member of the overlay.
	Joined(id core.NodeID)
}

// JobSink receives what job cores tell the oracle, outside the bus: every
// job event, and queue lengths (the CENT matchmaker's global view). It is
// called from the endpoint's context (an actor, or the simulator's loop).
type JobSink interface {
	JobEvent(at time.Duration, e jobs.Event)
	QueueLen(id core.NodeID, n int)
	// Residual records a node's residual resources (with QueueLen).
	Residual(id core.NodeID, r jobs.Vec)
	// NodeJoined announces a peer that became a member, with its
	// capabilities.
	NodeJoined(id core.NodeID, point can.Point, speed float64, cores int)
}

// JobSetup turns the job core on for the peers of a run.
type JobSetup struct {
	// Config gives the job parameters of the peer at point (its speed and
	// cores follow from its capabilities).
	Config  func(point can.Point) jobs.Config
	Central jobs.Central
	Sink    JobSink
	// RNT, under matchmaking.scheme rnt, hosts the Rendezvous Node Tree
	// over Chord beside the job core (003 §5.1; rnt.go).
	RNT *RNTSetup
}

// WaveSink receives what Wave cores tell the run's job-history check,
// outside the bus, from the endpoint's context.
type WaveSink interface {
	WaveEvent(e wave.Event)
}

// WaveSetup turns the Wave scheduler's core (001) on for the peers of a
// run.
type WaveSetup struct {
	Config wave.Config
	// Peer gives peer id's timezone and the jobs it submits as a client.
	Peer func(id core.NodeID) (tz int, jobs []wave.Job)
	// Rand is peer id's random source for the Wave core.
	Rand func(id core.NodeID) *rand.Rand
	Sink WaveSink
}

// Peer is one emulated peer: its protocol cores and their I/O.
type Peer struct {
	id      core.NodeID
	node    *overlay.Node
	jobs    *jobs.Node // nil when the run has no workload
	rnt     *rntHost   // nil unless matchmaking.scheme is rnt
	wave    *wave.Node // nil unless the run is a Wave run
	waveOut WaveSink
	jobCfg  jobs.Config
	sink    JobSink
	env     Env
	traffic *metrics.Traffic
	seq     uint64
	eager   bool       // decode every message whole (DecodeEagerly)
	second  *secondary // Dual-CAN's Residue-node (dual.go); nil: not a Dual-CAN run
}

// New creates peer id at point, with its own random source.
func New(id core.NodeID, point can.Point, cfg overlay.Config, rng *rand.Rand, env Env, traffic *metrics.Traffic) *Peer {
	return &Peer{id: id, node: overlay.New(id, point, cfg, rng), env: env, traffic: traffic}
}

// NewMember creates a peer around an overlay core that already joined
// outside the bus (peers.bootstrap: direct builds the initial overlay with
// the deterministic driver and hands the cores over). Call StartMember
// once the driver's clock runs.
func NewMember(node *overlay.Node, env Env, traffic *metrics.Traffic) *Peer {
	return &Peer{id: node.ID(), node: node, env: env, traffic: traffic}
}

// StartMember starts a peer created by NewMember: it sets the timers its
// core had pending when it was handed over (none earlier than now) and
// announces the membership as a join does (the driver's member set, the
// job sink, the job core's scheduling rounds).
func (p *Peer) StartMember(timers []core.Timer) {
	now := p.env.Now()
	for _, t := range timers {
		p.env.SetTimer(p.id, t.Kind, max(t.At, now))
	}
	p.joined(now)
}

// Overlay is the peer's overlay core (for handing it over to another
// driver; do not step it while the peer runs).
func (p *Peer) Overlay() *overlay.Node { return p.node }

// EnableJobs gives the peer a job core (runs with a workload): it owns,
// matches and runs jobs, and its heartbeats carry its load.
func (p *Peer) EnableJobs(setup *JobSetup, rng *rand.Rand) {
	p.jobCfg = setup.Config(p.node.Point())
	p.jobs = jobs.New(p.node, p.jobCfg, rng, setup.Central)
	p.node.SetLoadSource(p.jobs) // the load rides on the heartbeat (003 §4.4): fresh at each one
	p.sink = setup.Sink
	if setup.RNT != nil {
		p.enableRNT(setup.RNT, rng)
	}
	if mgr, ok := setup.Central.(jobs.Manager); ok && p.jobCfg.Residue == jobs.ResidueDualCAN {
		p.enableSecondary(mgr, rng)
	}
}

// EnableWave gives the peer a Wave core (001) over its overlay core: the
// timezone CAN.
func (p *Peer) EnableWave(setup *WaveSetup) {
	tz, js := setup.Peer(p.id)
	p.wave = wave.New(p.node, setup.Config, tz, js, setup.Rand(p.id))
	p.waveOut = setup.Sink
}

// ID is the peer's address.
func (p *Peer) ID() core.NodeID { return p.id }

// Start begins joining the overlay through a contact the driver chooses.
func (p *Peer) Start() {
	p.node.Bootstrap(p.env.Now(), p.env.Bootstrap(p.id))
	p.flush()
}

// DecodeEagerly makes the peer decode every message whole, heartbeats'
// neighbor lists included (wire.Decode), instead of leaving lists encoded
// until the overlay needs them (wire.DecodeLazy). Both give identical runs;
// tests and benchmarks turn it on to prove that and to measure the
// difference. Call it before the first Deliver.
func (p *Peer) DecodeEagerly() { p.eager = true }

// Deliver handles the bytes of one message received from the bus (counted
// as received: delivered, in the run's message accounting).
func (p *Peer) Deliver(data []byte) {
	p.traffic.Received()
	var (
		h   wire.Header
		m   proto.Message
		err error
	)
	if p.eager {
		h, m, err = wire.Decode(data)
	} else {
		// The cores keep nothing of a heartbeat but its split and load
		// (the decoder's doc): the decoder goes back to the pool once the
		// message is handled.
		dec := decoders.Get().(*wire.Decoder)
		defer decoders.Put(dec)
		h, m, err = dec.DecodeLazy(data)
	}
	if reason := rejectReason(h, err, uint64(p.id)); reason != "" {
		p.traffic.Reject(reason)
		return
	}
	switch {
	case wire.IsWave(h.Type):
		if p.wave != nil {
			p.wave.Step(p.env.Now(), core.NodeID(h.From), m)
		}
	case wire.IsDual(h.Type):
		if p.second != nil && p.second.node != nil {
			p.second.node.Step(p.env.Now(), core.NodeID(h.From), m)
			p.flushSecondary(p.env.Now())
		} // else meant for a Residue-node that left: dropped
	case wire.IsJob(h.Type):
		if p.jobs != nil {
			p.jobs.Step(p.env.Now(), core.NodeID(h.From), m)
		}
	case wire.IsRNT(h.Type):
		if p.rnt != nil {
			p.rnt.node.Step(p.env.Now(), core.NodeID(h.From), m)
		}
	default:
		p.node.Step(p.env.Now(), core.NodeID(h.From), m)
	}
	p.flush()
}

// Fire handles the expiry of a timer set through Env.SetTimer for emulated
// time at. The cores see the later of at and the clock: a timer never
// appears to fire before its deadline, whatever the rounding between
// emulated and wall time.
func (p *Peer) Fire(kind core.TimerKind, at time.Duration) {
	now := max(p.env.Now(), at)
	if k, ok := kind.Primary(); ok {
		if p.second != nil && p.second.node != nil {
			p.second.node.Tick(now, k)
			p.flushSecondary(now)
		}
		p.flush()
		return
	}
	switch {
	case kind.Overlay():
		p.node.Tick(now, kind)
	case kind == core.TimerRNT:
		if p.rnt != nil {
			p.rnt.node.Tick(now)
		}
	case kind == core.TimerWave:
		if p.wave != nil {
			p.wave.Tick(now)
		}
	case p.jobs != nil:
		p.jobs.Tick(now, kind)
	}
	p.flush()
}

// Leave makes the peer depart gracefully: it hands its zone to its
// take-over nodes and ignores everything afterwards.
func (p *Peer) Leave() {
	p.node.Leave(p.env.Now())
	if p.jobs != nil {
		p.jobs.Leave(p.env.Now())
	}
	if p.wave != nil {
		p.wave.Leave(p.env.Now())
	}
	p.flush()
	p.rnt = nil // unannounced: the ring repairs it as a crash (actors/chord)
}

// flush carries out what the cores asked for: the overlay's first, so that
// a leaving peer's LEAVE precedes the jobs it hands on.
func (p *Peer) flush() {
	r := p.node.Ready()
	now := p.env.Now()
	publish(p.env, p.traffic, p.id, &p.seq, r.Messages, r.Timers)
	p.node.Advance()
	if p.jobs != nil {
		// The job events first: the ledger must hear of a step before any
		// message it caused can lead to another peer's (over NATS the
		// receiver may run at once, on another goroutine).
		jr := p.jobs.Ready()
		report(p.sink, now, p.id, jr)
		publish(p.env, p.traffic, p.id, &p.seq, jr.Messages, jr.Timers)
		p.jobs.Advance()
		p.flushRNT(now)
	}
	p.flushWave()
	if r.Joined {
		p.joined(now)
	}
	if r.NeedBootstrap {
		p.node.Bootstrap(now, p.env.Bootstrap(p.id))
		p.flush()
	}
	p.syncSecondary(now)
}

// flushWave reports the Wave core's events (before its messages, as the
// job core's) and publishes its outbox.
func (p *Peer) flushWave() {
	if p.wave == nil {
		return
	}
	wr := p.wave.Ready()
	if p.waveOut != nil {
		for _, e := range wr.Events {
			p.waveOut.WaveEvent(e)
		}
	}
	publish(p.env, p.traffic, p.id, &p.seq, wr.Messages, wr.Timers)
	p.wave.Advance()
}

// joined announces that the peer became a member.
func (p *Peer) joined(now time.Duration) {
	var contact core.NodeID
	if p.rnt != nil {
		contact = p.ringContact() // before we are a member ourselves
	}
	p.env.Joined(p.id)
	if p.wave != nil {
		p.wave.Joined(now)
		p.flushWave()
	}
	if p.sink != nil {
		p.sink.NodeJoined(p.id, p.node.Point(), p.jobCfg.Speed, p.jobCfg.Cores)
	}
	if p.jobs != nil {
		// Scheduling rounds start; CENT learns the residual resources.
		p.jobs.Joined(now)
		jr := p.jobs.Ready()
		report(p.sink, now, p.id, jr)
		publish(p.env, p.traffic, p.id, &p.seq, jr.Messages, jr.Timers)
		p.jobs.Advance()
	}
	if p.rnt != nil {
		p.rnt.node.Join(now, p.rnt.offset, contact)
		p.flushRNT(now)
	}
}

// publish encodes and sends an endpoint's outgoing messages (the same
// message to several receivers is encoded once) and sets its timers.
func publish(io IO, traffic *metrics.Traffic, id core.NodeID, seq *uint64, msgs []core.Out, timers []core.Timer) {
	publishAs(io, traffic, id, seq, msgs, timers, false)
}

// publishAs is publish; with dual the messages and timers are a Secondary
// CAN core's, sent under their Dual-CAN twins (wire.Dual,
// core.TimerKind.Dual).
func publishAs(io IO, traffic *metrics.Traffic, id core.NodeID, seq *uint64, msgs []core.Out, timers []core.Timer, dual bool) {
	now := io.Now()
	var (
		last    proto.Message
		payload []byte
		buf     *[]byte // pooled encoding buffer, when io copies what it publishes
	)
	if c, ok := io.(PublishCopier); ok && c.PublishCopies() && len(msgs) > 0 {
		buf = encodeBufs.Get().(*[]byte)
		defer encodeBufs.Put(buf)
	}
	// Payloads are encoded into a pooled buffer: every envelope copies its
	// payload, so none is kept once the messages are encoded.
	var pbuf *[]byte
	if len(msgs) > 0 {
		pbuf = payloadBufs.Get().(*[]byte)
		defer payloadBufs.Put(pbuf)
	}
	var batch []Envelope // envelopes encoded so far, when batching
	if b, ok := io.(BatchPublisher); ok && b.Batched() && len(msgs) > 1 {
		batch = make([]Envelope, 0, len(msgs))
		if buf == nil {
			// The bus keeps what it is given: one fresh buffer for the
			// whole batch.
			buf = new([]byte)
		}
	}
	var offs []int // where each batched envelope ends in *buf
	for i, out := range msgs {
		if out.Msg != last {
			var err error
			if payload, err = wire.AppendPayload((*pbuf)[:0], out.Msg); err != nil {
				continue // cannot happen for our own messages; nothing sensible to send
			}
			*pbuf = payload[:0] // keep the grown buffer
			last = out.Msg
			if batch != nil {
				// Room for the rest of the batch at this payload's size,
				// at once: a vanilla heartbeat to every neighbor is one
				// payload many times, and growing the buffer by doubling
				// copied it over and over (BENCHMARKS.md, 100,000 peers).
				*buf = slices.Grow(*buf, (len(msgs)-i)*(len(payload)+envelopeSlack))
			}
		}
		*seq++
		typ := wire.TypeOf(out.Msg)
		if dual {
			typ, _ = wire.Dual(typ)
		}
		var dst []byte
		switch {
		case batch != nil:
			dst = *buf // append after the envelopes of the batch so far
		case buf != nil:
			dst = (*buf)[:0]
		}
		data, err := wire.Encode(dst, wire.Header{Type: typ, From: uint64(id), To: uint64(out.To), Seq: *seq, SentAt: int64(now)}, payload)
		if err != nil {
			continue
		}
		// The bytes counted are the envelope's, without the frame check
		// (wire.CheckLen): the papers' message volumes.
		if batch != nil {
			traffic.Sent(typ, len(data)-len(*buf)-wire.CheckLen, wire.Entries(out.Msg))
			*buf = data
			offs = append(offs, len(data))
			batch = append(batch, Envelope{To: out.To})
			continue
		}
		traffic.Sent(typ, len(data)-wire.CheckLen, wire.Entries(out.Msg))
		io.Publish(out.To, data)
		if buf != nil {
			*buf = data[:0] // keep the grown buffer
		}
	}
	if len(batch) > 0 {
		// Slice the envelopes only now: appending may have moved the
		// buffer.
		start := 0
		for i := range batch {
			batch[i].Data = (*buf)[start:offs[i]:offs[i]]
			start = offs[i]
		}
		io.(BatchPublisher).PublishBatch(batch)
		*buf = (*buf)[:0] // keep the grown buffer
	}
	for _, t := range timers {
		k := t.Kind
		if dual {
			k, _ = k.Dual()
		}
		io.SetTimer(id, k, t.At)
	}
}

// rejectReason is why a received message (header h, decoding error err)
// is thrown away by the endpoint at address self — a failed frame check
// (corrupted on the way), a malformed envelope, an unknown type, or
// another address — or "" when it is taken.
func rejectReason(h wire.Header, err error, self uint64) string {
	switch {
	case err != nil:
		return wire.RejectReason(err)
	case h.To != self:
		return wire.RejectMisaddressed
	}
	return ""
}

// report hands a job core's events and queue length to the oracle's sink.
func report(sink JobSink, now time.Duration, id core.NodeID, r jobs.Ready) {
	if sink == nil {
		return
	}
	for _, e := range r.Events {
		sink.JobEvent(now, e)
	}
	if r.QueueChanged {
		sink.QueueLen(id, r.QueueLen)
		sink.Residual(id, r.Residual)
		if cs, ok := sink.(CESink); ok && r.CELoads != nil {
			cs.CELoad(id, r.CELoads)
		}
	}
}

// CESink is a JobSink that also follows each node's CE loads (002 §4.1:
// the central baseline that knows CEs).
type CESink interface {
	CELoad(id core.NodeID, loads []hetce.Load)
}

// State is what the oracle and the metrics read of a peer, copied outside
// the bus.
type State struct {
	Snapshot overlay.Snapshot
	Status   overlay.Status
	Jobs     jobs.Snapshot
	// RNT is the peer's place on the Chord ring and in the Rendezvous
	// Node Tree (nil unless matchmaking.scheme is rnt).
	RNT  *RNTState
	Wave wave.Snapshot
}

// State copies the peer's state.
func (p *Peer) State() State {
	s := State{Snapshot: p.node.Snapshot(), Status: p.node.Status()}
	if p.jobs != nil {
		s.Jobs = p.jobs.Snapshot()
	}
	if p.rnt != nil {
		s.RNT = p.rnt.state()
	}
	if p.wave != nil {
		s.Wave = p.wave.Snapshot()
	}
	return s
}
