// Package peer is the driver-independent adapter around a peer's protocol
// cores: it decodes what arrives from the bus, steps the cores with the
// current emulated time, encodes their outbox into wire envelopes, counts the
// bytes, publishes them and asks the driver for timers. Both drivers — the
// emulator's protoactor actors (actors/peer/actor.go) and the deterministic
// simulator (emulator/sim) — call the very same Peer, so they run the same
// code path down to the bytes on the bus.
//
// A Peer is not safe for concurrent use: each driver calls it from one
// goroutine at a time (an actor's mailbox, or the simulator's event loop).
package peer

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/metrics"
)

// Env is what a driver provides to a peer.
type Env interface {
	// Now is the current emulated time since the start of the run.
	Now() time.Duration
	// Publish hands an encoded envelope to the bus. The peer does not touch
	// data afterwards, so the bus may keep it.
	Publish(to overlay.NodeID, data []byte)
	// SetTimer asks for Peer.Fire(kind) at emulated time at.
	SetTimer(id overlay.NodeID, kind overlay.TimerKind, at time.Duration)
	// Bootstrap returns a current member of the overlay for id to join
	// through, or 0 when there is none yet (id founds the overlay).
	Bootstrap(id overlay.NodeID) overlay.NodeID
	// Joined tells the driver that id became a member of the overlay.
	Joined(id overlay.NodeID)
}

// Peer is one emulated peer: its protocol cores and their I/O.
type Peer struct {
	id      overlay.NodeID
	node    *overlay.Node
	env     Env
	traffic *metrics.Traffic
	seq     uint64
}

// New creates peer id at point, with its own random source.
func New(id overlay.NodeID, point can.Point, cfg overlay.Config, rng *rand.Rand, env Env, traffic *metrics.Traffic) *Peer {
	return &Peer{id: id, node: overlay.New(id, point, cfg, rng), env: env, traffic: traffic}
}

// ID is the peer's address.
func (p *Peer) ID() overlay.NodeID { return p.id }

// Start begins joining the overlay through a contact the driver chooses.
func (p *Peer) Start() {
	p.node.Bootstrap(p.env.Now(), p.env.Bootstrap(p.id))
	p.flush()
}

// Deliver handles the bytes of one message received from the bus.
func (p *Peer) Deliver(data []byte) {
	h, m, err := wire.Decode(data)
	if err != nil || h.To != uint64(p.id) {
		p.traffic.DecodeError()
		return
	}
	p.node.Step(p.env.Now(), overlay.NodeID(h.From), m)
	p.flush()
}

// Fire handles the expiry of a timer set through Env.SetTimer for emulated
// time at. The cores see the later of at and the clock: a timer never
// appears to fire before its deadline, whatever the rounding between
// emulated and wall time.
func (p *Peer) Fire(kind overlay.TimerKind, at time.Duration) {
	p.node.Tick(max(p.env.Now(), at), kind)
	p.flush()
}

// Leave makes the peer depart gracefully: it hands its zone to its
// take-over nodes and ignores everything afterwards.
func (p *Peer) Leave() {
	p.node.Leave(p.env.Now())
	p.flush()
}

// flush carries out what the cores asked for.
func (p *Peer) flush() {
	r := p.node.Ready()
	now := p.env.Now()
	var (
		last    proto.Message
		payload []byte
	)
	for _, out := range r.Messages {
		if out.Msg != last {
			var err error
			if payload, err = wire.MarshalPayload(out.Msg); err != nil {
				continue // cannot happen for our own messages; nothing sensible to send
			}
			last = out.Msg
		}
		p.seq++
		typ := wire.TypeOf(out.Msg)
		data, err := wire.Encode(nil, wire.Header{Type: typ, From: uint64(p.id), To: uint64(out.To), Seq: p.seq, SentAt: int64(now)}, payload)
		if err != nil {
			continue
		}
		p.traffic.Sent(typ, len(data), wire.Entries(out.Msg))
		p.env.Publish(out.To, data)
	}
	for _, t := range r.Timers {
		p.env.SetTimer(p.id, t.Kind, t.At)
	}
	if r.Joined {
		p.env.Joined(p.id)
	}
	if r.NeedBootstrap {
		p.node.Bootstrap(now, p.env.Bootstrap(p.id))
		p.flush()
	}
}

// State is what the oracle and the metrics read of a peer, copied outside
// the bus.
type State struct {
	Snapshot overlay.Snapshot
	Status   overlay.Status
}

// State copies the peer's state.
func (p *Peer) State() State { return State{Snapshot: p.node.Snapshot(), Status: p.node.Status()} }
