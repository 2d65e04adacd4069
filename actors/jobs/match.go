// Matchmaking (003 §4.2-4.4): CAN's least-loaded capable node, CAN-P's
// pushes along the aggregated load, and CENT's central pick.

package jobs

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/wire"
)

// match starts (or restarts) matchmaking for an owned job under the
// configured scheme.
func (n *Node) match(now time.Duration, o *owned, hops uint32) {
	// The copies it replaces are cancelled once the new match is under
	// way: a run node assigned the job again keeps its copy (onAssign
	// merges it into the new epoch) and ignores the older epoch's cancel.
	defer n.cancelCopies(o.spec.Id, n.abandon(o))
	o.epoch++
	o.run, o.assigned = 0, 0
	o.since = now
	if n.multiCoreUnderMP(o.spec.Req) {
		n.fail(o, ReasonMultiCore)
		return
	}
	if n.cfg.Scheme == SchemeRNT && n.searcher != nil {
		n.searcher.Search(now, o.spec, n.self, o.epoch, hops) // 003 §5.1 (rnt.go)
		return
	}
	if n.cfg.Scheme.central() {
		r := core.NodeID(0)
		o.central = false
		if q, ok := n.central.(CentralQueue); ok && n.cfg.Scheme == SchemeCENTQueue {
			var capable bool
			if r, capable = q.PickNow(o.spec); r == 0 && capable {
				o.central = true // waits in the central queue
				n.arm(now)
				return
			}
		} else if n.central != nil {
			r = n.central.Pick(o.spec)
		}
		if r == 0 {
			n.fail(o, ReasonNoCapableNode)
			return
		}
		n.assign(now, r, &wire.JobAssign{Job: o.spec, Owner: uint64(n.self), Epoch: o.epoch, Hops: hops})
		return
	}
	n.matchStep(now, &wire.JobPush{Job: o.spec, Owner: uint64(n.self), Epoch: o.epoch, Hops: hops})
}

// multiCoreUnderMP reports a job MP cannot run (002 §3.3: "nor can MP
// accommodate multi-threaded jobs that require multiple cores"): under
// SchemeMP, one requiring more than one core.
func (n *Node) multiCoreUnderMP(req []uint32) bool {
	return n.cfg.Scheme == SchemeMP && n.cfg.Res.Demand(req)[ResCores] > 1
}

// candidate is a possible run node seen from here.
type candidate struct {
	id    core.NodeID
	util  float64 // queue length, or required over available cores (002 Eq 3.4)
	free  bool    // it can start the job now
	speed float64
	l     *wire.Load // our estimate of its load (estimates.go); nil for ourselves
}

// candidates lists the capable nodes among ourselves and our neighbors,
// from the load our neighbors' heartbeats carried (stale by up to a
// period, as in the papers): capable of the job's requirement req and
// CID cid (002 Algorithm 3 line 6).
func (n *Node) candidates(req []uint32, cid []uint64) []candidate {
	var cs []candidate
	d := n.cfg.Res.Demand(req)
	if capable(n.view.Point(), n.cfg.Combo, req, cid) {
		dem := n.coresDemand()
		c := candidate{id: n.self, util: float64(len(n.queue)), free: Fits(d.clamp(n.capacity), n.residual()) && len(n.queue) == n.running, speed: n.cfg.Speed}
		if n.capacity[ResCores] > 1 || dem > 0 {
			c.util = dem / n.capacity[ResCores]
		}
		cs = append(cs, c)
	}
	fresh, _ := n.central.(FreshLoad)
	if n.cfg.LoadView != LoadViewOracle {
		fresh = nil
	}
	for _, nb := range n.view.Neighbors() {
		if l := n.loadOf(&nb); l != nil && capable(l.Point, l.Combo, req, cid) {
			c := candidate{id: nb.ID, util: loadUtil(l), free: loadFree(l, d), speed: float64(l.Speed), l: l}
			if fresh != nil {
				if q, cores, ok := fresh.NodeLoad(nb.ID); ok {
					c.util, c.free = float64(q)/float64(max(cores, 1)), q < cores
				}
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// loadUtil is a neighbor's utilization as its heartbeat reported it: the
// cores its jobs require per core it has (002 Eq 3.4), or its queue length
// from a peer that reports no cores.
func loadUtil(l *wire.Load) float64 {
	if l.Cores > 0 {
		return float64(l.Demand) / float64(l.Cores)
	}
	return float64(l.Queue)
}

// loadFree reports whether a neighbor could start a job demanding d now,
// as its heartbeat reported it: nothing waiting and residual resources
// for the job (a node that reports none: a free core).
func loadFree(l *wire.Load, d Vec) bool {
	if len(l.Residual) != numRes {
		return l.Free > 0
	}
	if l.Waiting > 0 {
		return false
	}
	r := vecOf(l.Residual)
	cp := Vec{float64(l.Cores), math.Inf(1), math.Inf(1)}
	return Fits(d.clamp(cp), r)
}

// matchStep is one matchmaking step at this node (the owner, or a node a
// job was pushed to):
//   - a free capable node, the fastest, ends the search (003 §4.4);
//   - CAN: the least loaded capable node (003 §4.2);
//   - CAN-P: push towards the upper neighbor minimizing F_d (Eq 3) unless
//     the probabilistic stop (Eq 4) ends the push, then take the
//     candidate with the least F(C) (Eq 5) here or remembered on the way.
//
// With no capable node in sight the job climbs towards nodes that are.
func (n *Node) matchStep(now time.Duration, m *wire.JobPush) {
	if n.cfg.Scheme == SchemeCANHet {
		n.matchStepHet(now, m) // 002 Algorithm 2
		return
	}
	cs := n.candidates(m.Job.Req, m.Job.Cid)
	var fastestFree *candidate
	for i := range cs {
		c := &cs[i]
		if c.free && (fastestFree == nil || c.speed > fastestFree.speed || c.speed == fastestFree.speed && c.id < fastestFree.id) {
			fastestFree = c
		}
	}
	if fastestFree != nil {
		n.assignTo(now, *fastestFree, m)
		return
	}
	if n.cfg.Scheme == SchemeCAN {
		if b, ok := n.bestBalloon(m.Job.Req, m.Job.Cid); ok {
			n.assignBalloon(now, b, m)
			return
		}
		if len(cs) > 0 {
			best := slices.MinFunc(cs, func(a, b candidate) int {
				return cmp.Or(cmp.Compare(a.util, b.util), cmp.Compare(b.speed, a.speed), cmp.Compare(a.id, b.id))
			})
			if n.dualCAN() {
				// Dual-CAN (002 Algorithm 1): the Secondary CAN first, the
				// least loaded candidate here as the fallback.
				m.Best = &wire.Candidate{Id: uint64(best.id), Score: best.util}
				n.searchSecondary(now, m)
				return
			}
			n.assignTo(now, best, m)
			return
		}
		n.climb(now, m)
		return
	}
	// CAN-P: remember the best candidate by Eq 5 along the path.
	for _, c := range cs {
		if s := load.Score(c.util, c.speed); m.Best == nil || s < m.Best.Score {
			m.Best = &wire.Candidate{Id: uint64(c.id), Score: s}
		}
	}
	target, tl, td := n.pushTarget(m.Job.Cid)
	limit := int(m.Pushes) >= n.cfg.MaxPushHops
	stop := target == 0 || limit
	if !stop && m.Best != nil {
		nodes := 0.0
		switch {
		case n.cfg.StopNodes == StopNodesTarget:
			nodes = 1 + aggOf(tl.Agg[td]).Nodes
		case td < len(n.ai):
			nodes = n.ai[td].Nodes
		}
		stop = n.rng.Float64() < load.StopProbability(nodes, n.cfg.StoppingFactor)
	}
	if stop {
		// The Balloon model: a Balloon here or at a neighbor is preferred
		// (002 §3.1.4), it starts the job at once.
		if b, ok := n.bestBalloon(m.Job.Req, m.Job.Cid); ok {
			n.assignBalloon(now, b, m)
			return
		}
		// Dual-CAN: search the Secondary CAN, the best candidate of the
		// Primary CAN as the fallback (002 Algorithm 1 lines 3–10).
		if n.dualCAN() && m.Best != nil {
			n.searchSecondary(now, m)
			return
		}
	}
	if limit && m.Best == nil {
		n.failMatch(now, m, ReasonPushLimit)
		return
	}
	if stop && m.Best != nil {
		id := core.NodeID(m.Best.Id)
		c := candidate{id: id}
		for _, x := range cs {
			if x.id == id {
				c = x
			}
		}
		n.assignTo(now, c, m)
		return
	}
	if target == 0 {
		n.climb(now, m)
		return
	}
	n.push(target, m)
}

// pushTarget is the upper neighbor (in any dimension) minimizing F_d(u) =
// AI_d(u).queue / AI_d(u).nodes² (003 Eq 3) — with multi-core nodes
// required cores over cores² (002 Eq 3.2) — with our estimate of its
// load and that dimension; 0 when no upper neighbor has nodes above it.
// Under CategoricalCID only upper neighbors whose ACID holds a combination
// the job (CID cid) accepts are considered (002 Algorithm 3 lines 10–13:
// the next target by the objective until one has capable nodes above).
// Under CategoricalSubCAN only upper neighbors whose zone meets one of the
// job's sub-CANs are (002 §2.4: pushing stays inside them).
func (n *Node) pushTarget(cid []uint64) (core.NodeID, *wire.Load, int) {
	own := n.view.Zone()
	var best core.NodeID
	var bestL *wire.Load
	bestF, bestD := math.Inf(1), -1
	for _, nb := range n.view.Neighbors() {
		l := n.loadOf(&nb)
		if l == nil {
			continue
		}
		d, upper, ok := can.Abut(own, nb.Zone)
		if !ok || !upper || d >= len(l.Agg) || !n.towards(nb.Zone, l, cid) {
			continue
		}
		if f := load.Objective(aggOf(l.Agg[d])); f < bestF {
			best, bestL, bestF, bestD = nb.ID, l, f, d
		}
	}
	return best, bestL, bestD
}

// climb moves a job no capable node in sight can run towards one that
// can: to the upper neighbor along a dimension where our point falls
// short of the requirement (or any upper neighbor). At the upper edge of
// the space with nothing capable, the job fails: no node can run it.
// Under CategoricalCID it climbs only towards upper neighbors whose ACID
// holds a combination the job accepts, or — a gridbed choice — whose
// heartbeat has not told us yet; with none the ACIDs say no capable node
// lies above, and the job fails (002 §5.2.4: stale ACIDs lose
// completeness).
// Under CategoricalSubCAN it climbs only towards upper neighbors whose
// zone meets one of the job's sub-CANs (002 §2.4).
func (n *Node) climb(now time.Duration, m *wire.JobPush) {
	own, pt := n.view.Zone(), n.view.Point()
	var next core.NodeID
	short, known := false, false
	for _, nb := range n.view.Neighbors() {
		d, upper, ok := can.Abut(own, nb.Zone)
		if !ok || !upper {
			continue
		}
		k := true // a neighbor whose ACID matches (or no filter)
		switch {
		case len(m.Job.Cid) == 0:
		case n.cfg.Categorical == CategoricalCID:
			l := n.loadOf(&nb)
			if l != nil && !n.towards(nb.Zone, l, m.Job.Cid) {
				continue
			}
			k = l != nil
		case n.cfg.Categorical == CategoricalSubCAN && !n.towards(nb.Zone, nil, m.Job.Cid):
			continue // outside the job's sub-CANs (002 §2.4)
		}
		s := d < len(pt)-1 && pt[d] < m.Job.Req[d]
		if next == 0 || k && !known || k == known && s && !short {
			next, short, known = nb.ID, s, k
		}
	}
	switch {
	case next == 0:
		n.failMatch(now, m, ReasonNoCapableNode)
	case int(m.Pushes) >= n.cfg.MaxPushHops:
		n.failMatch(now, m, ReasonPushLimit)
	default:
		m.Hops++
		m.Pushes++
		n.send(next, m) // a climb, not a CAN-P push: no push event
	}
}

func (n *Node) push(to core.NodeID, m *wire.JobPush) {
	m.Hops++
	m.Pushes++
	n.status.Pushes++
	n.event(Event{Kind: EvPushed, Job: m.Job.Id, Attempt: m.Job.Attempt, Hops: m.Hops})
	n.send(to, m)
}

// assignTo hands the job to run node c and counts it in our view of c's
// load, so that the next job within the same heartbeat period does not
// take c for free as well.
func (n *Node) assignTo(now time.Duration, c candidate, m *wire.JobPush) {
	if c.l != nil {
		noteSent(c.l, n.cfg.Res.Demand(m.Job.Req), false)
	}
	n.assign(now, c.id, &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}

func (n *Node) assign(now time.Duration, to core.NodeID, a *wire.JobAssign) {
	if o, ok := n.owned[a.Job.Id]; ok && core.NodeID(a.Owner) == n.self && a.Epoch == o.epoch {
		o.assigned = to
	}
	if to == n.self {
		n.onAssign(now, a)
		return
	}
	n.send(to, a)
}

// failMatch ends a job no node can run: the owner fails it; a node the job
// was pushed to tells the owner through a JobReturn-less path by failing
// it directly to the client (the owner drops it on its next status).
func (n *Node) failMatch(now time.Duration, m *wire.JobPush, reason string) {
	if o, ok := n.owned[m.Job.Id]; ok && core.NodeID(m.Owner) == n.self {
		n.fail(o, reason)
		return
	}
	// Not the owner: the owner's matchmaking timeout would retry forever,
	// so tell the client (the job's outcome) and the owner (drop it).
	n.send(core.NodeID(m.Job.Client), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: m.Job.Id, Reason: reason}}})
	n.send(core.NodeID(m.Owner), &wire.JobStatus{Failed: []*wire.JobFailure{{Id: m.Job.Id, Reason: reason}}})
}
