// Heartbeats and zone updates: what a node sends each period and how it
// reads what its neighbors send (002 §4.2).

package overlay

import (
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// onHeartbeat processes a neighbor's periodic heartbeat: the sender's own
// zone, and its neighbor list, from which broken links are repaired
// (002 Fig 4.1: A learns B from C's heartbeat). A lazily decoded heartbeat
// (lazy non-nil, m its decoded part) has its list decoded only when it is
// needed: when it differs from the sender's last list that changed nothing
// here, or our state changed since (see stateKey), or we keep it as the
// sender's take-over node. Skipping a list is exactly processing it: its
// entries would again change nothing. Config.VerifyLazy checks that, list
// by list (lazycheck.go).
func (n *Node) onHeartbeat(now time.Duration, from core.NodeID, m *wire.Heartbeat, lazy *wire.LazyHeartbeat) {
	if !n.joined {
		return
	}
	if m.Self != nil && m.Self.Zone == nil && core.NodeID(m.Self.Id) == from {
		n.onShortHeartbeat(now, from, m)
		return
	}
	if !n.validSender(from, m.Self) {
		return
	}
	list, hasList, digest := m.Neighbors, len(m.Neighbors) > 0, uint64(0)
	decoded := lazy == nil
	if !decoded && len(lazy.List) > 0 {
		hasList, digest = true, wire.ListDigest(lazy.List)
	}
	var dec *wire.ListDecoder
	defer func() {
		if dec != nil {
			listDecoders.Put(dec)
		}
	}()
	// neighbors decodes the list into a pooled decoder's reused entries,
	// valid until we return: learn copies what it keeps.
	neighbors := func() []*wire.NodeInfo {
		if !decoded {
			decoded = true
			dec = listDecoders.Get().(*wire.ListDecoder)
			var err error
			if list, err = dec.Decode(lazy.List); err != nil {
				n.status.BadMessages++
			}
		}
		return list
	}
	var nb *Neighbor
	if !n.learn(now, m.Self, fromSelf) {
		if !n.joined {
			return // we lost a zone conflict and are joining again
		}
		n.notNeighbor(from)
	} else if nb = n.noteSplit(from, m.Self.Version, m.LastSplit); nb != nil {
		if m.Load != nil {
			nb.Load = m.Load
		}
		if hasList {
			if !n.cfg.OrphanNotice && !n.takesOverNeighbor(nb) {
				nb.kept = nil
			} else if lazy == nil {
				nb.kept = &keptList{decoded: neighbors()}
			} else if nb.kept == nil || nb.kept.digest != digest {
				nb.kept = &keptList{encoded: slices.Clone(lazy.List), digest: digest}
			}
		}
	}
	if !hasList {
		return
	}
	cacheable := lazy != nil && nb != nil
	cached := cacheable && nb.relayed == digest && nb.relayedAt == n.relayKey()
	verify := cacheable && n.cfg.VerifyLazy
	if cached && !verify {
		n.status.ListsSkipped++
		return
	}
	var state lazyState
	if verify {
		state = n.lazyState()
	}
	before := n.mark()
	for _, info := range neighbors() {
		n.learn(now, info, fromRelay)
	}
	same := n.mark() == before
	if verify && (cached || same) {
		if after := n.lazyState(); !same || after != state {
			n.misjudged(now, from, cached, state, after, list)
			same = false
		}
		if cached {
			n.status.ListsSkipped++
		}
	}
	if cacheable && same {
		nb.relayed, nb.relayedAt = digest, n.relayKey()
	}
}

// listDecoders lend onHeartbeat a wire.ListDecoder: decoding a list into
// reused entries allocates nothing, and one pool serves every node (a
// decoder per node would hold ~7 KB of buffers per peer). Which decoder a
// node gets changes nothing it computes.
var listDecoders = sync.Pool{New: func() any { return new(wire.ListDecoder) }}

// stateKey identifies the state relayed entries are judged against — with
// the list's digest, the key of the judgement that a neighbor's list
// changes nothing (onHeartbeat). A relayed entry goes through learn, which
// reads, and nothing else:
//   - the entry itself (in the list's digest) and constants: our id, the
//     number of dimensions;
//   - membership (joined; a node not joined ignores heartbeats anyway);
//   - our own zone and extra zones, which abuts, conflict and settleClaims
//     read: every change bumps version;
//   - the table: whether the entry's node is in it and at which version
//     (news at a version we hold changes nothing); other entries only
//     when one is added or updated (introduceRivals), a change anyway.
//     Every change of the table's membership or of an entry's zones or
//     version bumps epoch (learn, upsert, forget, zoneChanged, onJoin,
//     rejoin);
//   - the node's tombstone, if any (version, and ours against version):
//     every tombstone set, cleared or expired bumps epoch. Expiry is the
//     one clock-dependent input: a sweep at each heartbeat deletes the
//     tombstones older than their TTL, and each deletion touches.
//
// learn reads nothing else: not the neighbors' LastHeard, Heard, LastSplit,
// kept lists or loads, not the awaited zones, suspects, hole state, pending
// messages or heartbeat mode (the sender's mode is in what its list holds);
// now only stamps what learn adds (a change). What the key does not hold
// but a merge may do — ask for a message or a timer, count an event —
// makes the judgement "changed something" (mark), so it is not cached.
// Config.VerifyLazy re-checks every cached judgement against the node's
// whole state (lazyState).
type stateKey struct {
	version, epoch uint64
	joined         bool
}

func (n *Node) relayKey() stateKey { return stateKey{n.version, n.epoch, n.joined} }

// touch records a change of the neighbor table or the tombstones.
func (n *Node) touch() { n.epoch++ }

// change is what processing a message can change besides the state in
// stateKey: messages and timers asked for, counters.
type change struct {
	key          stateKey
	msgs, timers int
	status       Status
}

func (n *Node) mark() change {
	return change{n.relayKey(), len(n.ready.Messages), len(n.ready.Timers), n.status}
}

// onShortHeartbeat handles a compact heartbeat (002 §4.2.2): the sender's
// id, zone version and last split, without its zone — neighbors know the
// zone from the zone update the sender sends whenever it changes. If we do
// not know the sender at that version (an update we missed, or a sender
// that believes we abut although we never heard of it), we ask it for a
// full update: its answer carries its zone, and our request carries ours,
// so whichever side is wrong corrects itself.
func (n *Node) onShortHeartbeat(now time.Duration, from core.NodeID, m *wire.Heartbeat) {
	if i, ok := n.find(from); ok && n.nbrs[i].Version == m.Self.Version {
		nb := n.nbrs[i]
		nb.LastHeard, nb.Heard = now, true
		nb.keepSplit(m.LastSplit)
		if m.Load != nil {
			nb.Load = m.Load
		}
		return
	}
	if n.cfg.NoZoneQueries {
		if i, ok := n.find(from); ok {
			n.nbrs[i].LastHeard, n.nbrs[i].Heard = now, true // alive, its zone unknown
		}
		return
	}
	n.status.ZoneQueries++
	n.send(from, &wire.FullUpdateRequest{Self: n.info()})
}

// notNeighbor answers a heartbeat from a node that believes we are its
// neighbor although our zones do not abut: one of us has a stale picture of
// the other's zone. Our current zone lets it drop us (002 §4.2.1 leaves this
// case to the next heartbeat; answering at once keeps tables exact).
func (n *Node) notNeighbor(to core.NodeID) {
	n.status.NotNeighborNotes++
	n.send(to, &wire.ZoneUpdate{Self: n.info()})
}

func (n *Node) onZoneUpdate(now time.Duration, from core.NodeID, m *wire.ZoneUpdate) {
	if !n.joined {
		n.buffer(from, m)
		return
	}
	if !n.validSender(from, m.Self) {
		return
	}
	n.learn(now, m.Self, fromSelf)
	n.noteSplit(from, m.Self.Version, m.LastSplit)
	// The nodes a zone update names are introductions by their neighbor
	// (the node a zone was just split with), not repairs.
	for _, info := range m.Others {
		if n.learn(now, info, fromJoin) {
			n.noteJoinVia(now, from, info)
		}
	}
}

// validSender checks that a message's own NodeInfo names its sender and a
// zone of our dimensions; a message failing it is counted and ignored whole.
func (n *Node) validSender(from core.NodeID, self *wire.NodeInfo) bool {
	if self == nil || core.NodeID(self.Id) != from {
		n.status.BadMessages++
		return false
	}
	if self.Zone == nil || !(can.Zone{Lo: self.Zone.Lo, Hi: self.Zone.Hi}).Valid(n.cfg.Dims) {
		n.status.BadMessages++
		return false
	}
	return true
}

// heartbeat runs once per period: it declares silent neighbors failed
// (and takes their zones over where we are their take-over node), checks
// the zone border for broken links in adaptive mode, and sends the periodic
// heartbeat to every neighbor (002 §4.2):
//   - vanilla: the full neighbor list to every neighbor (messages O(d),
//     volume O(d²) per node);
//   - compact and adaptive: the full list only to our take-over nodes; the
//     others get our id, zone version and last split (volume ≈ O(d)): they
//     know our zone from the zone update we send whenever it changes
//     (onShortHeartbeat).
func (n *Node) heartbeat(now time.Duration) {
	n.detectFailures(now)
	if !n.joined {
		return // lost a zone conflict while taking over: joining again
	}
	n.probeSuspects(now)
	n.claimOrphans(now)
	n.claimHoles(now)
	if n.cfg.Mode == HeartbeatAdaptive {
		n.checkBorder(now)
	}
	last := n.lastSplit()
	full := &wire.Heartbeat{Self: n.info(), Neighbors: n.heardList(), LastSplit: last, Load: n.load}
	var short *wire.Heartbeat
	for _, nb := range n.nbrs {
		if n.cfg.Mode == HeartbeatVanilla || n.isOurTakeover(nb, last) {
			n.send(nb.ID, full)
			continue
		}
		if short == nil {
			short = &wire.Heartbeat{Self: &wire.NodeInfo{Id: uint64(n.id), Version: n.version}, LastSplit: last, Load: n.load}
		}
		n.send(nb.ID, short)
	}
	for n.nextBeat <= now {
		n.nextBeat += n.cfg.HeartbeatPeriod
	}
	n.timer(core.TimerHeartbeat, n.nextBeat)
	ttl := time.Duration(n.cfg.FailAfter+tombstoneSlack) * n.cfg.HeartbeatPeriod
	for id, t := range n.gone { // deleting only: the order does not matter
		if now-t.at > ttl {
			delete(n.gone, id)
			n.touch()
		}
	}
}

// takeoverList is neighbor nb's list kept for taking its zone over,
// decoded now if it was kept encoded.
func (n *Node) takeoverList(nb *Neighbor) []*wire.NodeInfo {
	if nb.kept == nil || nb.kept.decoded != nil || len(nb.kept.encoded) == 0 {
		if nb.kept == nil {
			return nil
		}
		return nb.kept.decoded
	}
	list, err := (&wire.LazyHeartbeat{List: nb.kept.encoded}).Neighbors()
	if err != nil {
		n.status.BadMessages++
	}
	return list
}

// heardList is our neighbor list as heartbeats relay it: first-hand entries.
//
// The entries, their zones and coordinates are carved from three arrays
// (one heartbeat per period carries them all; 5 allocations per entry
// were a tenth of the deterministic driver's time).
func (n *Node) heardList() []*wire.NodeInfo {
	k := 0
	for _, nb := range n.nbrs {
		if nb.Heard {
			k++
		}
	}
	out := make([]*wire.NodeInfo, 0, k)
	infos := make([]wire.NodeInfo, k)
	zones := make([]wire.Zone, k)
	coords := make([]uint64, 0, 2*n.cfg.Dims*k)
	for _, nb := range n.nbrs {
		if !nb.Heard {
			continue
		}
		i := len(out)
		lo := len(coords)
		coords = append(append(coords, nb.Zone.Lo...), nb.Zone.Hi...)
		mid, hi := lo+len(nb.Zone.Lo), len(coords)
		zones[i].Lo, zones[i].Hi = coords[lo:mid:mid], coords[mid:hi:hi]
		info := &infos[i]
		info.Id, info.Zone, info.Version, info.Extra = uint64(nb.ID), &zones[i], nb.Version, extrasToWire(nb.Extra)
		out = append(out, info)
	}
	return out
}
