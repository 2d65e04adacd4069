// Package testnet is the deterministic network the protocol cores' tests
// run on (actors/overlay, actors/jobs): it delivers the cores' messages in
// the order they were sent, as copies (as the wire would), on a virtual
// clock, and fires their timers in time order, ties in the order they were
// set. Nothing runs concurrently and nothing is random, so a test reads as
// a script and every run is the same.
//
// It knows nothing of the cores: a test wraps each core as an Endpoint, and
// the network is generic over the cores' node id and timer kind types, so
// that the cores' own (internal) tests can use it without an import cycle.
// The drivers' event loop (emulator/sim) serves whole peers on bytes, with a
// seeded order among simultaneous events; this network serves bare cores,
// in send order, which is what a test that spells out a protocol exchange
// wants.
package testnet

import (
	"cmp"
	"container/heap"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// Endpoint is one protocol core as the network sees it.
type Endpoint[ID comparable, K any] interface {
	// Step handles message m from from at time now.
	Step(now time.Duration, from ID, m proto.Message)
	// Tick handles the expiry of a timer of the given kind at time now.
	Tick(now time.Duration, kind K)
	// Flush hands over, and forgets, what the core asked for since the last
	// call: the messages it sends and the timers it sets.
	Flush(send func(to ID, m proto.Message), timer func(at time.Duration, kind K))
}

// Msg is a message on the network.
type Msg[ID comparable] struct {
	From, To ID
	Msg      proto.Message
	// Lost is set, for OnDeliver, when the message reached no endpoint
	// (Drop, or a receiver the network does not know).
	Lost bool
}

// Timer is a timer set by an endpoint.
type Timer[ID comparable, K any] struct {
	At   time.Duration
	To   ID
	Kind K
	seq  uint64
}

// Net is a deterministic network of endpoints. The zero value is not
// usable: create one with New.
type Net[ID cmp.Ordered, K any] struct {
	// Now is the virtual time: messages are delivered at it, and Deliver,
	// RunUntil and Fire move it forward.
	Now time.Duration
	// Lossy makes messages to unknown endpoints (failed or departed
	// nodes) lost; without it they fail the test.
	Lossy bool
	// Drop, if set, loses the messages it returns true for.
	Drop func(m Msg[ID]) bool
	// OnDeliver, if set, sees every message as it is delivered or lost.
	OnDeliver func(m Msg[ID])
	// MaxSteps bounds the deliveries of one Deliver call: a protocol whose
	// messages never settle fails the test instead of hanging it.
	MaxSteps int

	tb     testing.TB
	nodes  map[ID]Endpoint[ID, K]
	queue  []Msg[ID]
	timers timerHeap[ID, K]
	seq    uint64
}

// New returns an empty network at time 0 that reports to tb.
func New[ID cmp.Ordered, K any](tb testing.TB) *Net[ID, K] {
	return &Net[ID, K]{tb: tb, nodes: map[ID]Endpoint[ID, K]{}, MaxSteps: 1_000_000}
}

// Add puts endpoint e on the network at address id.
func (n *Net[ID, K]) Add(id ID, e Endpoint[ID, K]) { n.nodes[id] = e }

// Remove takes the endpoint at id off the network: messages to it are lost
// from now on (or fail the test, without Lossy), and its timers do not
// fire.
func (n *Net[ID, K]) Remove(id ID) { delete(n.nodes, id) }

// IDs lists the endpoints' addresses in increasing order.
func (n *Net[ID, K]) IDs() []ID {
	ids := make([]ID, 0, len(n.nodes))
	for id := range n.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Collect queues what endpoint id asked for: its messages for delivery, its
// timers for RunUntil. Call it after driving an endpoint directly
// (Bootstrap, Leave, Submit, …); Deliver and the timers collect on their
// own.
func (n *Net[ID, K]) Collect(id ID) {
	e := n.nodes[id]
	if e == nil {
		n.tb.Fatalf("testnet: collect from unknown endpoint %v", id)
	}
	e.Flush(func(to ID, m proto.Message) {
		n.queue = append(n.queue, Msg[ID]{From: id, To: to, Msg: proto.Clone(m)})
	}, func(at time.Duration, kind K) {
		n.seq++
		heap.Push(&n.timers, Timer[ID, K]{At: at, To: id, Kind: kind, seq: n.seq})
	})
}

// Send queues message m from from to to, as if from had sent it.
func (n *Net[ID, K]) Send(from, to ID, m proto.Message) {
	n.queue = append(n.queue, Msg[ID]{From: from, To: to, Msg: proto.Clone(m)})
}

// Deliver delivers the queued messages at Now, in the order they were
// sent, and everything they cause, until no message is left.
func (n *Net[ID, K]) Deliver() {
	n.tb.Helper()
	for steps := 0; len(n.queue) > 0; steps++ {
		if steps > n.MaxSteps {
			n.tb.Fatalf("testnet: messages never settle (%d delivered at %v)", steps, n.Now)
		}
		m := n.queue[0]
		n.queue[0] = Msg[ID]{}
		n.queue = n.queue[1:]
		e := n.nodes[m.To]
		dropped := n.Drop != nil && n.Drop(m)
		if e == nil && !dropped && !n.Lossy {
			n.tb.Fatalf("testnet: %T from %v to unknown endpoint %v", m.Msg, m.From, m.To)
		}
		if e == nil || dropped {
			m.Lost = true
			if n.OnDeliver != nil {
				n.OnDeliver(m)
			}
			continue
		}
		if n.OnDeliver != nil {
			n.OnDeliver(m)
		}
		e.Step(n.Now, m.From, m.Msg)
		n.Collect(m.To)
	}
}

// Fire makes endpoint id's timer of the given kind expire at Now, whether
// or not the endpoint set it, and delivers what follows.
func (n *Net[ID, K]) Fire(id ID, kind K) {
	n.tb.Helper()
	e := n.nodes[id]
	if e == nil {
		n.tb.Fatalf("testnet: fire at unknown endpoint %v", id)
	}
	e.Tick(n.Now, kind)
	n.Collect(id)
	n.Deliver()
}

// RunUntil fires the timers due at or before t in time order (ties in the
// order they were set), each at its time — or at Now, if it was set in the
// past — delivering everything each one causes, then moves Now to t.
// Timers of removed endpoints are dropped.
func (n *Net[ID, K]) RunUntil(t time.Duration) {
	n.tb.Helper()
	for len(n.timers) > 0 && n.timers[0].At <= t {
		tm := heap.Pop(&n.timers).(Timer[ID, K])
		e := n.nodes[tm.To]
		if e == nil {
			continue
		}
		n.Now = max(n.Now, tm.At)
		e.Tick(n.Now, tm.Kind)
		n.Collect(tm.To)
		n.Deliver()
	}
	n.Now = max(n.Now, t)
}

// Timers lists the timers not yet fired, in the order they will fire.
func (n *Net[ID, K]) Timers() []Timer[ID, K] {
	ts := slices.Clone(n.timers)
	slices.SortFunc(ts, func(a, b Timer[ID, K]) int { return cmpTimer(&a, &b) })
	return ts
}

// DropTimers forgets every timer not yet fired.
func (n *Net[ID, K]) DropTimers() { n.timers = n.timers[:0] }

func cmpTimer[ID comparable, K any](a, b *Timer[ID, K]) int {
	if c := cmp.Compare(a.At, b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// timerHeap orders timers by time, then by when they were set.
type timerHeap[ID comparable, K any] []Timer[ID, K]

func (h timerHeap[ID, K]) Len() int           { return len(h) }
func (h timerHeap[ID, K]) Less(i, j int) bool { return cmpTimer(&h[i], &h[j]) < 0 }
func (h timerHeap[ID, K]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap[ID, K]) Push(x any)        { *h = append(*h, x.(Timer[ID, K])) }
func (h *timerHeap[ID, K]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
