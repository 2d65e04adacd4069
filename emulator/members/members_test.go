package members

import (
	"math/rand/v2"
	"testing"

	"github.com/gridbed/gridbed/actors/core"
)

func TestSet(t *testing.T) {
	var s Set
	r := rand.New(rand.NewPCG(1, 2))
	if s.Pick(r) != 0 {
		t.Fatal("empty set picked a member")
	}
	for id := 1; id <= 5; id++ {
		s.Add(core.NodeID(id))
	}
	s.Add(3)
	s.Remove(2)
	s.Remove(9)
	if s.Len() != 4 || s.Has(2) || !s.Has(5) {
		t.Fatalf("len %d", s.Len())
	}
	seen := map[uint64]int{}
	for i := 0; i < 4000; i++ {
		seen[uint64(s.Pick(r))]++
	}
	for _, id := range []uint64{1, 3, 4, 5} {
		if seen[id] < 800 || seen[id] > 1200 {
			t.Fatalf("member %d picked %d of 4000 times", id, seen[id])
		}
	}
	if seen[2] != 0 {
		t.Fatal("removed member picked")
	}
}

func TestDepart(t *testing.T) {
	var s Set
	r := rand.New(rand.NewPCG(3, 3))
	if s.Depart(r) != 0 {
		t.Fatal("departure from an empty set")
	}
	for id := core.NodeID(1); id <= 5; id++ {
		s.Add(id)
	}
	gone := map[core.NodeID]bool{}
	for i := 0; i < 5; i++ {
		id := s.Depart(r)
		if id == 0 || gone[id] || s.Has(id) || !s.Departed(id) {
			t.Fatalf("seed 3: departure %d returned %d (gone %v)", i, id, gone)
		}
		gone[id] = true
	}
	if s.Len() != 0 || s.Depart(r) != 0 {
		t.Fatalf("seed 3: %d members left", s.Len())
	}
	s.Add(6)
	if s.Departed(6) {
		t.Fatal("a member that never departed counts as departed")
	}
}
