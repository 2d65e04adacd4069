package wave

import (
	"math/rand/v2"
	"slices"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
)

// Directory is what discovery sees of the timezone CAN: routing a request
// to the owner of a label, the owner's neighbors, and a peer's label.
type Directory interface {
	// Route is the owner of point p and the hops CAN routing takes to
	// it from peer from.
	Route(from core.NodeID, p can.Point) (owner core.NodeID, hops int)
	// Neighbors are peer id's CAN neighbors.
	Neighbors(id core.NodeID) []core.NodeID
	// Point is peer id's label.
	Point(id core.NodeID) can.Point
}

// Messages counts what a discovery sent, by type.
type Messages struct {
	Route uint64 // forwarding hops of routed requests
	Probe uint64 // requests that reached a host
	Reply uint64 // hosts' answers
}

// Add adds o to m.
func (m *Messages) Add(o Messages) {
	m.Route += o.Route
	m.Probe += o.Probe
	m.Reply += o.Reply
}

// Found is a discovery's outcome.
type Found struct {
	Host core.NodeID
	OK   bool
	Messages
}

// Discovery parameters of 001 §V-A.
const (
	RandomTries = 5 // label-based random discovery: at most 5 queries
	RingHops    = 2 // expanding ring: a search scope of 2 hops
)

// RandomLabel is label-based random discovery (001 §IV, host discovery):
// the client draws a random label in region, routes a request to its
// owner, which answers with its status; up to tries times. The first host
// that accept takes is the one (001 §IV: "the first discovered host").
func RandomLabel(rng *rand.Rand, dir Directory, from core.NodeID, region Region, accept func(core.NodeID) bool, tries int) Found {
	var f Found
	for range tries {
		owner, hops := dir.Route(from, Label(rng, region))
		f.Route += uint64(hops)
		f.Probe++
		f.Reply++
		if region.Contains(dir.Point(owner)[0]) && accept(owner) {
			f.Host, f.OK = owner, true
			return f
		}
	}
	return f
}

// ExpandingRing is expanding ring search (001 §IV, host discovery) started
// from a random point: the request is routed to the owner of a random
// label in region, which checks itself and asks its neighbors, then their
// neighbors, up to hops hops. Only hosts that satisfy the criteria answer;
// a ring's answers arrive in random order and the client takes the first.
// A host outside region (a wave strategy's target wavezone) does not count
// as a candidate but still relays the search (001 leaves the ring's
// boundary open).
func ExpandingRing(rng *rand.Rand, dir Directory, from core.NodeID, region Region, accept func(core.NodeID) bool, hops int) Found {
	var f Found
	start, h := dir.Route(from, Label(rng, region))
	f.Route += uint64(h)
	ring := []core.NodeID{start}
	seen := map[core.NodeID]bool{start: true}
	for d := 0; ; d++ {
		var ok []core.NodeID
		for _, id := range ring {
			f.Probe++
			if region.Contains(dir.Point(id)[0]) && accept(id) {
				f.Reply++
				ok = append(ok, id)
			}
		}
		if len(ok) > 0 {
			f.Host, f.OK = ok[rng.IntN(len(ok))], true
			return f
		}
		if d == hops {
			return f
		}
		var next []core.NodeID
		for _, id := range ring {
			for _, n := range dir.Neighbors(id) {
				if !seen[n] {
					seen[n] = true
					next = append(next, n)
				}
			}
		}
		slices.Sort(next)
		ring = next
		if len(ring) == 0 {
			return f
		}
	}
}

// Discovery names a host discovery scheme (wave.discovery).
type Discovery string

// The two discoveries of 001 §IV.
const (
	DiscoveryRandom Discovery = "random" // label-based random, RandomTries queries
	DiscoveryRing   Discovery = "ring"   // expanding ring from a random point, RingHops hops
)

// Discover runs discovery d with 001 §V-A's parameters.
func (d Discovery) Discover(rng *rand.Rand, dir Directory, from core.NodeID, region Region, accept func(core.NodeID) bool) Found {
	if d == DiscoveryRing {
		return ExpandingRing(rng, dir, from, region, accept, RingHops)
	}
	return RandomLabel(rng, dir, from, region, accept, RandomTries)
}
