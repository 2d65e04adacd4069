// Package overlay is the pure CAN overlay core of one peer (PROTOCOLS.md §2;
// 003 §4.2; 002 §2.2, §4.2): joining by routing to the owner of the node's
// point and splitting its zone, greedy routing, the neighbor table, and
// periodic heartbeats that carry the sender's neighbor list.
//
// A Node is a single-threaded state machine in the style of etcd-io/raft's
// RawNode: the driver hands it messages (Step) and timer expiries (Tick)
// together with the current emulated time, and collects what it wants done
// (Ready): messages to send and timers to set. There are no goroutines,
// clocks, global randomness or I/O inside; the only randomness comes from the
// *rand.Rand the driver gives each node, derived from the run seed.
package overlay

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/wire"
)

// NodeID is a peer's address; 0 means "nobody".
type NodeID uint64

// Config holds the overlay parameters of a node. Zero values take defaults.
type Config struct {
	// Dims is the number of CAN dimensions including the virtual one.
	Dims int
	// HeartbeatPeriod is the emulated time between two heartbeats.
	HeartbeatPeriod time.Duration
	// Mode is the heartbeat mode: HeartbeatVanilla (default),
	// HeartbeatCompact or HeartbeatAdaptive.
	Mode HeartbeatMode
	// JoinTimeout is how long a joiner waits for its JOIN to be accepted
	// before it asks the driver for a new bootstrap contact. Default: two
	// heartbeat periods.
	JoinTimeout time.Duration
	// MaxHops bounds the hops of a routed message (default 65536). Clustered
	// populations make long chains of zones that differ only in the virtual
	// dimension, so routes can be long; loops are cut by MaxDetours.
	MaxHops int
	// MaxDetours is how many hops of a routed message may fail to get closer
	// to the target than the best zone visited so far (default 8) before it
	// is dropped: with stale neighbor tables greedy routing could circle.
	MaxDetours int
	// FailAfter is the number of heartbeat periods without a message from a
	// neighbor after which it is declared failed (default 3).
	FailAfter int
	// Split is the zone split rule at a join: SplitKD (default) or
	// SplitHalve.
	Split SplitRule
	// The repairs below go beyond 002 §4.2, which leaves them open; each is
	// on by default and can be turned off to run the dissertation's bare
	// reading (docs/fidelity/002.md measures what each changes).
	//
	// QuietRepairs: a node that learns a neighbor from another node's list
	// (002 Fig 4.1) does not introduce itself to it at once; the other side
	// learns it from the node's next heartbeat.
	QuietRepairs bool
	// NoZoneQueries: a compact heartbeat from a node we do not know at
	// that zone version is taken as a sign of life only; we do not ask the
	// sender for a full update (002 §4.2.2: non-take-over neighbors
	// receive "only aggregated load information").
	NoZoneQueries bool
	// NoTakeoverRequest: an adaptive take-over node does not ask its new
	// neighborhood for full updates at once; like every adaptive node it
	// asks when its border check finds a broken link (002 §4.2.3).
	NoTakeoverRequest bool
	// VerifyLazy turns the list cache (onHeartbeat) into a check of
	// itself: every list the cache would skip as changing nothing is
	// merged anyway, and the node's whole state is compared before and
	// after (lazyState), as it is whenever a judgement is about to be
	// cached; a list that changed something is counted in
	// Status.LazyMisjudged and told to OnMisjudged. The node then behaves
	// as one that decodes every list. For tests and experiments: it costs
	// a full merge of every list and a fingerprint of the state.
	VerifyLazy bool
	// OnMisjudged, if set, hears of each misjudgement VerifyLazy finds,
	// in words. It is called from the node's Step (a driver's goroutine).
	OnMisjudged func(id NodeID, what string)
}

func (c Config) withDefaults() Config {
	if c.HeartbeatPeriod <= 0 {
		c.HeartbeatPeriod = 30 * time.Second
	}
	if c.Mode == "" {
		c.Mode = HeartbeatVanilla
	}
	if c.JoinTimeout <= 0 {
		c.JoinTimeout = 2 * c.HeartbeatPeriod
	}
	if c.MaxHops <= 0 {
		c.MaxHops = 1 << 16
	}
	if c.MaxDetours <= 0 {
		c.MaxDetours = 8
	}
	if c.FailAfter <= 0 {
		c.FailAfter = 3
	}
	if c.Split == "" {
		c.Split = SplitKD
	}
	return c
}

// TimerKind names a timer a node asks the driver for.
type TimerKind uint8

// Timer kinds.
const (
	TimerHeartbeat TimerKind = iota + 1
	TimerJoinRetry
)

// Out is a message the node wants sent. Its wire type is wire.TypeOf(Msg).
// The same Msg value may be addressed to several receivers (one heartbeat to
// every neighbor); drivers may encode it once.
type Out struct {
	To  NodeID
	Msg proto.Message
}

// Timer asks the driver to call Tick(At, Kind) at emulated time At.
type Timer struct {
	Kind TimerKind
	At   time.Duration
}

// Ready is what a node wants done after Bootstrap, Step or Tick.
type Ready struct {
	Messages []Out
	Timers   []Timer
	// Joined is set once, when the node became a member of the overlay.
	Joined bool
	// NeedBootstrap asks the driver to call Bootstrap again with a contact
	// (a join timed out).
	NeedBootstrap bool
}

// Neighbor is what a node knows about one neighbor.
type Neighbor struct {
	ID      NodeID
	Zone    can.Zone
	Version uint64
	// LastHeard is the emulated time of the last message received from it
	// (or, until one arrives, of when the node learned of it).
	LastHeard time.Duration
	// Heard is true once a message came from the neighbor itself: only such
	// first-hand entries are relayed in heartbeats, so that stale
	// second-hand news does not spread from table to table.
	Heard bool
	// LastSplit is the neighbor's last split as its heartbeats tell it: it
	// says whether we are the neighbor's take-over node.
	LastSplit *wire.Split
	// kept is the neighbor's neighbor list from its last full heartbeat,
	// kept while we are its take-over node: we need it to take its zone
	// over (takeoverList). Most neighbors have none: one pointer here
	// instead of the list's fields keeps tables of thousands of peers small.
	kept *keptList
	// Extra are the zones the neighbor holds besides its own (orphans it
	// claimed); it is our neighbor if any of its zones abuts any of ours.
	Extra []can.Zone
	// Load is the load information of the neighbor's last heartbeat (nil
	// until one carried it; only runs with a workload send it): stale by
	// up to a heartbeat period, as in the papers.
	Load *wire.Load

	// relayed is the digest of the last list from this neighbor whose
	// relayed entries changed nothing, at our state relayedAt. The same
	// list at the same state would change nothing again, so it is not
	// decoded (onHeartbeat).
	relayed   uint64
	relayedAt stateKey
}

// keptList is a neighbor's neighbor list kept by its take-over node: a
// lazily decoded heartbeat's list is kept encoded (a quarter of the
// memory) and decoded only for a take-over; an eagerly decoded one as it
// came. digest is the digest of the encoded list (0: unknown).
type keptList struct {
	decoded []*wire.NodeInfo
	encoded []byte
	digest  uint64
}

// Status counts what a node did; drivers turn it into metrics.
type Status struct {
	JoinsOwned       uint64 // joins this node accepted by splitting its zone
	JoinsRejected    uint64 // joins refused because the point equalled its own
	RouteForwards    uint64 // routed messages forwarded to a neighbor
	RouteNoProgress  uint64 // forwards where no neighbor was closer (stale table)
	RouteDetours     uint64 // routed messages arriving no closer than before
	RouteDrops       uint64 // routed messages dropped (MaxHops, MaxDetours, no neighbor)
	LinksLearned     uint64 // neighbors learned from a third party's list (repairs)
	NotNeighborNotes uint64 // replies telling a heartbeat sender we are not neighbors
	DuplicateAccepts uint64 // JOIN_ACCEPTs received after the node had joined
	BadMessages      uint64 // messages with missing or inconsistent fields
	JoinRetries      uint64 // join attempts that timed out
	Takeovers        uint64 // zones (or parts) of departed neighbors taken over
	LeavesSeen       uint64 // LEAVE messages received from departing neighbors
	FailuresDetected uint64 // neighbors declared failed after FailAfter silent periods
	BrokenDetected   uint64 // heartbeat periods in which the local border check found a hole
	FullUpdateReqs   uint64 // FULL-UPDATE requests sent (adaptive mode)
	FullUpdatesSent  uint64 // FULL-UPDATE answers sent
	ZoneQueries      uint64 // compact heartbeats from senders unknown at that version, answered with a FULL-UPDATE request
	OrphansClaimed   uint64 // unclaimed parts of departed nodes' zones this node took as extra zones
	ExtrasYielded    uint64 // extra zones (or parts) given up to a node with a better claim
	ExtrasHanded     uint64 // extra zones handed whole to a joiner whose point lies in them
	Probes           uint64 // zone updates sent to neighbors declared failed, to find a healed partition
	Conflicts        uint64 // nodes found owning part of our own zone (after a partition healed)
	Rejoins          uint64 // times this node gave up its zones and joined again, losing a conflict
	HolesClaimed     uint64 // unowned space next to our border that nobody was awaiting, claimed as an extra zone
	ListsSkipped     uint64 // heartbeat lists the list cache judged to change nothing, not merged (with Config.VerifyLazy: merged and checked)
	LazyMisjudged    uint64 // with Config.VerifyLazy: lists judged to change nothing that changed something
}

// Node is the overlay state machine of one peer.
type Node struct {
	id    NodeID
	point can.Point
	cfg   Config
	rng   *rand.Rand

	joined  bool
	left    bool   // departed: ignores everything from now on
	contact NodeID // bootstrap contact of the current join attempt
	zone    can.Zone
	// extra are zones held besides the own zone: parts of departed nodes'
	// zones that no take-over node claimed (CAN's temporary second zone,
	// Ratnasamy et al. §2.3). Disjoint from zone and from each other.
	extra   []can.Zone
	version uint64
	history []*wire.Split
	nbrs    []*Neighbor // sorted by ID: deterministic iteration
	ids     []NodeID    // the ids of nbrs, in order: find searches them without touching the entries
	// boxes holds, for nbrs[i], its zone's Lo and Hi and a flag (1: it has
	// extra zones) at boxes[i·(2·Dims+1):]: the scans every message runs
	// over the table (routing, rival checks) read one contiguous array
	// instead of a zone scattered on the heap per neighbor (docs/BENCHMARKS.md).
	boxes []uint64
	// gone remembers the last zone version of nodes dropped from the table
	// for a while, so that older second-hand information about them (still
	// circulating in other nodes' heartbeats) cannot bring them back.
	gone        map[NodeID]tombstone
	pending     []pendingMsg
	nextBeat    time.Duration
	joinRetry   time.Duration
	lastFullReq time.Duration // when we last asked for full updates (adaptive)
	fullBackoff int           // periods to wait before asking again while a hole persists
	// awaited are zones of departed neighbors whose take-over nodes may not
	// have claimed them yet; the border check counts them as covered until
	// the deadline, so that a take-over in progress is not a broken link,
	// and what is still unclaimed afterwards becomes an orphan we may claim.
	awaited []awaitedZone
	// suspects are neighbors declared failed, with the time: until
	// probeWindow has passed they get a zone update every probeEvery
	// periods, so that both sides of a healed partition find each other.
	suspects map[NodeID]time.Duration
	// holeSince is when our border was first seen to touch space no known
	// zone covers (and nobody awaits); holeSeen says whether it still does.
	holeSince time.Duration
	holeSeen  bool
	// holeKey fingerprints what the last hole check read (our zones, the
	// table, the awaited zones); holeAt is its answer. Unchanged inputs
	// give the same answer, so the check is skipped.
	holeKey uint64
	holeAt  can.Point
	// load rides on our heartbeats (SetLoad); nil sends none.
	load *wire.Load
	// epoch counts changes of the neighbor table and the tombstones
	// (touch); with version and joined it is the state a relayed entry is
	// judged against (learn), see stateKey.
	epoch uint64

	ready  Ready
	status Status
}

type awaitedZone struct {
	zones []can.Zone // the departed node's own zone and its extra zones
	until time.Duration
	// claimAt is when we look for unclaimed parts next; giveUp when we stop.
	claimAt, giveUp time.Duration
}

// takeoverWait is how many heartbeat periods a departed neighbor's zone is
// awaited: detection times of a failure differ by up to one period.
const takeoverWait = 2

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

// tombstone remembers a dropped neighbor's version, and our own zone
// version when we dropped it: once our zone changes (a take-over grows it)
// the old verdict "does not abut" no longer holds.
type tombstone struct {
	version uint64
	at      time.Duration
	ours    uint64
}

// tombstoneSlack is how many heartbeat periods beyond FailAfter a dropped
// node's version is remembered: long enough for stale copies to die out of
// every table (entries not heard from for FailAfter periods are dropped).
const tombstoneSlack = 2

// departed is the tombstone version of a node that left or failed: no news
// of it can bring it back.
const departed = ^uint64(0)

type pendingMsg struct {
	from NodeID
	msg  proto.Message
}

// maxPending bounds the messages a joining node buffers.
const maxPending = 1024

// New creates the overlay core of peer id at point (whose length is the
// number of CAN dimensions including the virtual one, the last). It
// panics on a Mode or Split that is none of the named values: an unknown
// heartbeat mode is a configuration error, not some mode by default.
func New(id NodeID, point can.Point, cfg Config, rng *rand.Rand) *Node {
	cfg = cfg.withDefaults()
	if _, err := ParseHeartbeatMode(string(cfg.Mode)); err != nil {
		panic("overlay.New: " + err.Error())
	}
	if _, err := ParseSplitRule(string(cfg.Split)); err != nil {
		panic("overlay.New: " + err.Error())
	}
	cfg.Dims = len(point)
	return &Node{id: id, point: slices.Clone(point), cfg: cfg, rng: rng, gone: map[NodeID]tombstone{}, suspects: map[NodeID]time.Duration{}}
}

// ID is the node's address.
func (n *Node) ID() NodeID { return n.id }

// Joined reports whether the node owns a zone.
func (n *Node) Joined() bool { return n.joined }

// Zone is the node's current zone (empty before it joined). Do not modify.
func (n *Node) Zone() can.Zone { return n.zone }

// Extra are the zones the node holds besides its own. Do not modify.
func (n *Node) Extra() []can.Zone { return n.extra }

// Point is the node's fixed coordinate. Do not modify.
func (n *Node) Point() can.Point { return n.point }

// Neighbors is the node's neighbor table, sorted by ID. Do not modify.
func (n *Node) Neighbors() []*Neighbor { return n.nbrs }

// Status returns the node's counters.
func (n *Node) Status() Status { return n.status }

// Ready returns what the node wants done since the last call and clears it.
// The returned slices are reused by the next call: consume them first.
func (n *Node) Ready() Ready {
	r := n.ready
	n.ready = Ready{Messages: r.Messages[:0], Timers: r.Timers[:0]}
	return r
}

func (n *Node) send(to NodeID, m proto.Message) {
	n.ready.Messages = append(n.ready.Messages, Out{To: to, Msg: m})
}

func (n *Node) timer(kind TimerKind, at time.Duration) {
	n.ready.Timers = append(n.ready.Timers, Timer{Kind: kind, At: at})
}

// Bootstrap starts (or restarts) joining the overlay through contact, an
// existing member chosen by the driver (the papers' "external mechanism that
// can find an existing node", 003 §4.1). With contact 0 the node founds the
// overlay and owns the whole space.
func (n *Node) Bootstrap(now time.Duration, contact NodeID) {
	if n.joined || n.left {
		return
	}
	if contact == 0 {
		n.becomeMember(now, 0, can.Whole(n.cfg.Dims), nil, nil)
		return
	}
	if contact == n.id {
		// A node joining again is still in the driver's directory and may
		// be handed itself: it must not found a second overlay. Ask again
		// after the join timeout.
		n.joinRetry = now + n.cfg.JoinTimeout
		n.timer(TimerJoinRetry, n.joinRetry)
		return
	}
	n.contact = contact
	n.sendJoin()
	n.joinRetry = now + n.cfg.JoinTimeout
	n.timer(TimerJoinRetry, n.joinRetry)
}

func (n *Node) sendJoin() {
	n.send(n.contact, &wire.Join{Joiner: uint64(n.id), Point: slices.Clone(n.point)})
}

// Tick handles the expiry of a timer the node asked for. Drivers never call
// it before the timer's deadline (a stale timer, superseded by a later one,
// is recognised by its time and ignored).
func (n *Node) Tick(now time.Duration, kind TimerKind) {
	if n.left {
		return
	}
	switch kind {
	case TimerHeartbeat:
		if n.joined && now >= n.nextBeat {
			n.heartbeat(now)
		}
	case TimerJoinRetry:
		if !n.joined && now >= n.joinRetry {
			n.status.JoinRetries++
			n.ready.NeedBootstrap = true
		}
	}
}

// Step handles one message from peer from.
func (n *Node) Step(now time.Duration, from NodeID, m proto.Message) {
	if n.left {
		return
	}
	switch m := m.(type) {
	case *wire.Join:
		n.onJoin(now, from, m)
	case *wire.JoinAccept:
		n.onJoinAccept(now, from, m)
	case *wire.JoinReject:
		n.onJoinReject(now, from)
	case *wire.Heartbeat:
		n.onHeartbeat(now, from, m, nil)
	case *wire.LazyHeartbeat:
		n.onHeartbeat(now, from, m.Heartbeat, m)
	case *wire.ZoneUpdate:
		n.onZoneUpdate(now, from, m)
	case *wire.Leave:
		n.onLeave(now, from, m)
	case *wire.FullUpdateRequest:
		n.onFullUpdateRequest(now, from, m)
	case *wire.FullUpdate:
		n.onFullUpdate(now, from, m)
	default:
		n.status.BadMessages++
	}
}

// onJoin implements the CAN join (PROTOCOLS.md §2): a JOIN travels greedily
// to the owner of the joiner's point, which splits its zone (can.Split),
// hands one part with the relevant neighbors to the joiner, and tells its
// former neighbors about both zones at once.
func (n *Node) onJoin(now time.Duration, from NodeID, m *wire.Join) {
	if len(m.Point) != n.cfg.Dims || m.Joiner == 0 {
		n.status.BadMessages++
		return
	}
	if !n.joined {
		n.buffer(from, m)
		return
	}
	p := can.Point(m.Point)
	joiner := NodeID(m.Joiner)
	if !n.zone.Contains(p) {
		if i := containing(n.extra, p); i >= 0 && joiner != n.id {
			n.handExtra(now, i, joiner, m.Hops)
			return
		}
		n.routeJoin(p, m)
		return
	}
	if joiner == n.id {
		return
	}
	keep, give, dim, at, virtual, ok := n.split(p)
	if !ok {
		n.status.JoinsRejected++
		n.send(joiner, &wire.JoinReject{Reason: "point equals the owner's point"})
		return
	}
	n.status.JoinsOwned++
	old := slices.Clone(n.nbrs)

	// The joiner's history is ours plus this split, seen from its side.
	jHist := make([]*wire.Split, 0, len(n.history)+1)
	jHist = append(jHist, n.history...)
	jHist = append(jHist, &wire.Split{Dim: uint32(dim), At: at, Upper: give.Lo[dim] == at, Sibling: uint64(n.id)})
	n.history = append(n.history, &wire.Split{Dim: uint32(dim), At: at, Upper: keep.Lo[dim] == at, Sibling: uint64(joiner)})

	n.zone = keep
	n.version++
	me := n.info()
	jInfo := &wire.NodeInfo{Id: uint64(joiner), Zone: zoneToWire(give), Version: 1}
	jNbrs := []*wire.NodeInfo{me}
	for _, nb := range old {
		jNbrs = append(jNbrs, neighborInfo(nb))
	}
	accept := &wire.JoinAccept{Zone: jInfo.Zone, History: jHist, Neighbors: jNbrs, Hops: m.Hops}
	if v := len(p) - 1; virtual != p[v] {
		accept.Virtual = &virtual
	}
	n.send(joiner, accept)

	// Our table: keep neighbors that still abut our smaller zone, add the joiner.
	n.touch()
	n.nbrs = n.nbrs[:0]
	for _, nb := range old {
		if n.abuts(nb.Zone, nb.Extra) {
			n.nbrs = append(n.nbrs, nb)
		} else {
			n.gone[nb.ID] = tombstone{nb.Version, now, n.version}
		}
	}
	n.reindex()
	// The joiner's last split is this one, seen from its side: we are its
	// take-over node, and it is ours.
	n.upsert(&Neighbor{ID: joiner, Zone: give, Version: 1, LastHeard: now, Heard: true, LastSplit: jHist[len(jHist)-1]})

	// Every former neighbor learns our new zone and the joiner's at once.
	upd := &wire.ZoneUpdate{Self: me, Others: []*wire.NodeInfo{jInfo}, LastSplit: n.lastSplit()}
	for _, nb := range old {
		n.send(nb.ID, upd)
	}
}

// split divides our zone for a joiner at point p by the configured rule
// (Config.Split), returning the joiner's virtual coordinate as the split
// leaves it.
func (n *Node) split(p can.Point) (keep, give can.Zone, dim int, at uint64, virtual uint32, ok bool) {
	if n.cfg.Split == SplitHalve {
		return can.Halve(n.zone, n.point, p)
	}
	keep, give, dim, at, ok = can.Split(n.zone, n.point, p)
	return keep, give, dim, at, p[len(p)-1], ok
}

// handExtra gives our extra zone i whole to a joiner whose point lies in
// it: an orphan becomes an ordinary zone again. The joiner gets no split
// history (the zone has no sibling); should it depart, its neighbors treat
// its zone as an orphan.
func (n *Node) handExtra(now time.Duration, i int, joiner NodeID, hops uint32) {
	n.status.JoinsOwned++
	n.status.ExtrasHanded++
	give := n.extra[i]
	n.extra = slices.Delete(n.extra, i, i+1)
	n.version++
	old := slices.Clone(n.nbrs)
	me := n.info()
	jInfo := &wire.NodeInfo{Id: uint64(joiner), Zone: zoneToWire(give), Version: 1}
	jNbrs := []*wire.NodeInfo{me}
	for _, nb := range old {
		jNbrs = append(jNbrs, neighborInfo(nb))
	}
	n.send(joiner, &wire.JoinAccept{Zone: jInfo.Zone, Neighbors: jNbrs, Hops: hops})
	n.learn(now, jInfo, fromJoin)
	n.zoneChanged(now, old, []*wire.NodeInfo{jInfo})
}

// routeJoin forwards a JOIN one hop towards the joiner's point.
func (n *Node) routeJoin(p can.Point, m *wire.Join) {
	if !n.routeProgress(p, m.Hops, &m.Best, &m.Detours) {
		return
	}
	n.route(p, m, &m.Hops)
}

// routeProgress records how close the message got: it returns false (and
// counts a drop) once the message made too many hops, or too many hops that
// did not bring it closer than the best zone it visited.
func (n *Node) routeProgress(p can.Point, hops uint32, best *float64, detours *uint32) bool {
	d := can.Dist2(n.zone, n.extra, p)
	if hops > 0 && d >= *best {
		n.status.RouteDetours++
		*detours++
	} else {
		*best = d
	}
	if int(hops) >= n.cfg.MaxHops || int(*detours) > n.cfg.MaxDetours {
		n.status.RouteDrops++
		return false
	}
	return true
}

// SetLoad sets the load information our heartbeats carry from now on
// (003 §4.4: aggregated load rides on the periodic neighbor update). The
// node keeps l; do not modify it afterwards.
func (n *Node) SetLoad(l *wire.Load) { n.load = l }

// Owns reports whether p lies in one of our zones: we are the owner of
// whatever maps to p (a job's point, 003 §4.1).
func (n *Node) Owns(p can.Point) bool {
	return n.joined && (n.zone.Contains(p) || containing(n.extra, p) >= 0)
}

// NextHop is greedy CAN routing for messages other cores route (jobs): the
// neighbor whose zones are nearest to p. It applies the same hop and
// detour limits as JOIN routing, updating the message's counters; 0 means
// drop the message (counted in RouteDrops).
func (n *Node) NextHop(p can.Point, hops *uint32, best *float64, detours *uint32) NodeID {
	if !n.joined || len(p) != n.cfg.Dims {
		// Not a member (joining, or joining again after losing a zone
		// conflict): no zone to measure progress from.
		n.status.RouteDrops++
		return 0
	}
	if !n.routeProgress(p, *hops, best, detours) {
		return 0
	}
	return n.nextHop(p, hops)
}

// nextHop picks the neighbor nearest to p (greedy CAN routing:
// can.Zone.Dist2) and counts the hop; 0 when we know no neighbor.
func (n *Node) nextHop(p can.Point, hops *uint32) NodeID {
	var next *Neighbor
	bestD := 0.0
	for i, nb := range n.nbrs {
		z, extra := n.box(i)
		d := z.Dist2(p)
		if extra {
			d = can.Dist2(nb.Zone, nb.Extra, p)
		}
		if next == nil || d < bestD {
			next, bestD = nb, d
		}
	}
	if next == nil {
		n.status.RouteDrops++
		return 0
	}
	if bestD >= can.Dist2(n.zone, n.extra, p) {
		n.status.RouteNoProgress++
	}
	*hops++
	n.status.RouteForwards++
	return next.ID
}

// route forwards a routed message one hop towards p (greedy CAN routing:
// the neighbor whose zone is nearest to p, can.Zone.Dist2).
func (n *Node) route(p can.Point, m proto.Message, hops *uint32) {
	if next := n.nextHop(p, hops); next != 0 {
		n.send(next, m)
	}
}

func (n *Node) buffer(from NodeID, m proto.Message) {
	if len(n.pending) < maxPending {
		n.pending = append(n.pending, pendingMsg{from, m})
	} else {
		n.status.RouteDrops++
	}
}

func (n *Node) onJoinAccept(now time.Duration, from NodeID, m *wire.JoinAccept) {
	if n.joined {
		// A second owner accepted an earlier attempt of ours. Its split
		// stays unclaimed; the oracle shows the gap. (Handing it back is the
		// leave protocol's job.)
		n.status.DuplicateAccepts++
		return
	}
	z, ok := zoneFromWire(m.Zone, n.cfg.Dims)
	pt := n.point
	if m.Virtual != nil {
		// The owner halved the virtual dimension and moved us across.
		pt = slices.Clone(n.point)
		pt[len(pt)-1] = m.GetVirtual()
	}
	if !ok || !z.Contains(pt) {
		n.status.BadMessages++
		return
	}
	n.point = pt
	n.becomeMember(now, from, z, m.History, m.Neighbors)
}

func (n *Node) becomeMember(now time.Duration, owner NodeID, z can.Zone, hist []*wire.Split, nbrs []*wire.NodeInfo) {
	n.joined = true
	n.zone = z
	n.version++ // 1 at the first join; a rejoin continues its versions
	n.history = hist
	for _, info := range nbrs {
		// Only the owner's own entry is first-hand; the rest is its view.
		src := fromJoin
		if NodeID(info.GetId()) == owner {
			src = fromSelf
		}
		n.learn(now, info, src)
	}
	if i, ok := n.find(owner); ok && len(hist) > 0 {
		// The owner's last split is ours mirrored, and we are its take-over
		// node: keep its neighbor list for the day it fails.
		mine := hist[len(hist)-1]
		nb := n.nbrs[i]
		nb.LastSplit = &wire.Split{Dim: mine.Dim, At: mine.At, Upper: !mine.Upper, Sibling: uint64(n.id)}
		// Kept encoded, as heartbeat lists are (a quarter of the memory):
		// decoded only for a take-over (takeoverList).
		if b, err := proto.Marshal(&wire.Heartbeat{Neighbors: nbrs[1:]}); err == nil {
			nb.kept = &keptList{encoded: b}
		} else {
			nb.kept = &keptList{decoded: nbrs[1:]}
		}
	}
	n.ready.Joined = true
	// Spread heartbeats over the period so that peers do not beat in step.
	n.nextBeat = now + time.Duration(n.rng.Int64N(int64(n.cfg.HeartbeatPeriod)))
	n.timer(TimerHeartbeat, n.nextBeat)
	pending := n.pending
	n.pending = nil
	for _, p := range pending {
		n.Step(now, p.from, p.msg)
	}
}

func (n *Node) onJoinReject(now time.Duration, from NodeID) {
	if n.joined || from == 0 {
		return
	}
	// Our point coincides with the owner's: draw a new virtual coordinate
	// (the last dimension, 003 §4.2) and try again through the same contact.
	n.point[len(n.point)-1] = n.rng.Uint32()
	n.sendJoin()
}

// onHeartbeat processes a neighbor's periodic heartbeat: the sender's own
// zone, and its neighbor list, from which broken links are repaired
// (002 Fig 4.1: A learns B from C's heartbeat). A lazily decoded heartbeat
// (lazy non-nil, m its decoded part) has its list decoded only when it is
// needed: when it differs from the sender's last list that changed nothing
// here, or our state changed since (see stateKey), or we keep it as the
// sender's take-over node. Skipping a list is exactly processing it: its
// entries would again change nothing. Config.VerifyLazy checks that, list
// by list (lazycheck.go).
func (n *Node) onHeartbeat(now time.Duration, from NodeID, m *wire.Heartbeat, lazy *wire.LazyHeartbeat) {
	if !n.joined {
		return
	}
	if m.Self != nil && m.Self.Zone == nil && NodeID(m.Self.Id) == from {
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
			if _, ours := n.takesOver(nb.Zone, nb.LastSplit); !ours {
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
func (n *Node) onShortHeartbeat(now time.Duration, from NodeID, m *wire.Heartbeat) {
	if i, ok := n.find(from); ok && n.nbrs[i].Version == m.Self.Version {
		nb := n.nbrs[i]
		nb.LastHeard, nb.Heard, nb.LastSplit = now, true, m.LastSplit
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
func (n *Node) notNeighbor(to NodeID) {
	n.status.NotNeighborNotes++
	n.send(to, &wire.ZoneUpdate{Self: n.info()})
}

func (n *Node) onZoneUpdate(now time.Duration, from NodeID, m *wire.ZoneUpdate) {
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
		n.learn(now, info, fromJoin)
	}
}

// validSender checks that a message's own NodeInfo names its sender and a
// zone of our dimensions; a message failing it is counted and ignored whole.
func (n *Node) validSender(from NodeID, self *wire.NodeInfo) bool {
	if self == nil || NodeID(self.Id) != from {
		n.status.BadMessages++
		return false
	}
	if self.Zone == nil || !(can.Zone{Lo: self.Zone.Lo, Hi: self.Zone.Hi}).Valid(n.cfg.Dims) {
		n.status.BadMessages++
		return false
	}
	return true
}

// source says where information about a node comes from.
type source uint8

const (
	fromSelf  source = iota // the node itself (heartbeat, zone update)
	fromJoin                // an introduction: the owner's table at a join, a split notice
	fromRelay               // another node's heartbeat or update: a repair
)

// learn merges what a message says about one node into the neighbor table:
// newer zone versions win; a node whose zone abuts ours becomes (or stays) a
// neighbor, one that no longer abuts is dropped. It reports whether the node
// is a neighbor afterwards.
func (n *Node) learn(now time.Duration, info *wire.NodeInfo, src source) bool {
	direct := src == fromSelf
	id := NodeID(info.GetId())
	if id == 0 || id == n.id {
		return false
	}
	// A view of the wire zone: copied only when it is kept.
	z := can.Zone{Lo: info.GetZone().GetLo(), Hi: info.GetZone().GetHi()}
	if !z.Valid(n.cfg.Dims) {
		n.status.BadMessages++
		return false
	}
	x, ok := extrasFromWire(info.GetExtra(), n.cfg.Dims)
	if !ok {
		n.status.BadMessages++
		return false
	}
	i, known := n.find(id)
	if known {
		nb := n.nbrs[i]
		if direct {
			nb.LastHeard, nb.Heard = now, true
		}
		if info.Version <= nb.Version {
			return true // nothing new; table entries always abut our zone
		}
		nb.Zone, nb.Extra, nb.Version = z.Clone(), cloneZones(x), info.Version
		n.setBox(i)
		n.touch()
		if n.conflict(now, info, nb.Zone, nb.Extra) {
			return false
		}
		n.settleClaims(now, info, nb.Zone, nb.Extra)
		if i, known = n.find(id); known && !n.abuts(nb.Zone, nb.Extra) {
			n.gone[id] = tombstone{nb.Version, now, n.version}
			n.deleteAt(i)
			n.touch()
			return false
		}
		if known {
			n.introduceRivals(nb)
		}
		return known
	}
	if t, ok := n.gone[id]; ok && !direct {
		if t.version == departed || (info.Version <= t.version && t.ours == n.version) {
			return false // a departed node, or older news of a node we dropped
		}
		delete(n.gone, id)
		n.touch()
	}
	if n.conflict(now, info, z, x) {
		return false
	}
	told := n.settleClaims(now, info, z, x)
	if !n.abuts(z, x) {
		return false
	}
	nb := &Neighbor{ID: id, Zone: z.Clone(), Extra: cloneZones(x), Version: info.Version, LastHeard: now, Heard: direct}
	n.upsert(nb)
	n.introduceRivals(nb)
	if src == fromRelay && !told {
		// A repaired link (002 Fig 4.1): the other side may not know us
		// either, so we introduce ourselves at once instead of at our next
		// heartbeat (unless QuietRepairs).
		n.status.LinksLearned++
	}
	if src == fromRelay && !told && !n.cfg.QuietRepairs {
		n.send(id, &wire.ZoneUpdate{Self: n.info(), LastSplit: n.lastSplit()})
	}
	return true
}

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
	ids := make([]NodeID, 0, len(n.suspects))
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
	id := NodeID(info.Id)
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
func (n *Node) rejoin(now time.Duration, contact NodeID) {
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
	n.timer(TimerJoinRetry, n.joinRetry)
}

// introduceRivals tells neighbor nb and any other neighbor whose zones
// overlap nb's about each other: two claims on the same orphan whose
// claimants do not know each other, or two owners of the same space after
// a partition (or news of which one of the two is stale). Each then tells
// the other its zones directly, and a real overlap is settled
// (settleClaims, conflict). Without this, compact heartbeats — which relay
// no lists to most neighbors — could leave such rivals apart for good.
func (n *Node) introduceRivals(nb *Neighbor) {
	for j, o := range n.nbrs {
		if o == nb {
			continue
		}
		if z, extra := n.box(j); !extra && len(nb.Extra) == 0 {
			if !can.Overlaps(z, nb.Zone) {
				continue
			}
		} else if !overlapAny(o, nb) {
			continue
		}
		n.send(nb.ID, &wire.ZoneUpdate{Self: n.info(), Others: []*wire.NodeInfo{neighborInfo(o)}, LastSplit: n.lastSplit()})
		n.send(o.ID, &wire.ZoneUpdate{Self: n.info(), Others: []*wire.NodeInfo{neighborInfo(nb)}, LastSplit: n.lastSplit()})
	}
}

// overlapsAnyZone reports whether w overlaps z or one of x.
func overlapsAnyZone(w, z can.Zone, x []can.Zone) bool {
	if can.Overlaps(w, z) {
		return true
	}
	for _, e := range x {
		if can.Overlaps(w, e) {
			return true
		}
	}
	return false
}

// overlapAny reports whether any zone of a overlaps any zone of b.
func overlapAny(a, b *Neighbor) bool {
	if overlapsAnyZone(a.Zone, b.Zone, b.Extra) {
		return true
	}
	for _, e := range a.Extra {
		if overlapsAnyZone(e, b.Zone, b.Extra) {
			return true
		}
	}
	return false
}

// find looks id up in the neighbor table: its index, and whether it is there.
func (n *Node) find(id NodeID) (int, bool) {
	return slices.BinarySearch(n.ids, id)
}

// deleteAt drops the table's i-th entry.
func (n *Node) deleteAt(i int) {
	n.nbrs = slices.Delete(n.nbrs, i, i+1)
	n.ids = slices.Delete(n.ids, i, i+1)
	w := n.stride()
	n.boxes = slices.Delete(n.boxes, i*w, (i+1)*w)
}

// reindex rebuilds ids and boxes after the table was filtered in place.
func (n *Node) reindex() {
	n.ids, n.boxes = n.ids[:0], n.boxes[:0]
	for _, nb := range n.nbrs {
		n.ids = append(n.ids, nb.ID)
		n.boxes = appendBox(n.boxes, nb)
	}
}

// stride is the length of one neighbor's record in boxes.
func (n *Node) stride() int { return 2*n.cfg.Dims + 1 }

// appendBox appends nb's record for boxes.
func appendBox(dst []uint64, nb *Neighbor) []uint64 {
	dst = append(dst, nb.Zone.Lo...)
	dst = append(dst, nb.Zone.Hi...)
	flag := uint64(0)
	if len(nb.Extra) > 0 {
		flag = 1
	}
	return append(dst, flag)
}

// setBox rewrites nbrs[i]'s record after its zones changed.
func (n *Node) setBox(i int) {
	w := n.stride()
	appendBox(n.boxes[i*w:i*w], n.nbrs[i])
}

// box is nbrs[i]'s own zone, a view into boxes, and whether it holds
// extra zones (then its Neighbor entry has them).
func (n *Node) box(i int) (can.Zone, bool) {
	d, w := n.cfg.Dims, n.stride()
	b := n.boxes[i*w : (i+1)*w : (i+1)*w]
	return can.Zone{Lo: b[:d:d], Hi: b[d : 2*d : 2*d]}, b[2*d] != 0
}

func (n *Node) upsert(nb *Neighbor) {
	n.touch()
	i, ok := n.find(nb.ID)
	if ok {
		n.nbrs[i] = nb
		n.setBox(i)
		return
	}
	n.nbrs = slices.Insert(n.nbrs, i, nb)
	n.ids = slices.Insert(n.ids, i, nb.ID)
	w := n.stride()
	n.boxes = slices.Insert(n.boxes, i*w, make([]uint64, w)...)
	n.setBox(i)
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
	n.timer(TimerHeartbeat, n.nextBeat)
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

// noteSplit records neighbor id's last split as of its zone version
// (older news is ignored) and returns its entry, nil if it is no neighbor.
func (n *Node) noteSplit(id NodeID, version uint64, last *wire.Split) *Neighbor {
	i, ok := n.find(id)
	if !ok {
		return nil
	}
	nb := n.nbrs[i]
	if version == nb.Version {
		nb.LastSplit = last
	}
	return nb
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
		if !n.absorb(now, nb.ID, nb.Zone, nb.LastSplit, n.takeoverList(nb)) {
			n.forget(nb.ID)
		}
		if n.joined {
			n.await(now, nb.Zone, nb.Extra)
		}
	}
}

// await records a departed neighbor's zones (its own and its extras) as
// being taken over; claimOrphans later claims what nobody did.
func (n *Node) await(now time.Duration, z can.Zone, x []can.Zone) {
	p := n.cfg.HeartbeatPeriod
	until := now + takeoverWait*p
	// Our rank among the claimants: a fraction of a period that grows with
	// the volume of our zone (0 for a point, 1 for the whole space).
	rank := time.Duration(float64(p) * logVolume(n.zone) / float64(32*n.cfg.Dims))
	claimAt := until + rank
	n.awaited = append(n.awaited, awaitedZone{
		zones: append([]can.Zone{z.Clone()}, x...), until: until,
		claimAt: claimAt, giveUp: claimAt + orphanRetries*p,
	})
}

// forget drops a departed node from the table for good.
func (n *Node) forget(id NodeID) {
	if i, ok := n.find(id); ok {
		n.deleteAt(i)
	}
	n.gone[id] = tombstone{departed, n.nextBeat, n.version}
	n.touch()
}

// absorb takes over the zone z of departed node id if we are one of its
// take-over nodes (across the plane of its last split): our zone grows over
// our part of z (can.Extend), the split that separated us disappears from
// our history, we learn its neighbors, and we tell all our neighbors our new
// zone. Several take-over nodes each absorb their own part, independently.
func (n *Node) absorb(now time.Duration, id NodeID, z can.Zone, last *wire.Split, list []*wire.NodeInfo) bool {
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
	sent := map[NodeID]bool{}
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
func winsClaim(a NodeID, za can.Zone, b NodeID, zb can.Zone) bool {
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
	id := NodeID(info.Id)
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
	kept := n.awaited[:0]
	for _, a := range n.awaited {
		if now < a.claimAt {
			kept = append(kept, a)
			continue
		}
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
	// The orphan's other neighbors are the departed node's, most of whom we
	// do not know: our neighbors' full lists name them, and each one we
	// learn from a list hears of our claim at once (learn, fromRelay). This
	// is part of claiming, in every heartbeat mode.
	n.requestFullUpdates(now)
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
	lim := can.Mirror(n.zones(), q)
	for _, z := range avoid {
		lim = can.BoundingBox(lim, z)
	}
	for k := range b.Lo {
		b.Lo[k], b.Hi[k] = max(b.Lo[k], lim.Lo[k]), min(b.Hi[k], lim.Hi[k])
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

// Leave makes the node depart gracefully (002 §4.2.2): its take-over nodes
// — the neighbors across the plane of its last split — receive its zone,
// neighbor list and last split and absorb it; its other neighbors drop it.
// Afterwards the node ignores everything.
func (n *Node) Leave(now time.Duration) {
	if n.left {
		return
	}
	if n.joined {
		all := make([]*wire.NodeInfo, len(n.nbrs))
		for i, nb := range n.nbrs {
			all[i] = neighborInfo(nb)
		}
		msg := &wire.Leave{Self: n.info(), Neighbors: all, LastSplit: n.lastSplit()}
		for _, nb := range n.nbrs {
			n.send(nb.ID, msg)
		}
	}
	n.joined, n.left = false, true
	n.pending = nil
}

// Left reports whether the node has departed.
func (n *Node) Left() bool { return n.left }

func (n *Node) onLeave(now time.Duration, from NodeID, m *wire.Leave) {
	if !n.joined || !n.validSender(from, m.Self) {
		return
	}
	n.status.LeavesSeen++
	z, _ := zoneFromWire(m.Self.Zone, n.cfg.Dims)
	x, _ := extrasFromWire(m.Self.Extra, n.cfg.Dims)
	if !n.absorb(now, from, z, m.LastSplit, m.Neighbors) {
		n.forget(from)
	}
	if n.joined {
		n.await(now, z, x)
	}
}

// checkBorder is the adaptive scheme's local broken-link detection (002
// §4.2.3): if part of our zone's border (not on the space boundary) is not
// covered by the zones of known neighbors, we ask every neighbor for its
// full neighbor list. While a hole persists after such a round (space nobody
// owns: the oracle's zone gaps) we ask again after 1, 2, 4, … up to 16
// periods instead of every period — a choice of ours; the paper does not say.
func (n *Node) checkBorder(now time.Duration) {
	if !n.borderHasHole(now) {
		n.fullBackoff = 0
		return
	}
	n.status.BrokenDetected++
	wait := time.Duration(max(n.fullBackoff, 1)) * n.cfg.HeartbeatPeriod
	if n.lastFullReq != 0 && now-n.lastFullReq < wait {
		return
	}
	n.fullBackoff = min(max(2*n.fullBackoff, 1), 16)
	n.requestFullUpdates(now)
}

// requestFullUpdates asks every neighbor for its full neighbor list
// (adaptive heartbeat, 002 §4.2.3).
func (n *Node) requestFullUpdates(now time.Duration) {
	n.lastFullReq = now
	n.status.FullUpdateReqs++
	req := &wire.FullUpdateRequest{Self: n.info()}
	for _, nb := range n.nbrs {
		n.send(nb.ID, req)
	}
}

// borderHasHole reports whether some face of one of our zones, not on the
// space boundary, is not completely covered by abutting zones: known
// neighbors' zones, our other zones, and awaited zones. Areas are compared
// in floating point relative to the face: a hole smaller than a billionth
// of a face goes unnoticed (the oracle counts exactly).
func (n *Node) borderHasHole(now time.Duration) bool {
	var cover []can.Zone
	for _, a := range n.awaited {
		if a.until > now {
			cover = append(cover, a.zones...) // may double count a part already taken over: a hole then hides for a while
		}
	}
	for _, nb := range n.nbrs {
		cover = append(cover, nb.Zone)
		cover = append(cover, nb.Extra...)
	}
	mine := n.zones()
	cover = append(cover, mine...)
	for _, z := range mine {
		if can.FaceHasHole(z, cover) {
			return true
		}
	}
	return false
}

func (n *Node) onFullUpdateRequest(now time.Duration, from NodeID, m *wire.FullUpdateRequest) {
	if !n.joined || !n.validSender(from, m.Self) {
		return
	}
	n.learn(now, m.Self, fromSelf)
	n.status.FullUpdatesSent++
	n.send(from, &wire.FullUpdate{Self: n.info(), Neighbors: n.heardList()})
}

func (n *Node) onFullUpdate(now time.Duration, from NodeID, m *wire.FullUpdate) {
	if !n.joined || !n.validSender(from, m.Self) {
		return
	}
	n.learn(now, m.Self, fromSelf)
	for _, info := range m.Neighbors {
		n.learn(now, info, fromRelay)
	}
}

func (n *Node) info() *wire.NodeInfo {
	return &wire.NodeInfo{Id: uint64(n.id), Zone: zoneToWire(n.zone), Version: n.version, Extra: extrasToWire(n.extra)}
}

func neighborInfo(nb *Neighbor) *wire.NodeInfo {
	return &wire.NodeInfo{Id: uint64(nb.ID), Zone: zoneToWire(nb.Zone), Version: nb.Version, Extra: extrasToWire(nb.Extra)}
}

func extrasToWire(x []can.Zone) []*wire.Zone {
	if len(x) == 0 {
		return nil
	}
	out := make([]*wire.Zone, len(x))
	for i, z := range x {
		out[i] = zoneToWire(z)
	}
	return out
}

// cloneZones copies zones whose coordinates may alias a message (learn
// keeps extras read from a ListDecoder's reused entries).
func cloneZones(x []can.Zone) []can.Zone {
	if len(x) == 0 {
		return nil
	}
	out := make([]can.Zone, len(x))
	for i, z := range x {
		out[i] = z.Clone()
	}
	return out
}

// extrasFromWire views a node's extra zones (their coordinates alias the
// message: cloneZones what is kept); ok is false if one is invalid.
func extrasFromWire(w []*wire.Zone, dims int) ([]can.Zone, bool) {
	if len(w) == 0 {
		return nil, true
	}
	out := make([]can.Zone, len(w))
	for i, z := range w {
		var ok bool
		if out[i], ok = zoneFromWire(z, dims); !ok {
			return nil, false
		}
	}
	return out, true
}

func zoneToWire(z can.Zone) *wire.Zone {
	return &wire.Zone{Lo: slices.Clone(z.Lo), Hi: slices.Clone(z.Hi)}
}

func zoneFromWire(w *wire.Zone, dims int) (can.Zone, bool) {
	if w == nil {
		return can.Zone{}, false
	}
	z := can.Zone{Lo: w.Lo, Hi: w.Hi}
	if !z.Valid(dims) {
		return can.Zone{}, false
	}
	return z.Clone(), true
}

// Snapshot is a copy of a node's overlay state for the oracle.
type Snapshot struct {
	ID     NodeID
	Joined bool
	Point  can.Point
	Zone   can.Zone
	// Extra are the zones the node holds besides its own.
	Extra     []can.Zone
	Version   uint64
	Neighbors []NodeID // sorted
	// NeighborVersions[i] is the zone version the node knows of Neighbors[i].
	NeighborVersions []uint64
}

// Snapshot copies the node's state; the copy shares nothing with the node.
func (n *Node) Snapshot() Snapshot {
	s := Snapshot{ID: n.id, Joined: n.joined, Point: slices.Clone(n.point), Zone: n.zone.Clone(), Version: n.version}
	for _, z := range n.extra {
		s.Extra = append(s.Extra, z.Clone())
	}
	s.Neighbors = make([]NodeID, len(n.nbrs))
	s.NeighborVersions = make([]uint64, len(n.nbrs))
	for i, nb := range n.nbrs {
		s.Neighbors[i] = nb.ID
		s.NeighborVersions[i] = nb.Version
	}
	return s
}
