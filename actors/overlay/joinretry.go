// Retrying a join whose JOIN or JOIN-ACCEPT was lost (gridbed's reading:
// 003 §4.1 describes the join, not what happens when one of its messages
// is lost).
//
// A lost JOIN is simple: nobody split, so the joiner's retry (after
// Config.JoinRetry, doubling up to JoinTimeout, through a new contact)
// travels to the owner of its point as the first did. A lost JOIN-ACCEPT
// is not: the owner has split and given the joiner its part, and its
// neighbors, told by the owner's zone update, now route the joiner's
// point to the joiner itself — a retried JOIN would come back to the
// joiner, which is not a member and cannot answer it, until the owner's
// failure detector takes the silent joiner's zone back (FailAfter
// periods). So the owner keeps every JOIN-ACCEPT it sent until it hears
// from the joiner, and a node about to forward a JOIN to the joiner who
// sent it hands it instead to the owner that introduced the joiner (a
// zone update names the owner as its sender), which sends its JOIN-ACCEPT
// again.

package overlay

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// sentAccept is a JOIN-ACCEPT kept until its joiner speaks.
type sentAccept struct {
	msg    *wire.JoinAccept
	at     time.Duration
	resent int
}

// maxResends bounds how often one JOIN-ACCEPT is sent again: a joiner
// whose JOIN-ACCEPTs are all lost is left to the failure detector (its
// zone goes back to us) rather than answered for ever.
const maxResends = 4

// viaEntry is the owner that introduced a joiner we have not heard yet.
type viaEntry struct {
	owner core.NodeID
	at    time.Duration
}

// keepAccept records the JOIN-ACCEPT sent to joiner.
func (n *Node) keepAccept(now time.Duration, joiner core.NodeID, m *wire.JoinAccept) {
	if n.accepted == nil {
		n.accepted = map[core.NodeID]sentAccept{}
	}
	n.accepted[joiner] = sentAccept{msg: m, at: now}
}

// noteJoinVia records that owner introduced joiner (a fresh zone, version
// 1, in its zone update's Others) before we heard from joiner itself.
func (n *Node) noteJoinVia(now time.Duration, owner core.NodeID, info *wire.NodeInfo) {
	j := core.NodeID(info.GetId())
	if info.GetVersion() != 1 || j == 0 || j == n.id || owner == j {
		return
	}
	if i, ok := n.find(j); !ok || n.nbrs[i].Heard {
		return
	}
	if n.joinVia == nil {
		n.joinVia = map[core.NodeID]viaEntry{}
	}
	n.joinVia[j] = viaEntry{owner: owner, at: now}
}

// heardFrom forgets what was kept for a joiner once it speaks: it is a
// member, and its own messages say where it is.
func (n *Node) heardFrom(from core.NodeID) {
	delete(n.accepted, from)
	delete(n.joinVia, from)
}

// forgetJoins drops what was kept for joiners not heard from within two
// join timeouts: the joiner crashed, or its zone went back to its owner
// (take-over) and a retry is a new join.
func (n *Node) forgetJoins(now time.Duration) {
	limit := 2 * n.cfg.JoinTimeout
	for j, a := range n.accepted {
		if now-a.at > limit {
			delete(n.accepted, j)
		}
	}
	for j, v := range n.joinVia {
		if now-v.at > limit {
			delete(n.joinVia, j)
		}
	}
}

// retriedJoin handles a JOIN of joiner that this node would forward to
// joiner itself (the joiner's point lies in the zone we know it has):
// our JOIN-ACCEPT to it is sent again, or the JOIN goes to the owner that
// introduced it. False: neither is known; forward it as any other.
func (n *Node) retriedJoin(joiner core.NodeID, m *wire.Join) bool {
	// What was kept holds only while our table still knows the joiner at
	// the zone it was given (version 1), and for at most maxResends: a
	// joiner that joined, lost its zone and joins again is a new join.
	i, known := n.find(joiner)
	given := known && n.nbrs[i].Version == 1
	if a, ok := n.accepted[joiner]; ok {
		z, zok := zoneFromWire(a.msg.Zone, n.cfg.Dims)
		if !given || !zok || !n.nbrs[i].Zone.Equal(z) || a.resent >= maxResends {
			delete(n.accepted, joiner)
			return false
		}
		a.resent++
		n.accepted[joiner] = a
		again := proto.Clone(a.msg).(*wire.JoinAccept)
		if len(again.Neighbors) > 0 {
			again.Neighbors[0] = n.info() // ourselves as we are now
		}
		n.status.AcceptsResent++
		n.send(joiner, again)
		return true
	}
	if v, ok := n.joinVia[joiner]; ok && (!given || n.nbrs[i].Heard) {
		delete(n.joinVia, joiner)
	} else if ok && v.owner != n.id {
		// A hop like any other: the hop and detour limits bound a JOIN
		// handed back and forth between two nodes that each name the
		// other as the joiner's owner.
		m.Hops++
		n.status.RouteForwards++
		n.send(v.owner, m)
		return true
	}
	return false
}

// nextJoinWait is the wait for a JOIN-ACCEPT of the attempt starting now:
// JoinRetry first, then twice the previous, at most JoinTimeout.
func (n *Node) nextJoinWait() time.Duration {
	switch {
	case n.version > 0:
		// Joining again (a rejoin after a lost zone conflict or a
		// failure): the join timeout, as before.
		n.joinWait = n.cfg.JoinTimeout
	case n.joinWait == 0:
		n.joinWait = n.cfg.JoinRetry
	default:
		n.joinWait = min(2*n.joinWait, n.cfg.JoinTimeout)
	}
	return n.joinWait
}
