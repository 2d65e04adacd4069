package nemesis

// DDMin is Zeller and Hildebrandt's delta debugging (ddmin, "Simplifying
// and Isolating Failure-Inducing Input", 2002): given n units of which all
// together fail, it returns a subset (indices in increasing order) that
// still fails and is 1-minimal — removing any one unit of it makes fails
// false. fails must be deterministic (the deterministic driver's runs
// are); it is never asked about the empty set or the full set again. With
// k units left it costs O(k²) calls at worst, O(k log k) typically.
func DDMin(n int, fails func(subset []int) bool) []int {
	cur := make([]int, n)
	for i := range cur {
		cur[i] = i
	}
	gran := 2
	for len(cur) >= 2 {
		chunks := split(cur, gran)
		reduced := false
		// Reduce to a subset.
		for _, c := range chunks {
			if len(c) < len(cur) && fails(c) {
				cur, gran, reduced = c, 2, true
				break
			}
		}
		if !reduced && gran > 2 {
			// Reduce to a complement.
			for i := range chunks {
				comp := complement(chunks, i)
				if fails(comp) {
					cur, gran, reduced = comp, max(gran-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if gran >= len(cur) {
				break
			}
			gran = min(2*gran, len(cur))
		}
	}
	return cur
}

// split cuts s into n nearly equal contiguous chunks.
func split(s []int, n int) [][]int {
	out := make([][]int, 0, n)
	start := 0
	for i := range n {
		end := start + (len(s)-start)/(n-i)
		out = append(out, s[start:end])
		start = end
	}
	return out
}

// complement is every chunk but chunk i, in order.
func complement(chunks [][]int, i int) []int {
	var out []int
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}
