// Package members is the drivers' directory of current overlay members:
// the papers' external bootstrap mechanism ("an existing node in the
// system", 003 §4.1) and the pool churn departures are drawn from. It is
// driver bookkeeping, outside the protocol; not safe for concurrent use.
package members

import (
	"math/rand/v2"

	"github.com/gridbed/gridbed/actors/overlay"
)

// Set is a set of node ids with uniform random choice.
type Set struct {
	ids []overlay.NodeID
	pos map[overlay.NodeID]int
}

// Add inserts id (no effect if present).
func (s *Set) Add(id overlay.NodeID) {
	if s.pos == nil {
		s.pos = map[overlay.NodeID]int{}
	}
	if _, ok := s.pos[id]; ok {
		return
	}
	s.pos[id] = len(s.ids)
	s.ids = append(s.ids, id)
}

// Remove deletes id (no effect if absent).
func (s *Set) Remove(id overlay.NodeID) {
	i, ok := s.pos[id]
	if !ok {
		return
	}
	last := len(s.ids) - 1
	s.ids[i] = s.ids[last]
	s.pos[s.ids[i]] = i
	s.ids = s.ids[:last]
	delete(s.pos, id)
}

// Pick returns a uniformly random member, or 0 when empty.
func (s *Set) Pick(r *rand.Rand) overlay.NodeID {
	if len(s.ids) == 0 {
		return 0
	}
	return s.ids[r.IntN(len(s.ids))]
}

// Has reports whether id is a member.
func (s *Set) Has(id overlay.NodeID) bool { _, ok := s.pos[id]; return ok }

// Len is the number of members.
func (s *Set) Len() int { return len(s.ids) }
