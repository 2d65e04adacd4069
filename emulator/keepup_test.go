package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
)

func keepUpScenario(t *testing.T, peers int, scale float64, duration time.Duration) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Peers.Count, sc.TimeScale, sc.Duration = peers, scale, duration
	sc.Peers.JoinWindow = duration / 4
	sc.Oracle.Interval = duration / 2
	return sc
}

// TestEmulatorWarnsWhenItCannotKeepUp: a time scale of a million (a
// minute of heartbeats in 60 µs of wall time) is far beyond what any
// machine keeps up with; the summary says so, suggests a smaller time
// scale, and the run warns on its logger.
func TestEmulatorWarnsWhenItCannotKeepUp(t *testing.T) {
	sc := keepUpScenario(t, 50, 1e6, 10*time.Minute)
	// It falls behind on purpose: it holds the most a test takes, a
	// core (its spare goroutines may spill onto the other for the few
	// seconds it runs).
	cores.Hold(t, cores.Most)
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, sc, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	e := res.Summary.Emulator
	if e == nil {
		t.Fatal("no emulator section in the summary")
	}
	if e.KeptUp {
		t.Errorf("seed %d: kept_up at time scale %g with lag p99 %g s emulated", sc.Seed, sc.TimeScale, e.LagP99EmulatedSeconds)
	}
	if !(e.SuggestedTimeScale > 0 && e.SuggestedTimeScale < sc.TimeScale) {
		t.Errorf("suggested time scale %g, want in (0, %g)", e.SuggestedTimeScale, sc.TimeScale)
	}
	if !strings.Contains(logs.String(), "could not keep up") || !strings.Contains(logs.String(), "suggested_time_scale=") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
	js, _ := json.Marshal(res.Summary)
	var back map[string]map[string]any
	_ = json.Unmarshal(js, &back)
	if v, ok := back["emulator"]["kept_up"]; !ok || v != false {
		t.Errorf("summary.json emulator.kept_up = %v, want false", v)
	}
	var table bytes.Buffer
	res.Summary.PrintTable(&table)
	if !strings.Contains(table.String(), "kept up") || !strings.Contains(table.String(), "NO:") {
		t.Errorf("table does not say the run fell behind:\n%s", table.String())
	}
	// The verdict: overloaded, with kept_up first among the reasons;
	// --strict exits 4.
	s := res.Summary
	if s.Outcome != OutcomeOverloaded || len(s.OutcomeReasons) == 0 || !strings.HasPrefix(s.OutcomeReasons[0], "kept_up: ") || s.ExitCode(true) != ExitOverloaded {
		t.Errorf("seed %d: outcome %q, reasons %q, strict exit %d; want overloaded, kept_up first, 4", sc.Seed, s.Outcome, s.OutcomeReasons, s.ExitCode(true))
	}
}

// TestEmulatorKeepsUpWhenGentle: 20 peers at time scale 3 leave the
// machine idle; the run keeps up (its lag tolerance, 1% of the 30 s
// heartbeat period, is 100 ms of wall time) and no warning is logged.
func TestEmulatorKeepsUpWhenGentle(t *testing.T) {
	if testing.Short() {
		t.Skip("15 s of wall time; the race run keeps the too-fast case")
	}
	sc := keepUpScenario(t, 20, 3, 45*time.Second)
	cores.Hold(t, cores.Live)
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, sc, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	e := res.Summary.Emulator
	if e == nil || !e.KeptUp {
		t.Fatalf("seed %d: did not keep up at time scale %g: %+v", sc.Seed, sc.TimeScale, e)
	}
	if e.SuggestedTimeScale < sc.TimeScale {
		t.Errorf("kept up, yet suggests %g < %g", e.SuggestedTimeScale, sc.TimeScale)
	}
	if strings.Contains(logs.String(), "could not keep up") || strings.Contains(logs.String(), "falling behind") {
		t.Errorf("warned although it kept up:\n%s", logs.String())
	}
	if e.Aborted || e.BehindAtSeconds != nil || e.OverloadAtSeconds != nil {
		t.Errorf("the overload guard fired on a gentle run: %+v", e)
	}
}

// TestSuggestTimeScale: the suggestion is the smaller of the CPU and lag
// bounds, below the requested scale when the run fell behind, rounded
// down to two significant digits.
func TestSuggestTimeScale(t *testing.T) {
	for _, tc := range []struct {
		scale, lag, tol, cpu float64
		kept                 bool
		want                 float64
	}{
		// CPU bound: 0.6 × 2 cores / 0.01 CPU s per emulated s = 120.
		{scale: 10, lag: 0.001, tol: 0.3, cpu: 0.01, kept: true, want: 120},
		// Lag bound: 0.3 / 0.01 = 30.
		{scale: 10, lag: 0.01, tol: 0.3, cpu: 0.001, kept: true, want: 30},
		// Fell behind although both bounds exceed the scale: 0.9 × 1000.
		{scale: 1000, lag: 0.0001, tol: 0.3, cpu: 0.0001, kept: false, want: 900},
		// Rounded down: 1.2 / 0.0037 = 324.3 → 320.
		{scale: 100, lag: 0, tol: 0.3, cpu: 0.0037, kept: true, want: 320},
		// Below 10, printed as decimals: 0.3 / 0.122 = 2.46 → 2.4.
		{scale: 10, lag: 0.122, tol: 0.3, cpu: 0.0001, kept: false, want: 2.4},
	} {
		if got := suggestTimeScale(tc.scale, tc.kept, tc.lag, tc.tol, tc.cpu, 2); got != tc.want {
			t.Errorf("suggestTimeScale(%+v) = %g, want %g", tc, got, tc.want)
		}
	}
}

// TestHostCosts: a split run's processes grouped by machine — each
// process once (an in-process worker shares the coordinator's pid and is
// not added again), CPU summed per host, cores the most reported there —
// and the busiest machine (most CPU per core) bounds the suggested time
// scale.
func TestHostCosts(t *testing.T) {
	coord := CoordinatorCost{Host: "a", PID: 10, CPUSeconds: 2, Cores: 2}
	for _, tc := range []struct {
		name    string
		procs   []WorkerCost
		want    []HostCost
		busiest string
	}{
		{name: "local workers share the coordinator's machine",
			procs: []WorkerCost{{Host: "a", PID: 11, CPUSeconds: 5, Cores: 2}, {Host: "a", PID: 12, CPUSeconds: 4, Cores: 2}},
			want:  []HostCost{{Host: "a", Processes: 3, CPUSeconds: 11, Cores: 2}}, busiest: "a"},
		{name: "in-process workers count once",
			procs: []WorkerCost{{Host: "a", PID: 10, CPUSeconds: 9, Cores: 2, InProcess: true}, {Host: "a", PID: 10, CPUSeconds: 9, Cores: 2, InProcess: true}},
			want:  []HostCost{{Host: "a", Processes: 1, CPUSeconds: 2, Cores: 2}}, busiest: "a"},
		{name: "as busy per core (1.5 CPU s): the first machine",
			procs: []WorkerCost{{Host: "b", PID: 10, CPUSeconds: 6, Cores: 4}, {Host: "a", PID: 11, CPUSeconds: 1, Cores: 2}, {Host: "b", PID: 11, CPUSeconds: 6, Cores: 8}},
			want:  []HostCost{{Host: "a", Processes: 2, CPUSeconds: 3, Cores: 2}, {Host: "b", Processes: 2, CPUSeconds: 12, Cores: 8}}, busiest: "a"},
		{name: "the busier remote machine bounds",
			procs: []WorkerCost{{Host: "b", PID: 7, CPUSeconds: 8, Cores: 2}},
			want:  []HostCost{{Host: "a", Processes: 1, CPUSeconds: 2, Cores: 2}, {Host: "b", Processes: 1, CPUSeconds: 8, Cores: 2}}, busiest: "b"},
		{name: "a worker that never reported its cores does not bound",
			procs: []WorkerCost{{Host: "c", PID: 7}},
			want:  []HostCost{{Host: "a", Processes: 1, CPUSeconds: 2, Cores: 2}, {Host: "c", Processes: 1}}, busiest: "a"},
	} {
		got := hostCosts(coord, tc.procs)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: hostCosts = %+v, want %+v", tc.name, got, tc.want)
		}
		if b, ok := busiestHost(got); !ok || b.Host != tc.busiest {
			t.Errorf("%s: busiest host %+v (%v), want %s", tc.name, b, ok, tc.busiest)
		}
	}
	// The workers block sums each process once; the time scale's CPU
	// bound is the busiest machine's: 0.6 × 2 cores / (8 s / 100 s) = 15,
	// where the coordinator's own 2 s would give 60.
	w := splitCosts([]WorkerCost{{Worker: 0, Host: "elsewhere", PID: 7, CPUSeconds: 8, Cores: 2}}, 2*time.Second)
	if w.CPUSecondsAll != 10 || w.Count != 1 || len(w.Hosts) != 2 {
		t.Errorf("splitCosts: %+v, want 10 CPU seconds over 2 hosts", w)
	}
	w.Hosts[0].Cores = 2 // this machine's GOMAXPROCS may differ
	e := keepUp(10, 30*time.Second, LagTolerance, 0, 0, minLagTimers, 2*time.Second, 100, 0, w.Hosts)
	if e.SuggestedTimeScale != 15 || e.CPUSeconds != 2 {
		t.Errorf("keepUp over hosts %+v: suggested %g, cpu_seconds %g; want 15 and the coordinator's 2", w.Hosts, e.SuggestedTimeScale, e.CPUSeconds)
	}
}
