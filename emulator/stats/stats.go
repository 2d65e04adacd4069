// Package stats is the statistics gridbed's replicated results share: the
// mean of a figure over replicates (seeds) and its 95% confidence interval
// by Student's t, as gridbed reproduce judges findings and gridbed sweep
// --seeds tabulates grid points, and how many replicates an interval of a
// given half-width needs.
package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// CI95 is the mean of xs and its 95% confidence interval by Student's t
// with the exact quantile for len(xs)−1 degrees of freedom. A single value
// has no interval: lo and hi are the value itself, and a caller that
// prints an interval must check len(xs) ≥ 2 first (Interval does). No
// value gives NaN.
func CI95(xs []float64) (mean, lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	mean = Mean(xs)
	if len(xs) < 2 {
		return mean, mean, mean
	}
	half := TQuantile975(len(xs)-1) * StdDev(xs) / math.Sqrt(float64(len(xs)))
	return mean, mean - half, mean + half
}

// Interval is CI95 with a flag: ok is false when xs has fewer than two
// values, which give no interval (lo and hi are then NaN).
func Interval(xs []float64) (mean, lo, hi float64, ok bool) {
	if len(xs) < 2 {
		m := math.NaN()
		if len(xs) == 1 {
			m = xs[0]
		}
		return m, math.NaN(), math.NaN(), false
	}
	mean, lo, hi = CI95(xs)
	return mean, lo, hi, true
}

// Mean is the arithmetic mean of xs (NaN for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// StdDev is the sample standard deviation of xs (n − 1 in the
// denominator; NaN for fewer than two values).
func StdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// TQuantile975 is Student's t 97.5% quantile for df degrees of freedom
// (df ≥ 1), computed from the distribution for every df (12.706 for 1,
// 2.262 for 9, 2.021 for 40, 1.984 for 100, tending to the normal 1.960)
// and rounded to the three decimals statistical tables print, so that an
// interval checked by hand against a table agrees to the last digit (the
// rounding moves a bound by less than 0.01%).
func TQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	return math.Round(t*1000) / 1000
}

// SeedsNeeded is the smallest number of replicates n (2 ≤ n ≤ limit) whose
// 95% interval, with the sample standard deviation sd observed so far,
// would be no wider than margin on either side of the mean:
// t(n−1)·sd/√n ≤ margin. It is 0 when even limit replicates would not do
// (or margin is not positive), so a caller says "more than limit". An sd of
// 0 needs 2.
func SeedsNeeded(sd, margin float64, limit int) int {
	if !(margin > 0) || math.IsNaN(sd) {
		return 0
	}
	for n := 2; n <= limit; n++ {
		if TQuantile975(n-1)*sd/math.Sqrt(float64(n)) <= margin {
			return n
		}
	}
	return 0
}
