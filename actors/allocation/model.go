// Package allocation is the pure core of 004's resource-driven allocation
// (004 §2): machines described by speed vectors and an owner load that
// changes over time, jobs by composition vectors, the affinity of a job for a
// machine, the GREEDY, SOCIAL and MIN-NUM allocators and relocators (004
// §2.2, §2.3, §3), a machine's round-robin execution of its jobs (004 Eq 1),
// and the paper's data (Tables 1–4, the synthetic and AEOLUS grids, the
// owner-load spikes of Figs 2 and 4).
//
// Everything here is a pure function or a single-threaded value: no
// goroutines, clocks, global randomness or I/O (docs/ARCHITECTURE.md
// principle 1). The testbed (emulator/allocation) hosts it on peers.
package allocation

import "math"

// D is the number of operation types of 004 §3: CPU, disk, network.
const D = 3

// Vector is a d-dimensional vector of 004 §2.1 (d = D): a speed vector S_m
// (CPU GHz, disk MB/s, network KB/s), a composition vector C_j or the weight
// vector W.
type Vector [D]float64

// Weights is 004 §3's weight vector W = ⟨2·10⁻⁵, 10⁻¹, 10⁻¹⟩: one logical
// operation is W[i] real operations of type i.
var Weights = Vector{2e-5, 0.1, 0.1}

// Reweigh returns speeds in the units in which the weight vector is w
// instead of Weights: S'[i] = S[i]·Weights[i]/w[i], so that Cost(c, S')
// = Σ_i w[i]·C[i]/S[i] — a machine's affinities and running times under
// the weight vector w (004 §2.1: W, "fixed a priori", is the exchange rate
// between the components' operations; changing the unit of a speed's
// component is the same as dividing its weight by the unit's factor). w's
// components must be positive; w = Weights returns the speeds unchanged.
func Reweigh(speeds []Vector, w Vector) []Vector {
	out := make([]Vector, len(speeds))
	for k, s := range speeds {
		for i := range D {
			out[k][i] = s[i] * (Weights[i] / w[i])
		}
	}
	return out
}

// Cost is Σ_i W[i]·C[i]/S[i], the time one logical operation of composition
// c takes alone on a machine of speed s (004 Eq 1's sum), with 0/0 = 0 (004
// §2.1, footnote 1); +Inf when the machine lacks a resource the job needs.
func Cost(c, s Vector) float64 {
	sum := 0.0
	for i := range D {
		w := Weights[i] * c[i]
		if w == 0 {
			continue
		}
		if s[i] <= 0 {
			return math.Inf(1)
		}
		sum += w / s[i]
	}
	return sum
}

// Affinity is τ(j, m) of 004 §2.2: (1 − λ_m) / ((n_m + 1) Σ_i W[i]C_j[i]/S_m[i]),
// where n is the number of jobs other than j on m and load is λ_m. A machine
// whose owner takes it whole (λ_m ≥ 1), or that cannot run the job, has
// affinity 0.
func Affinity(c, s Vector, load float64, n int) float64 {
	cost := Cost(c, s)
	if load >= 1 || math.IsInf(cost, 1) {
		return 0
	}
	if cost == 0 {
		return math.Inf(1)
	}
	return (1 - load) / (float64(n+1) * cost)
}

// ExecTime is t(j, m) of 004 Eq 1: ℓ_j (n_m + 1) / (1 − λ_m) · Σ_i
// W[i]C_j[i]/S_m[i] — equivalently ℓ_j / τ(j, m) (004 Eq 2) — for a job of
// length ops logical operations with n other jobs on m; +Inf when m cannot
// run it.
func ExecTime(ops float64, c, s Vector, load float64, n int) float64 {
	a := Affinity(c, s, load, n)
	if a == 0 {
		return math.Inf(1)
	}
	return ops / a
}
