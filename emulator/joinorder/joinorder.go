// Package joinorder sequences the joins of a run's initial population, as
// the papers' experiments do ("n nodes join the system sequentially", 002
// §4.3.2): peer k+1 starts joining at its slot in the join window or once
// peer k has joined, whichever is later. Compressing wall time must not turn
// a sequential join phase into a storm of concurrent joins that the CAN
// protocols (like the original CAN) do not claim to survive; concurrent
// joins are churn, and churn is configured as such.
//
// A Sequence is not safe for concurrent use; drivers guard it.
package joinorder

import (
	"time"

	"github.com/gridbed/gridbed/actors/core"
)

// Sequence is the ordered list of peers that join one after another.
type Sequence struct {
	ids   []core.NodeID
	slots []time.Duration
	next  int  // index of the peer whose join is awaited
	asked bool // the awaited peer has made its first join attempt
	// skipped are the peers the sequence went on without (Attempt) that
	// have not joined yet.
	skipped map[core.NodeID]bool
}

// MaxSkipped is how many peers whose join is still under way the
// sequence goes on without (Attempt): a lost message holds the join
// phase for one retry wait, but a join phase whose joins keep failing
// (routed into the zones of crashed peers not yet taken over) waits, as
// the papers' sequential joins do, instead of starting every peer into
// the repair.
const MaxSkipped = 2

// Add appends peer id with its slot. It reports whether the peer is the
// head of the sequence and should start at its slot right away.
func (s *Sequence) Add(id core.NodeID, slot time.Duration) bool {
	s.ids = append(s.ids, id)
	s.slots = append(s.slots, slot)
	return len(s.ids)-1 == s.next
}

// Joined records that id joined at emulated time now. If id is the peer the
// sequence was waiting for, it returns the next peer and when it may start.
func (s *Sequence) Joined(id core.NodeID, now time.Duration) (next core.NodeID, at time.Duration, ok bool) {
	delete(s.skipped, id)
	if s.next >= len(s.ids) || s.ids[s.next] != id {
		return 0, 0, false
	}
	return s.advance(now)
}

// Attempt records that id asked for a bootstrap contact at now: its
// first join attempt, or a retry after its JOIN or JOIN-ACCEPT was lost.
// At the awaited peer's retry the sequence goes on without it, as at its
// join (the next peer and when it may start), unless MaxSkipped peers it
// went on without are still joining: a lost message holds the join phase
// for one retry wait, not for as many retries as the joiner needs (a join
// under way is then concurrent with the next, as under churn); the
// retrying peer's join, when it comes, does not advance it again.
func (s *Sequence) Attempt(id core.NodeID, now time.Duration) (next core.NodeID, at time.Duration, ok bool) {
	if s.next >= len(s.ids) || s.ids[s.next] != id {
		return 0, 0, false
	}
	if !s.asked {
		s.asked = true
		return 0, 0, false
	}
	if len(s.skipped) >= MaxSkipped {
		return 0, 0, false
	}
	if s.skipped == nil {
		s.skipped = map[core.NodeID]bool{}
	}
	s.skipped[id] = true
	return s.advance(now)
}

func (s *Sequence) advance(now time.Duration) (next core.NodeID, at time.Duration, ok bool) {
	s.next++
	s.asked = false
	if s.next >= len(s.ids) {
		return 0, 0, false
	}
	return s.ids[s.next], max(now, s.slots[s.next]), true
}

// Remaining is the number of peers of the sequence that have not joined.
func (s *Sequence) Remaining() int { return len(s.ids) - s.next }
