package ledger

import (
	"math/rand/v2"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/emulator/members"
)

// secondaryTries bounds the draws SecondaryContact makes for a member
// other than the asker.
const secondaryTries = 8

// manager is Dual-CAN's Manager node (002 §3.1.2): the directory of the
// Secondary CAN's members, consulted outside the bus (as the drivers'
// bootstrap directory of the Primary CAN). Guarded by the ledger's lock.
type manager struct {
	members members.Set
	rng     *rand.Rand
}

// SecondaryContact returns a live member of the Secondary CAN other than
// id, drawn uniformly, or 0 when it finds none (jobs.Manager). A departed
// member drawn is struck from the directory.
func (l *Ledger) SecondaryContact(id core.NodeID) core.NodeID {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.second
	if m.rng == nil {
		m.rng = rand.New(rand.NewPCG(0x2d3, 0x312)) // the draws follow the run's events: deterministic under the sim driver
	}
	for tries := 0; tries < secondaryTries; {
		c := m.members.Pick(m.rng)
		if c == 0 {
			return 0
		}
		if l.alive != nil && !l.alive(c) {
			m.members.Remove(c)
			continue
		}
		if c != id {
			return c
		}
		tries++
	}
	return 0
}

// SecondaryJoined records that id's Residue-node joined the Secondary CAN
// (jobs.Manager).
func (l *Ledger) SecondaryJoined(id core.NodeID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.second.members.Add(id)
}

// SecondaryLeft records that id's Residue-node left it (jobs.Manager).
func (l *Ledger) SecondaryLeft(id core.NodeID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.second.members.Remove(id)
}

// SecondaryMembers is the Secondary CAN's size as the directory knows it.
func (l *Ledger) SecondaryMembers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.second.members.Len()
}
