package link

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/gridbed/gridbed/emulator/bus"
)

// Duplicate publishes each message twice with probability p (0 by default).
// Both copies go to the inner bus, the second with its own copy of the
// bytes; below a Delay (as in a Chain) each copy draws its own delay.
type Duplicate struct {
	inner               // the wrapped bus
	p     atomic.Uint64 // math.Float64bits of the probability

	mu  sync.Mutex // guards rng
	rng *rand.Rand

	duplicated atomic.Uint64
}

// DuplicateStats are the counters of a Duplicate.
type DuplicateStats struct {
	Duplicated uint64 // messages published twice (extra copies)
}

// NewDuplicate returns a Duplicate over inner that duplicates nothing until
// SetDuplicate; its decisions derive from seed.
func NewDuplicate(inner bus.Bus, seed uint64) *Duplicate {
	return &Duplicate{inner: inner, rng: newRand(seed, streamDuplicate)}
}

// SetDuplicate makes every message published afterwards be published twice
// with probability p. It panics if p is outside [0, 1] (see
// ValidateProbability).
func (d *Duplicate) SetDuplicate(p float64) {
	mustProbability("faults: SetDuplicate", p)
	d.p.Store(math.Float64bits(p))
}

// Probability returns the current duplication probability.
func (d *Duplicate) Probability() float64 { return math.Float64frombits(d.p.Load()) }

// Publish publishes data to the inner bus, and a second copy with the
// duplication probability. It returns the first error of the two.
func (d *Duplicate) Publish(to bus.Address, data []byte) error {
	if !d.twice() {
		return d.inner.Publish(to, data)
	}
	cp := cloneBytes(data)
	err := d.inner.Publish(to, data)
	if err2 := d.inner.Publish(to, cp); err == nil {
		err = err2
	}
	return err
}

// twice draws (and counts) the duplication decision of one message, the
// same draw whether it is published alone or in a batch
// (Chain.PublishBatch).
func (d *Duplicate) twice() bool {
	p := math.Float64frombits(d.p.Load())
	if p <= 0 {
		return false
	}
	dup := p >= 1
	if !dup {
		d.mu.Lock()
		dup = d.rng.Float64() < p
		d.mu.Unlock()
	}
	if dup {
		d.duplicated.Add(1)
	}
	return dup
}

// Faults returns the Duplicate's own counters.
func (d *Duplicate) Faults() DuplicateStats { return DuplicateStats{Duplicated: d.duplicated.Load()} }
