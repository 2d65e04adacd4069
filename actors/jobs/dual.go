package jobs

import (
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// Dual-CAN (002 §3.1.2, Algorithm 1; docs/JOBS.md, "Dual-CAN"). A
// multi-core node is two logical nodes: its Max-node, the peer in the
// Primary CAN, and its Residue-node (002 §3.1.1), a member of a second
// CAN, the Secondary CAN, at the residue's point while the node has one —
// the same Residue-node as the Balloon model's (residueNow). The peer
// hosts the Residue-node's overlay core (actors/peer): it joins the
// Secondary CAN when a residue appears, leaves it (a zone take-over, as
// in the Primary CAN) when the residue changes or vanishes and joins again
// at the new point, and exchanges heartbeats with its Secondary CAN
// neighbors, carrying its residue (ResidueLoad). The job core decides
// (ResiduePoint) and searches the Secondary CAN at the probabilistic stop:
// the push's best Primary CAN candidate is the fallback (Algorithm 1
// lines 4–10). Aggregation stays in the Primary CAN (002 §3.1.4: "only
// free nodes ... can exist in the Secondary CAN").

// Manager is Dual-CAN's Manager node (002 §3.1.2: "a directory service
// for the secondary CAN"): the current members of the Secondary CAN. Like
// the drivers' bootstrap directory of the Primary CAN it is consulted
// outside the bus. The Central a job core is given implements it in runs
// with matchmaking.residue dual-can.
type Manager interface {
	// SecondaryContact returns a member of the Secondary CAN other than
	// id (a contact to join through, or an injection node for a search),
	// 0 when there is none.
	SecondaryContact(id core.NodeID) core.NodeID
	// SecondaryJoined and SecondaryLeft keep the directory: id's
	// Residue-node became a member, or left.
	SecondaryJoined(id core.NodeID)
	SecondaryLeft(id core.NodeID)
}

func (n *Node) dualCAN() bool { return n.cfg.Residue == ResidueDualCAN }

// ResiduePoint is where this node's Residue-node belongs in the Secondary
// CAN now (002 §3.1.2), nil when it has none or the run is not Dual-CAN:
// the peer joins, moves or leaves its Residue-node's core to match.
func (n *Node) ResiduePoint() can.Point {
	if !n.dualCAN() {
		return nil
	}
	if b := n.residueNow(); b != nil {
		return b.Point
	}
	return nil
}

// SetSecondary gives the job core its Residue-node's overlay core in the
// Secondary CAN (nil: none now). The peer calls it whenever it creates or
// drops one.
func (n *Node) SetSecondary(v View) {
	n.second = v
	if v == nil {
		n.secondTaken = nil
	}
}

// ResidueLoad is the load the Residue-node's Secondary CAN heartbeats
// carry: its point, CPU speed, free cores and combination — what a search
// needs to judge a neighboring Residue-node capable (002 §3.1.2).
func (n *Node) ResidueLoad() overlay.LoadSource { return residueLoad{n} }

type residueLoad struct{ n *Node }

// LoadInfo implements overlay.LoadSource for the Residue-node.
func (r residueLoad) LoadInfo() *wire.Load {
	n := r.n
	if n.second == nil {
		return nil
	}
	return &wire.Load{Point: slices.Clone(n.second.Point()), Speed: float32(n.cfg.Speed), Cores: float32(n.free()), Combo: n.cfg.Combo}
}

// searchSecondary starts Algorithm 1's search of the Secondary CAN (002
// §3.1.4, line 4) for a push that stopped here with best as its Primary
// CAN candidate: at our own Residue-node when it is a member, else through
// an injection node the Manager names; with no Secondary CAN at all the
// Primary CAN's candidate is taken (line 9).
func (n *Node) searchSecondary(now time.Duration, m *wire.JobPush) {
	s := &wire.DualSearch{Push: m}
	if n.second != nil && n.second.Joined() {
		n.onDualSearch(now, s)
		return
	}
	var inj core.NodeID
	if mgr, ok := n.central.(Manager); ok {
		inj = mgr.SecondaryContact(n.self)
	}
	if inj == 0 {
		n.dualFallback(now, s)
		return
	}
	s.Hops++
	n.send(inj, s)
}

// onDualSearch is one step of a job's search of the Secondary CAN (002
// Algorithm 1 lines 4–10): the fastest capable Residue-node among ours and
// our Secondary CAN neighbors' (their heartbeats' residues) gets the job
// (line 7); with none in sight the search is routed on towards the job's
// requirement point and, from its owner, climbs to upper neighbors — the
// capable Residue-nodes lie above it — until one is in sight, the climbs
// reach the push limit or no upper neighbor is left; then the Primary
// CAN's best candidate gets it (line 9). A node whose Residue-node left
// the Secondary CAN meanwhile falls back at once.
func (n *Node) onDualSearch(now time.Duration, s *wire.DualSearch) {
	m := s.Push
	if m == nil || m.Best == nil {
		return
	}
	sec := n.second
	if sec == nil || !sec.Joined() {
		n.dualFallback(now, s)
		return
	}
	if id, nb, ok := n.bestResidue(m.Job.Req, m.Job.Cid); ok {
		if nb != nil {
			if n.secondTaken == nil {
				n.secondTaken = map[core.NodeID]*wire.Load{}
			}
			n.secondTaken[id] = nb // not again until its next heartbeat
		}
		m.Hops += s.Hops
		n.status.ResidueMatches++
		n.event(Event{Kind: EvResidue, Job: m.Job.Id, Attempt: m.Job.Attempt, Other: id, Hops: m.Hops})
		n.assign(now, id, &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
		return
	}
	p := can.Point(m.Job.Req)
	if !sec.Owns(p) && s.Climbs == 0 {
		if next := sec.NextHop(p, &s.Hops, &s.Best, &s.Detours); next != 0 {
			n.send(next, s)
			return
		}
		n.dualFallback(now, s)
		return
	}
	if int(s.Climbs) >= n.cfg.MaxPushHops {
		n.dualFallback(now, s)
		return
	}
	own := sec.Zone()
	var ups []core.NodeID
	for _, nb := range sec.Neighbors() {
		if _, upper, ok := can.Abut(own, nb.Zone); ok && upper {
			ups = append(ups, nb.ID)
		}
	}
	if len(ups) == 0 {
		n.dualFallback(now, s)
		return
	}
	s.Climbs++
	s.Hops++
	n.send(ups[n.rng.IntN(len(ups))], s)
}

// bestResidue is the fastest Residue-node of the Secondary CAN in sight
// that fits a job requiring req: ours (nb nil) or a neighbor's, from its
// last heartbeat (nb). Our own counts only while it is current (a job
// taken since is not yet in its point).
func (n *Node) bestResidue(req []uint32, cid []uint64) (id core.NodeID, nb *wire.Load, ok bool) {
	d := n.cfg.Res.Demand(req)
	var bestSpeed float32
	consider := func(c core.NodeID, point []uint32, combo uint32, speed float32, l *wire.Load) {
		if !capable(point, combo, req, cid) || !Fits(d, n.cfg.Res.Capacity(point)) {
			return
		}
		if !ok || speed > bestSpeed || speed == bestSpeed && c < id {
			id, nb, ok, bestSpeed = c, l, true, speed
		}
	}
	if own := n.ResiduePoint(); own != nil && slices.Equal(own, n.second.Point()) {
		consider(n.self, own, n.cfg.Combo, float32(n.cfg.Speed), nil)
	}
	for _, x := range n.second.Neighbors() {
		l := x.Load
		if l == nil || x.ID == n.self || n.secondTaken[x.ID] == l || len(l.Point) != len(req) || !usable(&wire.Balloon{Node: uint64(x.ID), Speed: l.Speed, Cores: l.Cores, Beta: 1}) {
			continue
		}
		consider(x.ID, l.Point, l.Combo, l.Speed, l)
	}
	return id, nb, ok
}

// dualFallback gives a searched job to the push's best Primary CAN
// candidate (002 Algorithm 1 line 9).
func (n *Node) dualFallback(now time.Duration, s *wire.DualSearch) {
	m := s.Push
	m.Hops += s.Hops
	n.assign(now, core.NodeID(m.Best.Id), &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}
