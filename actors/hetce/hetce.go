// Package hetce is the pure arithmetic of matchmaking over heterogeneous
// computing elements (002 §4.1): a node holds several CEs — a CPU whose
// cores several jobs share (non-dedicated) and GPUs that run one job at a
// time (dedicated) — and a job names the dominant CE its running time
// depends on. Here are the acceptable-node rule (002 §4.1.2), the score
// functions (002 Eqs 4.1, 4.2), the push objective (002 Eq 4.3) over load
// aggregated per CE type, the stop probability (002 Eq 4.4) and the run
// node choice of 002 Algorithm 2. Everything is a function of its
// arguments: no state, no time, no randomness.
package hetce

import (
	"cmp"
	"math"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/load"
)

// CPU is the CE type of a node's CPU; GPU types follow it (1, 2, …).
const CPU = 0

// CE is one computing element of a node (002 §4.1.1): CE(N, C) for its
// type C, the index in the node's list.
type CE struct {
	// Dedicated CEs (GPUs) run one job at a time; the CPU is not
	// dedicated: jobs share its cores (002 §4.1.2).
	Dedicated bool
	// Units is the number of cores of a non-dedicated CE, the number of
	// CEs of this type (0: the node has none, 1: it has one) for a
	// dedicated one.
	Units float64
	// Speed is its clock speed relative to the nominal one: a job whose
	// dominant CE it is runs its work divided by it (002 §4.3.1).
	Speed float64
}

// Load is what one CE of a node is doing: the jobs whose dominant CE it
// is, queued or running (JobQueueSize), those of them waiting, and the
// cores they require (RequiredCores; a job on a dedicated CE requires one).
type Load struct {
	Queue, Waiting int
	Required       float64
}

// Score is F(N, C), the run-node score of CE(N, C) (002 Eqs 4.1, 4.2): its
// core utilization over its clock speed — for a dedicated CE the number of
// jobs running and queued on it (Eq 4.1), for a non-dedicated one the
// cores they require over its cores (Eq 4.2). Lower is better; +Inf for a
// CE the node does not have.
func Score(ce CE, l Load) float64 {
	if ce.Speed <= 0 || ce.Units <= 0 {
		return math.Inf(1)
	}
	if ce.Dedicated {
		return float64(l.Queue) / ce.Speed // Eq 4.1
	}
	return l.Required / ce.Units / ce.Speed // Eq 4.2
}

// Acceptable reports whether CE(N, C) can start a job now (002 §4.1.2,
// "Acceptable node"): nothing of its type waits before the job and, for a
// dedicated CE, one of its units is idle. cpuFits says the node's residual
// cores, memory and disk fit what the job takes of them.
func Acceptable(ce CE, l Load, cpuFits bool) bool {
	if ce.Units <= 0 || l.Waiting > 0 || !cpuFits {
		return false
	}
	return !ce.Dedicated || float64(l.Queue) < ce.Units
}

// Upper is what aggregation per CE type needs of one neighbor: its zone,
// its units and required cores of the CE type (I(u, C)) and its own
// aggregate AI_d(u, C) per dimension.
type Upper struct {
	Zone     can.Zone
	Units    float64
	Required float64
	AI       []load.Agg
}

// Aggregate computes AI_d(N, C) for every dimension d of zone own, for
// one CE type C (002 Eq 4.3's aggregated load information): 003 Eq 1's
// sum over N's upper neighbors u along d of (AI_d(u, C) + I(u, C)) ×
// OF_d(N, u), with I(u, C) = (1 node, u's units of C, the cores its jobs
// on C require). Unlike load.Aggregate a node without the CE adds no
// units: a region without GPUs has none to push a GPU job towards.
func Aggregate(own can.Zone, nbrs []Upper) []load.Agg {
	ai := make([]load.Agg, len(own.Lo))
	for _, u := range nbrs {
		load.AddUpper(ai, own, u.Zone, load.Agg{Nodes: 1, Cores: max(u.Units, 0), Queue: u.Required}, u.AI)
	}
	return ai
}

// Objective is F_D(N, C) = AI_D(N, C).SumOfRequiredCores /
// (AI_D(N, C).NumberOfCores)² (002 Eq 4.3), the push target's objective
// for a job whose dominant CE type is C; +Inf when no unit of C lies above.
func Objective(ai load.Agg) float64 { return load.Objective(ai) }

// StopProbability is P(N) = 1 / (1 + AI_TD(N).NumberOfNodes)^SF (002 Eq
// 4.4), the chance that pushing stops at N along the target dimension TD.
func StopProbability(nodesAbove float64, sf int) float64 {
	return load.StopProbability(nodesAbove, sf)
}

// Candidate is a capable node as matchmaking sees it for one job: whether
// it is acceptable (its dominant CE can start the job now) and free (it
// runs and holds no job at all), its dominant CE's clock speed and score.
type Candidate struct {
	ID         uint64
	Acceptable bool
	Free       bool
	Speed      float64
	Score      float64
}

// PickAcceptable is lines 3–9 of 002 Algorithm 2: among acceptable nodes,
// a free node before one that is only acceptable (sharing a node risks
// contention, 002 §4.1.2 "Job Assignment Policy"), the fastest clock
// speed of the job's dominant CE first; ties go to the lower id. ok is
// false when no candidate is acceptable.
func PickAcceptable(cs []Candidate) (best Candidate, ok bool) {
	for _, c := range cs {
		if !c.Acceptable {
			continue
		}
		if !ok || cmp.Or(boolFirst(c.Free, best.Free), cmp.Compare(best.Speed, c.Speed), cmp.Compare(c.ID, best.ID)) < 0 {
			best, ok = c, true
		}
	}
	return best, ok
}

// PickMinScore is line 14 of 002 Algorithm 2: the candidate with the
// minimum score (Eqs 4.1, 4.2), then the faster dominant CE, then the
// lower id. ok is false without candidates.
func PickMinScore(cs []Candidate) (best Candidate, ok bool) {
	for _, c := range cs {
		if !ok || cmp.Or(cmp.Compare(c.Score, best.Score), cmp.Compare(best.Speed, c.Speed), cmp.Compare(c.ID, best.ID)) < 0 {
			best, ok = c, true
		}
	}
	return best, ok
}

// boolFirst orders true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
