package categorical

// The n-dimensional Hilbert curve on a grid of 2^b cells per side, by
// Skilling's transpose form ("Programming the Hilbert curve", 2004): the
// curve index's bits, most significant first, are dealt round-robin to n
// words, one per axis; axesToTranspose and transposeToAxes convert between
// those words and the cell's coordinates in place. 002 §2.4 orders the
// categorical combinations along its transform dimension by a Hilbert
// curve (Lawder's mappings); any correct n-dimensional Hilbert curve has
// the property it relies on — consecutive cells along the curve are
// adjacent in the grid.

// hilbertIndex is the position of cell x (n coordinates below 2^b) along
// the n-dimensional Hilbert curve of side 2^b, in [0, 2^(n·b)). x is not
// modified. n·b must be at most 64.
func hilbertIndex(x []uint32, b int) uint64 {
	t := append([]uint32(nil), x...)
	axesToTranspose(t, b)
	var h uint64
	for bit := b - 1; bit >= 0; bit-- {
		for i := range t {
			h = h<<1 | uint64(t[i]>>bit&1)
		}
	}
	return h
}

// hilbertCell is hilbertIndex's inverse: the n coordinates of the cell at
// position h along the curve of side 2^b.
func hilbertCell(h uint64, n, b int) []uint32 {
	t := make([]uint32, n)
	for k := n*b - 1; k >= 0; k-- {
		// Bit k of h (counting from the least significant) is bit k/n of
		// axis n-1-k%n.
		if h>>k&1 != 0 {
			t[n-1-k%n] |= 1 << (k / n)
		}
	}
	transposeToAxes(t, b)
	return t
}

// axesToTranspose turns cell coordinates into the transposed Hilbert
// index (Skilling 2004, AxestoTranspose).
func axesToTranspose(x []uint32, b int) {
	n := len(x)
	if n == 0 || b == 0 {
		return
	}
	m := uint32(1) << (b - 1)
	for q := m; q > 1; q >>= 1 { // inverse undo
		p := q - 1
		for i := 0; i < n; i++ {
			if x[i]&q != 0 {
				x[0] ^= p // invert
			} else { // exchange
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	for i := 1; i < n; i++ { // Gray encode
		x[i] ^= x[i-1]
	}
	var t uint32
	for q := m; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := range x {
		x[i] ^= t
	}
}

// transposeToAxes turns a transposed Hilbert index back into cell
// coordinates (Skilling 2004, TransposetoAxes).
func transposeToAxes(x []uint32, b int) {
	n := len(x)
	if n == 0 || b == 0 {
		return
	}
	top := uint32(2) << (b - 1)
	t := x[n-1] >> 1 // Gray decode by H ^ (H/2)
	for i := n - 1; i > 0; i-- {
		x[i] ^= x[i-1]
	}
	x[0] ^= t
	for q := uint32(2); q != top; q <<= 1 { // undo excess work
		p := q - 1
		for i := n - 1; i >= 0; i-- {
			if x[i]&q != 0 {
				x[0] ^= p // invert
			} else { // exchange
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
}
