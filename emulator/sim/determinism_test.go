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
