package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/metrics"
)

// prometheusBinary finds a Prometheus server: $GRIDBED_PROMETHEUS, then
// prometheus on PATH, then the copy grafana/install-prometheus.sh
// extracts into the user's cache directory. Without one the test is
// skipped, except under CI=true, where it fails.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GRIDBED_PROMETHEUS"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("GRIDBED_PROMETHEUS=%s is not an executable: %v", p, err)
		}
		return p
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	if dir, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(dir, "gridbed", "prometheus", "usr", "bin", "prometheus")
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	msg := "no Prometheus server: run grafana/install-prometheus.sh, put prometheus on PATH or set GRIDBED_PROMETHEUS"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: the dashboards must be checked against a real Prometheus)")
	}
	t.Skip(msg)
	return ""
}

// syncBuffer collects a process's output for the failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// promServer is a Prometheus process started by the test.
type promServer struct {
	base   string
	out    *syncBuffer
	exited chan struct{}
	err    error // set when exited is closed
}

func startPrometheus(t *testing.T, bin, config string) *promServer {
	t.Helper()
	addr := freePort(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &promServer{base: "http://" + addr, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// apiResult is a query result: one sample per series (instant vectors and
// scalars), in Prometheus's JSON.
type apiResult struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (r apiResult) float() float64 {
	s, _ := r.Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// get calls the HTTP API and returns its data field.
func (p *promServer) get(path string, params url.Values) (json.RawMessage, error) {
	select {
	case <-p.exited:
		return nil, fmt.Errorf("prometheus exited (%v):\n%s", p.err, p.out.String())
	default:
	}
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("%s: status %d, %.200s", path, resp.StatusCode, b)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", path, body.Error)
	}
	return body.Data, nil
}

// query evaluates expr at the current time.
func (p *promServer) query(expr string) ([]apiResult, error) {
	data, err := p.get("/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	var res struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	switch res.ResultType {
	case "vector":
		var v []apiResult
		err := json.Unmarshal(res.Result, &v)
		return v, err
	case "scalar":
		var s [2]any
		err := json.Unmarshal(res.Result, &s)
		return []apiResult{{Value: s}}, err
	}
	return nil, fmt.Errorf("result type %s", res.ResultType)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, p *promServer, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			lastErr = err
			select {
			case <-p.exited:
				t.Fatalf("waiting for %s: %v", what, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v (last error: %v)\nprometheus output:\n%s", what, timeout, lastErr, p.out.String())
		}
		<-tick.C
	}
}

// The dashboards against a real Prometheus: a short emulator run (actors
// over NATS, a workload, a crash fault and access links) serves its metrics as gridbed
// run does, Prometheus scrapes it every second with grafana/prometheus.yml
// (the target pointed at the run), and every panel and annotation query of
// every dashboard must return at least one series with a value.
func TestDashboardsAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		// The race run: the emulator's own tests cover its concurrency; this
		// one checks queries, and an instrumented emulator is several times
		// slower.
		t.Skip("-short: the dashboards are checked against Prometheus by the full run")
	}
	bin := prometheusBinary(t)
	start := time.Now()

	sc := emutest.Parse(t, "grafana-prometheus.yaml", `
name: grafana-prometheus
seed: 2
duration: 2h
time_scale: 1200
peers: {count: 40, population: mixed, join_window: 30s}
overlay: {dimensions: 3}
link: {bandwidth: {up: 10Mbit, down: 10Mbit}}
workload: {jobs: 60, interarrival: 60s, runtime: 10m, start: 2m}
matchmaking: {scheme: can-p}
faults:
  - {at: 40m, crash: {fraction: 0.1}}
`)
	m := metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverLive, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population, Scenario: sc.Name, Seed: sc.Seed})
	runID := m.Info().RunID
	// The run's server writes its target file, as gridbed run's does,
	// into a directory of the test's; Prometheus finds it there.
	targets := advertiseInto(t)
	srv, err := metrics.Serve("127.0.0.1:0", m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	prom := startPrometheus(t, bin, shippedConfig(t, bin, targets))

	// Prometheus has scraped the run's registry before the run starts, so
	// that counters are seen rising.
	waitFor(t, prom, "first scrape of gridbed", 30*time.Second, func() (bool, error) {
		r, err := prom.query(`gridbed_run_info{driver="emulator"}`)
		return len(r) == 1, err
	})
	scraped := time.Since(start)
	runStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverLive, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.CheckJobs(); err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	runWall := time.Since(runStart)
	if j := res.Summary.Jobs; j == nil || j.Completed == 0 || len(res.Summary.Faults.Events) == 0 {
		t.Fatalf("the run must complete jobs and apply its fault for every panel to have data: jobs %+v, faults %+v", j, res.Summary.Faults)
	}
	waitFor(t, prom, "scrape of the run's end", 30*time.Second, func() (bool, error) {
		r, err := prom.query(fmt.Sprintf(`gridbed_emulated_time_seconds >= %g`, sc.Duration.Seconds()))
		return len(r) == 1, err
	})
	if w := time.Since(start); w > 50*time.Second {
		// Every query reads windows of 1m: the run must lie inside them.
		t.Fatalf("setup and run took %v; the 1m query windows no longer cover the run", w)
	}

	// The run variable's source names this run: one series, with the
	// scenario, seed, driver and run id the run was given.
	info, err := prom.query(fmt.Sprintf(`gridbed_run_info{run_id=%q}`, runID))
	if err != nil || len(info) != 1 {
		t.Fatalf("gridbed_run_info{run_id=%q}: %v (%v), want one series", runID, info, err)
	}
	for k, want := range map[string]string{"scenario": sc.Name, "seed": fmt.Sprint(sc.Seed), "driver": emulator.DriverLive, "run_id": runID} {
		if got := info[0].Metric[k]; got != want {
			t.Errorf("gridbed_run_info{%s} = %q, want %q", k, got, want)
		}
	}

	n, filtered := 0, 0
	for _, d := range loadDashboards(t) {
		// Each variable as Grafana fills it: its values from Prometheus,
		// then the default (All) and each value in turn.
		varSets := []map[string]string{d.defaultVars()}
		for _, v := range d.Templating.List {
			if v.Type == "datasource" {
				continue
			}
			sel, label, err := v.labelValues()
			if err != nil {
				t.Errorf("%s: %v", d.file, err)
				continue
			}
			data, err := prom.get("/api/v1/label/"+label+"/values", url.Values{"match[]": {sel}})
			var vals []string
			if err == nil {
				err = json.Unmarshal(data, &vals)
			}
			if err != nil || len(vals) == 0 {
				t.Errorf("%s: variable %s: label_values(%s, %s) = %v (%v): the drop-down would be empty", d.file, v.Name, sel, label, vals, err)
				continue
			}
			if v.Name == "scheme" && !slices.Contains(vals, sc.Matchmaking.Scheme) {
				t.Errorf("%s: variable scheme offers %v, not the run's %s", d.file, vals, sc.Matchmaking.Scheme)
			}
			if v.Name == "run" && !slices.Equal(vals, []string{runID}) {
				t.Errorf("%s: variable run offers %v, want this run's id %s only", d.file, vals, runID)
			}
			for _, val := range vals {
				set := d.defaultVars()
				set[v.Name] = val
				varSets = append(varSets, set)
			}
		}
		for _, q := range d.queries() {
			sets := varSets
			if !usesVars(q.Expr, d.Templating.List) {
				sets = varSets[:1] // no template variable in it: evaluated once
			}
			for _, vars := range sets {
				expr, err := expand(q.Expr, vars)
				if err != nil {
					t.Errorf("%s: %v", q, err)
					continue
				}
				n++
				r, err := prom.query(expr)
				switch {
				case err != nil:
					t.Errorf("%s\n\tPrometheus: %v", q, err)
				case len(r) == 0 && (strings.Contains(expr, "gridbed_wave_") || strings.Contains(expr, "gridbed_job_ce_") || strings.Contains(expr, "gridbed_allocation_")):
					// The Wave row's series exist in Wave runs only, the
					// CE row's in runs with peers.ces, the allocation
					// row's in 004 runs (this run is none of them);
					// promql_test.go checks those panels against such
					// runs' registries.
				case len(r) == 0:
					t.Errorf("%s\n\treturns nothing: the panel would show \"No data\" (evaluated as %s)", q, expr)
				case !slices.ContainsFunc(r, func(s apiResult) bool { return !math.IsNaN(s.float()) }):
					t.Errorf("%s\n\treturns only NaN (evaluated as %s): %v", q, expr, r)
				}
			}
			// Another run selected: the panel shows nothing of this one.
			other := d.defaultVars()
			other["run"] = "20000101T000000Z-000000"
			expr, err := expand(q.Expr, other)
			if err != nil {
				continue
			}
			filtered++
			if r, err := prom.query(expr); err != nil || len(r) > 0 {
				t.Errorf("%s\n\twith another run selected returns %v (%v): the run variable does not filter it (evaluated as %s)", q, r, err, expr)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d queries evaluated", n)
	}
	if filtered < 20 {
		t.Errorf("only %d queries evaluated with another run selected", filtered)
	}
	t.Logf("%d queries evaluated (and %d with another run selected); first scrape after %v, the run took %v wall, the whole test %v",
		n, filtered, scraped.Round(time.Millisecond), runWall.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil || !errors.Is(err, os.ErrNotExist)
}

func usesVars(expr string, vars []variable) bool {
	for _, v := range vars {
		if strings.Contains(expr, "$"+v.Name) || strings.Contains(expr, "${"+v.Name) || strings.Contains(expr, "[["+v.Name+"]]") {
			return true
		}
	}
	return false
}

// advertiseInto makes the metrics servers the test starts write their
// Prometheus target files (as the gridbed command's do) into a temporary
// directory, which it returns; undone when the test ends.
func advertiseInto(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(metrics.TargetsDirEnv, dir)
	metrics.Advertise("run")
	t.Cleanup(func() { metrics.Advertise("") })
	return dir
}

// shippedConfig is grafana/prometheus.yml edited as its comment and
// grafana/README.md say for Prometheus without Docker — the target files
// read from dir, the loopback scraped — and checked by promtool when it
// is beside the server.
func shippedConfig(t *testing.T, bin, dir string) string {
	t.Helper()
	cfg, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cfg, []byte(targetsMount)) || !bytes.Contains(cfg, []byte("host.docker.internal")) {
		t.Fatalf("prometheus.yml does not read %s or relabel to host.docker.internal", targetsMount)
	}
	cfg = bytes.ReplaceAll(cfg, []byte(targetsMount), []byte(dir))
	cfg = bytes.ReplaceAll(cfg, []byte("host.docker.internal"), []byte("127.0.0.1"))
	if tool := filepath.Join(filepath.Dir(bin), "promtool"); fileExists(tool) {
		f := filepath.Join(t.TempDir(), "prometheus.yml")
		if err := os.WriteFile(f, cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(tool, "check", "config", f).CombinedOutput(); err != nil {
			t.Fatalf("promtool check config grafana/prometheus.yml: %v\n%s", err, out)
		}
	}
	return string(cfg)
}

// TestTwoRunsOneConfig: two runs serving metrics at once, each on its own
// port, each write a target file, and Prometheus with the shipped
// configuration scrapes both — no port written in it; when they close,
// their files are gone and nothing else in the directory is touched.
func TestTwoRunsOneConfig(t *testing.T) {
	bin := prometheusBinary(t)
	dir := advertiseInto(t)
	foreign := filepath.Join(dir, "not-gridbeds.json")
	if err := os.WriteFile(foreign, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var srvs []*metrics.Server
	for i := range 2 {
		m := metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverLive, Scenario: fmt.Sprintf("run-%d", i), Seed: uint64(i + 1)})
		m.Peers.Set(float64(10 * (i + 1)))
		srv, err := metrics.Serve("127.0.0.1:0", m.Registry)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if f, err := srv.TargetFile(); f == "" || err != nil {
			t.Fatalf("server %d wrote no target file: %v", i, err)
		}
		ids, srvs = append(ids, m.Info().RunID), append(srvs, srv)
	}
	prom := startPrometheus(t, bin, shippedConfig(t, bin, dir))
	waitFor(t, prom, "both runs scraped", 45*time.Second, func() (bool, error) {
		r, err := prom.query(`up{job="gridbed"} == 1`)
		return len(r) == 2, err
	})
	for i, id := range ids {
		r, err := prom.query(fmt.Sprintf(`gridbed_run_info{run_id=%q}`, id))
		if err != nil || len(r) != 1 || r[0].Metric["instance"] != srvs[i].Addr() || r[0].Metric["gridbed_process"] != "run" {
			t.Errorf("run %d (%s on %s): %v %v", i, id, srvs[i].Addr(), r, err)
		}
	}
	for _, s := range srvs {
		f, _ := s.TargetFile()
		s.Close()
		if fileExists(f) {
			t.Errorf("%s left after its server closed", f)
		}
	}
	if !fileExists(foreign) {
		t.Error("closing removed a file gridbed did not write")
	}
}
