package allocation

import (
	"fmt"
	"math"
)

// Reading is how the SOCIAL allocator reads the affinities τ(k, m) of the
// jobs already on m in 004 §2.2's score
//
//	f(j, m) = τ(j, m) − Σ_{k∈J_m} τ(k, m) / (n_m + 1),
//
// which 004 writes with one n_m for every job. 004 leaves the reading open
// (docs/ALLOCATION.md, "gridbed's readings"); allocation.social_score
// selects it.
type Reading uint8

// Readings of the SOCIAL score.
const (
	// Joining evaluates every τ(k, m) with the n_m of the job about to
	// join, n_m = |J_m|: τ(k, m) is k's affinity after j joined, and the
	// subtracted term τ(k, m)/(n_m + 1) is not k's loss (that is
	// τ(k, m)/n_m).
	Joining Reading = iota
	// Own evaluates τ(k, m) with k's own n_m = |J_m| − 1, its affinity
	// now: τ(k, m)/(n_m + 1) is then exactly the affinity k loses when j
	// joins, as 004 §2.2 says it is, and f(j, m) is exactly the change of
	// the social welfare Σ_m Σ_{k∈J_m} τ(k, m). Scores equal to 1e-9
	// (relative) are ties, which go to the lowest machine index.
	Own
	// OwnGreedy is Own with ties — machines on which j changes the
	// welfare equally, as every machine whose jobs share j's composition
	// does (by 0) — going to the machine of the largest τ(j, m), GREEDY's
	// choice among them, then to the lowest index.
	OwnGreedy
	// Relative is Joining with every affinity taken relative to the
	// job's affinity alone on the machine of the grid that suits it best
	// (owner loads aside): τ(k, m) · min_m' c_k(m'), the share of its
	// best speed k gets on m. Not in 004, which adds affinities of
	// different compositions as they are; a what-if that makes them
	// comparable (a C_0 job's affinity is 50–100 times a C_3 job's under
	// W = ⟨2·10⁻⁵, 0.1, 0.1⟩).
	Relative
)

var readingNames = [...]string{Joining: "joining", Own: "own", OwnGreedy: "own-greedy", Relative: "relative"}

func (r Reading) String() string {
	if int(r) < len(readingNames) {
		return readingNames[r]
	}
	return fmt.Sprintf("reading(%d)", uint8(r))
}

// Readings are the names allocation.social_score accepts, default first.
func Readings() []string { return readingNames[:] }

// ParseReading reads a reading name as the scenario spells it.
func ParseReading(name string) (Reading, bool) {
	for i, n := range readingNames {
		if n == name {
			return Reading(i), true
		}
	}
	return Joining, false
}

// SocialGain is what the SOCIAL relocator's gain f(j, m, m') of 004 §2.3
// is relative to (allocation.social_gain). 004 writes
//
//	f(j, m, m') = (α₀(Σ_m − Σ'_m) + α₁(Σ_m' − Σ'_m')) / (Σ_m + Σ'_m)
//
// and calls f "a relative gain with respect to the previous system
// state", compared with a θ that "aims at modeling the cost of job
// migration" — the cost of moving one job.
type SocialGain uint8

// Normalizations of the SOCIAL relocator's gain.
const (
	// GainSums divides by Σ_m + Σ'_m, the source machine's sums of
	// affinities after and before the move, as 004 §2.3 writes it. The
	// numerator is one job's worth, the denominator a whole machine's:
	// moving one of n jobs of one composition to an idle machine as fast
	// gains about 1/(4n) (Joining) or 1/(2n) (Own), below θ = 10% once a
	// machine holds a few jobs.
	GainSums SocialGain = iota
	// GainJob divides by the moved job's own affinity τ(j, m) before the
	// move, counted as the sums count it (its term of Σ'_m) — the
	// denominator of GREEDY's relative gain, so that θ compares one job's
	// gain with one job's migration cost under both relocators. Not 004's
	// formula: a what-if (docs/fidelity/004.md).
	GainJob
)

var gainNames = [...]string{GainSums: "sums", GainJob: "job"}

func (g SocialGain) String() string {
	if int(g) < len(gainNames) {
		return gainNames[g]
	}
	return fmt.Sprintf("gain(%d)", uint8(g))
}

// SocialGains are the names allocation.social_gain accepts, default first.
func SocialGains() []string { return gainNames[:] }

// ParseSocialGain reads a normalization name as the scenario spells it.
func ParseSocialGain(name string) (SocialGain, bool) {
	for i, n := range gainNames {
		if n == name {
			return SocialGain(i), true
		}
	}
	return GainSums, false
}

// social evaluates SOCIAL's affinities under a reading: best(c) is the
// least cost of composition c on the grid (consulted only under Relative);
// g is the relocator's normalization.
type social struct {
	r    Reading
	best func(Vector) float64
	g    SocialGain
}

// newSocial is reading r and gain normalization g on the grid ms.
func newSocial(r Reading, g SocialGain, ms []Machine) social {
	return social{r: r, best: bestCosts(ms), g: g}
}

// weight is what one job of composition c adds to Σ_k τ(k, m) before the
// factor (1 − λ_m)/(count + 1): 1/c_k(m), or best(c)/c_k(m) under Relative.
func (sv social) weight(c Vector, m *Machine) float64 {
	if sv.r == Relative {
		return sv.best(c) / Cost(c, m.Speed)
	}
	return 1 / Cost(c, m.Speed)
}

// weights is Σ_{k∈J_m} weight(C_k, m).
func (sv social) weights(m *Machine) float64 {
	w := 0.0
	for _, k := range m.Jobs {
		w += sv.weight(k.Comp, m)
	}
	return w
}

// sum is Σ_k τ(k, m) over count jobs of m whose weights add up to w: each
// affinity with the joining job's n_m = count under Joining and Relative,
// (1 − λ_m) w/(count + 1); with its own n_m = count − 1 under Own and
// OwnGreedy, (1 − λ_m) w/count — the sum of the affinities the jobs have.
func (sv social) sum(m *Machine, w float64, count int) float64 {
	if count <= 0 || !m.available() {
		return 0
	}
	if sv.r == Own || sv.r == OwnGreedy {
		return (1 - m.Load) * w / float64(count)
	}
	return (1 - m.Load) * w / float64(count+1)
}

// score is SOCIAL's f(j, m) of 004 §2.2 for a new job of composition c on
// m. With c_x = Σ_i W[i]C_x[i]/S_m[i], n = |J_m| and I = Σ_{k∈J_m} 1/c_k it
// is
//
//	Joining:  (1 − λ_m)/(n + 1) · (1/c_j − I/(n + 1))
//	Own:      (1 − λ_m)/(n + 1) · (1/c_j − I/n)
//	Relative: Joining with every 1/c_x replaced by best(C_x)/c_x.
func (sv social) score(m *Machine, c Vector) float64 {
	n := len(m.Jobs)
	tau := m.newAffinity(c)
	if sv.r == Relative {
		tau *= sv.best(c)
	}
	return tau - sv.sum(m, sv.weights(m), n)/float64(n+1)
}

// gainBase is the denominator of the SOCIAL relocator's gain (004 §2.3,
// SocialGain) for moving a job of composition c off m, whose count jobs'
// weights add up to w, with before and after the sums Σ'_m and Σ_m:
// their total under GainSums; under GainJob the moved job's term of
// Σ'_m, sum(m, weight(c, m), count) — its affinity as the sums count it.
func (sv social) gainBase(m *Machine, c Vector, count int, before, after float64) float64 {
	if sv.g == GainJob {
		return sv.sum(m, sv.weight(c, m), count)
	}
	return before + after
}

// socialBetter reports whether SOCIAL's score f on machine i beats the
// best so far, bestF on machine best, under reading r (Allocate): Joining
// compares the scores exactly; Own and OwnGreedy take scores within 1e-9
// of each other (relative to the larger affinity τ(j, ·)) as ties, which
// OwnGreedy gives to the larger τ(j, ·).
func socialBetter(r Reading, f, bestF, tau, bestTau float64) bool {
	if r == Joining || r == Relative {
		return f > bestF
	}
	eps := 1e-9 * math.Max(math.Abs(tau), math.Abs(bestTau))
	switch {
	case f > bestF+eps:
		return true
	case f < bestF-eps:
		return false
	}
	return r == OwnGreedy && tau > bestTau
}

// bestCosts returns best(c), the least Σ_i W[i]C[i]/S_m[i] of composition
// c over the machines ms (Relative), memoized: a grid has few
// compositions.
func bestCosts(ms []Machine) func(Vector) float64 {
	var memo map[Vector]float64 // made on first use: only Relative asks
	return func(c Vector) float64 {
		if b, ok := memo[c]; ok {
			return b
		}
		if memo == nil {
			memo = map[Vector]float64{}
		}
		b := math.Inf(1)
		for i := range ms {
			b = math.Min(b, Cost(c, ms[i].Speed))
		}
		memo[c] = b
		return b
	}
}
