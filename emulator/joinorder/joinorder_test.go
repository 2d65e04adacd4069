package joinorder

import (
	"testing"
	"time"
)

func TestSequenceWaitsForPreviousJoin(t *testing.T) {
	var s Sequence
	if !s.Add(1, 0) {
		t.Fatal("the first peer must start at once")
	}
	if s.Add(2, time.Second) || s.Add(3, 2*time.Second) {
		t.Fatal("later peers must wait")
	}
	if _, _, ok := s.Joined(2, time.Second); ok {
		t.Fatal("a join out of order must not advance the sequence")
	}
	// Peer 1 joins late: peer 2 starts then, not at its earlier slot.
	if id, at, ok := s.Joined(1, 1500*time.Millisecond); !ok || id != 2 || at != 1500*time.Millisecond {
		t.Fatalf("got %d at %v (%v), want 2 at 1.5s", id, at, ok)
	}
	// Peer 2 joins early: peer 3 waits for its slot.
	if id, at, ok := s.Joined(2, 1600*time.Millisecond); !ok || id != 3 || at != 2*time.Second {
		t.Fatalf("got %d at %v (%v), want 3 at 2s", id, at, ok)
	}
	if _, _, ok := s.Joined(3, 3*time.Second); ok || s.Remaining() != 0 {
		t.Fatal("sequence should be finished")
	}
}
