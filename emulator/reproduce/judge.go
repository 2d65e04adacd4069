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

// Verdicts of a finding, from best to worst (Worst ranks them in this
// order).
const (
	// Reproduced: the ordering holds over the whole 95% interval and, for
	// a published number, the whole interval lies inside the paper's value
	// ± tolerance; for a bound alone, the whole interval lies past it.
	Reproduced = "reproduced"
	// Consistent: the mean says what the paper says (inside the band,
	// past the bound, on the claimed side) but the interval does not yet:
	// more seeds are needed, and Why says about how many.
	Consistent = "consistent"
	// Ordering: the ordering holds over the whole interval, the magnitude
	// (the number's band, or the bound) does not.
	Ordering = "ordering"
	// NotReproduced: the mean is on the wrong side, or outside the band
	// with no ordering holding.
	NotReproduced = "not-reproduced"
	// NotMeasurable: the quantity is undefined in some replicate (a ratio
	// over 0, a metric null in a run's summary): nothing to compare.
	NotMeasurable = "not-measurable"
	// NotJudged: the replicates cannot carry a verdict — fewer than
	// MinReplicates, or one on a seed the file's readings were chosen on
	// (tuned_on). Why still says what the numbers show.
	NotJudged = "not-judged"
)

// Verdicts are every verdict, best first: the order Worst ranks them in.
// not-measurable and not-judged rank below not-reproduced: a report with
// a quantity that does not exist, or a finding drawn from too few or tuned
// seeds, cannot be summed up as anything better.
var Verdicts = []string{Reproduced, Consistent, Ordering, NotReproduced, NotMeasurable, NotJudged}

// MinReplicates is the fewest replicates a verdict is drawn from.
const MinReplicates = scenario.MinJudgingSeeds

// seedLimit caps the search for how many seeds a consistent finding
// needs.
const seedLimit = 1000

// Measurement is one run's figures: the metric values of the findings
// (nil where the summary holds null or no such path).
type Measurement struct {
	Point   []string            `json:"point"`
	Seed    uint64              `json:"seed"`
	Outcome string              `json:"outcome"`
	Dir     string              `json:"dir"`
	Values  map[string]*float64 `json:"values"`
}

// Link is one step of an order chain as measured. Where every value of
// the link is positive it is judged on the ratio next ÷ this, on the log
// scale (Ratio is the geometric mean over the replicates, CI95 its 95%
// interval); where a value is 0 or negative, on the difference next − this
// (Difference, DifferenceCI95). The intervals are null with one replicate.
type Link struct {
	From           string      `json:"from"`
	Rel            string      `json:"rel"`
	To             string      `json:"to"`
	Ratio          *float64    `json:"ratio"`
	CI95           *[2]float64 `json:"ci95"`
	Difference     *float64    `json:"difference,omitempty"`
	DifferenceCI95 *[2]float64 `json:"difference_ci95,omitempty"`
	// Status is how the link stands: holds, mean-only (a "<" whose mean
	// is in the claimed direction but whose interval reaches 1), fails, or
	// not-measured (a value missing at a point).
	Status string `json:"status"`
	Holds  bool   `json:"holds"`
}

// Link statuses.
const (
	LinkHolds       = "holds"
	LinkMeanOnly    = "mean-only"
	LinkFails       = "fails"
	LinkNotMeasured = "not-measured"
)

// Finding is a finding judged: the paper's value beside gridbed's.
type Finding struct {
	ID    string `json:"id"`
	Claim string `json:"claim"`
	Kind  string `json:"kind"`
	// Class is what the finding claims (scenario.Finding.Class):
	// magnitude, bound, direction or order; AboutEqual marks a magnitude
	// whose number is the pivot (a ratio of 1: "about equal").
	Class      string   `json:"class"`
	AboutEqual bool     `json:"about_equal,omitempty"`
	Metric     string   `json:"metric"`
	Paper      *float64 `json:"paper"`
	// Side is the side of the pivot (1 for a ratio, 0 for an exponent)
	// the finding claims — "above" or "below" — from its direction, its
	// number or its bound; "" when it claims none.
	Side  string  `json:"side,omitempty"`
	Pivot float64 `json:"pivot"`
	// Measured is the mean over the replicates (for an order chain, the
	// share of its links that hold); CI95 its 95% confidence interval
	// (Student's t), null with fewer than two replicates: one value is not
	// an interval.
	Measured   *float64    `json:"measured"`
	CI95       *[2]float64 `json:"ci95"`
	Replicates []float64   `json:"replicates,omitempty"`
	// Band is the range that decides the magnitude: the paper's value ±
	// tolerance, or — without a published number — the finding's bound;
	// null when only a side or an ordering is claimed.
	Band *Band `json:"band"`
	// Bound is the finding's at_least/at_most when it also publishes a
	// number: judged and reported (BoundHolds), never deciding the
	// magnitude in the number's place.
	Bound      *Band `json:"bound,omitempty"`
	BoundHolds *bool `json:"bound_holds,omitempty"`
	OrderHold  bool  `json:"ordering_holds"`
	MagHold    *bool `json:"magnitude_holds"`
	// SeedsNeeded is, for a consistent finding, about how many replicates
	// with the spread observed would settle it; -1 when more than 1000.
	SeedsNeeded int    `json:"seeds_needed,omitempty"`
	Links       []Link `json:"links,omitempty"`
	Verdict     string `json:"verdict"`
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
// are the replicates, in order). A finding is judged only when it has
// at least MinReplicates replicates and none is on a seed e.TunedOn
// names; otherwise its verdict is not-judged, with what the numbers show.
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

// standing is how one part of a claim stands on the replicates: over the
// whole interval, in the mean only, or not even in the mean.
type standing int

const (
	fails standing = iota
	meanOnly
	holds
)

// spread is a finding's replicates summed up: the mean and, with two or
// more replicates, the 95% interval (with one, lo = hi = the value, which
// the ordering of a smoke run is read from but no table prints as an
// interval).
type spread struct {
	n            int
	mean, lo, hi float64
	sd           float64
	interval     bool
}

func spreadOf(xs []float64) spread {
	m, lo, hi, ok := stats.Interval(xs)
	if !ok {
		lo, hi = m, m
	}
	return spread{n: len(xs), mean: m, lo: lo, hi: hi, sd: stats.StdDev(xs), interval: ok}
}

// intervalText is "the interval [lo, hi]", or with one replicate "the
// single replicate's value (no interval)".
func (s spread) intervalText() string {
	if !s.interval {
		return "its single replicate (no interval)"
	}
	return fmt.Sprintf("the interval [%s, %s]", fmtG(s.lo), fmtG(s.hi))
}

// side judges a claimed side of pivot (+1 above, −1 below).
func (s spread) side(dir int, pivot float64) (standing, string) {
	word := map[int]string{1: "above", -1: "below"}[dir]
	whole, mean := s.lo > pivot, s.mean > pivot
	if dir < 0 {
		whole, mean = s.hi < pivot, s.mean < pivot
	}
	switch {
	case whole && s.interval:
		return holds, fmt.Sprintf("the whole interval [%s, %s] lies %s %s", fmtG(s.lo), fmtG(s.hi), word, fmtG(pivot))
	case whole:
		return holds, fmt.Sprintf("the value %s lies %s %s (one replicate: no interval)", fmtG(s.mean), word, fmtG(pivot))
	case mean:
		return meanOnly, fmt.Sprintf("the mean %s lies %s %s but %s reaches it", fmtG(s.mean), word, fmtG(pivot), s.intervalText())
	}
	return fails, fmt.Sprintf("the mean %s does not lie %s %s", fmtG(s.mean), word, fmtG(pivot))
}

// within judges the range b (a band, or a bound with one infinite end);
// name is what the value must do, e.g. "inside the band [1.05, 1.95]
// (1.5 ± 30%)" or "at or above the bound 10".
func (s spread) within(b Band, name string) (standing, string) {
	in := func(v float64) bool { return v >= b[0] && v <= b[1] }
	switch {
	case in(s.lo) && in(s.hi) && s.interval:
		return holds, fmt.Sprintf("the whole interval [%s, %s] lies %s", fmtG(s.lo), fmtG(s.hi), name)
	case in(s.mean) && !s.interval:
		return holds, fmt.Sprintf("the value %s lies %s (one replicate: no interval)", fmtG(s.mean), name)
	case in(s.mean):
		return meanOnly, fmt.Sprintf("the mean %s lies %s but %s does not", fmtG(s.mean), name, s.intervalText())
	}
	return fails, fmt.Sprintf("the mean %s does not lie %s", fmtG(s.mean), name)
}

// margin is the distance from the mean to the nearer finite end of b.
func (s spread) margin(b Band) float64 {
	m := math.Inf(1)
	for _, end := range b {
		if !math.IsInf(end, 0) {
			m = math.Min(m, math.Abs(s.mean-end))
		}
	}
	return m
}

// seedsNeeded is how many replicates with the observed spread would bring
// the interval's half-width within margin: -1 beyond seedLimit.
func seedsNeeded(sd, margin float64) int {
	if n := stats.SeedsNeeded(sd, margin, seedLimit); n > 0 {
		return n
	}
	return -1
}

func seedsNeededText(n int) string {
	if n < 0 {
		return fmt.Sprintf("more seeds are needed: with the spread observed, more than %d would be", seedLimit)
	}
	return fmt.Sprintf("more seeds are needed: with the spread observed, about %d would settle it", n)
}

// bandOf is a published number's band: paper ± |paper|·tolerance.
func bandOf(f scenario.Finding) Band {
	p := *f.Paper
	return Band{p - math.Abs(p)*f.Tolerance, p + math.Abs(p)*f.Tolerance}
}

// boundOf is the finding's at_least/at_most as a band (nil when neither).
func boundOf(f scenario.Finding) *Band {
	if f.AtLeast == nil && f.AtMost == nil {
		return nil
	}
	b := Band{math.Inf(-1), math.Inf(1)}
	if f.AtLeast != nil {
		b[0] = *f.AtLeast
	}
	if f.AtMost != nil {
		b[1] = *f.AtMost
	}
	return &b
}

// boundName is what a bound asks of the value, as words.
func boundName(b Band) string {
	switch {
	case math.IsInf(b[1], 1):
		return "at or above the bound " + fmtG(b[0])
	case math.IsInf(b[0], -1):
		return "at or below the bound " + fmtG(b[1])
	}
	return fmt.Sprintf("within the bounds [%s, %s]", fmtG(b[0]), fmtG(b[1]))
}

// claimedSide is the side of the pivot the finding claims: its
// direction, else the side its published number lies on, else (a bound
// alone) the side the bound lies on; 0 when it claims none (a number equal
// to the pivot: about equal; a value, which compares nothing).
func claimedSide(f scenario.Finding) int {
	pivot := f.Pivot()
	switch {
	case f.Kind == scenario.FindingValue:
		return 0
	case f.Direction == "below":
		return -1
	case f.Direction == "above":
		return 1
	case f.Paper != nil && *f.Paper > pivot:
		return 1
	case f.Paper != nil && *f.Paper < pivot:
		return -1
	case f.Paper == nil && f.AtLeast != nil && *f.AtLeast > pivot:
		return 1
	case f.Paper == nil && f.AtMost != nil && *f.AtMost < pivot:
		return -1
	}
	return 0
}

func judge(e *scenario.Experiment, f scenario.Finding, ms []Measurement, seeds []uint64) Finding {
	r := Describe(f)
	if f.Kind == scenario.FindingOrder {
		return unjudgeable(e, judgeOrder(e, f, ms, seeds, r), seeds)
	}
	for _, s := range seeds {
		var v float64
		switch f.Kind {
		case scenario.FindingRatio:
			v = at(e, ms, s, f.Metric, f.Of) / at(e, ms, s, f.Metric, f.Over)
		case scenario.FindingValue:
			v = at(e, ms, s, f.Metric, f.Of)
		case scenario.FindingExponent:
			ax := e.Axis(f.Axis)
			var xs, ys []float64
			for _, val := range ax.Values {
				x, _ := scenario.AxisNumber(val)
				xs = append(xs, math.Log(x+f.AxisOffset))
				ys = append(ys, math.Log(at(e, ms, s, f.Metric, f.Where, map[string]string{f.Axis: val})))
			}
			v = slope(xs, ys)
		}
		r.Replicates = append(r.Replicates, v)
	}
	if len(r.Replicates) == 0 {
		r.Verdict, r.Why = NotJudged, "no replicate ran"
		return r
	}
	for i, v := range r.Replicates {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			r.Replicates = nil
			r.Verdict = NotMeasurable
			r.Why = fmt.Sprintf("the quantity is undefined on seed %d: %s is null at a point of the finding (or missing), or 0 where it divides (a ratio over 0, the log of 0) — nothing to compare; see the points' figures and the runs' outcomes", seeds[i], f.Metric)
			return r
		}
	}
	sp := spreadOf(r.Replicates)
	r.Measured = &sp.mean
	if sp.interval {
		r.CI95 = &[2]float64{sp.lo, sp.hi}
	}

	pivot := f.Pivot()
	dir := claimedSide(f)
	var parts []string
	sideS := holds
	if dir != 0 {
		var why string
		sideS, why = sp.side(dir, pivot)
		parts = append(parts, why)
	}
	r.OrderHold = sideS == holds

	// The magnitude: the published number's band, else the bound.
	magS, hasMag := holds, r.Band != nil
	if hasMag {
		name := boundName(*r.Band)
		if f.Paper != nil {
			name = fmt.Sprintf("inside the band [%s, %s] (%s ± %s%%)", fmtG(r.Band[0]), fmtG(r.Band[1]), fmtG(*f.Paper), fmtG(f.Tolerance*100))
		}
		var why string
		magS, why = sp.within(*r.Band, name)
		hold := magS == holds
		r.MagHold = &hold
		parts = append(parts, why)
	}
	if r.Bound != nil {
		bs, why := sp.within(*r.Bound, boundName(*r.Bound))
		hold := bs == holds
		r.BoundHolds = &hold
		parts = append(parts, why+" (the bound is reported; the published number decides the magnitude)")
	}

	switch {
	case dir != 0 && sideS == fails:
		r.Verdict = NotReproduced
	case !hasMag && dir == 0:
		r.Verdict, parts = NotJudged, append(parts, "the finding claims neither a side, a number nor a bound")
	case !hasMag && sideS == holds, hasMag && magS == holds && sideS == holds:
		r.Verdict = Reproduced
	case hasMag && magS == fails && dir != 0 && sideS == holds:
		r.Verdict = Ordering
	case hasMag && magS == fails:
		r.Verdict = NotReproduced
	default:
		// The mean says what the paper says; the interval does not yet.
		r.Verdict = Consistent
		need := 0
		if sideS == meanOnly {
			need = max(need, seedsNeeded(sp.sd, math.Abs(sp.mean-pivot)))
		}
		if hasMag && magS == meanOnly {
			n := seedsNeeded(sp.sd, sp.margin(*r.Band))
			if n < 0 || need < 0 {
				need = -1
			} else {
				need = max(need, n)
			}
		}
		r.SeedsNeeded = need
		parts = append(parts, seedsNeededText(need))
	}
	r.Why = strings.Join(parts, "; ")
	return unjudgeable(e, r, seeds)
}

// unjudgeable turns r's verdict into not-judged when its replicates
// cannot carry one: fewer than MinReplicates, or one on a seed the
// file's readings were chosen on. A not-measurable quantity stays
// not-measurable (more seeds would not define it).
func unjudgeable(e *scenario.Experiment, r Finding, seeds []uint64) Finding {
	if r.Verdict == NotMeasurable || r.Verdict == NotJudged {
		return r
	}
	var tuned []string
	for _, s := range seeds {
		if slices.Contains(e.TunedOn, s) {
			tuned = append(tuned, strconv.FormatUint(s, 10))
		}
	}
	var why string
	switch {
	case len(tuned) > 0:
		why = fmt.Sprintf("not judged: seed(s) %s are ones the file's readings were chosen on (tuned_on) — judge on the file's seeds", strings.Join(tuned, ", "))
	case len(seeds) < MinReplicates:
		why = fmt.Sprintf("not judged: %d replicate(s), and a verdict needs at least %d seeds", len(seeds), MinReplicates)
	default:
		return r
	}
	r.Verdict, r.SeedsNeeded = NotJudged, 0
	r.Why = fmt.Sprintf("%s (what the numbers show: %s)", why, r.Why)
	return r
}

// judgeOrder judges a chain link by link. A "<" link holds when its whole
// interval lies above 1 (the ratio next ÷ this, on the log scale; where a
// value is 0 or negative, the difference next − this above 0); a "<="
// link holds when its geometric-mean ratio is at least 1 (the mean
// difference at least 0) — no leeway. The chain is reproduced when every
// link holds; consistent when every link's mean is in the claimed
// direction but some "<" interval reaches 1; not-reproduced when a link's
// mean is against it; not-measurable when a value is missing at a point.
func judgeOrder(e *scenario.Experiment, f scenario.Finding, ms []Measurement, seeds []uint64, r Finding) Finding {
	chain, _ := scenario.OrderChain(f.Order)
	held, unmeasured, need := 0, 0, 0
	var broken, loose []string
	for i := 0; i+1 < len(chain); i++ {
		a, b := chain[i], chain[i+1]
		l := Link{From: a.Value, Rel: a.Rel, To: b.Value}
		var va, vb []float64
		measured, positive := true, true
		for _, s := range seeds {
			x := at(e, ms, s, f.Metric, f.Where, map[string]string{f.Axis: a.Value})
			y := at(e, ms, s, f.Metric, f.Where, map[string]string{f.Axis: b.Value})
			if math.IsNaN(x) || math.IsNaN(y) {
				measured = false
				break
			}
			positive = positive && x > 0 && y > 0
			va, vb = append(va, x), append(vb, y)
		}
		name := fmt.Sprintf("%s %s %s", a.Value, a.Rel, b.Value)
		if !measured || len(va) == 0 {
			l.Status = LinkNotMeasured
			unmeasured++
			broken = append(broken, name+" (not measured)")
			r.Links = append(r.Links, l)
			continue
		}
		// The link's step per replicate: the log ratio where every value
		// is positive (ratios add there, so a link of 9×, 11× and 18× is
		// not judged by an interval reaching below 0), the difference
		// otherwise.
		steps := make([]float64, len(va))
		for k := range va {
			if positive {
				steps[k] = math.Log(vb[k] / va[k])
			} else {
				steps[k] = vb[k] - va[k]
			}
		}
		sp := spreadOf(steps)
		if positive {
			g := math.Exp(sp.mean)
			l.Ratio = &g
			if sp.interval {
				l.CI95 = &[2]float64{math.Exp(sp.lo), math.Exp(sp.hi)}
			}
		} else {
			d := sp.mean
			l.Difference = &d
			if sp.interval {
				l.DifferenceCI95 = &[2]float64{sp.lo, sp.hi}
			}
		}
		switch {
		case a.Rel == "<=" && sp.mean >= 0, a.Rel == "<" && sp.lo > 0:
			l.Status = LinkHolds
		case a.Rel == "<" && sp.mean > 0:
			l.Status = LinkMeanOnly
			n := seedsNeeded(sp.sd, sp.mean)
			if n < 0 || need < 0 {
				need = -1
			} else {
				need = max(need, n)
			}
			loose = append(loose, name)
		default:
			l.Status = LinkFails
			broken = append(broken, name)
		}
		l.Holds = l.Status == LinkHolds
		if l.Holds {
			held++
		}
		r.Links = append(r.Links, l)
	}
	share := float64(held) / float64(len(r.Links))
	r.Measured = &share
	r.OrderHold = held == len(r.Links)
	n := len(seeds)
	switch {
	case unmeasured > 0:
		r.Verdict = NotMeasurable
		r.Why = fmt.Sprintf("%s is missing at a point of the chain in some replicate — nothing to compare: %s", f.Metric, strings.Join(broken, ", "))
	case len(broken) > 0:
		r.Verdict = NotReproduced
		r.Why = fmt.Sprintf("%d of %d links hold; against the claim in the mean: %s", held, len(r.Links), strings.Join(broken, ", "))
	case len(loose) > 0:
		r.Verdict, r.SeedsNeeded = Consistent, need
		r.Why = fmt.Sprintf("every link's mean is in the claimed direction, but the interval of %s reaches 1 (no difference); %s", strings.Join(loose, ", "), seedsNeededText(need))
	default:
		r.Verdict = Reproduced
		r.Why = fmt.Sprintf("every link holds over the %d replicate(s): each \"<\" with its whole interval above 1, each \"<=\" with its geometric mean at least 1", n)
	}
	return r
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

// fmtG prints a number with four significant digits (whole numbers from
// 10 000 up in full), so that a bound such as 1.003 does not print as the
// pivot it lies beside.
func fmtG(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	case math.Abs(v) >= 1e4 && math.Abs(v) < 1e15:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4g", v), "."), ".")
}

// Holds reports whether the finding's ordering held: what the smoke test
// asserts.
func (f Finding) Holds() bool { return f.OrderHold }

// Worst is the worst verdict among fs in the order of Verdicts (a
// verdict it does not know ranks worst of all); not-judged for none.
func Worst(fs []Finding) string {
	if len(fs) == 0 {
		return NotJudged
	}
	w := 0
	for _, f := range fs {
		i := slices.Index(Verdicts, f.Verdict)
		if i < 0 {
			i = len(Verdicts) - 1
		}
		w = max(w, i)
	}
	return Verdicts[w]
}
