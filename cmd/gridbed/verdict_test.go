package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gridbed/gridbed/metrics"
)

// TestStrictExitsOnFailedOutcome: a run whose peers could never join (a
// 1000 h latency) is not passed: without --strict it exits 0 with the
// outcome on its last line, with --strict 3.
func TestStrictExitsOnFailedOutcome(t *testing.T) {
	args := []string{"run", "../../examples/quickstart.yaml", "--driver", "sim", "--metrics-addr", "off", "--report=false",
		"--set", "peers.count=60", "--set", "duration=3m", "--set", "link.latency.mean=1000h"}
	code, stdout, stderr := gridbed(t, append(args, "--out", t.TempDir())...)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "outcome: FAILED — population_formed: 1 of 60") {
		t.Fatalf("exit %d, last line %q; want 0 and the failed outcome\n%s", code, lines[len(lines)-1], stderr)
	}
	code, _, stderr = gridbed(t, append(args, "--out", t.TempDir(), "--strict")...)
	if code != 3 {
		t.Fatalf("--strict: exit %d, want 3: %s", code, stderr)
	}
}

// TestOutDirCheckedAndReplaced: an --out that cannot be written is refused
// before the run; a directory holding other files is refused; re-running
// into a results directory leaves only the new run's files.
func TestOutDirCheckedAndReplaced(t *testing.T) {
	start := time.Now()
	code, _, stderr := gridbed(t, "run", "../../examples/quickstart.yaml", "--out", "/dev/null/x")
	if code != 2 || !strings.Contains(stderr, "/dev/null/x") {
		t.Fatalf("--out /dev/null/x: exit %d, %q; want 2 naming it", code, stderr)
	}
	t.Logf("refused in %v", time.Since(start))

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "thesis.tex"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = gridbed(t, "run", "../../examples/quickstart.yaml", "--driver", "sim", "--out", other, "--metrics-addr", "off")
	if code != 2 || !strings.Contains(stderr, "thesis.tex") {
		t.Fatalf("a directory with other files: exit %d, %q; want 2 naming what is there", code, stderr)
	}

	dir := filepath.Join(t.TempDir(), "res")
	jobs := []string{"run", "../../examples/jobs.yaml", "--driver", "sim", "--metrics-addr", "off", "--report=false", "--out", dir,
		"--set", "peers.count=40", "--set", "workload.jobs=20", "--set", "duration=20m"}
	if code, _, stderr := gridbed(t, jobs...); code != 0 {
		t.Fatalf("job run: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs.csv")); err != nil {
		t.Fatalf("the job run wrote no jobs.csv: %v", err)
	}
	if code, _, stderr := gridbed(t, "run", "../../examples/quickstart.yaml", "--driver", "sim", "--metrics-addr", "off", "--report=false", "--out", dir,
		"--set", "peers.count=40", "--set", "duration=3m"); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs.csv")); err == nil {
		t.Error("the earlier run's jobs.csv is still beside the new summary.json")
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("temporary directories left behind: %v", entries)
	}
}

// TestDefaultOutByDriver: the simulator's default results directory is not
// the emulator's.
func TestDefaultOutByDriver(t *testing.T) {
	if a, b := defaultOut("", "examples/chaos.yaml", "emulator"), defaultOut("", "examples/chaos.yaml", "sim"); a == b || a != filepath.Join("results", "chaos") {
		t.Errorf("emulator %q, sim %q", a, b)
	}
}

// TestMillionPeersRefused: a run that cannot fit in memory is refused
// before it spawns anything, with the estimate.
func TestMillionPeersRefused(t *testing.T) {
	code, _, stderr := gridbed(t, "run", "../../examples/quickstart.yaml", "--metrics-addr", "off", "--out", t.TempDir(), "--set", "peers.count=1000000")
	if code != 2 || !strings.Contains(stderr, "GiB of memory") || !strings.Contains(stderr, "lower peers.count to") {
		t.Fatalf("exit %d, %q; want 2 with the estimate", code, stderr)
	}
}

// TestEndpoints: the profiler is served only where asked; an address the
// user gave that is busy is an error; only the default falls back.
func TestEndpoints(t *testing.T) {
	reg := metrics.NewRun(metrics.RunInfo{Driver: "sim"}).Registry
	status := func(addr, path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var log bytes.Buffer
	ep, err := serveEndpoints("run", reg, "0.0.0.0:0", true, "", &log)
	if err != nil {
		t.Fatal(err)
	}
	addr := ep.servers[0].Addr()
	_, port, _ := net.SplitHostPort(addr)
	if status("127.0.0.1:"+port, "/metrics") != 200 || status("127.0.0.1:"+port, "/debug/pprof/") != 404 {
		t.Error("a 0.0.0.0 metrics listener must serve /metrics and not the profiler")
	}
	// Busy and given: an error. Busy and the default: a free port, said.
	if _, err := serveEndpoints("run", reg, "127.0.0.1:"+port, true, "", &log); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("a busy --metrics-addr: %v", err)
	}
	ep.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	log.Reset()
	ep2, err := serveEndpoints("run", reg, busy.Addr().String(), false, "0", &log)
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	if !strings.Contains(log.String(), "is busy") || len(ep2.servers) != 2 {
		t.Errorf("default address busy: %q, %d listeners", log.String(), len(ep2.servers))
	}
	if p := ep2.servers[1].Addr(); !strings.HasPrefix(p, "127.0.0.1:") || status(p, "/debug/pprof/") != 200 {
		t.Errorf("--pprof-addr 0: served on %s", p)
	}
	// The same address named for both: one listener with both.
	ep3, err := serveEndpoints("run", reg, "127.0.0.1:0", true, "127.0.0.1:0", &log)
	if err != nil {
		t.Fatal(err)
	}
	defer ep3.Close()
	if len(ep3.servers) != 1 || status(ep3.servers[0].Addr(), "/debug/pprof/") != 200 {
		t.Error("--pprof-addr equal to --metrics-addr: want the profiler on the metrics listener")
	}
}

// watchBuffer is a bytes.Buffer safe for one writer and readers, which
// closes seen once the text it watches for has been written.
type watchBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	watch string
	seen  chan struct{}
}

func newWatchBuffer(watch string) *watchBuffer {
	return &watchBuffer{watch: watch, seen: make(chan struct{})}
}

func (s *watchBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.watch != "" && strings.Contains(s.b.String(), s.watch) {
		s.watch = ""
		close(s.seen)
	}
	return n, err
}

func (s *watchBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// interruptAndWait sends this process SIGINT and returns the exit status
// the command running in the background hands to done; the test stops
// with stderr if it does not end within a minute.
func interruptAndWait(t *testing.T, done <-chan int, stderr fmt.Stringer) int {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		return code
	case <-time.After(time.Minute):
		t.Fatalf("the command did not stop within a minute of SIGINT:\n%s", stderr.String())
		return 0
	}
}

// TestSIGINTKeepsResults: SIGINT in the middle of an emulator run stops it
// and writes what it measured, with outcome interrupted and exit status
// 130 (the stop's wall time is logged; the must-show is under 2 s).
func TestSIGINTKeepsResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chaos")
	var stdout bytes.Buffer
	stderr := newWatchBuffer("2m0s / 45m0s") // the progress bar at 2 emulated minutes
	done := make(chan int)
	go func() {
		done <- run([]string{"run", "../../examples/chaos.yaml", "--metrics-addr", "off", "--progress", "on", "--out", dir,
			"--set", "peers.count=100", "--set", "peers.join_window=30s"}, &stdout, stderr)
	}()
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("the run ended (exit %d) before 2 emulated minutes:\n%s", code, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("no progress to 2 emulated minutes within a minute:\n%s", stderr.String())
	}
	sent := time.Now()
	code := interruptAndWait(t, done, stderr)
	t.Logf("stopped %v after SIGINT", time.Since(sent))
	if code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, stderr.String())
	}
	f, err := os.Open(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	var s struct {
		Outcome  string  `json:"outcome"`
		Emulated float64 `json:"emulated_seconds"`
		Messages struct {
			Total int `json:"total"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Outcome != "interrupted" || s.Emulated < 120 || s.Emulated >= 45*60 || s.Messages.Total == 0 {
		t.Errorf("summary.json: outcome %q at %g s emulated with %d messages", s.Outcome, s.Emulated, s.Messages.Total)
	}
	if !strings.Contains(stdout.String(), "outcome: INTERRUPTED") {
		t.Errorf("the last line does not say interrupted:\n%s", stdout.String())
	}
}
