package wave

import (
	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
)

// Space is a Directory over the zones and neighbor tables of a timezone
// CAN built by the overlay core (actors/overlay): requests go by CAN's
// greedy routing (each hop to the neighbor closest to the label, 001
// §III-A), hop by hop over the peers' own neighbor tables.
type Space struct {
	peers map[core.NodeID]*spacePeer
	ids   []core.NodeID
}

type spacePeer struct {
	point can.Point
	zones []can.Zone
	nbrs  []core.NodeID
}

// NewSpace returns an empty Space.
func NewSpace() *Space { return &Space{peers: map[core.NodeID]*spacePeer{}} }

// Add records peer id: its label, the zones it owns (its own first, then
// any it took over) and its neighbors. Add peers in increasing id order.
func (s *Space) Add(id core.NodeID, point can.Point, zones []can.Zone, nbrs []core.NodeID) {
	s.peers[id] = &spacePeer{point: point, zones: zones, nbrs: nbrs}
	s.ids = append(s.ids, id)
}

// Len is the number of peers.
func (s *Space) Len() int { return len(s.ids) }

// IDs are the peers in the order added.
func (s *Space) IDs() []core.NodeID { return s.ids }

// Point is peer id's label.
func (s *Space) Point(id core.NodeID) can.Point { return s.peers[id].point }

// Neighbors are peer id's neighbors.
func (s *Space) Neighbors(id core.NodeID) []core.NodeID { return s.peers[id].nbrs }

func (p *spacePeer) owns(x can.Point) bool {
	for _, z := range p.zones {
		if z.Contains(x) {
			return true
		}
	}
	return false
}

func (p *spacePeer) dist2(x can.Point) float64 {
	best := -1.0
	for _, z := range p.zones {
		if d := z.Dist2(x); best < 0 || d < best {
			best = d
		}
	}
	return best
}

// Route routes a request from peer from to the owner of x by CAN's greedy
// forwarding (001 §III-A, Fig 3) and counts the hops. A route that stops
// getting closer (it cannot in an exact overlay) ends at the owner found
// by scanning, with the hops so far.
func (s *Space) Route(from core.NodeID, x can.Point) (core.NodeID, int) {
	cur, hops := from, 0
	for range len(s.ids) + 1 {
		p := s.peers[cur]
		if p.owns(x) {
			return cur, hops
		}
		next, best := core.NodeID(0), p.dist2(x)
		for _, n := range p.nbrs {
			q, ok := s.peers[n]
			if !ok {
				continue
			}
			if d := q.dist2(x); d < best {
				next, best = n, d
			}
		}
		if next == 0 {
			break
		}
		cur = next
		hops++
	}
	for _, id := range s.ids {
		if s.peers[id].owns(x) {
			return id, hops
		}
	}
	return from, hops
}
