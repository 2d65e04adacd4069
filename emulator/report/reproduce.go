package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gridbed/gridbed/emulator/reproduce"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sweep"
)

// WriteReproduce writes a reproduced experiment's page (report.html) and
// figures into dir: the paper's value beside gridbed's with its 95%
// interval for every finding with a published value, and every finding
// metric against the experiment's numeric axis (the paper's figure redrawn
// from gridbed's runs, e.g. 003 Fig 6(a): wait against τ by scheme), and
// the CDFs of job wait and matchmaking hops by grid point (002 Figs
// 5.3–5.5) from the runs' jobs.csv under dir. It returns the figures
// written, in page order.
func WriteReproduce(dir string, rep *reproduce.Report) (figs []Figure, err error) {
	// gonum/plot panics on some degenerate data; a figure is not worth
	// losing the reproduction's results for.
	defer func() {
		if r := recover(); r != nil {
			figs, err = nil, fmt.Errorf("drawing the figures: %v", r)
		}
	}()
	page := &Page{
		Title:    fmt.Sprintf("gridbed reproduce: %s (%s %s %s)", rep.Experiment, rep.Paper, rep.Section, rep.Figure),
		Subtitle: fmt.Sprintf("%s; %d runs, scale %s, %s; verdict %s", rep.Title, len(rep.Runs), strconv.FormatFloat(rep.Scale, 'g', -1, 64), seedsText(rep), rep.Verdict),
		Links:    files(dir, "reproduce.md", "reproduce.json"),
	}
	t := Table{Caption: "Findings: the paper's value beside gridbed's (mean and 95% interval over " + seedsText(rep) + ")", Head: []string{"finding", "class", "claim", "paper", "band", "gridbed", "verdict"}}
	for _, f := range rep.Findings {
		band := "—"
		if f.Band != nil {
			band = fmt.Sprintf("[%s, %s]", num(f.Band[0]), num(f.Band[1]))
		}
		bad := f.Verdict == reproduce.NotReproduced || f.Verdict == reproduce.NotMeasurable
		t.Rows = append(t.Rows, []Cell{{Text: f.ID}, {Text: f.ClassText()}, {Text: f.Claim, Note: f.Why}, {Text: f.PaperText()}, {Text: band}, {Text: f.MeasuredText(), Note: f.Metric},
			{Text: f.Verdict, Bad: bad, OK: f.Verdict == reproduce.Reproduced}})
	}
	page.Tables = []Table{t}
	var drawn []*figure
	if f := findingsFigure(rep); f != nil {
		drawn = append(drawn, f)
	} else {
		page.Omitted = append(page.Omitted, Omitted{Title: "Paper vs gridbed", Reason: "no finding with a published value was measured"})
	}
	drawn = append(drawn, metricFigures(rep)...)
	cdfs, omitted := jobCDFFigures(dir, rep)
	drawn = append(drawn, cdfs...)
	page.Omitted = append(page.Omitted, omitted...)
	if err := write(dir, page, drawn); err != nil {
		return nil, err
	}
	return page.Figures, nil
}

// seedsText is "3 seeds (4201, 4202, 4203)" or "seed 1", with "a
// variant" when they are not the experiment's judging seeds.
func seedsText(rep *reproduce.Report) string {
	var list []string
	for _, s := range rep.Seeds {
		list = append(list, strconv.FormatUint(s, 10))
	}
	text := fmt.Sprintf("%d seeds (%s)", len(rep.Seeds), strings.Join(list, ", "))
	if len(rep.Seeds) == 1 {
		text = "seed " + list[0]
	}
	if rep.SeedsVariant() {
		text += ", a variant of the file's judging seeds"
	}
	return text
}

// num prints a band's end: ∞ for an open one.
func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// findingsFigure draws, for each ratio or exponent with a published value
// and a measurement, the paper's value (a triangle) inside its tolerance band (a
// shaded bar: where the whole interval must lie) beside gridbed's mean
// with its 95% interval (no bar with one replicate: one value is not an
// interval); a log scale when the values span more than 20×.
func findingsFigure(rep *reproduce.Report) *figure {
	var names []string
	var paper, gridbed, single plotter.XYs
	var errs plotter.YErrors
	var bands []plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range rep.Findings {
		// A value carries its metric's unit: it is drawn with its metric,
		// not among the unitless ratios and exponents.
		if f.Paper == nil || f.Measured == nil || f.Kind == scenario.FindingValue {
			continue
		}
		x := float64(len(names))
		names = append(names, f.ID)
		paper = append(paper, plotter.XY{X: x - 0.12, Y: *f.Paper})
		vals := []float64{*f.Paper, *f.Measured}
		if f.CI95 != nil {
			gridbed = append(gridbed, plotter.XY{X: x + 0.12, Y: *f.Measured})
			errs = append(errs, struct{ Low, High float64 }{*f.Measured - f.CI95[0], f.CI95[1] - *f.Measured})
			vals = append(vals, f.CI95[0], f.CI95[1])
		} else {
			single = append(single, plotter.XY{X: x + 0.12, Y: *f.Measured})
		}
		if f.Band != nil && !math.IsInf(f.Band[0], 0) && !math.IsInf(f.Band[1], 0) {
			bands = append(bands, plotter.XYs{{X: x - 0.3, Y: f.Band[0]}, {X: x + 0.3, Y: f.Band[0]}, {X: x + 0.3, Y: f.Band[1]}, {X: x - 0.3, Y: f.Band[1]}})
			vals = append(vals, f.Band[0], f.Band[1])
		}
		for _, v := range vals {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(names) == 0 {
		return nil
	}
	title := "The paper's values and gridbed's, " + seedsText(rep)
	p := newPlot(title, "", "the finding's ratio (or exponent), no unit")
	logY := lo > 0 && hi/lo > 20
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text += ", log scale"
	}
	for i, b := range bands {
		poly, err := plotter.NewPolygon(b)
		if err != nil {
			continue
		}
		poly.Color = color.RGBA{0xDD, 0xDD, 0xDD, 0xFF}
		poly.LineStyle.Width = 0
		p.Add(poly)
		if i == 0 {
			p.Legend.Add("paper ± tolerance (the band)", poly)
		}
	}
	ps, _ := plotter.NewScatter(paper)
	ps.GlyphStyle.Shape = draw.PyramidGlyph{}
	ps.GlyphStyle.Radius = vg.Points(4)
	ps.GlyphStyle.Color = color.Black
	p.Add(ps)
	p.Legend.Add("paper", ps)
	c, _ := style(0)
	if len(gridbed) > 0 {
		gs, _ := plotter.NewScatter(gridbed)
		gs.GlyphStyle.Shape = draw.CircleGlyph{}
		gs.GlyphStyle.Radius = vg.Points(3.5)
		gs.GlyphStyle.Color = c
		p.Add(gs)
		p.Legend.Add(fmt.Sprintf("gridbed, mean and 95%% interval (n = %d)", len(rep.Seeds)), gs)
		if eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{gridbed, errs}); err == nil {
			eb.LineStyle.Color = c
			p.Add(eb)
		}
	}
	if len(single) > 0 {
		ss, _ := plotter.NewScatter(single)
		ss.GlyphStyle.Shape = draw.RingGlyph{}
		ss.GlyphStyle.Radius = vg.Points(3.5)
		ss.GlyphStyle.Color = c
		p.Add(ss)
		p.Legend.Add("gridbed, one replicate (no interval)", ss)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	switch {
	case logY:
		// gonum's log axis needs a positive range: give it one, with room.
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	case lo < 0:
		p.Y.Min = lo - 0.1*(hi-lo)
	}
	if chars := len(strings.Join(names, "  ")); chars > 60 {
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	return &figure{Figure: Figure{Name: "findings", Title: title,
		Caption: fmt.Sprintf("Each finding with a published value: the paper's (triangle) inside its band, the paper's value ± the finding's tolerance (gray: the whole interval must lie there to reproduce it), beside gridbed's mean over %s with its 95%% interval (Student's t).", seedsText(rep))}, panels: []*plot.Plot{p}}
}

// metricFigures draws every finding metric against the experiment's last
// numeric axis (numbers or durations), one line per combination of the
// other axes' values — the paper's figure redrawn from gridbed's runs —
// or, without a numeric axis, as bars by grid point.
func metricFigures(rep *reproduce.Report) []*figure {
	xAxis := -1
	for i, a := range rep.Axes {
		if len(a.Values) > 1 && numericAxis(a.Values) {
			xAxis = i
		}
	}
	metrics := rep.MetricPaths()
	points := rep.Points()
	var out []*figure
	for k, m := range metrics {
		col := sweep.Describe(m)
		title := fmt.Sprintf("%s by %s", col.Title, axisNames(rep))
		var p *plot.Plot
		if xAxis >= 0 {
			xlabel := keyWords(rep.Axes[xAxis].Key)
			if _, err := strconv.ParseFloat(rep.Axes[xAxis].Values[0], 64); err != nil {
				xlabel += " (s)" // durations, drawn in seconds
			}
			p = newPlot(title, xlabel, col.Label())
			series := map[string]plotter.XYs{}
			var order []string
			for _, pt := range points {
				v := pt.Means[m]
				if v == nil {
					continue
				}
				var rest []string
				for i, val := range pt.Point {
					if i != xAxis {
						rest = append(rest, val)
					}
				}
				name := strings.Join(rest, ", ")
				if _, ok := series[name]; !ok {
					order = append(order, name)
				}
				series[name] = append(series[name], plotter.XY{X: axisNumber(pt.Point[xAxis]), Y: *v})
			}
			if len(order) == 0 {
				continue
			}
			for i, name := range order {
				addLine(p, name, i, series[name], 0)
				if s, err := plotter.NewScatter(series[name]); err == nil {
					s.GlyphStyle.Color, _ = style(i)
					p.Add(s)
				}
			}
		} else {
			p = newPlot(title, "", col.Label())
			var cats []string
			var vals []float64
			for _, pt := range points {
				cats = append(cats, strings.Join(pt.Point, ", "))
				v := math.NaN()
				if pt.Means[m] != nil {
					v = *pt.Means[m]
				}
				vals = append(vals, v)
			}
			addBars(p, cats, []string{col.Title}, [][]float64{vals})
		}
		out = append(out, &figure{Figure: Figure{Name: fmt.Sprintf("metric-%d", k+1), Title: title,
			Caption: fmt.Sprintf("%s at every grid point, the mean over %s (summary.json's %s).", col.Label(), seedsText(rep), m)}, panels: []*plot.Plot{p}})
	}
	return out
}

// keyWords is a scenario key in words: "workload.interarrival" →
// "workload interarrival".
func keyWords(key string) string {
	return strings.NewReplacer(".", " ", "_", " ").Replace(key)
}

func axisNames(rep *reproduce.Report) string {
	var names []string
	for _, a := range rep.Axes {
		names = append(names, keyWords(a.Key))
	}
	switch len(names) {
	case 0:
		return "grid point"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// numericAxis reports whether every value is a number or a duration.
func numericAxis(values []string) bool {
	for _, v := range values {
		if _, ok := scenario.AxisNumber(v); !ok {
			return false
		}
	}
	return true
}

// axisNumber reads an axis value as a number (a duration in seconds).
func axisNumber(v string) float64 {
	x, _ := scenario.AxisNumber(v)
	return x
}
