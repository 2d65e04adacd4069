// Package members is the drivers' directory of current overlay members:
// the papers' external bootstrap mechanism ("an existing node in the
// system", 003 §4.1) and the pool churn departures are drawn from. It is
// driver bookkeeping, outside the protocol; not safe for concurrent use.
package members

import (
	"math/rand/v2"
	"slices"

	"github.com/gridbed/gridbed/actors/core"
)

// Set is a set of node ids with uniform random choice. It also remembers
// the members that departed through Depart: they never come back.
type Set struct {
	ids      []core.NodeID
	pos      map[core.NodeID]int
	departed map[core.NodeID]bool
}

// Add inserts id (no effect if present).
func (s *Set) Add(id core.NodeID) {
	if s.pos == nil {
		s.pos = map[core.NodeID]int{}
	}
	if _, ok := s.pos[id]; ok {
		return
	}
	s.pos[id] = len(s.ids)
	s.ids = append(s.ids, id)
}

// Remove deletes id (no effect if absent).
func (s *Set) Remove(id core.NodeID) {
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
func (s *Set) Pick(r *rand.Rand) core.NodeID {
	if len(s.ids) == 0 {
		return 0
	}
	return s.ids[r.IntN(len(s.ids))]
}

// Depart removes a uniformly random member for good (a churn departure)
// and returns it, or 0 when there is none.
func (s *Set) Depart(r *rand.Rand) core.NodeID {
	id := s.Pick(r)
	if id == 0 {
		return 0
	}
	s.DepartID(id)
	return id
}

// DepartID removes member id for good (a crash chosen by a fault) and
// reports whether it was a member.
func (s *Set) DepartID(id core.NodeID) bool {
	if !s.Has(id) {
		return false
	}
	s.Remove(id)
	if s.departed == nil {
		s.departed = map[core.NodeID]bool{}
	}
	s.departed[id] = true
	return true
}

// IDs returns the members in increasing order (a copy).
func (s *Set) IDs() []core.NodeID {
	out := slices.Clone(s.ids)
	slices.Sort(out)
	return out
}

// Departed reports whether id left through Depart: a late report that it
// joined must not bring it back, and a crashed peer's own state (which
// still says "joined") must not count as a member.
func (s *Set) Departed(id core.NodeID) bool { return s.departed[id] }

// Departures is how many members departed for good.
func (s *Set) Departures() int { return len(s.departed) }

// Has reports whether id is a member.
func (s *Set) Has(id core.NodeID) bool { _, ok := s.pos[id]; return ok }

// Len is the number of members.
func (s *Set) Len() int { return len(s.ids) }
