package allocrun

import (
	"cmp"
	"context"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
)

func cfgFor(grid string, set, order int, a, rl alloc.Scheme, spikes string, seed uint64) Config {
	sp, _ := alloc.Spikes(spikes)
	return Config{Speeds: alloc.Grid(grid), Jobs: alloc.JobSet(set, order, Rand(seed)), Spikes: sp,
		Allocator: a, Relocator: rl, Theta: 0.1, MaxMoves: 3, Limit: 1000 * time.Hour}
}

// simTwice runs cfg twice on the deterministic driver with seed and
// fails unless the two results are identical; it returns the first.
func simTwice(t *testing.T, cfg Config, seed uint64) Result {
	t.Helper()
	var res [2]Result
	for i := range res {
		var err error
		if res[i], err = RunSim(context.Background(), cfg, seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	if !reflect.DeepEqual(res[0], res[1]) {
		t.Fatalf("seed %d: two runs differ:\n%+v\n%+v", seed, res[0], res[1])
	}
	return res[0]
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
			first := simTwice(t, cfg, 7)
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
	cores.Hold(t, cores.Live)
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

// liveSchemes are 004 Fig 3's six schemes: each allocator without
// relocation and with its own relocator.
var liveSchemes = []struct{ a, rl alloc.Scheme }{
	{alloc.Greedy, alloc.None}, {alloc.Social, alloc.None}, {alloc.MinNum, alloc.None},
	{alloc.Greedy, alloc.Greedy}, {alloc.Social, alloc.Social}, {alloc.MinNum, alloc.MinNum},
}

// simDelays are the message delays of the deterministic driver's band
// (TestLiveOrdering): from its own 1 ms to 1 s, the range the emulator's
// delays (NATS, mailboxes, timers at a scaled clock) span in emulated
// time.
var simDelays = []time.Duration{time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond,
	30 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, time.Second}

// TestLiveOrdering: 004 Fig 3's six schemes on the emulator driver (NATS,
// every endpoint in its own mailbox, emulated time 400 times wall time)
// order as on the deterministic driver. Seed 1, orders 9, 10 and 19 of
// the bursts (SOCIAL's makespans there are short enough to run in wall
// time: about 50 s in all).
//
// One seed's makespan is not one number on the deterministic driver
// either: which job ends the allocator has heard of when a burst arrives
// depends on the message delay, and without relocation the placement —
// and the machine whose last job sets the makespan — follows from it.
// Between delays of 1 ms and 1 s (simDelays) the deterministic driver's
// makespans span a band, up to 17% wide here without relocation (66% on
// order 5), 0–4% for GREEDY and MIN-NUM with it, up to 14% for SOCIAL
// with its relocator. The test asserts, for every order:
//   - with GREEDY's and MIN-NUM's relocators, the emulator's makespan
//     within 10% of the band (SOCIAL's relocator, as wide as no
//     relocation, is logged: order 10's once ran 16% above its band
//     beside the rest of the test suite, where messages wait longer);
//   - any two schemes whose bands are apart by more than 10% in the same
//     order on the emulator.
//
// Without relocation the emulator's delays (not one delay but a spread
// over each burst's 500 messages) can land beyond the band — order 4's
// MIN-NUM 24% above it, order 10's SOCIAL 7–15% — so no tolerance is
// asserted for them, and SOCIAL's lead over GREEDY without relocation
// (bands 5–7% apart on these orders) is not asserted: the emulator loses
// it on some runs of order 10. docs/fidelity/004.md has the measured
// table.
//
// At ×200: this family's live runs have no keep-up judge yet, and at ×400
// a run of the long tier on a busy 2-core machine once fell outside its
// band.
func TestLiveOrdering(t *testing.T) {
	if testing.Short() {
		t.Skip("NATS at scaled wall time")
	}
	const seed, scale, tol = 1, 200, 0.10
	cores.Hold(t, cores.Sim) // deterministic runs between the live ones
	for _, order := range []int{9, 10, 19} {
		var lo, hi, live [6]float64
		for i, s := range liveSchemes {
			cfg := cfgFor(alloc.GridAeolus, 2, order, s.a, s.rl, alloc.SpikesNone, seed)
			lo[i] = math.Inf(1)
			for _, d := range simDelays {
				rs, err := runSim(context.Background(), cfg, seed, d)
				if err != nil {
					t.Fatalf("order %d, %v/%v, seed %d, sim with %v delays: %v", order, s.a, s.rl, seed, d, err)
				}
				lo[i], hi[i] = min(lo[i], rs.Makespan), max(hi[i], rs.Makespan)
			}
			cfg.Limit = time.Duration(3*hi[i]) * time.Second
			rl, err := RunLive(context.Background(), cfg, LiveOptions{TimeScale: scale})
			if err != nil {
				t.Fatalf("order %d, %v/%v, seed %d, live: %v", order, s.a, s.rl, seed, err)
			}
			if rl.DecodeErrors != 0 || (s.rl != alloc.None) != (rl.Relocations > 0) {
				t.Fatalf("order %d, %v/%v, seed %d, live: %d decode errors, %d relocations", order, s.a, s.rl, seed, rl.DecodeErrors, rl.Relocations)
			}
			live[i] = rl.Makespan
			t.Logf("order %d, %v/%v: sim [%.0f, %.0f] s, live %.0f s (%d relocations, %d migrated)",
				order, s.a, s.rl, lo[i], hi[i], rl.Makespan, rl.Relocations, rl.Migrated)
			if s.rl != alloc.None && s.rl != alloc.Social && (live[i] < lo[i]*(1-tol) || live[i] > hi[i]*(1+tol)) {
				t.Errorf("order %d, seed %d: %v/%v's makespan live %.0f s, beyond %.0f%% of the deterministic driver's [%.0f, %.0f] s",
					order, seed, s.a, s.rl, live[i], 100*tol, lo[i], hi[i])
			}
		}
		t.Logf("order %d: live from the shortest makespan: %v", order, ranking(live[:]))
		for i := range live {
			for j := range live {
				if hi[i]*(1+tol) < lo[j] && live[i] >= live[j] {
					t.Errorf("order %d, seed %d: %v/%v before %v/%v on the deterministic driver ([%.0f, %.0f] s, [%.0f, %.0f] s), not live (%.0f s, %.0f s)",
						order, seed, liveSchemes[i].a, liveSchemes[i].rl, liveSchemes[j].a, liveSchemes[j].rl, lo[i], hi[i], lo[j], hi[j], live[i], live[j])
				}
			}
		}
	}
}

// ranking names the schemes from the shortest makespan to the longest.
func ranking(ms []float64) []string {
	idx := make([]int, len(ms))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ms[a], ms[b]) })
	var out []string
	for _, i := range idx {
		s := liveSchemes[i]
		out = append(out, s.a.String()+"/"+s.rl.String())
	}
	return out
}
