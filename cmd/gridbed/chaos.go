package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/search"
	"github.com/gridbed/gridbed/faults/nemesis"
)

// chaosFlags are gridbed chaos's flags.
type chaosFlags struct {
	sets     []string
	faults   string
	out      string
	runs     int
	seed     uint64
	parallel int
	noShrink bool
}

func newChaosCmd(stdout, stderr io.Writer) *cobra.Command {
	var f chaosFlags
	c := &cobra.Command{
		Use:   "chaos FILE",
		Short: "run a scenario's seeded nemesis for many seeds and shrink the failing schedules",
		Long: `Runs a scenario for --runs seeds on the deterministic driver only (sim:
every seed's run and its shrinking replay exactly) and reports the seeds
whose invariants failed. With a random entry in its fault
timeline (faults: - {at, random: {kinds, rate, max_concurrent, duration,
until}}: docs/FAULTS.md) each seed draws its own fault schedule; without
one, each seed runs the written faults, drawing only whom they hit. For each failing
seed it shrinks the schedule by delta debugging — removing entries (a
drawn partition with its heal, a drawn loss with its reset) while the run still
fails one of the same invariants — and writes what is left twice: as a
faults file, DIR/seed-N.faults.yaml — the base file's name, the seed and
only the faults that remain, which gridbed run FILE --faults
DIR/seed-N.faults.yaml replays — and as the whole effective scenario,
DIR/seed-N.yaml (gridbed run DIR/seed-N.yaml). It replays the faults
file to confirm it fails again and prints the command.

Exit status: 0 no seed failed, 3 some seed failed (its files are written),
2 a bad flag or scenario file, 1 an error of gridbed itself.`,
		Example: `  gridbed chaos examples/nemesis.yaml --runs 20
  gridbed chaos examples/nemesis.yaml --runs 50 --seed 100 --parallel 2 --out results/hunt
  gridbed run examples/nemesis.yaml --driver sim --faults results/chaos-nemesis/seed-7.faults.yaml   # replay one`,
		ValidArgsFunction: scenarioFiles,
		RunE: func(c *cobra.Command, args []string) error {
			return status(cmdChaos(c, f, args, stdout, stderr))
		},
	}
	fs := c.Flags()
	addSetFlag(fs, &f.sets, "override a scenario key by dotted path (`key=value`); repeatable")
	addFaultsFlag(fs, &f.faults)
	fs.IntVar(&f.runs, "runs", 20, "seeds to try")
	fs.Uint64Var(&f.seed, "seed", 0, "the first seed (default: the scenario's); the others follow it")
	fs.IntVar(&f.parallel, "parallel", 1, "seeds run at once")
	fs.BoolVar(&f.noShrink, "no-shrink", false, "write failing schedules as drawn, without delta debugging")
	fs.StringVar(&f.out, "out", "", "the `DIR` for the failing schedules (default results/chaos-<file name>)")
	return c
}

func cmdChaos(c *cobra.Command, f chaosFlags, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "gridbed chaos: give exactly one scenario file, e.g. gridbed chaos examples/nemesis.yaml --runs 20")
		return 2
	}
	if f.runs < 1 || f.parallel < 1 {
		fmt.Fprintln(stderr, "gridbed chaos: --runs and --parallel must be at least 1")
		return 2
	}
	noteBuiltin(args[0], stderr)
	sc, err := loadScenarioFaults(args[0], f.faults, f.sets, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if !nemesis.HasRandom(sc) {
		fmt.Fprintf(stderr, "gridbed chaos: %s has no random entry: every seed runs its written faults, the seed drawing only who is cut off, crashes or loses messages (add - {at: 5m, random: {kinds: [partition, crash, loss], rate: 0.2}} to draw the schedule too)\n", args[0])
	}
	seed := sc.Seed
	if c.Flags().Changed("seed") {
		seed = f.seed
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join("results", "chaos-"+strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0])))
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	fmt.Fprintf(stderr, "chaos %s: %d seeds from %d, %d peers, %v emulated each, deterministic driver\n", args[0], f.runs, seed, sc.Peers.Count, sc.Duration)
	rep, err := search.Search(ctx, sc, search.Options{Runs: f.runs, Seed: seed, Parallel: f.parallel, NoShrink: f.noShrink,
		Progress: func(o search.Outcome) {
			fmt.Fprintf(stderr, "seed %d: %s (%d fault entries)%s\n", o.Seed, o.Outcome, o.Faults, failedText(o.Failed))
		}})
	if err != nil {
		fmt.Fprintf(stderr, "gridbed chaos: %v\n", err)
		return 1
	}
	// The report goes to stdout and, whole, to chaos.txt beside the
	// schedules, so that what a search found outlives the terminal.
	var report bytes.Buffer
	out := io.MultiWriter(stdout, &report)
	failed, interrupted := 0, 0
	for _, o := range rep.Outcomes {
		switch o.Outcome {
		case emulator.OutcomePassed:
		case emulator.OutcomeInterrupted:
			interrupted++
		default:
			failed++
		}
	}
	fmt.Fprintf(out, "%d of %d seeds failed\n", len(rep.Findings), len(rep.Outcomes))
	if rep.Interrupted {
		fmt.Fprintf(out, "interrupted: %d seeds not run to their end; the schedules found so far are written below (replay them with gridbed run FILE --driver sim)\n", interrupted)
	}
	if n := failed - len(rep.Findings); n > 0 {
		fmt.Fprintf(out, "%d seeds neither passed nor failed (overloaded): not shrunk\n", n)
	}
	code := 0
	for _, fd := range rep.Findings {
		files, err := search.Write(dir, args[0], f.sets, fd)
		if err != nil {
			fmt.Fprintf(stderr, "gridbed chaos: writing seed %d: %v\n", fd.Seed, err)
			return 1
		}
		shrunk := fmt.Sprintf("%d of %d faults still fail (%d shrinking runs)", fd.Units, fd.Total, fd.ShrinkRuns)
		if fd.Interrupted {
			shrunk += ", shrinking interrupted: maybe not the fewest"
		}
		verdict := "not replayed (interrupted)"
		if ctx.Err() == nil {
			// Replayed as a person would: the base file, the same --set
			// overrides and the faults file.
			again, err := replayFaults(ctx, args[0], files.Faults, f.sets)
			switch {
			case ctx.Err() != nil: // Ctrl-C during the replay: it says nothing
			case err != nil:
				fmt.Fprintf(stderr, "gridbed chaos: replaying %s: %v\n", files.Faults, err)
				return 1
			case search.Reproduces(again, fd):
				verdict = "replayed: fails again" + failedText(again.Failed)
			default:
				verdict = "replayed: DID NOT fail again (" + again.Outcome + ")"
			}
		}
		fmt.Fprintf(out, "seed %d%s: %s → %s (whole scenario: %s); %s\n", fd.Seed, failedText(fd.Failed), shrunk, files.Faults, files.Scenario, verdict)
		fmt.Fprintf(out, "  replay: %s\n", search.ReplayCommand(args[0], f.sets, files.Faults))
		code = 3
	}
	interruptedAtAll := rep.Interrupted || ctx.Err() != nil
	if len(rep.Findings) > 0 || interruptedAtAll {
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "chaos.txt"), report.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "gridbed chaos: writing the report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "report: %s\n", filepath.Join(dir, "chaos.txt"))
	}
	if interruptedAtAll {
		return 130
	}
	return code
}

// failedText lists failed invariants for a line of output.
func failedText(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " [" + strings.Join(names, ", ") + "]"
}

// replayFaults runs base with the --set overrides sets and the faults file
// faults on the deterministic driver.
func replayFaults(ctx context.Context, base, faults string, sets []string) (search.Outcome, error) {
	sc, err := loadScenarioFaults(base, faults, sets, nil)
	if err != nil {
		return search.Outcome{}, err
	}
	return search.ReplayScenario(ctx, sc)
}
