// Package heap is the binary min-heap both drivers queue by time: the
// deterministic driver's events (emulator/sim) and the emulator's timers
// (emulator/clock). Unlike container/heap it holds its items by value,
// without boxing each into an interface.
package heap

// Heap is a binary min-heap of T ordered by Less. The zero value is not
// usable: set Less. Not safe for concurrent use.
type Heap[T any] struct {
	// Less orders the items: the heap's minimum is an item no other is
	// Less than.
	Less  func(a, b *T) bool
	items []T
}

// Len is the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Min is the smallest item; the heap must not be empty.
func (h *Heap[T]) Min() *T { return &h.items[0] }

// Items are the items in heap order (item i is not Less than its parent
// (i-1)/2); the slice is the heap's own, to read and not to keep.
func (h *Heap[T]) Items() []T { return h.items }

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	q := h.items
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.Less(&q[i], &q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

// Pop removes and returns the smallest item; the heap must not be empty.
// The vacated slot is cleared, so the heap keeps nothing the item refers to.
func (h *Heap[T]) Pop() T {
	q := h.items
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	var zero T
	q[last] = zero
	q = q[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(q) {
			break
		}
		m := l
		if r := l + 1; r < len(q) && h.Less(&q[r], &q[l]) {
			m = r
		}
		if !h.Less(&q[m], &q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	h.items = q
	return top
}
