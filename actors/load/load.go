// Package load is the pure arithmetic of aggregated load information and
// job pushing in a CAN (PROTOCOLS.md §3; 003 §4.4): the overlap fraction
// (Eq 2), the aggregated load of the nodes above a node along each
// dimension (Eq 1), the push target's objective (Eq 3), the probabilistic
// stop (Eq 4) and the run-node score (Eq 5). Everything here is a function
// of its arguments: no state, no time, no randomness.
package load

import (
	"math"

	"github.com/gridbed/gridbed/actors/can"
)

// Agg is one dimension's aggregated load information: the number of nodes
// and the sum of their job queue sizes (003 §4.4).
type Agg struct {
	Nodes, Queue float64
}

// Upper is what a node knows of one neighbor for aggregation: its zone,
// its own queue size I(u) and its aggregated load AI_d(u) per dimension
// (from its last heartbeat).
type Upper struct {
	Zone  can.Zone
	Queue float64
	AI    []Agg
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
// OF_d(N, u), with I(u) = (1 node, u's queue size). Neighbors whose AI is
// unknown (no heartbeat carried it yet) count with I(u) alone.
func Aggregate(own can.Zone, nbrs []Upper) []Agg {
	ai := make([]Agg, len(own.Lo))
	for _, u := range nbrs {
		for d := range ai {
			of := OverlapFraction(own, u.Zone, d)
			if of == 0 {
				continue
			}
			a := Agg{Nodes: 1, Queue: u.Queue}
			if d < len(u.AI) {
				a.Nodes += u.AI[d].Nodes
				a.Queue += u.AI[d].Queue
			}
			ai[d].Nodes += a.Nodes * of
			ai[d].Queue += a.Queue * of
		}
	}
	return ai
}

// Objective is F_d(u) = AI_d(u).SumOfJobQueueSizes / AI_d(u).NumberOfNodes²
// (003 Eq 3): the push target minimizes it — a small average queue above u
// and many nodes to choose from. It is +Inf when no node lies above u
// (nothing to push towards).
func Objective(ai Agg) float64 {
	if ai.Nodes <= 0 {
		return math.Inf(1)
	}
	return ai.Queue / (ai.Nodes * ai.Nodes)
}

// StopProbability is PS(N) = 1 / (1 + AI_TD(N).NumberOfNodes)^SF (003 Eq
// 4): the chance that a node stops pushing a job, larger as fewer nodes
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
