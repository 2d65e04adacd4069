package sim_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/sim"
)

// BenchmarkBuildOverlay measures the in-process join phase of
// peers.bootstrap: direct (docs/BENCHMARKS.md, the 100,000-peer target) at the target's settings:
// mixed peers, 4 resource dimensions + virtual, vanilla heartbeats every
// 30 s, joins over a 4-minute window. GRIDBED_BENCH_PEERS sets the peer
// count (default 10,000), GRIDBED_BENCH_WINDOW the join window.
//
//	GRIDBED_BENCH_PEERS=100000 go test -run XXX -bench BenchmarkBuildOverlay -benchtime 1x ./emulator/sim/
func BenchmarkBuildOverlay(b *testing.B) {
	n := 10000
	if s := os.Getenv("GRIDBED_BENCH_PEERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	nodes, err := population.Generate(population.Mixed, n, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	points := make([]can.Point, n)
	for i, nd := range nodes {
		points[i] = nd.Point
	}
	window := 4 * time.Minute
	if s := os.Getenv("GRIDBED_BENCH_WINDOW"); s != "" {
		if window, err = time.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		bo, err := sim.BuildOverlay(context.Background(), sim.BootstrapOptions{Seed: 1, Overlay: overlay.Config{HeartbeatPeriod: 30 * time.Second}, Points: points, JoinWindow: window})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bo.Events), "events")
		b.ReportMetric(bo.At.Seconds(), "handover_s")
	}
}
