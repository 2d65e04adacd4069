package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const waveYAML = `
name: wave-report
seed: 3
duration: 72h
peers:
  count: 60
  bootstrap: direct
overlay:
  dimensions: 1
  heartbeat:
    period: 10m
oracle:
  interval: 1h
clock:
  start: 6h
wave:
  strategy: wave-adaptive
  engine: actors
  day_free: 0.15
  runtime_min: 6h
  runtime_max: 12h
  migration_bytes: 1024
`

// TestRunReportWave: a Wave run with its peers on the bus draws the
// availability over the day and the jobs by wavezone.
func TestRunReportWave(t *testing.T) {
	skipShort(t)
	res := simRun(t, waveYAML)
	dir := t.TempDir()
	page := writeReport(t, dir, res)
	names := figureNames(page)
	for _, want := range []string{"wave_availability", "wave_wavezones"} {
		if !slices.Contains(names, want) {
			t.Fatalf("seed %d: figures %v lack %s (omitted %v)", res.Summary.Seed, names, want, page.Omitted)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, FigureDir, "wave_availability.svg"))
	if !bytes.Contains(svg, []byte("wavezone 5")) {
		t.Errorf("seed %d: wave_availability.svg has no line for wavezone 5", res.Summary.Seed)
	}
	checkSVG(t, filepath.Join(dir, FigureDir, "wave_wavezones.svg"))
	// A run without the Wave scheduler lists neither figure as omitted.
	for _, o := range writeReport(t, t.TempDir(), simRun(t, overlayYAML)).Omitted {
		if o.Title == "Host availability over the day" || o.Title == "Jobs by wavezone over time" {
			t.Errorf("a run without the Wave scheduler omits %q", o.Title)
		}
	}
}
