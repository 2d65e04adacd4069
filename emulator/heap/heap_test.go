package heap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Pushes and pops interleaved in random order: every pop returns the
// smallest item then present, and the heap order holds throughout.
func TestHeapPopsTheMinimum(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		h := Heap[int]{Less: func(a, b *int) bool { return *a < *b }}
		var ref []int // the items present, sorted
		for range 500 {
			if h.Len() > 0 && r.IntN(3) == 0 {
				if m := *h.Min(); m != ref[0] {
					t.Fatalf("seed %d: Min %d, want %d", seed, m, ref[0])
				}
				if got := h.Pop(); got != ref[0] {
					t.Fatalf("seed %d: popped %d, want %d", seed, got, ref[0])
				}
				ref = ref[1:]
				continue
			}
			x := r.IntN(100)
			i, _ := slices.BinarySearch(ref, x)
			ref = slices.Insert(ref, i, x)
			h.Push(x)
			items := h.Items()
			for i := 1; i < len(items); i++ {
				if items[i] < items[(i-1)/2] {
					t.Fatalf("seed %d: item %d (%d) is less than its parent", seed, i, items[i])
				}
			}
		}
		if h.Len() != len(ref) {
			t.Fatalf("seed %d: %d items, want %d", seed, h.Len(), len(ref))
		}
	}
}

// Draining pops in non-decreasing order.
func TestHeapDrainsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	h := Heap[float64]{Less: func(a, b *float64) bool { return *a < *b }}
	for range 1000 {
		h.Push(r.Float64())
	}
	prev := -1.0
	for h.Len() > 0 {
		x := h.Pop()
		if x < prev {
			t.Fatalf("popped %v after %v", x, prev)
		}
		prev = x
	}
}

// Pop clears the vacated slot, so the heap keeps no reference to what it
// handed out.
func TestHeapPopClearsSlot(t *testing.T) {
	v1, v2 := 1, 2
	h := Heap[*int]{Less: func(a, b **int) bool { return **a < **b }}
	h.Push(&v1)
	h.Push(&v2)
	h.Pop()
	if spare := h.Items()[:2]; spare[1] != nil {
		t.Fatal("the popped item's slot still holds a pointer")
	}
}
