package link

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
)

// Partition drops the messages that cross one of its active cuts. A cut
// splits the addresses into the side where its function is true and the
// rest; a symmetric cut drops the messages in both directions between the
// two, a one-way cut only those from the true side to the false side.
// Several cuts can be active at once; a message is dropped if any of them
// drops it.
//
// The sender of a message is read from its envelope (wire.PeekFrom); a
// message whose sender cannot be read is passed through and counted as
// Unreadable. The decision is taken at send time (see the package doc).
type Partition struct {
	inner // the wrapped bus

	mu   sync.Mutex            // serialises writers of cuts
	cuts atomic.Pointer[[]cut] // immutable snapshot, read without the lock

	dropped    atomic.Uint64
	unreadable atomic.Uint64
}

type cut struct {
	name   string
	side   func(bus.Address) bool
	oneWay bool
	links  func(from, to bus.Address) bool // a per-link cut (CutLinks), instead of side
}

// drops reports whether the cut drops a message from → to.
func (c *cut) drops(from, to bus.Address) bool {
	if c.links != nil {
		return c.links(from, to)
	}
	a, b := c.side(from), c.side(to)
	return a != b && (a || !c.oneWay)
}

// PartitionStats are the counters of a Partition.
type PartitionStats struct {
	Dropped    uint64 // messages dropped because they crossed a cut
	Unreadable uint64 // messages passed through because their sender could not be read while a cut was active
}

// NewPartition returns a Partition over inner with no cut.
func NewPartition(inner bus.Bus) *Partition {
	return &Partition{inner: inner}
}

// Cut starts (or, if a cut of that name is active, replaces) the cut name.
// side must be safe for concurrent calls and must not call back into the
// Partition; it is called twice per message while the cut is active.
func (p *Partition) Cut(name string, side func(bus.Address) bool, oneWay bool) {
	if side == nil {
		panic("faults: Partition.Cut " + name + ": nil side function")
	}
	p.add(cut{name: name, side: side, oneWay: oneWay})
}

// CutLinks starts (or replaces) the per-link cut name: a message from →
// to is dropped while it is active if links(from, to) says so — a one-way
// cut between two sets of peers (LinkSets), or links that go down and up
// (Flap). links must be safe for concurrent calls and must not call back
// into the Partition. Heal and HealAll end it like any cut.
func (p *Partition) CutLinks(name string, links func(from, to bus.Address) bool) {
	if links == nil {
		panic("faults: Partition.CutLinks " + name + ": nil links function")
	}
	p.add(cut{name: name, links: links})
}

func (p *Partition) add(c cut) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var next []cut
	if old := p.cuts.Load(); old != nil {
		next = slices.DeleteFunc(slices.Clone(*old), func(o cut) bool { return o.name == c.name })
	}
	next = append(next, c)
	p.cuts.Store(&next)
}

// LinkSets is the per-link cut between two sets of addresses: it drops
// the messages from an address in from to an address in to and, unless
// oneWay, those from to back to from. With one address on each side it
// cuts a single link (in one direction with oneWay).
func LinkSets(from, to func(bus.Address) bool, oneWay bool) func(a, b bus.Address) bool {
	return func(a, b bus.Address) bool {
		return from(a) && to(b) || !oneWay && to(a) && from(b)
	}
}

// Heal removes the cut name; it reports whether it was active.
func (p *Partition) Heal(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.cuts.Load()
	if old == nil {
		return false
	}
	next := slices.DeleteFunc(slices.Clone(*old), func(c cut) bool { return c.name == name })
	if len(next) == len(*old) {
		return false
	}
	if len(next) == 0 {
		p.cuts.Store(nil)
	} else {
		p.cuts.Store(&next)
	}
	return true
}

// HealAll removes every cut.
func (p *Partition) HealAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts.Store(nil)
}

// Cuts returns the names of the active cuts, in the order they were started.
func (p *Partition) Cuts() []string {
	cs := p.cuts.Load()
	if cs == nil {
		return nil
	}
	names := make([]string, len(*cs))
	for i := range *cs {
		names[i] = (*cs)[i].name
	}
	return names
}

// Publish drops data if it crosses an active cut and publishes it to the
// inner bus otherwise. A dropped message is not an error.
func (p *Partition) Publish(to bus.Address, data []byte) error {
	if p.drops(to, data) {
		return nil
	}
	return p.inner.Publish(to, data)
}

// drops decides (and counts) whether the message data to to crosses an
// active cut: the per-(sender, receiver) decision of Publish, also taken
// for each message of a batch (Chain.PublishBatch).
func (p *Partition) drops(to bus.Address, data []byte) bool {
	cs := p.cuts.Load()
	if cs == nil {
		return false
	}
	from, ok := wire.PeekFrom(data)
	if !ok {
		p.unreadable.Add(1)
		return false
	}
	for i := range *cs {
		if (*cs)[i].drops(bus.Address(from), to) {
			p.dropped.Add(1)
			return true
		}
	}
	return false
}

// Faults returns the Partition's own counters.
func (p *Partition) Faults() PartitionStats {
	return PartitionStats{Dropped: p.dropped.Load(), Unreadable: p.unreadable.Load()}
}
