package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// verdictScenario is the quickstart with peers peers over duration (the
// default join window of a minute, samples every 30 s).
func verdictScenario(t *testing.T, peers int, duration time.Duration, sets ...string) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Peers.Count, sc.Duration = peers, duration
	if err := sc.SetAll(sets...); err != nil {
		t.Fatal(err)
	}
	return sc
}

func runVerdict(t *testing.T, sc scenario.Scenario, opts Options) Summary {
	t.Helper()
	share := cores.Sim
	if opts.Driver == DriverLive {
		share = cores.Live
	}
	cores.Hold(t, share)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, sc, opts)
	if err != nil {
		t.Fatalf("seed %d, driver %s: %v", sc.Seed, opts.Driver, err)
	}
	return res.Summary
}

// wantCheck fails unless the run's invariant name has verdict ok and its
// detail mentions each of words.
func wantCheck(t *testing.T, s Summary, name string, ok bool, words ...string) {
	t.Helper()
	c := s.Invariants.Check(name)
	if c == nil {
		t.Fatalf("seed %d: no invariant %s in %+v", s.Seed, name, s.Invariants.Checks)
	}
	if c.OK != ok {
		t.Errorf("seed %d: invariant %s ok=%v, want %v: %s", s.Seed, name, c.OK, ok, c.Detail)
	}
	for _, w := range words {
		if !strings.Contains(c.Detail, w) {
			t.Errorf("seed %d: invariant %s detail %q lacks %q", s.Seed, name, c.Detail, w)
		}
	}
}

// TestPassedRunSaysSo: a healthy run passes, with every invariant judged
// and the per-node figures measured.
func TestPassedRunSaysSo(t *testing.T) {
	s := runVerdict(t, verdictScenario(t, 100, 4*time.Minute), Options{Driver: DriverSim})
	if s.Outcome != OutcomePassed || len(s.OutcomeReasons) != 0 || !s.Invariants.OK || s.ExitCode(true) != 0 {
		t.Fatalf("seed %d: outcome %q %q, invariants %+v", s.Seed, s.Outcome, s.OutcomeReasons, s.Invariants.Checks)
	}
	for _, name := range []string{"population_formed", "measured", "overlay_reconverged", "jobs_conserved", "kept_up"} {
		wantCheck(t, s, name, true)
	}
	if s.Messages.PerNodePerMinute == nil || *s.Messages.PerNodePerMinute <= 0 || !s.Messages.Window.Steady {
		t.Errorf("seed %d: per-node figure %v, steady %v", s.Seed, s.Messages.PerNodePerMinute, s.Messages.Window.Steady)
	}
}

// TestPopulationNeverFormedFails: with a latency of 1000 h no join can
// complete; the overlay of one peer is trivially exact, yet the run must
// not pass — population_formed fails, measured has no window, the outcome
// is failed and --strict exits 3.
func TestPopulationNeverFormedFails(t *testing.T) {
	s := runVerdict(t, verdictScenario(t, 100, 4*time.Minute, "link.latency.mean=1000h"), Options{Driver: DriverSim})
	wantCheck(t, s, "population_formed", false, "1 of 100", "peers.join_window")
	wantCheck(t, s, "measured", false, "never happened")
	if s.Outcome != OutcomeFailed || s.ExitCode(true) != ExitFailed || s.ExitCode(false) != 0 {
		t.Errorf("seed %d: outcome %q (exit %d strict, %d not); want failed, 3, 0", s.Seed, s.Outcome, s.ExitCode(true), s.ExitCode(false))
	}
	if s.Messages.PerNodePerMinute != nil || s.Bytes.PerNodePerMinute != nil || s.Messages.PerWallSecond != nil {
		t.Errorf("seed %d: per-node figures given without a window: %v", s.Seed, s.Messages.PerNodePerMinute)
	}
	js, _ := json.Marshal(s)
	if !strings.Contains(string(js), `"per_node_per_minute":null`) || !strings.Contains(string(js), `"outcome":"failed"`) {
		t.Errorf("summary.json does not say null and failed:\n%.600s", js)
	}
}

// TestPopulationFormedAccountsDepartures: peers that crash during the join
// window are not expected to be members: the population still formed.
func TestPopulationFormedAccountsDepartures(t *testing.T) {
	sc, err := scenario.Parse("crash-while-joining.yaml", []byte(`
seed: 3
duration: 9m
peers: {count: 200, join_window: 4m}
faults:
  - {at: 40s, crash: {fraction: 0.2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := runVerdict(t, sc, Options{Driver: DriverSim})
	wantCheck(t, s, "population_formed", true)
	c := s.Invariants.Check("population_formed")
	if s.Faults.ByKind["crash"] != 1 || strings.Contains(c.Detail, "of 200 ") {
		t.Errorf("seed %d: the crashed peers were counted as expected members: %s", s.Seed, c.Detail)
	}
}

// TestShortWindowIsNotMeasured: a run whose window after the joins holds
// less than three heartbeat periods reports no per-node figures and says
// how long the duration must be; one that ends inside the join window is
// not judged at all.
func TestShortWindowIsNotMeasured(t *testing.T) {
	s := runVerdict(t, verdictScenario(t, 60, 2*time.Minute), Options{Driver: DriverSim})
	wantCheck(t, s, "measured", false, "less than 3 heartbeat periods", "make duration at least 3m0s")
	wantCheck(t, s, "population_formed", true)
	if s.Messages.PerNodePerMinute != nil || s.Messages.Window.Steady || s.Outcome != OutcomeFailed {
		t.Errorf("seed %d: per-node %v, steady %v, outcome %q", s.Seed, s.Messages.PerNodePerMinute, s.Messages.Window.Steady, s.Outcome)
	}
	s = runVerdict(t, verdictScenario(t, 60, 80*time.Second), Options{Driver: DriverSim})
	wantCheck(t, s, "population_formed", false, "not judged")
	wantCheck(t, s, "measured", false, "make duration at least")
}

// TestInterruptKeepsResults: cancelling the run's context (what SIGINT
// does) stops it and returns what it measured, on both drivers and in the
// in-process join phase.
func TestInterruptKeepsResults(t *testing.T) {
	for _, driver := range []string{DriverSim, DriverLive} {
		t.Run(driver, func(t *testing.T) {
			sc := verdictScenario(t, 60, 20*time.Minute)
			sc.TimeScale = 120
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			samples := 0
			opts := Options{Driver: driver, Progress: func(Sample) {
				if samples++; samples == 4 {
					cancel()
				}
			}}
			start := time.Now()
			res, err := Run(ctx, sc, opts)
			if err != nil {
				t.Fatalf("seed %d: an interrupted run returned an error: %v", sc.Seed, err)
			}
			s := res.Summary
			t.Logf("%s: stopped %v after the cancel's sample; %s", driver, time.Since(start), s.OutcomeLine())
			if s.Outcome != OutcomeInterrupted || s.ExitCode(false) != ExitInterrupted || len(s.OutcomeReasons) == 0 || !strings.Contains(s.OutcomeReasons[0], "interrupted at") {
				t.Fatalf("seed %d: outcome %q %q", sc.Seed, s.Outcome, s.OutcomeReasons)
			}
			if len(res.Series) < 4 || s.EmulatedSeconds < 120 || s.EmulatedSeconds >= sc.Duration.Seconds() || s.Messages.Total == 0 || s.Peers.Final == 0 {
				t.Errorf("seed %d: %d samples, %g s emulated, %d messages, %d peers: the figures so far are missing", sc.Seed, len(res.Series), s.EmulatedSeconds, s.Messages.Total, s.Peers.Final)
			}
		})
	}
	t.Run("bootstrap", func(t *testing.T) {
		sc := verdictScenario(t, 3000, 20*time.Minute, "peers.bootstrap=direct")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, err := Run(ctx, sc, Options{Driver: DriverLive})
		if err != nil {
			t.Fatalf("seed %d: %v", sc.Seed, err)
		}
		if s := res.Summary; s.Outcome != OutcomeInterrupted || !strings.Contains(s.OutcomeReasons[0], "join phase") || s.Peers.Initial != 3000 {
			t.Errorf("seed %d: outcome %q %q", sc.Seed, s.Outcome, s.OutcomeReasons)
		}
	})
}

// TestMemoryCeilingStopsRun: a process above the hard memory ceiling is
// stopped as overloaded with its results — in the join phase built
// in-process and, on the deterministic driver, between two events.
func TestMemoryCeilingStopsRun(t *testing.T) {
	// Long enough that the watcher (every 250 ms of wall time) sees it.
	sc := verdictScenario(t, 300, 12*time.Hour)
	s := runVerdict(t, sc, Options{Driver: DriverSim, MemoryCeiling: 1})
	wantCheck(t, s, "run_completed", false, "memory")
	if s.Outcome != OutcomeOverloaded || s.ExitCode(false) != 0 || s.ExitCode(true) != ExitOverloaded || s.EmulatedSeconds >= sc.Duration.Seconds() {
		t.Errorf("seed %d: outcome %q after %g s emulated, exit %d", s.Seed, s.Outcome, s.EmulatedSeconds, s.ExitCode(true))
	}
	sc = verdictScenario(t, 10000, 10*time.Minute, "peers.bootstrap=direct") // seconds of join phase
	s = runVerdict(t, sc, Options{Driver: DriverLive, MemoryCeiling: 1})
	wantCheck(t, s, "run_completed", false, "join phase", "memory")
	if s.Outcome != OutcomeOverloaded {
		t.Errorf("seed %d: outcome %q", s.Seed, s.Outcome)
	}
}

// TestMemoryCeilingJudgesThisRun: garbage an earlier run left in the
// process (reproduce and sweep run many in one) is returned before the
// ceiling starts watching, so it does not stop the next run.
func TestMemoryCeilingJudgesThisRun(t *testing.T) {
	base := goMemory()
	garbage := make([]byte, 1<<30)
	for i := 0; i < len(garbage); i += 4096 { // one byte a page makes it all resident
		garbage[i] = 1
	}
	garbage = nil
	if goMemory() < base+1<<30 {
		t.Skip("the runtime already returned the garbage; nothing to test")
	}
	sc := verdictScenario(t, 300, 2*time.Hour)
	if testing.Short() {
		sc = verdictScenario(t, 100, time.Hour) // the ceiling watches from the first sample: as telling, a fifth of the work
	}
	s := runVerdict(t, sc, Options{Driver: DriverSim, MemoryCeiling: base + 512<<20})
	if s.Outcome == OutcomeOverloaded || s.EmulatedSeconds < sc.Duration.Seconds() {
		t.Errorf("seed %d: an earlier allocation stopped the run: outcome %q %q", s.Seed, s.Outcome, s.OutcomeReasons)
	}
}

// TestAdmissionRefusesWhatCannotFit: a million peers on the emulator do
// not fit 12 GiB; the error gives the estimate and the peers that fit,
// which themselves fit.
func TestAdmissionRefusesWhatCannotFit(t *testing.T) {
	const limit = 12 << 30
	sc := verdictScenario(t, 1_000_000, 10*time.Minute)
	err := Admit(sc, DriverLive, limit)
	if err == nil || !strings.Contains(err.Error(), "GiB of memory") || !strings.Contains(err.Error(), "lower peers.count to") {
		t.Fatalf("a million peers admitted: %v", err)
	}
	var fits int
	msg := err.Error()
	_, after, _ := strings.Cut(msg, "lower peers.count to ")
	if _, e := fmt.Sscan(after, &fits); e != nil || fits <= 0 || fits >= sc.Peers.Count {
		t.Fatalf("no sensible peer count in %q", msg)
	}
	sc.Peers.Count = fits
	if err := Admit(sc, DriverLive, limit); err != nil {
		t.Errorf("the suggested %d peers do not fit: %v", fits, err)
	}
	if err := Admit(verdictScenario(t, 500, 10*time.Minute), DriverLive, limit); err != nil {
		t.Errorf("the quickstart refused: %v", err)
	}
	// 14 dimensions: 2,000 peers reached 14 GB on the project machine.
	if err := Admit(verdictScenario(t, 2000, 10*time.Minute, "overlay.dimensions=14", "peers.bootstrap=direct"), DriverLive, limit); err == nil {
		t.Error("2,000 peers in 14 dimensions admitted under 12 GiB")
	}
}

// TestAbortReportsOneInstant: the guard's instants never lie past the
// run's end, and the suggestion for a run that fell behind comes from what
// it sustained, below the requested scale.
func TestAbortReportsOneInstant(t *testing.T) {
	late := 3121.0
	e := &LiveSummary{OverloadAtSeconds: &late, BehindAtSeconds: &late}
	e.clampTo(600)
	if *e.OverloadAtSeconds != 600 || *e.BehindAtSeconds != 600 {
		t.Errorf("clamped to %v / %v, want 600", *e.OverloadAtSeconds, *e.BehindAtSeconds)
	}
	sc := verdictScenario(t, 1000, 10*time.Minute)
	sc.TimeScale = 100
	var s Summary
	s.Emulator = &LiveSummary{SuggestedTimeScale: 880}
	s.Overlay.NeighborsMean = 10
	// 1,000 peers × 10 neighbors / 30 s need 333 msgs per emulated second;
	// 10,000 handled per wall second sustain ×30, planned at 0.6: 18.
	if got := sustainedTimeScale(sc, s, 10*time.Second, 100_000); got != 18 {
		t.Errorf("suggested %g, want 18", got)
	}
	if got := sustainedTimeScale(sc, s, 10*time.Second, 1e9); got != 90 {
		t.Errorf("suggested %g, want 90 (below the requested 100)", got)
	}
}

// TestLostWorkerFailsEvenWhenOverloaded: a run that lost a worker is
// failed, not overloaded, even when its clock also fell behind (the
// machine's reasons are still listed after the lost worker's); a run
// that only fell behind stays overloaded.
func TestLostWorkerFailsEvenWhenOverloaded(t *testing.T) {
	behind := InvariantCheck{Name: "kept_up", Detail: "clock lag p99 0.8 s emulated > 0.3 s"}
	lost := InvariantCheck{Name: "workers_alive", Detail: "worker 1 (pid 7 on vm) stopped heartbeating"}
	for _, c := range []struct {
		checks []InvariantCheck
		want   string
		first  string
		exit   int
	}{
		{[]InvariantCheck{behind, lost}, OutcomeFailed, "workers_alive:", ExitFailed},
		{[]InvariantCheck{behind}, OutcomeOverloaded, "kept_up:", ExitOverloaded},
		{[]InvariantCheck{lost}, OutcomeFailed, "workers_alive:", ExitFailed},
	} {
		var s Summary
		for _, ch := range c.checks {
			s.Invariants.fail(ch.Name, ch.Detail)
		}
		s.decide("")
		if s.Outcome != c.want || len(s.OutcomeReasons) != len(c.checks) || !strings.HasPrefix(s.OutcomeReasons[0], c.first) {
			t.Errorf("checks %v: outcome %s %v, want %s first naming %s", c.checks, s.Outcome, s.OutcomeReasons, c.want, c.first)
		}
		if got := s.ExitCode(true); got != c.exit {
			t.Errorf("checks %v: --strict exit %d, want %d", c.checks, got, c.exit)
		}
	}
}
