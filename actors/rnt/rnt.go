// Package rnt is the Rendezvous Node Tree (003 §5.1) as a pure core: a
// tree over the Chord ring (actors/chord) containing every node, each node
// choosing its parent from local information; hierarchical aggregation of
// the maximum of each resource up the tree and, in the parents' answers,
// down it; and a job's search from a random node through that node's
// subtree, then up into the subtrees of its ancestors, pruned by those maxima,
// until at least k capable nodes are found (extended search), choosing
// the empty capable node with the fastest CPU, else the one with the
// least F(C) (003 Eq 5).
//
// The choices 003 §5.1 leaves open, documented in docs/JOBS.md "RNT":
//   - the parent: the successor on the ring of our identifier with its
//     lowest set bit cleared — and, while that successor is ourselves,
//     the next lowest — so a parent's identifier is always smaller than
//     its child's: no cycles, and the root is the successor of 0. With
//     uniform identifiers a node's depth is the number of lookups that
//     leave it, O(log N) (003 §5.1);
//   - aggregation: every period a node sends its parent the maximum of
//     each resource over its subtree and its node count (RntUp); the
//     parent answers with the maximum outside the child's subtree
//     (RntDown: its own, its other children's, and what its parent told
//     it). Children silent for FailAfter periods are forgotten;
//   - the search starts at the successor of a random key (one lookup on
//     the ring), not at the job's owner: 003 §5.4's "each job starts from
//     a completely random place in the DHT" — gridbed's owners are CAN
//     owners, crowded where the jobs' points are;
//   - the search travels as one message (RntSearch) carrying its
//     candidates, the nodes still to visit and those visited: a
//     depth-first walk, each hop one message straight to a child or
//     parent; it climbs to the current ancestor's parent only when the
//     maximum outside the ancestor's subtree could satisfy the job (or is
//     unknown), and gives up after MaxHops hops;
//   - a search that finds no capable node fails the job (no capable node
//     found) when the aggregates say it was complete and it is the
//     owner's third attempt (failEpoch); earlier, or cut short (hop
//     limit, a parent not known yet), it ends silently and the owner's
//     matchmaking timeout matches the job again.
package rnt

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/chord"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/wire"
)

// ReasonNoCapableNode is the failure of a job no node of the tree can run
// (the job core's reason of the same name).
const ReasonNoCapableNode = "no capable node found"

// failEpoch is the first matchmaking epoch (the owner's attempt) whose
// complete but empty search fails the job: the earlier ones end silently,
// forgiving aggregates not yet built or gone stale (a tree forming, a
// subtree that moved), and the owner's matchmaking timeout tries again.
const failEpoch = 3

// Config sets the tree and its search.
type Config struct {
	Chord chord.Config // the ring's maintenance; its Period paces aggregation too
	// Candidates is the extended search's k: capable nodes to find before
	// choosing (003 §5.1).
	Candidates int
	// MaxHops bounds a search's hops (a tree in flux under churn).
	MaxHops int
}

// Defaults fills zero fields: k = 4 candidates (003 gives no value), at
// most 64 hops.
func (c Config) Defaults() Config {
	c.Chord = c.Chord.Defaults()
	if c.Candidates <= 0 {
		c.Candidates = 4
	}
	if c.MaxHops <= 0 {
		c.MaxHops = 64
	}
	return c
}

// Offer is a node's own offer for a job: its utilization (queue length,
// or required over available cores — 002 Eq 3.4), whether it could start
// the job now, and its CPU speed.
type Offer struct {
	Util  float64
	Free  bool
	Speed float64
}

// Local is what the tree reads of its node's job core: whether the node
// is capable of a job's requirement and its current offer.
type Local interface {
	OfferFor(req []uint32) (Offer, bool)
}

type child struct {
	max   []uint32
	nodes uint32
	seen  time.Duration
}

// Ready is what the tree wants done: its ring's messages and timers and
// its own messages (job assignments and failures among them, addressed to
// job cores).
type Ready struct {
	core.Outbox
	NeedContact bool
}

// Node is one node of the tree.
type Node struct {
	cfg   Config
	self  core.NodeID
	ring  *chord.Node
	point []uint32
	local Local

	parent   core.NodeID // 0: unknown, or we are the root
	root     bool
	seekKey  uint64 // the key whose successor we look up for our parent
	seeking  bool
	children map[core.NodeID]*child
	down     []uint32 // the maximum outside our subtree (our parent's RntDown); nil: unknown
	downAt   time.Duration

	rng     *rand.Rand
	nextTag uint64
	// starting are searches waiting for the lookup of their random start
	// node, by lookup tag (parent lookups use tag 0).
	starting map[uint64]starting

	out   core.Outbox
	ready Ready
	stats Stats
}

type starting struct {
	m  *wire.RntSearch
	at time.Duration
}

// Stats counts the tree's searches.
type Stats struct {
	Searches, Assigned, Dropped, Failed uint64
	SearchHops                          uint64 // hops of the searches that assigned
}

// New creates the tree node of peer self, whose capabilities are point;
// rng draws the searches' random start points.
func New(self core.NodeID, point []uint32, cfg Config, local Local, rng *rand.Rand) *Node {
	cfg = cfg.Defaults()
	return &Node{cfg: cfg, self: self, ring: chord.New(self, cfg.Chord), point: slices.Clone(point), local: local,
		children: map[core.NodeID]*child{}, rng: rng, starting: map[uint64]starting{}}
}

// Ring is the node's Chord core (for snapshots and tests).
func (n *Node) Ring() *chord.Node { return n.ring }

// Parent is the node's parent in the tree (0: the root, or not known yet).
func (n *Node) Parent() core.NodeID { return n.parent }

// IsRoot reports whether the node found itself the tree's root.
func (n *Node) IsRoot() bool { return n.root }

// Children lists the children that reported within FailAfter periods.
func (n *Node) Children() []core.NodeID {
	ids := make([]core.NodeID, 0, len(n.children))
	for id := range n.children {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Stats returns the node's search counters.
func (n *Node) Stats() Stats { return n.stats }

// Join starts joining the ring through contact (chord.Node.Join) and sets
// the first period timer at offset after now.
func (n *Node) Join(now, offset time.Duration, contact core.NodeID) {
	n.ring.Join(now, contact)
	n.ring.Start(now, offset)
}

// Rejoin tries again through a new contact (after Ready's NeedContact).
func (n *Node) Rejoin(now time.Duration, contact core.NodeID) { n.ring.Join(now, contact) }

// Step handles a Chord or tree message from a peer.
func (n *Node) Step(now time.Duration, from core.NodeID, m proto.Message) {
	switch m := m.(type) {
	case *wire.RntUp:
		n.onUp(now, from, m)
	case *wire.RntDown:
		if from == n.parent && len(m.Max) == len(n.point) {
			n.down, n.downAt = m.Max, now
		}
	case *wire.RntSearch:
		if m.Job != nil && len(m.Job.Req) == len(n.point) {
			n.visit(now, m)
		}
	default:
		n.ring.Step(now, from, m)
		n.afterRing(now)
	}
}

// Tick is the node's period: the ring's maintenance, then the tree's —
// forget silent children, look for the parent again, send it our
// subtree's aggregate.
func (n *Node) Tick(now time.Duration) {
	n.ring.Tick(now)
	timeout := time.Duration(n.cfg.Chord.FailAfter) * n.cfg.Chord.Period
	for id, c := range n.children {
		if now-c.seen > timeout {
			delete(n.children, id) // order-free: deleting only
		}
	}
	if n.down != nil && now-n.downAt > timeout {
		n.down = nil
	}
	for tag, st := range n.starting {
		if now-st.at > timeout {
			delete(n.starting, tag) // lost: the owner's timeout tries again (order-free)
		}
	}
	if n.ring.Joined() {
		if n.parent != 0 {
			n.out.Send(n.parent, &wire.RntUp{Max: n.subtreeMax(), Nodes: n.subtreeNodes()})
		}
		n.seekParent(now, chord.Ring(n.self))
	}
	n.afterRing(now)
}

// seekParent looks for our parent from key: clear key's lowest set bit;
// a key we are responsible for ourselves moves on to the next bit; the
// successor of the first other key is looked up (its answer comes back
// through afterRing). Clearing every bit leaves 0, whose successor is the
// root.
func (n *Node) seekParent(now time.Duration, key uint64) {
	for {
		if key == 0 {
			if n.ring.Responsible(0) {
				n.setParent(0, true)
				return
			}
			break
		}
		key &= key - 1 // clear the lowest set bit
		if !n.ring.Responsible(key) {
			break
		}
	}
	n.seekKey, n.seeking = key, true
	n.ring.Lookup(now, key, 0)
}

func (n *Node) setParent(p core.NodeID, root bool) {
	if p != n.parent {
		n.down = nil
	}
	n.parent, n.root = p, root
	n.seeking = false
}

// afterRing takes the ring's answers: a search's random start node
// (begin), or our parent — another node is our parent; ourselves, the
// search for it goes on from the next bit.
func (n *Node) afterRing(now time.Duration) {
	for found := n.ring.TakeFound(); len(found) > 0; found = n.ring.TakeFound() {
		for _, f := range found {
			if f.Tag != 0 {
				if st, ok := n.starting[f.Tag]; ok {
					delete(n.starting, f.Tag)
					n.begin(now, st.m, f.Node, f.Hops)
				}
				continue
			}
			switch {
			case !n.seeking || f.Key != n.seekKey:
			case f.Node != n.self:
				n.setParent(f.Node, false)
			case f.Key == 0:
				n.setParent(0, true)
			default:
				n.seekParent(now, f.Key)
			}
		}
	}
}

// onUp records a child's subtree aggregate and answers with the maximum
// outside its subtree (003 §5.1: the maximal amount of each resource,
// passed up and down the tree).
func (n *Node) onUp(now time.Duration, from core.NodeID, m *wire.RntUp) {
	if len(m.Max) != len(n.point) || from == n.self {
		return
	}
	c := n.children[from]
	if c == nil {
		c = &child{}
		n.children[from] = c
	}
	c.max, c.nodes, c.seen = m.Max, m.Nodes, now
	n.out.Send(from, &wire.RntDown{Max: n.outsideOf(from)})
}

// subtreeMax is the maximum of each resource over our subtree: our own
// capabilities and our children's aggregates.
func (n *Node) subtreeMax() []uint32 {
	mx := slices.Clone(n.point)
	for _, c := range n.children {
		maxInto(mx, c.max)
	}
	return mx
}

func (n *Node) subtreeNodes() uint32 {
	s := uint32(1)
	for _, c := range n.children {
		s += c.nodes
	}
	return s
}

// outsideOf is the maximum outside child ch's subtree as we know it: ours,
// our other children's, and what our parent told us of the rest.
func (n *Node) outsideOf(ch core.NodeID) []uint32 {
	mx := slices.Clone(n.point)
	for id, c := range n.children {
		if id != ch {
			maxInto(mx, c.max)
		}
	}
	if n.down != nil {
		maxInto(mx, n.down)
	}
	return mx
}

func maxInto(dst, src []uint32) {
	for i := range min(len(dst), len(src)) {
		dst[i] = max(dst[i], src[i])
	}
}

// Search starts the search for a job's run node (003 §5.1): "each job
// starts from a completely random place in the DHT" (003 §5.4) — the
// successor of a random key, looked up on the ring — which searches its
// own subtree first, then its ancestors'. hops are the matchmaking hops so
// far; the lookup's count too. Off the ring, the search starts here.
func (n *Node) Search(now time.Duration, job *wire.JobSpec, owner core.NodeID, epoch, hops uint32) {
	n.stats.Searches++
	m := &wire.RntSearch{Job: job, Owner: uint64(owner), Epoch: epoch, Hops: hops}
	if !n.ring.Joined() {
		n.begin(now, m, n.self, 0)
		return
	}
	n.nextTag++
	n.starting[n.nextTag] = starting{m: m, at: now}
	n.ring.Lookup(now, n.rng.Uint64(), n.nextTag)
	n.afterRing(now)
}

// begin hands a search to its start node, which searches its subtree
// first.
func (n *Node) begin(now time.Duration, m *wire.RntSearch, start core.NodeID, lookupHops uint32) {
	m.Hops += lookupHops
	m.Up = uint64(start)
	if start == n.self {
		n.visit(now, m)
		return
	}
	n.forward(start, m)
}

// visit is one step of a job's search at this node (003 §5.1): count
// ourselves if capable; stop at k candidates; when we are the ancestor
// whose subtree is searched, note our parent and whether anything capable
// lies outside our subtree; queue the children whose subtree maximum
// satisfies the job; go to the next node to visit, or climb to the
// ancestor's parent, or choose.
func (n *Node) visit(now time.Duration, m *wire.RntSearch) {
	req := m.Job.Req
	if !slices.Contains(m.Visited, uint64(n.self)) {
		m.Visited = append(m.Visited, uint64(n.self))
		if o, ok := n.local.OfferFor(req); ok {
			m.Cands = append(m.Cands, &wire.RntCandidate{Id: uint64(n.self), Util: float32(o.Util), Free: o.Free, Speed: float32(o.Speed)})
		}
		if m.Up == uint64(n.self) {
			// UpOutside with no parent to climb to marks a search that
			// cannot know it is complete (our parent is not known yet).
			m.UpParent = uint64(n.parent)
			m.UpOutside = !n.root && (n.parent == 0 || n.down == nil || can.Capable(n.down, req))
		}
		for _, id := range n.Children() {
			if c := n.children[id]; can.Capable(c.max, req) && !slices.Contains(m.Visited, uint64(id)) {
				m.Stack = append(m.Stack, uint64(id))
			}
		}
	}
	if len(m.Cands) >= n.cfg.Candidates || int(m.Hops) >= n.cfg.MaxHops {
		n.choose(now, m)
		return
	}
	for len(m.Stack) > 0 {
		next := m.Stack[len(m.Stack)-1]
		m.Stack = m.Stack[:len(m.Stack)-1]
		if !slices.Contains(m.Visited, next) {
			n.forward(core.NodeID(next), m)
			return
		}
	}
	if m.UpOutside && m.UpParent != 0 {
		next := m.UpParent
		m.Up, m.UpParent, m.UpOutside = next, 0, false
		n.forward(core.NodeID(next), m)
		return
	}
	n.choose(now, m)
}

func (n *Node) forward(to core.NodeID, m *wire.RntSearch) {
	m.Hops++
	n.out.Send(to, m)
}

// choose ends a search (003 §5.1): among the candidates, the empty one
// with the fastest CPU, else the one with the least F(C) (003 Eq 5); the
// job goes to it (a JobAssign to its job core). Without candidates a
// search the aggregates say was complete — it searched the subtrees they
// allowed up to an ancestor with nothing capable outside its subtree, or
// the root — fails the job from the owner's failEpoch-th attempt on; one
// that was cut short (the hop limit, an ancestor without a known parent)
// or earlier ends silently, and the owner's matchmaking timeout tries
// again.
func (n *Node) choose(now time.Duration, m *wire.RntSearch) {
	if len(m.Cands) == 0 {
		if !m.UpOutside && int(m.Hops) < n.cfg.MaxHops && m.Epoch >= failEpoch {
			n.stats.Failed++
			st := &wire.JobStatus{Failed: []*wire.JobFailure{{Id: m.Job.Id, Reason: ReasonNoCapableNode}}}
			n.out.Send(core.NodeID(m.Job.Client), st)
			n.out.Send(core.NodeID(m.Owner), st)
			return
		}
		n.stats.Dropped++
		return
	}
	best := Best(m.Cands)
	n.stats.Assigned++
	n.stats.SearchHops += uint64(m.Hops)
	n.out.Send(core.NodeID(best.Id), &wire.JobAssign{Job: m.Job, Owner: m.Owner, Epoch: m.Epoch, Hops: m.Hops})
}

// Best is 003 §5.1's choice among capable candidates: if any has an
// empty queue, the empty one with the fastest CPU; otherwise the least
// F(C) = util/speed (003 Eq 5). Ties go to the lower address.
func Best(cs []*wire.RntCandidate) *wire.RntCandidate {
	free := slices.DeleteFunc(slices.Clone(cs), func(c *wire.RntCandidate) bool { return !c.Free })
	if len(free) > 0 {
		return slices.MinFunc(free, func(a, b *wire.RntCandidate) int {
			return cmp.Or(cmp.Compare(b.Speed, a.Speed), cmp.Compare(a.Id, b.Id))
		})
	}
	return slices.MinFunc(cs, func(a, b *wire.RntCandidate) int {
		return cmp.Or(cmp.Compare(load.Score(float64(a.Util), float64(a.Speed)), load.Score(float64(b.Util), float64(b.Speed))), cmp.Compare(a.Id, b.Id))
	})
}

// Ready hands out what the node and its ring want done.
func (n *Node) Ready() Ready {
	r := n.ring.Ready()
	n.ready.Messages = append(append(n.ready.Messages[:0], r.Messages...), n.out.Messages...)
	n.ready.Timers = append(append(n.ready.Timers[:0], r.Timers...), n.out.Timers...)
	n.ready.NeedContact = r.NeedContact
	return n.ready
}

// Advance clears what Ready handed out.
func (n *Node) Advance() {
	n.ring.Advance()
	n.out.Clear()
	clear(n.ready.Messages)
}
