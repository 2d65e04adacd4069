package stats

import (
	"math"
	"testing"
)

// TestCI95 checks the interval against values computed by hand: mean ± t(df)
// × s / √n, with t from the published tables.
func TestCI95(t *testing.T) {
	for _, tc := range []struct {
		xs           []float64
		mean, lo, hi float64
	}{
		{[]float64{5}, 5, 5, 5},
		// s = 1, n = 3, t(2) = 4.303: half 4.303/√3 = 2.48434
		{[]float64{1, 2, 3}, 2, 2 - 4.303/math.Sqrt(3), 2 + 4.303/math.Sqrt(3)},
		// s = √2, n = 2, t(1) = 12.706: half 12.706·√2/√2
		{[]float64{10, 12}, 11, 11 - 12.706, 11 + 12.706},
		{[]float64{7, 7, 7, 7}, 7, 7, 7},
	} {
		m, lo, hi := CI95(tc.xs)
		if math.Abs(m-tc.mean) > 1e-12 || math.Abs(lo-tc.lo) > 1e-9 || math.Abs(hi-tc.hi) > 1e-9 {
			t.Errorf("CI95(%v) = %v [%v, %v], want %v [%v, %v]", tc.xs, m, lo, hi, tc.mean, tc.lo, tc.hi)
		}
	}
	if m, _, _ := CI95(nil); !math.IsNaN(m) {
		t.Errorf("CI95(nil) mean %v, want NaN", m)
	}
	if m, lo, hi, ok := Interval([]float64{4}); ok || m != 4 || !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one value: Interval = %v [%v, %v] %v; want 4 and no interval", m, lo, hi, ok)
	}
	if _, lo, hi, ok := Interval([]float64{1, 2, 3}); !ok || lo >= hi {
		t.Errorf("three values: [%v, %v] %v", lo, hi, ok)
	}
}

// TestTQuantile975: the quantile computed from the distribution equals
// the tables' printed values — beyond 30 degrees of freedom too, where a
// normal approximation (1.96) would make intervals too narrow.
func TestTQuantile975(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706, 2: 4.303, 4: 2.776, 9: 2.262, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980, 1000: 1.962} {
		if got := TQuantile975(df); got != want {
			t.Errorf("t(%d) = %.4f, want %.3f", df, got, want)
		}
	}
	if !math.IsNaN(TQuantile975(0)) {
		t.Error("t(0) is not a quantile")
	}
}

// TestSeedsNeeded: the smallest n with t(n−1)·s/√n ≤ margin, and 0 past
// the limit.
func TestSeedsNeeded(t *testing.T) {
	// s = 1, margin 1: t(5)/√6 = 1.049 > 1, t(6)/√7 = 0.925 ≤ 1 → 7.
	if n := SeedsNeeded(1, 1, 1000); n != 7 {
		t.Errorf("SeedsNeeded(1, 1) = %d, want 7", n)
	}
	if n := SeedsNeeded(0, 0.1, 1000); n != 2 {
		t.Errorf("no spread: %d, want 2", n)
	}
	if n := SeedsNeeded(1, 0.01, 1000); n != 0 {
		t.Errorf("a margin 1000 seeds cannot reach: %d, want 0", n)
	}
	if n := SeedsNeeded(1, 0, 1000); n != 0 {
		t.Errorf("no margin: %d, want 0", n)
	}
}
