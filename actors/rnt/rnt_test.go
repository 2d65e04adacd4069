package rnt

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/chord"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

func TestBest(t *testing.T) {
	c := func(id uint64, util float32, free bool, speed float32) *wire.RntCandidate {
		return &wire.RntCandidate{Id: id, Util: util, Free: free, Speed: speed}
	}
	for _, tc := range []struct {
		name string
		cs   []*wire.RntCandidate
		want uint64
	}{
		{"the only one", []*wire.RntCandidate{c(7, 3, false, 1)}, 7},
		{"an empty one beats a lighter score", []*wire.RntCandidate{c(1, 0.1, false, 9), c(2, 0, true, 1)}, 2},
		{"the fastest empty one", []*wire.RntCandidate{c(1, 0, true, 1), c(2, 0, true, 2), c(3, 0, true, 1.5)}, 2},
		{"least queue/speed (Eq 5)", []*wire.RntCandidate{c(1, 2, false, 1), c(2, 3, false, 2), c(3, 1, false, 0.4)}, 2},
		{"ties to the lower address", []*wire.RntCandidate{c(5, 2, false, 1), c(4, 2, false, 1)}, 4},
	} {
		if got := Best(tc.cs).Id; got != tc.want {
			t.Errorf("%s: Best = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// local is a test node's job core: its capabilities and queue.
type local struct {
	point []uint32
	queue int
}

func (l *local) OfferFor(req []uint32) (Offer, bool) {
	if !can.Capable(l.point, req) {
		return Offer{}, false
	}
	return Offer{Util: float64(l.queue), Free: l.queue == 0, Speed: 1}, true
}

type endpoint struct {
	n       *Node
	contact func() core.NodeID
	tree    *tree
}

func (e *endpoint) Step(now time.Duration, from core.NodeID, m proto.Message) {
	switch m := m.(type) {
	case *wire.JobAssign:
		e.tree.assigned = append(e.tree.assigned, assigned{to: e.n.self, a: m})
	case *wire.JobStatus:
		e.tree.failed = append(e.tree.failed, m)
	default:
		e.n.Step(now, from, m)
	}
}
func (e *endpoint) Tick(now time.Duration, _ core.TimerKind) { e.n.Tick(now) }
func (e *endpoint) Flush(send func(core.NodeID, proto.Message), timer func(time.Duration, core.TimerKind)) {
	r := e.n.Ready()
	for _, m := range r.Messages {
		send(m.To, m.Msg)
	}
	for _, tm := range r.Timers {
		timer(tm.At, tm.Kind)
	}
	need := r.NeedContact
	e.n.Advance()
	if need {
		e.n.Rejoin(0, e.contact())
	}
}

type assigned struct {
	to core.NodeID
	a  *wire.JobAssign
}

type tree struct {
	t        *testing.T
	seed     uint64
	net      *testnet.Net[core.NodeID, core.TimerKind]
	eps      map[core.NodeID]*endpoint
	locals   map[core.NodeID]*local
	live     []core.NodeID
	rng      *rand.Rand
	cfg      Config
	assigned []assigned
	failed   []*wire.JobStatus
}

const period = time.Second

func newTree(t *testing.T, seed uint64, nodes int) *tree {
	net := testnet.New[core.NodeID, core.TimerKind](t)
	net.Lossy = true
	net.MaxSteps = 1 << 20
	tr := &tree{t: t, seed: seed, net: net, eps: map[core.NodeID]*endpoint{}, locals: map[core.NodeID]*local{},
		rng: rand.New(rand.NewPCG(seed, 2)), cfg: Config{Chord: chord.Config{Period: period}}.Defaults()}
	for i := range nodes {
		id := core.NodeID(i + 1)
		// Capabilities in three resource dimensions plus the virtual one.
		l := &local{point: []uint32{tr.rng.Uint32(), tr.rng.Uint32(), tr.rng.Uint32(), tr.rng.Uint32()}}
		tr.locals[id] = l
		e := &endpoint{n: New(id, l.point, tr.cfg, l, rand.New(rand.NewPCG(seed, uint64(id)))), tree: tr}
		e.contact = func() core.NodeID { return tr.live[tr.rng.IntN(len(tr.live))] }
		var contact core.NodeID
		if len(tr.live) > 0 {
			contact = e.contact()
		}
		tr.eps[id] = e
		net.Add(id, e)
		tr.live = append(tr.live, id)
		e.n.Join(net.Now, time.Duration(tr.rng.Int64N(int64(period))), contact)
		net.Collect(id)
		net.Deliver()
	}
	return tr
}

func (tr *tree) run(periods int) { tr.net.RunUntil(tr.net.Now + time.Duration(periods)*period) }

func (tr *tree) crash(id core.NodeID) {
	tr.net.Remove(id)
	delete(tr.eps, id)
	tr.live = slices.DeleteFunc(tr.live, func(x core.NodeID) bool { return x == id })
}

// successorOf is the true successor of key among the live nodes.
func (tr *tree) successorOf(key uint64) core.NodeID {
	var best, lowest core.NodeID
	for _, id := range tr.live {
		r := chord.Ring(id)
		if r >= key && (best == 0 || r < chord.Ring(best)) {
			best = id
		}
		if lowest == 0 || r < chord.Ring(lowest) {
			lowest = id
		}
	}
	if best == 0 {
		return lowest
	}
	return best
}

// parentOf is the true parent of id: the successor of its identifier with
// bits cleared from the lowest until that successor is another node (0:
// the root).
func (tr *tree) parentOf(id core.NodeID) core.NodeID {
	key := chord.Ring(id)
	for key != 0 {
		key &= key - 1
		if s := tr.successorOf(key); s != id {
			return s
		}
	}
	return 0
}

// checkTree asserts every node's parent is the true one, that parents'
// identifiers are smaller than their children's, and that the root's
// aggregate covers every node and the maximum of each resource.
func (tr *tree) checkTree() {
	tr.t.Helper()
	for _, id := range tr.live {
		s := tr.eps[id].n.Ring().Snapshot()
		if s.Succs[0] != tr.successorOf(chord.Ring(id)+1) {
			tr.t.Errorf("seed %d: node %d: successor %d, want %d", tr.seed, id, s.Succs[0], tr.successorOf(chord.Ring(id)+1))
		}
	}
	var root core.NodeID
	depth := 0
	for _, id := range tr.live {
		n := tr.eps[id].n
		want := tr.parentOf(id)
		if n.Parent() != want || n.IsRoot() != (want == 0) {
			_, alive := tr.eps[n.Parent()]
			s := n.Ring().Snapshot()
			tr.t.Logf("node %d: parent %d alive %v seeking %v key %x; ring %x pred %d succs %v", id, n.Parent(), alive, n.seeking, n.seekKey, chord.Ring(id), s.Pred, s.Succs)
			tr.t.Fatalf("seed %d: node %d: parent %d root %v, want %d", tr.seed, id, n.Parent(), n.IsRoot(), want)
		}
		if want == 0 {
			root = id
			continue
		}
		if chord.Ring(want) >= chord.Ring(id) {
			tr.t.Fatalf("seed %d: parent %d of %d has a larger identifier", tr.seed, want, id)
		}
		d := 0
		for p := id; p != 0; p = tr.eps[p].n.Parent() {
			d++
		}
		depth = max(depth, d)
	}
	if root == 0 {
		tr.t.Fatalf("seed %d: no root", tr.seed)
	}
	rn := tr.eps[root].n
	want := make([]uint32, 4)
	for _, id := range tr.live {
		maxInto(want, tr.locals[id].point)
	}
	if got := rn.subtreeMax(); !slices.Equal(got, want) || int(rn.subtreeNodes()) != len(tr.live) {
		tr.t.Fatalf("seed %d: root aggregate %v over %d nodes, want %v over %d", tr.seed, got, rn.subtreeNodes(), want, len(tr.live))
	}
	tr.t.Logf("seed %d: %d nodes, tree depth %d", tr.seed, len(tr.live), depth)
}

// search runs one job's search from owner and returns where it was
// assigned (0: nowhere) and the failures.
func (tr *tree) search(owner core.NodeID, req []uint32) (core.NodeID, uint32) {
	return tr.searchAt(owner, req, failEpoch)
}

// searchAt is search in the owner's matchmaking epoch.
func (tr *tree) searchAt(owner core.NodeID, req []uint32, epoch uint32) (core.NodeID, uint32) {
	tr.assigned, tr.failed = nil, nil
	job := &wire.JobSpec{Id: 1, Client: 999, Req: req}
	tr.eps[owner].n.Search(tr.net.Now, job, owner, epoch, 0)
	tr.net.Collect(owner)
	tr.net.Deliver()
	if len(tr.assigned) > 1 {
		tr.t.Fatalf("seed %d: job assigned %d times", tr.seed, len(tr.assigned))
	}
	if len(tr.assigned) == 0 {
		return 0, 0
	}
	return tr.assigned[0].to, tr.assigned[0].a.Hops
}

func TestTreeAggregatesAndSearches(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		seed  uint64
	}{{1, 1}, {2, 2}, {10, 3}, {100, 4}, {300, 5}} {
		tr := newTree(t, tc.seed, tc.nodes)
		tr.run(30)
		tr.checkTree()
		// Queues: busy nodes, some idle.
		for _, id := range tr.live {
			tr.locals[id].queue = tr.rng.IntN(3)
		}
		for i := range 50 {
			owner := tr.live[tr.rng.IntN(len(tr.live))]
			// A requirement some node meets: one node's point, scaled down
			// in a random subset of the dimensions (unconstrained ones 0).
			src := tr.locals[tr.live[tr.rng.IntN(len(tr.live))]].point
			req := make([]uint32, 4)
			for d := range 3 {
				if tr.rng.IntN(2) == 0 {
					req[d] = uint32(float64(src[d]) * tr.rng.Float64())
				}
			}
			to, hops := tr.search(owner, req)
			if to == 0 {
				t.Fatalf("seed %d search %d: req %v from %d: not assigned", tc.seed, i, req, owner)
			}
			if !can.Capable(tr.locals[to].point, req) {
				t.Fatalf("seed %d search %d: assigned to %d, not capable of %v", tc.seed, i, to, req)
			}
			if hops > uint32(tr.cfg.MaxHops) {
				t.Fatalf("seed %d search %d: %d hops", tc.seed, i, hops)
			}
		}
		// A job only the most capable node in one dimension can run is
		// found from anywhere (completeness through the aggregates).
		var top core.NodeID
		for _, id := range tr.live {
			if top == 0 || tr.locals[id].point[0] > tr.locals[top].point[0] {
				top = id
			}
		}
		req := []uint32{tr.locals[top].point[0], 0, 0, 0}
		for range 10 {
			owner := tr.live[tr.rng.IntN(len(tr.live))]
			if to, _ := tr.search(owner, req); to != top {
				t.Fatalf("seed %d: the one capable node %d not found from %d (got %d)", tc.seed, top, owner, to)
			}
		}
		// A job nobody can run fails, at the root.
		if tc.nodes > 1 {
			req[0] = ^uint32(0)
			if tr.locals[top].point[0] != req[0] {
				if to, _ := tr.search(tr.live[0], req); to != 0 || len(tr.failed) != 1 || tr.failed[0].Failed[0].Reason != ReasonNoCapableNode {
					t.Fatalf("seed %d: impossible job: assigned %d, failures %v, want none and the owner told", tc.seed, to, tr.failed)
				}
				// The owner's earlier attempts end silently.
				if to, _ := tr.searchAt(tr.live[0], req, failEpoch-1); to != 0 || len(tr.failed) != 0 {
					t.Fatalf("seed %d: impossible job, epoch %d: assigned %d, failures %v, want neither", tc.seed, failEpoch-1, to, tr.failed)
				}
			}
		}
	}
}

// After 20% of the nodes crash the tree re-forms on the repaired ring.
func TestTreeReformsAfterCrashes(t *testing.T) {
	tr := newTree(t, 11, 150)
	tr.run(30)
	tr.checkTree()
	for _, id := range slices.Clone(tr.live)[:30] {
		tr.crash(id)
	}
	tr.run(40)
	tr.checkTree()
}
