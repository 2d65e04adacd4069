package link

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
)

// Delay holds each message back by a sample of its latency, plus a sample of
// the inter-region latency when sender and receiver are in different regions.
// A message with a zero delay is published to the inner bus at once;
// otherwise its bytes are copied and the Scheduler publishes them to the
// inner bus at Now()+delay. Every message draws its own delay, so jitter and
// non-constant distributions reorder messages (see the package doc).
// Closing a Delay closes the inner bus: messages still being delayed are
// published when due, if the scheduler still runs then, and fail
// (PublishErrs); if it does not, they stay in DelayStats.Pending.
type Delay struct {
	inner // the wrapped bus
	sched Scheduler
	cfg   atomic.Pointer[delayConfig] // immutable snapshot, read without the lock

	mu  sync.Mutex // guards rng and serialises writers of cfg
	rng *rand.Rand

	delayed     atomic.Uint64
	total       atomic.Int64
	publishErrs atomic.Uint64
	pending     atomic.Int64
}

type delayConfig struct {
	lat      Latency
	regionOf func(bus.Address) int
	inter    Latency
	matrix   [][]Latency // per region pair (from, to), instead of inter when set
	zero     bool        // no message is delayed
}

// DelayStats are the counters of a Delay.
type DelayStats struct {
	Delayed     uint64        // messages handed to the scheduler with a delay > 0
	Total       time.Duration // sum of the delays of the Delayed messages
	PublishErrs uint64        // delayed messages whose publish to the inner bus failed when due (e.g. bus closed)
	// Pending counts the delayed messages not yet due: handed to the
	// scheduler and not yet published to the inner bus. Once the scheduler
	// has stopped for good (the end of a run) they are in flight for ever:
	// Delayed = Pending + the delayed messages published (or failed) when
	// due.
	Pending uint64
}

// NewDelay returns a Delay over inner that delays nothing until SetLatency
// or SetRegions; sched runs the delayed publishes, and the delays derive
// from seed.
func NewDelay(inner bus.Bus, sched Scheduler, seed uint64) *Delay {
	if sched == nil {
		panic("faults: NewDelay: nil Scheduler")
	}
	d := &Delay{inner: inner, sched: sched, rng: newRand(seed, streamDelay)}
	d.cfg.Store(&delayConfig{zero: true})
	return d
}

// SetLatency sets the latency of every message published afterwards. It
// panics if l is invalid (see Latency.Validate).
func (d *Delay) SetLatency(l Latency) {
	if err := l.Validate(); err != nil {
		panic("faults: SetLatency: " + err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := *d.cfg.Load()
	c.lat = l
	d.store(c)
}

// SetRegions places every address in a region (regionOf; nil means one
// region) and adds a sample of inter to the delay of every message published
// afterwards between two regions. regionOf must be safe for concurrent calls;
// it is called twice per message when inter is not zero. It panics if inter
// is invalid (see Latency.Validate).
func (d *Delay) SetRegions(regionOf func(bus.Address) int, inter Latency) {
	if err := inter.Validate(); err != nil {
		panic("faults: SetRegions: " + err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := *d.cfg.Load()
	c.regionOf, c.inter = regionOf, inter
	d.store(c)
}

// SetRegionMatrix is SetRegions with a latency per pair of regions: a
// message from region i to region j (i may equal j) gets an extra sample of
// m[i][j]; pairs outside the matrix get none. It panics if an entry is
// invalid.
func (d *Delay) SetRegionMatrix(regionOf func(bus.Address) int, m [][]Latency) {
	zero := true
	for _, row := range m {
		for _, l := range row {
			if err := l.Validate(); err != nil {
				panic("faults: SetRegionMatrix: " + err.Error())
			}
			zero = zero && l.IsZero()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := *d.cfg.Load()
	c.regionOf, c.inter, c.matrix = regionOf, Latency{}, m
	if zero {
		c.matrix = nil
	}
	d.store(c)
}

func (d *Delay) store(c delayConfig) {
	c.zero = c.lat.IsZero() && (c.regionOf == nil || (c.inter.IsZero() && c.matrix == nil))
	d.cfg.Store(&c)
}

// pairLatency is the extra latency of a message from region rf to rt.
func (c *delayConfig) pairLatency(rf, rt int) (Latency, bool) {
	if c.matrix != nil {
		if rf < 0 || rf >= len(c.matrix) || rt < 0 || rt >= len(c.matrix[rf]) || c.matrix[rf][rt].IsZero() {
			return Latency{}, false
		}
		return c.matrix[rf][rt], true
	}
	return c.inter, rf != rt && !c.inter.IsZero()
}

// Latency returns the current latency.
func (d *Delay) Latency() Latency { return d.cfg.Load().lat }

// Publish publishes data to the inner bus after its delay. A delayed
// publish never fails here; a failure when it is due is counted in
// DelayStats.PublishErrs.
func (d *Delay) Publish(to bus.Address, data []byte) error {
	if delay := d.sample(to, data); delay > 0 {
		d.hold(to, data, delay)
		return nil
	}
	return d.inner.Publish(to, data)
}

// sample draws the delay of one message: the same draws whether it is
// published alone or in a batch (Chain.PublishBatch). 0 means at once.
func (d *Delay) sample(to bus.Address, data []byte) time.Duration {
	c := d.cfg.Load()
	if c.zero {
		return 0
	}
	cross, pair := false, Latency{}
	if c.regionOf != nil && (!c.inter.IsZero() || c.matrix != nil) {
		if from, ok := wire.PeekFrom(data); ok {
			pair, cross = c.pairLatency(c.regionOf(bus.Address(from)), c.regionOf(to))
		}
	}
	var delay time.Duration
	if !c.lat.IsZero() || cross {
		d.mu.Lock()
		delay = c.lat.Sample(d.rng)
		if cross {
			delay = addSat(delay, pair.Sample(d.rng))
		}
		d.mu.Unlock()
	}
	return delay
}

// hold hands a copy of data to the scheduler, which publishes it to the
// inner bus delay (> 0) from now.
func (d *Delay) hold(to bus.Address, data []byte, delay time.Duration) {
	d.delayed.Add(1)
	d.total.Add(int64(delay))
	d.pending.Add(1)
	cp := cloneBytes(data)
	d.sched.At(addSat(d.sched.Now(), delay), func() {
		d.pending.Add(-1)
		if err := d.inner.Publish(to, cp); err != nil {
			d.publishErrs.Add(1)
		}
	})
}

func addSat(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Faults returns the Delay's own counters.
func (d *Delay) Faults() DelayStats {
	return DelayStats{
		Delayed:     d.delayed.Load(),
		Total:       time.Duration(d.total.Load()),
		PublishErrs: d.publishErrs.Load(),
		Pending:     uint64(max(d.pending.Load(), 0)),
	}
}
