package report

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/sweep"
)

// chromiumBinary finds a Chromium: $GRIDBED_CHROMIUM, chromium on PATH,
// then the launcher emulator/report/install-chromium.sh puts in the
// user's cache directory. Without one the test is skipped, except under
// CI=true, where it fails.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GRIDBED_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("GRIDBED_CHROMIUM=%s is not an executable: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if dir, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(dir, "gridbed", "chromium", "chromium")
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	msg := "no Chromium: run emulator/report/install-chromium.sh, put chromium on PATH or set GRIDBED_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: the report must be checked in a real browser)")
	}
	t.Skip(msg)
	return ""
}

// chromium runs headless Chromium on a local page with args, within a
// deadline, and returns its standard output. --no-sandbox: the page is
// our own file, and the sandbox needs privileges a test may not have.
func chromium(t *testing.T, bin, page string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+abs)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
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
		s := &Sweep{Axes: []sweep.Axis{axis}, Columns: []string{"messages.per_node_per_minute"}, Seeds: []uint64{1, 2, 3}}
		for i, v := range axis.Values {
			st := sweep.Aggregate([]any{10.0 + float64(i), 12.0 + float64(i), 14.0 + float64(i)})
			s.points = append(s.points, point{values: []string{v}, stats: []sweep.Stat{st}, driver: "sim"})
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
