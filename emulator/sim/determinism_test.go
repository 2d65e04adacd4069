package sim

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
)

// pingPong runs a world of two endpoints that answer each message with
// one to the other, for rounds messages, and a timer every 10 ms; at
// message odd (0: never) endpoint 2 answers with other bytes. It returns
// what rec saw.
func pingPong(t *testing.T, rec *Recorder, rounds, odd int) *Recorder {
	t.Helper()
	return conversation(t, rec, rounds, odd, false)
}

// conversation is pingPong; with fanOut, endpoint 2 answers message odd
// with one message per key of a map, in the map's iteration order (which
// Go varies from one range to the next: a map-order dependency), each
// message's last byte its key.
func conversation(t *testing.T, rec *Recorder, rounds, odd int, fanOut bool) *Recorder {
	t.Helper()
	keys := map[byte]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true}
	w := New(1, time.Millisecond)
	w.Record(rec)
	msg := []byte{0x08, byte(wire.MsgType_MSG_HEARTBEAT)} // field 1, the type: what wire.PeekType reads
	n := 0
	for _, a := range []bus.Address{1, 2} {
		peer := 3 - a
		if err := w.Register(a, func(_ bus.Address, data []byte) {
			n++
			if n >= rounds {
				return
			}
			out := msg
			if a == 2 && n == odd && fanOut {
				for k := range keys {
					w.Publish(peer, append(append([]byte(nil), msg...), k))
				}
				return
			}
			if a == 2 && n == odd {
				out = append(append([]byte(nil), msg...), 0)
			}
			w.Publish(peer, out)
		}); err != nil {
			t.Fatal(err)
		}
		w.OnTimer(a, func(_ core.TimerKind, at time.Duration) { w.SetTimer(a, 1, at+10*time.Millisecond) })
		w.SetTimer(a, 1, 10*time.Millisecond)
	}
	w.Publish(2, msg)
	w.RunUntil(time.Duration(rounds) * time.Millisecond)
	rec.End()
	return rec
}

// TestRecorderFindsTheFirstDifference: two runs alike agree block by
// block; a run whose endpoint answers one message with other bytes
// diverges in the block of that delivery, and a third run keeping that
// block gives the first run's side: the first differing event is the
// delivery, at its time, with both sides' bytes.
func TestRecorderFindsTheFirstDifference(t *testing.T) {
	const rounds = 3000
	a := pingPong(t, NewRecorder(), rounds, 0)
	if a.Events() < rounds || len(a.Marks()) < 3 {
		t.Fatalf("the first run saw %d events in %d blocks, want at least %d events and 3 blocks", a.Events(), len(a.Marks()), rounds)
	}
	if same := pingPong(t, Compare(a.Marks()), rounds, 0); same.Diverged() != -1 {
		t.Fatalf("two runs alike diverged at block %d", same.Diverged())
	}
	const odd = 1801 // endpoint 2 receives the odd-numbered messages
	b := pingPong(t, Compare(a.Marks()), rounds, odd)
	if b.Diverged() < 1 {
		t.Fatalf("a run that differs at message %d diverged at block %d, want a later block than the first", odd, b.Diverged())
	}
	c := pingPong(t, Keep(a.Marks(), b.Diverged()), rounds, 0)
	if c.Diverged() != -1 {
		t.Fatalf("the third run, alike the first, diverged at block %d", c.Diverged())
	}
	x, y := FirstDifference(c.Kept(), b.Kept())
	if x == nil || y == nil {
		t.Fatalf("first difference: %v, %v; want both sides", x, y)
	}
	if x.N != y.N || x.Kind != "deliver" || y.Kind != "deliver" || y.Bytes != x.Bytes+1 || x.Type != wire.MsgType_MSG_HEARTBEAT.String() || x.At != y.At {
		t.Errorf("first difference: %v | %v; want the same delivery, the second run's one byte longer", x, y)
	}
	if int((x.N-1)/BlockEvents) != b.Diverged() {
		t.Errorf("the first difference, %v, is outside the diverging block %d", x, b.Diverged())
	}
}

// TestRecorderShorterRun: a run that ends early diverges at its first
// missing block, where it has no events.
func TestRecorderShorterRun(t *testing.T) {
	a := pingPong(t, NewRecorder(), 3000, 0)
	b := pingPong(t, Compare(a.Marks()), 1000, 0)
	if b.Diverged() < 0 {
		t.Fatal("a shorter run did not diverge")
	}
	c := pingPong(t, Keep(a.Marks(), b.Diverged()), 3000, 0)
	if x, y := FirstDifference(c.Kept(), b.Kept()); x == nil || y != nil && *x == *y {
		t.Errorf("first difference of a shorter run: %v | %v, want the longer run's event against none or another", x, y)
	}
}

// TestRecorderFindsAMapOrderDependency: a handler that sends one message
// per key of a map, in the map's iteration order, makes two runs of one
// seed differ at the first of those deliveries, and the check says so at
// that event. Go starts each range over a map at a random place: eight
// keys in one group come in one of eight rotations, so two runs send the
// eight messages in the same order one time in eight. The second run is
// tried up to tries times until it diverges (all alike: 8^-200), and so is
// the run that gives the first run's side until it agrees with the first
// run through the block (the chained hash never agrees again once a run
// has diverged; all diverging: (7/8)^200, 2.5e-12).
func TestRecorderFindsAMapOrderDependency(t *testing.T) {
	const rounds, odd = 3000, 1801
	a := conversation(t, NewRecorder(), rounds, odd, true)
	const tries = 200
	var b *Recorder
	for try := 0; try < tries; try++ {
		if b = conversation(t, Compare(a.Marks()), rounds, odd, true); b.Diverged() >= 0 {
			break
		}
	}
	if b.Diverged() < 0 {
		t.Fatalf("%d runs that send a map's keys in its iteration order all agreed with the first", tries)
	}
	// The first run's side: a run that agrees with it through the block
	// (emulator.CheckDeterminism tries again the same way).
	var c *Recorder
	for try := 0; try < tries; try++ {
		if c = conversation(t, Keep(a.Marks(), b.Diverged()), rounds, odd, true); c.Diverged() < 0 || c.Diverged() > b.Diverged() {
			break
		}
	}
	if c.Diverged() >= 0 && c.Diverged() <= b.Diverged() {
		t.Fatalf("%d runs for the first run's side all diverged from it", tries)
	}
	x, y := FirstDifference(c.Kept(), b.Kept())
	if x == nil || y == nil {
		t.Fatalf("first difference: %v | %v, want both sides", x, y)
	}
	// Message odd is delivered as event odd or a little later (timers
	// interleave): the fan-out's deliveries follow it, a millisecond on.
	if x.N <= odd || x.Kind != "deliver" || y.Kind != "deliver" || x.To != 1 || x.Bytes != y.Bytes || x.Hash == y.Hash || x.At != y.At {
		t.Errorf("first difference: %v | %v; want one of the fan-out's deliveries to endpoint 1, after message %d, the same time and length, other bytes", x, y, odd)
	}
}
