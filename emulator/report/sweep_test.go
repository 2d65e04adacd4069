package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/sweep"
)

// runGrid runs every point of the grid over base (YAML) on the
// deterministic driver, once per seed (none: the scenario's seed), writes
// each run's results and report the way gridbed sweep does, and returns
// the filled Sweep.
func runGrid(t *testing.T, dir, base string, axes []sweep.Axis, cols []string, seeds ...uint64) *Sweep {
	t.Helper()
	s := &Sweep{Name: "test", File: "test.yaml", Axes: axes, Columns: cols, Seeds: seeds}
	for i, p := range sweep.Grid(axes) {
		sc := emutest.Parse(t, "test", base)
		if err := sc.SetAll(p.Assignments(axes)...); err != nil {
			t.Fatal(err)
		}
		runSeeds := seeds
		if len(runSeeds) == 0 {
			runSeeds = []uint64{sc.Seed}
		}
		values := make([][]any, len(cols))
		var first *emulator.Result
		firstDir := ""
		for _, seed := range runSeeds {
			sc.Seed = seed
			res, err := emulator.Run(t.Context(), sc, emulator.Options{Driver: emulator.DriverSim})
			if err != nil {
				t.Fatalf("%v (seed %d): %v", p, sc.Seed, err)
			}
			if err := res.CheckJobs(); err != nil {
				t.Fatalf("%v (seed %d): %v", p, sc.Seed, err)
			}
			sub := fmt.Sprintf("%02d-%s", i+1, p.Name(axes))
			if len(seeds) > 1 {
				sub = filepath.Join(sub, fmt.Sprintf("seed-%d", seed))
			}
			writeReport(t, filepath.Join(dir, sub), res)
			for c, col := range cols {
				v, ok := sweep.Value(res.Summary, col)
				if !ok {
					v = "?"
				}
				values[c] = append(values[c], v)
			}
			if first == nil {
				first, firstDir = res, sub
			}
		}
		stats := make([]sweep.Stat, len(cols))
		for c := range cols {
			stats[c] = sweep.Aggregate(values[c])
		}
		s.Add(p, firstDir, first, stats)
	}
	return s
}

// TestSweepReportLines: a heartbeat mode × dimensions grid (002 Fig
// 4.7's) draws a line per mode along the dimensions for every column with
// numbers, omits the columns without, shows every grid point in the table
// linked to its own report, and overlays the broken links.
func TestSweepReportLines(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	axes := []sweep.Axis{{Key: "overlay.heartbeat.mode", Values: []string{"vanilla", "compact"}}, {Key: "overlay.dimensions", Values: []string{"2", "3"}}}
	cols := []string{"messages.per_node_per_minute", "bytes.per_node_per_minute", "overlay.broken_links.max", "overlay.zone_overlaps", "no.such.key"}
	s := runGrid(t, dir, overlayYAML, axes, cols)
	page, err := s.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	html := checkPage(t, dir, page)
	names := figureNames(page)
	for _, want := range []string{"col_messages_per_node_per_minute", "col_bytes_per_node_per_minute"} {
		if !slices.Contains(names, want) {
			t.Errorf("figures %v lack %s", names, want)
		}
	}
	reasons := map[string]string{} // by column
	for _, o := range page.Omitted {
		for _, c := range cols {
			if sweep.Describe(c).Title == o.Title {
				reasons[c] = o.Reason
			}
		}
	}
	if !strings.HasPrefix(reasons["no.such.key"], "no grid point has a number for no.such.key") {
		t.Errorf("no.such.key: omitted %q", reasons["no.such.key"])
	}
	// Each figure drawn or omitted for a reason that matches the data.
	for i, col := range cols[2:4] {
		zero := true
		for _, p := range s.points {
			zero = zero && p.stats[2+i].Numeric() && p.stats[2+i].Mean == 0
		}
		if drawn := slices.Contains(names, "col_"+strings.ReplaceAll(col, ".", "_")); drawn == zero || zero != (reasons[col] == col+" is 0 at every grid point") {
			t.Errorf("%s: zero at every point %v, drawn %v, omitted %q", col, zero, drawn, reasons[col])
		}
	}
	broken := false
	for _, p := range s.points {
		broken = broken || !allZero(p.broken)
	}
	if broken != slices.Contains(names, "broken_links") {
		t.Errorf("broken links at some sample: %v; figures %v", broken, names)
	}
	if slices.Contains(names, "wait_cdf") {
		t.Error("a wait CDF without a workload")
	}
	// Lines along the numeric axis, one per mode.
	svg, err := os.ReadFile(filepath.Join(dir, FigureDir, "col_messages_per_node_per_minute.svg"))
	if err != nil {
		t.Fatal(err)
	}
	// Titled and labelled by the column's description with its unit,
	// not its summary.json path.
	// The x axis in words; the y label, longer than the panel is high,
	// on two lines.
	for _, want := range []string{">mode=vanilla<", ">mode=compact<", ">Resource dimensions<",
		">Messages per node per minute<", ">(messages / node / min)<"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("column figure lacks %q", want)
		}
	}
	if bytes.Contains(svg, []byte(">messages.per_node_per_minute<")) {
		t.Error("the column figure is labelled with the raw summary.json path")
	}
	// The table: every grid point, linked to its report.
	for i, p := range sweep.Grid(axes) {
		link := fmt.Sprintf(`href="%02d-%s/report.html"`, i+1, p.Name(axes))
		if !strings.Contains(html, link) {
			t.Errorf("report.html does not link grid point %v (%s)", p, link)
		}
	}
	if n := strings.Count(html, "<tr>"); n != 1+len(s.points) {
		t.Errorf("grid table has %d rows, want a header and %d points", n, len(s.points))
	}
}

// TestSweepReportBarsAndWaitCDF: a matchmaking scheme axis (not numeric)
// draws grouped bars by scheme, and the wait CDF of every grid point.
func TestSweepReportBarsAndWaitCDF(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	axes := []sweep.Axis{{Key: "matchmaking.scheme", Values: []string{"can", "cent"}}}
	cols := []string{"jobs.completed", "jobs.wait_seconds.mean"}
	s := runGrid(t, dir, `
name: sweep-jobs
seed: 4
duration: 15m
peers: {count: 30}
overlay: {dimensions: 2}
workload: {jobs: 40, interarrival: 5s, runtime: 3m}
`, axes, cols)
	page, err := s.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, dir, page)
	names := figureNames(page)
	if !slices.Contains(names, "col_jobs_completed") || !slices.Contains(names, "wait_cdf") {
		t.Fatalf("figures %v (omitted %v)", names, page.Omitted)
	}
	bars, _ := os.ReadFile(filepath.Join(dir, FigureDir, "col_jobs_completed.svg"))
	cdf, _ := os.ReadFile(filepath.Join(dir, FigureDir, "wait_cdf.svg"))
	for _, v := range axes[0].Values {
		if !bytes.Contains(bars, []byte(">"+v+"<")) {
			t.Errorf("bar figure lacks the category %q", v)
		}
		if !bytes.Contains(cdf, []byte(">scheme="+v+"<")) {
			t.Errorf("wait CDF lacks the grid point scheme=%s", v)
		}
	}
}

// TestXAxis: column figures run along the last numeric axis (numbers or
// durations), else along the first axis as bars.
func TestXAxis(t *testing.T) {
	ax := func(k string, vs ...string) sweep.Axis { return sweep.Axis{Key: k, Values: vs} }
	for _, c := range []struct {
		axes    []sweep.Axis
		x       int
		numeric bool
	}{
		{[]sweep.Axis{ax("overlay.heartbeat.mode", "vanilla", "compact"), ax("overlay.dimensions", "2", "4")}, 1, true},
		{[]sweep.Axis{ax("workload.interarrival", "2s", "1m"), ax("scheduling.mode", "l", "li-pull")}, 0, true},
		{[]sweep.Axis{ax("scheduling.mode", "l", "li-pull"), ax("peers.count", "100")}, 0, false},
		{[]sweep.Axis{ax("peers.count", "100", "200"), ax("overlay.dimensions", "2", "3")}, 1, true},
	} {
		s := &Sweep{Axes: c.axes}
		if x, num := s.xAxis(); x != c.x || num != c.numeric {
			t.Errorf("%v: axis %d numeric %v, want %d %v", c.axes, x, num, c.x, c.numeric)
		}
	}
	if got := shortKeys([]sweep.Axis{ax("overlay.heartbeat.mode"), ax("scheduling.mode"), ax("overlay.dimensions")}); !slices.Equal(got, []string{"overlay.heartbeat.mode", "scheduling.mode", "dimensions"}) {
		t.Errorf("shortKeys: %v", got)
	}
}

// TestSweepErrorBars: with replicates a column figure draws the 95%
// confidence interval of every grid point's mean as error bars — along a
// numeric axis (lines) and by category (grouped bars) — so the figure's
// y range reaches the intervals' tops; one run per point draws none.
func TestSweepErrorBars(t *testing.T) {
	for _, axis := range []sweep.Axis{
		{Key: "overlay.dimensions", Values: []string{"2", "3"}},
		{Key: "overlay.heartbeat.mode", Values: []string{"vanilla", "compact"}},
	} {
		s := &Sweep{Axes: []sweep.Axis{axis}, Columns: []string{"messages.per_node_per_minute"}}
		top := 0.0
		for i, v := range axis.Values {
			st := sweep.Aggregate([]any{10.0 + float64(i), 12.0 + float64(i), 14.0 + float64(i)})
			top = max(top, st.Hi)
			s.points = append(s.points, point{values: []string{v}, stats: []sweep.Stat{st}, driver: "sim"})
		}
		for _, seeds := range [][]uint64{{1, 2, 3}, nil} {
			s.Seeds = seeds
			f, o := s.columnFigure(0, "messages.per_node_per_minute")
			if f == nil {
				t.Fatalf("%s: omitted: %v", axis.Key, o)
			}
			p := f.panels[0]
			bars := p.Y.Max >= top-1e-9
			if bars != (seeds != nil) {
				t.Errorf("%s, seeds %v: y axis up to %g, the highest interval's top %g: error bars drawn %v", axis.Key, seeds, p.Y.Max, top, bars)
			}
			if p.Title.Text != "Messages per node per minute" || p.Y.Label.Text != "Messages per node per minute\n(messages / node / min)" {
				t.Errorf("%s: title %q, y label %q", axis.Key, p.Title.Text, p.Y.Label.Text)
			}
			if seeds != nil && !strings.Contains(f.Caption, "95% confidence interval") {
				t.Errorf("%s: caption %q does not say what the error bars are", axis.Key, f.Caption)
			}
		}
		dir := t.TempDir()
		s.Seeds = []uint64{1, 2, 3}
		if _, err := s.Write(dir); err != nil {
			t.Fatalf("%s: %v", axis.Key, err)
		}
	}
}
