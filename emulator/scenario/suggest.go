package scenario

import "strings"

// closest returns the candidate nearest to word by edit distance (ignoring
// case), or "" when none is near enough to be a likely misspelling.
func closest(word string, candidates []string) string {
	best, bestD := "", maxDistance(word)+1
	for _, c := range candidates {
		if d := distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// maxDistance is how many edits still count as a misspelling of word.
func maxDistance(word string) int {
	switch n := len(word); {
	case n < 4:
		return 1
	case n < 9:
		return 2
	default:
		return 3
	}
}

// distance is the Levenshtein distance between a and b, ignoring case and
// treating '-' like '_'.
func distance(a, b string) int {
	norm := strings.NewReplacer("-", "_")
	ra := []rune(norm.Replace(strings.ToLower(a)))
	rb := []rune(norm.Replace(strings.ToLower(b)))
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
