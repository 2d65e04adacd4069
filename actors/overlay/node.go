// Package overlay is the pure CAN overlay core of one peer (003 §4.2;
// 002 §2.2, §4.2): joining by routing to the owner of the node's
// point and splitting its zone, greedy routing, the neighbor table, and
// periodic heartbeats that carry the sender's neighbor list.
//
// A Node is a single-threaded state machine in the style of etcd-io/raft's
// RawNode: the driver hands it messages (Step) and timer expiries (Tick)
// together with the current emulated time, and collects what it wants done
// (Ready, then Advance once done): messages to send and timers to set
// (actors/core). There are no goroutines, clocks, global randomness or I/O
// inside; the only randomness comes from the *rand.Rand the driver gives
// each node, derived from the run seed.
//
// The Node's code is split by role: node.go holds its state, Step and Tick;
// join.go joining and leaving (003 §4.1; 002 §4.2.2); route.go greedy
// routing; heartbeat.go sending and receiving heartbeats and zone updates
// (002 §4.2); table.go the neighbor table; takeover.go failure detection and
// taking a departed neighbor's zone over; repair.go what 002 §4.2 leaves
// open (orphaned space, holes, healed partitions); adaptive.go the adaptive
// scheme's border check and full updates (002 §4.2.3); modes.go the
// heartbeat modes and split rules.
package overlay

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

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
	// JoinRetry is a joiner's first wait for its JOIN-ACCEPT (gridbed's
	// reading: 003 §4.1 does not say how a lost JOIN is retried); each
	// retry through a new contact doubles the wait, up to JoinTimeout.
	// An owner that accepted a joiner keeps the JOIN-ACCEPT until it hears
	// from it and answers a retried JOIN with it again, so a lost
	// JOIN-ACCEPT costs one retry too (joinretry.go). Default: JoinTimeout
	// (one wait of the full timeout).
	JoinRetry time.Duration
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
	// OrphanNotice (gridbed's extension, scenario key
	// overlay.orphan_notice): every neighbor keeps a neighbor's last full
	// list, not only its take-over nodes, and a node that claims part of a
	// departed neighbor's zone as an orphan (claimOrphans) tells the
	// departed node's other neighbors of the claim at once. Without it,
	// claimants on opposite sides of an orphan that spans the space
	// between them may never hear of each other (both hold the same
	// space). Vanilla heartbeats carry the lists; in compact and adaptive
	// mode only take-over nodes have them.
	OrphanNotice bool
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
	OnMisjudged func(id core.NodeID, what string)
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
	if c.JoinRetry <= 0 || c.JoinRetry > c.JoinTimeout {
		c.JoinRetry = c.JoinTimeout
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

// Ready is what a node wants done after Bootstrap, Step or Tick.
type Ready struct {
	core.Outbox
	// Joined is set once, when the node became a member of the overlay.
	Joined bool
	// NeedBootstrap asks the driver to call Bootstrap again with a contact
	// (a join timed out).
	NeedBootstrap bool
}

// Neighbor is what a node knows about one neighbor.
type Neighbor struct {
	ID      core.NodeID
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

	// splitOf holds the values of splitFor, the LastSplit keepSplit last
	// set: while LastSplit is still that one, a heartbeat's split is
	// compared with them here rather than through the pointer.
	splitOf  splitKey
	splitFor *wire.Split

	// takeover is takesOverNeighbor's last answer, for takeoverKey.
	takeoverKey   takeoverKey
	takeover      bool
	takeoverKnown bool
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
	AcceptsResent    uint64 // JOIN-ACCEPTs sent again to a joiner that retried (joinretry.go)
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
	OrphanNotices    uint64 // zone updates telling a departed node's other neighbors of our orphan claim (Config.OrphanNotice)
	HolesClaimed     uint64 // unowned space next to our border that nobody was awaiting, claimed as an extra zone
	ListsSkipped     uint64 // heartbeat lists the list cache judged to change nothing, not merged (with Config.VerifyLazy: merged and checked)
	LazyMisjudged    uint64 // with Config.VerifyLazy: lists judged to change nothing that changed something
}

// Node is the overlay state machine of one peer.
type Node struct {
	id    core.NodeID
	point can.Point
	cfg   Config
	rng   *rand.Rand

	joined  bool
	left    bool        // departed: ignores everything from now on
	contact core.NodeID // bootstrap contact of the current join attempt
	zone    can.Zone
	// extra are zones held besides the own zone: parts of departed nodes'
	// zones that no take-over node claimed (CAN's temporary second zone,
	// Ratnasamy et al. §2.3). Disjoint from zone and from each other.
	extra   []can.Zone
	version uint64
	history []*wire.Split
	nbrs    []*Neighbor   // sorted by ID: deterministic iteration
	ids     []core.NodeID // the ids of nbrs, in order: find searches them without touching the entries
	// boxes holds, for nbrs[i], its zone's Lo and Hi and a flag (1: it has
	// extra zones) at boxes[i·(2·Dims+1):]: the scans every message runs
	// over the table (routing, rival checks) read one contiguous array
	// instead of a zone scattered on the heap per neighbor (docs/BENCHMARKS.md).
	boxes []uint64
	// gone remembers the last zone version of nodes dropped from the table
	// for a while, so that older second-hand information about them (still
	// circulating in other nodes' heartbeats) cannot bring them back.
	gone      map[core.NodeID]tombstone
	pending   []pendingMsg
	nextBeat  time.Duration
	joinRetry time.Duration
	joinWait  time.Duration // the current wait for a JOIN-ACCEPT (0: no join under way)
	// accepted are the JOIN-ACCEPTs we sent, per joiner, until we hear
	// from it; joinVia, per joiner we learned of from a zone update
	// before hearing from it, is who told us (joinretry.go).
	accepted    map[core.NodeID]sentAccept
	joinVia     map[core.NodeID]viaEntry
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
	suspects map[core.NodeID]time.Duration
	// holeSince is when our border was first seen to touch space no known
	// zone covers (and nobody awaits); holeSeen says whether it still does.
	holeSince time.Duration
	holeSeen  bool
	// holeKey fingerprints what the last hole check read (our zones, the
	// table, the awaited zones); holeAt is its answer. Unchanged inputs
	// give the same answer, so the check is skipped.
	holeKey uint64
	holeAt  can.Point
	// loads gives the load our heartbeats carry (SetLoadSource); load is
	// its answer for the current period. Nil sends none.
	loads LoadSource
	load  *wire.Load
	// epoch counts changes of the neighbor table and the tombstones
	// (touch); with version and joined it is the state a relayed entry is
	// judged against (learn), see stateKey.
	epoch uint64

	ready  Ready
	status Status
}

// New creates the overlay core of peer id at point (whose length is the
// number of CAN dimensions including the virtual one, the last). It
// panics on a Mode or Split that is none of the named values: an unknown
// heartbeat mode is a configuration error, not some mode by default.
func New(id core.NodeID, point can.Point, cfg Config, rng *rand.Rand) *Node {
	cfg = cfg.withDefaults()
	if _, err := ParseHeartbeatMode(string(cfg.Mode)); err != nil {
		panic("overlay.New: " + err.Error())
	}
	if _, err := ParseSplitRule(string(cfg.Split)); err != nil {
		panic("overlay.New: " + err.Error())
	}
	cfg.Dims = len(point)
	return &Node{id: id, point: slices.Clone(point), cfg: cfg, rng: rng, gone: map[core.NodeID]tombstone{}, suspects: map[core.NodeID]time.Duration{}}
}

// ID is the node's address.
func (n *Node) ID() core.NodeID { return n.id }

// Joined reports whether the node owns a zone.
func (n *Node) Joined() bool { return n.joined }

// Zone is the node's current zone (empty before it joined). Do not modify.
func (n *Node) Zone() can.Zone { return n.zone }

// Extra are the zones the node holds besides its own. Do not modify.
func (n *Node) Extra() []can.Zone { return n.extra }

// Config is the node's configuration, defaults applied (a peer starts a
// second core like it: Dual-CAN's Residue-node, 002 §3.1.2).
func (n *Node) Config() Config { return n.cfg }

// Point is the node's fixed coordinate. Do not modify.
func (n *Node) Point() can.Point { return n.point }

// Neighbors is a copy of the node's neighbor table, sorted by ID: the
// entries are the caller's, the table stays the node's. The zones, splits
// and loads they point to are shared: do not modify them.
func (n *Node) Neighbors() []Neighbor {
	out := make([]Neighbor, len(n.nbrs))
	for i, nb := range n.nbrs {
		out[i] = *nb
	}
	return out
}

// Status returns the node's counters.
func (n *Node) Status() Status { return n.status }

// Ready returns what the node wants done since the last Advance.
func (n *Node) Ready() Ready { return n.ready }

// Advance tells the node that the caller is done with what Ready returned:
// the node clears it and reuses its slices.
func (n *Node) Advance() {
	n.ready.Clear()
	n.ready.Joined, n.ready.NeedBootstrap = false, false
}

func (n *Node) send(to core.NodeID, m proto.Message) { n.ready.Send(to, m) }

func (n *Node) timer(kind core.TimerKind, at time.Duration) { n.ready.SetTimer(kind, at) }

// Tick handles the expiry of a timer the node asked for. Drivers never call
// it before the timer's deadline (a stale timer, superseded by a later one,
// is recognised by its time and ignored).
func (n *Node) Tick(now time.Duration, kind core.TimerKind) {
	if n.left {
		return
	}
	switch kind {
	case core.TimerHeartbeat:
		if n.loads != nil {
			n.load = n.loads.LoadInfo()
		}
		if n.joined && now >= n.nextBeat {
			n.heartbeat(now)
		}
		if n.joined && (len(n.accepted) > 0 || len(n.joinVia) > 0) {
			n.forgetJoins(now)
		}
	case core.TimerJoinRetry:
		if !n.joined && now >= n.joinRetry {
			n.status.JoinRetries++
			n.ready.NeedBootstrap = true
		}
	}
}

// Step handles one message from peer from.
func (n *Node) Step(now time.Duration, from core.NodeID, m proto.Message) {
	if n.left {
		return
	}
	if len(n.accepted)+len(n.joinVia) > 0 {
		if _, join := m.(*wire.Join); !join {
			// Anything but a JOIN (a retry) says the joiner is a member.
			n.heardFrom(from)
		}
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

// LoadSource gives the load information a peer's heartbeats carry (003
// §4.4: aggregated load rides on the periodic neighbor update): the job
// core's (*jobs.Node implements it). The node keeps what LoadInfo returns
// until the next call: do not modify it afterwards.
type LoadSource interface {
	LoadInfo() *wire.Load
}

// SetLoadSource makes our heartbeats carry the load s gives: it is asked
// once per heartbeat timer, before that period's failure detection changes
// the table, so the load is the one of the period's start.
func (n *Node) SetLoadSource(s LoadSource) { n.loads = s }

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
	ID     core.NodeID
	Joined bool
	Point  can.Point
	Zone   can.Zone
	// Extra are the zones the node holds besides its own.
	Extra     []can.Zone
	Version   uint64
	Neighbors []core.NodeID // sorted
	// NeighborVersions[i] is the zone version the node knows of Neighbors[i].
	NeighborVersions []uint64
	// Suspects are the neighbors the node declared failed and still
	// probes (002 §4.2's failure detection), with when it did, by its
	// own clock; sorted by ID. The oracle counts those still alive as
	// false suspicions.
	Suspects []Suspect
}

// Suspect is a neighbor declared failed at At.
type Suspect struct {
	ID core.NodeID
	At time.Duration
}

// Snapshot copies the node's state; the copy shares nothing with the node.
func (n *Node) Snapshot() Snapshot {
	s := Snapshot{ID: n.id, Joined: n.joined, Point: slices.Clone(n.point), Zone: n.zone.Clone(), Version: n.version}
	for _, z := range n.extra {
		s.Extra = append(s.Extra, z.Clone())
	}
	s.Neighbors = make([]core.NodeID, len(n.nbrs))
	s.NeighborVersions = make([]uint64, len(n.nbrs))
	for i, nb := range n.nbrs {
		s.Neighbors[i] = nb.ID
		s.NeighborVersions[i] = nb.Version
	}
	for id, at := range n.suspects {
		s.Suspects = append(s.Suspects, Suspect{ID: id, At: at})
	}
	slices.SortFunc(s.Suspects, func(a, b Suspect) int { return cmp.Compare(a.ID, b.ID) })
	return s
}
