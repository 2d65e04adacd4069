package peer

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
)

// secondary hosts a peer's Residue-node in Dual-CAN's Secondary CAN (002
// §3.1.2): a second overlay core, the same protocol as the Primary CAN's
// — joins, heartbeats with its neighbors, take-over and repair — whose
// messages travel under their own types (wire.Dual: dual_join,
// dual_heartbeat, …) and whose timers under their own kinds
// (core.TimerKind.Dual), so both are told apart from the Primary CAN's
// and counted beside them. The job core says where the Residue-node
// belongs (jobs.Node.ResiduePoint); the peer joins it there, and when the
// point changes or vanishes leaves (its zone taken over) and joins again
// at the new point as a new core under the same address. Contacts come
// from the Manager node's directory (jobs.Manager).
type secondary struct {
	cfg  overlay.Config
	seed *rand.Rand // seeds rng when the first Residue-node is created
	rng  *rand.Rand
	mgr  jobs.Manager
	node *overlay.Node // the current Residue-node; nil: none
}

// enableSecondary prepares the peer for Dual-CAN: the Residue-node's
// cores are configured like the Primary CAN's and draw from their own
// random source, seeded from rng when the first one is created (a peer
// that never has a Residue-node, such as a single-core one, draws
// nothing).
func (p *Peer) enableSecondary(mgr jobs.Manager, rng *rand.Rand) {
	cfg := p.node.Config()
	cfg.VerifyLazy, cfg.OnMisjudged = false, nil // the lazy-list check watches the Primary CAN
	p.second = &secondary{cfg: cfg, seed: rng, mgr: mgr}
}

// syncSecondary moves the Residue-node to where the job core says it
// belongs: it leaves the Secondary CAN when its point changed or vanished
// and joins at the new point. A Residue-node still joining finishes its
// join first (leaving then is a graceful hand-over, not an orphaned zone).
func (p *Peer) syncSecondary(now time.Duration) {
	s := p.second
	if s == nil || p.jobs == nil {
		return
	}
	want := p.jobs.ResiduePoint()
	if !p.node.Joined() {
		want = nil // a Max-node not (or no longer) in the Primary CAN
	}
	if cur := s.node; cur != nil {
		if want != nil && slices.Equal(want, cur.Point()) {
			return
		}
		if !cur.Joined() {
			return
		}
		p.leaveSecondary(now)
	}
	if want == nil {
		return
	}
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(s.seed.Uint64(), s.seed.Uint64()))
	}
	n := overlay.New(p.id, want, s.cfg, s.rng)
	n.SetLoadSource(p.jobs.ResidueLoad())
	s.node = n
	p.jobs.SetSecondary(n)
	n.Bootstrap(now, s.mgr.SecondaryContact(p.id))
	p.flushSecondary(now)
}

// leaveSecondary makes the current Residue-node leave the Secondary CAN
// gracefully (its zone goes to its take-over node) and forgets it.
func (p *Peer) leaveSecondary(now time.Duration) {
	s := p.second
	if s == nil || s.node == nil {
		return
	}
	s.node.Leave(now)
	s.mgr.SecondaryLeft(p.id)
	p.flushSecondary(now)
	s.node = nil
	p.jobs.SetSecondary(nil)
}

// flushSecondary carries out what the Residue-node's core asked for.
func (p *Peer) flushSecondary(now time.Duration) {
	s := p.second
	for s.node != nil {
		r := s.node.Ready()
		publishAs(p.env, p.traffic, p.id, &p.seq, r.Messages, r.Timers, true)
		s.node.Advance()
		if r.Joined {
			s.mgr.SecondaryJoined(p.id)
		}
		if !r.NeedBootstrap {
			return
		}
		s.node.Bootstrap(now, s.mgr.SecondaryContact(p.id))
	}
}
