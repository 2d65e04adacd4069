package joinorder

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
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

// TestSequenceGoesOnAtARetry: the awaited peer's first attempt changes
// nothing; its retry starts the next peer as its join would, and its
// join afterwards changes nothing; attempts of other peers are ignored.
func TestSequenceGoesOnAtARetry(t *testing.T) {
	var s Sequence
	s.Add(1, 0)
	s.Add(2, time.Second)
	s.Add(3, 2*time.Second)
	if _, _, ok := s.Attempt(1, 0); ok {
		t.Fatal("a first attempt advanced the sequence")
	}
	if _, _, ok := s.Attempt(2, 0); ok {
		t.Fatal("an attempt of a peer not awaited advanced the sequence")
	}
	if id, at, ok := s.Attempt(1, 500*time.Millisecond); !ok || id != 2 || at != time.Second {
		t.Fatalf("at peer 1's retry: got %d at %v (%v), want 2 at its slot 1s", id, at, ok)
	}
	if _, _, ok := s.Joined(1, 3*time.Second); ok {
		t.Fatal("the retrying peer's late join advanced the sequence again")
	}
	// Peer 2's first attempt, then its join: peer 3 next.
	if _, _, ok := s.Attempt(2, time.Second); ok {
		t.Fatal("peer 2's first attempt advanced the sequence")
	}
	if id, at, ok := s.Joined(2, 2500*time.Millisecond); !ok || id != 3 || at != 2500*time.Millisecond {
		t.Fatalf("got %d at %v (%v), want 3 at 2.5s", id, at, ok)
	}
	// Peer 3's first attempt after peer 2 joined is a first attempt.
	if _, _, ok := s.Attempt(3, 2500*time.Millisecond); ok {
		t.Fatal("peer 3's first attempt advanced the sequence")
	}
}

// TestSequenceSkipsAtMostMaxSkipped: the sequence goes on without at most
// MaxSkipped peers still joining; one of them joining makes room again.
func TestSequenceSkipsAtMostMaxSkipped(t *testing.T) {
	var s Sequence
	for id := core.NodeID(1); id <= MaxSkipped+2; id++ {
		s.Add(id, 0)
	}
	now := time.Second
	for id := core.NodeID(1); id <= MaxSkipped; id++ {
		s.Attempt(id, now)
		if next, _, ok := s.Attempt(id, now); !ok || next != id+1 {
			t.Fatalf("peer %d's retry: got %d (%v), want %d next", id, next, ok, id+1)
		}
	}
	head := core.NodeID(MaxSkipped + 1)
	s.Attempt(head, now)
	if _, _, ok := s.Attempt(head, now); ok {
		t.Fatalf("the sequence went on without %d peers still joining", MaxSkipped+1)
	}
	// A skipped peer joins: the next retry of the head goes on.
	if _, _, ok := s.Joined(1, now); ok {
		t.Fatal("a skipped peer's join advanced the sequence")
	}
	if next, _, ok := s.Attempt(head, now); !ok || next != head+1 {
		t.Fatalf("after a skipped peer joined, the head's retry: got %d (%v), want %d", next, ok, head+1)
	}
}
