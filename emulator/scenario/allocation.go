package scenario

import (
	"fmt"
	"strconv"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
)

// Allocation configures a run of 004's resource-driven allocation
// (docs/ALLOCATION.md): a grid of machines described by speed vectors, a
// job set, a centralized allocator and a relocator. With Grid none (the
// default) the scenario is an overlay run and these keys are ignored.
type Allocation struct {
	Grid      string // GridNone, or a grid of package allocation
	Jobset    int    // 004 Table 2's job set, 0 to 2
	Order     int    // 004 Table 4's permutation of job set 2's bursts, 1 to 24
	Allocator string
	Relocator string
	// SocialScore is the reading of SOCIAL's score (alloc.Reading).
	SocialScore string
	Theta       float64 // θ, the relocators' relative-gain threshold (004 §2.3)
	MaxMoves    int     // N, the most relocations after one event (004 §2.3)
	Spikes      string  // the owner-load spikes: none, fig2, fig4
	// Sample is the interval of the jobs-per-machine series (0: none).
	Sample time.Duration
	// CrashAt, if positive, crashes the allocator then for CrashDownFor.
	CrashAt, CrashDownFor time.Duration
	// Placement is central (004's allocator) or neighbors (every
	// machine allocates from its CAN neighbours' view, which they gossip
	// every GossipPeriod); alloc.Placement.
	Placement    string
	GossipPeriod time.Duration
	// SocialGain is the SOCIAL relocator's normalization (alloc.SocialGain).
	SocialGain string
	// Weights is 004 §2.1's weight vector W (CPU, disk, network) the
	// affinities and running times use, the speeds read in 004 §3's units
	// (GHz, MB/s, KB/s); default 004 §3's ⟨2·10⁻⁵, 0.1, 0.1⟩.
	Weights Weights
}

// Weights is allocation.weights: 004 §2.1's W by component.
type Weights struct{ CPU, Disk, Network float64 }

// Vector is W as a vector of package allocation.
func (w Weights) Vector() alloc.Vector { return alloc.Vector{w.CPU, w.Disk, w.Network} }

// GridNone is allocation.grid's default: no allocation run.
const GridNone = "none"

// On reports whether the scenario is an allocation run.
func (a Allocation) On() bool { return a.Grid != "" && a.Grid != GridNone }

var allocationSchemes = []string{"greedy", "social", "min-num"}

// allocationFields are the allocation.* keys (004).
var allocationFields = []field{
	enumField("allocation.grid", func(s *Scenario) *string { return &s.Allocation.Grid }, GridNone,
		[]string{GridNone, alloc.GridSynthetic, alloc.GridAeolus}, "a grid",
		"The machines of a 004 allocation run (docs/ALLOCATION.md): synthetic (004 §3's four machines S_0 = ⟨4, 100, 250⟩, S_1 = S_2 = ⟨2, 100, 250⟩, S_3 = ⟨1, 800, 250⟩ — CPU GHz, disk MB/s, network KB/s) or aeolus (the 70 machines of 004 Appendix Table 3). none (default): not an allocation run; the allocation keys are ignored and the peers.*, overlay.* … keys apply. An allocation run ends when its last job completes, or at duration."),
	intField("allocation.jobset", func(s *Scenario) *int { return &s.Allocation.Jobset }, 2, 0, 2,
		"a job set of 004 Table 2",
		"004 Table 2's job set: 0 (200 C_0 and 800 C_1 jobs arriving uniformly in [0, 100] s; Fig 1), 1 (500 C_0 and 500 C_4 jobs in [0, 1000] s; Fig 2) or 2 (500 jobs each of C_0 … C_3, one type per burst at 0, 25, 50 and 75 s; Figs 3 and 4). Lengths follow the table's discretized power law, drawn from the seed."),
	intField("allocation.order", func(s *Scenario) *int { return &s.Allocation.Order }, 1, 1, 24,
		"a permutation ID of 004 Table 4",
		"Job set 2's permutation ID (004 Table 4): which job type arrives in which burst, 1 (C_0, C_1, C_2, C_3 at 0, 25, 50, 75 s) to 24 (C_1, C_2, C_3, C_0). Job sets 0 and 1 have no bursts and ignore it."),
	enumField("allocation.allocator", func(s *Scenario) *string { return &s.Allocation.Allocator }, "greedy",
		allocationSchemes, "an allocator",
		"The allocator every arriving job goes through: greedy (the machine of the highest affinity τ(j, m), 004 §2.2), social (τ(j, m) minus the affinity the jobs already there lose, 004 §2.2) or min-num (the machine with the fewest jobs, 004 §3)."),
	enumField("allocation.social_score", func(s *Scenario) *string { return &s.Allocation.SocialScore }, alloc.Readings()[0],
		alloc.Readings(), "a reading of the SOCIAL score",
		"How the social allocator (and relocator) reads 004 §2.2's score τ(j, m) − Σ_{k∈J_m} τ(k, m)/(n_m + 1), written with one n_m for every job (docs/ALLOCATION.md, gridbed's readings): joining (every τ(k, m) with the joining job's n_m = |J_m|), own (each job's own n_m = |J_m| − 1: the exact loss of affinity 004 describes, so the score is the change of the sum of all affinities; equal scores go to the lowest machine index), own-greedy (own, equal scores going to the machine of the largest τ(j, m)) or relative (joining, every affinity relative to the job's affinity alone on the machine of the grid that suits it best; not in 004: a what-if making the affinities of different compositions comparable). The social relocator reads its sums of affinities the same way. Only social reads it."),
	enumField("allocation.social_gain", func(s *Scenario) *string { return &s.Allocation.SocialGain }, alloc.SocialGains()[0],
		alloc.SocialGains(), "a normalization of the SOCIAL relocator's gain",
		"What the social relocator's gain f(j, m, m') = (α₀(Σ_m − Σ'_m) + α₁(Σ_m' − Σ'_m')) / D is relative to (004 §2.3; docs/ALLOCATION.md, gridbed's readings): sums (default, 004's formula: D = Σ_m + Σ'_m, the source machine's sums of affinities after and before the move — one job's worth over a whole machine's, so the gain falls below θ once a machine holds a few jobs) or job (D = the moved job's own affinity on the source machine before the move, as GREEDY's gain divides by it; not 004's formula: a what-if, docs/fidelity/004.md). Only the social relocator reads it."),
	weightField(0, "cpu", "GHz", "CPU", func(w *Weights) *float64 { return &w.CPU }),
	weightField(1, "disk", "MB/s", "disk", func(w *Weights) *float64 { return &w.Disk }),
	weightField(2, "network", "KB/s", "network", func(w *Weights) *float64 { return &w.Network }),
	enumField("allocation.relocator", func(s *Scenario) *string { return &s.Allocation.Relocator }, "none",
		append([]string{"none", "same"}, allocationSchemes...), "a relocator",
		"The relocator run when a job ends or an owner load changes: none, same (the allocator's own scheme, as 004 §3 pairs them), greedy (the job of the largest relative affinity gain, 004 §2.3), social (the gain in the two machines' affinity sums, 004 §2.3) or min-num (between the machines with the most and the fewest jobs, 004 §3). Each relocation preempts the job and sends its state to the new machine over the bus."),
	floatField("allocation.theta", func(s *Scenario) *float64 { return &s.Allocation.Theta }, 0.1,
		func(v float64) bool { return v > 0 && v <= 10 }, "a valid relocation threshold", "a relative gain above 0 and at most 10, e.g. 0.1 for 10%",
		"θ: a relocation happens only if its relative gain f(j, m, m') exceeds it (004 §2.3; 004 §3 settles on 10%, 0.1). Above 0, at most 10. Not defined for min-num."),
	intField("allocation.max_moves", func(s *Scenario) *int { return &s.Allocation.MaxMoves }, 3, 1, 1000,
		"a valid number of relocations",
		"N: the most relocations after one event (004 §2.3; 004 §3 settles on 3), 1 to 1000."),
	also(enumField("allocation.spikes", func(s *Scenario) *string { return &s.Allocation.Spikes }, alloc.SpikesNone,
		[]string{alloc.SpikesNone, alloc.SpikesFig2, alloc.SpikesFig4}, "a set of owner-load spikes",
		"Owner-load changes during the run: none (every owner load stays 0), fig2 (synthetic grid: S_3's owner load rises to 0.95 at 1500 s, 004 Fig 2) or fig4 (aeolus grid: S_0, S_6, S_26, S_19 rise to 0.95 at 0, 60, 100, 125 s, 004 Fig 4)."),
		func(s *Scenario) string {
			a := s.Allocation
			want := map[string]string{alloc.SpikesFig2: alloc.GridSynthetic, alloc.SpikesFig4: alloc.GridAeolus}[a.Spikes]
			if a.On() && want != "" && a.Grid != want {
				return fmt.Sprintf("the %s spikes are on the %s grid's machines — write allocation.grid: %s, or allocation.spikes: none", a.Spikes, want, want)
			}
			return ""
		}, "allocation.grid"),
	durationField("allocation.sample", func(s *Scenario) *time.Duration { return &s.Allocation.Sample }, 0,
		"The interval of the jobs-per-machine series (004 Fig 2): every machine's count of running jobs at every multiple of it until the last job completes, written to allocation.csv and drawn in the run's report (grids of at most 8 machines). 0s (default): no series.",
		nonNegative("sampling interval", 100*time.Second)),
	durationField("allocation.crash_at", func(s *Scenario) *time.Duration { return &s.Allocation.CrashAt }, 0,
		"A fault: the allocator crashes at this emulated instant — off the bus, its view of the machines, its count of completed jobs and its makespan lost — and restarts allocation.crash_down_for later, rebuilding them from the machines (every machine answers with its load, its jobs and the jobs it completed); jobs arriving meanwhile wait at their source. Under allocation.placement neighbors, which has no allocator, the machine holding the most jobs at this instant crashes instead: off the bus, its jobs stopped and its view of its neighbours lost until it restarts; a job sent to it meanwhile is placed elsewhere by its sender, and one on its way to it when it crashed is lost — counted (allocation.crash.jobs_lost), and the run fails. 0s: no crash. The summary reports it (allocation.crash).",
		nonNegative("crash instant", 50*time.Second)),
	durationField("allocation.crash_down_for", func(s *Scenario) *time.Duration { return &s.Allocation.CrashDownFor }, 30*time.Second,
		"How long the crashed allocator (or machine, under allocation.placement neighbors) stays down (allocation.crash_at); a positive duration.",
		positive("downtime", 30*time.Second)),
	// allocation.placement neighbors: a gridbed extension (allocdec).
	enumField("allocation.placement", func(s *Scenario) *string { return &s.Allocation.Placement }, alloc.Placements()[0],
		alloc.Placements(), "a placement",
		"Where jobs are placed: central (default; 004's one allocator sees every machine) or neighbors (a gridbed extension, not in 004: no allocator; the machines are laid out in a 2-dimensional CAN from the seed, each knows only its CAN neighbours, which tell it their owner load and jobs every allocation.gossip_period; a job arrives at a machine drawn uniformly from the seed, which places it on the best of itself and its neighbours by the same allocator score, and relocates among them with the same relocator, θ and N). Under neighbors there is no allocator: allocation.crash_at crashes the machine holding the most jobs instead. docs/ALLOCATION.md, Decentralized placement."),
	durationField("allocation.gossip_period", func(s *Scenario) *time.Duration { return &s.Allocation.GossipPeriod }, 10*time.Second,
		"Under allocation.placement neighbors, how often every machine may send each CAN neighbour its owner load and jobs (an allocation gossip message): it sends them when they changed since its last gossip, and at least every 6th period even if they did not; its neighbours' view of it is stale by up to this long. Default 10s: the overlay's heartbeat period, and shorter than the 25 s between job set 2's bursts. A positive duration; central ignores it.",
		positive("gossip period", 10*time.Second)),
}

// weightField is allocation.weights.NAME: component i of the weight vector W.
func weightField(i int, name, unit, what string, p func(*Weights) *float64) field {
	return floatField("allocation.weights."+name, func(s *Scenario) *float64 { return p(&s.Allocation.Weights) }, alloc.Weights[i],
		func(v float64) bool { return v > 0 && v <= 1e6 }, "a valid weight", "a number above 0, at most 1e6, e.g. "+fmtFloat(alloc.Weights[i]),
		fmt.Sprintf("W[%d], the %s component of 004 §2.1's weight vector W: one logical operation is W[%d] real %s operations, the speeds counting them as 004 §3 does (%s), so a job's cost per logical operation on a machine is Σ_i W[i]·C_j[i]/S_m[i] (004 Eq 1) and its affinity τ = (1 − λ_m)/((n_m + 1)·that). Default %s, 004 §3's W = ⟨2·10⁻⁵, 0.1, 0.1⟩. The paper fixes W \"a priori\" to make the components comparable; changing the unit of a speed component is the same as dividing its weight by the unit's factor (docs/ALLOCATION.md, gridbed's readings). Above 0, at most 1e6.",
			i, what, i, what, unit, fmtFloat(alloc.Weights[i])))
}

// PlacementMode is allocation.placement as a placement.
func (a Allocation) PlacementMode() alloc.Placement {
	p, _ := alloc.ParsePlacement(a.Placement)
	return p
}

// AllocatorScheme is allocation.allocator as a scheme.
func (a Allocation) AllocatorScheme() alloc.Scheme { s, _ := alloc.ParseScheme(a.Allocator); return s }

// SocialReading is allocation.social_score as a reading.
func (a Allocation) SocialReading() alloc.Reading {
	r, _ := alloc.ParseReading(a.SocialScore)
	return r
}

// SocialGainNorm is allocation.social_gain as a normalization.
func (a Allocation) SocialGainNorm() alloc.SocialGain {
	g, _ := alloc.ParseSocialGain(a.SocialGain)
	return g
}

// RelocatorScheme is allocation.relocator as a scheme (same: the
// allocator's).
func (a Allocation) RelocatorScheme() alloc.Scheme {
	if a.Relocator == "same" {
		return a.AllocatorScheme()
	}
	s, _ := alloc.ParseScheme(a.Relocator)
	return s
}

// String names the allocation's configuration, e.g. "aeolus social/social order 3".
func (a Allocation) String() string {
	return a.Grid + " " + a.Allocator + "/" + a.Relocator + " jobset " + strconv.Itoa(a.Jobset) + " order " + strconv.Itoa(a.Order)
}
