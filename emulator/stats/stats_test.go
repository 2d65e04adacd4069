package stats

import (
	"math"
	"testing"
)

// TestCI95 checks the interval against values computed by hand: mean ± t(df)
// × s / √n.
func TestCI95(t *testing.T) {
	for _, tc := range []struct {
		xs           []float64
		mean, lo, hi float64
	}{
		{[]float64{5}, 5, 5, 5},
		// s = 1, n = 3, t(2) = 4.303: half 4.303/√3 = 2.48434
		{[]float64{1, 2, 3}, 2, 2 - 4.303/math.Sqrt(3), 2 + 4.303/math.Sqrt(3)},
		// s = √2, n = 2, t(1) = 12.706: half 12.706·√2/√2 = 12.706
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
	if TQuantile975(1000) != 1.96 || TQuantile975(30) != 2.042 {
		t.Error("t quantiles beyond and at the table's end")
	}
}
