// Package stats is the statistics gridbed's replicated results share: the
// mean of a figure over replicates (seeds) and its 95% confidence interval
// by Student's t, as gridbed reproduce judges findings and gridbed sweep
// --seeds tabulates grid points.
package stats

import "math"

// CI95 is the mean of xs and its 95% confidence interval by Student's t
// (a single value gives [x, x]; no value gives NaN).
func CI95(xs []float64) (mean, lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return mean, mean, mean
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	half := TQuantile975(len(xs)-1) * math.Sqrt(ss/(n-1)/n)
	return mean, mean - half, mean + half
}

// TQuantile975 is Student's t 97.5% quantile for df degrees of freedom (the
// normal 1.96 beyond 30).
func TQuantile975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df <= len(table) {
		return table[df-1]
	}
	return 1.96
}
