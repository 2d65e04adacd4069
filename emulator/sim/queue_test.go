package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/heap"
)

// The queue keeps its keys in exactly the order emulator/heap keeps the
// events themselves, under any interleaving of pushes and pops with ties
// in time and in prio: the same events pop, and Each walks them in the
// order of heap.Heap.Items (pendingTimers depends on it).
func TestQueueMatchesHeap(t *testing.T) {
	before := func(a, b *event) bool {
		if a.at != b.at {
			return a.at < b.at
		}
		if a.prio != b.prio {
			return a.prio < b.prio
		}
		return a.seq < b.seq
	}
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		ref := heap.Heap[event]{Less: before}
		var q queue
		var seq uint64
		for step := range 4000 {
			if ref.Len() > 0 && r.IntN(5) < 2 {
				want, got := ref.Pop(), q.Pop()
				if got.at != want.at || got.prio != want.prio || got.seq != want.seq || got.to != want.to {
					t.Fatalf("seed %d step %d: popped %+v, want %+v", seed, step, got, want)
				}
			} else {
				seq++
				e := event{at: time.Duration(r.IntN(20)), prio: uint64(r.IntN(4)), seq: seq, kind: evTimer, to: bus.Address(1 + r.IntN(50))}
				ref.Push(e)
				q.Push(e)
			}
			if q.Len() != ref.Len() {
				t.Fatalf("seed %d step %d: %d events, want %d", seed, step, q.Len(), ref.Len())
			}
			if q.Len() > 0 && q.MinAt() != ref.Min().at {
				t.Fatalf("seed %d step %d: earliest at %v, want %v", seed, step, q.MinAt(), ref.Min().at)
			}
			items, i := ref.Items(), 0
			q.Each(func(e *event) {
				if e.seq != items[i].seq {
					t.Fatalf("seed %d step %d: item %d is event %d, want %d", seed, step, i, e.seq, items[i].seq)
				}
				i++
			})
		}
	}
}

// A popped event's slot is cleared: the queue keeps no message or
// function alive.
func TestQueueClearsPopped(t *testing.T) {
	var q queue
	q.Push(event{at: 1, seq: 1, kind: evDeliver, data: []byte("x"), fn: func() {}})
	q.Pop()
	for i := range q.slab {
		if q.slab[i].data != nil || q.slab[i].fn != nil {
			t.Fatalf("slot %d still holds %+v", i, q.slab[i])
		}
	}
}
