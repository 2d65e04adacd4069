package link

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/gridbed/gridbed/emulator/bus"
)

// Loss drops each message independently with probability p (0 by default).
// The decision is taken at send time.
type Loss struct {
	inner               // the wrapped bus
	p     atomic.Uint64 // math.Float64bits of the probability

	mu  sync.Mutex // guards rng
	rng *rand.Rand

	dropped atomic.Uint64
}

// LossStats are the counters of a Loss.
type LossStats struct {
	Dropped uint64 // messages dropped
}

// NewLoss returns a Loss over inner that drops nothing until SetLoss; its
// decisions derive from seed.
func NewLoss(inner bus.Bus, seed uint64) *Loss {
	return &Loss{inner: inner, rng: newRand(seed, streamLoss)}
}

// SetLoss makes every message published afterwards be dropped with
// probability p. It panics if p is outside [0, 1] (see ValidateProbability).
func (l *Loss) SetLoss(p float64) {
	mustProbability("faults: SetLoss", p)
	l.p.Store(math.Float64bits(p))
}

// Probability returns the current loss probability.
func (l *Loss) Probability() float64 { return math.Float64frombits(l.p.Load()) }

// Publish drops data with the loss probability and publishes it to the inner
// bus otherwise. A dropped message is not an error.
func (l *Loss) Publish(to bus.Address, data []byte) error {
	if l.lose() {
		return nil
	}
	return l.inner.Publish(to, data)
}

// lose draws (and counts) the loss decision of one message: one draw from
// the Loss's stream per message while 0 < p < 1, whether the message is
// published alone or in a batch (Chain.PublishBatch).
func (l *Loss) lose() bool {
	p := math.Float64frombits(l.p.Load())
	if p <= 0 {
		return false
	}
	drop := p >= 1
	if !drop {
		l.mu.Lock()
		drop = l.rng.Float64() < p
		l.mu.Unlock()
	}
	if drop {
		l.dropped.Add(1)
	}
	return drop
}

// Faults returns the Loss's own counters.
func (l *Loss) Faults() LossStats { return LossStats{Dropped: l.dropped.Load()} }
