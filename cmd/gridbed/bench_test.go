package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchJSON: gridbed bench on a tiny configuration prints a JSON
// report whose required keys are present and sane (no timing asserted).
func TestBenchJSON(t *testing.T) {
	code, stdout, stderr := gridbed(t, "bench", "../../examples/bench.yaml", "--json",
		"--peers", "40", "--duration", "2m30s", "--time-scale", "60", "--set", "peers.join_window=20s", "--set", "oracle.interval=30s",
		"--ceiling-duration", "300ms", "--ceiling-actors", "200", "--ceiling-in-flight", "1000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"peers", "messages_per_second", "ceiling_messages_per_second", "clock_lag_p99_seconds", "rss_bytes", "bus_drops", "kept_up", "time_compression"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("key %q missing:\n%s", k, stdout)
		}
	}
	num := func(k string) float64 { v, _ := rep[k].(float64); return v }
	if num("peers") != 40 {
		t.Errorf("peers = %v, want 40 (all joined)", rep["peers"])
	}
	if num("messages_per_second") <= 0 || num("ceiling_messages_per_second") <= 0 || num("rss_bytes") <= 0 {
		t.Errorf("rates and memory must be positive:\n%s", stdout)
	}
	if r := num("ceiling_ratio"); r <= 0 || r > 1 {
		t.Errorf("ceiling_ratio = %v, want in (0, 1]: gridbed's protocol cannot outrun the raw bus", r)
	}
	if num("clock_lag_p99_seconds") < 0 || num("bus_drops") != 0 {
		t.Errorf("lag or drops insane:\n%s", stdout)
	}
}

// TestBenchFitsJoinWindow: a --duration shorter than the scenario's join
// window is not refused: the join window is fitted to it, and a window too
// short to measure gives a null rate and a failed outcome that says how long
// the duration must be — never 0 msgs/s reported as steady.
func TestBenchFitsJoinWindow(t *testing.T) {
	code, stdout, stderr := gridbed(t, "bench", "../../examples/bench.yaml", "--json", "--driver", "sim",
		"--peers", "40", "--duration", "2m")
	if code != 0 {
		t.Fatalf("exit %d (bench.yaml's join window is 4m): %s", code, stderr)
	}
	if !strings.Contains(stderr, "peers.join_window fitted to 1m0s") {
		t.Errorf("stderr does not say the join window was fitted:\n%s", stderr)
	}
	var rep struct {
		MessagesPerSecond *float64 `json:"messages_per_second"`
		Steady            bool     `json:"steady"`
		Outcome           string   `json:"outcome"`
		Reasons           []string `json:"outcome_reasons"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if rep.MessagesPerSecond != nil || rep.Steady || rep.Outcome != "failed" || len(rep.Reasons) == 0 || !strings.Contains(rep.Reasons[0], "make duration at least") {
		t.Errorf("a 30 s window: rate %v, steady %v, outcome %q, reasons %q; want a null rate, not steady, failed saying how long a duration is needed",
			rep.MessagesPerSecond, rep.Steady, rep.Outcome, rep.Reasons)
	}
	// Long enough: the join window fitted to 1m30s leaves 4 heartbeat
	// periods after the sample at 2 min (bench.yaml samples every 2 min).
	code, stdout, stderr = gridbed(t, "bench", "../../examples/bench.yaml", "--json", "--driver", "sim", "--peers", "40", "--duration", "4m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.MessagesPerSecond == nil || *rep.MessagesPerSecond <= 0 || !rep.Steady || rep.Outcome != "passed" {
		t.Errorf("--duration 4m (join window fitted to 1m30s): rate %v, steady %v, outcome %q %q", rep.MessagesPerSecond, rep.Steady, rep.Outcome, rep.Reasons)
	}
}

// TestBenchSimTable: the deterministic driver reports its event rate and
// no ceiling; the default output is a table.
func TestBenchSimTable(t *testing.T) {
	code, stdout, stderr := gridbed(t, "bench", "../../examples/bench.yaml", "--driver", "sim",
		"--peers", "100", "--duration", "3m", "--set", "peers.join_window=30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"event loop", "protocol events/s", "peers  ", "100 of 100 joined"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "ceiling") {
		t.Errorf("sim has no NATS ceiling:\n%s", stdout)
	}
}

// TestBenchBadFlags: bad input is rejected with a sentence saying what to
// write instead.
func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--driver", "fast"}, "--driver emulator or --driver sim"},
		{[]string{"bench", "a.yaml", "b.yaml"}, "at most one scenario file"},
		{[]string{"bench", "../../examples/bench.yaml", "--set", "overlay.dimensions=zero"}, "overlay.dimensions"},
	} {
		code, _, stderr := gridbed(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
