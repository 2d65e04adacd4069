// The tests are in package link_test (not link) so that emulator/sim may
// one day import link without an import cycle in the tests.
package link_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
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

var (
	_ link.Scheduler = (*sim.World)(nil)
	_ link.Scheduler = (*bustest.Clock)(nil)
)
