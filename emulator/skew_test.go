package emulator_test

import (
	"fmt"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// skewScenario is 80 peers for 15 minutes with the given clock drift and
// failure limit.
func skewScenario(t *testing.T, seed uint64, drift float64, failAfter int) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "skew-test.yaml", `
seed: %d
time_scale: 40
duration: 15m
peers: {count: 80, join_window: 1m, clock: {drift: %g, offset: 3s}}
overlay: {dimensions: 2, heartbeat: {period: 30s, fail_after: %d}}
oracle: {interval: 30s}
`, seed, drift, failAfter)
}

// TestClockSkewFalseSuspicions: a peer suspects a live neighbor only when
// the ratio of their clock rates exceeds fail_after (no message lost).
// Clocks within ±1% never do with fail_after 3; ±50% with fail_after 1 do,
// on both drivers, and the summary reports the configured spread.
func TestClockSkewFalseSuspicions(t *testing.T) {
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	const seed = 5
	for _, c := range []struct {
		driver    string
		drift     float64
		failAfter int
		some      bool
	}{
		{emulator.DriverSim, 0.01, 3, false},
		{emulator.DriverSim, 0.3, 3, false},
		{emulator.DriverSim, 0.5, 1, true},
		{emulator.DriverLive, 0.01, 3, false},
		{emulator.DriverLive, 0.5, 1, true},
	} {
		t.Run(fmt.Sprintf("%s drift %g fail_after %d", c.driver, c.drift, c.failAfter), func(t *testing.T) {
			if c.driver == emulator.DriverLive && testing.Short() {
				t.Skip("emulator run")
			}
			s := emutest.Run(t, skewScenario(t, seed, c.drift, c.failAfter), c.driver).Summary
			if cl := s.Peers.Clocks; cl == nil || cl.Drift != c.drift || cl.Dist != "uniform" || cl.OffsetSeconds != 3 {
				t.Fatalf("seed %d: peers.clocks = %+v", seed, cl)
			}
			got := s.Overlay.FalseSuspicions
			if c.some != (got > 0) {
				t.Fatalf("seed %d: %d false suspicions (failures detected %d), want some: %v", seed, got, s.Overlay.FailuresDetected, c.some)
			}
			if !c.some && s.Overlay.FailuresDetected != 0 {
				t.Fatalf("seed %d: %d failures detected without a departure", seed, s.Overlay.FailuresDetected)
			}
			if c.some && s.Overlay.FalseSuspicions > s.Overlay.FailuresDetected {
				t.Fatalf("seed %d: %d false suspicions of %d detections", seed, got, s.Overlay.FailuresDetected)
			}
			t.Logf("seed %d: %d false suspicions, outcome %s", seed, got, s.Outcome)
		})
	}
}

// TestSlowPeers: slow peers' messages wait for their service on both
// drivers. At 1 s a message the slow peers keep up (a peer receives about
// 15 messages a minute); at 8 s their queues grow without bound, their
// heartbeats' news comes late and neighbors suspect them, though alive.
// Every message is still accounted for.
func TestSlowPeers(t *testing.T) {
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	const seed = 3
	for _, c := range []struct {
		driver string
		delay  string
		late   bool
	}{
		{emulator.DriverSim, "1s", false},
		{emulator.DriverSim, "8s", true},
		{emulator.DriverLive, "8s", true},
	} {
		t.Run(c.driver+" "+c.delay, func(t *testing.T) {
			if c.driver == emulator.DriverLive && testing.Short() {
				t.Skip("emulator run")
			}
			sc := faultScenario(t, seed, "", fmt.Sprintf("  - {at: 3m, slow: {fraction: 0.2, delay: %s}}\n  - {at: 7m, slow: {delay: 0s}}\n", c.delay))
			sc.TimeScale = 40
			s := emutest.Run(t, sc, c.driver).Summary
			sl := s.Faults.Slow
			if sl == nil || sl.Messages == 0 {
				t.Fatalf("seed %d: no message waited for a slow peer: %+v", seed, sl)
			}
			if sl.MeanWaitSeconds < 1 || sl.MaxWaitSeconds < sl.MeanWaitSeconds {
				t.Fatalf("seed %d: waits %+v, want at least the service time", seed, sl)
			}
			if s.Faults.ByKind["slow"] != 2 {
				t.Fatalf("seed %d: slow faults applied %v", seed, s.Faults.ByKind)
			}
			if c := s.Invariants.Check("messages_accounted"); c == nil || !c.OK {
				t.Fatalf("seed %d: %+v", seed, c)
			}
			if c.late != (s.Overlay.FalseSuspicions > 0) {
				t.Fatalf("seed %d: %d false suspicions with %+v, want some: %v", seed, s.Overlay.FalseSuspicions, sl, c.late)
			}
			t.Logf("seed %d: %+v, %d false suspicions, outcome %s", seed, *sl, s.Overlay.FalseSuspicions, s.Outcome)
		})
	}
}
