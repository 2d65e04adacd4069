// Joining the overlay (003 §4.1), leaving it gracefully (002 §4.2.2).

package overlay

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

type pendingMsg struct {
	from core.NodeID
	msg  proto.Message
}

// maxPending bounds the messages a joining node buffers.
const maxPending = 1024

// Bootstrap starts (or restarts) joining the overlay through contact, an
// existing member chosen by the driver (the papers' "external mechanism that
// can find an existing node", 003 §4.1). With contact 0 the node founds the
// overlay and owns the whole space.
func (n *Node) Bootstrap(now time.Duration, contact core.NodeID) {
	if n.joined || n.left {
		return
	}
	if contact == 0 {
		n.becomeMember(now, 0, can.Whole(n.cfg.Dims), nil, nil)
		return
	}
	if contact == n.id {
		// A node joining again is still in the driver's directory and may
		// be handed itself: it must not found a second overlay. Ask again
		// after the join wait.
		n.joinRetry = now + n.nextJoinWait()
		n.timer(core.TimerJoinRetry, n.joinRetry)
		return
	}
	n.contact = contact
	n.sendJoin()
	n.joinRetry = now + n.nextJoinWait()
	n.timer(core.TimerJoinRetry, n.joinRetry)
}

func (n *Node) sendJoin() {
	n.send(n.contact, &wire.Join{Joiner: uint64(n.id), Point: slices.Clone(n.point)})
}

// onJoin implements the CAN join (003 §4.1): a JOIN travels greedily
// to the owner of the joiner's point, which splits its zone (can.Split),
// hands one part with the relevant neighbors to the joiner, and tells its
// former neighbors about both zones at once.
func (n *Node) onJoin(now time.Duration, from core.NodeID, m *wire.Join) {
	if len(m.Point) != n.cfg.Dims || m.Joiner == 0 {
		n.status.BadMessages++
		return
	}
	if !n.joined {
		// Not a member (joining, or joining again): no zone to split or
		// route from. The JOIN is dropped, not kept for later: its joiner
		// retries (joinretry.go), and a JOIN answered after the retry
		// was accepted elsewhere would split a zone for nobody.
		n.status.RouteDrops++
		return
	}
	p := can.Point(m.Point)
	joiner := core.NodeID(m.Joiner)
	if !n.zone.Contains(p) {
		if i := containing(n.extra, p); i >= 0 && joiner != n.id {
			n.handExtra(now, i, joiner, m.Hops)
			return
		}
		n.routeJoin(p, m)
		return
	}
	if joiner == n.id {
		return
	}
	if _, ok := n.accepted[joiner]; ok && n.retriedJoin(joiner, m) {
		// A retry of a joiner we accepted (its point may still be ours
		// when the split moved its virtual coordinate across).
		return
	}
	keep, give, dim, at, virtual, ok := n.split(p)
	if !ok {
		n.status.JoinsRejected++
		n.send(joiner, &wire.JoinReject{Reason: "point equals the owner's point"})
		return
	}
	n.status.JoinsOwned++
	old := slices.Clone(n.nbrs)

	// The joiner's history is ours plus this split, seen from its side.
	jHist := make([]*wire.Split, 0, len(n.history)+1)
	jHist = append(jHist, n.history...)
	jHist = append(jHist, &wire.Split{Dim: uint32(dim), At: at, Upper: give.Lo[dim] == at, Sibling: uint64(n.id)})
	n.history = append(n.history, &wire.Split{Dim: uint32(dim), At: at, Upper: keep.Lo[dim] == at, Sibling: uint64(joiner)})

	n.zone = keep
	n.version++
	me := n.info()
	jInfo := &wire.NodeInfo{Id: uint64(joiner), Zone: zoneToWire(give), Version: 1}
	jNbrs := []*wire.NodeInfo{me}
	for _, nb := range old {
		jNbrs = append(jNbrs, neighborInfo(nb))
	}
	accept := &wire.JoinAccept{Zone: jInfo.Zone, History: jHist, Neighbors: jNbrs, Hops: m.Hops}
	if v := len(p) - 1; virtual != p[v] {
		accept.Virtual = &virtual
	}
	n.send(joiner, accept)
	n.keepAccept(now, joiner, accept)

	// Our table: keep neighbors that still abut our smaller zone, add the joiner.
	n.touch()
	n.nbrs = n.nbrs[:0]
	for _, nb := range old {
		if n.abuts(nb.Zone, nb.Extra) {
			n.nbrs = append(n.nbrs, nb)
		} else {
			n.gone[nb.ID] = tombstone{nb.Version, now, n.version}
		}
	}
	n.reindex()
	// The joiner's last split is this one, seen from its side: we are its
	// take-over node, and it is ours.
	n.upsert(&Neighbor{ID: joiner, Zone: give, Version: 1, LastHeard: now, Heard: true, LastSplit: jHist[len(jHist)-1]})

	// Every former neighbor learns our new zone and the joiner's at once.
	upd := &wire.ZoneUpdate{Self: me, Others: []*wire.NodeInfo{jInfo}, LastSplit: n.lastSplit()}
	for _, nb := range old {
		n.send(nb.ID, upd)
	}
}

// split divides our zone for a joiner at point p by the configured rule
// (Config.Split), returning the joiner's virtual coordinate as the split
// leaves it.
func (n *Node) split(p can.Point) (keep, give can.Zone, dim int, at uint64, virtual uint32, ok bool) {
	if n.cfg.Split == SplitHalve {
		return can.Halve(n.zone, n.point, p)
	}
	keep, give, dim, at, ok = can.Split(n.zone, n.point, p)
	return keep, give, dim, at, p[len(p)-1], ok
}

// handExtra gives our extra zone i whole to a joiner whose point lies in
// it: an orphan becomes an ordinary zone again. The joiner gets no split
// history (the zone has no sibling); should it depart, its neighbors treat
// its zone as an orphan.
func (n *Node) handExtra(now time.Duration, i int, joiner core.NodeID, hops uint32) {
	n.status.JoinsOwned++
	n.status.ExtrasHanded++
	give := n.extra[i]
	n.extra = slices.Delete(n.extra, i, i+1)
	n.version++
	old := slices.Clone(n.nbrs)
	me := n.info()
	jInfo := &wire.NodeInfo{Id: uint64(joiner), Zone: zoneToWire(give), Version: 1}
	jNbrs := []*wire.NodeInfo{me}
	for _, nb := range old {
		jNbrs = append(jNbrs, neighborInfo(nb))
	}
	accept := &wire.JoinAccept{Zone: jInfo.Zone, Neighbors: jNbrs, Hops: hops}
	n.send(joiner, accept)
	n.keepAccept(now, joiner, accept)
	n.learn(now, jInfo, fromJoin)
	n.zoneChanged(now, old, []*wire.NodeInfo{jInfo})
}

// routeJoin forwards a JOIN one hop towards the joiner's point.
func (n *Node) routeJoin(p can.Point, m *wire.Join) {
	if !n.routeProgress(p, m.Hops, &m.Best, &m.Detours) {
		return
	}
	if joiner := core.NodeID(m.Joiner); len(n.accepted) > 0 || len(n.joinVia) > 0 {
		// A JOIN on its way to its own joiner: the joiner has a zone it
		// does not know of (our JOIN-ACCEPT, or its owner's, was lost).
		if i, ok := n.find(joiner); ok && n.nbrs[i].Zone.Contains(p) && n.retriedJoin(joiner, m) {
			return
		}
	}
	n.route(p, m, &m.Hops)
}

func (n *Node) buffer(from core.NodeID, m proto.Message) {
	if len(n.pending) < maxPending {
		n.pending = append(n.pending, pendingMsg{from, m})
	} else {
		n.status.RouteDrops++
	}
}

func (n *Node) onJoinAccept(now time.Duration, from core.NodeID, m *wire.JoinAccept) {
	if n.joined {
		if z, ok := zoneFromWire(m.Zone, n.cfg.Dims); ok && z.Equal(n.zone) {
			// Our owner's JOIN-ACCEPT sent again, for a retry of ours
			// that crossed the first (joinretry.go): nothing new.
			return
		}
		// A second owner accepted an earlier attempt of ours. Its split
		// stays unclaimed; the oracle shows the gap. (Handing it back is the
		// leave protocol's job.)
		n.status.DuplicateAccepts++
		return
	}
	z, ok := zoneFromWire(m.Zone, n.cfg.Dims)
	pt := n.point
	if m.Virtual != nil {
		// The owner halved the virtual dimension and moved us across.
		pt = slices.Clone(n.point)
		pt[len(pt)-1] = m.GetVirtual()
	}
	if !ok || !z.Contains(pt) {
		n.status.BadMessages++
		return
	}
	n.point = pt
	n.becomeMember(now, from, z, m.History, m.Neighbors)
}

func (n *Node) becomeMember(now time.Duration, owner core.NodeID, z can.Zone, hist []*wire.Split, nbrs []*wire.NodeInfo) {
	n.joined = true
	n.joinWait = 0
	n.zone = z
	n.version++ // 1 at the first join; a rejoin continues its versions
	n.history = hist
	for _, info := range nbrs {
		// Only the owner's own entry is first-hand; the rest is its view.
		src := fromJoin
		if core.NodeID(info.GetId()) == owner {
			src = fromSelf
		}
		n.learn(now, info, src)
	}
	if i, ok := n.find(owner); ok && len(hist) > 0 {
		// The owner's last split is ours mirrored, and we are its take-over
		// node: keep its neighbor list for the day it fails.
		mine := hist[len(hist)-1]
		nb := n.nbrs[i]
		nb.LastSplit = &wire.Split{Dim: mine.Dim, At: mine.At, Upper: !mine.Upper, Sibling: uint64(n.id)}
		// Kept encoded, as heartbeat lists are (a quarter of the memory):
		// decoded only for a take-over (takeoverList).
		if b, err := proto.Marshal(&wire.Heartbeat{Neighbors: nbrs[1:]}); err == nil {
			nb.kept = &keptList{encoded: b}
		} else {
			nb.kept = &keptList{decoded: nbrs[1:]}
		}
	}
	n.ready.Joined = true
	// Spread heartbeats over the period so that peers do not beat in step.
	n.nextBeat = now + time.Duration(n.rng.Int64N(int64(n.cfg.HeartbeatPeriod)))
	n.timer(core.TimerHeartbeat, n.nextBeat)
	pending := n.pending
	n.pending = nil
	for _, p := range pending {
		n.Step(now, p.from, p.msg)
	}
}

func (n *Node) onJoinReject(now time.Duration, from core.NodeID) {
	if n.joined || from == 0 {
		return
	}
	// Our point coincides with the owner's: draw a new virtual coordinate
	// (the last dimension, 003 §4.2) and try again through the same contact.
	n.point[len(n.point)-1] = n.rng.Uint32()
	n.sendJoin()
}

// Leave makes the node depart gracefully (002 §4.2.2): its take-over nodes
// — the neighbors across the plane of its last split — receive its zone,
// neighbor list and last split and absorb it; its other neighbors drop it.
// Afterwards the node ignores everything.
func (n *Node) Leave(now time.Duration) {
	if n.left {
		return
	}
	if n.joined {
		all := make([]*wire.NodeInfo, len(n.nbrs))
		for i, nb := range n.nbrs {
			all[i] = neighborInfo(nb)
		}
		msg := &wire.Leave{Self: n.info(), Neighbors: all, LastSplit: n.lastSplit()}
		for _, nb := range n.nbrs {
			n.send(nb.ID, msg)
		}
	}
	n.joined, n.left = false, true
	n.pending = nil
}

// Left reports whether the node has departed.
func (n *Node) Left() bool { return n.left }

func (n *Node) onLeave(now time.Duration, from core.NodeID, m *wire.Leave) {
	if !n.joined || !n.validSender(from, m.Self) {
		return
	}
	n.status.LeavesSeen++
	z, _ := zoneFromWire(m.Self.Zone, n.cfg.Dims)
	x, _ := extrasFromWire(m.Self.Extra, n.cfg.Dims)
	if !n.absorb(now, from, z, m.LastSplit, m.Neighbors) {
		n.forget(from)
	}
	if n.joined {
		n.await(now, z, x, m.Neighbors)
	}
}
