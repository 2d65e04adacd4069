// Package chord is the pure Chord core (Stoica et al., SIGCOMM 2001: the
// DHT 003 §5.1's Rendezvous Node Tree is built on): a ring of 64-bit
// identifiers, each node's successor list, predecessor and finger table,
// and the periodic maintenance of the paper's Fig 6 — stabilize, notify,
// fix_fingers, check_predecessor — with recursive lookups of a key's
// successor.
//
// Like the overlay and job cores it is a single-threaded state machine
// (docs/ARCHITECTURE.md principle 1): the caller hands it messages (Step)
// and its period's timer (Tick) with the emulated time and collects what
// it wants done (Ready, then Advance). No goroutines, clocks or global
// randomness inside.
//
// Choices the Chord paper leaves to an implementation (docs/JOBS.md "RNT"):
//   - a node's identifier is a hash of its address (Ring), so messages
//     carry addresses only;
//   - lookups are recursive: forwarded hop by hop to the closest preceding
//     node, and the node whose successor holds the key answers the asker
//     directly; an unanswered lookup is forgotten after FailAfter periods
//     (the asker tries again at its next period), and the node it first
//     went to leaves the finger table until fix_fingers finds it again
//     (the paper's timeouts, without an acknowledgement per hop);
//   - failure detection: a successor that has not answered FailAfter
//     stabilize rounds in a row is dropped from the successor list (and
//     the finger table), the next one taking over (the paper's §6.3
//     successor lists); a predecessor that has not answered a ping for
//     FailAfter periods is cleared (check_predecessor);
//   - fix_fingers refreshes one finger per period, in turn; a finger
//     whose start lies between us and our successor is the successor,
//     without a lookup;
//   - a node that takes a new predecessor tells the old one at once (the
//     answer to its next stabilize, sent ahead): concurrent joins then
//     settle in a few periods instead of one node per period; likewise a
//     stabilize that finds a closer successor asks it at once;
//   - a graceful leave is not announced: the ring repairs it as a crash.
package chord

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// Bits is the size of the identifier space: identifiers are on a ring of
// 2^64.
const Bits = 64

// Ring is the identifier of the node at address id: its address hashed
// (splitmix64), uniform on the ring as Chord's consistent hashing makes
// it.
func Ring(id core.NodeID) uint64 {
	z := uint64(id) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Between reports whether x lies in the ring interval (a, b), open at both
// ends; with a == b, the whole ring but a.
func Between(a, x, b uint64) bool {
	if a < b {
		return a < x && x < b
	}
	return x > a || x < b
}

// BetweenRight reports whether x lies in (a, b]; with a == b, the whole
// ring.
func BetweenRight(a, x, b uint64) bool { return x == b || Between(a, x, b) }

// Config sets the maintenance of the ring.
type Config struct {
	// Period is the interval of stabilize, fix_fingers and
	// check_predecessor.
	Period time.Duration
	// Successors is the length of the successor list (Chord §6.3's r).
	Successors int
	// FailAfter is how many periods without an answer make a successor or
	// predecessor presumed failed, and a lookup forgotten.
	FailAfter int
}

// Defaults fills zero fields: a 10 s period, 8 successors (≥ log2 of
// the runs' populations), failure after 3 periods.
func (c Config) Defaults() Config {
	if c.Period <= 0 {
		c.Period = 10 * time.Second
	}
	if c.Successors <= 0 {
		c.Successors = 8
	}
	if c.FailAfter <= 0 {
		c.FailAfter = 3
	}
	return c
}

// Purpose is why a lookup was started.
type Purpose uint8

// Lookup purposes.
const (
	PurposeJoin   Purpose = iota + 1 // our own successor, joining
	PurposeFinger                    // a finger (fix_fingers)
	PurposeApp                       // the caller's (Lookup)
)

type lookup struct {
	purpose Purpose
	key     uint64
	finger  int
	tag     uint64
	at      time.Duration
	via     core.NodeID // the first hop it was forwarded to (0: answered here)
}

// Found is an answered lookup of the caller's (Lookup): node is the
// successor of Key; Hops the forwards it took.
type Found struct {
	Key  uint64
	Tag  uint64
	Node core.NodeID
	Hops uint32
}

// Ready is what the core wants done.
type Ready struct {
	core.Outbox
	// Found are the caller's lookups answered since the last Advance.
	Found []Found
	// NeedContact asks for a member of the ring to join through (Join).
	NeedContact bool
}

// Node is one node of the ring.
type Node struct {
	cfg  Config
	self core.NodeID
	ring uint64

	joined  bool
	joining time.Duration // when our join lookup left; -1: none pending
	pred    core.NodeID
	predAt  time.Duration // when the predecessor last showed it is alive
	succs   []core.NodeID // nearest first; [self] alone
	asked   bool          // a stabilize to succs[0] awaits its answer
	misses  int           // stabilize rounds succs[0] left unanswered
	fingers [Bits]core.NodeID
	next    int // fix_fingers' next finger

	reqSeq uint64
	reqs   map[uint64]lookup

	out   core.Outbox
	found []Found
	need  bool

	// Counters for Snapshot.
	lookups, lookupHops uint64
}

// New creates the node at address self; it is not on the ring until Join.
func New(self core.NodeID, cfg Config) *Node {
	return &Node{cfg: cfg.Defaults(), self: self, ring: Ring(self), joining: -1, reqs: map[uint64]lookup{}}
}

// ID is the node's address.
func (n *Node) ID() core.NodeID { return n.self }

// Joined reports whether the node is on the ring.
func (n *Node) Joined() bool { return n.joined }

// Successor is the node's successor (itself when alone; 0 before joining).
func (n *Node) Successor() core.NodeID {
	if len(n.succs) == 0 {
		return 0
	}
	return n.succs[0]
}

// Predecessor is the node's predecessor as it knows it (0: unknown).
func (n *Node) Predecessor() core.NodeID { return n.pred }

// Join starts joining the ring through contact (Chord Fig 6's join:
// find our successor through a member). With contact 0 the node founds
// the ring alone; a contact that is the node itself is no contact, and
// the node asks again at its next period.
func (n *Node) Join(now time.Duration, contact core.NodeID) {
	if n.joined {
		return
	}
	switch contact {
	case 0:
		n.joined = true
		n.succs = []core.NodeID{n.self}
		return
	case n.self:
		return
	}
	n.joining = now
	n.send(contact, &wire.ChordFind{Key: n.ring, Origin: uint64(n.self), Req: n.newReq(lookup{purpose: PurposeJoin, key: n.ring, at: now})})
}

// Start sets the node's first period timer, at offset after now (the
// caller's jitter, so that the ring's nodes do not tick in lockstep).
func (n *Node) Start(now, offset time.Duration) {
	n.out.SetTimer(core.TimerRNT, now+offset)
}

// Lookup asks for the successor of key; the answer comes back in
// Ready().Found with tag. A node that is not on the ring yet drops it.
func (n *Node) Lookup(now time.Duration, key, tag uint64) {
	if !n.joined {
		return
	}
	req := n.newReq(lookup{purpose: PurposeApp, key: key, tag: tag, at: now})
	n.find(now, &wire.ChordFind{Key: key, Origin: uint64(n.self), Req: req})
}

// Responsible reports whether, as far as the node knows, it is the
// successor of key: key lies in (predecessor, self] — or it is alone.
func (n *Node) Responsible(key uint64) bool {
	if !n.joined {
		return false
	}
	if n.succs[0] == n.self {
		return true
	}
	return n.pred != 0 && BetweenRight(Ring(n.pred), key, n.ring)
}

func (n *Node) newReq(l lookup) uint64 {
	n.reqSeq++
	n.reqs[n.reqSeq] = l
	n.lookups++
	return n.reqSeq
}

func (n *Node) send(to core.NodeID, m proto.Message) { n.out.Send(to, m) }

// Step handles a Chord message from a peer.
func (n *Node) Step(now time.Duration, from core.NodeID, m proto.Message) {
	switch m := m.(type) {
	case *wire.ChordFind:
		n.find(now, m)
	case *wire.ChordFound:
		n.onFound(now, m)
	case *wire.ChordStabilize:
		if n.joined {
			n.send(from, &wire.ChordState{Pred: uint64(n.pred), Succs: uint64s(n.succs)})
		}
	case *wire.ChordState:
		n.onState(now, from, m)
	case *wire.ChordNotify:
		n.notify(now, from)
	case *wire.ChordPing:
		if n.joined {
			n.send(from, &wire.ChordPong{})
		}
	case *wire.ChordPong:
		if from == n.pred {
			n.predAt = now
		}
	}
}

// find is find_successor (Chord Fig 5), recursive: answer the asker when
// the key falls between us and our successor (or on us), else forward to
// the closest preceding node.
func (n *Node) find(now time.Duration, m *wire.ChordFind) {
	if !n.joined {
		return // not on the ring: the asker tries again
	}
	succ := n.succs[0]
	var answer core.NodeID
	switch {
	case n.pred != 0 && BetweenRight(Ring(n.pred), m.Key, n.ring):
		answer = n.self
	case succ == n.self || BetweenRight(n.ring, m.Key, Ring(succ)):
		answer = succ
	default:
		if next := n.closestPreceding(m.Key); next != n.self {
			if l, ok := n.reqs[m.Req]; ok && core.NodeID(m.Origin) == n.self && l.via == 0 {
				l.via = next
				n.reqs[m.Req] = l
			}
			m.Hops++
			n.send(next, m)
			return
		}
		answer = succ
	}
	f := &wire.ChordFound{Key: m.Key, Node: uint64(answer), Req: m.Req, Hops: m.Hops}
	if core.NodeID(m.Origin) == n.self {
		n.onFound(now, f)
		return
	}
	n.send(core.NodeID(m.Origin), f)
}

// closestPreceding is closest_preceding_node (Chord Fig 5) over the
// finger table and the successor list: the known node closest before key;
// the node itself when it knows none.
func (n *Node) closestPreceding(key uint64) core.NodeID {
	best, bestD := n.self, uint64(0)
	consider := func(x core.NodeID) {
		if x == 0 || x == n.self {
			return
		}
		r := Ring(x)
		if Between(n.ring, r, key) {
			if d := r - n.ring; d > bestD {
				best, bestD = x, d
			}
		}
	}
	for i := Bits - 1; i >= 0; i-- {
		consider(n.fingers[i])
	}
	for _, s := range n.succs {
		consider(s)
	}
	return best
}

func (n *Node) onFound(now time.Duration, m *wire.ChordFound) {
	l, ok := n.reqs[m.Req]
	if !ok || l.key != m.Key || m.Node == 0 {
		return
	}
	delete(n.reqs, m.Req)
	node := core.NodeID(m.Node)
	n.lookupHops += uint64(m.Hops)
	switch l.purpose {
	case PurposeJoin:
		if !n.joined && node != n.self {
			n.joined, n.joining = true, -1
			n.succs = []core.NodeID{node}
			n.asked, n.misses = false, 0
		}
	case PurposeFinger:
		n.fingers[l.finger] = node
	case PurposeApp:
		n.found = append(n.found, Found{Key: m.Key, Tag: l.tag, Node: node, Hops: m.Hops})
	}
}

// onState is the second half of stabilize (Chord Fig 6): our successor's
// predecessor, if between us and it, becomes our successor; its
// successor list, behind it, becomes ours; then notify it.
func (n *Node) onState(now time.Duration, from core.NodeID, m *wire.ChordState) {
	if !n.joined || from != n.succs[0] {
		return
	}
	n.asked, n.misses = false, 0
	succ := from
	if x := core.NodeID(m.Pred); x != 0 && x != n.self && Between(n.ring, Ring(x), Ring(succ)) {
		succ = x
	}
	list := []core.NodeID{succ}
	if succ != from {
		list = append(list, from)
	}
	for _, s := range m.Succs {
		if len(list) >= n.cfg.Successors {
			break
		}
		x := core.NodeID(s)
		if x == n.self {
			break // the list went round the ring back to us
		}
		if x != 0 && !contains(list, x) {
			list = append(list, x)
		}
	}
	n.succs = list
	if succ != from {
		// A closer successor: ask it straight away rather than next
		// period, so a node walks to its place at message speed.
		n.asked = true
		n.send(succ, &wire.ChordStabilize{})
		return
	}
	n.send(succ, &wire.ChordNotify{})
}

// notify (Chord Fig 6): from thinks it might be our predecessor. A node
// alone takes it as its successor too, closing a ring of two.
func (n *Node) notify(now time.Duration, from core.NodeID) {
	if !n.joined || from == n.self {
		return
	}
	if n.pred == 0 || n.pred == from || Between(Ring(n.pred), Ring(from), n.ring) {
		if old := n.pred; old != 0 && old != from {
			// The old predecessor's successor is now the new one: tell it
			// at once, as our answer to its next stabilize would.
			n.send(old, &wire.ChordState{Pred: uint64(from), Succs: uint64s(n.succs)})
		}
		n.pred, n.predAt = from, now
	}
	if n.succs[0] == n.self {
		n.succs = []core.NodeID{from}
		n.asked, n.misses = false, 0
	}
}

// Tick is the node's period (it sets the next one): stabilize, check_predecessor and
// fix_fingers (Chord Fig 6), forgetting lookups left unanswered; a node
// not on the ring asks for a contact to join through.
func (n *Node) Tick(now time.Duration) {
	n.out.SetTimer(core.TimerRNT, now+n.cfg.Period)
	timeout := time.Duration(n.cfg.FailAfter) * n.cfg.Period
	for id, l := range n.reqs {
		if now-l.at > timeout {
			// Lost: the node it first went to is suspect, out of the
			// finger table until fix_fingers finds it again (order-free:
			// deleting and clearing only).
			delete(n.reqs, id)
			n.forgetFinger(l.via)
		}
	}
	if !n.joined {
		if n.joining < 0 || now-n.joining > timeout {
			n.joining = -1
			n.need = true
		}
		return
	}
	n.stabilize()
	n.checkPredecessor(now, timeout)
	n.fixFinger(now)
}

// stabilize asks our successor for its predecessor (Chord Fig 6); a
// successor that left FailAfter rounds unanswered is presumed failed and
// the next on the list takes over (Chord §6.3).
func (n *Node) stabilize() {
	if n.succs[0] == n.self {
		return
	}
	if n.asked {
		n.misses++
		if n.misses >= n.cfg.FailAfter {
			n.dropSuccessor()
		}
	}
	if n.succs[0] == n.self {
		return
	}
	n.asked = true
	n.send(n.succs[0], &wire.ChordStabilize{})
}

// dropSuccessor removes our failed successor from the successor list and
// the finger table. With none left the node is cut off: it joins again.
func (n *Node) dropSuccessor() {
	dead := n.succs[0]
	n.succs = n.succs[1:]
	n.asked, n.misses = false, 0
	n.forgetFinger(dead)
	if n.pred == dead {
		n.pred = 0
	}
	if len(n.succs) == 0 {
		if n.pred != 0 {
			n.succs = []core.NodeID{n.pred}
			return
		}
		n.joined = false
		n.need = true
	}
}

// forgetFinger clears every finger that is node x.
func (n *Node) forgetFinger(x core.NodeID) {
	if x == 0 {
		return
	}
	for i := range n.fingers {
		if n.fingers[i] == x {
			n.fingers[i] = 0
		}
	}
}

// checkPredecessor (Chord Fig 6): clear a predecessor silent for
// FailAfter periods, else ping it.
func (n *Node) checkPredecessor(now, timeout time.Duration) {
	if n.pred == 0 {
		return
	}
	if now-n.predAt > timeout {
		n.pred = 0
		return
	}
	n.send(n.pred, &wire.ChordPing{})
}

// fixFinger refreshes the next finger (Chord Fig 6's fix_fingers): the
// successor of self + 2^i. A start between us and our successor is our
// successor, without a lookup.
func (n *Node) fixFinger(now time.Duration) {
	i := n.next
	n.next = (n.next + 1) % Bits
	start := n.ring + 1<<uint(i)
	if succ := n.succs[0]; succ == n.self || BetweenRight(n.ring, start, Ring(succ)) {
		n.fingers[i] = succ
		return
	}
	req := n.newReq(lookup{purpose: PurposeFinger, key: start, finger: i, at: now})
	n.find(now, &wire.ChordFind{Key: start, Origin: uint64(n.self), Req: req})
}

// Ready hands out what the node wants done.
func (n *Node) Ready() Ready {
	return Ready{Outbox: n.out, Found: n.found, NeedContact: n.need}
}

// TakeFound hands out the caller's answered lookups (Ready's Found) and
// forgets them, for a caller that acts on them at once.
func (n *Node) TakeFound() []Found {
	f := n.found
	n.found = nil
	return f
}

// Advance clears what Ready handed out.
func (n *Node) Advance() {
	n.out.Clear()
	n.found = n.found[:0]
	n.need = false
}

// Snapshot is the node's ring state, for the oracle and tests.
type Snapshot struct {
	ID      core.NodeID
	Joined  bool
	Pred    core.NodeID
	Succs   []core.NodeID
	Fingers []core.NodeID // Bits entries, 0 where unknown
	// Lookups started and hops of those answered.
	Lookups, LookupHops uint64
}

// Snapshot copies the node's ring state.
func (n *Node) Snapshot() Snapshot {
	return Snapshot{ID: n.self, Joined: n.joined, Pred: n.pred, Succs: append([]core.NodeID(nil), n.succs...),
		Fingers: append([]core.NodeID(nil), n.fingers[:]...), Lookups: n.lookups, LookupHops: n.lookupHops}
}

func uint64s(ids []core.NodeID) []uint64 {
	out := make([]uint64, len(ids))
	for i, x := range ids {
		out[i] = uint64(x)
	}
	return out
}

func contains(ids []core.NodeID, x core.NodeID) bool {
	for _, y := range ids {
		if y == x {
			return true
		}
	}
	return false
}
