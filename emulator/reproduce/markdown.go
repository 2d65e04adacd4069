package reproduce

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gridbed/gridbed/emulator"
)

// Markdown renders the report as reproduce.md: the findings beside the
// paper's values, the order chains link by link, and every point's figures
// (mean over the replicates that ran, and how many of the planned ones
// that is).
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s — %s\n\n", r.Experiment, r.cite())
	if r.Title != "" {
		fmt.Fprintf(&b, "%s.\n\n", r.Title)
	}
	fmt.Fprintf(&b, "Scenario `%s` on %s; %s; scale %s; %d of %d runs (%s); %.1f s wall.\n\n",
		r.File, r.driverText(), seedText(r.Seeds), fmtG(r.Scale), len(r.Runs), r.RunsPlanned, r.outcomeText(), r.WallSeconds)
	if r.SeedsVariant() {
		fmt.Fprintf(&b, "**A variant**: the replicates ran on %s, not on the experiment's judging seeds (%s, fixed in the file before the run).\n\n", seedList(r.Seeds), seedList(r.JudgingSeeds))
	}
	if len(r.TunedOn) > 0 {
		fmt.Fprintf(&b, "The file's readings were chosen on %s (`tuned_on`): no verdict is drawn from a replicate on them.\n\n", seedList(r.TunedOn))
	}
	if n := r.Outcomes["overloaded"]; n > 0 {
		fmt.Fprintf(&b, "**%d runs did not keep up with their time scale**: their figures are distorted by the machine, and the findings are judged with them. Run again with `--set time_scale=…` lower (each run's summary.json suggests one).\n\n", n)
	}
	if len(r.Set) > 0 {
		fmt.Fprintf(&b, "**A variant**: every run had `--set %s`.\n\n", strings.Join(r.Set, " --set "))
	}
	if r.Interrupted {
		b.WriteString("**Interrupted**: the findings are judged on the runs that finished; points without runs count as not measured.\n\n")
	}
	fmt.Fprintf(&b, "**Verdict: %s** (the worst of the findings'). %s\n\n", r.Verdict, VerdictRules)
	b.WriteString("| finding | class | claim | paper | gridbed (95% CI) | band | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | **%s** |\n", f.ID, f.ClassText(), f.Claim, f.PaperText(), f.MeasuredText(), bandText(f.Band), f.Verdict)
	}
	b.WriteString("\n")
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "- **%s** (%s of `%s`): %s.\n", f.ID, f.Kind, f.Metric, f.Why)
	}
	for _, f := range r.Findings {
		if len(f.Links) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s link by link\n\n| link | ratio, geometric mean (95%% CI) | difference (95%% CI) | link |\n|---|---|---|---|\n", f.ID)
		for _, l := range f.Links {
			ratio, diff := "—", "—"
			if l.Ratio != nil {
				ratio = intervalText(*l.Ratio, l.CI95)
			}
			if l.Difference != nil {
				diff = intervalText(*l.Difference, l.DifferenceCI95)
			}
			fmt.Fprintf(&b, "| %s %s %s | %s | %s | %s |\n", l.From, l.Rel, l.To, ratio, diff, l.Status)
		}
	}
	// Every point's figures, mean over the replicates.
	metrics := r.MetricPaths()
	b.WriteString("\n## Points (mean over the replicates)\n\n|")
	for _, a := range r.Axes {
		fmt.Fprintf(&b, " %s |", a.Key)
	}
	for _, m := range metrics {
		fmt.Fprintf(&b, " %s |", m)
	}
	b.WriteString(" replicates | outcomes |\n|")
	b.WriteString(strings.Repeat("---|", len(r.Axes)+len(metrics)+2))
	b.WriteString("\n")
	for _, p := range r.Points() {
		b.WriteString("|")
		for _, v := range p.Point {
			fmt.Fprintf(&b, " %s |", v)
		}
		for _, m := range metrics {
			fmt.Fprintf(&b, " %s |", optG(p.Means[m]))
		}
		// How many of the planned replicates the means hold: fewer when
		// the reproduction was interrupted.
		fmt.Fprintf(&b, " %d of %d | %s |\n", len(p.Outcomes), len(r.Seeds), strings.Join(p.Outcomes, ", "))
	}
	return b.String()
}

// PointMeans are a grid point's figures averaged over its replicates.
type PointMeans struct {
	Point    []string
	Means    map[string]*float64
	Outcomes []string
}

// Points averages the runs by grid point, in the order they ran.
func (r *Report) Points() []PointMeans {
	var out []PointMeans
	index := map[string]int{}
	sums := map[string]map[string][2]float64{}
	for _, m := range r.Runs {
		key := strings.Join(m.Point, "\x00")
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, PointMeans{Point: m.Point, Means: map[string]*float64{}})
			sums[key] = map[string][2]float64{}
		}
		out[i].Outcomes = append(out[i].Outcomes, m.Outcome)
		for k, v := range m.Values {
			s := sums[key][k]
			if v != nil && !math.IsNaN(*v) {
				s[0] += *v
				s[1]++
			}
			sums[key][k] = s
		}
	}
	for i := range out {
		for k, s := range sums[strings.Join(out[i].Point, "\x00")] {
			if s[1] > 0 {
				v := s[0] / s[1]
				out[i].Means[k] = &v
			}
		}
	}
	return out
}

func (r *Report) cite() string {
	parts := []string{r.Paper}
	for _, s := range []string{r.Section, r.Figure} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

func (r *Report) outcomeText() string {
	var parts []string
	for _, o := range []string{"passed", "failed", "overloaded", "interrupted"} {
		if n := r.Outcomes[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	if len(parts) == 0 {
		return "none ran"
	}
	return strings.Join(parts, ", ")
}

// VerdictRules is how a verdict follows from the numbers, in two
// sentences for the pages that print verdicts.
const VerdictRules = "A finding is *reproduced* when its ordering holds over the whole 95% interval and, for a published number, the whole interval lies inside the paper's value ± tolerance (for a bound alone, past the bound); *consistent* when the mean does but the interval does not yet (more seeds needed); *ordering* when only the ordering holds; *not-reproduced* when the mean is against the claim; *not-measurable* when the quantity is undefined (a ratio over 0, a null metric); *not-judged* with fewer than 3 replicates or one on a seed the file's readings were chosen on."

// MeasuredText is gridbed's value as the tables print it: the mean with
// its 95% interval, the value of a single replicate marked as such (one
// value is not an interval), or for an order chain how many links hold.
func (f Finding) MeasuredText() string {
	switch {
	case f.Measured == nil:
		return "not measured"
	case f.Kind == "order":
		held := 0
		for _, l := range f.Links {
			if l.Holds {
				held++
			}
		}
		return fmt.Sprintf("%d of %d links hold", held, len(f.Links))
	case f.CI95 == nil:
		return fmtG(*f.Measured) + " (one replicate, no interval)"
	}
	return fmt.Sprintf("%s [%s, %s]", fmtG(*f.Measured), fmtG(f.CI95[0]), fmtG(f.CI95[1]))
}

// intervalText is "v [lo, hi]", or "v (one replicate)" without an
// interval.
func intervalText(v float64, ci *[2]float64) string {
	if ci == nil {
		return fmtG(v) + " (one replicate)"
	}
	return fmt.Sprintf("%s [%s, %s]", fmtG(v), fmtG(ci[0]), fmtG(ci[1]))
}

// PaperText is the paper's side as the tables print it: its number (with
// the bound it also states), the bound alone, the side of the pivot, or
// "ordering" for a chain.
func (f Finding) PaperText() string {
	switch {
	case f.Kind == "order":
		return "ordering"
	case f.Paper != nil && f.Bound != nil:
		return fmtG(*f.Paper) + " (" + boundText(*f.Bound) + ")"
	case f.Paper != nil:
		return fmtG(*f.Paper)
	case f.Band != nil:
		return boundText(*f.Band)
	case f.Side != "":
		return f.Side + " " + fmtG(f.Pivot)
	}
	return "—"
}

// ClassText is the finding's class as the tables print it, "magnitude
// (≈)" for an about-equal claim.
func (f Finding) ClassText() string {
	if f.AboutEqual {
		return f.Class + " (≈)"
	}
	return f.Class
}

// boundText is a bound as words: "≥ 10", "≤ 1.3", or "[0, 0.1]".
func boundText(b Band) string {
	switch {
	case math.IsInf(b[1], 1):
		return "≥ " + fmtG(b[0])
	case math.IsInf(b[0], -1):
		return "≤ " + fmtG(b[1])
	}
	return bandText(&b)
}

func bandText(b *Band) string {
	if b == nil {
		return "—"
	}
	return fmt.Sprintf("[%s, %s]", fmtG(b[0]), fmtG(b[1]))
}

func optG(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmtG(*v)
}

func seedText(seeds []uint64) string {
	switch len(seeds) {
	case 0:
		return "no seeds"
	case 1:
		return fmt.Sprintf("seed %d", seeds[0])
	}
	return fmt.Sprintf("%d seeds (%s)", len(seeds), seedList(seeds))
}

// seedList writes seeds as a list, consecutive runs as ranges: "1–3",
// "4201, 4202, 4203" stays as written for three or fewer.
func seedList(seeds []uint64) string {
	if len(seeds) > 3 {
		consecutive := true
		for i := 1; i < len(seeds); i++ {
			consecutive = consecutive && seeds[i] == seeds[i-1]+1
		}
		if consecutive {
			return fmt.Sprintf("%d–%d", seeds[0], seeds[len(seeds)-1])
		}
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ", ")
}

// MetricPaths are the summary.json paths the runs recorded, in order
// (a report without Metrics: the findings').
func (r *Report) MetricPaths() []string {
	if len(r.Metrics) > 0 {
		return r.Metrics
	}
	var out []string
	for _, f := range r.Findings {
		if !slices.Contains(out, f.Metric) {
			out = append(out, f.Metric)
		}
	}
	return out
}

// driverText names the driver the runs ran on.
func (r *Report) driverText() string {
	if r.Driver == emulator.DriverLive {
		return "the emulator driver (actors over NATS at each run's time scale)"
	}
	return "the deterministic driver"
}
