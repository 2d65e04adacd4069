package report

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/sweep"
)

// chromiumBinary and chromium are the test kit's (emutest.ChromiumBinary,
// emutest.Chromium).
func chromiumBinary(t *testing.T) string { t.Helper(); return emutest.ChromiumBinary(t) }

func chromium(t *testing.T, bin, page string, args ...string) string {
	t.Helper()
	return emutest.Chromium(t, bin, page, args...)
}

// TestReportInChromium renders the report of examples/quickstart.yaml
// (as `gridbed run --driver sim` writes it) in headless Chromium: every
// figure of the page loads and decodes as an image, and a screenshot
// shows the figures' lines. emulator/report/screenshots.sh makes the
// screenshots in docs/img the same way.
func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser check runs in the full test run")
	}
	bin := chromiumBinary(t)
	quickstart, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The quickstart report, and one with jobs (the wait figure's log axes)
	// and a crash (fault lines labelled by kind).
	for _, tc := range []struct {
		name, yaml string
		figures    int
	}{
		{"quickstart", string(quickstart), 3},
		{"scheduling", schedulingYAML, len(runFigures)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			page := writeReport(t, dir, simRun(t, tc.yaml))
			if len(page.Figures) < tc.figures {
				t.Fatalf("the report has %d figures, want at least %d", len(page.Figures), tc.figures)
			}
			checkInChromium(t, bin, dir, page)
		})
	}
	// A sweep's report with replicates: titled figures with units on the
	// axes and error bars.
	t.Run("sweep with replicates", func(t *testing.T) {
		axis := sweep.Axis{Key: "overlay.dimensions", Values: []string{"2", "3", "4"}}
		s := &Sweep{Axes: []sweep.Axis{axis}, Columns: []string{"messages.per_node_per_minute", "entries.per_node_per_minute"}, Seeds: []uint64{1, 2, 3}}
		for i, v := range axis.Values {
			st := sweep.Aggregate([]any{10.0 + float64(i), 12.0 + float64(i), 14.0 + float64(i)})
			wide := sweep.Aggregate([]any{0.0, 100.0 * float64(i+1), 900.0}) // reaches below 0: cut
			s.points = append(s.points, point{values: []string{v}, stats: []sweep.Stat{st, wide}, driver: "sim"})
		}
		dir := t.TempDir()
		page, err := s.Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Figures) == 0 {
			t.Fatal("the sweep report has no figure")
		}
		checkInChromium(t, bin, dir, page)
	})
	// Bars by a mode, a whisker of a count cut at zero, a long y label.
	t.Run("sweep bars", func(t *testing.T) {
		axis := sweep.Axis{Key: "overlay.heartbeat.mode", Values: []string{"vanilla", "compact", "adaptive"}}
		s := &Sweep{Axes: []sweep.Axis{axis}, Columns: []string{"overlay.broken_links.mean", "entries.per_node_per_minute"}, Seeds: []uint64{1, 2, 3}}
		for i, v := range axis.Values {
			a := sweep.Aggregate([]any{0.0, 0.3 * float64(i+1), 2.3})
			b := sweep.Aggregate([]any{50.0, 800.0 / float64(i+1), 1500.0})
			s.points = append(s.points, point{values: []string{v}, stats: []sweep.Stat{a, b}, driver: "sim"})
		}
		dir := t.TempDir()
		page, err := s.Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		checkInChromium(t, bin, dir, page)
	})
}

// checkTextInside renders every figure SVG of dir/figures inline in one
// page in headless Chromium and fails for each text element whose box, as
// the browser lays it out, reaches outside its SVG's viewBox (a clipped
// axis label, a tick label or legend entry past the edge).
func checkTextInside(t *testing.T, bin, dir string, page *Page) {
	t.Helper()
	var names []string
	for _, f := range page.Figures {
		names = append(names, f.Name)
	}
	checkSVGTextInside(t, bin, dir, names)
}

// checkSVGTextInside is checkTextInside for the figures dir/figures/NAME.svg.
func checkSVGTextInside(t *testing.T, bin, dir string, names []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=utf-8><title>probe</title></head><body>\n")
	for _, name := range names {
		svg, err := os.ReadFile(filepath.Join(dir, "figures", name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		text := string(svg)
		if i := strings.Index(text, "<svg"); i >= 0 {
			text = text[i:]
		}
		fmt.Fprintf(&b, "<div data-name=%q>%s</div>\n", name, text)
	}
	b.WriteString(`<script>
window.addEventListener("load", () => {
  const bad = [];
  let n = 0;
  for (const div of document.querySelectorAll("div[data-name]")) {
    const svg = div.querySelector("svg"), box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll("text")) {
      if (!t.textContent.trim()) continue;
      n++;
      const r = t.getBoundingClientRect(), e = 0.5;
      if (r.left < box.left - e || r.right > box.right + e || r.top < box.top - e || r.bottom > box.bottom + e) {
        bad.push(div.dataset.name + ": '" + t.textContent.trim() + "' at " + [r.left - box.left, r.top - box.top, r.right - box.left, r.bottom - box.top].map(v => v.toFixed(1)).join(",") + " in " + box.width.toFixed(0) + "x" + box.height.toFixed(0));
      }
    }
  }
  document.title = "texts " + n + " clipped " + bad.length + (bad.length ? " | " + bad.join(" | ") : "");
});
</script></body></html>`)
	probe := filepath.Join(dir, "clip-check.html")
	if err := os.WriteFile(probe, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, bin, probe, "--virtual-time-budget=10000", "--dump-dom")
	m := regexp.MustCompile(`<title>texts (\d+) clipped (\d+)(.*)</title>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("Chromium did not run the clipping probe; title: %q", regexp.MustCompile(`<title>.*</title>`).FindString(dom))
	}
	if m[1] == "0" {
		t.Fatalf("the probe found no text in %d figures", len(names))
	}
	if m[2] != "0" {
		t.Errorf("%s of %s texts reach outside their figure's viewBox in Chromium:%s", m[2], m[1], strings.ReplaceAll(m[3], " | ", "\n  "))
		return
	}
	t.Logf("%s texts in %d figures, none clipped", m[1], len(names))
}

// checkInChromium renders the report page written into dir in headless
// Chromium: every image loads and decodes, and a screenshot shows the
// figures' first line color.
func checkInChromium(t *testing.T, bin, dir string, page *Page) {

	// A copy of the page with a script that reports, once everything has
	// loaded, how many images Chromium decoded (the report itself has no
	// script).
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	probe := strings.Replace(string(html), "</body>", `<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0);
  document.title = "images " + ok.length + " of " + imgs.length + " widths " + ok.map(i => i.naturalWidth).join(",");
});
</script></body>`, 1)
	check := filepath.Join(dir, "check.html")
	if err := os.WriteFile(check, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, bin, check, "--virtual-time-budget=10000", "--dump-dom")
	m := regexp.MustCompile(`<title>images (\d+) of (\d+) widths ([\d,]*)</title>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("Chromium did not run the probe; title: %q", regexp.MustCompile(`<title>.*</title>`).FindString(dom))
	}
	if want := fmt.Sprint(len(page.Figures)); m[1] != want || m[2] != want {
		t.Fatalf("Chromium loaded %s of %s images; the page has %s figures", m[1], m[2], want)
	}
	// An SVG's natural width is its width attribute: 7 in = 504 pt.
	for _, w := range strings.Split(m[3], ",") {
		if w != "672" && w != "504" {
			t.Errorf("an SVG's natural width in Chromium is %s px, want 672 (504 pt)", w)
		}
	}

	checkTextInside(t, bin, dir, page)

	shot := filepath.Join(t.TempDir(), "report.png")
	chromium(t, bin, filepath.Join(dir, "report.html"), "--screenshot="+shot, "--window-size=1400,1800")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 1800 {
		t.Fatalf("screenshot %v, want 1400×1800", b)
	}
	// The first series' color (the heartbeat and peers lines) only
	// appears where Chromium drew the figures.
	want, _ := style(0)
	if n := near(img, want); n < 500 {
		t.Errorf("only %d pixels of the figures' first line color %v in the screenshot: the figures did not render", n, want)
	}
}

// near counts the pixels within ±40 per channel of c.
func near(img image.Image, c interface{ RGBA() (r, g, b, a uint32) }) int {
	cr, cg, cb, _ := c.RGBA()
	d := func(a, b uint32) bool { return a >= b && a-b <= 40<<8 || b > a && b-a <= 40<<8 }
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if d(r, cr) && d(g, cg) && d(b, cb) {
				n++
			}
		}
	}
	return n
}

// TestReportDirInChromium checks the figures of a report already written
// — GRIDBED_REPORT_DIR, a run's or a sweep's results directory — in
// headless Chromium: no text of any figure reaches outside its viewBox.
// Skipped without GRIDBED_REPORT_DIR:
//
//	gridbed sweep examples/churn.yaml --driver sim --seeds 3 --vary overlay.heartbeat.mode=vanilla,compact
//	GRIDBED_REPORT_DIR=$PWD/results/sweep-churn-sim go test ./emulator/report -run TestReportDirInChromium -v
func TestReportDirInChromium(t *testing.T) {
	dir := os.Getenv("GRIDBED_REPORT_DIR")
	if dir == "" {
		t.Skip("GRIDBED_REPORT_DIR names no report to check")
	}
	bin := chromiumBinary(t)
	svgs, _ := filepath.Glob(filepath.Join(dir, "figures", "*.svg"))
	if len(svgs) == 0 {
		t.Fatalf("no figures in %s/figures", dir)
	}
	var names []string
	for _, p := range svgs {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".svg"))
	}
	checkSVGTextInside(t, bin, dir, names)
}
