// Greedy routing towards a point (003 §4.2).

package overlay

import (
	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
)

// routeProgress records how close the message got: it returns false (and
// counts a drop) once the message made too many hops, or too many hops that
// did not bring it closer than the best zone it visited.
func (n *Node) routeProgress(p can.Point, hops uint32, best *float64, detours *uint32) bool {
	d := can.Dist2(n.zone, n.extra, p)
	if hops > 0 && d >= *best {
		n.status.RouteDetours++
		*detours++
	} else {
		*best = d
	}
	if int(hops) >= n.cfg.MaxHops || int(*detours) > n.cfg.MaxDetours {
		n.status.RouteDrops++
		return false
	}
	return true
}

// Owns reports whether p lies in one of our zones: we are the owner of
// whatever maps to p (a job's point, 003 §4.1).
func (n *Node) Owns(p can.Point) bool {
	return n.joined && (n.zone.Contains(p) || containing(n.extra, p) >= 0)
}

// NextHop is greedy CAN routing for messages other cores route (jobs): the
// neighbor whose zones are nearest to p. It applies the same hop and
// detour limits as JOIN routing, updating the message's counters; 0 means
// drop the message (counted in RouteDrops).
func (n *Node) NextHop(p can.Point, hops *uint32, best *float64, detours *uint32) core.NodeID {
	if !n.joined || len(p) != n.cfg.Dims {
		// Not a member (joining, or joining again after losing a zone
		// conflict): no zone to measure progress from.
		n.status.RouteDrops++
		return 0
	}
	if !n.routeProgress(p, *hops, best, detours) {
		return 0
	}
	return n.nextHop(p, hops)
}

// nextHop picks the neighbor nearest to p (greedy CAN routing:
// can.Zone.Dist2) and counts the hop; 0 when we know no neighbor.
func (n *Node) nextHop(p can.Point, hops *uint32) core.NodeID {
	var next *Neighbor
	bestD := 0.0
	for i, nb := range n.nbrs {
		z, extra := n.box(i)
		d := z.Dist2(p)
		if extra {
			d = can.Dist2(nb.Zone, nb.Extra, p)
		}
		if next == nil || d < bestD {
			next, bestD = nb, d
		}
	}
	if next == nil {
		n.status.RouteDrops++
		return 0
	}
	if bestD >= can.Dist2(n.zone, n.extra, p) {
		n.status.RouteNoProgress++
	}
	*hops++
	n.status.RouteForwards++
	return next.ID
}

// route forwards a routed message one hop towards p (greedy CAN routing:
// the neighbor whose zone is nearest to p, can.Zone.Dist2).
func (n *Node) route(p can.Point, m proto.Message, hops *uint32) {
	if next := n.nextHop(p, hops); next != 0 {
		n.send(next, m)
	}
}
