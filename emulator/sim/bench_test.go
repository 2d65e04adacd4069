package sim_test

import (
	"context"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/sim"
)

// BenchmarkDriverEvents measures the deterministic driver's event loop in
// a steady overlay at the papers' settings: 2,000 peers, 4 resource
// dimensions + virtual, vanilla heartbeats every 30 s (about 32
// neighbors per peer). One iteration is one emulated second; events/s
// counts protocol events (message deliveries and timer expiries) per wall
// second, and cpu-ns/event the process's CPU time (all threads) per event.
// decode=eager decodes every heartbeat's neighbor list, as before
// lazy decoding (DriverOptions.EagerDecoding).
//
//	go test -run XXX -bench BenchmarkDriverEvents -benchtime 300x ./emulator/sim/
//
// Profile the steady state alone with -cpuprofile and pprof's
// -tagfocus phase=loop.
func BenchmarkDriverEvents(b *testing.B) {
	for _, eager := range []bool{false, true} {
		name := "decode=lazy"
		if eager {
			name = "decode=eager"
		}
		b.Run(name, func(b *testing.B) {
			benchmarkDriverEvents(b, eager)
		})
	}
}

// benchmarkDriverEvents is BenchmarkDriverEvents with one decoding.
func benchmarkDriverEvents(b *testing.B, eager bool) {
	const peers, dims = 2000, 4
	nodes, err := population.Generate(population.Mixed, peers, dims, 1)
	if err != nil {
		b.Fatal(err)
	}
	d := sim.NewDriver(sim.DriverOptions{Seed: 1, Overlay: overlay.Config{HeartbeatPeriod: 30 * time.Second}, EagerDecoding: eager})
	for i, nd := range nodes {
		if err := d.Spawn(core.NodeID(i+1), nd.Point, time.Duration(i)*time.Minute/peers); err != nil {
			b.Fatal(err)
		}
	}
	d.Start()
	ctx := context.Background()
	t := 6 * time.Minute // all joined, the joins' tombstones expired
	if err := d.AdvanceTo(ctx, t); err != nil {
		b.Fatal(err)
	}
	ev0, _ := d.LoopStats()
	start, cpu0 := time.Now(), processCPU()
	b.ReportAllocs()
	// The loop's samples are labelled, so that a profile can leave the
	// set-up (joins, 6 emulated minutes) out: -tagfocus phase=loop.
	pprof.Do(ctx, pprof.Labels("phase", "loop"), func(ctx context.Context) {
		for b.Loop() {
			t += time.Second
			if err := d.AdvanceTo(ctx, t); err != nil {
				b.Fatal(err)
			}
		}
	})
	ev, _ := d.LoopStats()
	b.ReportMetric(float64(ev-ev0)/time.Since(start).Seconds(), "events/s")
	if cpu := processCPU() - cpu0; cpu > 0 && ev > ev0 {
		// The CPU of the whole process per event, the collector's on the
		// other core included: steadier than wall time on a shared machine,
		// and what a run costs.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(ev-ev0), "cpu-ns/event")
	}
}
