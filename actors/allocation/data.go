package allocation

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Compositions are 004 Table 1's composition vectors C_0 … C_4 (CPU, disk,
// network): CPU intensive, generic, network intensive, disk intensive I and
// II.
var Compositions = [5]Vector{
	{1.0, 0.0, 0.0},
	{0.7, 0.1, 0.2},
	{0.6, 0.0, 0.4},
	{0.5, 0.5, 0.0},
	{0.2, 0.8, 0.0},
}

// Synthetic is 004 §3's synthetic grid: S_0 = ⟨4, 100, 250⟩,
// S_1 = S_2 = ⟨2, 100, 250⟩, S_3 = ⟨1, 800, 250⟩.
var Synthetic = []Vector{{4, 100, 250}, {2, 100, 250}, {2, 100, 250}, {1, 800, 250}}

// aeolusRows are 004 Appendix Table 3: the AEOLUS grid's speed vectors
// S_first … S_last (CPU GHz, disk MB/s, network KB/s).
var aeolusRows = []struct {
	first, last int
	s           Vector
}{
	{0, 0, Vector{0.70, 50, 500}}, {1, 1, Vector{0.80, 50, 500}}, {2, 2, Vector{0.87, 50, 500}},
	{3, 3, Vector{0.90, 50, 500}}, {4, 5, Vector{0.93, 50, 500}}, {6, 6, Vector{1.00, 60, 500}},
	{7, 7, Vector{1.30, 60, 500}}, {8, 8, Vector{1.40, 60, 500}}, {9, 9, Vector{1.67, 75, 500}},
	{10, 15, Vector{1.70, 70, 500}}, {16, 16, Vector{1.80, 70, 500}}, {17, 19, Vector{2.00, 100, 500}},
	{20, 20, Vector{2.20, 100, 500}}, {21, 21, Vector{2.40, 100, 500}}, {22, 22, Vector{2.40, 100, 1000}},
	{23, 24, Vector{2.53, 90, 1000}}, {25, 25, Vector{2.60, 90, 1000}}, {26, 55, Vector{2.66, 105, 1000}},
	{56, 61, Vector{2.80, 85, 500}}, {62, 63, Vector{2.83, 100, 500}}, {64, 65, Vector{3.00, 80, 500}},
	{66, 67, Vector{3.10, 80, 500}}, {68, 69, Vector{3.20, 80, 500}},
}

// Aeolus is the AEOLUS grid of 004 §3: the 70 speed vectors of 004 Appendix
// Table 3, S_0 … S_69.
func Aeolus() []Vector {
	out := make([]Vector, 70)
	for _, r := range aeolusRows {
		for i := r.first; i <= r.last; i++ {
			out[i] = r.s
		}
	}
	return out
}

// Grids by the name the scenario gives them (allocation.grid).
const (
	GridSynthetic = "synthetic"
	GridAeolus    = "aeolus"
)

// Grid returns the speed vectors of a named grid, or nil.
func Grid(name string) []Vector {
	switch name {
	case GridSynthetic:
		return slices.Clone(Synthetic)
	case GridAeolus:
		return Aeolus()
	}
	return nil
}

// Orders is 004 Appendix Table 4: for permutation ID p (1 … 24),
// Orders[p-1][k] is the job type arriving at 004 Table 2's k-th burst
// (0 s, 25 s, 50 s, 75 s) of job set 2.
var Orders = [24][4]int{
	{0, 1, 2, 3}, {1, 0, 2, 3}, {0, 2, 1, 3}, {2, 0, 1, 3}, {2, 1, 0, 3}, {1, 2, 0, 3},
	{0, 1, 3, 2}, {1, 0, 3, 2}, {0, 3, 1, 2}, {3, 0, 1, 2}, {3, 1, 0, 2}, {1, 3, 0, 2},
	{0, 3, 2, 1}, {3, 0, 2, 1}, {0, 2, 3, 1}, {2, 0, 3, 1}, {2, 3, 0, 1}, {3, 2, 0, 1},
	{3, 1, 2, 0}, {1, 3, 2, 0}, {3, 2, 1, 0}, {2, 3, 1, 0}, {2, 1, 3, 0}, {1, 2, 3, 0},
}

// step is one step of 004 Table 2's discretized power law: a share of the
// jobs with lengths drawn from N(Mean, Sd).
type step struct{ share, mean, sd float64 }

// jobType is one row of 004 Table 2: Count jobs of composition Type.
type jobType struct {
	Type  int
	Count int
	Steps []step
}

// jobSets are 004 Table 2 (lengths in logical operations; "k" is 1000).
// Job set 1's shares add up to 96% in the paper; gridbed draws in their
// proportion (20 : 38 : 38).
var jobSets = [3][]jobType{
	{
		{0, 200, []step{{0.24, 400e3, 8e3}, {0.38, 200e3, 4e3}, {0.38, 100e3, 2e3}}},
		{1, 800, []step{{0.24, 100e3, 4e3}, {0.38, 50e3, 2e3}, {0.38, 25e3, 1e3}}},
	},
	{
		{0, 500, set1}, {4, 500, set1},
	},
	{
		{0, 500, set2}, {1, 500, set2}, {2, 500, set2}, {3, 500, set2},
	},
}

var (
	set1 = []step{{0.20, 500e3, 40e3}, {0.38, 250e3, 20e3}, {0.38, 125e3, 10e3}}
	set2 = []step{{0.20, 250e3, 75e3}, {0.30, 100e3, 30e3}, {0.30, 40e3, 12e3}, {0.20, 10e3, 3e3}}
)

// Bursts are job set 2's arrival instants (004 Table 2).
var Bursts = [4]time.Duration{0, 25 * time.Second, 50 * time.Second, 75 * time.Second}

// Spec is one job of a job set: its type (index into Compositions), length
// ℓ_j and arrival instant.
type Spec struct {
	ID      uint64
	Type    int
	Length  float64
	Arrival time.Duration
}

// JobSet draws job set set (0, 1 or 2) of 004 Table 2 from rng: each step's
// share of a type's jobs (rounded, the remainder to the largest share) with
// lengths from its Gaussian (at least 1 operation, 004 §2.1's ℓ_j ≥ 1);
// arrivals uniform in [0, 100] s (set 0) or [0, 1000] s (set 1), or job set
// 2's bursts in the order of permutation order (1 … 24, 004 Table 4). Jobs
// are returned by arrival, ties in drawing order, with ids from 1.
func JobSet(set, order int, rng *rand.Rand) []Spec {
	var out []Spec
	for ti, t := range jobSets[set] {
		counts := stepCounts(t.Count, t.Steps)
		var specs []Spec
		for si, s := range t.Steps {
			for range counts[si] {
				l := max(1, math.Round(s.mean+s.sd*rng.NormFloat64()))
				specs = append(specs, Spec{Type: t.Type, Length: l})
			}
		}
		rng.Shuffle(len(specs), func(a, b int) { specs[a], specs[b] = specs[b], specs[a] })
		for i := range specs {
			switch set {
			case 0:
				specs[i].Arrival = time.Duration(rng.Float64() * 100 * float64(time.Second))
			case 1:
				specs[i].Arrival = time.Duration(rng.Float64() * 1000 * float64(time.Second))
			case 2:
				specs[i].Arrival = Bursts[slices.Index(Orders[order-1][:], ti)]
			}
		}
		out = append(out, specs...)
	}
	slices.SortStableFunc(out, func(a, b Spec) int { return cmp.Compare(a.Arrival, b.Arrival) })
	for i := range out {
		out[i].ID = uint64(i + 1)
	}
	return out
}

// stepCounts splits n jobs by the steps' shares (normalized), the rounding
// remainder going to the largest share.
func stepCounts(n int, steps []step) []int {
	total := 0.0
	for _, s := range steps {
		total += s.share
	}
	counts := make([]int, len(steps))
	sum, big := 0, 0
	for i, s := range steps {
		counts[i] = int(math.Round(float64(n) * s.share / total))
		sum += counts[i]
		if s.share > steps[big].share {
			big = i
		}
	}
	counts[big] += n - sum
	return counts
}

// Spike is a change of one machine's owner load at an instant.
type Spike struct {
	At      time.Duration
	Machine int
	Load    float64
}

// Spikes by the name the scenario gives them (allocation.spikes).
const (
	SpikesNone = "none"
	SpikesFig2 = "fig2"
	SpikesFig4 = "fig4"
)

// Spikes returns the owner-load changes of a named set: 004 Fig 2's
// (machine S_3 of the synthetic grid to 0.95 at 1500 s) and 004 Fig 4's
// (S_0, S_6, S_26, S_19 of the AEOLUS grid to 0.95 at 0 s, 60 s, 100 s,
// 125 s); ok is false for an unknown name.
func Spikes(name string) (spikes []Spike, ok bool) {
	switch name {
	case SpikesNone, "":
		return nil, true
	case SpikesFig2:
		return []Spike{{1500 * time.Second, 3, 0.95}}, true
	case SpikesFig4:
		return []Spike{{0, 0, 0.95}, {60 * time.Second, 6, 0.95}, {100 * time.Second, 26, 0.95}, {125 * time.Second, 19, 0.95}}, true
	}
	return nil, false
}
