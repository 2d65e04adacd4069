package emulator_test

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/staleness"
	"github.com/gridbed/gridbed/metrics"
)

// staleScenario is 40 peers whose 40 jobs run far longer than the run
// (T = 100 h): once every job is placed (by about 6 minutes) the load
// stays as it is. extra adds keys (churn).
func staleScenario(t *testing.T, seed uint64, extra string) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "stale.yaml", `
seed: %d
duration: 1h
peers: {count: 40, population: mixed, join_window: 1m}
overlay: {dimensions: 3}
workload: {jobs: 40, interarrival: 5s, runtime: 100h, start: 2m}
matchmaking: {scheme: can-p}
%s`, seed, extra)
}

// stat is the sample's figure of one aggregate.
func stat(s emulator.Sample, name string) (staleness.Stat, bool) {
	for _, st := range s.Staleness {
		if st.Name == name {
			return st, true
		}
	}
	return staleness.Stat{}, false
}

// convergedTolerance bounds the errors of converged peers: the AI_d rides
// on heartbeats as float32 (wire.AggLoad), rounded to a relative 2^-24 ≈
// 6e-8 at each hop of the recursion, so a chain of k upper neighbors is off
// by at most about k × 6e-8 (and a core utilization, the ratio of two such
// figures, twice that); 1e-6 leaves room for chains of 8 hops and more,
// deeper than 40 peers in 3+1 dimensions stack.
const convergedTolerance = 1e-6

// With no churn and a stable load, the truth recursion equals what the
// peers hold once their heartbeats have carried the load up every chain of
// upper neighbors: every error is float32 rounding from 30 minutes on —
// with single-core nodes (003's queue sizes), multi-core nodes (002
// §3.1.4's cores and required cores: a cores dimension) and the Balloon
// model (TNC(u) with the Balloons attached, 002 Eq 3.1).
func TestStaleAggregationConvergesWithoutChurn(t *testing.T) {
	emutest.SkipUnderRace(t, "single-threaded simulator runs")
	for _, c := range []struct {
		name string
		set  []string
	}{
		{"single-core", nil},
		{"multi-core", []string{"overlay.dimensions=4"}},
		{"balloons", []string{"overlay.dimensions=4", "matchmaking.residue=balloon"}},
		// Categorical resources (002 §5.1): the ACIDs too are exact once
		// every heartbeat has carried them up (bits: no rounding).
		{"categorical", categoricalKeys},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := staleScenario(t, 5, "")
			if err := sc.SetAll(c.set...); err != nil {
				t.Fatal(err)
			}
			converges(t, sc)
		})
	}
}

// categoricalKeys give the peers 002 §5.2.1's categorical resources —
// four types of two values, 16 combinations — with CID pushing.
var categoricalKeys = []string{"peers.categorical.types=4", "peers.categorical.values=2", "matchmaking.categorical=cid"}

// converges runs sc on the deterministic driver and asserts that every
// error is within convergedTolerance from 30 minutes on.
func converges(t *testing.T, sc scenario.Scenario) {
	t.Helper()
	res := emutest.Run(t, sc, emulator.DriverSim)
	cat := sc.Peers.Categorical.On()
	settled := 0
	for _, s := range res.Series {
		if s.T < 30*time.Minute {
			continue
		}
		if s.JobQueue == 0 {
			t.Fatalf("seed %d: no job queued or running at %v: the load is not stable and non-trivial", sc.Seed, s.T)
		}
		for _, name := range staleness.Names(cat) {
			st, ok := stat(s, name)
			if !ok || st.N == 0 {
				t.Fatalf("seed %d: no %s error at %v", sc.Seed, name, s.T)
			}
			if st.Mean > convergedTolerance || st.P90 > convergedTolerance {
				t.Errorf("seed %d: at %v the %s error is mean %g, p90 %g: converged peers should hold the truth (tolerance %g)", sc.Seed, s.T, name, st.Mean, st.P90, convergedTolerance)
			}
		}
		settled++
	}
	if settled < 10 {
		t.Fatalf("seed %d: only %d samples after settling", sc.Seed, settled)
	}
	// timeseries.csv carries the per-sample figures.
	var csv strings.Builder
	if err := res.WriteSeries(&csv); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	head, last := strings.Split(lines[0], ","), strings.Split(lines[len(lines)-1], ",")
	for _, col := range []string{"aggregate_error_nodes_mean", "aggregate_error_queue_p90", "aggregate_error_core_utilization_mean", "aggregate_error_acid_mean"} {
		i := slices.Index(head, col)
		if col == "aggregate_error_acid_mean" && !cat {
			if i >= 0 {
				t.Errorf("timeseries.csv: column %s without categorical resources", col)
			}
			continue
		}
		if i < 0 || i >= len(last) || last[i] == "" {
			t.Errorf("timeseries.csv: column %s missing or empty in the last row (%d columns)", col, len(head))
		}
	}
	st := res.Summary.Staleness
	if st == nil || st.Samples == 0 || st.NodesError.Mean == nil || st.LoadError.P90 == nil || st.CoreUtilizationError.Mean == nil {
		t.Fatalf("seed %d: summary staleness %+v", sc.Seed, st)
	}
	if got := st.ACIDWrongFraction; cat != (got != nil) {
		t.Errorf("seed %d: staleness.acid_wrong_fraction %v with categorical resources %v", sc.Seed, got, cat)
	}
}

// With churn the peers' aggregates lag behind the overlay's changes: some
// sample shows the number of nodes wrong by far more than rounding and,
// with categorical resources, some ACID wrong (a combination that left
// still held, or one that joined not yet heard of).
func TestStaleAggregationUnderChurn(t *testing.T) {
	sc := staleScenario(t, 5, "churn: {interval: 2m, start: 10m}")
	if err := sc.SetAll(categoricalKeys...); err != nil {
		t.Fatal(err)
	}
	res := emutest.Run(t, sc, emulator.DriverSim)
	worst, acid := 0.0, 0.0
	for _, s := range res.Series {
		if st, ok := stat(s, "nodes"); ok && s.T >= 10*time.Minute {
			worst = max(worst, st.Mean)
		}
		if st, ok := stat(s, "acid"); ok && s.T >= 10*time.Minute {
			acid = max(acid, st.Mean)
		}
	}
	if worst <= 1e-3 {
		t.Errorf("seed %d: with churn the nodes error's mean never exceeded 1e-3 (max %g): churn went unseen", sc.Seed, worst)
	}
	if acid == 0 {
		t.Errorf("seed %d: with churn no sample had a wrong ACID: churn went unseen", sc.Seed)
	}
	if c := res.Summary.Churn; c.Joins+c.Leaves+c.Failures == 0 {
		t.Fatalf("seed %d: no churn happened: %+v", sc.Seed, c)
	}
}

// readGauges reads every gridbed_aggregate_error_ratio series from a
// /metrics page.
func readGauges(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "gridbed_aggregate_error_ratio{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, err
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// On the emulator driver with churn, the staleness gauges move on /metrics
// while the run goes on: a scraper on a ticker sees gridbed_aggregate_error_ratio
// take at least two different non-zero values before the run ends.
func TestStaleAggregationLiveGauges(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a live run over NATS scraped while it runs")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	cores.Hold(t, cores.Live)
	sc := staleScenario(t, 7, "churn: {interval: 1m, start: 5m}")
	// Built in-process before the bus opens, as examples/scheduling-nats.yaml.
	if err := sc.SetAll("time_scale=300", "peers.count=30", "peers.join_window=30s", "peers.bootstrap=direct", "emulator.lag_tolerance=0.1"); err != nil {
		t.Fatal(err)
	}
	m := metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverLive})
	srv, err := metrics.Serve("127.0.0.1:0", m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := "http://" + srv.Addr() + "/metrics"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type outcome struct {
		res *emulator.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverLive, Metrics: m})
		done <- outcome{res, err}
	}()
	const series = `gridbed_aggregate_error_ratio{aggregate="nodes",stat="mean"}`
	seen := map[float64]bool{}
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var out outcome
	running := true
	for running {
		select {
		case out = <-done:
			running = false
		case <-deadline.C:
			t.Fatalf("seed %d: the run did not end within 90 s", sc.Seed)
		case <-tick.C:
			g, err := readGauges(url)
			if err != nil {
				t.Fatalf("seed %d: scraping %s: %v", sc.Seed, url, err)
			}
			if v, ok := g[series]; ok && v > 0 {
				seen[v] = true
			}
		}
	}
	if out.err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, out.err)
	}
	emutest.Live(t, out.res.Summary)
	if len(seen) < 2 {
		t.Errorf("seed %d: %s took %d non-zero values while the run went on (%v); want at least 2", sc.Seed, series, len(seen), seen)
	}
	if c := out.res.Summary.Churn; c.Joins+c.Leaves+c.Failures == 0 {
		t.Errorf("seed %d: no churn happened", sc.Seed)
	}
	if out.res.Summary.Staleness == nil {
		t.Errorf("seed %d: no staleness block in the summary", sc.Seed)
	}
}
