// Package sim is gridbed's deterministic driver (docs/ARCHITECTURE.md
// principle 4): virtual time, an in-memory bus, and a seeded event order.
// It runs the very same peer code as the emulator (actors/peer) — same
// cores, same wire encoding, same byte counts — single-threaded, with no
// sleeps, so thousands of peers run in seconds and the same seed always
// gives the same run.
//
// Events due at the same virtual instant are taken in an order drawn from
// the run seed (not in insertion order), so tests explore interleavings
// instead of relying on one lucky order.
package sim

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/driver"
)

type eventKind uint8

const (
	evDeliver eventKind = iota + 1
	evTimer
	evAction
)

// event is one queued event: a delivery, a timer expiry or an action.
type event struct {
	at   time.Duration
	prio uint64 // seeded tie-break among events at the same instant
	seq  uint64 // final tie-break: insertion order
	kind eventKind
	to   bus.Address
	data []byte
	tk   core.TimerKind
	fn   func()
}

// TimerHandler receives the expiry of a timer set with SetTimer.
type TimerHandler func(kind core.TimerKind, at time.Duration)

// World is a deterministic event loop with virtual time. It is not safe for
// concurrent use: everything runs on the goroutine that calls RunUntil.
type World struct {
	now      time.Duration
	rng      *rand.Rand
	seq      uint64
	queue    queue
	handlers []bus.Handler  // by address
	timers   []TimerHandler // by address
	// far holds the endpoints at addresses too large to index (the job
	// client's).
	far      map[bus.Address]bus.Handler
	farTimer map[bus.Address]TimerHandler
	latency  time.Duration
	stats    bus.Stats
	conns    uint64 // SetConnections
	events   uint64
	closed   bool
	// recycle makes Publish copy messages into buffers reused once they
	// are delivered (Recycle); spare holds them by size class.
	recycle bool
	spare   [spareClasses][][]byte
	// rec, if set, sees every event (Record: the determinism check).
	rec *Recorder
	// delivered, if set, sees every message handed to a handler
	// (TapDeliveries).
	delivered func(at time.Duration, to bus.Address, data []byte)
}

// New returns a world at virtual time 0 whose event order derives from seed.
// latency is the (constant) delay of every message on its bus.
func New(seed uint64, latency time.Duration) *World {
	return &World{rng: rand.New(rand.NewPCG(seed, driver.StreamWorld)), latency: latency}
}

// Recycle makes the world copy every published message into a buffer of
// its own and reuse that buffer once the message's handler has returned
// (or the message turned out unroutable). Handlers must then not keep the
// bytes they are given — the peers' do not (they copy what they keep) —
// and publishers may reuse theirs at once (Copies). Without it a steady
// overlay allocates a fresh envelope per message and receiver: two thirds
// of the deterministic driver's garbage (docs/BENCHMARKS.md).
func (w *World) Recycle() { w.recycle = true }

// Copies reports whether Publish copies what it is given (Recycle).
func (w *World) Copies() bool { return w.recycle }

// spareClasses are the size classes of recycled buffers: 64 B << k. Larger
// messages are not recycled.
const spareClasses = 12

// sizeClass is the smallest class whose buffers hold n bytes, or
// spareClasses if none does.
func sizeClass(n int) int {
	k := 0
	for c := 64; c < n && k < spareClasses; c <<= 1 {
		k++
	}
	return k
}

// buffer returns a copy of data in a recycled buffer.
func (w *World) buffer(data []byte) []byte {
	k := sizeClass(len(data))
	if k == spareClasses {
		return append([]byte(nil), data...)
	}
	var b []byte
	if s := w.spare[k]; len(s) > 0 {
		b, w.spare[k] = s[len(s)-1], s[:len(s)-1]
	} else {
		b = make([]byte, 0, 64<<k)
	}
	return append(b[:0], data...)
}

// release takes back a delivered message's buffer.
func (w *World) release(b []byte) {
	if k := sizeClass(cap(b)); k < spareClasses && cap(b) == 64<<k {
		w.spare[k] = append(w.spare[k], b)
	}
}

// Now is the current virtual time.
func (w *World) Now() time.Duration { return w.now }

// Events is the number of events processed so far.
func (w *World) Events() uint64 { return w.events }

func (w *World) push(e event) {
	w.seq++
	e.seq = w.seq
	e.prio = w.rng.Uint64()
	w.queue.Push(e)
}

// At schedules fn at virtual time at (not before now).
func (w *World) At(at time.Duration, fn func()) {
	w.push(event{at: max(at, w.now), kind: evAction, fn: fn})
}

// SetTimer schedules the timer handler of addr at virtual time at.
func (w *World) SetTimer(addr bus.Address, kind core.TimerKind, at time.Duration) {
	w.push(event{at: max(at, w.now), kind: evTimer, to: addr, tk: kind})
}

// farAddress is where addresses stop indexing slices.
const farAddress = 1 << 32

// OnTimer registers the timer handler of addr.
func (w *World) OnTimer(addr bus.Address, h TimerHandler) {
	if addr >= farAddress {
		if w.farTimer == nil {
			w.farTimer = map[bus.Address]TimerHandler{}
		}
		w.farTimer[addr] = h
		return
	}
	for int(addr) >= len(w.timers) {
		w.timers = append(w.timers, nil)
	}
	w.timers[addr] = h
}

// RunUntil processes every event due at or before t, then sets the clock to t.
func (w *World) RunUntil(t time.Duration) { w.RunUntilDone(t, nil) }

// RunUntilDone is RunUntil that returns false, with virtual time at the
// last event handled, as soon as done is closed (checked every 1,024
// events): an interrupt or the memory ceiling stops a long stretch of
// events within a fraction of a wall second.
func (w *World) RunUntilDone(t time.Duration, done <-chan struct{}) bool {
	for w.queue.Len() > 0 && w.queue.MinAt() <= t {
		if done != nil && w.events&1023 == 0 {
			select {
			case <-done:
				return false
			default:
			}
		}
		e := w.queue.Pop()
		w.now = e.at
		w.events++
		if w.rec != nil {
			w.rec.see(&e)
		}
		switch e.kind {
		case evDeliver:
			if h := w.handler(e.to); h != nil {
				w.stats.Delivered++
				if w.delivered != nil {
					w.delivered(e.at, e.to, e.data)
				}
				h(e.to, e.data)
			} else {
				w.stats.Unroutable++
			}
			if w.recycle {
				w.release(e.data)
			}
		case evTimer:
			if e.to >= farAddress {
				if h := w.farTimer[e.to]; h != nil {
					h(e.tk, e.at)
				}
			} else if int(e.to) < len(w.timers) && w.timers[e.to] != nil {
				w.timers[e.to](e.tk, e.at)
			}
		case evAction:
			e.fn()
		}
	}
	if t > w.now {
		w.now = t
	}
	return true
}

// The World is its own in-memory bus.
var (
	_ bus.Bus     = (*World)(nil)
	_ bus.Batcher = (*World)(nil)
)

// Publish schedules delivery of data to addr after the world's latency.
func (w *World) Publish(to bus.Address, data []byte) error {
	if w.closed {
		w.stats.PublishErrs++
		return errors.New("sim: bus closed")
	}
	w.stats.Transport++
	w.publish(to, data)
	return nil
}

// PublishBatch schedules the delivery of every message of msgs exactly as
// Publish does one by one — the same events in the same order, so the run
// is the same whatever the fan-out mode — and counts the batch as one
// transport message (Stats.Transport) per receiving connection, the NATS
// messages the emulator's bus would send with SetConnections connections
// (bus.DefaultConnections unless set).
func (w *World) PublishBatch(msgs []bus.Message) error {
	if w.closed {
		w.stats.PublishErrs += uint64(len(msgs))
		return errors.New("sim: bus closed")
	}
	n := w.conns
	if n == 0 {
		n = bus.DefaultConnections
	}
	for i, m := range msgs {
		k := uint64(m.To) % n
		first := true
		for _, e := range msgs[:i] {
			if uint64(e.To)%n == k {
				first = false
				break
			}
		}
		if first {
			w.stats.Transport++
		}
		w.publish(m.To, m.Data)
	}
	return nil
}

// SetConnections sets the bus connections whose NATS messages
// PublishBatch counts (Stats.Transport); 0 means bus.DefaultConnections.
func (w *World) SetConnections(n int) { w.conns = uint64(max(n, 0)) }

// publish schedules the delivery of one message.
func (w *World) publish(to bus.Address, data []byte) {
	w.stats.Published++
	if w.recycle {
		data = w.buffer(data)
	}
	w.push(event{at: w.now + w.latency, kind: evDeliver, to: to, data: data})
}

func (w *World) handler(addr bus.Address) bus.Handler {
	if addr >= farAddress {
		return w.far[addr]
	}
	if int(addr) < len(w.handlers) {
		return w.handlers[addr]
	}
	return nil
}

// Register makes h receive the messages published to addr.
func (w *World) Register(addr bus.Address, h bus.Handler) error {
	if addr >= farAddress {
		if w.far == nil {
			w.far = map[bus.Address]bus.Handler{}
		}
		w.far[addr] = h
		return nil
	}
	for int(addr) >= len(w.handlers) {
		w.handlers = append(w.handlers, nil)
	}
	w.handlers[addr] = h
	return nil
}

// Unregister stops delivery to addr.
func (w *World) Unregister(addr bus.Address) {
	if addr >= farAddress {
		delete(w.far, addr)
		delete(w.farTimer, addr)
		return
	}
	if int(addr) < len(w.handlers) {
		w.handlers[addr] = nil
	}
}

// Stats reports the bus counters.
func (w *World) Stats() bus.Stats { return w.stats }

// InFlight counts the messages published on the world's bus and not yet
// delivered (due later than the virtual clock, or at it and not yet
// taken): Published = Delivered + Unroutable + InFlight.
func (w *World) InFlight() uint64 {
	var n uint64
	w.queue.Each(func(e *event) {
		if e.kind == evDeliver {
			n++
		}
	})
	return n
}

// Close makes further Publish calls fail.
func (w *World) Close() error {
	w.closed = true
	return nil
}
