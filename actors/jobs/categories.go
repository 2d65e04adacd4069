// Categorical resources in matchmaking (002 §2.4, ch. 5): the capability
// predicate with categories, this node's ACID (002 Eq 5.1) and the CID
// filter on pushes and climbs (002 Algorithm 3).

package jobs

import (
	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// capable is the capability predicate: a node at point with combination
// combo can run a job requiring req with CID cid iff it dominates req in
// every resource dimension (003 §4.2, can.Capable) and its categorical
// values are acceptable (categorical.MatchesCombo, 002 §5.1.3).
func capable(point []uint32, combo uint32, req []uint32, cid []uint64) bool {
	return can.Capable(point, req) && categorical.MatchesCombo(combo, cid)
}

// ownCID is this node's CID: the bit of its combination.
func (n *Node) ownCID() categorical.Set {
	c := categorical.NewSet(int(n.cfg.Combo))
	c.Add(int(n.cfg.Combo - 1))
	return c
}

// aggregateACID is AC(n) (002 Eq 5.1) from our neighbors' last heartbeats:
// our CID OR the ACIDs of our upper neighbors along every dimension.
func (n *Node) aggregateACID(own can.Zone, nbs []overlay.Neighbor) categorical.Set {
	var ups []categorical.Upper
	for _, nb := range nbs {
		if l := n.loadOf(&nb); l != nil && len(l.Acid) > 0 {
			ups = append(ups, categorical.Upper{Zone: nb.Zone, ACID: l.Acid})
		}
	}
	return categorical.ACID(own, n.ownCID(), ups)
}

// ACID is this node's aggregated CID as its last heartbeat carried it (nil
// without categorical resources): what the oracle compares with the truth.
func (n *Node) ACID() categorical.Set { return n.acid }

// towards reports whether a job with CID cid may be pushed or climb
// towards a neighbor with zone z whose heartbeat carried l: under
// CategoricalCID, its ACID holds a combination the job accepts (002 Eq
// 5.1, Algorithm 3 lines 11–13); under CategoricalSubCAN, its zone meets
// the sub-CAN of a combination the job accepts along the transform
// dimension (002 §2.4: matchmaking stays inside the job's sub-CANs; a
// zone over an unoccupied sub-CAN counts — its owner stands for the
// virtual peer there). It is always true under CategoricalNone and for
// jobs without a categorical constraint.
func (n *Node) towards(z can.Zone, l *wire.Load, cid []uint64) bool {
	if len(cid) == 0 {
		return true
	}
	switch n.cfg.Categorical {
	case CategoricalCID:
		return l != nil && categorical.Matches(l.Acid, cid)
	case CategoricalSubCAN:
		return inSubCANs(n.cfg.SubCAN, z, cid)
	}
	return true
}

// inSubCANs reports whether zone z meets a sub-CAN of a combination a job
// with CID cid accepts (002 §2.4): its range along T, the last dimension,
// overlaps one of the job's intervals.
func inSubCANs(t *categorical.Transform, z can.Zone, cid []uint64) bool {
	last := len(z.Lo) - 1
	if last < 0 {
		return false
	}
	return t.Overlaps(z.Lo[last], z.Hi[last], cid)
}
