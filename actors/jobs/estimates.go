// Our estimates of the neighbors' loads (003 §4.4; 000 §IV-B; 002
// §3.1.4): what each neighbor's last heartbeat carried, adjusted by what
// we sent it since.

package jobs

import (
	"cmp"
	"slices"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// estimate is our view of one neighbor's load: a copy of the load its
// last heartbeat carried (heard, the overlay's, which we never modify)
// that we adjust for the jobs we send it (noteSent), the Balloons it
// reported that we take (assignBalloon) and the offers it refuses
// (onReply), until a newer heartbeat replaces heard.
type estimate struct {
	heard *wire.Load
	l     *wire.Load
}

// loadOf is our estimate of neighbor nb's load, nil until one of its
// heartbeats carried a load. The same heartbeat gives the same estimate,
// with the adjustments made since.
func (n *Node) loadOf(nb *overlay.Neighbor) *wire.Load {
	if nb.Load == nil {
		return nil
	}
	e, ok := n.est[nb.ID]
	if !ok || e.heard != nb.Load {
		e = estimate{heard: nb.Load, l: copyLoad(nb.Load)}
		n.est[nb.ID] = e
	}
	return e.l
}

// forgetEstimates drops the estimates of nodes no longer in the neighbor
// table nbs (sorted by ID): an entry the overlay drops never comes back
// with the same heartbeat.
func (n *Node) forgetEstimates(nbs []overlay.Neighbor) {
	for id := range n.est {
		if _, ok := slices.BinarySearchFunc(nbs, id, func(nb overlay.Neighbor, id core.NodeID) int { return cmp.Compare(nb.ID, id) }); !ok {
			delete(n.est, id)
		}
	}
}

// copyLoad copies a heartbeat's load for the changes we make to our
// estimate: the values, Residual and Balloons (changed in place) are
// copied; Point, Agg and Acid, which we only read, are shared.
func copyLoad(l *wire.Load) *wire.Load {
	return &wire.Load{
		Queue: l.Queue, Free: l.Free, Speed: l.Speed, Point: l.Point, Agg: l.Agg,
		Cores: l.Cores, Demand: l.Demand, Residual: slices.Clone(l.Residual), Waiting: l.Waiting, Nbc: l.Nbc,
		NormLoad: l.NormLoad, Balloons: slices.Clone(l.Balloons), NearWaiting: l.NearWaiting,
		Combo: l.Combo, Acid: l.Acid, Ces: copyCELoads(l.Ces),
	}
}
