package report

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRunReportAllocation: a 004 Fig 2 run (synthetic grid, S_3's owner
// load to 0.95 at 1500 s) with allocation.sample writes allocation.csv —
// one column per machine, one row per sample — and draws the jobs per
// machine; without allocation.sample the figure is omitted with the key
// to set.
func TestRunReportAllocation(t *testing.T) {
	const yaml = `
name: fig2-report
seed: 1
duration: 100h
allocation: {grid: synthetic, jobset: 1, allocator: greedy, relocator: same, spikes: fig2, sample: 500s}
`
	res := simRun(t, yaml)
	if res.Allocation == nil || len(res.Allocation.Jobs) < 10 {
		t.Fatalf("seed 1: allocation series %+v", res.Allocation)
	}
	dir := t.TempDir()
	page := writeReport(t, dir, res)
	if !slices.Contains(figureNames(page), "allocation_jobs") {
		t.Fatalf("seed 1: figures %v, want allocation_jobs", figureNames(page))
	}
	f, err := os.Open(filepath.Join(dir, "allocation.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(res.Allocation.Jobs) || len(rows[0]) != 5 || rows[0][4] != "jobs_m3" || rows[3][0] != "1500" {
		t.Fatalf("seed 1: allocation.csv has %d rows (want 1 + %d), header %v, third sample at %v s (want 1500)", len(rows), len(res.Allocation.Jobs), rows[0], rows[3][0])
	}
	checkPage(t, dir, page)

	res = simRun(t, yaml[:len(yaml)-len(", sample: 500s}\n")]+"}\n")
	page = writeReport(t, t.TempDir(), res)
	if slices.Contains(figureNames(page), "allocation_jobs") || !slices.ContainsFunc(page.Omitted, func(o Omitted) bool { return o.Title == "Jobs per machine over time" }) {
		t.Fatalf("seed 1 without allocation.sample: figures %v, omitted %v", figureNames(page), page.Omitted)
	}
}
