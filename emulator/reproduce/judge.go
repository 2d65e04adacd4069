package reproduce

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/stats"
)

// Verdicts of a finding.
const (
	// Reproduced: the ordering holds and the magnitude is within the
	// tolerance of the paper's value (or inside the finding's bound).
	Reproduced = "reproduced"
	// Ordering: the ordering holds, the magnitude does not.
	Ordering = "ordering"
	// NotReproduced: the ordering does not hold (or nothing was measured).
	NotReproduced = "not-reproduced"
)

// Measurement is one run's figures: the metric values of the findings
// (nil where the summary holds null or no such path).
type Measurement struct {
	Point   []string            `json:"point"`
	Seed    uint64              `json:"seed"`
	Outcome string              `json:"outcome"`
	Dir     string              `json:"dir"`
	Values  map[string]*float64 `json:"values"`
}

// Link is one step of an order chain as measured: the ratio of the next
// value's metric to this one's.
type Link struct {
	From  string      `json:"from"`
	Rel   string      `json:"rel"`
	To    string      `json:"to"`
	Ratio *float64    `json:"ratio"`
	CI95  *[2]float64 `json:"ci95"`
	Holds bool        `json:"holds"`
}

// Finding is a finding judged: the paper's value beside gridbed's.
type Finding struct {
	ID     string   `json:"id"`
	Claim  string   `json:"claim"`
	Kind   string   `json:"kind"`
	Metric string   `json:"metric"`
	Paper  *float64 `json:"paper"`
	// Measured is the mean over the replicates (for an order chain, the
	// share of its links that hold); CI95 its 95% confidence interval
	// (Student's t; a single replicate gives [x, x]).
	Measured   *float64    `json:"measured"`
	CI95       *[2]float64 `json:"ci95"`
	Replicates []float64   `json:"replicates,omitempty"`
	// Band is the range the magnitude must reach (the paper's value ±
	// tolerance, or the finding's bound); null when only an ordering is
	// claimed.
	Band      *Band  `json:"band"`
	OrderHold bool   `json:"ordering_holds"`
	MagHold   *bool  `json:"magnitude_holds"`
	Links     []Link `json:"links,omitempty"`
	Verdict   string `json:"verdict"`
	// Why says in a sentence how the verdict follows from the numbers.
	Why string `json:"why"`
}

// Band is a range [lo, hi] whose open ends are infinite; JSON writes
// them as null ("at least 10" is [10, null]).
type Band [2]float64

// MarshalJSON writes the band with null for an infinite end.
func (b Band) MarshalJSON() ([]byte, error) {
	end := func(v float64) string {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return []byte("[" + end(b[0]) + "," + end(b[1]) + "]"), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Band) UnmarshalJSON(data []byte) error {
	var ends [2]*float64
	if err := json.Unmarshal(data, &ends); err != nil {
		return err
	}
	*b = Band{math.Inf(-1), math.Inf(1)}
	for i, e := range ends {
		if e != nil {
			b[i] = *e
		}
	}
	return nil
}

// Judge computes every finding of e from the runs' measurements (seeds
// are the replicates, in order).
func Judge(e *scenario.Experiment, ms []Measurement, seeds []uint64) []Finding {
	var out []Finding
	for _, f := range e.Findings {
		out = append(out, judge(e, f, ms, seeds))
	}
	return out
}

// at is the mean of metric over the points of seed's replicate that match
// sel (axis key → value); NaN when a matching point has no value or no
// point matches.
func at(e *scenario.Experiment, ms []Measurement, seed uint64, metric string, sel ...map[string]string) float64 {
	sum, n := 0.0, 0
	for _, m := range ms {
		if m.Seed != seed || !matches(e, m.Point, sel...) {
			continue
		}
		v := m.Values[metric]
		if v == nil {
			return math.NaN()
		}
		sum += *v
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func matches(e *scenario.Experiment, point []string, sels ...map[string]string) bool {
	for _, sel := range sels {
		for k, v := range sel {
			for i, a := range e.Vary {
				if a.Key == k && point[i] != v {
					return false
				}
			}
		}
	}
	return true
}

func judge(e *scenario.Experiment, f scenario.Finding, ms []Measurement, seeds []uint64) Finding {
	r := Finding{ID: f.ID, Claim: f.Claim, Kind: f.Kind, Metric: f.Metric, Paper: f.Paper}
	switch f.Kind {
	case scenario.FindingOrder:
		return judgeOrder(e, f, ms, seeds, r)
	case scenario.FindingRatio:
		for _, s := range seeds {
			r.Replicates = append(r.Replicates, at(e, ms, s, f.Metric, f.Of)/at(e, ms, s, f.Metric, f.Over))
		}
	case scenario.FindingExponent:
		ax := e.Axis(f.Axis)
		for _, s := range seeds {
			var xs, ys []float64
			for _, v := range ax.Values {
				x, _ := scenario.AxisNumber(v)
				xs = append(xs, math.Log(x+f.AxisOffset))
				ys = append(ys, math.Log(at(e, ms, s, f.Metric, f.Where, map[string]string{f.Axis: v})))
			}
			r.Replicates = append(r.Replicates, slope(xs, ys))
		}
	}
	for _, v := range r.Replicates {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			r.Replicates = nil
			r.Verdict = NotReproduced
			r.Why = fmt.Sprintf("nothing to compare: %s is null at a point of the finding, or 0 where it divides (a ratio over 0 is undefined), in some replicate — see the points' figures and the runs' outcomes", f.Metric)
			return r
		}
	}
	mean, lo, hi := stats.CI95(r.Replicates)
	r.Measured, r.CI95 = &mean, &[2]float64{lo, hi}

	// The ordering: which side of 1 (of 0 for an exponent) the value
	// lies on, judged on the whole interval.
	pivot := 1.0
	if f.Kind == scenario.FindingExponent {
		pivot = 0
	}
	side := 0
	switch {
	case f.Direction == "below":
		side = -1
	case f.Direction == "above":
		side = 1
	case f.Paper != nil && *f.Paper > pivot:
		side = 1
	case f.Paper != nil && *f.Paper < pivot:
		side = -1
	case f.Paper == nil && f.AtLeast != nil && *f.AtLeast > pivot:
		side = 1
	case f.Paper == nil && f.AtMost != nil && *f.AtMost < pivot:
		side = -1
	}
	var ordWhy string
	switch side {
	case 1:
		r.OrderHold = lo > pivot
		ordWhy = fmt.Sprintf("the interval [%s, %s] lies above %s", fmtG(lo), fmtG(hi), fmtG(pivot))
	case -1:
		r.OrderHold = hi < pivot
		ordWhy = fmt.Sprintf("the interval [%s, %s] lies below %s", fmtG(lo), fmtG(hi), fmtG(pivot))
	default:
		r.OrderHold = true
		ordWhy = "no ordering is claimed"
	}
	if !r.OrderHold {
		ordWhy = strings.Replace(ordWhy, "lies", "does not lie", 1)
	}

	// The magnitude: the band the value must fall in.
	var band *Band
	switch {
	case f.AtLeast != nil || f.AtMost != nil:
		b := Band{math.Inf(-1), math.Inf(1)}
		if f.AtLeast != nil {
			b[0] = *f.AtLeast
		}
		if f.AtMost != nil {
			b[1] = *f.AtMost
		}
		band = &b
	case f.Paper != nil:
		p := *f.Paper
		b := Band{p - math.Abs(p)*f.Tolerance, p + math.Abs(p)*f.Tolerance}
		band = &b
	}
	r.Band = band
	magWhy := ""
	if band != nil {
		// The mean must lie in the band, and the interval must be no
		// wider than the band: replicates too scattered to tell whether
		// the value is in the band do not reproduce it.
		inside := mean >= band[0] && mean <= band[1]
		// An open band (a bound) asks the whole interval to lie past the
		// bound; a closed one asks it to be no wider than the band.
		precise := hi-lo <= band[1]-band[0]
		if math.IsInf(band[0], 0) || math.IsInf(band[1], 0) {
			precise = lo >= band[0] && hi <= band[1]
		}
		hold := inside && precise
		r.MagHold = &hold
		switch {
		case !inside:
			magWhy = fmt.Sprintf("; the mean %s lies outside the band [%s, %s]", fmtG(mean), fmtG(band[0]), fmtG(band[1]))
		case !precise:
			magWhy = fmt.Sprintf("; the mean %s lies in the band [%s, %s] but the interval is wider than the band — more seeds are needed to tell", fmtG(mean), fmtG(band[0]), fmtG(band[1]))
		default:
			magWhy = fmt.Sprintf("; the mean %s lies in the band [%s, %s]", fmtG(mean), fmtG(band[0]), fmtG(band[1]))
		}
	}
	switch {
	case r.OrderHold && (r.MagHold == nil || *r.MagHold):
		r.Verdict = Reproduced
	case r.OrderHold && side != 0:
		r.Verdict = Ordering
	default:
		// Without an ordering to hold (a claim of ≈), a missed
		// magnitude is the whole claim missed.
		r.Verdict = NotReproduced
	}
	r.Why = ordWhy + magWhy
	return r
}

// judgeOrder judges a chain: each link's ratio (next ÷ this) over the
// replicates must lie above 1 for "<" and above 0.9 for "<=".
func judgeOrder(e *scenario.Experiment, f scenario.Finding, ms []Measurement, seeds []uint64, r Finding) Finding {
	chain, _ := scenario.OrderChain(f.Order)
	held := 0
	var broken []string
	for i := 0; i+1 < len(chain); i++ {
		a, b := chain[i], chain[i+1]
		floor := 1.0
		if a.Rel == "<=" {
			floor = 0.9
		}
		var rs []float64
		measured, zero, direct := true, false, true
		for _, s := range seeds {
			va := at(e, ms, s, f.Metric, f.Where, map[string]string{f.Axis: a.Value})
			vb := at(e, ms, s, f.Metric, f.Where, map[string]string{f.Axis: b.Value})
			if math.IsNaN(va) || math.IsNaN(vb) {
				measured = false
				continue
			}
			// A zero leaves the ratio undefined; the comparison itself
			// still says whether the link holds in this replicate.
			zero = zero || va == 0
			direct = direct && (vb > va*floor || a.Rel == "<=" && vb >= va*floor)
			rs = append(rs, vb/va)
		}
		l := Link{From: a.Value, Rel: a.Rel, To: b.Value}
		switch {
		case !measured:
		case zero:
			l.Holds = direct
		default:
			mean, lo, hi := logCI95(rs)
			l.Ratio, l.CI95 = &mean, &[2]float64{lo, hi}
			l.Holds = lo > floor || (a.Rel == "<=" && lo >= floor)
		}
		if l.Holds {
			held++
		} else {
			broken = append(broken, fmt.Sprintf("%s %s %s", a.Value, a.Rel, b.Value))
		}
		r.Links = append(r.Links, l)
	}
	share := float64(held) / float64(len(r.Links))
	r.Measured = &share
	r.OrderHold = held == len(r.Links)
	if r.OrderHold {
		r.Verdict = Reproduced
		r.Why = fmt.Sprintf("every link of the chain holds over the %d replicate(s)", len(seeds))
	} else {
		r.Verdict = NotReproduced
		r.Why = fmt.Sprintf("%d of %d links hold; not: %s", held, len(r.Links), strings.Join(broken, ", "))
	}
	return r
}

// logCI95 is a chain link's ratio over the replicates, judged on the
// log scale where ratios add: the geometric mean and the 95% interval of
// the log ratios, mapped back. A link whose every replicate is 9–18×
// holds, where an interval on the ratios themselves would reach below 0
// with three seeds. Ratios that are not all positive (a metric below 0)
// fall back to the interval on the ratios.
func logCI95(rs []float64) (mean, lo, hi float64) {
	ls := make([]float64, len(rs))
	for i, r := range rs {
		if r <= 0 || math.IsInf(r, 0) {
			return stats.CI95(rs)
		}
		ls[i] = math.Log(r)
	}
	m, l, h := stats.CI95(ls)
	return math.Exp(m), math.Exp(l), math.Exp(h)
}

// slope is the least-squares slope of ys against xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
		sxx, sxy = sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func fmtG(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3g", v), "."), ".")
}

// Holds reports whether the finding's ordering held: what the smoke test
// asserts.
func (f Finding) Holds() bool { return f.OrderHold }

// verdictRank orders verdicts from best to worst.
var verdictRank = []string{Reproduced, Ordering, NotReproduced}

// Worst is the worst verdict among fs.
func Worst(fs []Finding) string {
	w := 0
	for _, f := range fs {
		w = max(w, slices.Index(verdictRank, f.Verdict))
	}
	return verdictRank[w]
}
