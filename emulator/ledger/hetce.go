package ledger

import (
	"cmp"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/wire"
)

// nodeCEs is what the global view knows of a node's computing elements
// (002 §4.1): the CEs its point gives and each one's current load.
type nodeCEs struct {
	ces   []hetce.CE
	loads []hetce.Load
}

func newNodeCEs(m jobs.CEModel, p can.Point) nodeCEs {
	ces := m.CEs(p)
	return nodeCEs{ces: ces, loads: make([]hetce.Load, len(ces))}
}

// SetCEs makes Pick cent-het, the central baseline that knows CEs (002
// §4.3.1's "central", here aware of every node's CEs): call it before any
// NodeJoined.
func (l *Ledger) SetCEs(m jobs.CEModel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ces = m
}

// CELoad records the load of each of a node's CEs (with QueueLen and
// Residual; peer.CESink).
func (l *Ledger) CELoad(id core.NodeID, loads []hetce.Load) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nd, ok := l.nodes[id]; ok && len(loads) == len(nd.het.loads) {
		copy(nd.het.loads, loads)
	}
}

// pickHet is cent-het: the greedy online central pick with the current
// global view of every live capable node's CEs, at no message cost — 002
// Algorithm 2's choice made over all nodes instead of a neighborhood: an
// acceptable node (its dominant CE can start the job now), a free node
// first, the fastest dominant CE first; with none acceptable, the least
// score (002 Eqs 4.1, 4.2), then the fastest. The chosen node's CE load
// (and residual) is counted at once, so the next pick sees it before the
// job arrives. Called with l.mu held.
func (l *Ledger) pickHet(job *wire.JobSpec) (core.NodeID, bool) {
	c := l.ces.Dominant(job.Req)
	var d jobs.Vec
	if l.demand != nil && c == hetce.CPU {
		d = l.demand(job.Req) // a GPU job takes no shared resource (jobs.gpuDemand)
	}
	var acc, any hetce.Candidate
	foundAcc, foundAny := false, false
	for id, nd := range l.nodes { // the comparisons are total: order does not matter
		if c >= len(nd.het.ces) || !can.Capable(nd.point, job.Req) || !categorical.MatchesCombo(nd.combo, job.Cid) || (l.alive != nil && !l.alive(id)) {
			continue
		}
		ce, ld := nd.het.ces[c], nd.het.loads[c]
		free := nd.queue == 0
		x := hetce.Candidate{ID: uint64(id), Free: free, Speed: ce.Speed, Score: hetce.Score(ce, ld),
			Acceptable: hetce.Acceptable(ce, ld, nd.hasRes && jobs.Fits(d, nd.residual))}
		if x.Acceptable {
			if b, _ := hetce.PickAcceptable([]hetce.Candidate{x, acc}); !foundAcc || b.ID == x.ID {
				acc, foundAcc = x, true
			}
			continue
		}
		if !foundAny || cmp.Or(cmp.Compare(x.Score, any.Score), cmp.Compare(any.Speed, x.Speed), cmp.Compare(x.ID, any.ID)) < 0 {
			any, foundAny = x, true
		}
	}
	best := any
	switch {
	case foundAcc:
		best = acc
	case !foundAny:
		return 0, false
	}
	nd := l.nodes[core.NodeID(best.ID)]
	nd.queue++
	ld := &nd.het.loads[c]
	ld.Queue++
	if nd.het.ces[c].Dedicated {
		ld.Required++
	} else {
		ld.Required += max(d[jobs.ResCores], 1)
	}
	if best.Acceptable {
		nd.residual = nd.residual.Sub(d)
	} else {
		ld.Waiting++
	}
	return core.NodeID(best.ID), true
}
