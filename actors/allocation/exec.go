package allocation

import (
	"math"
	"time"
)

// Running is a job on a machine: its composition, and the logical
// operations ℓ'_j it has left.
type Running struct {
	ID        uint64
	Comp      Vector
	Remaining float64
}

// Exec is a machine running its jobs by round robin with small time slices
// (004 §2.1): with n jobs and owner load λ each job j progresses at
// τ(j, m) = (1 − λ) / (n · Σ_i W[i]C_j[i]/S[i]) logical operations per
// second, so that a job alone for its whole life takes 004 Eq 1's t(j, m).
// Whenever the number of jobs or the owner load changes, the remaining
// operations ℓ'_j are computed and the rates updated (004 §2.1).
type Exec struct {
	Speed Vector
	Load  float64
	Jobs  []Running
	at    time.Duration // the instant Remaining refers to
	// changes counts the changes of the jobs or the owner load (a job
	// added, removed or completed, the load set to another value): a
	// gossiping Peer compares it with the count at its last gossip.
	changes uint64
}

// finished is how little work left counts as none: the rounding of the
// completion instant to a nanosecond (the fastest job of 004's grids does
// 1.6·10⁵ operations a second, 1.6·10⁻⁴ a nanosecond).
const finished = 1e-3

// advance brings Remaining to now.
func (e *Exec) advance(now time.Duration) {
	if now <= e.at {
		return
	}
	dt := (now - e.at).Seconds()
	e.at = now
	n := len(e.Jobs)
	for i := range e.Jobs {
		a := Affinity(e.Jobs[i].Comp, e.Speed, e.Load, n-1)
		e.Jobs[i].Remaining = max(0, e.Jobs[i].Remaining-a*dt)
	}
}

// Add starts job r on the machine at now.
func (e *Exec) Add(now time.Duration, r Running) {
	e.advance(now)
	e.Jobs = append(e.Jobs, r)
	e.changes++
}

// Remove preempts job id at now and returns it with ℓ'_j, its remaining
// operations (004 §2.1), for relocation.
func (e *Exec) Remove(now time.Duration, id uint64) (Running, bool) {
	e.advance(now)
	for k, r := range e.Jobs {
		if r.ID == id {
			e.Jobs = append(e.Jobs[:k], e.Jobs[k+1:]...)
			e.changes++
			return r, true
		}
	}
	return Running{}, false
}

// SetLoad changes the owner load λ_m at now.
func (e *Exec) SetLoad(now time.Duration, load float64) {
	e.advance(now)
	if load != e.Load {
		e.changes++
	}
	e.Load = load
}

// resume makes the jobs' progress start again at now, the time since the
// instant Remaining refers to lost: the machine was down (Peer.Restart).
func (e *Exec) resume(now time.Duration) {
	e.at = max(e.at, now)
}

// Next is the instant the next job completes at the current rates (rounded
// to a nanosecond), and false when none will (no jobs, or λ = 1).
func (e *Exec) Next() (time.Duration, bool) {
	best := math.Inf(1)
	n := len(e.Jobs)
	for _, r := range e.Jobs {
		a := Affinity(r.Comp, e.Speed, e.Load, n-1)
		if a == 0 {
			continue
		}
		best = min(best, r.Remaining/a)
	}
	if math.IsInf(best, 1) || best > 1e9 {
		return 0, false
	}
	return e.at + max(1, time.Duration(math.Round(best*1e9))), true
}

// Complete advances to now and removes the jobs finished by then, in the
// order they run.
func (e *Exec) Complete(now time.Duration) []Running {
	e.advance(now)
	var done []Running
	kept := e.Jobs[:0]
	for _, r := range e.Jobs {
		if r.Remaining <= finished {
			done = append(done, r)
		} else {
			kept = append(kept, r)
		}
	}
	e.Jobs = kept
	if len(done) > 0 {
		e.changes++
	}
	return done
}
