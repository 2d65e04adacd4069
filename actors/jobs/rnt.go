// The job core's side of the Rendezvous Node Tree (003 §5.1,
// SchemeRNT): the owner hands a job's matchmaking to the tree, and the
// tree asks each node it visits for its offer.

package jobs

import (
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// Searcher runs a job's matchmaking outside the job core: under SchemeRNT
// the Rendezvous Node Tree (actors/rnt), which ends it with a JobAssign
// to the chosen run node (or a JobStatus failing the job to its client
// and owner).
type Searcher interface {
	Search(now time.Duration, job *wire.JobSpec, owner core.NodeID, epoch, hops uint32)
}

// SetSearcher gives the node the matchmaker SchemeRNT hands jobs to.
func (n *Node) SetSearcher(s Searcher) { n.searcher = s }

// Offer is this node as a candidate run node for a job requiring req, as
// 003 §5.1's search counts it: capable (003 §4.2's rule) or not; its
// utilization — queue length, or the cores its jobs require per core
// (002 Eq 3.4) —, whether it could start the job now, and its CPU speed.
// The same figures candidates uses for the node itself.
func (n *Node) Offer(req []uint32) (util float64, free bool, speed float64, ok bool) {
	if n.left || len(req) != len(n.view.Point()) || !capable(n.view.Point(), n.cfg.Combo, req, nil) {
		return 0, false, 0, false
	}
	d := n.cfg.Res.Demand(req)
	util = float64(len(n.queue))
	if dem := n.coresDemand(); n.capacity[ResCores] > 1 || dem > 0 {
		util = dem / n.capacity[ResCores]
	}
	free = Fits(d.clamp(n.capacity), n.residual()) && len(n.queue) == n.running
	return util, free, n.cfg.Speed, true
}
