package can

// Capable reports whether a node at point node can run a job requiring
// req: 003 §4.2's matching rule, the node's coordinate is at least the
// job's in every resource dimension (the node dominates the job). The last
// coordinate of both, the virtual dimension, is ignored. Points of
// different lengths never match.
func Capable(node, req Point) bool {
	if len(node) != len(req) {
		return false
	}
	for i := 0; i < len(req)-1; i++ {
		if node[i] < req[i] {
			return false
		}
	}
	return true
}
