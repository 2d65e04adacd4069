package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure sizes: every figure is Width wide; each panel PanelHeight high.
// PNG copies are rendered at DPI, twice the screen's 96, so a one-panel
// figure's PNG is 1344×691 pixels, sharp on slides and high-density
// screens; the SVG and PDF copies are vector graphics for papers.
const (
	Width       = 7 * vg.Inch
	PanelHeight = 3.6 * vg.Inch
	DPI         = 2 * 96
)

// sans is the figures' typeface (embedded in gonum/plot, so PNGs look the
// same everywhere; SVGs name it, with fallbacks, see svgFonts).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// svgFonts widens the SVG's font-family to metric-compatible fallbacks
// for browsers without the Liberation fonts.
var svgFonts = strings.NewReplacer("font-family:Liberation Sans;", "font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;")

// figure is one image of a report: panels stacked vertically (their data
// areas aligned), each with its legend to the right of the plot.
type figure struct {
	Figure
	panels []*plot.Plot
}

// newPlot is a panel with the report's fonts and a light grid.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.ThumbnailWidth = vg.Points(16)
	p.Legend.Padding = vg.Points(2.5)
	p.X.Tick.Marker, p.Y.Tick.Marker = ticker{}, ticker{}
	p.Y.Min = 0 // the figures' quantities are counts, rates and times
	p.Add(plotter.NewGrid())
	return p
}

// waitLine is one distribution of job waits (every submitted job,
// censored waits included) on the wait figures, in style i.
type waitLine struct {
	name  string
	i     int
	waits []float64
}

// minWaitFloor is the lowest left end of the wait axes (emulated s).
const minWaitFloor = 1e-3

// waitFloor is the left end of the log wait axis: the smallest positive
// wait rounded down to a power of ten, at least minWaitFloor. Shorter
// waits (zero included) are drawn at it.
func waitFloor(lines []waitLine) float64 {
	lo := math.Inf(1)
	for _, l := range lines {
		for _, w := range l.waits {
			if w > 0 {
				lo = min(lo, w)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 1
	}
	return max(minWaitFloor, math.Pow(10, math.Floor(math.Log10(lo))))
}

// waitPanels are the two panels of a wait figure: the CDF (fraction of
// jobs that waited at most x) and the CCDF (fraction that waited longer
// than x, the tail), both over a log wait axis from floor, where waits
// below floor are drawn; the CCDF's fraction is on a log axis too. Most
// jobs of a lightly loaded grid wait almost nothing: on a linear axis
// they would be one vertical step at 0 and the tail a flat line.
func waitPanels(lines []waitLine, width vg.Length) (cdfPanel, ccdfPanel *plot.Plot, floor float64) {
	floor = waitFloor(lines)
	hi, n := floor*10, 1
	cdfPanel = newPlot("CDF: fraction of jobs that waited at most x", "", "fraction of submitted jobs")
	ccdfPanel = newPlot("CCDF: fraction of jobs that waited longer than x", "wait (emulated s, log scale)", "fraction (log scale)")
	for _, l := range lines {
		if len(l.waits) == 0 {
			continue
		}
		xs := make([]float64, len(l.waits))
		for i, w := range l.waits {
			xs[i] = max(w, floor)
			hi = max(hi, xs[i])
		}
		n = max(n, len(xs))
		c := cdf(xs)
		addLine(cdfPanel, l.name, l.i, c, width)
		var tail plotter.XYs
		for _, p := range c {
			if y := 1 - p.Y; y > 1e-12 {
				tail = append(tail, plotter.XY{X: p.X, Y: y})
			}
		}
		if len(tail) > 0 {
			addLine(ccdfPanel, l.name, l.i, tail, width)
		}
	}
	for _, p := range []*plot.Plot{cdfPanel, ccdfPanel} {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicker{}
		p.X.Min, p.X.Max = floor, hi
	}
	cdfPanel.Y.Min, cdfPanel.Y.Max = 0, 1
	ccdfPanel.Y.Scale, ccdfPanel.Y.Tick.Marker = plot.LogScale{}, logTicker{}
	ccdfPanel.Y.Min = math.Pow(10, math.Floor(math.Log10(1/float64(n))))
	ccdfPanel.Y.Max = 1
	return cdfPanel, ccdfPanel, floor
}

// logTicker is gonum/plot's log ticks (powers of ten) labelled in the
// shortest form.
type logTicker struct{}

func (logTicker) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = tickLabel(ts[i].Value)
		}
	}
	return ts
}

// timeLabel is the x label of every time series.
const timeLabel = "emulated time (min)"

// newTimePlot is a panel over emulated time, from 0.
func newTimePlot(title, ylabel string, xlabel bool) *plot.Plot {
	l := ""
	if xlabel {
		l = timeLabel
	}
	p := newPlot(title, l, ylabel)
	p.X.Min = 0
	return p
}

// ticker is gonum/plot's default tick placement with labels in the
// shortest form (500, not 500.00).
type ticker struct{}

func (ticker) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = tickLabel(ts[i].Value)
		}
	}
	return ts
}

func tickLabel(v float64) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	// Six significant digits drop the floating-point noise of the tick
	// arithmetic (0.30000000000000004).
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// palette is the Okabe–Ito palette (Okabe and Ito 2008, "Color Universal
// Design"), distinguishable with the common forms of color-vision
// deficiency, without its black (kept for totals) and its yellow (faint on
// white, and close to the orange under deuteranopia), with Paul Tol's
// wine and a neutral gray: eight colors (TestPalette checks the distances).
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.RGBA{0x88, 0x22, 0x55, 0xFF}, // wine (Tol)
	color.RGBA{0x88, 0x88, 0x88, 0xFF}, // gray
}

// style is series i's color and dash pattern: the palette's eight colors
// solid, then the same colors dashed.
func style(i int) (color.Color, []vg.Length) {
	n := len(palette)
	return palette[i%n], plotutil.Dashes(i / n)
}

// addLine adds a legend-labelled line in series i's style; width 0 is
// the default.
func addLine(p *plot.Plot, name string, i int, xys plotter.XYs, width vg.Length) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		panic(err) // only NaN or infinite values; the callers filter them
	}
	l.Color, l.Dashes = style(i)
	if width > 0 {
		l.Width = width
	}
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
}

// addBars adds grouped bars: one group per category (x position 0, 1, …),
// one bar per series, series i's values[i][category]; NaN is no bar. It
// returns the series' bar charts (their widths and offsets place error
// bars).
func addBars(p *plot.Plot, categories []string, names []string, values [][]float64) []*plotter.BarChart {
	var charts []*plotter.BarChart
	n := len(values)
	w := vg.Points(min(40, 320/float64(max(1, n*len(categories)))))
	for i, vs := range values {
		vals := make(plotter.Values, len(vs))
		for j, v := range vs {
			if !math.IsNaN(v) {
				vals[j] = v
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			panic(err)
		}
		b.Color, _ = style(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		charts = append(charts, b)
		if n > 1 {
			p.Legend.Add(names[i], b)
		}
	}
	p.NominalX(categories...)
	// Half a category of room at either end: the first and last groups
	// of bars lie wholly inside the frame.
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	if chars := len(strings.Join(categories, "  ")); chars > 80 {
		// Too long to sit side by side: slant them.
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	return charts
}

// fitAxes makes room in panel p for what it shows: the y axis from zero
// (unless the data go below it) to a twentieth above the highest value,
// and a y label too long for the panel's height broken over two lines.
func fitAxes(p *plot.Plot) {
	if isLinear(p.Y.Scale) && p.Y.Max > p.Y.Min {
		p.Y.Max += (p.Y.Max - p.Y.Min) / 20
	}
	p.Y.Label.Text = breakLabel(p.Y.Label.Text, p.Y.Label.TextStyle, PanelHeight-vg.Points(70))
}

// isLinear reports whether s is gonum/plot's linear scale.
func isLinear(s plot.Normalizer) bool {
	_, ok := s.(plot.LinearScale)
	return ok
}

// breakLabel breaks label at the space nearest its middle when, drawn in
// style, it is longer than room (a rotated y label longer than its panel
// would run past the figure's edges).
func breakLabel(label string, style text.Style, room vg.Length) string {
	if style.Width(label) <= room || strings.Contains(label, "\n") {
		return label
	}
	best := -1
	for i, r := range label {
		if r == ' ' && (best < 0 || abs(i-len(label)/2) < abs(best-len(label)/2)) {
			best = i
		}
	}
	if best < 0 {
		return label
	}
	return label[:best] + "\n" + label[best+1:]
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// mark is a vertical line at time X (minutes) of a kind (a fault's kind).
type mark struct {
	X    float64
	Kind string
}

// markDashes are the dash patterns of the kinds of marks, in order of
// first appearance; kinds beyond them repeat them in a lighter gray.
var markDashes = [][]vg.Length{
	{vg.Points(4), vg.Points(3)},
	{vg.Points(1), vg.Points(2)},
	{vg.Points(8), vg.Points(3)},
	{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)},
}

// maxMarkLabels is how many marks a panel labels with their kind at the
// top of the line; with more, the legend alone says which is which.
const maxMarkLabels = 12

// markTimes draws gray vertical lines at the marks (fault events) over
// the panel's data range: one dash pattern and one legend entry ("fault:
// crash") per kind, and the kind written at the top of each line when
// there are few enough not to overlap.
func markTimes(p *plot.Plot, marks []mark) {
	if len(marks) == 0 {
		return
	}
	lo, hi := p.Y.Min, p.Y.Max
	if hi <= lo {
		hi = lo + 1
	}
	kinds := map[string]int{}
	var labels plotter.XYLabels
	for _, m := range marks {
		k, seen := kinds[m.Kind]
		if !seen {
			k = len(kinds)
			kinds[m.Kind] = k
		}
		l, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: lo}, {X: m.X, Y: hi}})
		if err != nil {
			continue
		}
		l.Color = color.Gray{Y: uint8(90 + 50*(k/len(markDashes)))}
		l.Dashes = markDashes[k%len(markDashes)]
		p.Add(l)
		if !seen {
			p.Legend.Add("fault: "+m.Kind, l)
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: m.X, Y: hi})
		labels.Labels = append(labels.Labels, " "+m.Kind)
	}
	if len(labels.XYs) <= maxMarkLabels {
		ls, err := plotter.NewLabels(labels)
		if err == nil {
			for i := range ls.TextStyle {
				ls.TextStyle[i].Font = font.From(sans, 7)
				ls.TextStyle[i].Color = color.Gray{Y: 70}
				ls.TextStyle[i].YAlign = draw.YTop
			}
			p.Add(ls)
		}
	}
}

// size is the figure's width and height: the panels, or more if a legend
// needs it.
func (f *figure) size() (vg.Length, vg.Length) {
	h := PanelHeight * vg.Length(len(f.panels))
	for _, p := range f.panels {
		r := p.Legend.Rectangle(draw.Canvas{})
		h = max(h, r.Size().Y+vg.Points(40))
	}
	return Width, h
}

// draw renders the panels onto c, legends in a column at the right.
func (f *figure) draw(c draw.Canvas) {
	legW := vg.Length(0)
	legends := make([]plot.Legend, len(f.panels))
	rows := make([][]*plot.Plot, len(f.panels))
	for i, p := range f.panels {
		legends[i] = p.Legend
		if r := p.Legend.Rectangle(c); r.Size().X > legW {
			// A fifth more for SVG viewers that substitute a wider
			// typeface (DejaVu Sans for Liberation Sans).
			legW = r.Size().X * 1.2
		}
		rows[i] = []*plot.Plot{p}
	}
	gap := vg.Points(10)
	area := c
	area.Max.X -= legW + gap
	tiles := draw.Tiles{Rows: len(f.panels), Cols: 1, PadX: vg.Points(4), PadY: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	cs := plot.Align(rows, tiles, area)
	for i, p := range f.panels {
		// Draw the panel without its legend, then the legend beside it,
		// level with the top of the data area (below the title).
		p.Legend = plot.NewLegend()
		p.Draw(cs[i][0])
		p.Legend = legends[i]
		lc := cs[i][0]
		lc.Min.X, lc.Max.X = area.Max.X+gap, c.Max.X
		if p.Title.Text != "" {
			lc.Max.Y -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		legends[i].Draw(lc)
	}
}

// save writes dir/<name>.svg and dir/<name>.png.
func (f *figure) save(dir string) error {
	w, h := f.size()
	svg := vgsvg.New(w, h)
	f.draw(draw.New(svg))
	var buf bytes.Buffer
	if _, err := svg.WriteTo(&buf); err != nil {
		return fmt.Errorf("%s.svg: %w", f.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, f.Name+".svg"), []byte(svgFonts.Replace(buf.String())), 0o644); err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))
	f.draw(draw.New(img))
	buf.Reset()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("%s.png: %w", f.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, f.Name+".png"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	pdf := vgpdf.New(w, h)
	pdf.EmbedFonts(true) // the PDF looks the same without Liberation installed
	f.draw(draw.New(pdf))
	buf.Reset()
	if _, err := pdf.WriteTo(&buf); err != nil {
		return fmt.Errorf("%s.pdf: %w", f.Name, err)
	}
	return os.WriteFile(filepath.Join(dir, f.Name+".pdf"), buf.Bytes(), 0o644)
}

// segments splits a time series where two consecutive samples are more
// than gap apart (gap ≤ 0: never): a missing stretch — an oracle that
// could not sample while the emulator was overloaded, an aborted run's
// last snapshot — is a break in the line, not a straight line across it.
func segments(xys plotter.XYs, gap float64) []plotter.XYs {
	var out []plotter.XYs
	start := 0
	for i := 1; i <= len(xys); i++ {
		if i == len(xys) || gap > 0 && xys[i].X-xys[i-1].X > gap {
			if i > start {
				out = append(out, xys[start:i])
			}
			start = i
		}
	}
	return out
}

// addTimeLine is addLine for a time series with samples every step
// (minutes): the line breaks where a sample is missing (two more than
// 1.5 steps apart), a lone sample between breaks drawn as a dot.
func addTimeLine(p *plot.Plot, name string, i int, xys plotter.XYs, width vg.Length, step float64) {
	for k, seg := range segments(xys, 1.5*step) {
		n := name
		if k > 0 {
			n = "" // one legend entry per series
		}
		if len(seg) == 1 {
			sc, err := plotter.NewScatter(seg)
			if err == nil {
				sc.Color, _ = style(i)
				sc.Shape, sc.Radius = draw.CircleGlyph{}, vg.Points(1.5)
				p.Add(sc)
			}
		}
		addLine(p, n, i, seg, width)
	}
}

// span is a stretch of emulated time (minutes) shaded on a time series.
type span struct{ From, To float64 }

// shading fills spans of a panel's x axis over its whole height in a
// translucent color: the stretches of a run whose figures the machine
// distorted.
type shading struct {
	spans []span
	color color.Color
}

// Plot implements plot.Plotter.
func (s shading) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	for _, sp := range s.spans {
		x0, x1 := max(trX(sp.From), c.Min.X), min(trX(sp.To), c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(s.color, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

// Thumbnail implements plot.Thumbnailer: the legend's swatch.
func (s shading) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// Overload shades: behind its time scale (the guard's early warning on),
// and overloaded (the guard concluded it could not keep up).
var (
	behindShade     = color.NRGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0x30}
	overloadedShade = color.NRGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0x40}
)

// shadeOverload shades, on a panel over emulated time, the stretches when
// the emulator was behind its time scale (from behind to overloaded, in
// minutes; a negative value: never) and overloaded (from overloaded to
// end), each with a legend entry.
func shadeOverload(p *plot.Plot, behind, overloaded, end float64) {
	if behind >= 0 {
		to := end
		if overloaded >= behind {
			to = overloaded
		}
		s := shading{spans: []span{{behind, to}}, color: behindShade}
		p.Add(s)
		p.Legend.Add("behind its time scale", s)
	}
	if overloaded >= 0 {
		s := shading{spans: []span{{overloaded, end}}, color: overloadedShade}
		p.Add(s)
		p.Legend.Add("overloaded", s)
	}
}
