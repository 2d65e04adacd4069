package allocation

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// Hand-computed from 004 §2.1–2.2 with W = ⟨2e-5, 0.1, 0.1⟩ (004 §3).
func TestEq1AndAffinity(t *testing.T) {
	s0, s1, s3 := Synthetic[0], Synthetic[1], Synthetic[3]
	c0, c1, c4 := Compositions[0], Compositions[1], Compositions[4]
	for _, tc := range []struct {
		name        string
		c, s        Vector
		load        float64
		n           int
		ops         float64
		cost, tau   float64
		runningTime float64
	}{
		// 2e-5·1/4 = 5e-6; τ = 1/5e-6; t = 4e5·5e-6 = 2 s
		{"C0 on S0 alone", c0, s0, 0, 0, 400e3, 5e-6, 200e3, 2},
		// (n+1)/(1−λ) = 2/0.5 = 4: t = 8 s
		{"C0 on S0, one other job, λ=0.5", c0, s0, 0.5, 1, 400e3, 5e-6, 50e3, 8},
		// 2e-5·0.2/1 + 0.1·0.8/800 = 4e-6 + 1e-4
		{"C4 on S3 alone", c4, s3, 0, 0, 1.04e5, 1.04e-4, 1 / 1.04e-4, 10.816},
		// 2e-5·0.7/2 + 0.1·0.1/100 + 0.1·0.2/250 = 7e-6 + 1e-4 + 8e-5
		{"C1 on S1, two others, λ=0.25", c1, s1, 0.25, 2, 1e4, 1.87e-4, 0.75 / (3 * 1.87e-4), 1e4 * 3 * 1.87e-4 / 0.75},
		{"owner takes all", c0, s0, 1, 0, 1, 5e-6, 0, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cost(tc.c, tc.s); !near(got, tc.cost) {
				t.Errorf("Cost = %v, want %v", got, tc.cost)
			}
			if got := Affinity(tc.c, tc.s, tc.load, tc.n); !near(got, tc.tau) {
				t.Errorf("τ = %v, want %v", got, tc.tau)
			}
			if got := ExecTime(tc.ops, tc.c, tc.s, tc.load, tc.n); !(near(got, tc.runningTime) || got == tc.runningTime) {
				t.Errorf("Eq 1 t = %v, want %v", got, tc.runningTime)
			}
		})
	}
	// 0/0 = 0 (004 footnote 1); a needed resource the machine lacks: +Inf.
	if got := Cost(Vector{1, 0, 0}, Vector{2, 0, 0}); !near(got, 1e-5) {
		t.Errorf("Cost with 0/0 = %v, want 1e-5", got)
	}
	if got := Cost(Vector{0.5, 0.5, 0}, Vector{2, 0, 0}); !math.IsInf(got, 1) {
		t.Errorf("Cost without a needed disk = %v, want +Inf", got)
	}
}

// Hand-computed from 004 §2.1–2.2 under another weight vector, W =
// ⟨10⁻⁴, 10⁻², 10⁻²⟩ (allocation.weights): Reweigh's speeds give the
// affinity 004's formula gives with that W and the speeds as printed.
func TestReweighAffinity(t *testing.T) {
	w := Vector{1e-4, 1e-2, 1e-2}
	g := Reweigh(Synthetic, w)
	for _, tc := range []struct {
		name      string
		c         Vector
		m         int
		load      float64
		n         int
		cost, tau float64
	}{
		// 1e-4·0.2/1 + 1e-2·0.8/800 = 2e-5 + 1e-5 = 3e-5; τ = 1/3e-5
		{"C4 on S3 alone", Compositions[4], 3, 0, 0, 3e-5, 1 / 3e-5},
		// 1e-4·0.2/4 + 1e-2·0.8/100 = 5e-6 + 8e-5 = 8.5e-5; τ = 0.5/(2·8.5e-5)
		{"C4 on S0, one other job, λ=0.5", Compositions[4], 0, 0.5, 1, 8.5e-5, 0.5 / (2 * 8.5e-5)},
		// 1e-4·0.7/2 + 1e-2·0.1/100 + 1e-2·0.2/250 = 3.5e-5 + 1e-5 + 8e-6 = 5.3e-5
		{"C1 on S1, two others", Compositions[1], 1, 0, 2, 5.3e-5, 1 / (3 * 5.3e-5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cost(tc.c, g[tc.m]); !near(got, tc.cost) {
				t.Errorf("Cost = %v, want %v", got, tc.cost)
			}
			if got := Affinity(tc.c, g[tc.m], tc.load, tc.n); !near(got, tc.tau) {
				t.Errorf("τ = %v, want %v", got, tc.tau)
			}
		})
	}
	// 004 §3's own W leaves the speeds as printed, exactly.
	if got := Reweigh(Synthetic, Weights); !slices.Equal(got, Synthetic) {
		t.Errorf("Reweigh with 004's W = %v, want %v", got, Synthetic)
	}
	if Synthetic[3] != (Vector{1, 800, 250}) {
		t.Errorf("Reweigh changed the grid it was given: %v", Synthetic[3])
	}
}

func grid(jobs ...[]int) []Machine {
	ms := make([]Machine, len(Synthetic))
	id := uint64(0)
	for i := range ms {
		ms[i].Speed = Synthetic[i]
		if i < len(jobs) {
			for _, typ := range jobs[i] {
				id++
				ms[i].Jobs = append(ms[i].Jobs, Job{ID: id, Comp: Compositions[typ]})
			}
		}
	}
	return ms
}

func TestAllocate(t *testing.T) {
	full := grid()
	full[0].Load = 1
	for _, tc := range []struct {
		name   string
		scheme Scheme
		ms     []Machine
		typ    int
		want   int
	}{
		{"greedy: CPU job to the fastest CPU", Greedy, grid(), 0, 0},
		// C4 on S0: 2e-5·0.2/4 + 0.1·0.8/100 = 8.01e-4; on S3 1.04e-4
		{"greedy: disk job to the fastest disk", Greedy, grid(), 4, 3},
		// S0 with one C0: τ = 1/(2·5e-6) = 1e5 = τ on S1: tie, lowest index
		{"greedy: tie to the lowest index", Greedy, grid([]int{0}), 0, 0},
		{"greedy: S0 with two jobs loses to S1", Greedy, grid([]int{0, 0}), 0, 1},
		// SOCIAL on S0: 1e5 − 1e5/2 (τ of the job there with n_m = 1); on S1: 1e5
		{"social: counts the job already on S0", Social, grid([]int{0}), 0, 1},
		{"min-num: fewest jobs", MinNum, grid([]int{0}, []int{4}, nil, []int{0}), 4, 2},
		{"λ = 1 is not available", Greedy, full, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allocate(tc.scheme, Joining, tc.ms, Compositions[tc.typ]); got != tc.want {
				t.Errorf("Allocate(%v, C%d) = %d, want %d", tc.scheme, tc.typ, got, tc.want)
			}
		})
	}
	if s0, s1 := Score(Social, Joining, nil, &grid([]int{0})[0], Compositions[0]), Score(Social, Joining, nil, &grid([]int{0})[1], Compositions[0]); !near(s0, 5e4) || !near(s1, 1e5) {
		t.Errorf("SOCIAL scores = %v, %v, want 5e4, 1e5", s0, s1)
	}
}

func TestGain(t *testing.T) {
	// S0 holds C0 (k=0) and C4 (k=1); S3 is empty.
	ms := grid([]int{0, 4})
	tauC4 := 1 / (2 * 8.01e-4) // on S0 with two jobs
	// GREEDY (004 §2.3): (τ(C4, S3) − τ(C4, S0)) / τ(C4, S0)
	if got, want := Gain(Greedy, Joining, GainSums, ms, &ms[0], &ms[3], 1), (1/1.04e-4-tauC4)/tauC4; !near(got, want) {
		t.Errorf("GREEDY gain = %v, want %v", got, want)
	}
	// SOCIAL, every affinity with n_m = |J_m| (a job's sum over k jobs of
	// inverse costs I is I/(k+1)); α counted after the move: α₀ = 1/2, α₁ = 1/2.
	inv := 1/5e-6 + 1/8.01e-4
	before, after := inv/3, (1/5e-6)/2
	afterTo := (1 / 1.04e-4) / 2
	if got, want := Gain(Social, Joining, GainSums, ms, &ms[0], &ms[3], 1), (0.5*(after-before)+0.5*afterTo)/(after+before); !near(got, want) {
		t.Errorf("SOCIAL gain = %v, want %v", got, want)
	}
	// SOCIAL into S3 holding a C4: α₀ = 1/3, α₁ = 2/3.
	ms = grid([]int{0, 4}, nil, nil, []int{4})
	invTo := 1 / 1.04e-4
	beforeTo, afterTo := invTo/2, 2*invTo/3
	want := (1.0/3*(after-before) + 2.0/3*(afterTo-beforeTo)) / (after + before)
	if got := Gain(Social, Joining, GainSums, ms, &ms[0], &ms[3], 1); !near(got, want) {
		t.Errorf("SOCIAL gain into S3 = %v, want %v", got, want)
	}
}

func TestRelocate(t *testing.T) {
	spiked := func() []Machine {
		ms := grid([]int{0, 0})
		ms[0].Load = 0.95
		return ms
	}
	for _, tc := range []struct {
		name     string
		scheme   Scheme
		ms       []Machine
		m        int
		ev       Event
		theta    float64
		maxMoves int
		want     []Move
	}{
		// τ on S0 = 0.05/(2·5e-6) = 5e3; on S1 1e5 (S2 ties, S3 5e4): gain 19.
		// Then τ on S0 = 1e4, S1 5e4, S2 1e5: gain 9.
		{"greedy: owner load up empties S0", Greedy, spiked(), 0, LoadUp, 0.1, 3, []Move{{1, 0, 1}, {2, 0, 2}}},
		{"greedy: at most N moves", Greedy, spiked(), 0, LoadUp, 0.1, 1, []Move{{1, 0, 1}}},
		{"greedy: θ above every gain", Greedy, spiked(), 0, LoadUp, 20, 3, nil},
		// S1 free, S0 holds three C0: τ on S0 1/(3·5e-6) = 66667 → S1 1e5: gain 0.5;
		// then τ on S0 1e5 → S1 (one job) 1e5: gain 0.
		{"greedy: a job end pulls a job", Greedy, grid([]int{0, 0, 0}), 1, LoadDown, 0.1, 3, []Move{{1, 0, 1}}},
		{"min-num: a job end pulls from the busiest", MinNum, grid([]int{0, 0, 0}, []int{0}), 2, LoadDown, 0, 3, []Move{{3, 0, 2}}},
		{"min-num: load up pushes to the emptiest", MinNum, grid([]int{0, 0, 0}, []int{0}, []int{0}), 0, LoadUp, 0, 3, []Move{{3, 0, 3}}},
		// SOCIAL, S0's three C0 to an idle S1: Σ' = 6e5/4, Σ = 4e5/3, Σ_S1 = 1e5/2,
		// α = 2/3, 1/3: (2/3·(−16667) + 1/3·5e4) / 283333 = 0.0196. Then
		// (1/3·(1e5 − 133333) + 2/3·(66667 − 5e4)) / 233333 = 0: no second move.
		{"social: a job end pulls a job", Social, grid([]int{0, 0, 0}), 1, LoadDown, 0.01, 3, []Move{{1, 0, 1}}},
		{"social: θ above the gain", Social, grid([]int{0, 0, 0}), 1, LoadDown, 0.02, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Relocate(tc.scheme, Joining, GainSums, tc.ms, tc.m, tc.ev, tc.theta, tc.maxMoves)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Relocate = %v, want %v", got, tc.want)
			}
			n := 0
			for _, m := range tc.ms {
				n += len(m.Jobs)
			}
			for _, mv := range got {
				if !slices.ContainsFunc(tc.ms[mv.To].Jobs, func(j Job) bool { return j.ID == mv.Job }) {
					t.Errorf("job %d not on machine %d after the move", mv.Job, mv.To)
				}
			}
		})
	}
}

func TestExecRoundRobin(t *testing.T) {
	s := time.Second
	e := Exec{Speed: Synthetic[0]}
	e.Add(0, Running{ID: 1, Comp: Compositions[0], Remaining: 400e3})
	if at, ok := e.Next(); !ok || at != 2*s {
		t.Fatalf("alone: next completion %v, want 2s (Eq 1)", at)
	}
	// At 1 s job 1 has 2e5 left; two jobs share S0: 1e5 ops/s each.
	e.Add(s, Running{ID: 2, Comp: Compositions[0], Remaining: 400e3})
	if at, _ := e.Next(); at != 3*s {
		t.Fatalf("shared: next completion %v, want 3s", at)
	}
	// At 2 s job 1 has 1e5 left; λ = 0.5 halves the rate: 5e4 ops/s.
	e.SetLoad(2*s, 0.5)
	at, _ := e.Next()
	if at != 4*s {
		t.Fatalf("owner load: next completion %v, want 4s", at)
	}
	done := e.Complete(at)
	if len(done) != 1 || done[0].ID != 1 {
		t.Fatalf("Complete = %v, want job 1", done)
	}
	// Job 2: 4e5 − 1e5 (1–2 s) − 5e4·2 (2–4 s) = 2e5 left.
	r, ok := e.Remove(at, 2)
	if !ok || !near(r.Remaining, 200e3) {
		t.Fatalf("Remove = %v, %v, want 2e5 remaining", r, ok)
	}
	if _, ok := e.Next(); ok {
		t.Fatalf("an empty machine has a next completion")
	}
}

func TestData(t *testing.T) {
	a := Aeolus()
	if len(a) != 70 || a[0] != (Vector{0.70, 50, 500}) || a[26] != (Vector{2.66, 105, 1000}) || a[55] != a[26] || a[56] != (Vector{2.80, 85, 500}) || a[69] != (Vector{3.20, 80, 500}) {
		t.Fatalf("AEOLUS grid does not match 004 Table 3: %v", a)
	}
	for i, v := range a {
		if v[0] == 0 {
			t.Fatalf("S_%d missing", i)
		}
	}
	seen := map[[4]int]bool{}
	for _, o := range Orders {
		p := o
		s := p[:]
		slices.Sort(s)
		if !slices.Equal(s, []int{0, 1, 2, 3}) || seen[o] {
			t.Fatalf("order %v is not a new permutation", o)
		}
		seen[o] = true
	}
	// Table 4: ID 10 is C3, C0, C1, C2.
	if Orders[9] != [4]int{3, 0, 1, 2} {
		t.Errorf("order 10 = %v", Orders[9])
	}
	for _, c := range Compositions {
		if s := c[0] + c[1] + c[2]; !near(s, 1) {
			t.Errorf("composition %v does not add up to 1", c)
		}
	}
}

func TestJobSet(t *testing.T) {
	for _, tc := range []struct {
		set, order int
		n          int
		perType    map[int]int
	}{
		{0, 0, 1000, map[int]int{0: 200, 1: 800}},
		{1, 0, 1000, map[int]int{0: 500, 4: 500}},
		{2, 10, 2000, map[int]int{0: 500, 1: 500, 2: 500, 3: 500}},
	} {
		specs := JobSet(tc.set, tc.order, rand.New(rand.NewPCG(1, 2)))
		if len(specs) != tc.n {
			t.Fatalf("set %d: %d jobs, want %d", tc.set, len(specs), tc.n)
		}
		got := map[int]int{}
		for i, s := range specs {
			got[s.Type]++
			if s.Length < 1 || s.ID != uint64(i+1) || (i > 0 && s.Arrival < specs[i-1].Arrival) {
				t.Fatalf("set %d: bad job %+v", tc.set, s)
			}
			if tc.set == 2 && s.Arrival != Bursts[slices.Index(Orders[tc.order-1][:], s.Type)] {
				t.Fatalf("set 2 order %d: type %d arrives at %v", tc.order, s.Type, s.Arrival)
			}
		}
		for k, v := range tc.perType {
			if got[k] != v {
				t.Errorf("set %d: %d jobs of type %d, want %d", tc.set, got[k], k, v)
			}
		}
	}
	// 24% of 200 jobs with length N(400k, 8k): 48 of them.
	if c := stepCounts(200, jobSets[0][0].Steps); !slices.Equal(c, []int{48, 76, 76}) {
		t.Errorf("step counts %v, want [48 76 76]", c)
	}
}
