// Package search is gridbed chaos: it runs a scenario with a seeded
// nemesis (faults/nemesis) for many seeds on the deterministic driver,
// reports the seeds whose invariants fail, shrinks each failing schedule
// by delta debugging to the fewest faults that still fail the same way,
// and writes it as a plain scenario file (a faults: timeline, no random
// entry) that replays the failure.
package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/faults/nemesis"
)

// Options configure a search.
type Options struct {
	Runs     int    // seeds to try
	Seed     uint64 // the first seed; the others follow it
	Parallel int    // seeds run at once (0: 1)
	// NoShrink writes failing schedules as drawn.
	NoShrink bool
	// Progress, if set, hears of every seed's outcome as it ends, one at a
	// time (parallel runs never call it concurrently).
	Progress func(Outcome)
}

// Outcome is one seed's run.
type Outcome struct {
	Seed    uint64
	Faults  int      // timeline entries (drawn ones included)
	Outcome string   // the run's outcome (emulator.Outcome…)
	Failed  []string // the invariants that failed, sorted
}

// Finding is a failing seed and its shrunk schedule.
type Finding struct {
	Outcome
	// Scenario is the schedule that still fails: the scenario with the
	// seed set and the fewest faults found (Units of the Total).
	Scenario     scenario.Scenario
	Units, Total int
	// Kept are the units kept: entries written in the scenario, and drawn
	// faults with the entries that end them.
	Kept [][]scenario.Fault
	// ShrinkRuns is how many runs delta debugging took.
	ShrinkRuns int
	// Interrupted: the search was stopped (its context cancelled) before
	// delta debugging ended. The schedule still fails — delta debugging
	// only ever keeps a subset that failed — but it may not be the
	// fewest faults; with ShrinkRuns 0 it is the schedule as drawn.
	Interrupted bool
}

// Report is a search's result, seeds in order.
type Report struct {
	Outcomes []Outcome
	Findings []Finding
	// Interrupted: the context was cancelled before the search ended.
	// Outcomes holds every seed: those whose run was stopped, or never
	// started, have outcome emulator.OutcomeInterrupted. Findings holds
	// every seed that failed before that, shrunk as far as the search got.
	Interrupted bool
}

// run is one deterministic run's outcome.
func run(ctx context.Context, sc scenario.Scenario) (Outcome, error) {
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverSim, MemoryCeiling: -1})
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Seed: sc.Seed, Faults: len(sc.Faults), Outcome: res.Summary.Outcome}
	for _, c := range res.Summary.Invariants.Checks {
		if !c.OK {
			o.Failed = append(o.Failed, c.Name)
		}
	}
	slices.Sort(o.Failed)
	return o, nil
}

// failedLike reports whether o failed one of the invariants want names.
func failedLike(o Outcome, want []string) bool {
	if o.Outcome != emulator.OutcomeFailed {
		return false
	}
	for _, n := range o.Failed {
		if slices.Contains(want, n) {
			return true
		}
	}
	return false
}

// units are what delta debugging removes: each fault the nemesis drew
// with the entry that undoes it, and each entry written in the scenario —
// where a written entry undoes an earlier one it joins that one's unit: a
// heal its partition (heal {} the latest partition still open), a loss,
// duplicate or latency entry back at the link section's value, or a slow
// entry with delay 0, the earlier entry of its kind. Without the pairing
// the shrinking would keep a partition and drop its heal: a different
// fault (a partition never healed), not a smaller schedule.
func units(sc scenario.Scenario) [][]scenario.Fault {
	var written, triggered []scenario.Fault
	for _, f := range sc.Faults {
		switch {
		case f.Kind == scenario.FaultRandom:
		case f.When != "":
			triggered = append(triggered, f)
		default:
			written = append(written, f)
		}
	}
	sort.SliceStable(written, func(i, j int) bool { return written[i].At < written[j].At })
	written = append(written, triggered...)
	var out [][]scenario.Fault
	open := map[string]int{} // what an undoing entry closes → its unit
	var partitions []string  // open partitions' keys, in order
	join := func(key string, f scenario.Fault) bool {
		i, ok := open[key]
		if ok {
			out[i] = append(out[i], f)
			delete(open, key)
		}
		return ok
	}
	for _, f := range written {
		l := sc.Link
		switch {
		case f.When != "":
		case f.Kind == scenario.FaultPartition:
			key := "partition " + f.Name
			if f.Name == "" {
				key = fmt.Sprintf("partition #%d", len(out))
			}
			open[key] = len(out)
			partitions = append(partitions, key)
			out = append(out, []scenario.Fault{f})
			continue
		case f.Kind == scenario.FaultHeal && f.Name != "":
			if join("partition "+f.Name, f) {
				continue
			}
		case f.Kind == scenario.FaultHeal:
			joined := false
			for !joined && len(partitions) > 0 {
				key := partitions[len(partitions)-1]
				partitions = partitions[:len(partitions)-1]
				joined = join(key, f)
			}
			if joined {
				continue
			}
		case f.Kind == scenario.FaultLoss && f.P == l.Loss,
			f.Kind == scenario.FaultDuplicate && f.P == l.Duplicate,
			f.Kind == scenario.FaultLatency && f.Latency == l.Latency,
			f.Kind == scenario.FaultSlow && f.Service <= 0,
			f.Kind == scenario.FaultCorrupt && f.P == l.Corrupt:
			if join(f.Kind, f) {
				continue
			}
		case f.Kind == scenario.FaultLoss, f.Kind == scenario.FaultDuplicate, f.Kind == scenario.FaultLatency, f.Kind == scenario.FaultSlow, f.Kind == scenario.FaultCorrupt:
			open[f.Kind] = len(out)
		}
		out = append(out, []scenario.Fault{f})
	}
	_, eps := nemesis.Expand(sc)
	for _, e := range eps {
		out = append(out, e.Faults)
	}
	return out
}

// with is sc with the timeline of the chosen units only.
func with(sc scenario.Scenario, us [][]scenario.Fault, pick []int) scenario.Scenario {
	var fs []scenario.Fault
	for _, i := range pick {
		fs = append(fs, us[i]...)
	}
	sc.Faults = nemesis.Flatten([]nemesis.Episode{{Faults: fs}})
	return sc
}

// Search runs opts.Runs seeds of sc and shrinks the failing ones.
func Search(ctx context.Context, sc scenario.Scenario, opts Options) (Report, error) {
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	outs := make([]Outcome, opts.Runs)
	errs := make([]error, opts.Runs)
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	var progress sync.Mutex // Progress is told of one outcome at a time
	for i := range opts.Runs {
		sem <- struct{}{}
		if ctx.Err() != nil { // stopped: the seeds not started are not run
			<-sem
			outs[i] = Outcome{Seed: opts.Seed + uint64(i), Outcome: emulator.OutcomeInterrupted}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s := sc
			s.Seed = opts.Seed + uint64(i)
			x, _ := nemesis.Expand(s)
			outs[i], errs[i] = run(ctx, x)
			if errs[i] == nil && opts.Progress != nil {
				progress.Lock()
				opts.Progress(outs[i])
				progress.Unlock()
			}
		}()
	}
	wg.Wait()
	rep := Report{Outcomes: outs}
	for i, err := range errs {
		if err != nil && ctx.Err() != nil { // a run the stop cut short
			outs[i] = Outcome{Seed: opts.Seed + uint64(i), Outcome: emulator.OutcomeInterrupted}
		} else if err != nil {
			return rep, fmt.Errorf("seed %d: %w", opts.Seed+uint64(i), err)
		}
	}
	for _, o := range outs {
		if o.Outcome != emulator.OutcomeFailed {
			continue
		}
		s := sc
		s.Seed = o.Seed
		f, err := Shrink(ctx, s, o, opts.NoShrink)
		if err != nil {
			return rep, err
		}
		rep.Findings = append(rep.Findings, f)
	}
	rep.Interrupted = ctx.Err() != nil
	return rep, nil
}

// Shrink finds, by delta debugging over the units of sc's timeline
// (nemesis.DDMin), the fewest that still fail one of the invariants o
// failed. A candidate that does not validate (a named heal without its
// partition) does not fail. When ctx is cancelled it stops asking and
// returns the smallest failing schedule found so far (Interrupted).
func Shrink(ctx context.Context, sc scenario.Scenario, o Outcome, noShrink bool) (Finding, error) {
	us := units(sc)
	all := make([]int, len(us))
	for i := range all {
		all[i] = i
	}
	f := Finding{Outcome: o, Total: len(us)}
	pick := all
	if !noShrink {
		var err error
		pick = nemesis.DDMin(len(us), func(sub []int) bool {
			if err != nil || ctx.Err() != nil {
				return false
			}
			c := with(sc, us, sub)
			if c.Validate() != nil {
				return false
			}
			f.ShrinkRuns++
			var co Outcome
			co, err = run(ctx, c)
			if ctx.Err() != nil { // a run the stop cut short says nothing
				err = nil
				return false
			}
			return err == nil && failedLike(co, o.Failed)
		})
		if err != nil {
			return f, err
		}
		f.Interrupted = ctx.Err() != nil
	}
	f.Scenario, f.Units = with(sc, us, pick), len(pick)
	for _, i := range pick {
		f.Kept = append(f.Kept, us[i])
	}
	f.Scenario.Name = fmt.Sprintf("%s-chaos-seed-%d", sc.Name, sc.Seed)
	return f, nil
}

// Files are the two files Write writes for a finding.
type Files struct {
	// Faults is the faults file: the base scenario's name, the seed and
	// only the faults that still fail (scenario.FaultsOverride), which
	// `gridbed run BASE --faults FILE` runs.
	Faults string
	// Scenario is the whole effective scenario that failed, defaults
	// filled in: `gridbed run FILE` runs it on its own.
	Scenario string
}

// Write writes finding f's schedule into dir twice: seed-<seed>.faults.yaml,
// the faults left after shrinking as an override of base (the scenario
// file the search ran, with the --set overrides sets), and
// seed-<seed>.yaml, the whole effective scenario. The first says in its
// comment the command that replays it.
func Write(dir, base string, sets []string, f Finding) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, err
	}
	files := Files{
		Faults:   filepath.Join(dir, fmt.Sprintf("seed-%d.faults.yaml", f.Seed)),
		Scenario: filepath.Join(dir, fmt.Sprintf("seed-%d.yaml", f.Seed)),
	}
	kept := fmt.Sprintf("the %d of %d faults below still fail it", f.Units, f.Total)
	switch {
	case f.Interrupted:
		kept += fmt.Sprintf(" (delta debugging interrupted after %d runs: maybe not the fewest)", f.ShrinkRuns)
	case f.ShrinkRuns > 0:
		kept += fmt.Sprintf(" (delta debugging, %d runs)", f.ShrinkRuns)
	}
	head := fmt.Sprintf("gridbed chaos: seed %d of %s failed %s;\n%s.\nReplay:\n  %s\nThe whole effective scenario: %s beside this file.",
		f.Seed, base, strings.Join(f.Failed, ", "), kept, ReplayCommand(base, sets, files.Faults), filepath.Base(files.Scenario))
	over, err := scenario.FaultsYAML(head, base, f.Seed, true, f.Scenario.Faults)
	if err != nil {
		return Files{}, err
	}
	data, err := f.Scenario.YAML()
	if err != nil {
		return Files{}, err
	}
	full := fmt.Sprintf("# gridbed chaos: seed %d of %s failed %s; %s.\n# Replay: gridbed run %s --driver sim\n# The same faults alone, as an override of %s: %s\n",
		f.Seed, base, strings.Join(f.Failed, ", "), kept, shellQuote(files.Scenario), base, filepath.Base(files.Faults))
	if err := os.WriteFile(files.Faults, over, 0o644); err != nil {
		return Files{}, err
	}
	return files, os.WriteFile(files.Scenario, append([]byte(full), data...), 0o644)
}

// ReplayCommand is the command line that runs base with the --set
// overrides sets and the faults file faults on the deterministic driver.
func ReplayCommand(base string, sets []string, faults string) string {
	cmd := "gridbed run " + shellQuote(base) + " --driver sim"
	for _, s := range sets {
		cmd += " --set " + shellQuote(s)
	}
	return cmd + " --faults " + shellQuote(faults)
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./=:,+@%.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Replay runs a written schedule again on the deterministic driver.
func Replay(ctx context.Context, path string) (Outcome, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return Outcome{}, err
	}
	return run(ctx, sc)
}

// ReplayScenario runs sc (a base scenario with a faults file applied) on
// the deterministic driver, as Replay does a written file.
func ReplayScenario(ctx context.Context, sc scenario.Scenario) (Outcome, error) {
	return run(ctx, sc)
}

// Reproduces reports whether replaying finding f's file fails as f did.
func Reproduces(o Outcome, f Finding) bool { return failedLike(o, f.Failed) }
