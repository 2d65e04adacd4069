package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
)

// simRun runs a scenario given as YAML on the deterministic driver.
func simRun(t testing.TB, yaml string) *emulator.Result {
	t.Helper()
	sc := emutest.Parse(t, "test", yaml)
	res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	if err := res.CheckJobs(); err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	return res
}

// writeReport writes res's results and report into dir, the way gridbed
// run does.
func writeReport(t *testing.T, dir string, res *emulator.Result) *Page {
	t.Helper()
	if err := res.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	page, err := WriteRun(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// skipShort skips a test of several simulator runs under -short: the
// report code has no concurrency of its own, and the race-instrumented
// simulator takes seconds per run; the full test run covers it.
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: several simulator runs; the full test run covers this")
	}
}

// overlayYAML has churn and a crash (fault markers), no workload.
const overlayYAML = `
name: report-overlay
seed: 3
duration: 6m
peers: {count: 50, join_window: 1m}
overlay: {dimensions: 2, heartbeat: {period: 30s, mode: compact}}
churn: {interval: 20s, start: 2m, stop: 4m}
faults:
  - {at: 3m, crash: {fraction: 0.1}}
`

// schedulingYAML has a workload with dynamic scheduling that migrates.
const schedulingYAML = `
name: report-scheduling
seed: 1
duration: 40m
peers: {count: 40, population: mixed}
overlay: {dimensions: 4}
workload: {jobs: 150, interarrival: 4s, runtime: 10m, kind: mixed, constraint_ratio: 0.5}
matchmaking: {scheme: can-p2}
scheduling: {mode: liq-pull, period: 10s}
`

// runFigures are every figure a run report can draw.
var runFigures = []string{"wait_cdf", "messages_per_node", "bytes_per_node", "overlay", "jobs", "stale_aggregation", "migrations", "migrations_by_mechanism"}

// checkPage checks dir's report.html against the figures directory: every
// figure on the page has a valid SVG and a PNG of the expected size, every
// file the page links exists, every file in figures/ is on the page, and
// the page loads nothing from the network and runs no script. It returns
// the page's text.
func checkPage(t *testing.T, dir string, page *Page) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, bad := range []string{"<script", "http://", "https://", "//fonts.", "@import"} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html contains %q: it must be self-contained", bad)
		}
	}
	refs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		ref := m[1]
		refs[ref] = true
		if ref == "" || strings.HasPrefix(ref, "/") || strings.Contains(ref, ":") {
			t.Errorf("report.html links %q: want a relative path", ref)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(ref))); err != nil {
			t.Errorf("report.html links %q, which does not exist: %v", ref, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, FigureDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !refs[FigureDir+"/"+e.Name()] {
			t.Errorf("%s/%s exists but report.html does not show or link it", FigureDir, e.Name())
		}
	}
	if len(entries) != 3*len(page.Figures) {
		t.Errorf("%d files in %s for %d figures; want an SVG, a PDF and a PNG each", len(entries), FigureDir, len(page.Figures))
	}
	for _, f := range page.Figures {
		if !strings.Contains(html, `<img src="`+f.SVG()+`"`) {
			t.Errorf("figure %s: report.html does not show %s", f.Name, f.SVG())
		}
		if f.Caption == "" || f.Title == "" {
			t.Errorf("figure %s has no title or caption", f.Name)
		}
		checkSVG(t, filepath.Join(dir, f.SVG()))
		panels := 1
		if twoPanels[f.Name] {
			panels = 2
		}
		checkPNG(t, filepath.Join(dir, f.PNG()), panels)
		checkPDF(t, filepath.Join(dir, f.PDF()))
	}
	for _, o := range page.Omitted {
		if !strings.Contains(html, o.Reason) {
			t.Errorf("omitted figure %q: the page does not say why (%q)", o.Title, o.Reason)
		}
	}
	return html
}

// checkSVG parses the file as XML: an <svg> root with drawing in it.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	var root string
	paths, texts := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not valid XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			switch se.Name.Local {
			case "path":
				paths++
			case "text":
				texts++
			}
		}
	}
	if root != "svg" || paths < 10 || texts < 5 {
		t.Errorf("%s: root <%s>, %d paths, %d texts; want an <svg> with axes, lines and labels", path, root, paths, texts)
	}
}

// twoPanels are the figures drawn as two panels one above the other.
var twoPanels = map[string]bool{"overlay": true, "jobs": true, "wait_cdf": true}

// checkPDF: a complete PDF document with its fonts embedded.
func checkPDF(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.Contains(b[max(0, len(b)-64):], []byte("%%EOF")) || !bytes.Contains(b, []byte("/FontFile")) {
		t.Errorf("%s: %d bytes, not a complete PDF with embedded fonts", path, len(b))
	}
}

// checkPNG decodes the file: Width × panels × PanelHeight at DPI, not
// blank.
func checkPNG(t *testing.T, path string, panels int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	px := func(l vg.Length) int { return int(float64(l/vg.Inch)*DPI + 0.5) }
	b := img.Bounds()
	if b.Dx() != 1344 || b.Dx() != px(Width) {
		t.Errorf("%s: %d px wide, want 1344 (%v at %d dpi, twice the screen's)", path, b.Dx(), Width, DPI)
	}
	if want := px(PanelHeight * vg.Length(panels)); b.Dy() != want {
		t.Errorf("%s: %d px high, want %d (%d panels)", path, b.Dy(), want, panels)
	}
	dark := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r+g+bl < 3*0x8000 {
				dark++
			}
		}
	}
	if dark < 500 {
		t.Errorf("%s: only %d dark pixels; the figure looks blank", path, dark)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	return err == nil
}

func figureNames(p *Page) []string {
	var out []string
	for _, f := range p.Figures {
		out = append(out, f.Name)
	}
	return out
}

// TestRunReportWithoutWorkload: an overlay-only run draws the traffic and
// overlay figures; the five job figures are omitted, and the page says
// why; a stale figure of an earlier report in the same directory goes.
func TestRunReportWithoutWorkload(t *testing.T) {
	res := simRun(t, overlayYAML)
	dir := t.TempDir()
	// An earlier run in this directory had jobs.
	if err := os.MkdirAll(filepath.Join(dir, FigureDir), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, FigureDir, "wait_cdf.svg")
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	page := writeReport(t, dir, res)
	if got, want := figureNames(page), []string{"messages_per_node", "bytes_per_node", "overlay"}; !slices.Equal(got, want) {
		t.Fatalf("figures %v, want %v", got, want)
	}
	var omitted []string
	for _, o := range page.Omitted {
		omitted = append(omitted, o.Title)
		if !strings.HasPrefix(o.Reason, "the scenario has no workload") {
			t.Errorf("omitted %q: reason %q", o.Title, o.Reason)
		}
	}
	if len(omitted) != 5 {
		t.Errorf("omitted %v, want the five job figures (stale aggregation among them)", omitted)
	}
	if exists(t, stale) {
		t.Error("the stale wait_cdf.svg of an earlier report is still there")
	}
	html := checkPage(t, dir, page)
	for _, want := range []string{"report-overlay", "overlay_reconverged", "jobs_conserved", "peers.final", "Faults", "crash", `href="summary.json"`, `href="timeseries.csv"`, `href="scenario.yaml"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// The overlay figure has two panels and shows the crash.
	if svg, _ := os.ReadFile(filepath.Join(dir, FigureDir, "overlay.svg")); !bytes.Contains(svg, []byte(">fault: crash<")) || !bytes.Contains(svg, []byte(">broken links<")) {
		t.Error("overlay.svg lacks the fault marker labelled by kind (fault: crash) or the broken links legend")
	}
	svg, _ := os.ReadFile(filepath.Join(dir, FigureDir, "messages_per_node.svg"))
	if !bytes.Contains(svg, []byte(">heartbeat<")) {
		t.Error("messages_per_node.svg has no heartbeat line")
	}
	// Few enough types to name them all: no "N other types" line, and
	// the named types have distinct colors.
	if bytes.Contains(svg, []byte("other types")) {
		t.Errorf("messages_per_node.svg sums types as other although %d fit", topTypes)
	}
}

// TestRunReportWithScheduling: a run with a workload and dynamic
// scheduling draws all eight figures; the wait samples behind the CDF are
// the summary's.
func TestRunReportWithScheduling(t *testing.T) {
	skipShort(t)
	res := simRun(t, schedulingYAML)
	j := res.Summary.Jobs
	if j == nil || j.Completed == 0 {
		t.Fatalf("no jobs completed: %+v", j)
	}
	if n := uint64(len(res.JobWaits)); n != j.Submitted {
		t.Fatalf("%d wait samples for %d submitted jobs: want one per job", n, j.Submitted)
	}
	var sum float64
	for _, w := range res.JobWaits {
		sum += w
	}
	if mean := sum / float64(len(res.JobWaits)); j.WaitSeconds.Mean == nil || math.Abs(mean-*j.WaitSeconds.Mean) > 1e-9 {
		t.Fatalf("wait samples' mean %v, summary's %v", mean, j.WaitSeconds.Mean)
	}
	if m := j.Migrations; m.InternodePull+m.QueuePull == 0 {
		t.Fatalf("liq-pull moved no job; the scenario no longer exercises the migration figures: %+v", m)
	}
	dir := t.TempDir()
	page := writeReport(t, dir, res)
	if got := figureNames(page); !slices.Equal(got, runFigures) || len(page.Omitted) != 0 {
		t.Fatalf("figures %v (omitted %v), want %v", got, page.Omitted, runFigures)
	}
	html := checkPage(t, dir, page)
	// The wait figure: CDF and CCDF over a log wait axis.
	if svg, _ := os.ReadFile(filepath.Join(dir, FigureDir, "wait_cdf.svg")); !bytes.Contains(svg, []byte("CDF: fraction")) || !bytes.Contains(svg, []byte("CCDF: fraction")) || !bytes.Contains(svg, []byte("log scale")) {
		t.Error("wait_cdf.svg lacks the CDF and CCDF panels over a log wait axis")
	}
	for _, want := range []string{"can-p2", "liq-pull", "jobs.wait_seconds", "stale aggregation", "staleness"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if svg, _ := os.ReadFile(filepath.Join(dir, FigureDir, "stale_aggregation.svg")); !bytes.Contains(svg, []byte(">core_utilization mean<")) || !bytes.Contains(svg, []byte(">nodes p90<")) {
		t.Error("stale_aggregation.svg lacks the core utilization mean or the nodes p90 line")
	}
	svg, _ := os.ReadFile(filepath.Join(dir, FigureDir, "migrations_by_mechanism.svg"))
	for _, want := range []string{"internode PULL", "queue PULL"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("migrations_by_mechanism.svg lacks %q", want)
		}
	}
}

// TestRunReportNoJobCompleted: a workload whose jobs all arrive too late
// to finish still draws the wait CDF — every submitted job counts, the
// running ones to their start — and the queue figure.
func TestRunReportNoJobCompleted(t *testing.T) {
	res := simRun(t, `
name: late-jobs
seed: 2
duration: 3m
peers: {count: 20}
overlay: {dimensions: 2}
workload: {jobs: 5, interarrival: 1s, runtime: 2h}
`)
	j := res.Summary.Jobs
	if j.Completed != 0 || j.Submitted != 5 || len(res.JobWaits) != 5 {
		t.Fatalf("%d of %d jobs completed, %d wait samples; want none of 5 (runtime 2h in a 3m run), 5 samples", j.Completed, j.Submitted, len(res.JobWaits))
	}
	if j.WaitSecondsCompleted.Mean != nil || j.WaitSeconds.Mean == nil {
		t.Fatalf("wait over completed jobs %v (want null), over all jobs %v", j.WaitSecondsCompleted.Mean, j.WaitSeconds.Mean)
	}
	dir := t.TempDir()
	page := writeReport(t, dir, res)
	if !slices.Contains(figureNames(page), "wait_cdf") || !slices.Contains(figureNames(page), "jobs") {
		t.Fatalf("figures %v: want the jobs figure and the wait CDF", figureNames(page))
	}
	html := checkPage(t, dir, page)
	if !strings.Contains(html, "censored") {
		t.Error("report.html does not say that censored waits are counted")
	}
}

// TestRunReportNoJobSubmitted: a workload whose jobs are all due after the
// end omits the CDF with its reason but keeps the queue figure.
func TestRunReportNoJobSubmitted(t *testing.T) {
	res := simRun(t, `
name: no-jobs-due
seed: 2
duration: 3m
peers: {count: 20}
overlay: {dimensions: 2}
workload: {jobs: 5, interarrival: 100h}
`)
	if j := res.Summary.Jobs; j == nil || j.Submitted != 0 || len(res.JobWaits) != 0 {
		t.Fatalf("jobs %+v, %d wait samples; want none submitted (one every 100 h on average in a 3m run)", j, len(res.JobWaits))
	}
	dir := t.TempDir()
	page := writeReport(t, dir, res)
	if slices.Contains(figureNames(page), "wait_cdf") || !slices.Contains(figureNames(page), "jobs") {
		t.Fatalf("figures %v: want the jobs figure and no wait CDF", figureNames(page))
	}
	if len(page.Omitted) == 0 || page.Omitted[0].Reason != "no job was submitted" {
		t.Fatalf("omitted %v", page.Omitted)
	}
	checkPage(t, dir, page)
}

// TestCDF: a step function from 0 to 1 over the sorted values; large
// inputs are thinned but keep both ends.
func TestCDF(t *testing.T) {
	xy := cdf([]float64{3, 1, 2, 2})
	want := [][2]float64{{1, 0}, {1, .25}, {2, .25}, {2, .5}, {2, .5}, {2, .75}, {3, .75}, {3, 1}}
	if len(xy) != len(want) {
		t.Fatalf("cdf: %v", xy)
	}
	for i, w := range want {
		if xy[i].X != w[0] || xy[i].Y != w[1] {
			t.Fatalf("cdf point %d = %v, want %v (all %v)", i, xy[i], w, xy)
		}
	}
	big := make([]float64, 10000)
	for i := range big {
		big[i] = float64(len(big) - i)
	}
	xy = cdf(big)
	if len(xy) > 2100 || xy[0].X != 1 || xy[0].Y != 0 || xy[len(xy)-1].X != 10000 || xy[len(xy)-1].Y != 1 {
		t.Fatalf("thinned cdf: %d points, from %v to %v", len(xy), xy[0], xy[len(xy)-1])
	}
	for i := 1; i < len(xy); i++ {
		if xy[i].X < xy[i-1].X || xy[i].Y < xy[i-1].Y {
			t.Fatalf("cdf not monotone at %d: %v then %v", i, xy[i-1], xy[i])
		}
	}
}

func TestTickLabel(t *testing.T) {
	for v, want := range map[float64]string{500: "500", 0.1 + 0.2: "0.3", 2.5: "2.5", 0: "0", 1.5e7: "1.5e+07", -40: "-40"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// BenchmarkWriteRun measures writing a report (seven figures, SVG and
// PNG, and the page) for the scheduling run.
func BenchmarkWriteRun(b *testing.B) {
	res := simRun(b, schedulingYAML)
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WriteRun(dir, res); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEventRateBins: about 60 bins over the run, each the events per
// emulated minute over its intervals, the last bin ending at the last
// sample.
func TestEventRateBins(t *testing.T) {
	for _, n := range []int{7, 120, 125} {
		series := make([]emulator.Sample, n)
		for i := range series {
			// 3 events per 30 s interval: 6 per minute.
			series[i] = emulator.Sample{T: time.Duration(i+1) * 30 * time.Second, JobEvents: map[string]uint64{"job_x": uint64(3 * (i + 1))}}
		}
		xy := eventRate(series, "job_x")
		bins := (n + rateBins(series) - 1) / rateBins(series)
		if len(xy) != bins || xy[len(xy)-1].X != series[n-1].T.Minutes() {
			t.Fatalf("%d samples: %d points ending at %v, want %d ending at %v", n, len(xy), xy[len(xy)-1], bins, series[n-1].T.Minutes())
		}
		for _, p := range xy {
			if math.Abs(p.Y-6) > 1e-9 {
				t.Fatalf("%d samples: rate %v, want 6 per minute (%v)", n, p.Y, xy)
			}
		}
	}
}

// The palette's colors are distinct enough to tell lines apart, for
// readers with and without deuteranopia (the commonest deficiency,
// simulated with Viénot, Brettel and Mollon's 1999 matrix): every pair
// differs by a clear distance either way; past the palette, dashes.
func TestPalette(t *testing.T) {
	rgb := func(c color.Color) [3]float64 {
		r, g, b, _ := c.RGBA()
		return [3]float64{float64(r >> 8), float64(g >> 8), float64(b >> 8)}
	}
	deut := func(c [3]float64) [3]float64 {
		r, g, b := c[0], c[1], c[2]
		return [3]float64{0.29275*r + 0.70725*g, 0.29275*r + 0.70725*g, -0.02234*r + 0.02234*g + b}
	}
	dist := func(a, b [3]float64) float64 {
		return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
	}
	for i := range palette {
		for j := i + 1; j < len(palette); j++ {
			a, b := rgb(palette[i]), rgb(palette[j])
			if d, dd := dist(a, b), dist(deut(a), deut(b)); d < 60 || dd < 25 {
				t.Errorf("colors %d and %d: distance %.0f, %.0f under deuteranopia: too close", i, j, d, dd)
			}
		}
	}
	c0, d0 := style(0)
	c8, d8 := style(len(palette))
	if c0 != c8 || len(d0) != 0 || len(d8) == 0 {
		t.Errorf("series %d should repeat series 0's color dashed: %v %v / %v %v", len(palette), c0, d0, c8, d8)
	}
}

// Each message type keeps one color, by its rank in messages sent, and
// no two types share one.
func TestTypeColors(t *testing.T) {
	count := []uint64{0, 5, 900, 0, 40, 7, 1}
	got := typeColors(count)
	want := map[int]int{2: 0, 4: 1, 5: 2, 1: 3, 6: 4}
	if !maps.Equal(got, want) {
		t.Errorf("typeColors %v, want %v", got, want)
	}
}

// The wait panels: zero and tiny waits at the floor of the log axis, the
// CDF from 0 to 1, the CCDF positive (log axis) and falling.
func TestWaitPanels(t *testing.T) {
	for _, tc := range []struct {
		waits []float64
		floor float64
	}{
		{[]float64{0, 0, 0, 0.04, 3, 120}, 0.01},
		{[]float64{0, 0}, 1},
		{[]float64{1e-9, 5}, minWaitFloor},
		{[]float64{250, 250, 250}, 100},
	} {
		cdfP, ccdfP, floor := waitPanels([]waitLine{{"w", 0, tc.waits}}, 0)
		if floor != tc.floor {
			t.Errorf("%v: floor %g, want %g", tc.waits, floor, tc.floor)
		}
		if _, ok := cdfP.X.Scale.(plot.LogScale); !ok || cdfP.X.Min != floor || cdfP.X.Max <= floor || cdfP.Y.Min != 0 || cdfP.Y.Max != 1 {
			t.Errorf("%v: CDF axes x %g..%g (%T), y %g..%g", tc.waits, cdfP.X.Min, cdfP.X.Max, cdfP.X.Scale, cdfP.Y.Min, cdfP.Y.Max)
		}
		if _, ok := ccdfP.Y.Scale.(plot.LogScale); !ok || ccdfP.Y.Min <= 0 || ccdfP.Y.Min > 1/float64(len(tc.waits)) {
			t.Errorf("%v: CCDF y from %g (%T), want a log axis below 1/%d", tc.waits, ccdfP.Y.Min, ccdfP.Y.Scale, len(tc.waits))
		}
		// Rendering must not fail on the log axes (a non-positive value would).
		c := vgimg.New(Width, 2*PanelHeight)
		(&figure{panels: []*plot.Plot{cdfP, ccdfP}}).draw(draw.New(c))
	}
}
