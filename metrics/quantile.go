package metrics

import (
	"math"
	"slices"
	"sync"
)

// Quantiles is a log-bucketed histogram of non-negative durations in seconds
// (16 buckets per power of two, so a reported quantile is within ~4.4% of the
// true value), from which the run summary takes p50/p99. Safe for concurrent
// use.
type Quantiles struct {
	mu     sync.Mutex
	counts map[int]uint64
	zero   uint64
	n      uint64
	sum    float64
	max    float64
}

const bucketsPerOctave = 16

// NewQuantiles returns an empty histogram.
func NewQuantiles() *Quantiles { return &Quantiles{counts: map[int]uint64{}} }

// Observe records one value (negative values count as 0).
func (q *Quantiles) Observe(v float64) {
	q.mu.Lock()
	q.n++
	if v <= 1e-9 {
		q.zero++
	} else {
		q.counts[int(math.Floor(math.Log2(v)*bucketsPerOctave))]++
		q.sum += v
		if v > q.max {
			q.max = v
		}
	}
	q.mu.Unlock()
}

// Count is the number of observations.
func (q *Quantiles) Count() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Mean is the average observation (0 when empty).
func (q *Quantiles) Mean() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return 0
	}
	return q.sum / float64(q.n)
}

// Max is the largest observation.
func (q *Quantiles) Max() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.max
}

// Quantile returns the value below which a fraction p of the observations
// lie: the geometric middle of the bucket holding the p-th observation
// (0 when empty).
func (q *Quantiles) Quantile(p float64) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p * float64(q.n)))
	if rank < 1 {
		rank = 1
	}
	if rank <= q.zero {
		return 0
	}
	seen := q.zero
	keys := make([]int, 0, len(q.counts))
	for k := range q.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		seen += q.counts[k]
		if seen >= rank {
			v := math.Exp2((float64(k) + 0.5) / bucketsPerOctave)
			return math.Min(v, q.max)
		}
	}
	return q.max
}

// QuantilesState is a copy of a histogram's buckets, which another
// process can add to its own (QuantilesState.Sub, Quantiles.Add): the
// coordinator of a run split across processes merges its workers' clock
// lags so.
type QuantilesState struct {
	Counts   map[int]uint64
	Zero, N  uint64
	Sum, Max float64
}

// State copies the histogram's buckets.
func (q *Quantiles) State() QuantilesState {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := make(map[int]uint64, len(q.counts))
	for k, v := range q.counts {
		c[k] = v
	}
	return QuantilesState{Counts: c, Zero: q.zero, N: q.n, Sum: q.sum, Max: q.max}
}

// Sub returns the observations of s that are not in o, an earlier state
// of the same histogram (Max stays s's).
func (s QuantilesState) Sub(o QuantilesState) QuantilesState {
	d := QuantilesState{Counts: map[int]uint64{}, Zero: s.Zero - o.Zero, N: s.N - o.N, Sum: s.Sum - o.Sum, Max: s.Max}
	for k, v := range s.Counts {
		if n := v - o.Counts[k]; n > 0 {
			d.Counts[k] = n
		}
	}
	return d
}

// Add adds the observations of s to the histogram.
func (q *Quantiles) Add(s QuantilesState) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, v := range s.Counts {
		q.counts[k] += v
	}
	q.zero += s.Zero
	q.n += s.N
	q.sum += s.Sum
	q.max = max(q.max, s.Max)
}
