// Repairs beyond 002 §4.2, which leaves them open: unclaimed parts of a
// departed zone, holes in a border, and owners that overlap after a
// partition heals.

package overlay

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// probeEvery and probeWindow (in heartbeat periods) pace the probes to
// neighbors declared failed: one every 4 periods for 24 periods (12 minutes
// at the papers' 30 s), so a partition shorter than that heals.
const (
	probeEvery  = 4
	probeWindow = 24
)

// holeWait is how many heartbeat periods a hole in our border — space no
// zone we know covers, and no departure explains — must persist before we
// claim it: broken links look the same for a while and repair sooner.
const holeWait = 5

// orphanRetries is how many more heartbeat periods a neighbor keeps looking
// for unclaimed parts of a departed node's zone that do not (yet) abut its
// own zones: another neighbor's claim may make them abut.
const orphanRetries = 4

// probeSuspects sends our zone to every neighbor declared failed within
// the last probeWindow periods, every probeEvery periods. A crashed node
// never answers (the messages are unroutable); one that was only cut off
// by a partition learns our zone, and if it overlaps its own — both sides
// took the other's zones over — the conflict is resolved (conflict).
// 002 assumes a failed node is gone for good; gridbed's faults include
// partitions that heal, so it keeps listening for a while.
func (n *Node) probeSuspects(now time.Duration) {
	p := n.cfg.HeartbeatPeriod
	var probe *wire.ZoneUpdate
	ids := make([]core.NodeID, 0, len(n.suspects))
	for id := range n.suspects {
		ids = append(ids, id)
	}
	slices.Sort(ids) // a deterministic order of sends
	for _, id := range ids {
		// Whole periods since the failure, rounded: heartbeats in the
		// emulator run a little late, by varying amounts.
		k := (now - n.suspects[id] + p/2) / p
		if k > probeWindow {
			delete(n.suspects, id)
			continue
		}
		if k < probeEvery || k%probeEvery != 0 {
			continue
		}
		if probe == nil {
			probe = &wire.ZoneUpdate{Self: n.info(), LastSplit: n.lastSplit()}
		}
		n.status.Probes++
		n.send(id, probe)
	}
}

// conflict handles news of a node whose own zone z overlaps ours: after a
// partition heals, both sides have taken over each other's zones. The node
// with the larger own zone (then the larger id) gives up: it rejoins
// through the other (rejoin), so only one owner remains and the loser gets
// a zone by an ordinary split. The winner tells the loser, which may not
// know it yet. It reports whether we lost (and are no longer a member).
// Overlaps with extra zones are settled by settleClaims instead.
func (n *Node) conflict(now time.Duration, info *wire.NodeInfo, z can.Zone, x []can.Zone) bool {
	id := core.NodeID(info.Id)
	if !overlapsAnyZone(n.zone, z, x) {
		return false
	}
	if !can.Overlaps(n.zone, z) || winsClaim(n.id, n.zone, id, z) {
		// Our own zone beats their extra zone, or our claim is the
		// better one: make sure they hear of us.
		n.send(id, &wire.ZoneUpdate{Self: n.info(), LastSplit: n.lastSplit()})
		return false
	}
	n.status.Conflicts++
	n.rejoin(now, id)
	return true
}

// rejoin gives up our zones and joins again through contact, keeping our
// id and point (the conflict rule after a healed partition). Our neighbors
// get a LEAVE without a last split — nobody takes our zones over by
// extending — so the parts nobody else owns become orphans that a neighbor
// claims (claimOrphans), and the parts the winner owns stay its own.
func (n *Node) rejoin(now time.Duration, contact core.NodeID) {
	n.status.Rejoins++
	if n.joined {
		msg := &wire.Leave{Self: n.info()}
		for _, nb := range n.nbrs {
			n.send(nb.ID, msg)
		}
	}
	n.joined = false
	n.zone, n.extra, n.history = can.Zone{}, nil, nil
	n.nbrs, n.ids, n.boxes, n.awaited, n.pending = nil, nil, nil, nil, nil
	n.touch()
	clear(n.suspects)
	n.holeSeen, n.holeKey = false, 0
	n.version++
	n.contact = contact
	n.sendJoin()
	n.joinRetry = now + n.cfg.JoinTimeout
	n.timer(core.TimerJoinRetry, n.joinRetry)
}

// claimOrphans runs once per heartbeat period: for each departed
// neighbor's zone whose claim time has come, the parts that no zone we know
// of covers (can.Subtract) and that abut one of our zones become our extra
// zones, and our neighbors hear of them. The claim time is takeoverWait
// periods after the departure (the take-over nodes have extended by then)
// plus a fraction of a period that grows with our zone's volume, so that
// the smallest neighbor claims first and the others see its claim (CAN's
// take-over timer, Ratnasamy et al. §2.3). Parts not abutting us are looked
// at again for orphanRetries periods: a neighbor's claim may be all they
// need, or they may come to abut one of ours.
func (n *Node) claimOrphans(now time.Duration) {
	var claimed []can.Zone
	var notify []core.NodeID
	kept := n.awaited[:0]
	for _, a := range n.awaited {
		if now < a.claimAt {
			kept = append(kept, a)
			continue
		}
		had := len(claimed)
		parts := slices.Clone(a.zones)
		cover := func(w can.Zone) {
			var rest []can.Zone
			for _, p := range parts {
				rest = append(rest, can.Subtract(p, w)...)
			}
			parts = rest
		}
		for _, w := range n.zones() {
			cover(w)
		}
		for _, w := range claimed {
			cover(w)
		}
		for _, nb := range n.nbrs {
			cover(nb.Zone)
			for _, w := range nb.Extra {
				cover(w)
			}
		}
		var left []can.Zone
		for grew := true; grew; {
			grew = false
			left = left[:0]
			for _, p := range parts {
				if n.abuts(p, nil) || abutsAny(p, claimed) {
					claimed = append(claimed, p)
					grew = true
				} else {
					left = append(left, p)
				}
			}
			parts = slices.Clone(left)
		}
		if len(claimed) > had {
			notify = append(notify, a.notify...)
		}
		if len(parts) > 0 && now < a.giveUp {
			a.zones, a.claimAt = parts, now+n.cfg.HeartbeatPeriod
			kept = append(kept, a)
		}
	}
	n.awaited = kept
	if len(claimed) == 0 {
		return
	}
	n.status.OrphansClaimed += uint64(len(claimed))
	old := slices.Clone(n.nbrs)
	n.extra = append(n.extra, claimed...)
	n.mergeExtras()
	n.version++
	n.zoneChanged(now, old, nil)
	n.noticeOrphanClaim(notify, old)
	// The orphan's other neighbors are the departed node's, most of whom we
	// do not know: our neighbors' full lists name them, and each one we
	// learn from a list hears of our claim at once (learn, fromRelay). This
	// is part of claiming, in every heartbeat mode.
	n.requestFullUpdates(now)
}

// noticeOrphanClaim tells the departed node's neighbors of our claim on
// its zone (Config.OrphanNotice): those that hold no zone next to ours
// drop the news, a rival claimant settles the overlap (settleClaims), and
// the others learn a new neighbor. Our neighbors, old and new, heard of
// it from zoneChanged.
func (n *Node) noticeOrphanClaim(ids []core.NodeID, old []*Neighbor) {
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var upd *wire.ZoneUpdate
	for _, id := range ids {
		if _, ok := n.find(id); ok || slices.ContainsFunc(old, func(nb *Neighbor) bool { return nb.ID == id }) {
			continue
		}
		if upd == nil {
			upd = &wire.ZoneUpdate{Self: n.info(), LastSplit: n.lastSplit()}
		}
		n.status.OrphanNotices++
		n.send(id, upd)
	}
}

// claimHoles is the last resort against unowned space: space that touches
// our border, is covered by no zone we know of, and is not a departed
// neighbor's zone being taken over. It arises when the nodes that knew of
// a departure departed or rejoined themselves before claiming (fast churn,
// a latency spike above the failure timeout): nobody remembers it, and
// without a rule it stays unowned — a JOIN for a point there finds no
// owner. If such a hole persists for holeWait periods we claim, as an
// extra zone, a box around a point of it that overlaps no zone we know
// (can.EmptyBox). The box may reach into zones we do not know; their own
// zones win over it when we meet (settleClaims), so it shrinks to the hole.
func (n *Node) claimHoles(now time.Duration) {
	key := n.borderKey(now)
	if key != n.holeKey {
		n.holeKey = key
		n.holeAt, _ = n.holeWitness(now)
	}
	q, ok := n.holeAt, n.holeAt != nil
	if !ok {
		n.holeSeen = false
		return
	}
	if !n.holeSeen {
		n.holeSeen, n.holeSince = true, now
		return
	}
	if now-n.holeSince < holeWait*n.cfg.HeartbeatPeriod {
		return
	}
	avoid := n.knownZones(now, false)
	slices.SortFunc(avoid, func(a, b can.Zone) int { return cmp.Compare(a.Dist2(q), b.Dist2(q)) })
	b, ok := can.EmptyBox(q, avoid)
	if !ok {
		return
	}
	// Stay local: within the bounding box of the zones we know and of our
	// zone mirrored across the face the hole is on. Beyond it we know
	// nothing, and a claim there would only collide with zones we never
	// heard of.
	lim := n.holeLimit(now, q)
	for k := range b.Lo {
		b.Lo[k], b.Hi[k] = max(b.Lo[k], lim.Lo[k]), min(b.Hi[k], lim.Hi[k])
	}
	if !b.Contains(q) {
		// The hole lies beyond every zone we know but our extra zones:
		// space we never heard of, not a hole in our neighborhood.
		n.holeSeen, n.holeKey = false, 0
		return
	}
	n.holeSeen, n.holeKey = false, 0
	n.status.HolesClaimed++
	old := slices.Clone(n.nbrs)
	n.extra = append(n.extra, b)
	n.mergeExtras()
	n.version++
	n.zoneChanged(now, old, nil)
	n.requestFullUpdates(now)
}

// holeLimit bounds a hole claim around point q: the bounding box of our
// own zone, of the zones of our neighbors and of departed neighbors still
// awaited, and of our own zone mirrored across its face at q (if q lies
// just outside it). Our extra zones do not count: with them (can.Mirror of
// n.zones(), before), a hole that did not close — space owned by nodes we
// never heard of, beyond an extra zone — was claimed again and again, each
// claim mirrored across the last, an extra zone doubling every holeWait
// periods until it overlapped hundreds of zones (chaos seeds 7203, 8116;
// docs/OVERLAY.md, "Healing after faults").
func (n *Node) holeLimit(now time.Duration, q can.Point) can.Zone {
	lim := n.zone.Clone()
	if m := can.Mirror([]can.Zone{n.zone}, q); m.Contains(q) {
		lim = can.BoundingBox(lim, m)
	}
	for _, nb := range n.nbrs {
		lim = can.BoundingBox(lim, nb.Zone)
		for _, x := range nb.Extra {
			lim = can.BoundingBox(lim, x)
		}
	}
	for _, a := range n.awaited {
		for _, z := range a.zones {
			lim = can.BoundingBox(lim, z)
		}
	}
	return lim
}

// borderKey fingerprints the inputs of holeWitness: our zone version, the
// ids and versions in our table, and the awaited zones still waited for.
func (n *Node) borderKey(now time.Duration) uint64 {
	h := n.version*0x9e3779b97f4a7c15 + uint64(len(n.nbrs))
	for _, nb := range n.nbrs {
		h = (h^uint64(nb.ID))*0x100000001b3 + nb.Version
	}
	for _, a := range n.awaited {
		if a.giveUp > now {
			h = h*31 + uint64(a.giveUp)
		}
	}
	return h | 1 // never 0, the "not computed" key
}

// knownZones lists every zone we know of: ours, our neighbors' (extras
// included), and departed neighbors' zones still awaited (all of them, or
// only those whose take-over wait has not passed when waitingOnly is set).
func (n *Node) knownZones(now time.Duration, waitingOnly bool) []can.Zone {
	return n.appendKnownZones(nil, now, waitingOnly)
}

// appendKnownZones appends knownZones' zones to dst.
func (n *Node) appendKnownZones(dst []can.Zone, now time.Duration, waitingOnly bool) []can.Zone {
	dst = append(dst, n.zone)
	dst = append(dst, n.extra...)
	for _, nb := range n.nbrs {
		dst = append(dst, nb.Zone)
		dst = append(dst, nb.Extra...)
	}
	for _, a := range n.awaited {
		if !waitingOnly || a.giveUp > now {
			dst = append(dst, a.zones...)
		}
	}
	return dst
}

// holeScratch is holeWitness's working memory, pooled: a node checks its
// border at every heartbeat while its table changes (joins nearby), and
// fresh zones for every face and part were most of a join phase's garbage
// (docs/BENCHMARKS.md). Which scratch a node gets changes nothing
// it computes.
type holeScratch struct {
	known       []can.Zone
	faces       [][]int32 // per face (2·dim + upper): indices into known of the zones abutting it
	parts, rest []can.Zone
	arena       []uint64 // the parts' coordinates
}

var holeScratches = sync.Pool{New: func() any { return new(holeScratch) }}

// copy copies z into the arena. A full arena is replaced by a larger one;
// zones already carved from the old one stay valid.
func (s *holeScratch) copy(z can.Zone) can.Zone {
	d := len(z.Lo)
	if len(s.arena)+2*d > cap(s.arena) {
		s.arena = make([]uint64, 0, max(2*cap(s.arena), 64*d))
	}
	i := len(s.arena)
	s.arena = s.arena[:i+2*d]
	c := can.Zone{Lo: s.arena[i : i+d : i+d], Hi: s.arena[i+d : i+2*d : i+2*d]}
	copy(c.Lo, z.Lo)
	copy(c.Hi, z.Hi)
	return c
}

// holeWitness returns a point just outside one of our zones' faces (not on
// the space boundary) that no zone we know of covers, if there is one:
// each face minus the faces of the known zones abutting it there
// (002 §4.2.1's broken links, seen from the border; claimHoles).
func (n *Node) holeWitness(now time.Duration) (can.Point, bool) {
	s := holeScratches.Get().(*holeScratch)
	defer func() {
		clear(s.known) // hold no zones of ours while pooled
		holeScratches.Put(s)
	}()
	s.known = n.appendKnownZones(s.known[:0], now, true)
	d := n.cfg.Dims
	if len(s.faces) < 2*d {
		s.faces = make([][]int32, 2*d)
	}
	for zi := 0; zi <= len(n.extra); zi++ {
		z := n.zone
		if zi > 0 {
			z = n.extra[zi-1]
		}
		// The known zones abutting z, by face, in the order of known.
		for f := range s.faces {
			s.faces[f] = s.faces[f][:0]
		}
		for i, w := range s.known {
			if dim, up, ok := can.Abut(z, w); ok {
				f := 2 * dim
				if up {
					f++
				}
				s.faces[f] = append(s.faces[f], int32(i))
			}
		}
		for k := 0; k < d; k++ {
			for f, upper := range [2]bool{false, true} {
				if (!upper && z.Lo[k] == 0) || (upper && z.Hi[k] == can.Span) {
					continue
				}
				s.arena = s.arena[:0]
				// The face as a box whose dimension k is a dummy [0, 1).
				face := s.copy(z)
				face.Lo[k], face.Hi[k] = 0, 1
				s.parts = append(s.parts[:0], face)
				for _, i := range s.faces[2*k+f] {
					// The abutting zone projected onto the face plane.
					proj := s.copy(s.known[i])
					proj.Lo[k], proj.Hi[k] = 0, 1
					s.rest = s.rest[:0]
					for _, p := range s.parts {
						s.rest = can.SubtractInto(s.rest, p, proj, s.copy)
					}
					if s.parts, s.rest = s.rest, s.parts; len(s.parts) == 0 {
						break
					}
				}
				if len(s.parts) == 0 {
					continue
				}
				q := make(can.Point, d)
				for j := range q {
					q[j] = uint32(s.parts[0].Lo[j])
				}
				if upper {
					q[k] = uint32(z.Hi[k])
				} else {
					q[k] = uint32(z.Lo[k] - 1)
				}
				return q, true
			}
		}
	}
	return nil, false
}

// abutsAny reports whether z abuts one of zs.
func abutsAny(z can.Zone, zs []can.Zone) bool {
	for _, w := range zs {
		if _, _, ok := can.Abut(z, w); ok {
			return true
		}
	}
	return false
}
