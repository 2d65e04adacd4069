package allocrun

import (
	"context"
	"reflect"
	"testing"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
)

func cfgFor(grid string, set, order int, a, rl alloc.Scheme, spikes string, seed uint64) Config {
	sp, _ := alloc.Spikes(spikes)
	return Config{Speeds: alloc.Grid(grid), Jobs: alloc.JobSet(set, order, Rand(seed)), Spikes: sp,
		Allocator: a, Relocator: rl, Theta: 0.1, MaxMoves: 3, Limit: 1000 * time.Hour}
}

// TestSimDeterministic: the same configuration and seed give the same
// result, series included; every job completes and every relocation
// ordered moves a job's state over the bus (or the job ended first).
func TestSimDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grid   string
		set    int
		a, rl  alloc.Scheme
		spikes string
		relocs bool
	}{
		{"synthetic greedy/greedy fig 2", alloc.GridSynthetic, 1, alloc.Greedy, alloc.Greedy, alloc.SpikesFig2, true},
		{"aeolus social/social fig 4", alloc.GridAeolus, 2, alloc.Social, alloc.Social, alloc.SpikesFig4, true},
		{"aeolus min-num/none", alloc.GridAeolus, 2, alloc.MinNum, alloc.None, alloc.SpikesNone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgFor(tc.grid, tc.set, 3, tc.a, tc.rl, tc.spikes, 7)
			cfg.Sample = 100 * time.Second
			first, err := RunSim(context.Background(), cfg, 7)
			if err != nil {
				t.Fatalf("seed 7: %v", err)
			}
			second, err := RunSim(context.Background(), cfg, 7)
			if err != nil {
				t.Fatalf("seed 7: %v", err)
			}
			if !reflect.DeepEqual(first, second) {
				t.Fatalf("seed 7: two runs differ:\n%+v\n%+v", first, second)
			}
			if first.Completed != first.Jobs || first.Submitted != first.Jobs || first.DecodeErrors != 0 {
				t.Fatalf("seed 7: %d of %d jobs allocated, %d completed, %d decode errors", first.Submitted, first.Jobs, first.Completed, first.DecodeErrors)
			}
			if tc.relocs != (first.Relocations > 0) || first.Migrated > first.Relocations {
				t.Fatalf("seed 7: %d relocations ordered, %d migrated", first.Relocations, first.Migrated)
			}
			if len(first.Series) == 0 || first.Makespan <= 0 {
				t.Fatalf("seed 7: makespan %v, %d samples", first.Makespan, len(first.Series))
			}
		})
	}
}

// TestFig2Spike: on the synthetic grid GREEDY places the disk-heavy C_4
// jobs on S_3, the machine with the fastest disk, far more than MIN-NUM
// does (004 Fig 2); once S_3's owner load rises to 0.95 at 1500 s — no job
// arrives after 1000 s — the GREEDY relocator moves jobs off S_3 as the
// other machines free up, while MIN-NUM keeps every machine's count equal.
// (SOCIAL's relocator barely moves any: docs/fidelity/004.md.)
func TestFig2Spike(t *testing.T) {
	runs := map[alloc.Scheme]Result{}
	series := func(s alloc.Scheme) [][]int {
		cfg := cfgFor(alloc.GridSynthetic, 1, 1, s, s, alloc.SpikesFig2, 1)
		cfg.Sample = 100 * time.Second
		res, err := RunSim(context.Background(), cfg, 1)
		if err != nil {
			t.Fatalf("%v, seed 1: %v", s, err)
		}
		if len(res.Series) < 100 {
			t.Fatalf("%v, seed 1: %d samples, makespan %.0f s", s, len(res.Series), res.Makespan)
		}
		runs[s] = res
		return res.Series
	}
	g, m := series(alloc.Greedy), series(alloc.MinNum)
	// Samples at 1400 s (index 13) and 10000 s (index 99).
	t.Logf("jobs per machine at 1400 s and 10000 s: greedy %v → %v, min-num %v → %v", g[13], g[99], m[13], m[99])
	if 2*g[13][3] < 3*m[13][3] {
		t.Errorf("seed 1: S_3 (the fastest disk) holds %d jobs under GREEDY before the spike, not 1.5× MIN-NUM's %d", g[13][3], m[13][3])
	}
	if 2*g[99][3] > g[13][3] || g[99][0] <= g[13][0] {
		t.Errorf("seed 1: GREEDY did not move jobs off S_3 after the spike: S_3 %d → %d, S_0 %d → %d", g[13][3], g[99][3], g[13][0], g[99][0])
	}
	for i := range m[13] {
		if d := m[13][i] - m[13][3]; d > 5 || d < -5 {
			t.Errorf("seed 1: MIN-NUM's counts are not balanced at 1400 s: %v", m[13])
		}
	}
	// The summary's view of the same (emulator: spike_share,
	// relocated_off_loaded): S_3's share of the jobs when its load rose,
	// and GREEDY's relocations off it.
	gr, mr := runs[alloc.Greedy], runs[alloc.MinNum]
	t.Logf("S_3's share at the spike: greedy %.2f (%d jobs), min-num %.2f; relocations off it: greedy %d, min-num %d", gr.SpikeShare, gr.SpikeJobs, mr.SpikeShare, gr.OffLoaded, mr.OffLoaded)
	if !(gr.SpikeShare > 1.5*mr.SpikeShare) || mr.SpikeShare < 0.2 || mr.SpikeShare > 0.3 {
		t.Errorf("seed 1: S_3's share of the jobs at the spike: greedy %.2f, min-num %.2f (want greedy above 1.5× min-num's, min-num about 1/4)", gr.SpikeShare, mr.SpikeShare)
	}
	if gr.OffLoaded < gr.SpikeJobs/2 || gr.OffLoaded > gr.Relocations {
		t.Errorf("seed 1: GREEDY relocated %d jobs off S_3 of the %d it held at the spike (%d relocations in all)", gr.OffLoaded, gr.SpikeJobs, gr.Relocations)
	}
}

// TestAllocatorCrash: the allocator crashes at 30 s for 40 s, through the
// 50 s burst; it loses its view and its counts, rebuilds them from the
// machines, allocates the jobs that waited, and no job is lost.
func TestAllocatorCrash(t *testing.T) {
	for _, s := range []alloc.Scheme{alloc.Greedy, alloc.Social, alloc.MinNum} {
		cfg := cfgFor(alloc.GridAeolus, 2, 1, s, s, alloc.SpikesFig4, 2)
		cfg.CrashAt, cfg.DownFor = 30*time.Second, 40*time.Second
		res, err := RunSim(context.Background(), cfg, 2)
		if err != nil {
			t.Fatalf("%v, seed 2: %v", s, err)
		}
		if !res.Crashed || res.Unroutable == 0 || res.Completed != res.Jobs || res.Submitted != res.Jobs {
			t.Fatalf("%v, seed 2: crashed %v, %d messages lost, %d of %d allocated, %d completed", s, res.Crashed, res.Unroutable, res.Submitted, res.Jobs, res.Completed)
		}
		clean, _ := RunSim(context.Background(), cfgFor(alloc.GridAeolus, 2, 1, s, s, alloc.SpikesFig4, 2), 2)
		t.Logf("%v: makespan %.0f s with the crash (%d messages lost), %.0f s without", s, res.Makespan, res.Unroutable, clean.Makespan)
	}
}

// TestLive: the same run over NATS at scaled wall time, with an allocator
// crash, completes every job, and relocation helps under Fig 4's spikes as
// on the deterministic driver.
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("NATS at scaled wall time")
	}
	opts := LiveOptions{TimeScale: 200}
	with := cfgFor(alloc.GridAeolus, 2, 10, alloc.Greedy, alloc.Greedy, alloc.SpikesFig4, 1)
	with.CrashAt, with.DownFor = 30*time.Second, 10*time.Second
	without := cfgFor(alloc.GridAeolus, 2, 10, alloc.Greedy, alloc.None, alloc.SpikesFig4, 1)
	rw, err := RunLive(context.Background(), with, opts)
	if err != nil {
		t.Fatalf("seed 1, with relocation: %v", err)
	}
	simW, _ := RunSim(context.Background(), with, 1)
	simWo, _ := RunSim(context.Background(), without, 1)
	t.Logf("greedy with relocation: live %.0f s (%d relocations, %d migrated, %d messages), sim %.0f s; without: sim %.0f s",
		rw.Makespan, rw.Relocations, rw.Migrated, rw.Messages, simW.Makespan, simWo.Makespan)
	if rw.Completed != rw.Jobs || rw.DecodeErrors != 0 || rw.Relocations == 0 || !rw.Crashed {
		t.Fatalf("seed 1, live: %d of %d jobs completed, %d decode errors, %d relocations", rw.Completed, rw.Jobs, rw.DecodeErrors, rw.Relocations)
	}
	if !(rw.Makespan < simWo.Makespan/2) {
		t.Errorf("seed 1: live makespan with relocation %.0f s is not below half the deterministic driver's without (%.0f s)", rw.Makespan, simWo.Makespan)
	}
}
