package jobs

import (
	"math"
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/wire"
)

// The Balloon model (002 §3.1.3-3.1.5; docs/JOBS.md, "Balloons"). A multi-core node
// is two logical nodes: its Max-node, the peer at its static point, and its
// Residue-node, the resources it could start a job on now. A node running
// jobs with nothing waiting and a free core has a Residue-node: a Balloon
// attached to the owner of the zone containing the residue's point (its
// host). The node routes a BalloonAttach there (the host acknowledges it),
// then sends it straight to the host every heartbeat period — 002 §3.1.5's
// one-way heartbeat per Balloon — and at once when the residue changes: a
// host that no longer owns the new point drops the Balloon and forwards it
// towards the point, whose owner acknowledges it (a routed BalloonAttach
// always asks for an acknowledgement). The Balloon detaches when
// the residue vanishes (no free core, or the node idle: its Max-node then
// represents it) or the node leaves. A host drops a Balloon it has not
// heard for FailAfter periods; the node asks for an acknowledgement every
// FailAfter periods and routes its Balloon afresh when none came for two.
//
// The host reports its Balloons on its heartbeat's Load: matchmaking at the
// host or at its neighbors prefers a capable Balloon at the probabilistic
// stop (002 §3.1.4: "search only the CAN neighbors and their Balloons ... a
// Balloon will be preferred"), and aggregation counts a Balloon's cores
// discounted by β (Eq 3.1).

// residue is the Residue-node side: the Balloon this node announced.
type residue struct {
	point  can.Point     // the announced point; nil: no Balloon
	host   core.NodeID   // the host, as its last acknowledgement said; 0: not known
	acked  time.Duration // when a host last acknowledged it
	routed time.Duration // when it was last routed from here
}

// hosted is a Balloon attached to this node.
type hosted struct {
	b     *wire.Balloon
	heard time.Duration
	// taken: a job was matched to it since its last beat (one stale
	// Balloon must not draw many jobs before it reports its new residue).
	taken bool
}

func (n *Node) balloons() bool { return n.cfg.Residue == ResidueBalloon }

// residueNow is this node's Residue-node now (002 §3.1.1), nil without
// one: a node that runs jobs, has none waiting (they would start before a
// newcomer) and has a free core. Its cores are the free cores, its β =
// 1/(1+Ω) with Ω (Eq 3.6) of a minimal job (one core, no memory or disk)
// started on the node as it is now.
func (n *Node) residueNow() *wire.Balloon {
	if n.cfg.Residue == ResidueNone || n.left || !n.view.Joined() || n.running == 0 || n.running < len(n.queue) {
		return nil
	}
	r := n.residual()
	cores := math.Floor(r[ResCores] + 1e-9)
	if cores < 1 {
		return nil
	}
	r[ResCores] = cores
	for k := range r {
		r[k] = max(r[k], 0)
	}
	beta := 1 / (1 + Omega(n.running+1, n.used, n.capacity))
	return &wire.Balloon{Node: uint64(n.self), Point: n.cfg.Res.Residue(n.view.Point(), r), Speed: float32(n.cfg.Speed), Cores: float32(cores), Beta: float32(beta), Combo: n.cfg.Combo}
}

// syncBalloon attaches, moves or detaches our Balloon when our residue
// appeared, changed or vanished (after every message and timer).
func (n *Node) syncBalloon(now time.Duration) {
	if !n.balloons() {
		return
	}
	b := n.residueNow()
	switch {
	case b == nil && n.res.point != nil:
		n.detach(now)
	case b != nil && !slices.Equal(b.Point, n.res.point):
		n.res.point = b.Point
		n.announce(now, b, false)
	}
}

// announce sends our Balloon to its host, or routes it towards its point
// while we know no host.
func (n *Node) announce(now time.Duration, b *wire.Balloon, wantAck bool) {
	m := &wire.BalloonAttach{Balloon: b, WantAck: wantAck}
	if n.res.host == 0 {
		n.res.routed = now
		n.onBalloonAttach(now, m)
		return
	}
	n.sendBalloon(now, n.res.host, m)
}

// detach removes our Balloon from its host (routed towards its point when
// we know no host).
func (n *Node) detach(now time.Duration) {
	m := &wire.BalloonAttach{Balloon: &wire.Balloon{Node: uint64(n.self), Point: n.res.point}, Detach: true}
	if n.res.host == 0 {
		n.onBalloonAttach(now, m)
	} else {
		n.sendBalloon(now, n.res.host, m)
	}
	n.res = residue{}
}

func (n *Node) sendBalloon(now time.Duration, to core.NodeID, m *wire.BalloonAttach) {
	if to == n.self {
		n.onBalloonAttach(now, m)
		return
	}
	n.send(to, m)
}

// onBalloonAttach hosts, refreshes or removes a Balloon whose point we
// own, and forwards one whose point we do not own towards it (a host whose
// zone no longer holds a Balloon's point lets it go). The host acknowledges
// a Balloon new to it and one that asks: every routed one does.
func (n *Node) onBalloonAttach(now time.Duration, m *wire.BalloonAttach) {
	b := m.Balloon
	if !n.validBalloon(b, !m.Detach) {
		return
	}
	id := core.NodeID(b.Node)
	p := can.Point(b.Point)
	if !n.view.Owns(p) {
		delete(n.hosted, id)
		// Routed on: its host changes, and the node must learn the new one.
		m.WantAck = !m.Detach
		if next := n.view.NextHop(p, &m.Hops, &m.Best, &m.Detours); next != 0 {
			n.send(next, m)
		}
		return
	}
	if m.Detach {
		delete(n.hosted, id)
		return
	}
	old := n.hosted[id]
	n.hosted[id] = &hosted{b: b, heard: now}
	if old == nil || m.WantAck {
		ack := &wire.BalloonAck{Point: b.Point}
		if id == n.self {
			n.onBalloonAck(now, n.self, ack)
		} else {
			n.send(id, ack)
		}
	}
	n.arm(now)
}

// onBalloonAck: host from has our Balloon.
func (n *Node) onBalloonAck(now time.Duration, from core.NodeID, m *wire.BalloonAck) {
	if n.res.point == nil || len(m.Point) != len(n.res.point) {
		return
	}
	n.res.host, n.res.acked = from, now
}

// validBalloon checks a Balloon's shape (and, unless only detaching, its
// figures) against our space.
func (n *Node) validBalloon(b *wire.Balloon, figures bool) bool {
	if b == nil || b.Node == 0 || len(b.Point) != len(n.view.Point()) {
		return false
	}
	return !figures || usable(b)
}

// usable: a Balloon's figures are numbers in range.
func usable(b *wire.Balloon) bool {
	ok := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	return b.Node != 0 && ok(b.Speed) && ok(b.Cores) && ok(b.Beta) && b.Cores >= 0 && b.Beta >= 0 && b.Beta <= 1
}

// balloonPeriodic is the Balloon model's share of the periodic heartbeat:
// the host drops Balloons silent for FailAfter periods (or whose point left
// its zone: their next beat is forwarded); the node beats to its host, asks
// for an acknowledgement every FailAfter periods and routes its Balloon
// afresh when none came for two.
func (n *Node) balloonPeriodic(now time.Duration) {
	timeout := time.Duration(n.cfg.FailAfter) * n.cfg.Period
	for id, h := range n.hosted { // deleting only: order does not matter
		if now-h.heard > timeout || !n.view.Owns(h.b.Point) {
			delete(n.hosted, id)
		}
	}
	if n.res.point == nil {
		return
	}
	b := n.residueNow()
	if b == nil {
		n.detach(now)
		return
	}
	n.res.point = b.Point
	switch {
	case n.res.host == 0:
		if now-n.res.routed >= n.cfg.Period {
			n.announce(now, b, false)
		}
	case now-n.res.acked > 2*timeout:
		n.res.host = 0 // the host is gone: attach anew
		n.announce(now, b, false)
	default:
		n.announce(now, b, now-n.res.acked >= timeout)
	}
}

// hostedIDs are the Balloons attached to us, in node order.
func (n *Node) hostedIDs() []core.NodeID {
	ids := make([]core.NodeID, 0, len(n.hosted))
	for id := range n.hosted {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// hostedLoad lists the Balloons attached to us for our heartbeat's Load.
func (n *Node) hostedLoad() []*wire.Balloon {
	var bs []*wire.Balloon
	for _, id := range n.hostedIDs() {
		if h := n.hosted[id]; !h.taken {
			bs = append(bs, h.b)
		}
	}
	return bs
}

// tnc is TNC(N) of a neighbor from its heartbeat (002 Eq 3.1): its cores
// plus the discounted cores of the Balloons attached to it.
func tnc(l *wire.Load) float64 {
	var bs []load.Balloon
	for _, b := range l.Balloons {
		if usable(b) {
			bs = append(bs, load.Balloon{Cores: float64(b.Cores), Beta: float64(b.Beta)})
		}
	}
	return load.TNC(float64(l.Cores), bs)
}

// balloonPick is a Balloon a job may be matched to: attached to us
// (mine) or reported on a neighbor's load (at).
type balloonPick struct {
	b    *wire.Balloon
	mine *hosted
	at   *wire.Load
}

// bestBalloon is the fastest Balloon attached to us or to one of our
// neighbors that fits a job requiring req (002 §3.1.4: at the stop, "we
// search only the CAN neighbors and their Balloons"); false if none. Our
// own Balloon is left out: we are a candidate ourselves.
func (n *Node) bestBalloon(req []uint32, cid []uint64) (balloonPick, bool) {
	var best balloonPick
	if !n.balloons() {
		return best, false
	}
	d := n.cfg.Res.Demand(req)
	consider := func(c balloonPick) {
		b := c.b
		if core.NodeID(b.Node) == n.self || !usable(b) || !capable(b.Point, b.Combo, req, cid) || !Fits(d, n.cfg.Res.Capacity(b.Point)) {
			return
		}
		if best.b == nil || b.Speed > best.b.Speed || b.Speed == best.b.Speed && b.Node < best.b.Node {
			best = c
		}
	}
	for _, id := range n.hostedIDs() {
		if h := n.hosted[id]; !h.taken {
			consider(balloonPick{b: h.b, mine: h})
		}
	}
	for _, nb := range n.view.Neighbors() {
		if l := n.loadOf(&nb); l != nil {
			for _, b := range l.Balloons {
				if b != nil {
					consider(balloonPick{b: b, at: l})
				}
			}
		}
	}
	return best, best.b != nil
}

// assignBalloon hands a job to a Balloon's physical node, and marks the
// Balloon used here until its node reports its new residue.
func (n *Node) assignBalloon(now time.Duration, c balloonPick, m *wire.JobPush) {
	id := core.NodeID(c.b.Node)
	if c.mine != nil {
		c.mine.taken = true
	}
	if c.at != nil {
		c.at.Balloons = slices.DeleteFunc(c.at.Balloons, func(x *wire.Balloon) bool { return x == c.b })
	}
	if l := n.neighborLoad(id); l != nil {
		noteSent(l, n.cfg.Res.Demand(m.Job.Req), false)
	}
	n.status.BalloonMatches++
	n.event(Event{Kind: EvBalloon, Job: m.Job.Id, Attempt: m.Job.Attempt, Other: id, Hops: m.Hops})
	n.assign(now, id, &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}
