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
