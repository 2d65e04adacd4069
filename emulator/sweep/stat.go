package sweep

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gridbed/gridbed/emulator/stats"
)

// Stat is a column's figure at a grid point over its replicates (gridbed
// sweep --seeds N): the mean and 95% confidence interval of the replicates
// that have a number, or — for text (an outcome, a mode) — the values seen.
type Stat struct {
	// Replicates is how many runs the point had; N how many of them had
	// a number here (null, e.g. a rate with no steady window, is left
	// out).
	Replicates, N int
	Mean, Lo, Hi  float64
	// Text is the non-numeric values, distinct, in the order seen, each
	// with its count when the replicates disagree ("passed 2, failed 1").
	Text string
}

// Aggregate is the Stat of one column's values (as Value returns them) at
// a grid point, one per replicate.
func Aggregate(values []any) Stat {
	s := Stat{Replicates: len(values)}
	var xs []float64
	var words []string
	count := map[string]int{}
	for _, v := range values {
		switch v := v.(type) {
		case float64:
			xs = append(xs, v)
		case nil:
		default:
			w := formatValue(v, Format)
			if count[w] == 0 {
				words = append(words, w)
			}
			count[w]++
		}
	}
	s.N = len(xs)
	if s.N > 0 {
		s.Mean, s.Lo, s.Hi = stats.CI95(xs)
	}
	if len(words) == 1 && count[words[0]] == len(values) {
		s.Text = words[0]
	} else {
		for i, w := range words {
			words[i] = fmt.Sprintf("%s %d", w, count[w])
		}
		s.Text = strings.Join(words, ", ")
	}
	return s
}

// Numeric reports whether the Stat has a mean.
func (s Stat) Numeric() bool { return s.N > 0 }

// Markdown renders the Stat for sweep.md: the value of a single run
// (Format), or "mean ± half-width" of the 95% CI over the replicates, both
// with the mean's decimals, and "(k of N)" when only k replicates had a
// number.
func (s Stat) Markdown() string {
	switch {
	case !s.Numeric() && s.Text != "":
		return s.Text
	case !s.Numeric():
		return "—"
	case s.Replicates == 1:
		return Format(s.Mean)
	}
	half := (s.Hi - s.Lo) / 2
	d := decimals(s.Mean)
	if s.Mean == math.Trunc(s.Mean) && half != 0 {
		// A whole mean of fractional replicates gets the interval's
		// precision (two significant digits of the half-width).
		d = max(0, 1-int(math.Floor(math.Log10(half))))
		if math.Abs(s.Mean) >= 1000 {
			d = 0
		}
	}
	out := formatDecimals(s.Mean, d) + " ± " + formatDecimals(half, d)
	if s.N < s.Replicates {
		out += fmt.Sprintf(" (%d of %d)", s.N, s.Replicates)
	}
	return out
}

// CSV renders the Stat for sweep.csv at full precision, one cell per
// CSVHead(col, replicates) entry, replicates being the sweep's seeds (a
// point an interrupt cut short has fewer runs but the same cells, so a
// CSV reader finds each value under its name): the value (a single run,
// or a text column), or the mean and the CI's bounds; empty cells for
// none.
func (s Stat) CSV(col string, replicates int) []string {
	if replicates == 1 || Text(col) {
		switch {
		case s.Numeric():
			return []string{Full(s.Mean)}
		case s.Text != "":
			return []string{csvQuote(s.Text)}
		}
		return []string{""}
	}
	if !s.Numeric() {
		return []string{csvQuote(s.Text), "", ""}
	}
	return []string{Full(s.Mean), Full(s.Lo), Full(s.Hi)}
}

// CSVHead is the header of a column's cells in sweep.csv: the column (a
// single run, or a text column), or the column's mean and the bounds of
// its 95% CI (replicates).
func CSVHead(col string, replicates int) []string {
	if replicates == 1 || Text(col) {
		return []string{col}
	}
	return []string{col, col + ".ci95_lo", col + ".ci95_hi"}
}

// Text reports whether a summary.json path holds text, not a number (an
// outcome, a mode): it has no mean nor interval.
func Text(col string) bool {
	switch col {
	case "outcome", "scenario", "driver", "overlay.heartbeat_mode", "overlay.split", "peers.bootstrap",
		"jobs.scheme", "jobs.mode", "jobs.residue", "emulator.overload":
		return true
	}
	return false
}

// csvQuote quotes a CSV field holding a comma, a quote or a line break.
func csvQuote(s string) string {
	if !strings.ContainsAny(s, ",\"\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// Seeds are the replicates' seeds: first, first+1, …, first+n-1.
func Seeds(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// sortedKeys is a map's keys, sorted (for stable output).
func sortedKeys(m map[string]Column) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
