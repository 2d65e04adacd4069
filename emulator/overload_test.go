package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// TestOverloadGuardDecides feeds the guard windows of pressure: a steady
// small lag passes, a lag above the tolerance warns once, a steady lag
// above a heartbeat period warns but does not trip, a growing one trips
// and so does one steadily more than farPeriods periods late,
// and so does a backlog that grows window after window.
func TestOverloadGuardDecides(t *testing.T) {
	const scale = 100.0
	period := 30 * time.Second // tolerance 0.3 s = 3 ms wall; a period is 300 ms wall
	w := time.Second
	run := func(ps []live.Pressure) (warns, trips int, reason string, tripAt int) {
		g := newOverloadGuard(scale, period, LagTolerance)
		tripAt = -1
		for i, p := range ps {
			v := g.observe(p, w)
			if v.Warn {
				warns++
			}
			if v.Trip {
				trips++
				if tripAt < 0 {
					tripAt, reason = i, v.Reason
				}
			}
		}
		return
	}
	repeat := func(n int, p live.Pressure) []live.Pressure {
		out := make([]live.Pressure, n)
		for i := range out {
			out[i] = p
		}
		return out
	}

	if warns, trips, _, _ := run(repeat(60, live.Pressure{LagP99: 0.001, Timers: 1000, Backlog: 5000})); warns != 0 || trips != 0 {
		t.Errorf("gentle run: %d warnings, %d trips; want none", warns, trips)
	}
	// One late window (a GC pause) is not a trend.
	spike := append(repeat(5, live.Pressure{LagP99: 0.001, Timers: 100}), live.Pressure{LagP99: 0.5, Timers: 100})
	spike = append(spike, repeat(5, live.Pressure{LagP99: 0.001, Timers: 100})...)
	if warns, trips, _, _ := run(spike); warns != 0 || trips != 0 {
		t.Errorf("one late window: %d warnings, %d trips; want none", warns, trips)
	}
	// Steadily 0.5 s late (more than a period): warn once, never trip.
	if warns, trips, _, _ := run(repeat(60, live.Pressure{LagP99: 0.5, Timers: 100})); warns != 1 || trips != 0 {
		t.Errorf("steady lag: %d warnings, %d trips; want 1 and 0", warns, trips)
	}
	// Steadily 4 s late (more than ten periods): hopeless even if it does
	// not grow.
	warns, trips, reason, at := run(repeat(30, live.Pressure{LagP99: 4, Timers: 100}))
	if warns != 1 || trips == 0 || at != lagWindows-1 || !strings.Contains(reason, "heartbeat periods") {
		t.Errorf("steady far lag: %d warnings, %d trips (first at window %d: %q); want 1 warning and a trip", warns, trips, at, reason)
	}
	// Lag growing by 0.2 s a window: a runaway.
	var grow []live.Pressure
	for i := range 30 {
		grow = append(grow, live.Pressure{LagP99: 0.4 + 0.2*float64(i), Timers: 100})
	}
	warns, trips, reason, at = run(grow)
	if warns != 1 || trips == 0 || at != lagWindows-1 || !strings.Contains(reason, "later and later") {
		t.Errorf("growing lag: %d warnings, %d trips (first at window %d: %q); want 1 warning and a trip", warns, trips, at, reason)
	}
	// Peers stuck: timers wait in mailboxes and none is handled.
	stuck := append([]live.Pressure{{LagP99: 0.4, Timers: 100}}, repeat(20, live.Pressure{TimersQueued: 500})...)
	if _, trips, _, _ := run(stuck); trips == 0 {
		t.Error("stuck peers: no trip")
	}
	// The backlog grows by 50k messages a second while timers stay punctual.
	var flood []live.Pressure
	for i := range 20 {
		b := int64(100_000 + 50_000*i)
		flood = append(flood, live.Pressure{LagP99: 0.001, Timers: 100, Backlog: b, Published: uint64(200_000 * i),
			Waiting: map[string]int64{"job_probe": b / 4, "heartbeat": b - b/4 - 10, "join": 4, "leave": 3, "zone_update": 3}, TimersQueued: 7})
	}
	_, trips, reason, at = run(flood)
	// A quarter of what was published piled up: the peers sustained
	// three quarters of the time scale.
	g := newOverloadGuard(scale, period, LagTolerance)
	var sustained float64
	for _, p := range flood {
		if v := g.observe(p, w); v.Trip && sustained == 0 {
			sustained = v.Sustained
		}
	}
	if sustained < 0.74*scale || sustained > 0.76*scale {
		t.Errorf("growing backlog: sustained time scale %g, want 0.75 × %g", sustained, scale)
	}
	if trips == 0 || !strings.Contains(reason, "backlog grew") {
		t.Errorf("growing backlog: no trip (reason %q)", reason)
	} else if want := "; waiting: 487490 heartbeat, 162500 job_probe, 4 join, 6 more of 2 other types, 7 timers; piling up: heartbeat (+375000, from 112490 to 487490), job_probe (+125000, from 37500 to 162500)"; !strings.HasSuffix(reason, want) {
		t.Errorf("growing backlog: the reason does not name what waits, most first, and what piled up: %q, want it to end %q", reason, want)
	} else if at < growWindows {
		t.Errorf("growing backlog tripped at window %d, before %d windows of growth above the floor", at, growWindows)
	}
	// A large backlog that comes and goes (heartbeat bursts) is not a runaway.
	var bursts []live.Pressure
	for i := range 40 {
		bursts = append(bursts, live.Pressure{LagP99: 0.001, Timers: 100, Backlog: int64(300_000 + 100_000*(i%3))})
	}
	if _, trips, _, _ := run(bursts); trips != 0 {
		t.Errorf("bursty backlog: %d trips, want none", trips)
	}
}

// overloadScenario is a tiny run with jobs at a time scale no machine
// keeps up with (a heartbeat period is 30 µs of wall time): 40 peers,
// 100 jobs due in the first emulated hour, and a duration (a year) that
// would take half a minute of wall time.
func overloadScenario(t *testing.T, policy string, duration time.Duration) scenario.Scenario {
	t.Helper()
	sc := keepUpScenario(t, 40, 1e6, duration)
	sc.Peers.JoinWindow = time.Minute
	sc.Oracle.Interval = duration / 4
	sc.Workload.Jobs, sc.Workload.Interarrival, sc.Workload.Start = 100, 30*time.Second, 2*time.Minute
	sc.Emulator.Overload = policy
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestOverloadAbortsRun: by default an emulator run that cannot keep up
// stops early and cleanly — results up to the abort, emulator.aborted with
// the reason and a smaller time scale, every job accounted for (none
// lost; those not ended unfinished because of the abort), the failed
// run_completed check — after a warning on the logger.
func TestOverloadAbortsRun(t *testing.T) {
	sc := overloadScenario(t, scenario.OverloadAbort, 365*24*time.Hour)
	// It falls behind on purpose: it holds the most a test takes, a
	// core (its spare goroutines may spill onto the other for the few
	// seconds it runs).
	cores.Hold(t, cores.Most)
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, sc, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), OverloadWindow: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	s := res.Summary
	e := s.Emulator
	if e == nil || !e.Aborted {
		t.Fatalf("seed %d: not aborted at time scale %g: %+v", sc.Seed, sc.TimeScale, e)
	}
	if e.KeptUp || e.Reason == "" || e.OverloadAtSeconds == nil || e.BehindAtSeconds == nil || *e.BehindAtSeconds > *e.OverloadAtSeconds {
		t.Errorf("emulator section: kept_up %v, reason %q, behind at %v, overload at %v", e.KeptUp, e.Reason, e.BehindAtSeconds, e.OverloadAtSeconds)
	}
	if !(e.SuggestedTimeScale > 0 && e.SuggestedTimeScale < sc.TimeScale) {
		t.Errorf("suggested time scale %g, want in (0, %g)", e.SuggestedTimeScale, sc.TimeScale)
	}
	// Hopelessly behind from the start, it is stopped by the first rule
	// that can: timers later than failure detection waits, two windows.
	if !strings.Contains(e.Reason, "later than failure detection waits") {
		t.Errorf("seed %d: reason %q: want the failure-detection rule", sc.Seed, e.Reason)
	}
	if s.EmulatedSeconds >= sc.Duration.Seconds() || s.EmulatedSeconds <= 0 {
		t.Errorf("emulated %g s of %g: the summary should cover the run up to the abort", s.EmulatedSeconds, sc.Duration.Seconds())
	}
	j := s.Jobs
	if j == nil {
		t.Fatal("no jobs section")
	}
	if j.Lost != 0 || j.Completed+j.Failed+j.Unfinished != j.Submitted || !strings.Contains(j.UnfinishedBecause, "run aborted") {
		t.Errorf("jobs: %d submitted, %d completed, %d failed, %d unfinished (%q), %d lost", j.Submitted, j.Completed, j.Failed, j.Unfinished, j.UnfinishedBecause, j.Lost)
	}
	if s.Invariants.OK {
		t.Error("invariants OK for an aborted run")
	}
	var completed *InvariantCheck
	for i, c := range s.Invariants.Checks {
		if c.Name == "run_completed" {
			completed = &s.Invariants.Checks[i]
		}
	}
	if completed == nil || completed.OK || !strings.Contains(completed.Detail, "aborted") {
		t.Errorf("run_completed check: %+v", completed)
	}
	l := logs.String()
	t.Log(l)
	warn, stop := strings.Index(l, "falling behind"), strings.Index(l, "stopping the run")
	if warn < 0 || stop < 0 || warn > stop || !strings.Contains(l, "suggested_time_scale=") {
		t.Errorf("want a warning, then the stop, on the logger:\n%s", l)
	}
	js, _ := json.Marshal(s)
	var back map[string]map[string]any
	_ = json.Unmarshal(js, &back)
	if back["emulator"]["aborted"] != true || back["emulator"]["reason"] == "" || back["jobs"]["unfinished_because"] == nil {
		t.Errorf("summary.json: emulator %v, jobs.unfinished_because %v", back["emulator"], back["jobs"]["unfinished_because"])
	}
	var table bytes.Buffer
	s.PrintTable(&table)
	if !strings.Contains(table.String(), "ABORTED") {
		t.Errorf("table does not say the run was aborted:\n%s", table.String())
	}
}

// TestOverloadWarnOnly: with emulator.overload: warn the same overload is
// reported (early warning, the guard's finding) and the run goes on to its
// end.
func TestOverloadWarnOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("the race run keeps the abort case")
	}
	sc := overloadScenario(t, scenario.OverloadWarn, 30*24*time.Hour) // 2.6 s of wall time
	// It falls behind on purpose: it holds the most a test takes, a
	// core (its spare goroutines may spill onto the other for the few
	// seconds it runs).
	cores.Hold(t, cores.Most)
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, sc, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), OverloadWindow: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	s := res.Summary
	e := s.Emulator
	if e == nil || e.Aborted || e.KeptUp || e.OverloadAtSeconds == nil || e.Reason == "" || e.Overload != scenario.OverloadWarn {
		t.Fatalf("seed %d: emulator section %+v; want not aborted, not kept up, the guard's finding recorded", sc.Seed, e)
	}
	if s.EmulatedSeconds != sc.Duration.Seconds() {
		t.Errorf("emulated %g s, want the whole %g s", s.EmulatedSeconds, sc.Duration.Seconds())
	}
	if j := s.Jobs; j == nil || j.UnfinishedBecause != "" {
		t.Errorf("jobs section %+v: a run that reached its end has no abort to blame", j)
	}
	if l := logs.String(); !strings.Contains(l, "falling behind") || !strings.Contains(l, "going on because emulator.overload is warn") {
		t.Errorf("want the early warning and the guard's finding on the logger:\n%s", l)
	}
}

// TestUnansweredSampleAbortsRun: an oracle sample the peers do not answer
// in time (at 100,000 peers, stuck behind their mailboxes) stops the run
// as an overload with its results — aborted, the reason saying so, a last
// snapshot taken after the freeze — instead of failing it with none.
func TestUnansweredSampleAbortsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a live run over NATS stopped by its guard")
	}
	sc := keepUpScenario(t, 20, 60, 10*time.Minute)
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, sc, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), SampleWait: time.Nanosecond})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	s := res.Summary
	if e := s.Emulator; e == nil || !e.Aborted || !strings.Contains(e.Reason, "oracle") {
		t.Fatalf("seed %d: emulator section %+v, want aborted because the oracle got no answer", sc.Seed, e)
	}
	if s.Peers.Final == 0 || s.Invariants.OK {
		t.Errorf("seed %d: %d peers in the last snapshot, invariants OK %v; want the frozen peers counted and a failed run_completed", sc.Seed, s.Peers.Final, s.Invariants.OK)
	}
	if !strings.Contains(logs.String(), "stopping the run") {
		t.Errorf("no stop on the logger:\n%s", logs.String())
	}
}

// TestOverloadGuardFailureDetection: timers handled later than failure
// detection waits (fail_after heartbeat periods) in two windows in a row
// trip the guard at the second, naming what piled up meanwhile; one such
// window, or a lag below it, does not; a lag p99 is judged by its bucket's
// lower bound.
func TestOverloadGuardFailureDetection(t *testing.T) {
	const scale = 3000.0
	period := 30 * time.Second // detection after 90 s emulated = 30 ms wall
	w := time.Second
	guard := func() *overloadGuard {
		return newOverloadGuard(scale, period, 0.1).withFailureDetection(3).withPeers(100)
	}
	trips := func(ps ...live.Pressure) (at int, reason string) {
		g := guard()
		for i, p := range ps {
			if v := g.observe(p, w); v.Trip {
				return i, v.Reason
			}
		}
		return -1, ""
	}
	calm := live.Pressure{LagP99: 0.000512, Timers: 1000, Waiting: map[string]int64{"heartbeat": 20}, Backlog: 20}
	// 0.131 s is the bucket [65.5, 131) ms: 197-393 s emulated, sure to be
	// beyond 90 s; 0.065536 is [32.8, 65.5) ms: 98-197 s, sure too;
	// 0.032768 is [16.4, 32.8) ms: 49-98 s, not sure.
	late := func(p99 float64, zu int64) live.Pressure {
		return live.Pressure{LagP99: p99, Timers: 500, Backlog: zu + 20, Waiting: map[string]int64{"heartbeat": 20, "zone_update": zu}}
	}
	if at, r := trips(calm, calm, late(0.131072, 500), calm, late(0.131072, 900), calm); at >= 0 {
		t.Errorf("single late windows tripped at %d: %q", at, r)
	}
	if at, r := trips(calm, late(0.032768, 100), late(0.032768, 100), late(0.032768, 100)); at >= 0 {
		t.Errorf("a lag that may be below detection tripped at %d: %q", at, r)
	}
	at, r := trips(calm, late(0.065536, 4311), late(1.048576, 59038))
	if at != 2 || !strings.Contains(r, "later than failure detection waits (overlay.heartbeat.fail_after 3 × 30 s = 90 s emulated) for 2 s") ||
		!strings.Contains(r, "waiting: 59038 zone_update, 20 heartbeat") || !strings.HasSuffix(r, "; piling up: zone_update (+59038, from 0 to 59038)") {
		t.Errorf("two windows beyond detection: trip at %d, %q", at, r)
	}
	// Peers stuck: no timer handled while expired ones wait counts as
	// later and later.
	if at, _ := trips(calm, live.Pressure{LagP99: 0.1, Timers: 10}, live.Pressure{TimersQueued: 100}); at != 2 {
		t.Errorf("stuck peers after a late window: trip at %d, want 2", at)
	}
	// Without failure detection watched (fail_after unknown) the guard
	// waits for its other rules.
	g := newOverloadGuard(scale, period, 0.1)
	for i := range 5 {
		if v := g.observe(late(1.048576, int64(1000*i)), w); v.Trip {
			t.Errorf("no fail_after: tripped at window %d: %q", i, v.Reason)
		}
	}
}

// TestOverloadGuardBacklogPerPeer: a small run's mailboxes that grow
// window after window trip the guard long before the large-run floor of
// 200k messages: at 50 a peer (5,000 for 100 peers), naming the type that
// piled up.
func TestOverloadGuardBacklogPerPeer(t *testing.T) {
	if f := newOverloadGuard(600, 30*time.Second, 0.1).withPeers(100).floor; f != backlogMinFloor {
		t.Errorf("floor for 100 peers %d, want %d", f, backlogMinFloor)
	}
	if f := newOverloadGuard(600, 30*time.Second, 0.1).withPeers(1000).floor; f != 50_000 {
		t.Errorf("floor for 1000 peers %d, want 50000", f)
	}
	if f := newOverloadGuard(600, 30*time.Second, 0.1).withPeers(100_000).floor; f != backlogFloor {
		t.Errorf("floor for 100k peers %d, want %d", f, backlogFloor)
	}
	g := newOverloadGuard(600, 30*time.Second, 0.1).withFailureDetection(3).withPeers(100)
	tripAt, reason := -1, ""
	for i := range 20 {
		zu := int64(4000 + 3000*i)
		p := live.Pressure{LagP99: 0.001, Timers: 100, Backlog: zu + 50, Published: uint64(10_000 * i),
			Waiting: map[string]int64{"zone_update": zu, "heartbeat": 50}}
		if v := g.observe(p, time.Second); v.Trip {
			tripAt, reason = i, v.Reason
			break
		}
	}
	// Above 5,000 from window 1 on: growth in windows 1..10 trips at 10.
	if tripAt != growWindows || !strings.Contains(reason, "backlog grew in every one of the last 10 s") ||
		!strings.HasSuffix(reason, "; piling up: zone_update (+30000, from 4000 to 34000)") {
		t.Errorf("trip at window %d (want %d): %q", tripAt, growWindows, reason)
	}
}
