package peer

import (
	"math/rand/v2"
	"time"

	"github.com/gridbed/gridbed/actors/chord"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/rnt"
	"github.com/gridbed/gridbed/actors/wire"
)

// RNTSetup hosts 003 §5.1's Rendezvous Node Tree over Chord on every peer
// (matchmaking.scheme rnt): the tree and its ring run beside the CAN
// overlay, which keeps carrying the jobs to their owners and watching
// them (docs/JOBS.md "RNT").
type RNTSetup struct {
	Config rnt.Config
	// Founder is the peer that founds the ring when it has no contact
	// that is already on it (the first peer of the initial population):
	// with peers.bootstrap direct every peer is a member before any has
	// joined the ring, and two founders would make two rings.
	Founder core.NodeID
}

// rntHost is a peer's tree node and when its periods fall.
type rntHost struct {
	node    *rnt.Node
	founder core.NodeID
	offset  time.Duration // the first period's jitter
}

// offer adapts the job core to rnt.Local.
type offer struct{ j *jobs.Node }

func (o offer) OfferFor(req []uint32) (rnt.Offer, bool) {
	u, free, speed, ok := o.j.Offer(req)
	return rnt.Offer{Util: u, Free: free, Speed: speed}, ok
}

func (p *Peer) enableRNT(s *RNTSetup, rng *rand.Rand) {
	cfg := s.Config.Defaults()
	n := rnt.New(p.id, p.node.Point(), cfg, offer{p.jobs}, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	p.rnt = &rntHost{node: n, founder: s.Founder, offset: time.Duration(rng.Int64N(int64(cfg.Chord.Period)))}
	p.jobs.SetSearcher(n)
}

// ringContact is a member to join the ring through: 0 (found it) for the
// founder or when there is no member yet.
func (p *Peer) ringContact() core.NodeID {
	if p.id == p.rnt.founder {
		return 0
	}
	return p.env.Bootstrap(p.id)
}

// flushRNT carries out what the tree and its ring asked for. A job
// assignment or failure for this very peer's job core is stepped here,
// not sent; what the job core does next is flushed in turn (it may start
// another search).
func (p *Peer) flushRNT(now time.Duration) {
	for p.rnt != nil {
		r := p.rnt.node.Ready()
		var local []core.Out
		msgs := r.Messages[:0:0]
		for _, m := range r.Messages {
			if m.To == p.id && wire.IsJob(wire.TypeOf(m.Msg)) {
				local = append(local, m)
				continue
			}
			msgs = append(msgs, m)
		}
		publish(p.env, p.traffic, p.id, &p.seq, msgs, r.Timers)
		need := r.NeedContact
		p.rnt.node.Advance()
		if need {
			if c := p.env.Bootstrap(p.id); c != 0 {
				p.rnt.node.Rejoin(now, c) // its lookup goes out next round
			}
		}
		if len(local) == 0 && !need {
			return
		}
		for _, m := range local {
			p.jobs.Step(now, p.id, m.Msg)
		}
		jr := p.jobs.Ready()
		report(p.sink, now, p.id, jr)
		publish(p.env, p.traffic, p.id, &p.seq, jr.Messages, jr.Timers)
		p.jobs.Advance()
	}
}

// RNTState is a peer's place on the ring and in the tree.
type RNTState struct {
	Ring     chord.Snapshot
	Parent   core.NodeID
	Root     bool
	Children []core.NodeID
	Stats    rnt.Stats
}

func (h *rntHost) state() *RNTState {
	n := h.node
	return &RNTState{Ring: n.Ring().Snapshot(), Parent: n.Parent(), Root: n.IsRoot(), Children: n.Children(), Stats: n.Stats()}
}
