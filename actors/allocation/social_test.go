package allocation

import (
	"math/rand/v2"
	"testing"
)

// welfare is Σ_k τ(k, m) over m's jobs, each with its own n_m (004 §2.2:
// the affinity every job has now).
func welfare(m *Machine) float64 {
	w := 0.0
	for _, k := range m.Jobs {
		w += m.affinity(k.Comp)
	}
	return w
}

// TestSocialOwnIsWelfareChange: under the Own reading SOCIAL's score is
// exactly the change of the machine's sum of affinities when the job
// joins (004 §2.2: τ(k, m)/(n_m + 1) is what each job there loses); under
// Joining it is not (it charges less).
func TestSocialOwnIsWelfareChange(t *testing.T) {
	const seed = 42
	rng := rand.New(rand.NewPCG(seed, 1))
	joiningDiffers := false
	for trial := range 200 {
		m := Machine{Speed: Aeolus()[rng.IntN(70)], Load: []float64{0, 0.5, 0.95}[rng.IntN(3)]}
		for i := range rng.IntN(6) {
			m.Jobs = append(m.Jobs, Job{ID: uint64(i), Comp: Compositions[rng.IntN(5)]})
		}
		c := Compositions[rng.IntN(5)]
		before := welfare(&m)
		after := m
		after.Jobs = append(append([]Job(nil), m.Jobs...), Job{ID: 99, Comp: c})
		want := welfare(&after) - before
		if got := Score(Social, Own, nil, &m, c); !near(got, want) {
			t.Fatalf("seed %d, trial %d: Own score %v, welfare change %v (machine %+v, job %v)", seed, trial, got, want, m, c)
		}
		if len(m.Jobs) > 0 && !near(Score(Social, Joining, nil, &m, c), want) {
			joiningDiffers = true
		}
	}
	if !joiningDiffers {
		t.Errorf("seed %d: the Joining score equalled the welfare change on every machine with jobs", seed)
	}
}

// owned sets the owner load of machines idx of ms to 1 (not available).
func owned(ms []Machine, idx ...int) []Machine {
	for _, i := range idx {
		ms[i].Load = 1
	}
	return ms
}

func TestSocialReadings(t *testing.T) {
	four := func(n int) []int {
		out := make([]int, n)
		return out // n C_0 jobs
	}
	for _, tc := range []struct {
		name string
		r    Reading
		ms   []Machine
		typ  int
		want int
	}{
		// S0 holds one C_0: Joining charges τ/2 = 5e4 of the 2e5 the job
		// there has, so S0 scores 1e5 − 5e4 against S1's 1e5 (empty).
		{"joining: the empty S1", Joining, grid([]int{0}), 0, 1},
		// Own: S0's score is exactly 0 (the job there loses 1e5, the new
		// one gains 1e5); S1, S2 empty score 5e4 > 0.
		{"own: the empty S1", Own, grid([]int{0}), 0, 1},
		// Every machine holds only C_0 jobs: every Own score is 0, a tie:
		// Own takes the lowest index, S0 with four jobs; OwnGreedy the
		// largest τ(j, m): S1 (τ = 1/(2·1e-5) = 5e4 against S0's
		// 1/(5·5e-6) = 4e4).
		{"own: ties to the lowest index", Own, grid(four(4), []int{0}, []int{0}, []int{0}), 0, 0},
		{"own-greedy: ties to the largest affinity", OwnGreedy, grid(four(4), []int{0}, []int{0}, []int{0}), 0, 1},
		// A C_3 job where C_0 jobs run on S1 (six) and S2 (one), S0 and S3
		// taken by their owners: the raw affinities (a C_0 job's is 200
		// times a C_3 job's here) make it score negative on both, least
		// on the most crowded, S1 (fidelity/004.md: the runaway).
		{"joining: a disk job among CPU jobs piles on the crowded machine", Joining, owned(grid(nil, four(6), []int{0}, nil), 0, 3), 3, 1},
		{"own: a disk job among CPU jobs piles on the crowded machine", Own, owned(grid(nil, four(6), []int{0}, nil), 0, 3), 3, 1},
		// A C_3 job where C_0 jobs run everywhere: under Joining it goes
		// to S3 (the one C_0 job there has the lowest affinity); relative
		// to each job's best machine too, S3 being the fastest disk.
		{"relative: a disk job among CPU jobs to the fastest disk", Relative, grid(four(4), []int{0}, []int{0}, []int{0}), 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allocate(Social, tc.r, tc.ms, Compositions[tc.typ]); got != tc.want {
				scores := make([]float64, len(tc.ms))
				for i := range tc.ms {
					scores[i] = Score(Social, tc.r, tc.ms, &tc.ms[i], Compositions[tc.typ])
				}
				t.Errorf("Allocate(social %v, C%d) = %d, want %d (scores %v)", tc.r, tc.typ, got, tc.want, scores)
			}
		})
	}
	for _, name := range Readings() {
		if r, ok := ParseReading(name); !ok || r.String() != name {
			t.Errorf("ParseReading(%q) = %v, %v", name, r, ok)
		}
	}
}

// TestSocialGainNormalization: moving one of n C0 jobs from S_1 to the
// idle S_2 (the same speeds), the SOCIAL relocator's gain (004 §2.3) over
// the source machine's sums (GainSums, 004's formula) is one job's worth
// over a whole machine's — below θ = 10% once n is a few — while over the
// moved job's own affinity (GainJob) it stays well above θ. With
// c = Σ_i W[i]C_0[i]/S_1[i]:
//
//	Joining: Σ'_m = n/(c(n+1)), Σ_m = (n−1)/(cn), Σ_m' = 1/(2c),
//	         α₀ = (n−1)/n, α₁ = 1/n; the job's term of Σ'_m 1/(c(n+1)).
//	Own:     Σ'_m = Σ_m = 1/c, Σ_m' = 1/c; the job's term 1/(cn):
//	         GainSums 1/(2n), GainJob 1.
func TestSocialGainNormalization(t *testing.T) {
	for _, tc := range []struct {
		r    Reading
		g    SocialGain
		n    int
		want func(n float64) float64
		move bool // above θ = 0.1
	}{
		{Joining, GainSums, 3, joiningNum(func(n float64) float64 { return n/(n+1) + (n-1)/n }), false},
		{Joining, GainSums, 28, joiningNum(func(n float64) float64 { return n/(n+1) + (n-1)/n }), false},
		{Joining, GainJob, 3, joiningNum(func(n float64) float64 { return 1 / (n + 1) }), true},
		{Joining, GainJob, 28, joiningNum(func(n float64) float64 { return 1 / (n + 1) }), true},
		{Own, GainSums, 3, func(n float64) float64 { return 1 / (2 * n) }, true},
		{Own, GainSums, 28, func(n float64) float64 { return 1 / (2 * n) }, false},
		{Own, GainJob, 28, func(float64) float64 { return 1 }, true},
		{Relative, GainJob, 28, joiningNum(func(n float64) float64 { return 1 / (n + 1) }), true},
	} {
		ms := make([]Machine, len(Synthetic))
		for i := range ms {
			ms[i].Speed = Synthetic[i]
		}
		for i := range tc.n {
			ms[1].Jobs = append(ms[1].Jobs, Job{ID: uint64(i + 1), Comp: Compositions[0]})
		}
		got := Gain(Social, tc.r, tc.g, ms, &ms[1], &ms[2], 0)
		if want := tc.want(float64(tc.n)); !near(got, want) {
			t.Errorf("%v/%v, %d jobs: gain %v, want %v", tc.r, tc.g, tc.n, got, want)
		}
		if moved := len(Relocate(Social, tc.r, tc.g, ms, 2, LoadDown, 0.1, 1)) == 1; moved != tc.move {
			t.Errorf("%v/%v, %d jobs: gain %.4f, a move at θ = 0.1: %v, want %v", tc.r, tc.g, tc.n, got, moved, tc.move)
		}
	}
}

// joiningNum is the Joining gain of TestSocialGainNormalization over the
// denominator den(n) (in units of 1/c).
func joiningNum(den func(n float64) float64) func(n float64) float64 {
	return func(n float64) float64 {
		return (-(n-1)/(n*n*(n+1)) + 1/(2*n)) / den(n)
	}
}
