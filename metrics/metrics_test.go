package metrics

import (
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/gridbed/gridbed/actors/wire"
)

func TestRegistryNamesAndLint(t *testing.T) {
	r := NewRun(RunInfo{Driver: "sim", Mode: "vanilla", Population: "mixed", Scenario: "lint", Seed: 1})
	r.Traffic.Sent(wire.MsgType_MSG_HEARTBEAT, 100, 3)
	r.ObserveLag(0.002)
	r.SetEvents(map[string]uint64{"join_owned": 3})
	r.SetBus(func() BusStats { return BusStats{Published: 5, Dropped: 1} })
	j := r.EnableJobs([]string{"queued", "completed"})
	j.Wait.WithLabelValues("can-p").Observe(12)
	j.MatchHops.WithLabelValues("can-p").Observe(3)
	r.EnableAggregateErrors([]string{"nodes", "queue", "core_utilization"}).WithLabelValues("nodes", "mean").Set(0.1)
	w := r.EnableWave()
	w.Jobs.WithLabelValues("wave-adaptive", "completed").Set(3)
	w.Slowdown.WithLabelValues("wave-adaptive").Observe(1.2)
	w.Migrations.WithLabelValues("wave-adaptive").Add(2)
	w.Messages.WithLabelValues("wave_probe").Add(5)
	mfs, err := r.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, mf := range mfs {
		n := mf.GetName()
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") {
			continue
		}
		if !strings.HasPrefix(n, "gridbed_") {
			t.Errorf("metric %q lacks the gridbed_ prefix", n)
		}
		ours = append(ours, n)
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "peer" || l.GetName() == "id" {
					t.Errorf("metric %s has a per-peer label %q", n, l.GetName())
				}
			}
		}
	}
	for _, want := range []string{
		"gridbed_messages_total", "gridbed_message_bytes_total", "gridbed_message_node_entries_total", "gridbed_peers", "gridbed_overlay_broken_links",
		"gridbed_clock_lag_seconds", "gridbed_bus_dropped_messages_total", "gridbed_run_info", "gridbed_overlay_events_total",
		"gridbed_job_wait_seconds", "gridbed_job_matchmaking_hops", "gridbed_job_events_total", "gridbed_jobs",
		"gridbed_aggregate_error_ratio",
		"gridbed_wave_jobs", "gridbed_wave_slowdown_ratio", "gridbed_wave_migrations_total", "gridbed_wave_messages_total",
	} {
		if !slices.Contains(ours, want) {
			t.Errorf("registry lacks %s (has %v)", want, ours)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "gridbed_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestTrafficSnapshotSub(t *testing.T) {
	tr := NewTraffic()
	tr.Sent(wire.MsgType_MSG_HEARTBEAT, 10, 1)
	a := tr.Snapshot()
	tr.Sent(wire.MsgType_MSG_HEARTBEAT, 20, 4)
	tr.Sent(wire.MsgType_MSG_JOIN, 5, 0)
	d := tr.Snapshot().Sub(a)
	if d.Count[wire.MsgType_MSG_HEARTBEAT] != 1 || d.Bytes[wire.MsgType_MSG_HEARTBEAT] != 20 || d.Entries[wire.MsgType_MSG_HEARTBEAT] != 4 || d.Count[wire.MsgType_MSG_JOIN] != 1 || d.TotalEntries() != 4 {
		t.Fatalf("difference %+v", d)
	}
	if m, b := d.Total(); m != 2 || b != 25 {
		t.Fatalf("total %d msgs %d bytes, want 2 and 25", m, b)
	}
}

func TestQuantilesWithinBucketError(t *testing.T) {
	seed := uint64(5)
	r := rand.New(rand.NewPCG(seed, 0))
	q := NewQuantiles()
	vals := make([]float64, 10000)
	for i := range vals {
		vals[i] = math.Exp(r.NormFloat64()*2 - 6) // log-normal around 2.5 ms
		q.Observe(vals[i])
	}
	slices.Sort(vals)
	for _, p := range []float64{0.5, 0.9, 0.99} {
		exact := vals[int(math.Ceil(p*float64(len(vals))))-1]
		got := q.Quantile(p)
		if math.Abs(got-exact)/exact > 0.05 {
			t.Errorf("seed %d: p%.0f = %g, exact %g: more than 5%% off", seed, p*100, got, exact)
		}
	}
	if q.Count() != 10000 || q.Max() != vals[len(vals)-1] {
		t.Errorf("count %d max %g", q.Count(), q.Max())
	}
	empty := NewQuantiles()
	if empty.Quantile(0.99) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram must report 0")
	}
}

func TestServerServesMetricsAndPprofOnlyWhenAsked(t *testing.T) {
	r := NewRun(RunInfo{Driver: "emulator", Mode: "vanilla", Population: "mixed"})
	r.Peers.Set(42)
	get := func(srv *Server, path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	metricsOnly, err := Serve("127.0.0.1:0", r.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer metricsOnly.Close()
	if code, body := get(metricsOnly, "/metrics"); code != http.StatusOK || !strings.Contains(body, "gridbed_peers 42") {
		t.Fatalf("/metrics: status %d, lacks gridbed_peers 42:\n%.500s", code, body)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := get(metricsOnly, path); code != http.StatusNotFound {
			t.Errorf("%s on the metrics listener: status %d, want 404 (the profiler is served only when asked)", path, code)
		}
	}
	both, err := ServeProfiler("127.0.0.1:0", r.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer both.Close()
	if code, body := get(both, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/: status %d, does not list profiles", code)
	}
	if code, body := get(both, "/metrics"); code != http.StatusOK || !strings.Contains(body, "gridbed_peers 42") {
		t.Fatalf("/metrics beside the profiler: status %d", code)
	}
}

// runInfoSeries returns the label sets of gridbed_run_info in r's registry.
func runInfoSeries(t *testing.T, r *Run) []map[string]string {
	t.Helper()
	mfs, err := r.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != "gridbed_run_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			if m.GetGauge().GetValue() != 1 {
				t.Errorf("gridbed_run_info %v = %g, want 1", ls, m.GetGauge().GetValue())
			}
			out = append(out, ls)
		}
	}
	return out
}

// gridbed_run_info carries scenario, seed, driver and run_id, one series
// per run: given at NewRun it is there from the start and Identify changes
// nothing; without a scenario it waits for Identify.
func TestRunInfo(t *testing.T) {
	runID := regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{6}$`)
	for _, tc := range []struct {
		name     string
		info     RunInfo
		before   int               // series before Identify
		identify [2]string         // scenario, seed given to Identify ("" seed: not called)
		want     map[string]string // labels after
	}{
		{"named at NewRun", RunInfo{Driver: "sim", Mode: "compact", Population: "mixed", Scenario: "churn", Seed: 7, RunID: "r1"}, 1,
			[2]string{"other", "9"}, map[string]string{"scenario": "churn", "seed": "7", "driver": "sim", "run_id": "r1", "mode": "compact", "population": "mixed"}},
		{"named by Identify", RunInfo{Driver: "emulator", Mode: "vanilla", Population: "uniform"}, 0,
			[2]string{"chaos", "3"}, map[string]string{"scenario": "chaos", "seed": "3", "driver": "emulator", "mode": "vanilla", "population": "uniform"}},
		{"never named", RunInfo{Driver: "sim"}, 0, [2]string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRun(tc.info)
			if got := runInfoSeries(t, r); len(got) != tc.before {
				t.Fatalf("before Identify: %d series %v, want %d", len(got), got, tc.before)
			}
			if tc.identify[1] != "" {
				seed, _ := strconv.ParseUint(tc.identify[1], 10, 64)
				r.Identify(tc.identify[0], seed)
			}
			got := runInfoSeries(t, r)
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("never identified, yet exported %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one series, have %v", got)
			}
			id := got[0]["run_id"]
			if tc.info.RunID == "" && !runID.MatchString(id) {
				t.Errorf("drawn run_id %q, want like 20261126T080609Z-3f2a9c", id)
			}
			if r.Info().RunID != id {
				t.Errorf("Info().RunID %q, series has %q", r.Info().RunID, id)
			}
			want := maps.Clone(tc.want)
			if want["run_id"] == "" {
				want["run_id"] = id
			}
			if !maps.Equal(got[0], want) {
				t.Errorf("labels %v, want %v", got[0], want)
			}
		})
	}
	if a, b := NewRun(RunInfo{}).Info().RunID, NewRun(RunInfo{}).Info().RunID; a == b {
		t.Errorf("two runs drew the same run_id %q", a)
	}
}

// TestPeersElsewhereLeavesTrafficOut: a coordinator's registry
// (PeersElsewhere) exports no traffic of its own — its workers do — while
// the counters still hold what the summary needs.
func TestPeersElsewhereLeavesTrafficOut(t *testing.T) {
	r := NewRun(RunInfo{Driver: "emulator"})
	r.Traffic.Add(TrafficSnapshot{Count: []uint64{0, 5}, Bytes: []uint64{0, 500}, Entries: []uint64{0, 10}})
	count := func() float64 {
		mfs, err := r.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, mf := range mfs {
			if mf.GetName() == "gridbed_messages_total" {
				for _, m := range mf.GetMetric() {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return n
	}
	if got := count(); got != 5 {
		t.Fatalf("gridbed_messages_total = %v before PeersElsewhere, want 5", got)
	}
	r.PeersElsewhere()
	if got := count(); got != 0 {
		t.Errorf("gridbed_messages_total = %v with PeersElsewhere, want 0 (the workers export it)", got)
	}
	if msgs, _ := r.Traffic.Snapshot().Total(); msgs != 5 {
		t.Errorf("Traffic holds %d messages, want 5", msgs)
	}
}

// TestMailboxWaitingByType: the messages waiting in mailboxes are a gauge
// by message type, read when scraped, one series per type that has some
// waiting (never a peer label); promlint finds nothing to say.
func TestMailboxWaitingByType(t *testing.T) {
	r := NewRun(RunInfo{Driver: "emulator"})
	waiting := map[string]int64{"zone_update": 59038, "heartbeat": 20}
	r.SetWaiting(func() map[string]int64 { return waiting })
	mfs, err := r.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gridbed_mailbox_waiting_messages" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if ls := m.GetLabel(); len(ls) != 1 || ls[0].GetName() != "type" {
				t.Fatalf("labels %v, want type alone", ls)
			}
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if len(got) != 2 || got["zone_update"] != 59038 || got["heartbeat"] != 20 {
		t.Errorf("gridbed_mailbox_waiting_messages = %v, want zone_update 59038 and heartbeat 20", got)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.Metric == "gridbed_mailbox_waiting_messages" {
			t.Errorf("promlint: %s", p.Text)
		}
	}
}
