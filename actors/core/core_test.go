package core

import (
	"testing"

	"github.com/gridbed/gridbed/actors/wire"
)

// Clear empties the outbox and drops its references to what was sent,
// keeping the arrays.
func TestOutboxClear(t *testing.T) {
	var o Outbox
	m := &wire.Heartbeat{}
	o.Send(2, m)
	o.SetTimer(TimerHeartbeat, 5)
	msgs := o.Messages
	o.Clear()
	if len(o.Messages) != 0 || len(o.Timers) != 0 {
		t.Fatalf("after Clear: %v %v", o.Messages, o.Timers)
	}
	if msgs[:1][0].Msg != nil {
		t.Fatal("Clear kept a reference to a sent message")
	}
	o.Send(3, m)
	if &o.Messages[0] != &msgs[:1][0] {
		t.Fatal("Clear did not keep the array for reuse")
	}
}

// The overlay's timers are told apart from the others'.
func TestTimerKindOverlay(t *testing.T) {
	for k, want := range map[TimerKind]bool{TimerHeartbeat: true, TimerJoinRetry: true, TimerJobs: false, TimerRunDone: false, TimerClient: false, TimerSched: false} {
		if k.Overlay() != want {
			t.Errorf("%d.Overlay() = %v, want %v", k, k.Overlay(), want)
		}
	}
}

// The Secondary CAN's timer kinds (002 §3.1.2) twin the overlay's, and
// only those.
func TestDualTimerKinds(t *testing.T) {
	for _, tc := range []struct {
		k, twin TimerKind
		ok      bool
	}{
		{TimerHeartbeat, TimerDualHeartbeat, true},
		{TimerJoinRetry, TimerDualJoinRetry, true},
		{TimerJobs, TimerJobs, false},
		{TimerSched, TimerSched, false},
	} {
		d, ok := tc.k.Dual()
		if d != tc.twin || ok != tc.ok {
			t.Errorf("%d.Dual() = %d, %v; want %d, %v", tc.k, d, ok, tc.twin, tc.ok)
		}
		if !ok {
			continue
		}
		if p, ok := d.Primary(); p != tc.k || !ok || d.Overlay() {
			t.Errorf("%d.Primary() = %d, %v (Overlay %v); want %d", d, p, ok, d.Overlay(), tc.k)
		}
	}
	if _, ok := TimerHeartbeat.Primary(); ok {
		t.Error("an overlay timer kind claims to twin another")
	}
}
