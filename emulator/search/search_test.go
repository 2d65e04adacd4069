package search

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// harsh is a small overlay under a nemesis of partitions and lossy links
// whose overlay_reconverged invariant is strict: exact again within one
// heartbeat period of the last disturbance. A partition's take-overs and
// the conflicts when it heals take longer than that, so seeds that draw
// one late enough fail honestly; link faults alone heal in time.
const harsh = `
name: harsh
seed: 1
duration: 20m
peers: {count: 40, join_window: 1m}
overlay:
  dimensions: 2
  heartbeat: {period: 30s, fail_after: 3}
oracle: {interval: 30s}
invariants: {reconverge_periods: 1}
faults:
  - at: 3m
    random: {kinds: [partition, loss, duplicate, latency], rate: 0.4, max_concurrent: 2, duration: 2m, until: 12m}
`

func TestSearchFindsShrinksAndReplays(t *testing.T) {
	sc := emutest.Parse(t, "harsh.yaml", harsh)
	ctx := context.Background()
	rep, err := Search(ctx, sc, Options{Runs: 4, Seed: 1, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcomes) != 4 {
		t.Fatalf("%d outcomes for 4 seeds", len(rep.Outcomes))
	}
	if len(rep.Findings) == 0 {
		t.Fatalf("no seed of 1–4 failed: %+v", rep.Outcomes)
	}
	dir := t.TempDir()
	for _, f := range rep.Findings {
		if f.Units < 1 || f.Units > f.Total {
			t.Fatalf("seed %d: %d of %d units", f.Seed, f.Units, f.Total)
		}
		files, err := Write(dir, "harsh.yaml", nil, f)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Replay(ctx, files.Scenario)
		if err != nil {
			t.Fatalf("seed %d: replaying %s: %v", f.Seed, files.Scenario, err)
		}
		if !Reproduces(again, f) {
			t.Fatalf("seed %d: the written schedule %s does not fail again: %+v (found %+v)", f.Seed, files.Scenario, again, f.Outcome)
		}
		// The faults file: the base's name, the seed and only the kept
		// faults; applied to the base (the nemesis replaced), it fails
		// again too.
		o, err := scenario.LoadFaults(files.Faults)
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		for _, u := range f.Kept {
			kept += len(u)
		}
		if o.Base != "harsh.yaml" || !o.HasSeed || o.Seed != f.Seed || len(o.Faults) != kept {
			t.Fatalf("seed %d: faults file %s: base %q, seed %d (%v), %d entries; want harsh.yaml, %d, %d", f.Seed, files.Faults, o.Base, o.Seed, o.HasSeed, len(o.Faults), f.Seed, kept)
		}
		base := sc
		o.Apply(&base)
		if err := base.Validate(); err != nil {
			t.Fatal(err)
		}
		again, err = ReplayScenario(ctx, base)
		if err != nil || !Reproduces(again, f) {
			t.Fatalf("seed %d: harsh.yaml with %s does not fail again: %+v, %v", f.Seed, files.Faults, again, err)
		}
		// 1-minimal: without any one of its units the schedule passes
		// the invariants it failed.
		us := f.Kept
		for i := range us {
			rest := slices.Delete(slices.Clone(us), i, i+1)
			c := f.Scenario
			c.Faults = nil
			for _, u := range rest {
				c.Faults = append(c.Faults, u...)
			}
			if c.Validate() != nil {
				continue
			}
			o, err := run(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if failedLike(o, f.Failed) {
				t.Fatalf("seed %d: the shrunk schedule is not minimal: without unit %d (%+v) it still fails %v", f.Seed, i, us[i], o.Failed)
			}
		}
		t.Logf("seed %d failed %v: %d of %d faults kept in %d shrinking runs", f.Seed, f.Failed, f.Units, f.Total, f.ShrinkRuns)
	}
	for _, o := range rep.Outcomes {
		if o.Outcome != emulator.OutcomeFailed && o.Outcome != emulator.OutcomePassed {
			t.Fatalf("seed %d: outcome %s", o.Seed, o.Outcome)
		}
	}
}

// TestUnitsPairWrittenEntries: a written partition and its heal, a
// latency spike and its return to the link section's value are one unit
// each; other entries are units of their own.
func TestUnitsPairWrittenEntries(t *testing.T) {
	sc := emutest.Parse(t, "chaos.yaml", `
duration: 45m
link: {latency: {dist: exponential, mean: 50ms}}
faults:
  - {at: 5m, partition: {name: third, fraction: 0.3}}
  - {at: 6m, partition: {fraction: 0.1}}
  - {at: 8m, heal: {}}
  - {at: 10m, heal: {name: third}}
  - {at: 20m, crash: {fraction: 0.2}}
  - {at: 30m, latency: {dist: exponential, mean: 1s}}
  - {at: 33m, latency: {dist: exponential, mean: 50ms}}
  - {at: 35m, loss: {p: 0.1}}
`)
	var got []string
	for _, u := range units(sc) {
		var kinds []string
		for _, f := range u {
			kinds = append(kinds, f.Kind)
		}
		got = append(got, strings.Join(kinds, "+"))
	}
	want := []string{"partition+heal", "partition+heal", "crash", "latency+latency", "loss"}
	if !slices.Equal(got, want) {
		t.Fatalf("units %v, want %v", got, want)
	}
}

// TestSearchInterruptedKeepsFindings: a search whose context is cancelled
// at its first failing seed reports every seed (those after it
// interrupted), keeps the failing seed as a finding — its schedule as
// drawn, marked Interrupted — and that schedule fails again on replay.
func TestSearchInterruptedKeepsFindings(t *testing.T) {
	sc := emutest.Parse(t, "harsh.yaml", harsh)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep, err := Search(ctx, sc, Options{Runs: 6, Seed: 1, Parallel: 1, Progress: func(o Outcome) {
		if o.Outcome == emulator.OutcomeFailed {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.Outcomes) != 6 || len(rep.Findings) != 1 {
		t.Fatalf("interrupted %v, %d outcomes, %d findings (seeds 1–6): %+v", rep.Interrupted, len(rep.Outcomes), len(rep.Findings), rep.Outcomes)
	}
	f := rep.Findings[0]
	for _, o := range rep.Outcomes {
		if want := o.Seed > f.Seed; want != (o.Outcome == emulator.OutcomeInterrupted) {
			t.Errorf("seed %d: outcome %s (the search was stopped at seed %d)", o.Seed, o.Outcome, f.Seed)
		}
	}
	if !f.Interrupted || f.ShrinkRuns != 0 || f.Units != f.Total {
		t.Fatalf("seed %d: interrupted %v, %d shrinking runs, %d of %d units: want the schedule as drawn", f.Seed, f.Interrupted, f.ShrinkRuns, f.Units, f.Total)
	}
	files, err := Write(t.TempDir(), "harsh.yaml", nil, f)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Replay(context.Background(), files.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if !Reproduces(again, f) {
		t.Fatalf("seed %d: the schedule kept at the stop does not fail again: %+v", f.Seed, again)
	}
}

// TestReplayCommand: the command a faults file prints quotes what a
// shell would split.
func TestReplayCommand(t *testing.T) {
	got := ReplayCommand("examples/nemesis.yaml", []string{"peers.count=50", "name=run #3"}, "out dir/seed-1.faults.yaml")
	want := `gridbed run examples/nemesis.yaml --driver sim --set peers.count=50 --set 'name=run #3' --faults 'out dir/seed-1.faults.yaml'`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
