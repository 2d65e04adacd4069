package jobs

import (
	"math"
	"slices"
)

// Resource indexes of a Vec: the shared resources a run node schedules
// (000 §III-C: cores, memory, disk; K = 3).
const (
	ResCores = iota
	ResMemory
	ResDisk
	numRes
)

// Vec is an amount of each shared resource a run node schedules. A node's
// capacity of 0 in a resource means the space has no such dimension: the
// resource is ignored (never short, not counted in BM, FM or L).
type Vec [numRes]float64

// Resources tells the job core what the CAN coordinates mean: a node's
// capacities from its point, a job's demands from its requirement point.
type Resources interface {
	// Capacity is what a node at point p has (cores ≥ 1).
	Capacity(p []uint32) Vec
	// Demand is what a job requiring req uses while it runs (cores ≥ 1,
	// 0 for an unspecified requirement).
	Demand(req []uint32) Vec
	// Residue is the point of the Residue-node (002 §3.1.1) of a node at
	// point p with residual resources r: p with the coordinates of the
	// shared resources replaced by those of the residual amounts, so that
	// can.Capable(Residue(p, r), req) says a job requiring req fits r.
	Residue(p []uint32, r Vec) []uint32
}

// coresOnly is the model without a Resources: every node has its
// configured cores and every job needs one core.
type coresOnly struct{ cores int }

func (c coresOnly) Capacity([]uint32) Vec { return Vec{ResCores: float64(c.cores)} }
func (coresOnly) Demand([]uint32) Vec     { return Vec{ResCores: 1} }

// Residue is the node's own point: no coordinate says how many cores.
func (coresOnly) Residue(p []uint32, _ Vec) []uint32 { return slices.Clone(p) }

// vecOf reads a Vec from its wire form (a Load's or PullRequest's
// residual); callers check the length.
func vecOf(f []float32) Vec { return Vec{float64(f[0]), float64(f[1]), float64(f[2])} }

// wire is v's wire form.
func (v Vec) wire() []float32 { return []float32{float32(v[0]), float32(v[1]), float32(v[2])} }

// Fits reports whether demand d fits in residual r.
func Fits(d, r Vec) bool {
	for k := range d {
		if d[k] > r[k]+1e-9 {
			return false
		}
	}
	return true
}

func (v Vec) add(w Vec) Vec {
	for k := range v {
		v[k] += w[k]
	}
	return v
}

// Sub is v − w.
func (v Vec) Sub(w Vec) Vec { return v.sub(w) }

func (v Vec) sub(w Vec) Vec {
	for k := range v {
		v[k] -= w[k]
	}
	return v
}

// clamp limits a demand to a capacity: a capable node runs any job alone,
// even when rounding made the demand look larger than the capacity.
func (v Vec) clamp(c Vec) Vec {
	for k := range v {
		v[k] = min(v[k], c[k])
	}
	return v
}

// BalanceFullness is BM·FM of Backfill Balanced (000 Eqs 1-2) for a node
// of capacity c using used, were it to start a job demanding d:
// BM = max_k(S^k+R^k) / Σ_k(S^k+R^k), FM = 1 − Σ_k(S^k+R^k)/K, over the K
// resources the node has (S^k its normalized utilization, R^k the job's
// normalized requirement). Lower is better: balanced and full.
func BalanceFullness(c, used, d Vec) float64 {
	var sum, mx float64
	k := 0
	for i := range c {
		if c[i] <= 0 {
			continue
		}
		u := min((used[i]+d[i])/c[i], 1)
		sum += u
		mx = max(mx, u)
		k++
	}
	if k == 0 || sum == 0 {
		return 1
	}
	return mx / sum * (1 - sum/float64(k))
}

// Normalized is a demand normalized by a capacity (R_j^k of 000 Eq 4).
func Normalized(d, c Vec) Vec {
	var r Vec
	for k := range d {
		if c[k] > 0 {
			r[k] = d[k] / c[k]
		}
	}
	return r
}

// NormLoad is L = max_k W^k (000 Eqs 4-5) for the summed normalized
// requirements W of a queue's waiting jobs.
func NormLoad(w Vec) float64 { return max(w[0], w[1], w[2]) }

// Contention constants of 002 §3.2 (Eq 3.5).
const (
	ContentionP   = 0.1   // p: the general slow-down of sharing a node
	ContentionSDR = 0.175 // SDR: the worst-case slow-down per concurrent job
	ContentionM   = 4     // m: the steepness of the worst-case region
)

// Alpha is the expected running-time ratio of a job started on a node
// where n jobs (itself included) run and use shared resources used of
// capacity c (002 Eq 3.5): max(1+p, max_i 1 + n·SDR·(C_i/R_i)^m) over the
// shared resources memory and disk. A job running alone has α = 1: the
// equation models contention between concurrent jobs.
func Alpha(n int, used, c Vec) float64 {
	if n <= 1 {
		return 1
	}
	a := 1 + ContentionP
	for _, i := range []int{ResMemory, ResDisk} {
		if c[i] > 0 {
			a = max(a, 1+float64(n)*ContentionSDR*math.Pow(min(used[i]/c[i], 1), ContentionM))
		}
	}
	return a
}

// Omega is the total penalty Ω of starting one more job on a node where n
// jobs (the new one included) would run using shared resources used of
// capacity c (002 Eq 3.6): n·max(p, max_i n·SDR·(C_i/R_i)^m) over memory
// and disk — the running time all n jobs lose to contention, n·(α − 1)
// with α of Eq 3.5. A job alone (n ≤ 1) costs nothing.
func Omega(n int, used, c Vec) float64 {
	return float64(max(n, 0)) * (Alpha(n, used, c) - 1)
}
