package sim

import "time"

// queue is the World's event queue: a binary min-heap of small keys —
// an event's time, its seeded tie-break and the slot of its payload —
// over a slab of payloads that never move while queued.
//
// It replaces emulator/heap.Heap[event], whose items were the ~80-byte
// events themselves, moved on every swap, and compared through a func
// value the compiler cannot inline: the queue's pushes and pops were
// about a tenth of the deterministic driver's time (docs/BENCHMARKS.md).
// The heap algorithm is the very same (the same sift-up and sift-down,
// the same comparisons: time, then prio, then seq), so the keys sit in
// exactly the order heap.Heap's items did — events pop in the same order,
// and Items-order readers (pendingTimers' per-peer timer lists) see the
// same order too (TestQueueMatchesHeap).
type queue struct {
	keys []key
	slab []event // payloads, by slot
	free []int32 // slots of slab not in use
}

// key is one queued event's place in the heap: what orders it, and where
// its payload is (queue.slab).
type key struct {
	at   time.Duration
	prio uint64
	slot int32
}

// Len is the number of queued events.
func (q *queue) Len() int { return len(q.keys) }

// MinAt is the time of the earliest event; the queue must not be empty.
func (q *queue) MinAt() time.Duration { return q.keys[0].at }

// less orders two keys as event.before orders their events: by time, then
// by prio, then by seq (insertion order; unique).
func (q *queue) less(a, b *key) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return q.slab[a.slot].seq < q.slab[b.slot].seq
}

// Push queues e (its at, prio and seq set).
func (q *queue) Push(e event) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slab[slot] = e
	} else {
		slot = int32(len(q.slab))
		q.slab = append(q.slab, e)
	}
	q.keys = append(q.keys, key{at: e.at, prio: e.prio, slot: slot})
	// Sift up, moving the hole rather than swapping: the same places as
	// heap.Heap.Push's swaps.
	k := q.keys
	i := len(k) - 1
	x := k[i]
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(&x, &k[p]) {
			break
		}
		k[i] = k[p]
		i = p
	}
	k[i] = x
}

// Pop removes and returns the earliest event; the queue must not be
// empty. Its slot is cleared, so the queue keeps nothing it refers to.
func (q *queue) Pop() event {
	k := q.keys
	top := k[0]
	last := len(k) - 1
	x := k[last]
	k = k[:last]
	q.keys = k
	if last > 0 {
		// Sift x down from the root, as heap.Heap.Pop does after moving
		// the last item there.
		i := 0
		for {
			l := 2*i + 1
			if l >= last {
				break
			}
			m := l
			if r := l + 1; r < last && q.less(&k[r], &k[l]) {
				m = r
			}
			if !q.less(&k[m], &x) {
				break
			}
			k[i] = k[m]
			i = m
		}
		k[i] = x
	}
	e := q.slab[top.slot]
	q.slab[top.slot] = event{}
	q.free = append(q.free, top.slot)
	return e
}

// Each calls f with every queued event, in heap order (the order of
// heap.Heap.Items). f must not change the queue.
func (q *queue) Each(f func(e *event)) {
	for i := range q.keys {
		f(&q.slab[q.keys[i].slot])
	}
}
