package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

// scrape reads one series of a run's registry: the counter or gauge name
// whose label has the given value.
func scrape(t *testing.T, m *metrics.Run, name, label, value string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if c := s.GetCounter(); c != nil {
						return c.GetValue()
					}
					return s.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

// faultScenario is a small overlay (120 peers, d=2, 10 emulated minutes)
// with the given fault timeline (YAML list entries) and link section.
func faultScenario(t *testing.T, seed uint64, link, faults string) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "fault-test.yaml", `
seed: %d
duration: 12m
peers: {count: 120, join_window: 1m}
overlay: {dimensions: 2, heartbeat: {period: 30s}}
oracle: {interval: 30s}
link: {%s}
faults:
%s`, seed, link, faults)
}

// worst is the largest oracle damage (broken links + gaps + overlaps) seen
// in the series from time from on.
func worst(res *emulator.Result, from time.Duration) int {
	w := 0
	for _, s := range res.Series {
		if s.T >= from {
			w = max(w, s.Oracle.BrokenLinks+s.Oracle.ZoneGaps+s.Oracle.ZoneOverlaps)
		}
	}
	return w
}

// TestEachFaultIsApplied runs one fault of every kind through the scenario
// path with the deterministic driver and checks its effect, so that a
// fault silently not applied fails here; every run must also end exact
// (--strict's invariant).
func TestEachFaultIsApplied(t *testing.T) {
	emutest.SkipUnderRace(t, "single-threaded simulator runs")
	const seed = 7
	cases := []struct {
		name, link, faults string
		check              func(s emulator.Summary, res *emulator.Result) string
	}{
		{"partition then heal", "", "  - {at: 3m, partition: {fraction: 0.3}}\n  - {at: 5m, heal: {}}\n",
			func(s emulator.Summary, res *emulator.Result) string {
				if s.Faults.Dropped["partition"] == 0 || worst(res, 3*time.Minute) == 0 {
					return fmt.Sprintf("partition dropped %d messages and did no damage", s.Faults.Dropped["partition"])
				}
				if s.Overlay.Events["rejoin"] == 0 {
					return "after the heal no peer rejoined: the two sides never met"
				}
				return ""
			}},
		{"one-way partition of explicit peers", "", "  - {at: 3m, partition: {peers: [3, 4, 5, 6, 7], oneway: true}}\n  - {at: 5m, heal: {}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if s.Faults.Dropped["partition"] == 0 {
					return "no message dropped"
				}
				return ""
			}},
		{"loss", "", "  - {at: 3m, loss: {p: 0.5}}\n  - {at: 4m, loss: {p: 0}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				// A minute of heartbeats at ~15 messages per peer per
				// minute: about half of 1,800 lost.
				if d := s.Faults.Dropped["loss"]; d < 500 || d > 1500 {
					return fmt.Sprintf("%d messages lost in a minute at p = 0.5, want about 900", d)
				}
				return ""
			}},
		{"duplicate", "", "  - {at: 3m, duplicate: {p: 0.5}}\n  - {at: 4m, duplicate: {p: 0}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if d := s.Faults.Duplicated; d < 500 || d > 1500 {
					return fmt.Sprintf("%d messages duplicated in a minute at p = 0.5, want about 900", d)
				}
				return ""
			}},
		{"latency below the failure timeout", "", "  - {at: 3m, latency: {dist: constant, mean: 20s}}\n  - {at: 5m, latency: {mean: 0s}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				// Every message of two minutes delayed by 20 s, less than
				// fail_after × period (90 s): no neighbor looks dead.
				if s.Faults.Delayed < 2000 || s.Overlay.Events["failure_detected"] != 0 {
					return fmt.Sprintf("delayed %d, failures detected %d: want every message of two minutes delayed and no false failure", s.Faults.Delayed, s.Overlay.Events["failure_detected"])
				}
				return ""
			}},
		{"regions with inter-region latency", "regions: 3, inter_region: {dist: uniform, mean: 80ms}", "  - {at: 3m, partition: {region: 1}}\n  - {at: 5m, heal: {}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if s.Faults.Delayed == 0 || s.Faults.Dropped["partition"] == 0 {
					return fmt.Sprintf("delayed %d, region partition dropped %d", s.Faults.Delayed, s.Faults.Dropped["partition"])
				}
				return ""
			}},
		{"region latency matrix", "regions: 2, region_latency: [[0s, 2s], [0s, 0s]]", "  - {at: 3m, loss: {p: 0}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				// Only messages from region 0 to region 1 are delayed:
				// about a quarter of all, over the whole run.
				if f := float64(s.Faults.Delayed) / float64(s.Messages.Total); f < 0.15 || f > 0.35 {
					return fmt.Sprintf("%.2f of the messages delayed, want about a quarter (region 0 → 1 only)", f)
				}
				return ""
			}},
		{"crash a fraction", "", "  - {at: 3m, crash: {fraction: 0.2}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if s.Peers.Final != 96 || s.Overlay.Events["failure_detected"] == 0 {
					return fmt.Sprintf("%d peers left (want 96), %d failures detected", s.Peers.Final, s.Overlay.Events["failure_detected"])
				}
				return ""
			}},
		{"crash a region", "regions: 4", "  - {at: 3m, crash: {region: 2}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if gone := 120 - s.Peers.Final; gone < 15 || gone > 45 {
					return fmt.Sprintf("%d peers of a quarter of the regions crashed, want about 30", gone)
				}
				return ""
			}},
		{"crash and restart", "", "  - {at: 3m, crash: {fraction: 0.2, restart_after: 2m}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if s.Peers.Final != 120 || s.Faults.ByKind["restart"] != 1 {
					return fmt.Sprintf("%d peers at the end (want 120: 24 restarted as new peers), restarts %d", s.Peers.Final, s.Faults.ByKind["restart"])
				}
				return ""
			}},
		{"bus outage", "", "  - {at: 3m, bus_restart: {down_for: 20s}}\n",
			func(s emulator.Summary, _ *emulator.Result) string {
				if s.Faults.Dropped["bus_outage"] < 100 {
					return fmt.Sprintf("%d messages lost in a 20 s outage", s.Faults.Dropped["bus_outage"])
				}
				return ""
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := faultScenario(t, seed, c.link, c.faults)
			if strings.Contains(c.link, "region_latency") {
				// Joins are sequential: with 2 s between the regions each
				// takes seconds, and the population forms in minutes.
				sc.Peers.JoinWindow, sc.Duration = 8*time.Minute, 14*time.Minute
			}
			res := emutest.Run(t, sc, emulator.DriverSim)
			s := res.Summary
			if len(s.Faults.Events) != len(sc.Faults)+int(s.Faults.ByKind["restart"]) {
				t.Errorf("seed %d: %d fault events for %d faults: %+v", seed, len(s.Faults.Events), len(sc.Faults), s.Faults.Events)
			}
			if msg := c.check(s, res); msg != "" {
				t.Errorf("seed %d: %s", seed, msg)
			}
			if !s.Invariants.OK {
				t.Errorf("seed %d: invariants failed: %+v", seed, s.Invariants.Checks)
			}
		})
	}
}

// TestNeverHealedPartitionFailsTheInvariant: a partition that lasts to the
// end leaves two overlays claiming the same space; the invariant says so.
func TestNeverHealedPartitionFailsTheInvariant(t *testing.T) {
	sc := faultScenario(t, 3, "", "  - {at: 3m, partition: {fraction: 0.4}}\n")
	s := emutest.Run(t, sc, emulator.DriverSim).Summary
	if c := s.Invariants.Check("overlay_reconverged"); s.Invariants.OK || c == nil || c.OK {
		t.Fatalf("seed %d: a partition never healed passed the invariant: %+v", sc.Seed, s.Invariants.Checks)
	}
}

// TestChaosReplaysExactly is the chaos example, at 200 peers, run twice with
// the deterministic driver: the summaries are identical (wall time aside),
// the overlay heals after the partition and the crash, and --strict's
// invariant holds.
func TestChaosReplaysExactly(t *testing.T) {
	t.Parallel() // deterministic-driver runs: one event loop each
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	sc := emutest.Load(t, "../examples/chaos.yaml")
	// 200 peers: the example at its own size is TestGoldenExamples's.
	if err := sc.SetAll("peers.count=200"); err != nil {
		t.Fatal(err)
	}
	a := emutest.Run(t, sc, emulator.DriverSim).Summary
	b := emutest.Run(t, sc, emulator.DriverSim).Summary
	for _, s := range []*emulator.Summary{&a, &b} {
		s.WallSeconds, s.Messages.PerWallSecond, s.Peers.BootstrapWallSeconds = 0, nil, 0
		s.Sim.LoopSeconds, s.Sim.EventsPerSecond = 0, 0
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("seed %d: two runs of the same chaos scenario differ:\n%s\n%s", sc.Seed, ja, jb)
	}
	if !a.Invariants.OK || a.Overlay.ReconvergeSeconds == nil {
		t.Fatalf("seed %d: chaos run did not heal: %+v", sc.Seed, a.Invariants.Checks)
	}
	for _, e := range a.Faults.Events {
		if e.Kind == scenario.FaultCrash && e.ExactAfterSeconds == nil {
			t.Errorf("seed %d: the overlay was not exact again after the crash at %.0f s", sc.Seed, e.TSeconds)
		}
	}
	if a.Faults.Dropped["partition"] == 0 || a.Overlay.Events["zone_conflict"] == 0 {
		t.Errorf("seed %d: partition dropped %d messages, %d zone conflicts: the partition did nothing", sc.Seed, a.Faults.Dropped["partition"], a.Overlay.Events["zone_conflict"])
	}
}

// TestNATSRestartSurvived: the embedded NATS server stops for 10 emulated
// seconds mid-run under real peers. Clients reconnect, the overlay is
// exact at the end, and every message is accounted for: delivered,
// unroutable, or lost in the outage (refused publishes included).
func TestNATSRestartSurvived(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run: exactness at the end needs timers on time, which the race detector's slowdown does not give (emulator/bus tests the outage under -race)")
	}
	doc := `
seed: 5
time_scale: 40
duration: 6m
peers: {count: 60, join_window: 1m}
overlay: {dimensions: 2, heartbeat: {period: 30s}}
faults:
  - {at: 3m, bus_restart: {down_for: 10s}}
`
	for _, fanout := range []string{scenario.FanoutPerReceiver, scenario.FanoutBatched} {
		t.Run(fanout, func(t *testing.T) {
			sc := emutest.Parse(t, "nats-restart.yaml", doc+"bus: {fanout: "+fanout+"}\n")
			natsRestartSurvived(t, sc)
		})
	}
}

func natsRestartSurvived(t *testing.T, sc scenario.Scenario) {
	var m *metrics.Run
	res, _ := emutest.Retry(t, sc, func(sc scenario.Scenario) *emulator.Result {
		m = metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverLive}) // a run's own counters
		cores.Hold(t, cores.Live)
		ctx, cancel := context.WithTimeout(context.Background(), emutest.LiveTimeout(sc))
		defer cancel()
		res, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverLive, Metrics: m})
		if err != nil {
			t.Fatalf("seed %d: %v", sc.Seed, err)
		}
		return res
	})
	emutest.Live(t, res.Summary)
	s := res.Summary
	b := s.Bus
	if b.Outages != 1 || b.Reconnects < uint64(sc.Bus.Connections) {
		t.Fatalf("seed %d: outages %d, reconnects %d (want 1 and ≥ %d)", sc.Seed, b.Outages, b.Reconnects, sc.Bus.Connections)
	}
	if b.Lost == 0 || b.Lost < b.Refused {
		t.Errorf("seed %d: lost %d, refused %d: a 10 s outage under heartbeats must lose messages, refused ones included", sc.Seed, b.Lost, b.Refused)
	}
	if in, out := b.Published+b.Refused, b.Delivered+b.Unroutable+b.Dropped+b.Lost+b.Discarded; in != out {
		t.Errorf("seed %d: published %d + refused %d ≠ delivered %d + unroutable %d + dropped %d + lost %d + discarded %d", sc.Seed, b.Published, b.Refused, b.Delivered, b.Unroutable, b.Dropped, b.Lost, b.Discarded)
	}
	if s.Faults.ByKind["bus_restart"] != 1 {
		t.Errorf("seed %d: faults section %+v does not report the outage", sc.Seed, s.Faults)
	}
	// The metric Grafana reads says the same.
	if got := scrape(t, m, "gridbed_messages_dropped_total", "reason", "bus_lost"); got != float64(b.Lost) {
		t.Errorf("seed %d: gridbed_messages_dropped_total{reason=\"bus_lost\"} = %g, bus lost %d", sc.Seed, got, b.Lost)
	}
	// The protocol's invariants; kept_up depends on the machine's load,
	// which a test must not.
	for _, name := range []string{"population_formed", "overlay_reconverged", "jobs_conserved"} {
		if c := s.Invariants.Check(name); c == nil || !c.OK {
			t.Errorf("seed %d: overlay not exact after the restart: %+v", sc.Seed, s.Invariants.Checks)
		}
	}
}

// TestSessionChurn: with the session model every peer departs after a
// drawn lifetime and a new one takes its place, so the population stays at
// its size while hundreds of peers come and go, and the overlay heals once
// churn stops.
func TestSessionChurn(t *testing.T) {
	emutest.SkipUnderRace(t, "single-threaded simulator runs")
	for _, dist := range []string{"exponential", "pareto", "weibull"} {
		doc := fmt.Sprintf(`
seed: 9
duration: 18m
peers: {count: 120, join_window: 1m}
overlay: {dimensions: 2}
churn: {start: 2m, stop: 12m, fail_fraction: 0.5, lifetime: {dist: %s, mean: 15m, shape: 1.5}}
`, dist)
		sc := emutest.Parse(t, "sessions.yaml", doc)
		s := emutest.Run(t, sc, emulator.DriverSim).Summary
		c := s.Churn
		// 120 slots × 10 min / 15 min ≈ 80 turnovers.
		// A slot whose peer is still joining when its lifetime ends is
		// skipped (and not refilled): rare.
		if c.Joins < 40 || c.Joins > 130 || c.Leaves+c.Failures != c.Joins || c.Failures == 0 || c.Leaves == 0 || c.Skipped > 2 {
			t.Errorf("%s seed %d: churn %+v, want about 80 departures, each replaced", dist, sc.Seed, c)
		}
		if s.Peers.Final < 118 {
			t.Errorf("%s seed %d: %d peers at the end, want the population kept at 120", dist, sc.Seed, s.Peers.Final)
		}
		// Whether the overlay is exact again 6 minutes after is logged,
		// not asserted: with pareto lifetimes it is not (docs/FAULTS.md,
		// "Known limits").
		t.Logf("%s seed %d: invariants %+v", dist, sc.Seed, s.Invariants.Checks)
	}
}

// TestFaultTriggeredByProtocolEvent: a partition waits for the first
// take-over (after a crash), and a fault whose event never happens never
// fires; the heal comes at a fixed time and the overlay is exact again.
func TestFaultTriggeredByProtocolEvent(t *testing.T) {
	sc := faultScenario(t, 11, "", `  - {at: 3m, crash: {fraction: 0.1}}
  - {when: {event: takeover}, partition: {name: t, fraction: 0.3}}
  - {when: {event: rejoin, count: 1000000}, loss: {p: 1}}
  - {at: 8m, heal: {name: t}}
`)
	s := emutest.Run(t, sc, emulator.DriverSim).Summary
	var kinds []string
	partitionAt := -1.0
	for _, e := range s.Faults.Events {
		kinds = append(kinds, e.Kind)
		if e.Kind == scenario.FaultPartition {
			partitionAt = e.TSeconds
		}
	}
	if fmt.Sprint(kinds) != "[crash partition heal]" {
		t.Fatalf("seed %d: faults applied %v, want [crash partition heal] (the loss never triggers)", sc.Seed, kinds)
	}
	// Failures are detected about 90 s after the crash; the partition
	// follows at the next oracle sample.
	if partitionAt <= 180 || partitionAt > 330 || s.Faults.Dropped["partition"] == 0 || s.Faults.Dropped["loss"] != 0 {
		t.Errorf("seed %d: partition at %.0f s (want after the first take-over, 4–5 min), dropped %v", sc.Seed, partitionAt, s.Faults.Dropped)
	}
	if !s.Invariants.OK {
		t.Errorf("seed %d: invariants %+v", sc.Seed, s.Invariants.Checks)
	}
}

// chaosHealSeeds are the seeds TestChaosExampleHeals runs, fixed before
// any of them was run; the seeds docs/OVERLAY.md reports its counts on
// (gridbed chaos --seed 7201, 7221, 7241) are kept out of the test.
var chaosHealSeeds = []uint64{9301, 9302, 9303, 9304}

// TestChaosExampleHeals runs examples/chaos.yaml's fault mix at its own
// size (500 peers: a partition of 30% that heals, a crash of 20%, a
// latency spike) on the deterministic driver and requires its
// overlay_reconverged invariant on every seed of chaosHealSeeds: the
// overlay is exact again within 20 heartbeat periods of the last fault
// (docs/OVERLAY.md, "Healing after faults").
func TestChaosExampleHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: the chaos example at 500 peers on four seeds")
	}
	emutest.SkipUnderRace(t, "single-threaded simulator runs")
	for _, seed := range chaosHealSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel() // each run is one single-threaded event loop
			sc := emutest.Load(t, "../examples/chaos.yaml")
			sc.Seed = seed
			s := emutest.Run(t, sc, emulator.DriverSim).Summary
			found := false
			for _, c := range s.Invariants.Checks {
				if c.Name == "overlay_reconverged" {
					found = true
					if !c.OK {
						t.Errorf("seed %d: overlay_reconverged failed: %s", seed, c.Detail)
					}
				}
			}
			if !found {
				t.Fatalf("seed %d: no overlay_reconverged check in the summary: %+v", seed, s.Invariants.Checks)
			}
		})
	}
}
