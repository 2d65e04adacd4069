package emulator_test

import (
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// checkRegionLatency: the summary lists the shipped matrix's 10 regions
// with every initial peer in one of them, and nearly every ordered pair
// measured; on every measured pair no message arrived before the pair's
// median less its jitter, and the mean is within the jitter of the
// median, plus extra (what the bus adds on the emulator).
func checkRegionLatency(t *testing.T, sc scenario.Scenario, s emulator.Summary, extraMs float64) {
	t.Helper()
	r := s.RegionLatency
	if r == nil || len(r.Regions) != 10 || len(r.Pairs) != 100 {
		t.Fatalf("seed %d: region latency section %+v", sc.Seed, r)
	}
	peers := 0
	for _, g := range r.Regions {
		peers += g.Peers
	}
	if peers != sc.Peers.Count {
		t.Errorf("seed %d: %d peers placed in regions, want %d", sc.Seed, peers, sc.Peers.Count)
	}
	measured := 0
	for _, p := range r.Pairs {
		if p.Messages == 0 {
			continue
		}
		measured++
		const eps = 1e-3 // ms: rounding of the emulated clock
		if *p.MinMs < p.MedianMs-p.JitterMs-eps || *p.MeanMs < p.MedianMs-p.JitterMs-eps || *p.MeanMs > p.MedianMs+p.JitterMs+extraMs+eps {
			t.Errorf("seed %d: %s → %s: %d messages, min %.3f mean %.3f max %.3f ms; the matrix says %.3f ± %.3f ms (plus up to %.1f ms)",
				sc.Seed, p.From, p.To, p.Messages, *p.MinMs, *p.MeanMs, *p.MaxMs, p.MedianMs, p.JitterMs, extraMs)
		}
		if extraMs == 0 && *p.MaxMs > p.MedianMs+p.JitterMs+eps {
			t.Errorf("seed %d: %s → %s: max %.3f ms above %.3f + %.3f", sc.Seed, p.From, p.To, *p.MaxMs, p.MedianMs, p.JitterMs)
		}
	}
	if measured < 90 {
		t.Errorf("seed %d: %d of 100 pairs of regions measured, want at least 90", sc.Seed, measured)
	}
	t.Logf("seed %d: %d of 100 pairs measured", sc.Seed, measured)
}

// TestRegionLatencyFromMeasuredData: examples/regions.yaml on the
// deterministic driver delays every message by its pair's median within
// its jitter, exactly (examples/ibm-cloud-regions.csv).
func TestRegionLatencyFromMeasuredData(t *testing.T) {
	sc := emutest.Load(t, "../examples/regions.yaml")
	s := emutest.Run(t, sc, emulator.DriverSim).Summary
	if s.Outcome != emulator.OutcomePassed {
		t.Errorf("seed %d: outcome %s %v", sc.Seed, s.Outcome, s.OutcomeReasons)
	}
	checkRegionLatency(t, sc, s, 0)
}

// TestRegionLatencyFromMeasuredDataLive: the same on the emulator at time
// scale 1, where the bus and the mailbox add their own wall time to each
// message: no message arrives early, and each pair's mean is within its
// jitter plus 5 ms of the median (a few tenths of a millisecond here).
func TestRegionLatencyFromMeasuredDataLive(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a 40-s live run")
	}
	sc := emutest.Load(t, "../examples/regions.yaml", "duration=40s")
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	emutest.Live(t, s)
	checkRegionLatency(t, sc, s, 5)
}
