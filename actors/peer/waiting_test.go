package peer

import (
	"maps"
	"testing"

	"github.com/gridbed/gridbed/actors/wire"
)

// TestWaitingCountsByType: Add and Counts keep one count per message type,
// out-of-range types go to "unknown", and every wire type has a slot.
func TestWaitingCountsByType(t *testing.T) {
	if wire.NumTypes > len(Waiting{}) {
		t.Fatalf("%d message types, %d slots in Waiting: enlarge it", wire.NumTypes, len(Waiting{}))
	}
	var w Waiting
	if c := w.Counts(); c != nil {
		t.Fatalf("empty: %v", c)
	}
	w.Add(wire.MsgType_MSG_HEARTBEAT, 3)
	w.Add(wire.MsgType_MSG_HEARTBEAT, -1)
	w.Add(wire.MsgType_MSG_JOIN, 1)
	w.Add(wire.MsgType(1000), 2)
	w.Add(wire.MsgType(-5), 1)
	want := map[string]int64{"heartbeat": 2, "join": 1, "unknown": 3}
	if got := w.Counts(); !maps.Equal(got, want) {
		t.Errorf("Counts = %v, want %v", got, want)
	}
	w.Add(wire.MsgType_MSG_JOIN, -1)
	if _, ok := w.Counts()["join"]; ok {
		t.Error("a type with nothing waiting is listed")
	}
}
