// Failure detection and take-over: a departed neighbor's zone goes to
// the nodes across the plane of its last split (002 §4.2).

package overlay

import (
	"math"
	"slices"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

type awaitedZone struct {
	zones []can.Zone // the departed node's own zone and its extra zones
	until time.Duration
	// claimAt is when we look for unclaimed parts next; giveUp when we stop.
	claimAt, giveUp time.Duration
	// notify are the departed node's neighbors as its last list named
	// them, told of our claim on its zone (Config.OrphanNotice; else nil).
	notify []core.NodeID
}

// takeoverWait is how many heartbeat periods a departed neighbor's zone is
// awaited: detection times of a failure differ by up to one period.
const takeoverWait = 2

// noteSplit records neighbor id's last split as of its zone version
// (older news is ignored) and returns its entry, nil if it is no neighbor.
func (n *Node) noteSplit(id core.NodeID, version uint64, last *wire.Split) *Neighbor {
	i, ok := n.find(id)
	if !ok {
		return nil
	}
	nb := n.nbrs[i]
	if version == nb.Version {
		nb.keepSplit(last)
	}
	return nb
}

// splitKey is a split's values, kept inline in a Neighbor (splitOf).
type splitKey struct {
	at, sibling uint64
	dim         uint32
	upper       bool
}

func keyOf(s *wire.Split) splitKey {
	return splitKey{at: s.At, sibling: s.Sibling, dim: s.Dim, upper: s.Upper}
}

// keepSplit sets the neighbor's LastSplit to the last split a message
// carried: the split it holds when that one is the same — heartbeats
// repeat it every period — or else a copy. The message's may be its
// decoder's, reused for the next message (wire.Decoder). The values of
// the split it holds are compared inline (splitOf), without reading the
// split itself: another cache miss per heartbeat otherwise.
func (nb *Neighbor) keepSplit(s *wire.Split) {
	switch {
	case s == nil:
		nb.LastSplit = nil
		return
	case nb.LastSplit != nil && nb.splitFor == nb.LastSplit && nb.splitOf == keyOf(s):
		return
	case nb.LastSplit != nil && nb.splitFor != nb.LastSplit && keyOf(nb.LastSplit) == keyOf(s):
		// Set elsewhere (a join's introduction): the same split.
		nb.splitFor, nb.splitOf = nb.LastSplit, keyOf(s)
		return
	}
	nb.LastSplit = &wire.Split{Dim: s.Dim, At: s.At, Upper: s.Upper, Sibling: s.Sibling}
	nb.splitFor, nb.splitOf = nb.LastSplit, keyOf(s)
}

// lastSplit is the most recent entry of our split history, nil if none.
func (n *Node) lastSplit() *wire.Split {
	if len(n.history) == 0 {
		return nil
	}
	return n.history[len(n.history)-1]
}

// isOurTakeover reports whether nb is one of our take-over nodes: its zone
// lies across the plane of our last split, on the side we gave away, and
// within our face there (002 §4.2.2, Fig 4.2).
func (n *Node) isOurTakeover(nb *Neighbor, last *wire.Split) bool {
	if last == nil {
		return false
	}
	_, ok := can.Extend(nb.Zone, n.zone, int(last.Dim))
	return ok && can.PlaneBetween(n.zone, nb.Zone, int(last.Dim), last.At, last.Upper)
}

// takesOver reports whether we are a take-over node of a node with zone z
// whose last split is last: whether we can extend over z across that plane.
func (n *Node) takesOver(z can.Zone, last *wire.Split) (can.Zone, bool) {
	if last == nil || int(last.Dim) >= n.cfg.Dims || !can.PlaneBetween(z, n.zone, int(last.Dim), last.At, last.Upper) {
		return can.Zone{}, false
	}
	return can.Extend(n.zone, z, int(last.Dim))
}

// takeoverKey is what takesOver's answer for a neighbor depends on: our
// zone (every change bumps our version), the neighbor's zone (learn
// replaces it only with a newer version) and its last split (keepSplit
// keeps the same pointer while the split stays the same).
type takeoverKey struct {
	ours, theirs uint64
	split        *wire.Split
}

// takesOverNeighbor is takesOver for neighbor nb's zone and last split,
// remembered in nb until one of them or our zone changes: every heartbeat
// with a list asks it, and the zones it reads are a cache miss each.
func (n *Node) takesOverNeighbor(nb *Neighbor) bool {
	k := takeoverKey{n.version, nb.Version, nb.LastSplit}
	if nb.takeoverKnown && nb.takeoverKey == k {
		return nb.takeover
	}
	_, ours := n.takesOver(nb.Zone, nb.LastSplit)
	nb.takeoverKey, nb.takeover, nb.takeoverKnown = k, ours, true
	return ours
}

// detectFailures declares failed every neighbor not heard from for
// FailAfter heartbeat periods (002 §4.2: consecutive missed heartbeats).
// Where we are its take-over node we claim its zone; otherwise we drop it
// and learn the new owners from the take-over nodes' zone updates.
func (n *Node) detectFailures(now time.Duration) {
	limit := time.Duration(n.cfg.FailAfter) * n.cfg.HeartbeatPeriod
	var silent []*Neighbor
	for _, nb := range n.nbrs {
		if now-nb.LastHeard > limit {
			silent = append(silent, nb)
		}
	}
	for _, nb := range silent {
		if !n.joined {
			return // lost a zone conflict while taking over: joining again
		}
		if _, ok := n.find(nb.ID); !ok {
			continue // removed by an earlier take-over in this loop
		}
		if nb.Heard {
			n.status.FailuresDetected++
			n.suspects[nb.ID] = now
		}
		list := n.takeoverList(nb)
		if !n.absorb(now, nb.ID, nb.Zone, nb.LastSplit, list) {
			n.forget(nb.ID)
		}
		if n.joined {
			n.await(now, nb.Zone, nb.Extra, list)
		}
	}
}

// await records a departed neighbor's zones (its own and its extras) as
// being taken over; claimOrphans later claims what nobody did.
func (n *Node) await(now time.Duration, z can.Zone, x []can.Zone, list []*wire.NodeInfo) {
	p := n.cfg.HeartbeatPeriod
	until := now + takeoverWait*p
	// Our rank among the claimants: a fraction of a period that grows with
	// the volume of our zone (0 for a point, 1 for the whole space).
	rank := time.Duration(float64(p) * logVolume(n.zone) / float64(32*n.cfg.Dims))
	claimAt := until + rank
	var notify []core.NodeID
	if n.cfg.OrphanNotice {
		for _, info := range list {
			if id := core.NodeID(info.GetId()); id != 0 && id != n.id {
				notify = append(notify, id)
			}
		}
	}
	n.awaited = append(n.awaited, awaitedZone{
		zones: append([]can.Zone{z.Clone()}, x...), until: until,
		claimAt: claimAt, giveUp: claimAt + orphanRetries*p, notify: notify,
	})
}

// absorb takes over the zone z of departed node id if we are one of its
// take-over nodes (across the plane of its last split): our zone grows over
// our part of z (can.Extend), the split that separated us disappears from
// our history, we learn its neighbors, and we tell all our neighbors our new
// zone. Several take-over nodes each absorb their own part, independently.
func (n *Node) absorb(now time.Duration, id core.NodeID, z can.Zone, last *wire.Split, list []*wire.NodeInfo) bool {
	grown, ok := n.takesOver(z, last)
	if !ok {
		return false
	}
	n.status.Takeovers++
	n.forget(id)
	old := slices.Clone(n.nbrs)
	n.zone = grown
	n.version++
	n.pruneHistory()
	for _, info := range list {
		n.learn(now, info, fromJoin)
		if !n.joined {
			return true // lost a zone conflict on the departed node's news: joining again
		}
	}
	n.zoneChanged(now, old, nil)
	if n.cfg.Mode == HeartbeatAdaptive && !n.cfg.NoTakeoverRequest {
		// The departed node's list may be stale (it changed after its last
		// full heartbeat to us), and our new border is where a broken link
		// would hide behind a neighbor not yet declared failed: ask our new
		// neighborhood at once rather than wait for the border check.
		n.requestFullUpdates(now)
	}
	return true
}

// zoneChanged follows a change of our zones (the version is already
// incremented): neighbors that no longer abut any of them are dropped
// (learn() keeps the table exact for the others), and every neighbor, old
// and current, receives a zone update naming others, if any.
func (n *Node) zoneChanged(now time.Duration, old []*Neighbor, others []*wire.NodeInfo) {
	n.touch()
	kept := n.nbrs[:0]
	for _, nb := range n.nbrs {
		if n.abuts(nb.Zone, nb.Extra) {
			kept = append(kept, nb)
		} else {
			n.gone[nb.ID] = tombstone{nb.Version, now, n.version}
		}
	}
	clear(n.nbrs[len(kept):])
	n.nbrs = kept
	n.reindex()
	upd := &wire.ZoneUpdate{Self: n.info(), Others: others, LastSplit: n.lastSplit()}
	sent := map[core.NodeID]bool{}
	for _, nb := range n.nbrs {
		sent[nb.ID] = true
		n.send(nb.ID, upd)
	}
	for _, nb := range old {
		if !sent[nb.ID] {
			n.send(nb.ID, upd)
		}
	}
}

// abuts reports whether a node holding zone z and extra zones x is our
// neighbor: whether any of its zones abuts any of ours.
// It is called for every entry of every list we receive, so it does not
// build n.zones().
func (n *Node) abuts(z can.Zone, x []can.Zone) bool {
	touches := func(mine can.Zone) bool {
		_, _, ok := can.Abut(mine, z)
		return ok || abutsAny(mine, x)
	}
	if touches(n.zone) {
		return true
	}
	for _, e := range n.extra {
		if touches(e) {
			return true
		}
	}
	return false
}

// zones lists our own zone followed by our extra zones.
func (n *Node) zones() []can.Zone {
	if len(n.extra) == 0 {
		return []can.Zone{n.zone}
	}
	return append([]can.Zone{n.zone}, n.extra...)
}

// containing is the index of the zone in zs that contains p, or -1.
func containing(zs []can.Zone, p can.Point) int {
	for i, z := range zs {
		if z.Contains(p) {
			return i
		}
	}
	return -1
}

// logVolume is log2 of a zone's volume: the rank of a claim (smaller zones
// win, as in CAN's take-over timer, Ratnasamy et al. §2.3).
func logVolume(z can.Zone) float64 {
	v := 0.0
	for k := range z.Lo {
		v += math.Log2(float64(z.Hi[k] - z.Lo[k]))
	}
	return v
}

// winsClaim reports whether node a, whose own zone is za, has the better
// claim on space that both a and b hold as extra zones: the smaller own
// zone wins, the smaller id breaks a tie. Both sides decide alike.
func winsClaim(a core.NodeID, za can.Zone, b core.NodeID, zb can.Zone) bool {
	va, vb := logVolume(za), logVolume(zb)
	if va != vb {
		return va < vb
	}
	return a < b
}

// settleClaims resolves overlaps between our extra zones and the zones of
// the node info describes (own zone z, extras x): its own zone always wins;
// between two extra zones the better claim wins (winsClaim). We give up the
// overlapping parts we lose (can.Subtract) and introduce the winner to our
// neighbors, some of whom now border it without knowing it; where we win we
// tell it our zones, so that it gives them up too (and report that we did). Claims overlap when two
// neighbors of a departed node claimed the same orphan without knowing each
// other, or when a slow take-over node extended over space already claimed.
func (n *Node) settleClaims(now time.Duration, info *wire.NodeInfo, z can.Zone, x []can.Zone) (told bool) {
	if len(n.extra) == 0 {
		return false
	}
	id := core.NodeID(info.Id)
	changed, tell := false, false
	var kept []can.Zone
	for _, e := range n.extra {
		parts := []can.Zone{e}
		for j, w := range append([]can.Zone{z}, x...) {
			if !can.Overlaps(e, w) {
				continue
			}
			if j > 0 && winsClaim(n.id, n.zone, id, z) {
				tell = true
				continue
			}
			var rest []can.Zone
			for _, p := range parts {
				rest = append(rest, can.Subtract(p, w)...)
			}
			parts, changed = rest, true
		}
		kept = append(kept, parts...)
	}
	if changed {
		n.status.ExtrasYielded++
		old := slices.Clone(n.nbrs)
		n.extra = kept
		n.version++
		n.zoneChanged(now, old, []*wire.NodeInfo{wire.CloneNodeInfo(info)}) // info may be a ListDecoder's
	}
	if tell {
		n.send(id, &wire.ZoneUpdate{Self: n.info(), LastSplit: n.lastSplit()})
	}
	return tell
}

// mergeExtras joins extra zones whose union is a box (can.Merge), so that
// orphans claimed piece by piece do not fragment.
func (n *Node) mergeExtras() {
	n.touch()
	for merged := true; merged; {
		merged = false
		for i := 0; i < len(n.extra) && !merged; i++ {
			for j := i + 1; j < len(n.extra); j++ {
				if m, ok := can.Merge(n.extra[i], n.extra[j]); ok {
					n.extra[i] = m
					n.extra = slices.Delete(n.extra, j, j+1)
					merged = true
					break
				}
			}
		}
	}
}

// pruneHistory drops split-history entries whose plane our zone now
// crosses: after a take-over the split that made us and the departed node
// siblings no longer exists (nor, later, the splits of regions we grew
// over), so our last remaining entry names our current take-over plane.
func (n *Node) pruneHistory() {
	kept := n.history[:0]
	for _, h := range n.history {
		k := int(h.Dim)
		if k >= len(n.zone.Lo) {
			continue
		}
		if (h.Upper && n.zone.Lo[k] >= h.At) || (!h.Upper && n.zone.Hi[k] <= h.At) {
			kept = append(kept, h)
		}
	}
	n.history = kept
}
