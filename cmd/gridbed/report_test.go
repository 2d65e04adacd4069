package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readReport checks that stdout names dir's report.html and returns it.
func readReport(t *testing.T, stdout, dir string) string {
	t.Helper()
	if !strings.Contains(stdout, "report: "+filepath.Join(dir, "report.html")) {
		t.Errorf("stdout does not name the report:\n%s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunWritesReport: gridbed run writes report.html and its figures
// next to the results, and --report=false writes neither.
func TestRunWritesReport(t *testing.T) {
	args := []string{"run", "../../examples/quickstart.yaml", "--driver", "sim", "--metrics-addr", "off", "--set", "peers.count=40", "--set", "duration=3m"}
	dir := t.TempDir()
	code, stdout, stderr := gridbed(t, append(args, "--out", dir)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	html := readReport(t, stdout, dir)
	for _, f := range []string{"figures/messages_per_node.svg", "figures/overlay.svg"} {
		if !strings.Contains(html, f) {
			t.Errorf("report.html does not show %s", f)
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

	off := t.TempDir()
	if code, _, stderr := gridbed(t, append(args, "--out", off, "--report=false")...); code != 0 {
		t.Fatalf("--report=false: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"report.html", "figures"} {
		if _, err := os.Stat(filepath.Join(off, f)); err == nil {
			t.Errorf("--report=false wrote %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(off, "summary.json")); err != nil {
		t.Error(err)
	}
}

// TestSweepWritesReport: gridbed sweep writes one comparison report that
// links every grid point's own report.
func TestSweepWritesReport(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := gridbed(t, "sweep", "../../examples/quickstart.yaml", "--driver", "sim", "--out", dir,
		"--set", "peers.count=30", "--set", "duration=3m", "--vary", "overlay.heartbeat.mode=vanilla,compact,adaptive")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	html := readReport(t, stdout, dir)
	for i, mode := range []string{"vanilla", "compact", "adaptive"} {
		sub := filepath.Join(dir, fmt.Sprintf("%02d-overlay.heartbeat.mode=%s", i+1, mode))
		if _, err := os.Stat(filepath.Join(sub, "report.html")); err != nil {
			t.Errorf("grid point %s has no report: %v", mode, err)
		}
		if !strings.Contains(html, `href="`+filepath.Base(sub)+`/report.html"`) {
			t.Errorf("the sweep report does not link grid point %s", mode)
		}
	}
	if !strings.Contains(html, "figures/col_messages_per_node_per_minute.svg") {
		t.Error("the sweep report has no messages per node per minute figure")
	}
}
