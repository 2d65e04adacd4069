package link

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/gridbed/gridbed/emulator/bus"
)

// Corrupt changes one byte of each message with probability p (0 by
// default): a byte at a uniform position is XORed with a uniform non-zero
// value, in a copy (the publisher's bytes are never touched). The
// receiver's frame check (actors/wire, CRC-32C over the whole message)
// catches every such change, so a corrupted message is delivered and then
// rejected by its receiver, counted there as reason "checksum" — never
// decoded into a plausible message. The decision is taken at send time;
// below a Duplicate each copy is corrupted (or not) on its own.
type Corrupt struct {
	inner               // the wrapped bus
	p     atomic.Uint64 // math.Float64bits of the probability

	mu  sync.Mutex // guards rng
	rng *rand.Rand

	corrupted atomic.Uint64
}

// CorruptStats are the counters of a Corrupt.
type CorruptStats struct {
	Corrupted uint64 // messages (copies included) published with a changed byte
}

// NewCorrupt returns a Corrupt over inner that corrupts nothing until
// SetCorrupt; its decisions derive from seed.
func NewCorrupt(inner bus.Bus, seed uint64) *Corrupt {
	return &Corrupt{inner: inner, rng: newRand(seed, streamCorrupt)}
}

// SetCorrupt makes every message published afterwards be corrupted with
// probability p. It panics if p is outside [0, 1] (see
// ValidateProbability).
func (c *Corrupt) SetCorrupt(p float64) {
	mustProbability("faults: SetCorrupt", p)
	c.p.Store(math.Float64bits(p))
}

// Probability returns the current corruption probability.
func (c *Corrupt) Probability() float64 { return math.Float64frombits(c.p.Load()) }

// Publish publishes data, or a corrupted copy of it with the corruption
// probability, to the inner bus.
func (c *Corrupt) Publish(to bus.Address, data []byte) error {
	return c.inner.Publish(to, c.corrupt(data))
}

// corrupt draws (and counts) the corruption decision of one message and
// returns what goes on: data itself, or a copy with one byte changed. One
// draw per message while 0 < p < 1, two more for a corrupted one —
// whether it is published alone or in a batch (Chain.PublishBatch). An
// empty message has nothing to change and passes.
func (c *Corrupt) corrupt(data []byte) []byte {
	p := math.Float64frombits(c.p.Load())
	if p <= 0 || len(data) == 0 {
		return data
	}
	c.mu.Lock()
	hit := p >= 1 || c.rng.Float64() < p
	var at int
	var x byte
	if hit {
		at, x = c.rng.IntN(len(data)), byte(1+c.rng.IntN(255))
	}
	c.mu.Unlock()
	if !hit {
		return data
	}
	c.corrupted.Add(1)
	cp := cloneBytes(data)
	cp[at] ^= x
	return cp
}

// Faults returns the Corrupt's own counters.
func (c *Corrupt) Faults() CorruptStats { return CorruptStats{Corrupted: c.corrupted.Load()} }
