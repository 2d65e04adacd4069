package chord

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/testnet"
)

func TestBetween(t *testing.T) {
	for _, tc := range []struct {
		a, x, b      uint64
		open, closed bool
	}{
		{10, 15, 20, true, true},
		{10, 20, 20, false, true},
		{10, 10, 20, false, false},
		{10, 25, 20, false, false},
		{20, 25, 10, true, true}, // wraps
		{20, 5, 10, true, true},
		{20, 15, 10, false, false},
		{20, 10, 10, false, true},
		{7, 3, 7, true, true}, // a == b: the whole ring but a
		{7, 7, 7, false, true},
	} {
		if got := Between(tc.a, tc.x, tc.b); got != tc.open {
			t.Errorf("Between(%d, %d, %d) = %v, want %v", tc.a, tc.x, tc.b, got, tc.open)
		}
		if got := BetweenRight(tc.a, tc.x, tc.b); got != tc.closed {
			t.Errorf("BetweenRight(%d, %d, %d) = %v, want %v", tc.a, tc.x, tc.b, got, tc.closed)
		}
	}
}

// endpoint wraps a Node for the test network; contact picks a member for
// a node that asks for one.
type endpoint struct {
	n       *Node
	contact func() core.NodeID
	found   []Found
}

func (e *endpoint) Step(now time.Duration, from core.NodeID, m proto.Message) { e.n.Step(now, from, m) }
func (e *endpoint) Tick(now time.Duration, _ core.TimerKind)                  { e.n.Tick(now) }
func (e *endpoint) Flush(send func(core.NodeID, proto.Message), timer func(time.Duration, core.TimerKind)) {
	r := e.n.Ready()
	for _, m := range r.Messages {
		send(m.To, m.Msg)
	}
	for _, tm := range r.Timers {
		timer(tm.At, tm.Kind)
	}
	e.found = append(e.found, r.Found...)
	need := r.NeedContact
	e.n.Advance()
	if need {
		e.n.Join(0, e.contact())
	}
}

type ring struct {
	t     *testing.T
	net   *testnet.Net[core.NodeID, core.TimerKind]
	eps   map[core.NodeID]*endpoint
	live  []core.NodeID
	rng   *rand.Rand
	cfg   Config
	seed  uint64
	added core.NodeID
}

func newRing(t *testing.T, seed uint64) *ring {
	net := testnet.New[core.NodeID, core.TimerKind](t)
	net.Lossy = true
	net.MaxSteps = 1 << 20
	return &ring{t: t, net: net, eps: map[core.NodeID]*endpoint{}, rng: rand.New(rand.NewPCG(seed, 1)), cfg: Config{Period: time.Second}.Defaults(), seed: seed}
}

// add joins a new node through a random live member (none: it founds the
// ring).
func (r *ring) add() core.NodeID {
	r.added++
	id := r.added
	e := &endpoint{n: New(id, r.cfg)}
	e.contact = func() core.NodeID {
		for {
			c := r.live[r.rng.IntN(len(r.live))]
			if c != id || len(r.live) == 1 {
				return c
			}
		}
	}
	var contact core.NodeID
	if len(r.live) > 0 {
		contact = e.contact()
	}
	r.eps[id] = e
	r.net.Add(id, e)
	r.live = append(r.live, id)
	e.n.Join(r.net.Now, contact)
	e.n.Start(r.net.Now, time.Duration(r.rng.Int64N(int64(r.cfg.Period))))
	r.net.Collect(id)
	r.net.Deliver()
	return id
}

func (r *ring) crash(id core.NodeID) {
	r.net.Remove(id)
	delete(r.eps, id)
	r.live = slices.DeleteFunc(r.live, func(x core.NodeID) bool { return x == id })
}

func (r *ring) run(periods int) { r.net.RunUntil(r.net.Now + time.Duration(periods)*r.cfg.Period) }

// truth is the live nodes sorted by ring identifier.
func (r *ring) truth() []core.NodeID {
	ids := slices.Clone(r.live)
	slices.SortFunc(ids, func(a, b core.NodeID) int {
		if Ring(a) < Ring(b) {
			return -1
		}
		return 1
	})
	return ids
}

// successorOf is the true successor of key.
func (r *ring) successorOf(key uint64) core.NodeID {
	ids := r.truth()
	for _, id := range ids {
		if Ring(id) >= key {
			return id
		}
	}
	return ids[0]
}

// checkRing asserts every live node's successor and predecessor are the
// true ones.
func (r *ring) checkRing() {
	r.t.Helper()
	ids := r.truth()
	bad := 0
	for i, id := range ids {
		s := r.eps[id].n.Snapshot()
		wantSucc, wantPred := ids[(i+1)%len(ids)], ids[(i+len(ids)-1)%len(ids)]
		if len(ids) == 1 {
			wantPred = 0 // alone: no predecessor
		}
		if !s.Joined || len(s.Succs) == 0 || s.Succs[0] != wantSucc || s.Pred != wantPred {
			if bad < 5 {
				r.t.Errorf("seed %d: node %d: joined %v succs %v pred %d, want succ %d pred %d", r.seed, id, s.Joined, s.Succs, s.Pred, wantSucc, wantPred)
			}
			bad++
		}
	}
	if bad > 0 {
		r.t.Fatalf("seed %d: %d of %d nodes wrong", r.seed, bad, len(ids))
	}
}

// checkLookups looks up random keys from random nodes and asserts each
// answer is the true successor; it returns the mean hops.
func (r *ring) checkLookups(n int) float64 {
	r.t.Helper()
	hops := 0
	for i := range n {
		key := r.rng.Uint64()
		from := r.live[r.rng.IntN(len(r.live))]
		e := r.eps[from]
		e.found = nil
		e.n.Lookup(r.net.Now, key, uint64(i))
		r.net.Collect(from)
		r.net.Deliver()
		if len(e.found) != 1 {
			for _, id := range r.truth() {
				s := r.eps[id].n.Snapshot()
				r.t.Logf("node %d ring %x pred %d succs %v fingers %v", id, Ring(id), s.Pred, s.Succs, s.Fingers)
			}
			r.t.Fatalf("seed %d: lookup %d from %d: %d answers", r.seed, key, from, len(e.found))
		}
		if got, want := e.found[0].Node, r.successorOf(key); got != want {
			r.t.Fatalf("seed %d: lookup %x from %d = %d, want %d", r.seed, key, from, got, want)
		}
		hops += int(e.found[0].Hops)
	}
	return float64(hops) / float64(n)
}

// The ring converges after concurrent joins, its fingers make lookups
// logarithmic, and it converges again after 20% of its nodes crash.
func TestRingConvergesAndLooksUp(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		seed  uint64
	}{{1, 1}, {2, 2}, {5, 3}, {64, 4}, {200, 5}} {
		r := newRing(t, tc.seed)
		for range tc.nodes {
			r.add()
			r.run(1)
		}
		r.run(20)
		r.checkRing()
		r.run(2 * Bits) // every finger refreshed
		hops := r.checkLookups(100)
		if tc.nodes >= 64 && hops > 8 {
			t.Errorf("seed %d: %d nodes: mean lookup hops %.1f, want O(log N)", tc.seed, tc.nodes, hops)
		}
		if tc.nodes < 5 {
			continue
		}
		for _, id := range slices.Clone(r.live)[:tc.nodes/5] {
			r.crash(id)
		}
		r.run(10 * r.cfg.FailAfter)
		r.checkRing()
		r.run(2 * Bits)
		r.checkLookups(100)
	}
}

// Responsible answers for keys in (predecessor, self] once the ring has
// converged.
func TestResponsible(t *testing.T) {
	r := newRing(t, 9)
	for range 20 {
		r.add()
	}
	r.run(30)
	r.checkRing()
	for range 200 {
		key := r.rng.Uint64()
		want := r.successorOf(key)
		for _, id := range r.live {
			if got := r.eps[id].n.Responsible(key); got != (id == want) {
				t.Fatalf("node %d Responsible(%x) = %v, successor is %d", id, key, got, want)
			}
		}
	}
}
