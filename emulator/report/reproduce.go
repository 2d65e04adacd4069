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
		Subtitle: fmt.Sprintf("%s; %d runs, scale %s; verdict %s", rep.Title, len(rep.Runs), strconv.FormatFloat(rep.Scale, 'g', -1, 64), rep.Verdict),
		Links:    files(dir, "reproduce.md", "reproduce.json"),
	}
	t := Table{Caption: "Findings: the paper's value beside gridbed's (mean and 95% interval over the replicates)", Head: []string{"finding", "claim", "paper", "gridbed", "verdict"}}
	for _, f := range rep.Findings {
		t.Rows = append(t.Rows, []Cell{{Text: f.ID}, {Text: f.Claim, Note: f.Why}, {Text: f.PaperText()}, {Text: f.MeasuredText(), Note: f.Metric},
			{Text: f.Verdict, Bad: f.Verdict == reproduce.NotReproduced, OK: f.Verdict == reproduce.Reproduced}})
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

// findingsFigure draws, for each finding with a published value and a
// measurement, the paper's value (a diamond) beside gridbed's mean with
// its 95% interval; a log scale when the values span more than 20×.
func findingsFigure(rep *reproduce.Report) *figure {
	var names []string
	var paper, gridbed plotter.XYs
	var errs plotter.YErrors
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range rep.Findings {
		if f.Paper == nil || f.Measured == nil || f.CI95 == nil {
			continue
		}
		x := float64(len(names))
		names = append(names, f.ID)
		paper = append(paper, plotter.XY{X: x - 0.12, Y: *f.Paper})
		gridbed = append(gridbed, plotter.XY{X: x + 0.12, Y: *f.Measured})
		errs = append(errs, struct{ Low, High float64 }{*f.Measured - f.CI95[0], f.CI95[1] - *f.Measured})
		for _, v := range []float64{*f.Paper, f.CI95[0], f.CI95[1]} {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(names) == 0 {
		return nil
	}
	p := newPlot("The paper's values and gridbed's", "", "value (ratio or exponent)")
	logY := lo > 0 && hi/lo > 20
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text += ", log scale"
	}
	ps, _ := plotter.NewScatter(paper)
	ps.GlyphStyle.Shape = draw.PyramidGlyph{}
	ps.GlyphStyle.Radius = vg.Points(4)
	ps.GlyphStyle.Color = color.Black
	p.Add(ps)
	p.Legend.Add("paper", ps)
	gs, _ := plotter.NewScatter(gridbed)
	c, _ := style(0)
	gs.GlyphStyle.Shape = draw.CircleGlyph{}
	gs.GlyphStyle.Radius = vg.Points(3.5)
	gs.GlyphStyle.Color = c
	p.Add(gs)
	p.Legend.Add("gridbed (95% interval)", gs)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{gridbed, errs})
	if err == nil {
		eb.LineStyle.Color = c
		p.Add(eb)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	if logY {
		// gonum's log axis needs a positive range: give it one, with room.
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	}
	if chars := len(strings.Join(names, "  ")); chars > 60 {
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	return &figure{Figure: Figure{Name: "findings", Title: "The paper's values and gridbed's",
		Caption: "Each finding with a published value: the paper's (triangle) beside gridbed's mean over the replicates with its 95% interval."}, panels: []*plot.Plot{p}}
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
		title := fmt.Sprintf("%s by %s", m, axisNames(rep))
		var p *plot.Plot
		if xAxis >= 0 {
			xlabel := rep.Axes[xAxis].Key
			if _, err := strconv.ParseFloat(rep.Axes[xAxis].Values[0], 64); err != nil {
				xlabel += " (s)" // durations, drawn in seconds
			}
			p = newPlot(title, xlabel, m)
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
			p = newPlot(title, "", m)
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
			addBars(p, cats, []string{m}, [][]float64{vals})
		}
		out = append(out, &figure{Figure: Figure{Name: fmt.Sprintf("metric-%d", k+1), Title: title,
			Caption: fmt.Sprintf("%s (summary.json) at every grid point, mean over the replicates.", m)}, panels: []*plot.Plot{p}})
	}
	return out
}

func axisNames(rep *reproduce.Report) string {
	var names []string
	for _, a := range rep.Axes {
		names = append(names, a.Key)
	}
	return strings.Join(names, " × ")
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
