// Package load is the pure arithmetic of aggregated load information and
// job pushing in a CAN (003 §4.4; 002 §3.1.4): the
// overlap fraction (Eq 2), the aggregated load of the nodes above a node
// along each dimension (003 Eq 1, with cores as in 002 §3.1.4 and
// Balloons' discounted cores, Eq 3.1), the push
// target's objective (003 Eq 3, 002 Eq 3.2), the probabilistic stop (003
// Eq 4, 002 Eq 3.3) and the run-node score (003 Eq 5). Everything here is a function
// of its arguments: no state, no time, no randomness.
package load

import (
	"math"

	"github.com/gridbed/gridbed/actors/can"
)

// Agg is one dimension's aggregated load information: the number of
// nodes, their number of cores and the cores their jobs require (002
// §3.1.4). With single-core nodes Cores = Nodes and Queue is the sum of
// their job queue sizes, 003 §4.4's pair.
type Agg struct {
	Nodes, Cores, Queue float64
}

// Upper is what a node knows of one neighbor for aggregation: its zone,
// I(u) — its number of cores (0: one; TNC(u) of Eq 3.1 in the Balloon
// model) and the cores its queued and running jobs require (for a
// single-core node, its queue size) — and its
// aggregated load AI_d(u) per dimension (from its last heartbeat).
type Upper struct {
	Zone  can.Zone
	Cores float64
	Queue float64
	AI    []Agg
}

// Balloon is what aggregation needs of a Balloon (002 §3.1.3): NC(b), its
// cores, and β_b, their discount.
type Balloon struct {
	Cores, Beta float64
}

// TNC is the total number of cores of node N (002 Eq 3.1): TNC(N) = NC(N)
// + Σ_b β_b·NC(b) over the Balloons attached to N, a Balloon's cores
// discounted for the contention a job started on them meets.
func TNC(nc float64, balloons []Balloon) float64 {
	t := nc
	for _, b := range balloons {
		t += b.Beta * b.Cores
	}
	return t
}

// OverlapFraction is OF_d(N, u) (003 Eq 2): the fraction of u's lower face
// along d that N's upper face covers, the product over the other
// dimensions of the shared edge length over u's edge length. It is 0 when
// u is not an upper neighbor of N along d.
func OverlapFraction(n, u can.Zone, d int) float64 {
	if n.Hi[d] != u.Lo[d] {
		return 0
	}
	f := 1.0
	for i := range n.Lo {
		if i == d {
			continue
		}
		lo, hi := max(n.Lo[i], u.Lo[i]), min(n.Hi[i], u.Hi[i])
		if hi <= lo {
			return 0
		}
		f *= float64(hi-lo) / float64(u.Hi[i]-u.Lo[i])
	}
	return f
}

// Aggregate computes AI_d(N) for every dimension d of zone own (003 Eq 1):
// the sum over N's upper neighbors u along d of (AI_d(u) + I(u)) ×
// OF_d(N, u), with I(u) = (1 node, u's cores, the cores u's jobs require)
// — 002 §3.1.4's multi-core aggregation, which is 003's (1 node, u's queue
// size) when every node has one core. Neighbors whose AI is unknown (no
// heartbeat carried it yet) count with I(u) alone.
func Aggregate(own can.Zone, nbrs []Upper) []Agg {
	ai := make([]Agg, len(own.Lo))
	for _, u := range nbrs {
		AddUpper(ai, own, u.Zone, Agg{Nodes: 1, Cores: max(u.Cores, 1), Queue: u.Queue}, u.AI)
	}
	return ai
}

// AddUpper adds one upper neighbor's share to ai (003 Eq 1's term): along
// every dimension d where its zone overlaps own, (AI_d(u) + I(u)) ×
// OF_d(own, u), with I(u) = self and AI_d(u) = above[d] (none when above
// is shorter: a neighbor whose aggregate is unknown counts with I(u)).
func AddUpper(ai []Agg, own, zone can.Zone, self Agg, above []Agg) {
	for d := range ai {
		of := OverlapFraction(own, zone, d)
		if of == 0 {
			continue
		}
		a := self
		if d < len(above) {
			a.Nodes += above[d].Nodes
			a.Cores += above[d].Cores
			a.Queue += above[d].Queue
		}
		ai[d].Nodes += a.Nodes * of
		ai[d].Cores += a.Cores * of
		ai[d].Queue += a.Queue * of
	}
}

// Objective is F_d(u) = AI_d(u).SumOfJobQueueSizes / AI_d(u).NumberOfNodes²
// (003 Eq 3): the push target minimizes it — a small average queue above u
// and many nodes to choose from. It is +Inf when no node lies above u
// (nothing to push towards).
//
// With multi-core nodes it is 002 Eq 3.2, F_d(u) =
// AI_d(u).SumOfRequiredCores / AI_d(u).NumberOfCores²: Queue holds the
// required cores and Cores the cores (for single-core nodes both equations
// agree).
func Objective(ai Agg) float64 {
	if ai.Cores <= 0 {
		return math.Inf(1)
	}
	return ai.Queue / (ai.Cores * ai.Cores)
}

// StopProbability is PS(N) = 1 / (1 + AI_TD(N).NumberOfNodes)^SF (003 Eq
// 4, 002 Eq 3.3 — still counting nodes, not cores): the chance that a node stops pushing a job, larger as fewer nodes
// lie above it in the target dimension TD; a higher stopping factor SF
// pushes further.
func StopProbability(nodesAbove float64, sf int) float64 {
	return 1 / math.Pow(1+max(nodesAbove, 0), float64(sf))
}

// Score is F(C) = C.JobQueueSize / C.SpeedOfCPU (003 Eq 5): among capable
// candidates without a free one, the run node minimizes it.
func Score(queue, speed float64) float64 {
	if speed <= 0 {
		return math.Inf(1)
	}
	return queue / speed
}
