// Package bustest holds the fakes the fault decorators' tests share
// (faults/link, faults/outage, faults/slow): Bus, a synchronous in-memory
// bus.Bus that counts, delivers and records what it is given, and Clock, a
// fake emulated time — a Scheduler (Now, At) that queues the functions it
// is given and runs them in time order when told, or runs them at once.
//
// It is for tests only. It imports nothing of gridbed but emulator/bus, so
// the internal tests of the packages that decorate the bus can import it
// without an import cycle. Tests that want the real deterministic driver
// (every message and timer on one seeded event loop) use emulator/sim's
// World instead: these fakes are for the tests that want to see or steer
// one decorator's calls by hand.
//
// Both are safe for concurrent use: the decorators promise concurrent
// Publish (and the live driver calls At and Now from many goroutines), and
// their tests run under -race.
package bustest

import (
	"bytes"
	"container/heap"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// ErrClosed is what a Bus returns once it is closed.
var ErrClosed = errors.New("bustest: bus closed")

// ErrCountOnly is what a count-only Bus returns from Register: it delivers
// nothing, and a test that registers on it wants a delivering bus.
var ErrCountOnly = errors.New("bustest: a count-only bus delivers nothing")

// Sent is one message a Bus accepted, as it was at Publish.
type Sent struct {
	To   bus.Address
	Data []byte        // a copy, taken at Publish: later changes to the caller's bytes do not show
	At   time.Duration // the clock's Now at Publish (WithClock), else 0
}

// Option configures a Bus.
type Option func(*Bus)

// WithClock stamps every message the Bus records with c.Now() at Publish
// (a Clock, or a sim.World). Without a clock Sent.At is 0.
func WithClock(c interface{ Now() time.Duration }) Option {
	return func(b *Bus) { b.clock = c }
}

// CountOnly makes a Bus that only counts, for benchmarks: Publish is a few
// atomic operations (no lock, no copy, no record), every accepted message
// counts as Published and, since it reaches nobody, Dropped (so the books
// of bus.Stats still close), Register fails with ErrCountOnly, and Sent
// stays empty.
func CountOnly() Option {
	return func(b *Bus) { b.countOnly = true }
}

// Bus is a synchronous bus.Bus: Publish hands the message to the handler
// registered at its address before it returns, on the caller's goroutine
// (outside the Bus's lock, so a handler may publish again). The handler
// gets the caller's own bytes, not a copy, so a test can tell whether a
// decorator copied them.
//
// It counts Stats as a transport would: Published (and Transport, one per
// Publish) for each accepted message, then Delivered when it is handed to
// a handler or Unroutable when nobody is registered at its address; after
// Close every Publish fails with ErrClosed and counts in PublishErrs. So
// Stats().Unsettled() is always 0 between publishes. It records every
// accepted message, delivered or not (Sent, SentTo).
//
// Bus does not implement bus.Batcher: the decorators take another path
// when their inner bus is a Batcher (bus.PublishBatch), so a plain fake
// must not change their path. NewBatchBus gives the batching variant.
//
// The zero Bus is a delivering, recording Bus without a clock, so a test's
// own type (one with an extra capability) can embed it.
type Bus struct {
	clock     interface{ Now() time.Duration }
	countOnly bool

	mu       sync.Mutex
	handlers map[bus.Address]bus.Handler
	stats    bus.Stats
	sent     []Sent
	batches  []int
	closed   bool

	// count-only mode
	n, transport, errs atomic.Uint64
	shut               atomic.Bool
}

// NewBus returns an open Bus with nobody registered.
func NewBus(opts ...Option) *Bus {
	b := &Bus{}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Publish delivers data to the handler registered at to, if any, and
// records a copy of it.
func (b *Bus) Publish(to bus.Address, data []byte) error {
	return b.publish(to, data, true)
}

// publish is Publish; transport says whether it is a transport message of
// its own (false for the second and later messages of a batch).
func (b *Bus) publish(to bus.Address, data []byte, transport bool) error {
	if b.countOnly {
		if b.shut.Load() {
			b.errs.Add(1)
			return ErrClosed
		}
		b.n.Add(1)
		if transport {
			b.transport.Add(1)
		}
		return nil
	}
	var at time.Duration
	if b.clock != nil {
		at = b.clock.Now()
	}
	b.mu.Lock()
	if b.closed {
		b.stats.PublishErrs++
		b.mu.Unlock()
		return ErrClosed
	}
	b.stats.Published++
	if transport {
		b.stats.Transport++
	}
	b.sent = append(b.sent, Sent{To: to, Data: bytes.Clone(data), At: at})
	h := b.handlers[to]
	if h == nil {
		b.stats.Unroutable++
	} else {
		b.stats.Delivered++
	}
	b.mu.Unlock()
	if h != nil {
		h(to, data)
	}
	return nil
}

// Register makes h receive the messages published to addr (replacing any
// handler there). It fails once the bus is closed, and always on a
// count-only bus.
func (b *Bus) Register(addr bus.Address, h bus.Handler) error {
	if b.countOnly {
		return ErrCountOnly
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.handlers == nil {
		b.handlers = map[bus.Address]bus.Handler{}
	}
	b.handlers[addr] = h
	return nil
}

// Unregister stops delivery to addr: later messages to it are Unroutable.
func (b *Bus) Unregister(addr bus.Address) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.handlers, addr)
}

// Stats returns the counters so far.
func (b *Bus) Stats() bus.Stats {
	if b.countOnly {
		n := b.n.Load()
		return bus.Stats{Published: n, Dropped: n, Transport: b.transport.Load(), PublishErrs: b.errs.Load()}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Close makes every later Publish fail with ErrClosed. It never fails, and
// closing twice is harmless.
func (b *Bus) Close() error {
	b.shut.Store(true)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// Sent returns the messages accepted so far, in the order they were
// published.
func (b *Bus) Sent() []Sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Sent(nil), b.sent...)
}

// SentTo returns the messages accepted so far for to, in order.
func (b *Bus) SentTo(to bus.Address) []Sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Sent
	for _, s := range b.sent {
		if s.To == to {
			out = append(out, s)
		}
	}
	return out
}

// BatchBus is a Bus that is also a bus.Batcher (bus.fanout: batched): its
// PublishBatch records the batch's size and publishes the messages one by
// one, in order, as Publish would — each counted and recorded as its own
// message — and counts the batch as one Transport message. The embedded
// *Bus is the same bus without PublishBatch.
type BatchBus struct {
	*Bus
}

// NewBatchBus returns an open BatchBus (options as NewBus).
func NewBatchBus(opts ...Option) *BatchBus {
	return &BatchBus{NewBus(opts...)}
}

// PublishBatch publishes msgs in order and returns the first error.
func (b *BatchBus) PublishBatch(msgs []bus.Message) error {
	b.mu.Lock()
	b.batches = append(b.batches, len(msgs))
	b.mu.Unlock()
	var first error
	for i, m := range msgs {
		if err := b.publish(m.To, m.Data, i == 0); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Batches returns the size of every PublishBatch call so far, in order
// (calls after Close included: their messages are refused one by one).
func (b *BatchBus) Batches() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.batches...)
}

// Clock is a fake emulated time: a Scheduler (Now, At) for the decorators.
//
// A Clock from NewClock (or the zero Clock) queues the functions At is
// given; Step, Run and RunUntil run them in time order, ties in the order
// At was called, setting Now to each one's time first, as the deterministic
// driver does. A function scheduled before Now runs at Now (time never goes
// back while running; Set may move it anywhere). Functions may call At
// (and Now) while they run, from any goroutine. Nothing runs until the
// test says so, so a test can look at what is pending (Len, Pending) —
// in flight, as at the end of a run.
//
// A Clock from NewImmediateClock runs each function at once, inside At, on
// the caller's goroutine, and leaves Now alone (a delay takes no time): a
// shared time moved by concurrent callers would mean nothing.
type Clock struct {
	immediate bool
	now       atomic.Int64 // lock-free: decorators read it on every delayed message

	mu    sync.Mutex
	queue queue
	seq   uint64
}

// NewClock returns a queueing Clock at time 0.
func NewClock() *Clock { return &Clock{} }

// NewImmediateClock returns a Clock at time 0 whose At runs fn at once.
func NewImmediateClock() *Clock { return &Clock{immediate: true} }

// Now returns the current emulated time.
func (c *Clock) Now() time.Duration { return time.Duration(c.now.Load()) }

// Set sets the current time to t (earlier or later), running nothing.
func (c *Clock) Set(t time.Duration) { c.now.Store(int64(t)) }

// Advance moves the current time d forward, running nothing (RunUntil runs
// what falls due).
func (c *Clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// At schedules fn at time t (not before Now), or runs it now on an
// immediate Clock.
func (c *Clock) At(t time.Duration, fn func()) {
	if c.immediate {
		fn()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	heap.Push(&c.queue, event{at: max(t, c.Now()), seq: c.seq, fn: fn})
}

// Len returns the number of functions queued and not yet run.
func (c *Clock) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue.Len()
}

// Pending returns the times of the queued functions, in the order they
// will run.
func (c *Clock) Pending() []time.Duration {
	c.mu.Lock()
	q := append(queue(nil), c.queue...)
	c.mu.Unlock()
	out := make([]time.Duration, 0, len(q))
	for q.Len() > 0 {
		out = append(out, heap.Pop(&q).(event).at)
	}
	return out
}

// Step runs the first queued function, after setting Now to its time (if
// later), and reports whether there was one.
func (c *Clock) Step() bool { return c.step(0, false) }

// step is Step, restricted to a function due by until when bounded.
func (c *Clock) step(until time.Duration, bounded bool) bool {
	c.mu.Lock()
	if c.queue.Len() == 0 || bounded && c.queue[0].at > until {
		c.mu.Unlock()
		return false
	}
	e := heap.Pop(&c.queue).(event)
	if e.at > c.Now() {
		c.now.Store(int64(e.at))
	}
	c.mu.Unlock()
	e.fn()
	return true
}

// Run runs queued functions in time order until none is left (those they
// queue included) and returns how many ran.
func (c *Clock) Run() int {
	n := 0
	for c.Step() {
		n++
	}
	return n
}

// RunUntil runs the queued functions due by t (those they queue included)
// in time order, then sets Now to t if it is earlier, and returns how many
// ran.
func (c *Clock) RunUntil(t time.Duration) int {
	n := 0
	for c.step(t, true) {
		n++
	}
	c.mu.Lock()
	if t > c.Now() {
		c.now.Store(int64(t))
	}
	c.mu.Unlock()
	return n
}

// event is one queued function.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

// queue is a min-heap of events by (at, seq).
type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = event{}
	*q = old[:len(old)-1]
	return e
}
