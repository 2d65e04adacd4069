package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readSweepCSV reads dir's sweep.csv.
func readSweepCSV(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestSweepReplicates: gridbed sweep --seeds 3 --seed 5 runs every grid
// point with seeds 5, 6 and 7, and sweep.csv gives each column's mean and
// 95% confidence interval at full precision — recomputed here by hand from
// the replicates' own summary.json (mean ± t(2) · s / √3, t(2) = 4.303);
// sweep.md gives "mean ± half-width" in fixed notation.
func TestSweepReplicates(t *testing.T) {
	dir := t.TempDir()
	cols := []string{"messages.per_node_per_minute", "overlay.neighbors_mean", "messages.total"}
	code, stdout, stderr := gridbed(t, "sweep", "../../examples/quickstart.yaml", "--driver", "sim", "--out", dir, "--report=false",
		"--set", "peers.count=30", "--set", "duration=2m30s", "--set", "peers.join_window=30s",
		"--vary", "overlay.heartbeat.mode=vanilla,compact", "--seeds", "3", "--seed", "5", "--columns", strings.Join(cols, ","))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "[6/6] overlay.heartbeat.mode=compact seed=7") {
		t.Errorf("progress does not count the 6 runs:\n%s", stderr)
	}
	rows := readSweepCSV(t, dir)
	head := strings.Join(rows[0], ",")
	if head != "overlay.heartbeat.mode,seeds,outcome,"+
		"messages.per_node_per_minute,messages.per_node_per_minute.ci95_lo,messages.per_node_per_minute.ci95_hi,"+
		"overlay.neighbors_mean,overlay.neighbors_mean.ci95_lo,overlay.neighbors_mean.ci95_hi,"+
		"messages.total,messages.total.ci95_lo,messages.total.ci95_hi" || len(rows) != 3 {
		t.Fatalf("sweep.csv:\n%v", rows)
	}
	for i, mode := range []string{"vanilla", "compact"} {
		row := rows[1+i]
		if row[0] != mode || row[1] != "3" || row[2] != "passed" {
			t.Errorf("row %v", row)
		}
		for c, col := range cols {
			var xs []float64
			for _, seed := range []int{5, 6, 7} {
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%02d-overlay.heartbeat.mode=%s", i+1, mode), fmt.Sprintf("seed-%d", seed), "summary.json"))
				if err != nil {
					t.Fatal(err)
				}
				var s map[string]any
				if err := json.Unmarshal(b, &s); err != nil {
					t.Fatal(err)
				}
				if s["seed"] != float64(seed) {
					t.Errorf("%s seed-%d ran with seed %v", mode, seed, s["seed"])
				}
				v := s
				parts := strings.Split(col, ".")
				for _, p := range parts[:len(parts)-1] {
					v = v[p].(map[string]any)
				}
				xs = append(xs, v[parts[len(parts)-1]].(float64))
			}
			mean := (xs[0] + xs[1] + xs[2]) / 3
			ss := 0.0
			for _, x := range xs {
				ss += (x - mean) * (x - mean)
			}
			half := 4.303 * math.Sqrt(ss/2) / math.Sqrt(3)
			got := make([]float64, 3)
			for k := range got {
				cell := row[3+3*c+k]
				var err error
				if got[k], err = strconv.ParseFloat(cell, 64); err != nil {
					t.Fatalf("%s %s: %q is not a number", mode, col, cell)
				}
			}
			want := []float64{mean, mean - half, mean + half}
			for k := range want {
				if math.Abs(got[k]-want[k]) > 1e-9*math.Max(1, math.Abs(want[k])) {
					t.Errorf("%s %s: csv %v, want mean and CI %v (replicates %v)", mode, col, got, want, xs)
				}
			}
			if col == "messages.per_node_per_minute" && (xs[0] == xs[1] && xs[1] == xs[2]) {
				t.Errorf("%s: the three seeds measured the same %v: were they different runs?", mode, xs)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "the mean over 3 seeds (5–7)") || strings.Count(string(md), " ± ") != 7 || strings.Contains(string(md), "e+") {
		t.Errorf("sweep.md:\n%s", md)
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); lines[len(lines)-1] != "outcome: passed — every run passed" {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}

// TestSweepCSVFullPrecision: without replicates sweep.csv holds every
// digit of a figure (sweep.md rounds to four significant digits, never
// with an exponent).
func TestSweepCSVFullPrecision(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := gridbed(t, "sweep", "../../examples/quickstart.yaml", "--driver", "sim", "--out", dir, "--report=false",
		"--set", "peers.count=30", "--set", "duration=2m30s", "--set", "peers.join_window=30s",
		"--vary", "overlay.dimensions=2", "--columns", "bytes.per_node_per_minute")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "01-overlay.dimensions=2", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Bytes struct {
			PerNodePerMinute float64 `json:"per_node_per_minute"`
		} `json:"bytes"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	c, _ := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	lines := strings.Split(strings.TrimSpace(string(c)), "\n")
	cells := strings.Split(lines[1], ",")
	if got, err := strconv.ParseFloat(cells[2], 64); err != nil || got != s.Bytes.PerNodePerMinute {
		t.Errorf("sweep.csv has %q, summary.json %v", cells[2], s.Bytes.PerNodePerMinute)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if strings.Contains(string(md), "e+") || !strings.Contains(string(md), "| 2 | passed | ") {
		t.Errorf("sweep.md:\n%s", md)
	}
}

// TestSweepAllocationColumns: an allocation run's figures (summary.json
// "allocation") are columns a sweep can tabulate.
func TestSweepAllocationColumns(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := gridbed(t, "sweep", "../../examples/papers/004-fig3.yaml", "--driver", "sim", "--out", dir, "--report=false",
		"--vary", "allocation.allocator=greedy,min-num", "--columns", "allocation.makespan_seconds,allocation.relocations")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	c, _ := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	lines := strings.Split(strings.TrimSpace(string(c)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "allocation.makespan_seconds") {
		t.Fatalf("sweep.csv:\n%s", c)
	}
	for _, l := range lines[1:] {
		cells := strings.Split(l, ",")
		if v, err := strconv.ParseFloat(cells[len(cells)-2], 64); err != nil || v <= 0 {
			t.Errorf("sweep.csv row %q: no makespan", l)
		}
	}
}

// TestSweepOnWorkers: gridbed sweep --workers 2 splits every run of the
// grid over two worker processes of its own (this test binary, started
// as `worker`): each point's summary.json has the workers_alive check a
// split run has, with both workers to the end, and its overlay formed;
// --workers with --driver sim is refused before anything runs.
func TestSweepOnWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a sweep over worker processes")
	}
	dir := t.TempDir()
	code, stdout, stderr := gridbed(t, "sweep", "../../examples/quickstart.yaml", "--workers", "2", "--out", dir, "--report=false",
		"--set", "peers.count=40", "--set", "duration=3m", "--set", "peers.join_window=30s", "--set", "time_scale=30",
		"--vary", "overlay.heartbeat.mode=vanilla,compact", "--columns", "workers.count,workers.cpu_seconds_all")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	rows := readSweepCSV(t, dir)
	if len(rows) != 3 || strings.Join(rows[0], ",") != "overlay.heartbeat.mode,outcome,workers.count,workers.cpu_seconds_all" || rows[1][2] != "2" || rows[2][2] != "2" {
		t.Errorf("sweep.csv: want each point's workers.count 2:\n%v", rows)
	}
	for i, mode := range []string{"vanilla", "compact"} {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%02d-overlay.heartbeat.mode=%s", i+1, mode), "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Outcome    string `json:"outcome"`
			Peers      struct{ Final int }
			Invariants struct {
				Checks []struct {
					Name   string `json:"name"`
					OK     bool   `json:"ok"`
					Detail string `json:"detail"`
				} `json:"checks"`
			} `json:"invariants"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		split := false
		for _, c := range s.Invariants.Checks {
			if c.Name == "workers_alive" {
				split = c.OK && strings.Contains(c.Detail, "all 2 workers")
			}
		}
		if !split || s.Peers.Final != 40 || s.Outcome == "failed" {
			t.Errorf("%s: outcome %s, %d of 40 peers, checks %+v: want a run split over 2 workers, every peer a member", mode, s.Outcome, s.Peers.Final, s.Invariants.Checks)
		}
	}
	code, _, stderr = gridbed(t, "sweep", "../../examples/quickstart.yaml", "--workers", "2", "--driver", "sim", "--out", t.TempDir()+"/sim", "--vary", "overlay.heartbeat.mode=vanilla,compact")
	if code != 2 || !strings.Contains(stderr, "drop --driver sim") {
		t.Errorf("--workers with --driver sim: exit %d, %s", code, stderr)
	}
}
