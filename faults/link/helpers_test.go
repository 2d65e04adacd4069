// The tests are in package link_test (not link) so that emulator/sim may
// one day import link without an import cycle in the tests.
package link_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/faults/link"
)

// delivery is one message as a handler received it.
type delivery struct {
	from, to, seq uint64
	sent          time.Duration // SentAt of the envelope: the emulated send time
	at            time.Duration // emulated arrival time
	rejected      bool          // failed the frame check (corrupted): only to is known
}

func (d delivery) latency() time.Duration { return d.at - d.sent }

// rig is a sim.World used as both the inner bus and the Scheduler, with
// peers 0..n-1 registered (through reg) and their deliveries recorded.
type rig struct {
	t    *testing.T
	seed uint64
	w    *sim.World
	got  []delivery
	seq  uint64
	// corrupt accepts deliveries that fail the frame check (recorded as
	// rejected) instead of failing the test.
	corrupt bool
}

func newRig(t *testing.T, seed uint64) *rig {
	t.Helper()
	return &rig{t: t, seed: seed, w: sim.New(seed, 0)}
}

// register registers peers 0..n-1 through reg (a decorator, to test that
// Register delegates).
func (r *rig) register(reg bus.Bus, n int) {
	r.t.Helper()
	for a := range n {
		err := reg.Register(bus.Address(a), func(to bus.Address, data []byte) {
			h, _, err := wire.Decode(data)
			if r.corrupt && errors.Is(err, wire.ErrChecksum) {
				r.got = append(r.got, delivery{to: uint64(to), at: r.w.Now(), rejected: true})
				return
			}
			if err != nil {
				r.t.Errorf("seed %d: delivery to %d: %v", r.seed, to, err)
				return
			}
			if h.To != uint64(to) {
				r.t.Errorf("seed %d: envelope for %d delivered to %d", r.seed, h.To, to)
			}
			r.got = append(r.got, delivery{from: h.From, to: h.To, seq: h.Seq, sent: time.Duration(h.SentAt), at: r.w.Now()})
		})
		if err != nil {
			r.t.Fatalf("register %d: %v", a, err)
		}
	}
}

// send publishes one envelope from → to on b now, with the next sequence
// number, and returns that number.
func (r *rig) send(b bus.Bus, from, to uint64) uint64 {
	r.t.Helper()
	r.seq++
	if err := b.Publish(bus.Address(to), envelope(r.t, from, to, r.seq, r.w.Now())); err != nil {
		r.t.Fatalf("seed %d: publish %d→%d: %v", r.seed, from, to, err)
	}
	return r.seq
}

// sendAt schedules send at emulated time at.
func (r *rig) sendAt(at time.Duration, b bus.Bus, from, to uint64) {
	r.w.At(at, func() { r.send(b, from, to) })
}

// run delivers everything (the run horizon is far beyond any test delay).
func (r *rig) run() { r.w.RunUntil(r.w.Now() + time.Hour) }

// take returns the deliveries so far and forgets them.
func (r *rig) take() []delivery {
	g := r.got
	r.got = nil
	return g
}

func envelope(t testing.TB, from, to, seq uint64, sentAt time.Duration) []byte {
	t.Helper()
	data, err := wire.Encode(nil, wire.Header{Type: wire.MsgType_MSG_HEARTBEAT, From: from, To: to, Seq: seq, SentAt: int64(sentAt)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// syncBus is a tiny thread-safe bus that delivers synchronously.
type syncBus struct {
	mu       sync.Mutex
	handlers map[bus.Address]bus.Handler
	stats    bus.Stats
	closed   bool
}

func newSyncBus() *syncBus { return &syncBus{handlers: map[bus.Address]bus.Handler{}} }

func (b *syncBus) Publish(to bus.Address, data []byte) error {
	b.mu.Lock()
	if b.closed {
		b.stats.PublishErrs++
		b.mu.Unlock()
		return errors.New("syncBus: closed")
	}
	b.stats.Published++
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

func (b *syncBus) Register(addr bus.Address, h bus.Handler) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handlers[addr] = h
	return nil
}

func (b *syncBus) Unregister(addr bus.Address) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.handlers, addr)
}

func (b *syncBus) Stats() bus.Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

func (b *syncBus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// nopBus accepts and counts every message (benchmarks).
type nopBus struct{ n atomic.Uint64 }

func (b *nopBus) Publish(bus.Address, []byte) error       { b.n.Add(1); return nil }
func (b *nopBus) Register(bus.Address, bus.Handler) error { return nil }
func (b *nopBus) Unregister(bus.Address)                  {}
func (b *nopBus) Stats() bus.Stats                        { return bus.Stats{Published: b.n.Load()} }
func (b *nopBus) Close() error                            { return nil }

// immediate is a thread-safe Scheduler that runs fn at once.
type immediate struct{ now atomic.Int64 }

func (s *immediate) Now() time.Duration            { return time.Duration(s.now.Load()) }
func (s *immediate) At(_ time.Duration, fn func()) { fn() }

// recorder is a thread-safe Scheduler that keeps fn to run later.
type recorder struct {
	mu  sync.Mutex
	fns []func()
	ats []time.Duration
}

func (s *recorder) Now() time.Duration { return 0 }
func (s *recorder) At(t time.Duration, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fns = append(s.fns, fn)
	s.ats = append(s.ats, t)
}

func (s *recorder) runAll() int {
	s.mu.Lock()
	fns := s.fns
	s.fns, s.ats = nil, nil
	s.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return len(fns)
}

var (
	_ link.Scheduler = (*sim.World)(nil)
	_ link.Scheduler = (*immediate)(nil)
	_ link.Scheduler = (*recorder)(nil)
)
