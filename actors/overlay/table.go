// The neighbor table: learning, updating and dropping neighbors.

package overlay

import (
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// tombstone remembers a dropped neighbor's version, and our own zone
// version when we dropped it: once our zone changes (a take-over grows it)
// the old verdict "does not abut" no longer holds.
type tombstone struct {
	version uint64
	at      time.Duration
	ours    uint64
}

// tombstoneSlack is how many heartbeat periods beyond FailAfter a dropped
// node's version is remembered: long enough for stale copies to die out of
// every table (entries not heard from for FailAfter periods are dropped).
const tombstoneSlack = 2

// departed is the tombstone version of a node that left or failed: no news
// of it can bring it back.
const departed = ^uint64(0)

// source says where information about a node comes from.
type source uint8

const (
	fromSelf  source = iota // the node itself (heartbeat, zone update)
	fromJoin                // an introduction: the owner's table at a join, a split notice
	fromRelay               // another node's heartbeat or update: a repair
)

// learn merges what a message says about one node into the neighbor table:
// newer zone versions win; a node whose zone abuts ours becomes (or stays) a
// neighbor, one that no longer abuts is dropped. It reports whether the node
// is a neighbor afterwards.
func (n *Node) learn(now time.Duration, info *wire.NodeInfo, src source) bool {
	direct := src == fromSelf
	id := core.NodeID(info.GetId())
	if id == 0 || id == n.id {
		return false
	}
	// A view of the wire zone: copied only when it is kept.
	z := can.Zone{Lo: info.GetZone().GetLo(), Hi: info.GetZone().GetHi()}
	if !z.Valid(n.cfg.Dims) {
		n.status.BadMessages++
		return false
	}
	x, ok := extrasFromWire(info.GetExtra(), n.cfg.Dims)
	if !ok {
		n.status.BadMessages++
		return false
	}
	i, known := n.find(id)
	if known {
		nb := n.nbrs[i]
		if direct {
			nb.LastHeard, nb.Heard = now, true
		}
		if info.Version <= nb.Version {
			return true // nothing new; table entries always abut our zone
		}
		nb.Zone, nb.Extra, nb.Version = z.Clone(), cloneZones(x), info.Version
		n.setBox(i)
		n.touch()
		if n.conflict(now, info, nb.Zone, nb.Extra) {
			return false
		}
		n.settleClaims(now, info, nb.Zone, nb.Extra)
		if i, known = n.find(id); known && !n.abuts(nb.Zone, nb.Extra) {
			n.gone[id] = tombstone{nb.Version, now, n.version}
			n.deleteAt(i)
			n.touch()
			return false
		}
		if known {
			n.introduceRivals(nb)
		}
		return known
	}
	if t, ok := n.gone[id]; ok && !direct {
		if t.version == departed || (info.Version <= t.version && t.ours == n.version) {
			return false // a departed node, or older news of a node we dropped
		}
		delete(n.gone, id)
		n.touch()
	}
	if n.conflict(now, info, z, x) {
		return false
	}
	told := n.settleClaims(now, info, z, x)
	if !n.abuts(z, x) {
		return false
	}
	nb := &Neighbor{ID: id, Zone: z.Clone(), Extra: cloneZones(x), Version: info.Version, LastHeard: now, Heard: direct}
	n.upsert(nb)
	n.introduceRivals(nb)
	if src == fromRelay && !told {
		// A repaired link (002 Fig 4.1): the other side may not know us
		// either, so we introduce ourselves at once instead of at our next
		// heartbeat (unless QuietRepairs).
		n.status.LinksLearned++
	}
	if src == fromRelay && !told && !n.cfg.QuietRepairs {
		n.send(id, &wire.ZoneUpdate{Self: n.info(), LastSplit: n.lastSplit()})
	}
	return true
}

// introduceRivals tells neighbor nb and any other neighbor whose zones
// overlap nb's about each other: two claims on the same orphan whose
// claimants do not know each other, or two owners of the same space after
// a partition (or news of which one of the two is stale). Each then tells
// the other its zones directly, and a real overlap is settled
// (settleClaims, conflict). Without this, compact heartbeats — which relay
// no lists to most neighbors — could leave such rivals apart for good.
func (n *Node) introduceRivals(nb *Neighbor) {
	for j, o := range n.nbrs {
		if o == nb {
			continue
		}
		if z, extra := n.box(j); !extra && len(nb.Extra) == 0 {
			if !can.Overlaps(z, nb.Zone) {
				continue
			}
		} else if !overlapAny(o, nb) {
			continue
		}
		n.send(nb.ID, &wire.ZoneUpdate{Self: n.info(), Others: []*wire.NodeInfo{neighborInfo(o)}, LastSplit: n.lastSplit()})
		n.send(o.ID, &wire.ZoneUpdate{Self: n.info(), Others: []*wire.NodeInfo{neighborInfo(nb)}, LastSplit: n.lastSplit()})
	}
}

// overlapsAnyZone reports whether w overlaps z or one of x.
func overlapsAnyZone(w, z can.Zone, x []can.Zone) bool {
	if can.Overlaps(w, z) {
		return true
	}
	for _, e := range x {
		if can.Overlaps(w, e) {
			return true
		}
	}
	return false
}

// overlapAny reports whether any zone of a overlaps any zone of b.
func overlapAny(a, b *Neighbor) bool {
	if overlapsAnyZone(a.Zone, b.Zone, b.Extra) {
		return true
	}
	for _, e := range a.Extra {
		if overlapsAnyZone(e, b.Zone, b.Extra) {
			return true
		}
	}
	return false
}

// find looks id up in the neighbor table: its index, and whether it is there.
func (n *Node) find(id core.NodeID) (int, bool) {
	return slices.BinarySearch(n.ids, id)
}

// deleteAt drops the table's i-th entry.
func (n *Node) deleteAt(i int) {
	n.nbrs = slices.Delete(n.nbrs, i, i+1)
	n.ids = slices.Delete(n.ids, i, i+1)
	w := n.stride()
	n.boxes = slices.Delete(n.boxes, i*w, (i+1)*w)
}

// reindex rebuilds ids and boxes after the table was filtered in place.
func (n *Node) reindex() {
	n.ids, n.boxes = n.ids[:0], n.boxes[:0]
	for _, nb := range n.nbrs {
		n.ids = append(n.ids, nb.ID)
		n.boxes = appendBox(n.boxes, nb)
	}
}

// stride is the length of one neighbor's record in boxes.
func (n *Node) stride() int { return 2*n.cfg.Dims + 1 }

// appendBox appends nb's record for boxes.
func appendBox(dst []uint64, nb *Neighbor) []uint64 {
	dst = append(dst, nb.Zone.Lo...)
	dst = append(dst, nb.Zone.Hi...)
	flag := uint64(0)
	if len(nb.Extra) > 0 {
		flag = 1
	}
	return append(dst, flag)
}

// setBox rewrites nbrs[i]'s record after its zones changed.
func (n *Node) setBox(i int) {
	w := n.stride()
	appendBox(n.boxes[i*w:i*w], n.nbrs[i])
}

// box is nbrs[i]'s own zone, a view into boxes, and whether it holds
// extra zones (then its Neighbor entry has them).
func (n *Node) box(i int) (can.Zone, bool) {
	d, w := n.cfg.Dims, n.stride()
	b := n.boxes[i*w : (i+1)*w : (i+1)*w]
	return can.Zone{Lo: b[:d:d], Hi: b[d : 2*d : 2*d]}, b[2*d] != 0
}

func (n *Node) upsert(nb *Neighbor) {
	n.touch()
	i, ok := n.find(nb.ID)
	if ok {
		n.nbrs[i] = nb
		n.setBox(i)
		return
	}
	n.nbrs = slices.Insert(n.nbrs, i, nb)
	n.ids = slices.Insert(n.ids, i, nb.ID)
	w := n.stride()
	n.boxes = slices.Insert(n.boxes, i*w, make([]uint64, w)...)
	n.setBox(i)
}

// forget drops a departed node from the table for good.
func (n *Node) forget(id core.NodeID) {
	if i, ok := n.find(id); ok {
		n.deleteAt(i)
	}
	n.gone[id] = tombstone{departed, n.nextBeat, n.version}
	n.touch()
}
