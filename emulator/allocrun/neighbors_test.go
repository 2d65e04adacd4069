package allocrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
)

// neighborsCfg is cfgFor under allocation.placement neighbors, the CAN
// drawn from seed.
func neighborsCfg(grid string, set, order int, a, rl alloc.Scheme, spikes string, seed uint64) Config {
	cfg := cfgFor(grid, set, order, a, rl, spikes, seed)
	cfg.Placement, cfg.Seed = alloc.Neighbors, seed
	return cfg
}

// total is the messages counted by kind.
func total(res Result) (n uint64) {
	for _, c := range res.ByKind {
		n += c.Count
	}
	return n
}

// TestNeighborsDeterministic: under placement neighbors the same
// configuration and seed give the same result, series included; every job
// is placed and completes, no machine writes to an allocator (there is
// none: no end or load report), the machines gossip, and the messages
// counted by kind add up to the bus's.
func TestNeighborsDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grid   string
		set    int
		a, rl  alloc.Scheme
		spikes string
	}{
		{"synthetic greedy/greedy fig 2", alloc.GridSynthetic, 1, alloc.Greedy, alloc.Greedy, alloc.SpikesFig2},
		{"aeolus social/social fig 4", alloc.GridAeolus, 2, alloc.Social, alloc.Social, alloc.SpikesFig4},
		{"aeolus min-num/min-num", alloc.GridAeolus, 2, alloc.MinNum, alloc.MinNum, alloc.SpikesNone},
		{"aeolus greedy/none", alloc.GridAeolus, 2, alloc.Greedy, alloc.None, alloc.SpikesNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := neighborsCfg(tc.grid, tc.set, 3, tc.a, tc.rl, tc.spikes, 7)
			cfg.Sample = 100 * time.Second
			first := simTwice(t, cfg, 7)
			if first.Completed != first.Jobs || first.Submitted != first.Jobs || first.DecodeErrors != 0 || first.Unroutable != 0 {
				t.Fatalf("seed 7: %d of %d jobs placed, %d completed, %d decode errors, %d unroutable", first.Submitted, first.Jobs, first.Completed, first.DecodeErrors, first.Unroutable)
			}
			k := first.ByKind
			if k[alloc.MsgEnded].Count+k[alloc.MsgLoad].Count+k[alloc.MsgSync].Count+k[alloc.MsgSynced].Count != 0 || k[alloc.MsgGossip].Count == 0 ||
				total(first) != first.Messages || first.NeighborsMean < 1 {
				t.Fatalf("seed 7: messages by kind %+v, %d on the bus, %.1f neighbours a machine", k, first.Messages, first.NeighborsMean)
			}
			if (tc.rl == alloc.None) != (first.Relocations == 0) || first.Migrated > first.Relocations || len(first.Series) == 0 || first.Makespan <= 0 {
				t.Fatalf("seed 7: %d relocations, %d migrated, makespan %v, %d samples", first.Relocations, first.Migrated, first.Makespan, len(first.Series))
			}
			// The spike share: the jobs on the machine whose owner load
			// rose first over the jobs placed and not completed then.
			t.Logf("spike share %.3f (%d jobs)", first.SpikeShare, first.SpikeJobs)
			if spiked := tc.spikes != alloc.SpikesNone; spiked != (first.SpikeShare >= 0) || first.SpikeShare > 1 || (spiked && tc.set == 1 && first.SpikeJobs == 0) {
				t.Fatalf("seed 7: spike share %v (%d jobs) under spikes %s", first.SpikeShare, first.SpikeJobs, tc.spikes)
			}
		})
	}
}

// mesh is the neighbour lists of a grid of n machines where every machine
// neighbours every other.
func mesh(n int) [][]int {
	nbs := make([][]int, n)
	for i := range nbs {
		for k := range n {
			if k != i {
				nbs[i] = append(nbs[i], k)
			}
		}
	}
	return nbs
}

// TestNeighborsMeshAsCentral: on the 4-machine synthetic grid with every
// machine neighbouring every other, each machine sees the whole grid —
// stale by up to a gossip period, and blind to the other sources'
// placements in the same burst — and the makespan is within 6% of the
// central allocator's under every scheme with its relocator (job set 2).
func TestNeighborsMeshAsCentral(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: allocation runs under two placements")
	}
	for _, s := range []alloc.Scheme{alloc.Greedy, alloc.Social, alloc.MinNum} {
		for _, seed := range []uint64{1, 2} {
			central, err := RunSim(context.Background(), cfgFor(alloc.GridSynthetic, 2, 3, s, s, alloc.SpikesNone, seed), seed)
			if err != nil {
				t.Fatalf("%v, seed %d: %v", s, seed, err)
			}
			cfg := neighborsCfg(alloc.GridSynthetic, 2, 3, s, s, alloc.SpikesNone, seed)
			cfg.Neighbors = mesh(4)
			nb, err := RunSim(context.Background(), cfg, seed)
			if err != nil {
				t.Fatalf("%v, seed %d: %v", s, seed, err)
			}
			r := nb.Makespan / central.Makespan
			t.Logf("%v, seed %d: makespan central %.0f s, neighbors (mesh) %.0f s (%.3f); messages %d, %d", s, seed, central.Makespan, nb.Makespan, r, central.Messages, nb.Messages)
			if r < 0.94 || r > 1.06 {
				t.Errorf("%v, seed %d: neighbors on the full mesh %.0f s, central %.0f s: not within 6%%", s, seed, nb.Makespan, central.Makespan)
			}
		}
	}
}

// TestNeighborsCostAeolus: on the AEOLUS grid (70 machines, about 4.5 CAN
// neighbours each) every job completes under both placements, and the
// neighbors placement costs more messages a job than the central one —
// the gossip — on a few orders of 004 Fig 3 (job set 2), each allocator
// with its relocator. The makespans are logged (docs/ALLOCATION.md has
// the table over every order and 5 seeds, TestNeighborsTable).
func TestNeighborsCostAeolus(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: allocation runs under two placements")
	}
	for _, s := range []alloc.Scheme{alloc.Greedy, alloc.Social, alloc.MinNum} {
		for _, order := range []int{1, 10, 20} {
			central, err := RunSim(context.Background(), cfgFor(alloc.GridAeolus, 2, order, s, s, alloc.SpikesNone, 1), 1)
			if err != nil {
				t.Fatalf("%v order %d, seed 1: %v", s, order, err)
			}
			nb, err := RunSim(context.Background(), neighborsCfg(alloc.GridAeolus, 2, order, s, s, alloc.SpikesNone, 1), 1)
			if err != nil {
				t.Fatalf("%v order %d, seed 1: %v", s, order, err)
			}
			jobs := float64(central.Jobs)
			t.Logf("%v order %d: makespan central %.0f s, neighbors %.0f s (%.2f); messages a job %.1f, %.1f (gossip %.1f)", s, order,
				central.Makespan, nb.Makespan, nb.Makespan/central.Makespan, float64(central.Messages)/jobs, float64(nb.Messages)/jobs, float64(nb.ByKind[alloc.MsgGossip].Count)/jobs)
			if nb.Messages <= central.Messages || nb.ByKind[alloc.MsgGossip].Count == 0 {
				t.Errorf("%v order %d, seed 1: %d messages under neighbors, %d under central", s, order, nb.Messages, central.Messages)
			}
		}
	}
}

// TestNeighborsTable writes docs/ALLOCATION.md's tables of the cost of
// decentralizing: on the AEOLUS grid, job set 2, every order of 004
// Table 4 and seeds 1–5, each allocator with and without its relocator,
// the makespan ratio neighbors/central (median, mean and range over the
// runs) and the messages and bytes a job under each placement; then
// GREEDY with its relocator under gossip periods of 2 s, 10 s and 30 s.
// Run it with GRIDBED_ALLOCDEC_TABLE=1 (about 4 minutes).
func TestNeighborsTable(t *testing.T) {
	if os.Getenv("GRIDBED_ALLOCDEC_TABLE") == "" {
		t.Skip("set GRIDBED_ALLOCDEC_TABLE=1 to measure the table")
	}
	// GRIDBED_ALLOCDEC_DUMP=file also writes every run's figures, one
	// line a pair of runs, to compare two versions run by run.
	var dump *os.File
	if path := os.Getenv("GRIDBED_ALLOCDEC_DUMP"); path != "" {
		var err error
		if dump, err = os.Create(path); err != nil {
			t.Fatal(err)
		}
		defer dump.Close()
	}
	row := func(b *strings.Builder, s, rl alloc.Scheme, gossip time.Duration) {
		var ratios []float64
		var slower int
		var cm, nm, ng, cb, nbb float64
		for seed := uint64(1); seed <= 5; seed++ {
			for order := 1; order <= 24; order++ {
				c, err := RunSim(context.Background(), cfgFor(alloc.GridAeolus, 2, order, s, rl, alloc.SpikesNone, seed), seed)
				if err != nil {
					t.Fatalf("%v/%v order %d seed %d: %v", s, rl, order, seed, err)
				}
				ncfg := neighborsCfg(alloc.GridAeolus, 2, order, s, rl, alloc.SpikesNone, seed)
				ncfg.GossipPeriod = gossip
				ncfg.padSkipped = os.Getenv("GRIDBED_ALLOCDEC_PAD") != ""
				if os.Getenv("GRIDBED_ALLOCDEC_EVERY") != "" {
					ncfg.GossipRefresh = 1
				}
				n, err := RunSim(context.Background(), ncfg, seed)
				if err != nil {
					t.Fatalf("%v/%v order %d seed %d: %v", s, rl, order, seed, err)
				}
				if dump != nil {
					fmt.Fprintf(dump, "%v %v %v order %d seed %d: central %.3f s %d messages; neighbors %.3f s %d messages %d gossip\n",
						s, rl, gossip, order, seed, c.Makespan, c.Messages, n.Makespan, n.Messages, n.ByKind[alloc.MsgGossip].Count)
				}
				r := n.Makespan / c.Makespan
				ratios = append(ratios, r)
				if r > 1 {
					slower++
				}
				jobs := float64(c.Jobs)
				cm += float64(c.Messages) / jobs
				nm += float64(n.Messages) / jobs
				ng += float64(n.ByKind[alloc.MsgGossip].Count) / jobs
				var by, bn uint64
				for k := range c.ByKind {
					by, bn = by+c.ByKind[k].Bytes, bn+n.ByKind[k].Bytes
				}
				cb += float64(by) / jobs
				nbb += float64(bn) / jobs
			}
		}
		slices.Sort(ratios)
		f, sum := float64(len(ratios)), 0.0
		for _, r := range ratios {
			sum += r
		}
		fmt.Fprintf(b, "| %v | %v | %v | %.2f | %.2f (%.2f–%.2f) | %d of %d | %.1f | %.1f (%.1f) | %.0f B | %.1f KiB |\n",
			s, rl, gossip, ratios[len(ratios)/2], sum/f, ratios[0], ratios[len(ratios)-1], slower, len(ratios), cm/f, nm/f, ng/f, cb/f, nbb/f/1024)
	}
	var b strings.Builder
	b.WriteString("| allocator | relocator | gossip | makespan neighbors/central, median | mean (min–max) | neighbors slower in | messages a job, central | messages a job, neighbors (gossip) | bytes a job, central | bytes a job, neighbors |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range []alloc.Scheme{alloc.Greedy, alloc.Social, alloc.MinNum} {
		for _, rl := range []alloc.Scheme{alloc.None, s} {
			row(&b, s, rl, 10*time.Second)
		}
	}
	for _, g := range []time.Duration{2 * time.Second, 30 * time.Second} {
		row(&b, alloc.Greedy, alloc.Greedy, g)
	}
	t.Logf("\n%s", b.String())
}

// TestNeighborsLive: placement neighbors over NATS at scaled wall time:
// every job is placed and completes, the machines gossip and nobody
// reports to an allocator, every message is counted by kind, and the
// makespan is close to the deterministic driver's.
func TestNeighborsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("NATS at scaled wall time")
	}
	cfg := neighborsCfg(alloc.GridAeolus, 2, 10, alloc.Greedy, alloc.Greedy, alloc.SpikesFig4, 1)
	cores.Hold(t, cores.Live)
	live, err := RunLive(context.Background(), cfg, LiveOptions{TimeScale: 200})
	if err != nil {
		t.Fatalf("seed 1: %v", err)
	}
	sim, err := RunSim(context.Background(), cfg, 1)
	if err != nil {
		t.Fatalf("seed 1: %v", err)
	}
	k := live.ByKind
	t.Logf("greedy/greedy under neighbors: live %.0f s (%d relocations, %d messages, %d gossip), sim %.0f s (%d messages)",
		live.Makespan, live.Relocations, live.Messages, k[alloc.MsgGossip].Count, sim.Makespan, sim.Messages)
	if live.Completed != live.Jobs || live.Submitted != live.Jobs || live.DecodeErrors != 0 || live.Relocations == 0 {
		t.Fatalf("seed 1, live: %d of %d placed, %d completed, %d decode errors, %d relocations", live.Submitted, live.Jobs, live.Completed, live.DecodeErrors, live.Relocations)
	}
	if k[alloc.MsgGossip].Count == 0 || k[alloc.MsgEnded].Count != 0 || total(live) != live.Messages {
		t.Fatalf("seed 1, live: messages by kind %+v, %d on the bus", k, live.Messages)
	}
	if r := live.Makespan / sim.Makespan; r < 0.8 || r > 1.25 {
		t.Errorf("seed 1: live makespan %.0f s, deterministic driver's %.0f s", live.Makespan, sim.Makespan)
	}
}

// TestNeighborsGossipOnChange: a machine gossips only when its load or
// jobs changed since its last gossip, and every alloc.DefaultGossipRefresh
// periods regardless: fewer gossip messages than at every period
// (GossipRefresh 1), every job still completes — and with the silent
// periods' random tie-breaks drawn anyway (padSkipped) the run is the
// one that gossips at every period, message for message but the gossip:
// the silence left out only repeats of what the neighbours knew. (A 7 s
// period: no gossip instant falls on one of job set 2's bursts, where a
// repeat sent in the burst's instant would have overwritten the
// placements a neighbour had just counted into its view.)
func TestNeighborsGossipOnChange(t *testing.T) {
	cfg := neighborsCfg(alloc.GridAeolus, 2, 3, alloc.Greedy, alloc.Greedy, alloc.SpikesNone, 7)
	cfg.GossipPeriod = 7 * time.Second
	var runs [3]Result
	for i, c := range []struct {
		refresh int
		pad     bool
	}{{0, false}, {0, true}, {1, false}} {
		cfg.GossipRefresh, cfg.padSkipped = c.refresh, c.pad
		var err error
		if runs[i], err = RunSim(context.Background(), cfg, 7); err != nil {
			t.Fatalf("seed 7, refresh %d, padded %v: %v", c.refresh, c.pad, err)
		}
	}
	quiet, padded, every := runs[0], runs[1], runs[2]
	g, ge := quiet.ByKind[alloc.MsgGossip].Count, every.ByKind[alloc.MsgGossip].Count
	t.Logf("gossip on change: %d gossip messages (%d silent periods), makespan %.1f s (padded %.1f s); every period: %d, makespan %.1f s",
		g, quiet.GossipSkipped, quiet.Makespan, padded.Makespan, ge, every.Makespan)
	if quiet.Completed != quiet.Jobs || g == 0 || g >= ge || quiet.GossipSkipped == 0 || every.GossipSkipped != 0 {
		t.Fatalf("seed 7: %d of %d completed; %d gossip messages on change (%d silent periods), %d at every period (%d silent)",
			quiet.Completed, quiet.Jobs, g, quiet.GossipSkipped, ge, every.GossipSkipped)
	}
	padded.ByKind[alloc.MsgGossip], every.ByKind[alloc.MsgGossip] = KindCount{}, KindCount{}
	if padded.Makespan != every.Makespan || padded.Relocations != every.Relocations || padded.Migrated != every.Migrated || padded.ByKind != every.ByKind {
		t.Fatalf("seed 7: padded silence %+v\nevery period %+v", padded, every)
	}
}

// TestNeighborsMachineCrash: allocation.crash_at under neighbors crashes
// the machine holding the most jobs; the jobs sent to it while it is down
// are placed elsewhere, and every job either completes or is counted
// lost (on its way to it when it crashed) — none disappears unsaid. A
// crash at 30 s for 40 s spans the 50 s burst.
func TestNeighborsMachineCrash(t *testing.T) {
	for _, tc := range []struct {
		at   time.Duration
		lost bool
	}{
		{30 * time.Second, false},
		{25 * time.Second, true}, // the instant of a burst: jobs on their way
	} {
		cfg := neighborsCfg(alloc.GridAeolus, 2, 3, alloc.Greedy, alloc.Greedy, alloc.SpikesNone, 7)
		cfg.CrashAt, cfg.DownFor = tc.at, 40*time.Second
		var runs [2]Result
		for i := range runs {
			var err error
			runs[i], err = RunSim(context.Background(), cfg, 7)
			if (err != nil) != tc.lost || (err != nil && !errors.Is(err, ErrIncomplete)) {
				t.Fatalf("seed 7, crash at %v: %v", tc.at, err)
			}
		}
		if !reflect.DeepEqual(runs[0], runs[1]) {
			t.Fatalf("seed 7, crash at %v: two runs differ:\n%+v\n%+v", tc.at, runs[0], runs[1])
		}
		res := runs[0]
		t.Logf("crash at %v: machine %d (%d jobs) down 40 s: %d jobs placed again, %d lost, %d messages lost; %d of %d completed, makespan %.0f s",
			tc.at, res.CrashMachine, res.CrashJobs, res.Replaced, res.JobsLost, res.Unroutable, res.Completed, res.Jobs, res.Makespan)
		if !res.Crashed || res.CrashMachine < 0 || res.CrashJobs == 0 || res.Unroutable == 0 ||
			res.Completed+res.JobsLost != res.Jobs || (res.JobsLost > 0) != tc.lost || (tc.lost && res.Replaced == 0) {
			t.Fatalf("seed 7, crash at %v: %+v", tc.at, res)
		}
	}
}
