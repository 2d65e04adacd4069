// Heterogeneous computing elements (002 §4.1): a node's CEs, the run
// node's queue per CE, the per-CE load its heartbeats carry and can-het's
// matchmaking, 002 Algorithm 2. The arithmetic is package hetce's.

package jobs

import (
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/wire"
)

// CEModel tells the job core what CEs a node has and which CE a job
// names as dominant, both read from CAN coordinates (002 §4.1.1: a GPU's
// clock speed, memory and cores are dimensions of the CAN): Config.CEs.
type CEModel interface {
	// CEs is the computing elements of a node at point p, indexed by CE
	// type: the CPU (hetce.CPU) first, then one entry per GPU type (Units
	// 0 when the node has none).
	CEs(p []uint32) []hetce.CE
	// Dominant is the CE type of a job requiring req (002 §4.1.2).
	Dominant(req []uint32) int
}

// dominant is the dominant CE type of a job requiring req (the CPU
// without a CE model or for a type this node does not know).
func (n *Node) dominant(req []uint32) int {
	if n.cfg.CEs == nil {
		return hetce.CPU
	}
	c := n.cfg.CEs.Dominant(req)
	if c < 0 || c >= len(n.ces) {
		return hetce.CPU
	}
	return c
}

// gpuDemand: a job whose dominant CE is a GPU takes none of the node's
// shared resources (cores, memory, disk). Its thread driving the GPU shares
// a CPU core without measurable contention (002 Table 4.1: at most 1.4%
// between jobs on separate CEs) and its data lives in the GPU's memory, so
// it starts as soon as a GPU of its type is idle — a gridbed reading of
// 002 §4.1.2, which names the CPU core but no rule for it.
func gpuDemand(c int, d Vec) Vec {
	if c != hetce.CPU {
		return Vec{}
	}
	return d
}

// ceLoads is what each of this node's CEs is doing: the jobs whose
// dominant CE it is, queued or running, and the cores they require (one
// per job on a dedicated CE).
func (n *Node) ceLoads() []hetce.Load {
	ls := make([]hetce.Load, len(n.ces))
	for _, h := range n.queue {
		l := &ls[h.ce]
		l.Queue++
		if !h.running {
			l.Waiting++
		}
		if n.ces[h.ce].Dedicated {
			l.Required++
		} else {
			l.Required += h.demand[ResCores]
		}
	}
	return ls
}

// ceIdle reports whether CE type c has a unit free for one more job: the
// CPU always (its cores are the residual's), a dedicated CE while fewer of
// its jobs run than it has units.
func (n *Node) ceIdle(c int) bool {
	if c >= len(n.ces) || !n.ces[c].Dedicated {
		return true
	}
	running := 0
	for _, h := range n.queue[:n.running] {
		if h.ce == c {
			running++
		}
	}
	return float64(running) < n.ces[c].Units
}

// nextStartCE is vanilla FCFS per CE (002 §4.1.2: CE(N, C).JobQueueSize):
// the first waiting job of each CE type starts when the residual resources
// fit it and, for a dedicated CE, a unit is idle; a job waits only behind
// jobs of its own dominant CE (no contention between separate CEs, 002
// Table 4.1).
func (n *Node) nextStartCE() (int, int) {
	res := n.residual()
	blocked := make([]bool, len(n.ces))
	head := -1
	for i := n.running; i < len(n.queue); i++ {
		h := n.queue[i]
		if h.offeredTo != 0 {
			continue
		}
		if head < 0 {
			head = i
		}
		if blocked[h.ce] {
			continue
		}
		if Fits(h.demand, res) && n.ceIdle(h.ce) {
			return i, head
		}
		blocked[h.ce] = true
	}
	return -1, head
}

// ceLoadInfo is the per-CE part of our heartbeat's load (can-het): each
// CE's load and AI_d(N, C) aggregated from our upper neighbors' (002 Eq
// 4.3's aggregated load information).
func (n *Node) ceLoadInfo(own can.Zone) []*wire.CELoad {
	ls := n.ceLoads()
	out := make([]*wire.CELoad, len(n.ces))
	nbs := n.view.Neighbors()
	for c := range n.ces {
		var ups []hetce.Upper
		for _, nb := range nbs {
			nl := n.loadOf(&nb)
			if nl == nil || c >= len(nl.Ces) || nl.Ces[c] == nil {
				continue
			}
			e := nl.Ces[c]
			u := hetce.Upper{Zone: nb.Zone, Units: float64(e.Units), Required: float64(e.Required)}
			for _, a := range e.Agg {
				u.AI = append(u.AI, load.Agg{Nodes: float64(a.Nodes), Cores: float64(a.Cores), Queue: float64(a.Queue)})
			}
			ups = append(ups, u)
		}
		w := &wire.CELoad{Queue: uint32(ls[c].Queue), Waiting: uint32(ls[c].Waiting), Required: float32(ls[c].Required), Units: float32(n.ces[c].Units)}
		if len(own.Lo) > 0 {
			for _, a := range hetce.Aggregate(own, ups) {
				w.Agg = append(w.Agg, &wire.AggLoad{Nodes: float32(a.Nodes), Queue: float32(a.Queue), Cores: float32(a.Cores)})
			}
		}
		out[c] = w
	}
	return out
}

// hetCandidate is a capable node as can-het sees it for one job.
type hetCandidate struct {
	hetce.Candidate
	l *wire.Load // our estimate of its load; nil for ourselves
}

// hetCandidates lists the capable nodes among ourselves and our
// neighbors for a job requiring req whose dominant CE type is c, each
// with whether it is acceptable and free, the clock speed of its CE c and
// its score (002 Eqs 4.1, 4.2), from our neighbors' last heartbeats.
func (n *Node) hetCandidates(req []uint32, cid []uint64, c int) []hetCandidate {
	var cs []hetCandidate
	d := gpuDemand(c, n.cfg.Res.Demand(req))
	if capable(n.view.Point(), n.cfg.Combo, req, cid) && c < len(n.ces) {
		ce, l := n.ces[c], n.ceLoads()[c]
		cs = append(cs, hetCandidate{Candidate: hetce.Candidate{ID: uint64(n.self),
			Acceptable: hetce.Acceptable(ce, l, Fits(d.clamp(n.capacity), n.residual())),
			Free:       len(n.queue) == 0, Speed: ce.Speed, Score: hetce.Score(ce, l)}})
	}
	for _, nb := range n.view.Neighbors() {
		nl := n.loadOf(&nb)
		if nl == nil || !capable(nl.Point, nl.Combo, req, cid) {
			continue
		}
		ces := n.cfg.CEs.CEs(nl.Point)
		if c >= len(ces) || c >= len(nl.Ces) || nl.Ces[c] == nil {
			continue
		}
		e := nl.Ces[c]
		l := hetce.Load{Queue: int(e.Queue), Waiting: int(e.Waiting), Required: float64(e.Required)}
		cpuFits := false
		if len(nl.Residual) == numRes {
			cpuFits = Fits(d.clamp(Vec{float64(nl.Cores), 1e300, 1e300}), vecOf(nl.Residual))
		}
		cs = append(cs, hetCandidate{Candidate: hetce.Candidate{ID: uint64(nb.ID),
			Acceptable: hetce.Acceptable(ces[c], l, cpuFits),
			Free:       nl.Queue == 0, Speed: ces[c].Speed, Score: hetce.Score(ces[c], l)}, l: nl})
	}
	return cs
}

// matchStepHet is one step of can-het's job pushing, 002 Algorithm 2, at
// this node (the owner, or a node the job was pushed to):
//   - lines 3–9: an acceptable node among us and our neighbors — a free
//     one first, the fastest dominant CE first — runs the job;
//   - line 11: else the upper neighbor and dimension minimizing F_D(N, C)
//     (Eq 4.3) over the aggregated load of the job's dominant CE type;
//   - lines 12–14: stop with probability P(N) (Eq 4.4), then the capable
//     node with the minimum score (Eqs 4.1, 4.2) runs it;
//   - line 16: else push the job to the target.
//
// With no capable node in sight the job climbs towards nodes that are.
func (n *Node) matchStepHet(now time.Duration, m *wire.JobPush) {
	c := n.dominant(m.Job.Req)
	cs := n.hetCandidates(m.Job.Req, m.Job.Cid, c)
	plain := make([]hetce.Candidate, len(cs))
	for i := range cs {
		plain[i] = cs[i].Candidate
	}
	if b, ok := hetce.PickAcceptable(plain); ok {
		n.assignHet(now, cs, b, c, m)
		return
	}
	target, td := n.pushTargetCE(c)
	limit := int(m.Pushes) >= n.cfg.MaxPushHops
	stop := target == 0 || limit
	if !stop && len(cs) > 0 {
		nodes := 0.0
		if td < len(n.ai) {
			nodes = n.ai[td].Nodes
		}
		stop = n.rng.Float64() < hetce.StopProbability(nodes, n.cfg.StoppingFactor)
	}
	if stop && len(cs) > 0 {
		b, _ := hetce.PickMinScore(plain)
		n.assignHet(now, cs, b, c, m)
		return
	}
	if limit {
		n.failMatch(now, m, ReasonPushLimit)
		return
	}
	if target == 0 {
		n.climb(now, m)
		return
	}
	n.push(target, m)
}

// pushTargetCE is the upper neighbor u (in any dimension d) minimizing
// F_d(u, C) (002 Eq 4.3) over AI_d(u, C), the aggregated load of CE type
// c above it, as its heartbeat carried it; 0 when no upper neighbor has a
// unit of c above it.
func (n *Node) pushTargetCE(c int) (core.NodeID, int) {
	own := n.view.Zone()
	var best core.NodeID
	bestF, bestD := 0.0, -1
	for _, nb := range n.view.Neighbors() {
		l := n.loadOf(&nb)
		if l == nil || c >= len(l.Ces) || l.Ces[c] == nil {
			continue
		}
		d, upper, ok := can.Abut(own, nb.Zone)
		agg := l.Ces[c].Agg
		if !ok || !upper || d >= len(agg) {
			continue
		}
		a := agg[d]
		f := hetce.Objective(load.Agg{Nodes: float64(a.Nodes), Cores: float64(a.Cores), Queue: float64(a.Queue)})
		if f < 1e300 && (best == 0 || f < bestF) {
			best, bestF, bestD = nb.ID, f, d
		}
	}
	return best, bestD
}

// assignHet hands the job to the chosen candidate b and counts it in our
// estimate of that neighbor's load (its CE c's queue, and the residual a
// job it can start now takes), so that the next job within the same
// heartbeat period does not take the same GPU for idle.
func (n *Node) assignHet(now time.Duration, cs []hetCandidate, b hetce.Candidate, c int, m *wire.JobPush) {
	i := slices.IndexFunc(cs, func(x hetCandidate) bool { return x.ID == b.ID })
	if i >= 0 && cs[i].l != nil {
		l := cs[i].l
		noteSent(l, gpuDemand(c, n.cfg.Res.Demand(m.Job.Req)), !b.Acceptable)
		if c < len(l.Ces) && l.Ces[c] != nil {
			e := l.Ces[c]
			e.Queue++
			if !b.Acceptable {
				e.Waiting++
			}
			if c != hetce.CPU {
				e.Required++
			} else {
				e.Required += float32(max(n.cfg.Res.Demand(m.Job.Req)[ResCores], 1))
			}
		}
	}
	n.assign(now, core.NodeID(b.ID), &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}

// copyCELoads copies a heartbeat's per-CE loads for our estimate (the
// counts change in place; the aggregates, only read, are shared).
func copyCELoads(ls []*wire.CELoad) []*wire.CELoad {
	if ls == nil {
		return nil
	}
	out := make([]*wire.CELoad, len(ls))
	for i, l := range ls {
		if l != nil {
			out[i] = &wire.CELoad{Queue: l.Queue, Waiting: l.Waiting, Required: l.Required, Units: l.Units, Agg: l.Agg}
		}
	}
	return out
}
