// Package workload generates a run's jobs (003 §5.3):
// Poisson arrivals, per-resource requirements with the constraint ratio,
// clustered or mixed, work drawn from a distribution.
//
// Requirements are drawn the way package population draws peers'
// capabilities, so that jobs and nodes live in the same CAN space: a
// constrained resource takes a catalog level with geometrically decreasing
// weights (most requirements modest, as most peers are weak) — for a mixed
// workload plus a uniform position within the level, never beyond the top
// level — mapped to a coordinate with population.Coord; an unconstrained
// resource is 0 ("don't care", 003 §5.3). A node is then capable of a job
// iff its coordinate is at least the job's in every resource dimension
// (can.Capable).
//
// Arrivals, requirements and running times come from three PCG streams of
// their own, all derived from the seed: changing the inter-arrival time,
// the start or the run length keeps every job's requirements and work
// (003 §5.4 compares workloads with "exactly the same job and node
// profiles" across τ), and changing the running-time distribution keeps the
// arrivals and requirements.
package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// Job is one submission of the client's workload.
type Job struct {
	ID   uint64        // 1, 2, … in submission order
	At   time.Duration // emulated submission time
	Req  can.Point     // length dims+1: requirement coordinate per resource dimension (0 = don't care), then a uniform random virtual coordinate (003 §4.2)
	Work time.Duration // running time on a canonical node (speed 1.0); the run node divides it by its speed
	// Constraint and CID are its categorical requirement (Categorize;
	// nil without categorical resources).
	Constraint categorical.Constraint
	CID        categorical.Set
}

// stream is the PCG stream of this package ("jobs"); arrivals,
// requirements and work use stream, stream+1 and stream+2.
const stream = 0x6a6f6273

// Generate draws the scenario's jobs deterministically from seed. dims is
// overlay.dimensions (resource dimensions, without the virtual one).
//
// The first job arrives at w.Start plus an exponential gap of mean
// w.Interarrival, every next one an exponential gap later; generation stops
// after w.Jobs jobs or at the first job that would arrive after duration
// (jobs past the end of the run are not generated). w.Jobs <= 0 gives no
// jobs. Generate panics on a kind or running-time distribution that
// scenario validation rejects.
//
// With w.Classes = nodes, requirements are cut from peers: each job (mixed)
// or job class (clustered) takes a peer of peers drawn uniformly as its
// template and requires, per constrained resource, at most that peer's
// capability; clustered classes are then submitted in proportion to the
// peers capable of them. Every job thus has a capable peer and demand
// follows supply. peers may be nil otherwise.
func Generate(w scenario.Workload, dims int, duration time.Duration, seed uint64, peers []population.Node) []Job {
	w.Interarrival = Interarrival(w, dims, seed, peers)
	jobs, _ := generate(w, dims, duration, seed, peers)
	return jobs
}

// Interarrival is the mean inter-arrival time Generate uses: w.Interarrival,
// or with w.Load > 0 (workload.load) the one that submits Load times the
// peers' capacity in work per second — E[cores × work] / (Load × Σ cores ×
// cpu_speed), the expectation over the workload's w.Jobs jobs (their
// requirements and work come from streams of their own, so they do not
// depend on the inter-arrival time), cores read from the requirement's and
// the peers' cores dimension (1 without one; a job that leaves cores
// unconstrained uses 1). With no peers it is w.Interarrival.
func Interarrival(w scenario.Workload, dims int, seed uint64, peers []population.Node) time.Duration {
	if w.Load <= 0 || len(peers) == 0 || w.Jobs <= 0 {
		return w.Interarrival
	}
	given := w.Interarrival
	var capacity float64
	for _, p := range peers {
		capacity += cores(p.Point, dims, false) * population.CapabilityAt(p.Point, 0)
	}
	w.Interarrival = time.Second
	jobs, _ := generate(w, dims, time.Duration(math.MaxInt64), seed, peers)
	var work float64
	for _, j := range jobs {
		work += cores(j.Req, dims, true) * j.Work.Seconds()
	}
	if capacity <= 0 || work <= 0 {
		return given
	}
	return time.Duration(work / float64(len(jobs)) / (w.Load * capacity) * float64(time.Second))
}

// cores is the cores of a peer, or those a job requires, at point p: the
// cores dimension (3) read back through the catalog, 1 without it or — a
// requirement — when unconstrained.
func cores(p can.Point, dims int, req bool) float64 {
	if dims <= 3 || req && p[3] == 0 {
		return 1
	}
	return max(math.Round(population.CapabilityAt(p, 3)), 1)
}

// generate is Generate, also returning each job's level positions per
// resource dimension (-1: unconstrained), for the tests.
func generate(w scenario.Workload, dims int, duration time.Duration, seed uint64, peers []population.Node) ([]Job, [][]float64) {
	if w.Kind != scenario.WorkloadMixed && w.Kind != scenario.WorkloadClustered {
		panic(fmt.Sprintf("workload: kind %q: want %s or %s", w.Kind, scenario.WorkloadMixed, scenario.WorkloadClustered))
	}
	if !slices.Contains(scenario.RuntimeDists, w.RuntimeDist) {
		panic(fmt.Sprintf("workload: running-time distribution %q: want one of %v", w.RuntimeDist, scenario.RuntimeDists))
	}
	if w.Jobs <= 0 {
		return nil, nil
	}
	arrivals := rand.New(rand.NewPCG(seed, stream))
	reqs := rand.New(rand.NewPCG(seed, stream+1))
	work := rand.New(rand.NewPCG(seed, stream+2))

	// Clustered: the requirement classes, each a constraint pattern and
	// integer levels. Unlike population's node classes they are not sorted
	// weakest first: a class's weight is independent of its constraints,
	// so each resource of a job is still constrained with probability
	// ConstraintRatio (sorting would make the commonest class the one with
	// the fewest constraints).
	fromPeers := w.Classes == scenario.ClassesNodes && len(peers) > 0
	var classes [][]float64
	classWeights := population.Geometric(population.Classes)
	if w.Kind == scenario.WorkloadClustered {
		if fromPeers {
			classes, classWeights = peerClasses(reqs, peers, dims, w.ConstraintRatio)
		} else {
			for range population.Classes {
				classes = append(classes, drawLevels(reqs, dims, w.ConstraintRatio, false))
			}
		}
	}

	var jobs []Job
	var levels [][]float64
	at := float64(w.Start)
	for id := uint64(1); id <= uint64(w.Jobs); id++ {
		at += arrivals.ExpFloat64() * float64(w.Interarrival)
		if at > float64(duration) {
			break
		}
		var lv []float64
		switch {
		case classes != nil:
			lv = slices.Clone(classes[population.Pick(reqs, classWeights)])
		case fromPeers:
			lv = levelsUnder(reqs, peers[reqs.IntN(len(peers))], dims, w.ConstraintRatio, true)
		default:
			lv = drawLevels(reqs, dims, w.ConstraintRatio, true)
		}
		req := point(lv, dims)
		req[dims] = reqs.Uint32() // the virtual dimension (003 §4.2)
		jobs = append(jobs, Job{ID: id, At: toDuration(at), Req: req, Work: drawWork(work, w.RuntimeDist, w.Runtime)})
		levels = append(levels, lv)
	}
	return jobs, levels
}

// peerClasses draws the clustered classes of workload.classes = nodes:
// each cut from a peer drawn uniformly (levelsUnder), weighted by the
// number of peers capable of it (at least its template).
func peerClasses(r *rand.Rand, peers []population.Node, dims int, ratio float64) (classes [][]float64, weights []float64) {
	for range population.Classes {
		lv := levelsUnder(r, peers[r.IntN(len(peers))], dims, ratio, false)
		req := point(lv, dims)
		n := 0
		for _, p := range peers {
			if can.Capable(p.Point, req) {
				n++
			}
		}
		classes, weights = append(classes, lv), append(weights, float64(n))
	}
	return classes, weights
}

// point maps level positions to a requirement coordinate (0 where
// unconstrained), the virtual coordinate left 0.
func point(lv []float64, dims int) can.Point {
	req := make(can.Point, dims+1)
	for d, x := range lv {
		if x >= 0 {
			req[d] = population.Coord(x, len(population.ResourceAt(d).Levels))
		}
	}
	return req
}

// levelsUnder draws one requirement cut from peer p: per resource
// dimension, -1 if unconstrained (probability 1-ratio), else p's level
// index — plus, if fractional, a uniform part of p's position within it —
// so p (and every peer at least as strong) is capable of it.
func levelsUnder(r *rand.Rand, p population.Node, dims int, ratio float64, fractional bool) []float64 {
	lv := make([]float64, dims)
	for d := range lv {
		if r.Float64() >= ratio {
			lv[d] = -1
			continue
		}
		k := math.Floor(p.Levels[d])
		lv[d] = k
		if fractional {
			lv[d] += r.Float64() * (p.Levels[d] - k)
		}
	}
	return lv
}

// drawLevels draws one requirement: per resource dimension, -1 if
// unconstrained (probability 1-ratio), else a level index drawn with
// geometric weights, plus (if fractional) a uniform position within the
// level below the top one, as population draws mixed nodes.
func drawLevels(r *rand.Rand, dims int, ratio float64, fractional bool) []float64 {
	lv := make([]float64, dims)
	for d := range lv {
		if r.Float64() >= ratio {
			lv[d] = -1
			continue
		}
		n := len(population.ResourceAt(d).Levels)
		k := population.Pick(r, population.Geometric(n))
		lv[d] = float64(k)
		if fractional && k < n-1 {
			lv[d] += r.Float64()
		}
	}
	return lv
}

// drawWork draws a running time on a canonical node around mean t:
// uniform in [0.5t, 1.5t], normal (sd t/4, at least 0.05t) or exponential.
// It is at least 1ns.
func drawWork(r *rand.Rand, dist string, t time.Duration) time.Duration {
	mean := float64(t)
	var x float64
	switch dist {
	case scenario.RuntimeNormal:
		x = max(mean*(1+r.NormFloat64()/4), 0.05*mean)
	case scenario.RuntimeExponential:
		x = mean * r.ExpFloat64()
	default: // scenario.RuntimeUniform
		x = mean * (0.5 + r.Float64())
	}
	return max(toDuration(x), 1)
}

// toDuration rounds x nanoseconds to a Duration, saturating at the largest.
func toDuration(x float64) time.Duration {
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(math.Round(x))
}

// Categorize gives jobs their categorical constraints (002 §5.1.2, §5.2)
// from a PCG stream of their own, so that every other draw stays the same:
// a share c.Exact of them accept one combination among the first
// p.InUse() (uniformly), a share c.Range constrain each type to the values
// between two uniform draws — or, with probability c.DontCare, leave it
// free — and the rest accept every combination. Each job's CID is the
// union of the combinations it accepts. Nothing happens unless c.On().
func Categorize(jobs []Job, c scenario.WorkloadCategorical, p scenario.PeersCategorical, seed uint64) {
	if !c.On() || !p.On() {
		return
	}
	space := p.Space()
	r := rand.New(rand.NewPCG(seed, stream+3))
	for i := range jobs {
		var con categorical.Constraint
		switch u := r.Float64(); {
		case u < c.Exact:
			con = categorical.Exact(space.ValuesOf(r.IntN(p.InUse())))
		case u < c.Exact+c.Range:
			con = categorical.Any(space)
			for t, n := range space.Values {
				if r.Float64() < c.DontCare {
					continue
				}
				a, b := r.IntN(n), r.IntN(n)
				con[t] = categorical.Accept{Lo: min(a, b), Hi: max(a, b)}
			}
		default:
			con = categorical.Any(space)
		}
		jobs[i].Constraint, jobs[i].CID = con, categorical.JobCID(space, con)
	}
}
