package allocation

import (
	"fmt"
	"math"
)

// Scheme names an allocator or a relocator: GREEDY and SOCIAL (004 §2.2,
// §2.3) and the MIN-NUM baseline (004 §3). None is only a relocator: no
// relocation.
type Scheme uint8

// Schemes.
const (
	None Scheme = iota
	Greedy
	Social
	MinNum
)

var schemeNames = [...]string{None: "none", Greedy: "greedy", Social: "social", MinNum: "min-num"}

func (s Scheme) String() string {
	if int(s) < len(schemeNames) {
		return schemeNames[s]
	}
	return fmt.Sprintf("scheme(%d)", uint8(s))
}

// ParseScheme reads a scheme name as the scenario spells it.
func ParseScheme(name string) (Scheme, bool) {
	for i, n := range schemeNames {
		if n == name {
			return Scheme(i), true
		}
	}
	return None, false
}

// Job is what the allocator knows of a job: its id and composition vector
// C_j. Its length ℓ_j is not known (004 §2.1: the allocators do not rely
// on it).
type Job struct {
	ID   uint64
	Comp Vector
}

// Machine is the allocator's view of a machine m: its speed vector S_m,
// owner load λ_m and the jobs J_m it runs.
type Machine struct {
	Speed Vector
	Load  float64
	Jobs  []Job
}

// affinity is τ(j, m) of a job already on m (n_m = |J_m| − 1 others).
func (m *Machine) affinity(c Vector) float64 {
	return Affinity(c, m.Speed, m.Load, len(m.Jobs)-1)
}

// newAffinity is τ(j, m) of a job about to join m (n_m = |J_m| others).
func (m *Machine) newAffinity(c Vector) float64 {
	return Affinity(c, m.Speed, m.Load, len(m.Jobs))
}

// available reports whether m can take grid jobs at all (004 §2.1,
// footnote 1: not when λ_m = 1).
func (m *Machine) available() bool { return m.Load < 1 }

// Score is the allocator's score f(j, m) for a new job of composition c on
// m: GREEDY's τ(j, m) and SOCIAL's τ(j, m) − Σ_{k∈J_m} τ(k, m)/(n_m + 1)
// (004 §2.2), the affinities τ(k, m) read as r says (social.score);
// MIN-NUM's −|J_m| (004 §3).
//
// Under Relative the affinities are relative to each job's best machine
// among grid (bestCosts).
func Score(s Scheme, r Reading, grid []Machine, m *Machine, c Vector) float64 {
	return score(s, r, m, c, bestCosts(grid))
}

func score(s Scheme, r Reading, m *Machine, c Vector, best func(Vector) float64) float64 {
	switch s {
	case Greedy:
		return m.newAffinity(c)
	case Social:
		return social{r: r, best: best}.score(m, c)
	case MinNum:
		return -float64(len(m.Jobs))
	}
	return math.Inf(-1)
}

// Allocate is the allocator of 004 §2.2 (GREEDY, SOCIAL) or §3 (MIN-NUM):
// the index of the machine maximizing the scheme's score f(j, m) for a new
// job of composition c, the lowest index among ties (SOCIAL: as reading r
// breaks them, socialBetter); −1 when no machine is available.
func Allocate(s Scheme, r Reading, ms []Machine, c Vector) int {
	best, bestF, bestTau := -1, math.Inf(-1), 0.0
	costs := bestCosts(ms)
	for i := range ms {
		tau := ms[i].newAffinity(c)
		if !ms[i].available() || (s != MinNum && tau == 0) {
			continue
		}
		f := score(s, r, &ms[i], c, costs)
		if best < 0 || (s == Social && socialBetter(r, f, bestF, tau, bestTau)) || (s != Social && f > bestF) {
			best, bestF, bestTau = i, f, tau
		}
	}
	return best
}

// Gain is the relocator's score f(j, m, m') of moving job k of m (its index
// in J_m) to m' (004 §2.3): GREEDY's relative affinity increment
// (τ(j, m') − τ(j, m)) / τ(j, m) and SOCIAL's
// (α₀(Σ_m − Σ'_m) + α₁(Σ_m' − Σ'_m')) / (Σ_m + Σ'_m), with Σ' the sums of
// affinities before the move and Σ after it, read as r says (social.sum),
// and α₀ = |J_m| / (|J_m| + |J_m'|), α₁ = |J_m'| / (|J_m| + |J_m'|) counted
// after the move (docs/ALLOCATION.md: before it, α₁ would be 0 for an idle
// m' and SOCIAL would never relocate to an idle machine). g chooses
// SOCIAL's denominator (SocialGain: 004's Σ_m + Σ'_m, or the moved job's
// own affinity). grid is the whole grid (Relative's best machines).
func Gain(s Scheme, r Reading, g SocialGain, grid []Machine, m, to *Machine, k int) float64 {
	sv := newSocial(r, g, grid)
	var wM, wTo float64
	if s == Social {
		wM, wTo = sv.weights(m), sv.weights(to)
	}
	return gain(s, sv, m, to, k, wM, wTo)
}

// gain is Gain with the machines' SOCIAL weights computed once.
func gain(s Scheme, sv social, m, to *Machine, k int, wM, wTo float64) float64 {
	j := m.Jobs[k]
	switch s {
	case Greedy:
		here := m.affinity(j.Comp)
		if here == 0 {
			return math.Inf(1) // stranded on a machine its owner took whole
		}
		return (to.newAffinity(j.Comp) - here) / here
	case Social:
		nm, nto := len(m.Jobs), len(to.Jobs)
		beforeM, afterM := sv.sum(m, wM, nm), sv.sum(m, wM-sv.weight(j.Comp, m), nm-1)
		beforeTo, afterTo := sv.sum(to, wTo, nto), sv.sum(to, wTo+sv.weight(j.Comp, to), nto+1)
		a0 := float64(nm-1) / float64(nm+nto)
		a1 := float64(nto+1) / float64(nm+nto)
		den := sv.gainBase(m, j.Comp, nm, beforeM, afterM)
		if den == 0 {
			return math.Inf(1)
		}
		return (a0*(afterM-beforeM) + a1*(afterTo-beforeTo)) / den
	}
	return math.Inf(-1)
}

// Move is one relocation: job Job from machine From to machine To.
type Move struct {
	Job      uint64
	From, To int
}

// Event is what invokes the relocator on machine m (004 §2.3).
type Event uint8

// Relocation events.
const (
	// LoadUp: the owner load of m increased.
	LoadUp Event = iota + 1
	// LoadDown: the owner load of m decreased, or a job on m ended.
	LoadDown
)

// Relocate is the relocator of 004 §2.3 (GREEDY, SOCIAL) and §3 (MIN-NUM)
// invoked on machine m after ev: it moves one job at a time, the one (and
// the machine) maximizing f — out of m after LoadUp, into m from another
// machine after LoadDown — while the gain exceeds theta, at most maxMoves
// times. It applies each move to ms and returns them in order.
//
// MIN-NUM moves a job from m to the machine with the fewest jobs after
// LoadUp, and from the machine with the most jobs to m after LoadDown (004
// §3); θ is not defined for it, and gridbed moves only when the two
// machines' job counts differ by at least two (a move that merely swaps
// the counts would undo itself at the next event).
//
// SOCIAL's sums of affinities are read as r says (social.sum), its gain
// normalized as g says (SocialGain).
func Relocate(s Scheme, r Reading, g SocialGain, ms []Machine, m int, ev Event, theta float64, maxMoves int) []Move {
	var moves []Move
	for len(moves) < maxMoves {
		var mv Move
		var ok bool
		if s == MinNum {
			mv, ok = minNumMove(ms, m, ev)
		} else {
			mv, ok = bestMove(s, newSocial(r, g, ms), ms, m, ev, theta)
		}
		if !ok {
			break
		}
		apply(ms, mv)
		moves = append(moves, mv)
	}
	return moves
}

// bestMove is one step of the GREEDY or SOCIAL relocator: the (job,
// machine) pair of maximal gain above theta; ties go to the lowest machine,
// then the earliest job.
func bestMove(s Scheme, sv social, ms []Machine, m int, ev Event, theta float64) (Move, bool) {
	best, bestF, found := Move{}, theta, false
	inv := make([]float64, len(ms))
	if s == Social {
		for i := range ms {
			inv[i] = sv.weights(&ms[i])
		}
	}
	consider := func(from, to int) {
		if from == to || !ms[to].available() {
			return
		}
		for k, j := range ms[from].Jobs {
			if ms[to].newAffinity(j.Comp) == 0 {
				continue
			}
			if f := gain(s, sv, &ms[from], &ms[to], k, inv[from], inv[to]); f > bestF {
				best, bestF, found = Move{Job: j.ID, From: from, To: to}, f, true
			}
		}
	}
	for o := range ms {
		if ev == LoadUp {
			consider(m, o)
		} else {
			consider(o, m)
		}
	}
	return best, found
}

// minNumMove is one step of the MIN-NUM relocator (004 §3).
func minNumMove(ms []Machine, m int, ev Event) (Move, bool) {
	other := -1
	for o := range ms {
		if o == m || !ms[o].available() {
			continue
		}
		if other < 0 || (ev == LoadUp && len(ms[o].Jobs) < len(ms[other].Jobs)) ||
			(ev == LoadDown && len(ms[o].Jobs) > len(ms[other].Jobs)) {
			other = o
		}
	}
	if other < 0 {
		return Move{}, false
	}
	from, to := m, other
	if ev == LoadDown {
		from, to = other, m
	}
	if !ms[to].available() || len(ms[from].Jobs)-len(ms[to].Jobs) < 2 {
		return Move{}, false
	}
	// The job that arrived last on the busier machine moves.
	j := ms[from].Jobs[len(ms[from].Jobs)-1]
	return Move{Job: j.ID, From: from, To: to}, true
}

// apply makes move mv in ms.
func apply(ms []Machine, mv Move) {
	src := &ms[mv.From]
	for k, j := range src.Jobs {
		if j.ID == mv.Job {
			src.Jobs = append(src.Jobs[:k], src.Jobs[k+1:]...)
			ms[mv.To].Jobs = append(ms[mv.To].Jobs, j)
			return
		}
	}
}
