package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// base is the default workload with n jobs.
func base(n int) scenario.Workload {
	w := scenario.Default().Workload
	w.Jobs = n
	return w
}

// long is a run long enough for every job of n at the default rate.
const long = 1000 * time.Hour

func TestArrivals(t *testing.T) {
	cases := []struct {
		name  string
		jobs  int
		tau   time.Duration
		start time.Duration
		dims  int
	}{
		{"default", 20000, 15 * time.Second, 2 * time.Minute, 2},
		{"slow", 20000, 30 * time.Second, time.Hour, 3},
		{"fast", 20000, 100 * time.Millisecond, 0, 1},
		{"one", 1, 15 * time.Second, time.Minute, 7},
		{"many dims", 2000, 15 * time.Second, time.Minute, 12},
	}
	for _, c := range cases {
		for _, seed := range []uint64{1, 2, 99} {
			w := base(c.jobs)
			w.Interarrival, w.Start = c.tau, c.start
			jobs := Generate(w, c.dims, long, seed, nil)
			if len(jobs) != c.jobs {
				t.Fatalf("%s seed %d: %d jobs, want %d", c.name, seed, len(jobs), c.jobs)
			}
			prev := c.start
			for i, j := range jobs {
				if j.ID != uint64(i+1) {
					t.Fatalf("%s seed %d: job %d has ID %d", c.name, seed, i, j.ID)
				}
				if j.At < prev {
					t.Fatalf("%s seed %d: job %d at %v, before %v (the previous job or the start)", c.name, seed, j.ID, j.At, prev)
				}
				if len(j.Req) != c.dims+1 {
					t.Fatalf("%s seed %d: job %d requirement %v has %d coordinates, want %d", c.name, seed, j.ID, j.Req, len(j.Req), c.dims+1)
				}
				prev = j.At
			}
			if c.jobs < 10000 {
				continue
			}
			// The gaps (the first from the start) are exponential with mean
			// τ: their mean is within a few standard errors (τ/√n ≈ 0.7%).
			mean := float64(jobs[len(jobs)-1].At-c.start) / float64(len(jobs))
			if rel := mean/float64(c.tau) - 1; math.Abs(rel) > 0.03 {
				t.Errorf("%s seed %d: mean inter-arrival %v, want %v ± 3%%", c.name, seed, time.Duration(mean), c.tau)
			}
			// Exponential: the standard deviation of the gaps is the mean too.
			var ss float64
			prev = c.start
			for _, j := range jobs {
				g := float64(j.At-prev) - mean
				ss += g * g
				prev = j.At
			}
			if sd := math.Sqrt(ss / float64(len(jobs))); math.Abs(sd/mean-1) > 0.05 {
				t.Errorf("%s seed %d: gaps' standard deviation %v, want ≈ their mean %v (exponential)", c.name, seed, time.Duration(sd), time.Duration(mean))
			}
		}
	}
}

func TestStartRespected(t *testing.T) {
	for _, start := range []time.Duration{0, time.Minute, 5 * time.Hour} {
		for seed := uint64(1); seed <= 20; seed++ {
			w := base(50)
			w.Start = start
			jobs := Generate(w, 2, start+long, seed, nil)
			if len(jobs) == 0 || jobs[0].At < start {
				t.Fatalf("start %v seed %d: first job %+v", start, seed, jobs[0])
			}
		}
	}
	// The first arrival is one exponential gap after the start: its mean
	// over many seeds is τ.
	var sum time.Duration
	const seeds = 4000
	for seed := uint64(1); seed <= seeds; seed++ {
		w := base(1)
		sum += Generate(w, 2, long, seed, nil)[0].At - w.Start
	}
	if mean := sum / seeds; math.Abs(float64(mean)/float64(15*time.Second)-1) > 0.06 {
		t.Errorf("first arrival %v after the start on average over %d seeds, want ≈ 15s", mean, seeds)
	}
}

func TestNoJobsPastTheEnd(t *testing.T) {
	cases := []struct {
		duration time.Duration
		start    time.Duration
	}{
		{10 * time.Minute, 2 * time.Minute}, // ≈ 32 of 1000 jobs fit
		{time.Hour, time.Minute},
		{2*time.Minute + time.Second, 2 * time.Minute}, // at most a few
	}
	for _, c := range cases {
		for _, seed := range []uint64{1, 7, 1234} {
			w := base(1000)
			w.Start = c.start
			jobs := Generate(w, 2, c.duration, seed, nil)
			all := Generate(w, 2, long, seed, nil)
			if len(jobs) >= len(all) {
				t.Fatalf("duration %v seed %d: %d jobs, want fewer than %d", c.duration, seed, len(jobs), len(all))
			}
			for _, j := range jobs {
				if j.At > c.duration {
					t.Fatalf("duration %v seed %d: job %d at %v, after the end", c.duration, seed, j.ID, j.At)
				}
			}
			// The run's jobs are the longer run's first jobs, and the next
			// one would have arrived after the end.
			if len(jobs) > 0 && !reflect.DeepEqual(jobs, all[:len(jobs)]) {
				t.Fatalf("duration %v seed %d: the jobs differ from the first %d of a longer run", c.duration, seed, len(jobs))
			}
			if next := all[len(jobs)]; next.At <= c.duration {
				t.Fatalf("duration %v seed %d: job %d at %v was not generated", c.duration, seed, next.ID, next.At)
			}
		}
	}
	if jobs := Generate(base(0), 2, long, 1, nil); len(jobs) != 0 {
		t.Fatalf("jobs: 0 generated %d jobs", len(jobs))
	}
	w := base(10)
	w.Start = 10 * time.Minute
	if jobs := Generate(w, 2, 10*time.Minute, 1, nil); len(jobs) != 0 {
		t.Fatalf("a workload starting at the end of the run generated %d jobs", len(jobs))
	}
}

func TestConstraintRatio(t *testing.T) {
	for _, kind := range []string{scenario.WorkloadMixed, scenario.WorkloadClustered} {
		for _, ratio := range []float64{0, 0.2, 0.43, 0.8, 1} {
			for _, seed := range []uint64{1, 5} {
				w := base(20000)
				w.ConstraintRatio, w.Kind = ratio, kind
				const dims = 3
				jobs, levels := generate(w, dims, long, seed, nil)
				constrained, low, n := 0, 0, 0
				for i, j := range jobs {
					for d := 0; d < dims; d++ {
						n++
						if levels[i][d] < 0 {
							if j.Req[d] != 0 {
								t.Fatalf("%s ratio %g seed %d: job %d unconstrained in %d but coordinate %d", kind, ratio, seed, j.ID, d, j.Req[d])
							}
							continue
						}
						constrained++
						if levels[i][d] < 1 {
							low++
						}
						if want := population.Coord(levels[i][d], len(population.ResourceAt(d).Levels)); j.Req[d] != want {
							t.Fatalf("%s ratio %g seed %d: job %d level %g in %d maps to %d, want %d", kind, ratio, seed, j.ID, levels[i][d], d, j.Req[d], want)
						}
					}
				}
				got := float64(constrained) / float64(n)
				// Mixed: 60000 independent draws (standard error < 0.002).
				// Clustered: only 8 classes are drawn, so one seed's ratio
				// follows its classes (TestClusteredConstraintRatio
				// averages over seeds); only 0 and 1 are exact.
				tol := 0.01
				if kind == scenario.WorkloadClustered {
					tol = 1
				}
				if ratio == 0 || ratio == 1 {
					tol = 0
				}
				if math.Abs(got-ratio) > tol {
					t.Errorf("%s ratio %g seed %d: %.4f of requirements constrained, want %g ± %g", kind, ratio, seed, got, ratio, tol)
				}
				// Most constrained requirements are modest: half at the
				// lowest level (geometric weights), as most nodes are weak.
				if kind == scenario.WorkloadMixed && constrained > 0 {
					if f := float64(low) / float64(constrained); math.Abs(f-0.5) > 0.02 {
						t.Errorf("%s ratio %g seed %d: %.3f of constrained requirements at the lowest level, want ≈ 0.5", kind, ratio, seed, f)
					}
				}
			}
		}
	}
}

// TestClusteredConstraintRatio: a clustered workload's classes are drawn
// with the constraint ratio and picked independently of their constraints,
// so over many seeds each resource of a job is constrained with the ratio.
func TestClusteredConstraintRatio(t *testing.T) {
	for _, ratio := range []float64{0.2, 0.43, 0.8} {
		const seeds, dims = 300, 3
		var sum float64
		for seed := uint64(1); seed <= seeds; seed++ {
			w := base(1000)
			w.Kind, w.ConstraintRatio = scenario.WorkloadClustered, ratio
			jobs, levels := generate(w, dims, long, seed, nil)
			constrained := 0
			for i := range jobs {
				for _, x := range levels[i] {
					if x >= 0 {
						constrained++
					}
				}
			}
			sum += float64(constrained) / float64(len(jobs)*dims)
		}
		// One seed's ratio has a standard deviation of about 0.17; the
		// mean over 300 seeds, about 0.01.
		if got := sum / seeds; math.Abs(got-ratio) > 0.04 {
			t.Errorf("ratio %g: %.4f of requirements constrained on average over seeds 1..%d, want %g ± 0.04", ratio, got, seeds, ratio)
		}
	}
}

func TestMixedRequirementsWithinCatalog(t *testing.T) {
	w := base(20000)
	w.ConstraintRatio = 1
	const dims = 9 // past the named catalog resources
	jobs, levels := generate(w, dims, long, 3, nil)
	for i := range jobs {
		for d, x := range levels[i] {
			n := float64(len(population.ResourceAt(d).Levels))
			// Never beyond the top level: a top-level requirement is the
			// top level exactly, which the strongest nodes meet.
			if x < 0 || x > n-1 {
				t.Fatalf("job %d level %g in dimension %d, outside [0, %g]", jobs[i].ID, x, d, n-1)
			}
		}
	}
}

func TestClustered(t *testing.T) {
	for _, ratio := range []float64{0.43, 0.8, 1} {
		for _, seed := range []uint64{1, 2, 3, 42} {
			w := base(5000)
			w.Kind, w.ConstraintRatio = scenario.WorkloadClustered, ratio
			jobs := Generate(w, 3, long, seed, nil)
			count := map[string]int{}
			for _, j := range jobs {
				count[fmt.Sprint(j.Req[:3])]++
			}
			if len(count) > population.Classes {
				t.Errorf("ratio %g seed %d: %d distinct requirements, want at most %d classes", ratio, seed, len(count), population.Classes)
			}
			if ratio == 1 && len(count) < 2 {
				t.Errorf("ratio %g seed %d: every job has the same requirements %v", ratio, seed, count)
			}
			// The commonest class holds about half the jobs (more if
			// classes coincide).
			top := 0
			for _, c := range count {
				top = max(top, c)
			}
			if f := float64(top) / float64(len(jobs)); f < 0.45 {
				t.Errorf("ratio %g seed %d: the commonest requirement has %.2f of the jobs, want ≥ 0.45", ratio, seed, f)
			}
			// Identical requirements still spread over the virtual dimension.
			virtual := map[uint32]bool{}
			for _, j := range jobs {
				virtual[j.Req[3]] = true
			}
			if len(virtual) < len(jobs)-5 {
				t.Errorf("ratio %g seed %d: %d distinct virtual coordinates for %d jobs", ratio, seed, len(virtual), len(jobs))
			}
		}
	}
}

func TestWork(t *testing.T) {
	const T = time.Hour
	cases := []struct {
		dist     string
		lo, hi   time.Duration // every job's work within [lo, hi]
		meanTol  float64       // relative
		sd       float64       // expected standard deviation / T
		sdTol    float64       // relative
		wantSpan bool          // draws reach near both ends
	}{
		{scenario.RuntimeUniform, T / 2, 3 * T / 2, 0.01, 1 / math.Sqrt(12), 0.03, true},
		{scenario.RuntimeNormal, T / 20, math.MaxInt64, 0.01, 0.25, 0.03, false},
		{scenario.RuntimeExponential, 1, math.MaxInt64, 0.03, 1, 0.05, false},
	}
	for _, c := range cases {
		for _, seed := range []uint64{1, 8} {
			w := base(20000)
			w.RuntimeDist, w.Runtime = c.dist, T
			jobs := Generate(w, 2, long*10, seed, nil)
			if len(jobs) != 20000 {
				t.Fatalf("%s seed %d: %d jobs", c.dist, seed, len(jobs))
			}
			var sum, ss float64
			lo, hi := jobs[0].Work, jobs[0].Work
			for _, j := range jobs {
				if j.Work < c.lo || j.Work > c.hi {
					t.Fatalf("%s seed %d: job %d work %v outside [%v, %v]", c.dist, seed, j.ID, j.Work, c.lo, c.hi)
				}
				lo, hi = min(lo, j.Work), max(hi, j.Work)
				sum += float64(j.Work)
			}
			mean := sum / float64(len(jobs))
			for _, j := range jobs {
				ss += (float64(j.Work) - mean) * (float64(j.Work) - mean)
			}
			sd := math.Sqrt(ss/float64(len(jobs))) / float64(T)
			if math.Abs(mean/float64(T)-1) > c.meanTol {
				t.Errorf("%s seed %d: mean work %v, want %v ± %g%%", c.dist, seed, time.Duration(mean), T, 100*c.meanTol)
			}
			if math.Abs(sd/c.sd-1) > c.sdTol {
				t.Errorf("%s seed %d: work standard deviation %.4f T, want %.4f T", c.dist, seed, sd, c.sd)
			}
			if c.wantSpan && (lo > c.lo+T/100 || hi < c.hi-T/100) {
				t.Errorf("%s seed %d: work spans [%v, %v], want nearly [%v, %v]", c.dist, seed, lo, hi, c.lo, c.hi)
			}
		}
	}
	// Short means still give positive work; huge ones saturate.
	w := base(1000)
	w.RuntimeDist, w.Runtime = scenario.RuntimeExponential, time.Nanosecond
	for _, j := range Generate(w, 2, long, 1, nil) {
		if j.Work < 1 {
			t.Fatalf("work %v with a 1ns mean", j.Work)
		}
	}
	w.Runtime = math.MaxInt64 / 2
	for _, j := range Generate(w, 2, long, 1, nil) {
		if j.Work < 1 {
			t.Fatalf("work %v with a huge mean overflowed", j.Work)
		}
	}
}

func TestDeterminism(t *testing.T) {
	for _, kind := range []string{scenario.WorkloadMixed, scenario.WorkloadClustered} {
		w := base(500)
		w.Kind = kind
		a, b := Generate(w, 3, long, 7, nil), Generate(w, 3, long, 7, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: seed 7 gave two different workloads", kind)
		}
		if c := Generate(w, 3, long, 8, nil); reflect.DeepEqual(a, c) {
			t.Fatalf("%s: seeds 7 and 8 gave the same workload", kind)
		}
		// Another inter-arrival time shifts the arrivals only; another
		// running-time distribution changes the work only.
		w2 := w
		w2.Interarrival, w2.Start = 20*time.Second, 5*time.Minute
		w2.RuntimeDist = scenario.RuntimeNormal
		c := Generate(w2, 3, long, 7, nil)
		for i := range a {
			if !slices.Equal(a[i].Req, c[i].Req) {
				t.Fatalf("%s: job %d's requirements changed with the arrival process: %v vs %v", kind, a[i].ID, a[i].Req, c[i].Req)
			}
			if a[i].At == c[i].At || a[i].Work == c[i].Work {
				t.Fatalf("%s: job %d kept its time or work: %+v vs %+v", kind, a[i].ID, a[i], c[i])
			}
		}
	}
}

func TestInvalidPanics(t *testing.T) {
	for _, w := range []scenario.Workload{
		{Jobs: 1, Kind: "uniform", RuntimeDist: scenario.RuntimeUniform},
		{Jobs: 1, Kind: scenario.WorkloadMixed, RuntimeDist: "pareto"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Generate(%+v) did not panic", w)
				}
			}()
			Generate(w, 2, long, 1, nil)
		}()
	}
}

// TestCapableMatchesLevels: with population's nodes and this package's
// jobs, comparing coordinates decides exactly what comparing level
// positions does — the CAN space orders capabilities and requirements
// alike.
func TestCapableMatchesLevels(t *testing.T) {
	for _, kinds := range [][2]string{
		{population.Mixed, scenario.WorkloadMixed},
		{population.Clustered, scenario.WorkloadClustered},
		{population.Mixed, scenario.WorkloadClustered},
		{population.Clustered, scenario.WorkloadMixed},
	} {
		const dims, seed = 3, 11
		nodes, err := population.Generate(kinds[0], 1000, dims, seed)
		if err != nil {
			t.Fatal(err)
		}
		w := base(1000)
		w.Kind = kinds[1]
		jobs, levels := generate(w, dims, long, seed, nil)
		capable := 0
		for i, j := range jobs {
			for _, n := range nodes {
				want := true
				for d := 0; d < dims; d++ {
					want = want && n.Levels[d] >= levels[i][d]
				}
				if got := can.Capable(n.Point, j.Req); got != want {
					t.Fatalf("%v seed %d: job %d (levels %v, %v) on node %v (%v): Capable %v, levels say %v",
						kinds, seed, j.ID, levels[i], j.Req, n.Levels, n.Point, got, want)
				}
				if want {
					capable++
				}
			}
		}
		f := float64(capable) / float64(len(jobs)*len(nodes))
		if capable == 0 {
			t.Errorf("%v seed %d: no node can run any job", kinds, seed)
		}
		// Mixed jobs on mixed nodes: a constrained requirement is drawn
		// like a node's level, so half the nodes meet it; with ratio r
		// over d dimensions, (1 - r/2)^d of the pairs are capable.
		if kinds[1] == scenario.WorkloadMixed && kinds[0] == population.Mixed {
			if want := math.Pow(1-w.ConstraintRatio/2, dims); math.Abs(f-want) > 0.03 {
				t.Errorf("%v seed %d: %.3f of node-job pairs capable, want ≈ %.3f", kinds, seed, f, want)
			}
		}
	}
}

// TestClassesFromNodes: with workload.classes = nodes every job has a
// capable peer in the population it was cut from, and clustered classes
// are submitted in proportion to the peers capable of them.
func TestClassesFromNodes(t *testing.T) {
	for _, pop := range []string{population.Mixed, population.Clustered} {
		for _, kind := range []string{scenario.WorkloadMixed, scenario.WorkloadClustered} {
			const dims, seed = 4, 5
			peers, err := population.Generate(pop, 300, dims, seed)
			if err != nil {
				t.Fatal(err)
			}
			w := base(3000)
			w.Kind, w.Classes, w.ConstraintRatio = kind, scenario.ClassesNodes, 0.7
			jobs := Generate(w, dims, 100*long, seed, peers)
			if len(jobs) != 3000 {
				t.Fatalf("%s/%s: %d jobs, want 3000", pop, kind, len(jobs))
			}
			count := map[string]int{}
			capable := map[string]int{}
			for _, j := range jobs {
				key := fmt.Sprint(j.Req[:dims])
				count[key]++
				n := 0
				for _, p := range peers {
					if can.Capable(p.Point, j.Req) {
						n++
					}
				}
				if n == 0 {
					t.Fatalf("%s/%s seed %d: job %d (%v) has no capable peer", pop, kind, seed, j.ID, j.Req)
				}
				capable[key] = n
			}
			if kind == scenario.WorkloadClustered && len(count) > population.Classes {
				t.Fatalf("%s/%s seed %d: %d distinct requirements, want at most %d classes", pop, kind, seed, len(count), population.Classes)
			}
		}
	}
}

// TestPeerClassesWeighedBySupply: each class cut from a peer is weighed
// by exactly the number of peers capable of it, its template among them.
func TestPeerClassesWeighedBySupply(t *testing.T) {
	const dims = 4
	for seed := uint64(1); seed <= 5; seed++ {
		peers, err := population.Generate(population.Clustered, 200, dims, seed)
		if err != nil {
			t.Fatal(err)
		}
		classes, weights := peerClasses(rand.New(rand.NewPCG(seed, 1)), peers, dims, 0.8)
		if len(classes) != population.Classes || len(weights) != population.Classes {
			t.Fatalf("seed %d: %d classes, %d weights, want %d", seed, len(classes), len(weights), population.Classes)
		}
		for c, lv := range classes {
			req := point(lv, dims)
			req[dims] = 12345
			n := 0
			for _, p := range peers {
				if can.Capable(p.Point, req) {
					n++
				}
			}
			if n == 0 || weights[c] != float64(n) {
				t.Errorf("seed %d: class %d %v weighs %v, %d peers capable (want equal, at least 1)", seed, c, lv, weights[c], n)
			}
		}
	}
}

// TestLoadSetsInterarrival: workload.load picks the inter-arrival time that
// submits that share of the peers' capacity (Σ cores × speed), measured over
// the generated arrivals, and double the load halves it.
func TestLoadSetsInterarrival(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		peers, err := population.Generate(population.Clustered, 200, 4, seed)
		if err != nil {
			t.Fatal(err)
		}
		w := scenario.Workload{Jobs: 2000, Interarrival: 20 * time.Second, Start: 2 * time.Minute, ConstraintRatio: 0.5,
			Kind: scenario.WorkloadClustered, Classes: scenario.ClassesNodes, Runtime: time.Hour, RuntimeDist: scenario.RuntimeUniform}
		if got := Interarrival(w, 4, seed, peers); got != w.Interarrival {
			t.Fatalf("seed %d: load 0: inter-arrival %v, want workload.interarrival %v", seed, got, w.Interarrival)
		}
		w.Load = 0.8
		tau := Interarrival(w, 4, seed, peers)
		var capacity, work float64
		for _, p := range peers {
			capacity += cores(p.Point, 4, false) * p.Capability(0)
		}
		jobs := Generate(w, 4, 1000*time.Hour, seed, peers)
		for _, j := range jobs {
			work += cores(j.Req, 4, true) * j.Work.Seconds()
		}
		span := (jobs[len(jobs)-1].At - w.Start).Seconds()
		if rho := work / span / capacity; math.Abs(rho-0.8) > 0.08 {
			t.Errorf("seed %d: offered load %.3f over %d jobs (inter-arrival %v), want 0.8 ± 10%%", seed, rho, len(jobs), tau)
		}
		w.Load = 1.6
		if half := Interarrival(w, 4, seed, peers); math.Abs(float64(half)*2-float64(tau)) > float64(time.Millisecond) {
			t.Errorf("seed %d: load 1.6 gives %v, want half of load 0.8's %v", seed, half, tau)
		}
	}
}
