package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/sweep"
)

// Sweep collects the runs of a parameter grid (gridbed sweep) for one
// comparison report: a figure per tabulated column across the grid (lines
// over a numeric axis, like 002 Fig 4.7's dimensions or 000 Fig 3's
// inter-arrival times; grouped bars otherwise, like 000 Fig 4's modes),
// broken links over time per grid point (002 Fig 4.6) and the wait CDF
// per grid point.
type Sweep struct {
	// Name is the scenario's name, File its file.
	Name, File string
	Axes       []sweep.Axis
	// Columns are the tabulated summary.json paths.
	Columns []string
	// Seeds are the replicates' seeds, the same at every grid point
	// (gridbed sweep --seeds); nil or one seed: one run per point.
	Seeds  []uint64
	points []point
}

// point is what the report keeps of one grid point's runs.
type point struct {
	values []string
	dir    string       // the first replicate's results directory, relative to the sweep's
	stats  []sweep.Stat // one per column, over the replicates
	driver string
	broken plotter.XYs // broken links over time (minutes), first replicate
	step   float64     // the oracle's interval (minutes): a longer gap is a break
	waits  []float64   // job waits, first replicate
	jobs   bool
}

// Add records a grid point: its values (one per axis), the results
// directory of its first replicate relative to the sweep's, that
// replicate's run (the figures over time show it) and one Stat per column
// over all its replicates.
func (s *Sweep) Add(values []string, dir string, res *emulator.Result, stats []sweep.Stat) {
	p := point{values: values, dir: dir, stats: stats, driver: res.Summary.Driver, waits: res.JobWaits, jobs: res.Summary.Jobs != nil,
		step: res.Summary.Oracle.IntervalSeconds / 60}
	for _, x := range res.Series {
		p.broken = append(p.broken, plotter.XY{X: x.T.Minutes(), Y: float64(x.Oracle.BrokenLinks)})
	}
	s.points = append(s.points, p)
}

// replicated reports whether the grid points have several runs each.
func (s *Sweep) replicated() bool { return len(s.Seeds) > 1 }

// seedsText names the replicates' seeds, e.g. "3 seeds (1–3)".
func (s *Sweep) seedsText() string {
	n := len(s.Seeds)
	return fmt.Sprintf("%d seeds (%d–%d)", n, s.Seeds[0], s.Seeds[n-1])
}

// Write writes dir/report.html and the comparison figures
// (dir/figures/); call it after every Add, once the grid points' results
// directories (with their own reports) are written.
func (s *Sweep) Write(dir string) (*Page, error) {
	name := s.Name
	if name == "" {
		name = s.File
	}
	var axes []string
	for _, a := range s.Axes {
		axes = append(axes, fmt.Sprintf("%s (%s)", a.Key, strings.Join(a.Values, ", ")))
	}
	driver := ""
	if len(s.points) > 0 {
		driver = ", driver " + s.points[0].driver
	}
	page := &Page{
		Title:    "gridbed sweep: " + name,
		Subtitle: fmt.Sprintf("%s over %s%s; each grid point links to its own report", plural(len(s.points), "grid point", "grid points"), strings.Join(axes, " × "), driver),
		Links:    files(dir, "sweep.csv", "sweep.md"),
	}
	if s.replicated() {
		page.Subtitle = fmt.Sprintf("%s over %s%s, each run with %s: the table and figures give the mean and its 95%% confidence interval; each grid point links to its first seed's report",
			plural(len(s.points), "grid point", "grid points"), strings.Join(axes, " × "), driver, s.seedsText())
	}
	t := Table{Caption: "The grid (sweep.csv)", Head: []string{"run"}}
	for _, a := range s.Axes {
		t.Head = append(t.Head, a.Key)
	}
	t.Head = append(t.Head, s.Columns...)
	for i, p := range s.points {
		run := Cell{Text: fmt.Sprintf("%02d", i+1)}
		if _, err := os.Stat(filepath.Join(dir, p.dir, "report.html")); err == nil {
			run.Href = p.dir + "/report.html"
		}
		row := []Cell{run}
		for _, v := range p.values {
			row = append(row, Cell{Text: v})
		}
		for _, st := range p.stats {
			row = append(row, Cell{Text: st.Markdown()})
		}
		t.Rows = append(t.Rows, row)
	}
	page.Tables = []Table{t}

	var figs []*figure
	for i, col := range s.Columns {
		if col == "outcome" {
			continue // a verdict, tabulated, not drawn
		}
		f, o := s.columnFigure(i, col)
		if f != nil {
			figs = append(figs, f)
		} else {
			page.Omitted = append(page.Omitted, o)
		}
	}
	for _, build := range []func() (*figure, Omitted){s.brokenFigure, s.waitFigure} {
		if f, o := build(); f != nil {
			figs = append(figs, f)
		} else if o.Title != "" {
			page.Omitted = append(page.Omitted, o)
		}
	}
	return page, write(dir, page, figs)
}

// label names grid point p by the values of the axes other than skip
// (-1: none), "key=value" joined by commas.
func (s *Sweep) label(p point, skip int) string {
	short := shortKeys(s.Axes)
	var parts []string
	for i, v := range p.values {
		if i != skip {
			parts = append(parts, short[i]+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// shortKeys are the axes' keys by their last path element, or whole where
// that would be ambiguous.
func shortKeys(axes []sweep.Axis) []string {
	out := make([]string, len(axes))
	seen := map[string]int{}
	for i, a := range axes {
		out[i] = a.Key[strings.LastIndex(a.Key, ".")+1:]
		seen[out[i]]++
	}
	for i, a := range axes {
		if seen[out[i]] > 1 {
			out[i] = a.Key
		}
	}
	return out
}

// numeric is an axis value as a number: a plain number, or a duration in
// seconds; ok is false otherwise.
func numeric(v string) (float64, bool) {
	if x, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return x, true
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d.Seconds(), true
	}
	return 0, false
}

// xAxis is the axis a column figure draws along: the last axis with two
// or more values that are all numeric (a line figure), else the first
// axis (grouped bars); numeric says which.
func (s *Sweep) xAxis() (axis int, numericAxis bool) {
	for i := len(s.Axes) - 1; i >= 0; i-- {
		if len(s.Axes[i].Values) < 2 {
			continue
		}
		all := true
		for _, v := range s.Axes[i].Values {
			_, ok := numeric(v)
			all = all && ok
		}
		if all {
			return i, true
		}
	}
	return 0, false
}

// columnFigure draws column col across the grid: one line (or one bar
// colour) per combination of the other axes' values; with replicates, the
// mean with its 95% confidence interval as error bars. The title and the
// y axis are the column's description with its unit (sweep.Describe).
func (s *Sweep) columnFigure(c int, col string) (*figure, Omitted) {
	desc := sweep.Describe(col)
	title := desc.Title
	vals := make([]float64, len(s.points))
	errs := make([][2]float64, len(s.points)) // below, above the mean
	some, nonzero, cut := false, false, false
	domLo, domHi := sweep.Domain(col)
	minN, maxN := math.MaxInt, 0
	for i, p := range s.points {
		vals[i] = math.NaN()
		if c < len(p.stats) && p.stats[c].Numeric() && !math.IsInf(p.stats[c].Mean, 0) {
			st := p.stats[c]
			vals[i] = st.Mean
			// The interval drawn within the quantity's domain: a count's
			// whisker never reaches below zero.
			lo, hi := max(st.Lo, domLo), min(st.Hi, domHi)
			cut = cut || lo != st.Lo || hi != st.Hi
			errs[i] = [2]float64{max(0, st.Mean-lo), max(0, hi-st.Mean)}
			minN, maxN = min(minN, st.N), max(maxN, st.N)
			some = true
			nonzero = nonzero || st.Mean != 0 || st.Hi != 0
		}
	}
	switch {
	case !some:
		return nil, Omitted{title, fmt.Sprintf("no grid point has a number for %s (null, or not a summary.json key)", col)}
	case !nonzero:
		return nil, Omitted{title, fmt.Sprintf("%s is 0 at every grid point", col)}
	}
	x, isNum := s.xAxis()
	// Series: the combinations of the other axes, in grid order.
	var names []string
	index := map[string]int{}
	for _, p := range s.points {
		l := s.label(p, x)
		if _, ok := index[l]; !ok {
			index[l] = len(names)
			names = append(names, l)
		}
	}
	xKey := s.Axes[x].Key
	durations := false
	if isNum {
		_, err := strconv.ParseFloat(s.Axes[x].Values[0], 64)
		durations = err != nil
	}
	xDesc := sweep.DescribeKey(xKey, durations)
	p := newPlot(title, xDesc.Label(), desc.Label())
	caption := fmt.Sprintf("%s — summary.json's %s — at each grid point", desc.Label(), col)
	if s.replicated() {
		n := fmt.Sprintf("n = %d", maxN)
		if minN != maxN {
			n = fmt.Sprintf("n = %d to %d: the seeds with a number", minN, maxN)
		}
		caption = fmt.Sprintf("%s — summary.json's %s — at each grid point: the mean over %s (%s), the error bars its 95%% confidence interval (Student's t)", desc.Label(), col, s.seedsText(), n)
		if cut {
			if math.IsInf(domHi, 1) {
				caption += fmt.Sprintf(", cut at %s where it reaches below: the quantity cannot be negative", tickLabel(domLo))
			} else {
				caption += fmt.Sprintf(", cut to [%s, %s], the quantity's range, where it reaches past it", tickLabel(domLo), tickLabel(domHi))
			}
		}
	}
	if isNum {
		lines := make([]plotter.XYs, len(names))
		bars := make([]plotter.YErrors, len(names))
		for i, pt := range s.points {
			if math.IsNaN(vals[i]) {
				continue
			}
			xv, _ := numeric(pt.values[x])
			k := index[s.label(pt, x)]
			lines[k] = append(lines[k], plotter.XY{X: xv, Y: vals[i]})
			bars[k] = append(bars[k], struct{ Low, High float64 }{errs[i][0], errs[i][1]})
		}
		for k, l := range lines {
			if len(l) == 0 {
				continue
			}
			name := names[k]
			if len(names) == 1 {
				name = ""
			}
			addLine(p, name, k, l, 2)
			sc, _ := plotter.NewScatter(l)
			sc.Color, _ = style(k)
			sc.Radius = vg.Points(3)
			sc.Shape = draw.CircleGlyph{}
			p.Add(sc)
			if s.replicated() {
				eb, err := plotter.NewYErrorBars(errorPoints{l, bars[k]})
				if err == nil {
					eb.Color, _ = style(k)
					eb.Width = vg.Points(1.2)
					eb.CapWidth = vg.Points(6)
					p.Add(eb)
				}
			}
		}
		caption += fmt.Sprintf(", along %s (%s)", strings.ToLower(xDesc.Title[:1])+xDesc.Title[1:], xKey)
	} else {
		cats := s.Axes[x].Values
		cat := map[string]int{}
		for i, v := range cats {
			cat[v] = i
		}
		bars := make([][]float64, len(names))
		errBars := make([][][2]float64, len(names))
		for k := range bars {
			bars[k] = make([]float64, len(cats))
			errBars[k] = make([][2]float64, len(cats))
			for j := range bars[k] {
				bars[k][j] = math.NaN()
			}
		}
		for i, pt := range s.points {
			k, j := index[s.label(pt, x)], cat[pt.values[x]]
			bars[k][j], errBars[k][j] = vals[i], errs[i]
		}
		charts := addBars(p, cats, names, bars)
		if s.replicated() {
			p.Add(barErrors{charts: charts, values: bars, errs: errBars})
		}
		caption += fmt.Sprintf(", by %s (%s)", strings.ToLower(xDesc.Title[:1])+xDesc.Title[1:], xKey)
	}
	fitAxes(p)
	if len(names) > 1 {
		caption += "; one colour per combination of the other axes"
	}
	return &figure{Figure: Figure{Name: "col_" + strings.ReplaceAll(col, ".", "_"), Title: title, Caption: caption + " (docs/RESULTS.md defines it)."},
		panels: []*plot.Plot{p}}, Omitted{}
}

// errorPoints are a line's points with their error bars (below, above).
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// barErrors is a plotter of error bars over grouped bars (series k's bar
// over category j spans errs[k][j] below and above its top), placed by the
// bars' own offsets (which are in canvas units, not data units).
type barErrors struct {
	charts []*plotter.BarChart
	values [][]float64
	errs   [][][2]float64
}

// Plot implements plot.Plotter.
func (b barErrors) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for k, chart := range b.charts {
		col, _ := style(k)
		ls := draw.LineStyle{Color: darker(col), Width: vg.Points(1.2)}
		for j, v := range b.values[k] {
			if math.IsNaN(v) {
				continue
			}
			lo, hi := v-b.errs[k][j][0], v+b.errs[k][j][1]
			x := trX(float64(j)) + chart.Offset
			yl, yh := trY(lo), trY(hi)
			cap := chart.Width / 4
			c.StrokeLines(ls, []vg.Point{{X: x, Y: yl}, {X: x, Y: yh}},
				[]vg.Point{{X: x - cap, Y: yl}, {X: x + cap, Y: yl}},
				[]vg.Point{{X: x - cap, Y: yh}, {X: x + cap, Y: yh}})
		}
	}
}

// DataRange implements plot.DataRanger: the bars' tops with their errors.
func (b barErrors) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = 0, 0, math.Inf(1), math.Inf(-1)
	for k, vs := range b.values {
		xmax = math.Max(xmax, float64(len(vs)-1))
		for j, v := range vs {
			if !math.IsNaN(v) {
				ymin = math.Min(ymin, v-b.errs[k][j][0])
				ymax = math.Max(ymax, v+b.errs[k][j][1])
			}
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 0, 0
	}
	return xmin, xmax, ymin, ymax
}

// darker is c at two thirds of its brightness: error bars show over a bar
// of colour c.
func darker(c color.Color) color.Color {
	r, g, bl, a := c.RGBA()
	return color.RGBA64{R: uint16(r * 2 / 3), G: uint16(g * 2 / 3), B: uint16(bl * 2 / 3), A: uint16(a)}
}

// brokenFigure overlays the grid points' broken links over time (002
// Fig 4.6).
func (s *Sweep) brokenFigure() (*figure, Omitted) {
	const title = "Broken links over time"
	some := false
	for _, p := range s.points {
		some = some || !allZero(p.broken)
	}
	if !some {
		return nil, Omitted{title, "no broken link at any oracle sample of any grid point"}
	}
	p := newTimePlot(title, "broken links", true)
	for i, pt := range s.points {
		addTimeLine(p, s.label(pt, -1), i, pt.broken, 0, pt.step)
	}
	return &figure{Figure: Figure{Name: "broken_links", Title: title, Caption: "Broken links (abutting zones missing from a neighbor table, as the oracle counts them) at each oracle sample, one line per grid point."},
		panels: []*plot.Plot{p}}, Omitted{}
}

// waitFigure overlays the grid points' wait CDFs.
func (s *Sweep) waitFigure() (*figure, Omitted) {
	const title = "CDF of job wait"
	jobs, some := false, false
	for _, p := range s.points {
		jobs = jobs || p.jobs
		some = some || len(p.waits) > 0
	}
	switch {
	case !jobs:
		return nil, Omitted{}
	case !some:
		return nil, Omitted{title, "no job was submitted at any grid point"}
	}
	var lines []waitLine
	for i, pt := range s.points {
		lines = append(lines, waitLine{s.label(pt, -1), i, pt.waits})
	}
	top, bottom, floor := waitPanels(lines, 0)
	return &figure{Figure: Figure{Name: "wait_cdf", Title: title, Caption: "Top: fraction of each grid point's submitted jobs (y) that waited at most x emulated seconds from submission to the start of the run that completed them (or is still going at the end); bottom: the fraction that waited longer (y on a log scale); one line per grid point. The wait axis is logarithmic; waits of at most " + tickLabel(floor) + " s, zero included, are drawn there. A job not started by the end of its run (or failed) counts its wait up to then (censored, jobs.wait_censored)."},
		panels: []*plot.Plot{top, bottom}}, Omitted{}
}
