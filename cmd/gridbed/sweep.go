package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/report"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sweep"
	"github.com/gridbed/gridbed/metrics"
)

// axesFlag collects repeated --vary flags, each checked when parsed.
type axesFlag []sweep.Axis

func (a *axesFlag) String() string {
	var out []string
	for _, ax := range *a {
		out = append(out, ax.Key+"="+strings.Join(ax.Values, ","))
	}
	return strings.Join(out, " ")
}
func (a *axesFlag) Type() string { return "key=v1,v2" }
func (a *axesFlag) Set(v string) error {
	ax, err := sweep.ParseAxis(v)
	if err != nil {
		return err
	}
	*a = append(*a, ax)
	return nil
}

// sweepFlags are gridbed sweep's flags.
type sweepFlags struct {
	log         logFlags
	sets        []string
	faults      string
	axes        axesFlag
	out, driver string
	columns     string
	withReport  bool
	seeds       int
	seed        uint64
	workers     int
}

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var f sweepFlags
	c := &cobra.Command{
		Use:   "sweep FILE --vary key=v1,v2 [--vary …]",
		Short: "run a parameter grid, replicated over seeds, and tabulate it",
		Long: `Runs a scenario at every point of a parameter grid — the product of the
--vary axes — on the emulator driver by default (--driver sim: the
deterministic one), and tabulates summary.json figures across it in sweep.md and
sweep.csv, with report.html comparing the points. Every combination is
validated before any runs.

With --seeds N each grid point runs N times, with seeds S, S+1, …, S+N-1
(S: --seed, or the scenario's seed), and each figure is given as the mean
over the replicates with its 95% confidence interval (Student's t): in
sweep.md as "mean ± half-width", in sweep.csv as the mean and the
interval's bounds (columns KEY, KEY.ci95_lo, KEY.ci95_hi) at full
precision, in the figures as error bars. A replicate whose figure is null
(e.g. no steady window) is left out of its mean, and sweep.md says how many
had one.

` + exitStatuses,
		Example: `  gridbed sweep examples/churn.yaml --driver sim --vary overlay.heartbeat.mode=vanilla,compact,adaptive
  gridbed sweep examples/churn.yaml --driver sim --seeds 3 --vary overlay.heartbeat.mode=vanilla,compact
  gridbed sweep examples/jobs.yaml --driver sim --vary jobs.scheme=can-p,can-p2 --vary workload.load=0.5,0.9`,
		ValidArgsFunction: scenarioFiles,
		RunE: func(_ *cobra.Command, args []string) error {
			return status(cmdSweep(f, args, stdout, stderr))
		},
	}
	fs := c.Flags()
	addSetFlag(fs, &f.sets, "override a scenario key for every run (`key=value`); repeatable")
	addFaultsFlag(fs, &f.faults)
	fs.Var(&f.axes, "vary", "a grid axis: `key=v1,v2,…`; repeatable (the grid is their product)")
	fs.StringVar(&f.out, "out", "", "the results `DIR` (default results/sweep-<file name>, …-sim for --driver sim)")
	addDriverFlag(c, &f.driver)
	fs.BoolVar(&f.withReport, "report", true, "write report.html with figures comparing the grid points, and each run's own report (--report=false skips them)")
	fs.StringVar(&f.columns, "columns", "", "summary.json `PATHS` to tabulate, comma separated (default: the overlay's figures, or the jobs' when the scenario has a workload)")
	fs.IntVar(&f.seeds, "seeds", 1, "`N` replicates per grid point: seeds S, S+1, …, S+N-1")
	fs.Uint64Var(&f.seed, "seed", 0, "the first seed `S` (default: the scenario's seed)")
	fs.IntVar(&f.workers, "workers", 0, "split every run over `N` local worker processes (emulator driver; docs/WORKERS.md); 0: one process")
	addLogFlags(c, &f.log)
	return c
}

func cmdSweep(f sweepFlags, pos []string, stdout, stderr io.Writer) int {
	axes := f.axes
	if len(pos) != 1 || len(axes) == 0 {
		fmt.Fprintln(stderr, "gridbed sweep: give one scenario file and at least one --vary key=v1,v2, e.g.\n  gridbed sweep examples/churn.yaml --driver sim --vary overlay.heartbeat.mode=vanilla,compact,adaptive")
		return 2
	}
	if f.seeds < 1 {
		fmt.Fprintf(stderr, "gridbed sweep: --seeds %d: write 1 or more replicates per grid point, e.g. --seeds 3\n", f.seeds)
		return 2
	}
	for _, a := range axes {
		if a.Key == "seed" && (f.seeds > 1 || f.seed != 0) {
			fmt.Fprintln(stderr, "gridbed sweep: --vary seed=… and --seeds/--seed both choose seeds — write --seeds N (replicates S … S+N-1) instead of the seed axis")
			return 2
		}
	}
	if setsKey(f.sets, "seed") && f.seed != 0 {
		fmt.Fprintln(stderr, "gridbed sweep: --set seed=… and --seed both give the first seed — write one of them")
		return 2
	}
	if f.workers > 0 {
		stderr = shareable(stderr) // the workers' output joins it
	}
	if f.workers < 0 || f.workers > 0 && f.driver != emulator.DriverLive {
		fmt.Fprintf(stderr, "gridbed sweep: --workers %d: write N ≥ 1 local worker processes for the emulator driver (drop --driver sim), or 0 for one process\n", f.workers)
		return 2
	}
	noteBuiltin(pos[0], stderr)
	grid := sweep.Grid(axes)
	// Validate every combination before running any.
	scenarios := make([]scenario.Scenario, len(grid))
	for i, p := range grid {
		var note io.Writer
		if i == 0 {
			note = stderr
		}
		sc, err := loadScenarioFaults(pos[0], f.faults, append(append([]string(nil), f.sets...), p.Assignments(axes)...), note)
		if err != nil {
			fmt.Fprintln(stderr, varyFlag(err.Error(), p.Assignments(axes), f.sets))
			return 2
		}
		if err := emulator.Admit(sc, f.driver, memoryLimit()); err != nil {
			fmt.Fprintf(stderr, "gridbed sweep: %s: %v\n", p.Name(axes), err)
			return 2
		}
		scenarios[i] = sc
	}
	first := scenarios[0].Seed
	if f.seed != 0 {
		first = f.seed
	}
	seeds := sweep.Seeds(first, f.seeds)
	columns := f.columns
	if columns == "" {
		columns = strings.Join(sweep.DefaultColumns, ",")
		if scenarios[0].Workload.On() {
			columns = strings.Join(sweep.JobColumns, ",")
		}
	}
	var cols []string
	for _, c := range strings.Split(columns, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cols = append(cols, c)
		}
	}
	// A path that cannot be in a summary is refused before anything runs.
	schema := emulator.Summary{Jobs: &emulator.JobsSummary{}, Staleness: &emulator.StalenessSummary{},
		Emulator: &emulator.LiveSummary{}, Sim: &emulator.SimSummary{}}
	schema.Faults.Bandwidth = &emulator.BandwidthSummary{} // link.bandwidth's figures
	schema.Allocation = &emulator.AllocationSummary{}      // an allocation run's (004)
	schema.Workers = &emulator.WorkersSummary{}            // a run split over worker processes (--workers)
	for _, c := range cols {
		if err := sweep.CheckPath(schema, c); err != nil {
			fmt.Fprintf(stderr, "gridbed sweep: --columns %s: %v (docs/RESULTS.md lists them)\n", c, err)
			return 2
		}
	}
	if !slices.Contains(cols, "outcome") {
		// Every point's verdict beside its figures: a point that did
		// not pass measured something else than its scenario.
		cols = append([]string{"outcome"}, cols...)
	}
	dir := f.out
	if dir == "" {
		dir = defaultOut("sweep-", pos[0], f.driver)
	}
	od, err := prepareOut("--out", dir, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed sweep: %v\n", err)
		return 2
	}
	replicated := len(seeds) > 1
	mdHead, csvHead := []string{}, []string{}
	for _, a := range axes {
		mdHead = append(mdHead, a.Key)
		csvHead = append(csvHead, a.Key)
	}
	if replicated {
		csvHead = append(csvHead, "seeds")
	}
	for _, c := range cols {
		mdHead = append(mdHead, c)
		csvHead = append(csvHead, sweep.CSVHead(c, len(seeds))...)
	}

	ctx, stop := interruptContext(stderr)
	defer stop()
	logger := f.log.logger(stderr) // the emulator's warnings (falling behind its time scale)
	var mdRows, csvRows [][]string
	rep := &report.Sweep{Name: scenarios[0].Name, File: pos[0], Axes: axes, Columns: cols, Seeds: seeds}
	dir = od.Dir()
	interrupted, notPassed, total := false, 0, len(grid)*len(seeds)
	for i, p := range grid {
		values := make([][]any, len(cols)) // per column, per replicate
		var firstRes *emulator.Result
		pointDir := fmt.Sprintf("%02d-%s", i+1, p.Name(axes))
		firstDir := pointDir
		for r, seed := range seeds {
			sc := scenarios[i]
			sub := pointDir
			if replicated {
				sc.Seed = seed
				sub = filepath.Join(pointDir, "seed-"+strconv.FormatUint(seed, 10))
			} else if f.seed != 0 {
				sc.Seed = seed
			}
			if r == 0 {
				firstDir = sub
			}
			run := i*len(seeds) + r + 1
			label := strings.Join(p.Assignments(axes), " ")
			if replicated {
				label += fmt.Sprintf(" seed=%d", seed)
			}
			fmt.Fprintf(stderr, "[%d/%d] %s\n", run, total, label)
			m := metrics.NewRun(metrics.RunInfo{Driver: f.driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
			// Each run has worker processes of its own: they leave when
			// its coordinator closes them.
			wopt, lw := workersOption(ctx, workerFlags{local: f.workers}, f.log, logger, stderr)
			res, err := emulator.Run(ctx, sc, emulator.Options{Driver: f.driver, Metrics: m, Workers: wopt, Logger: logger})
			if lw != nil {
				lw.wait(10 * time.Second)
			}
			if err != nil {
				od.Discard()
				fmt.Fprintf(stderr, "gridbed sweep: %s: %v\n", label, err)
				return runErrorCode(err)
			}
			interrupted = res.Summary.Outcome == emulator.OutcomeInterrupted
			if res.Summary.Outcome != emulator.OutcomePassed {
				notPassed++
				fmt.Fprintf(stderr, "gridbed sweep: %s: %s\n", label, res.Summary.OutcomeLine())
			}
			if err := res.WriteFiles(filepath.Join(dir, sub)); err != nil {
				fmt.Fprintf(stderr, "gridbed sweep: writing results: %v; the sweep's results so far are in %s, not put in place — a temporary of gridbed's: copy what you need out of it, the next run into the same parent removes it\n", err, dir)
				return 1
			}
			if f.withReport && !interrupted {
				if _, err := report.WriteRun(filepath.Join(dir, sub), res); err != nil {
					fmt.Fprintf(stderr, "gridbed sweep: writing the report: %v\n", err)
					return 1
				}
			}
			for c, col := range cols {
				v, ok := sweep.Value(res.Summary, col)
				if !ok {
					v = "?"
				}
				values[c] = append(values[c], v)
			}
			if r == 0 {
				firstRes = res
			}
			if interrupted {
				break
			}
		}
		stats := make([]sweep.Stat, len(cols))
		mdRow := append([]string(nil), p...)
		csvRow := append([]string(nil), p...)
		if replicated {
			csvRow = append(csvRow, strconv.Itoa(len(values[0])))
		}
		short := ""
		if replicated && len(values[0]) < len(seeds) {
			short = fmt.Sprintf(" (%d of %d seeds)", len(values[0]), len(seeds))
		}
		for c := range cols {
			stats[c] = sweep.Aggregate(values[c])
			mdRow = append(mdRow, stats[c].Markdown()+short)
			csvRow = append(csvRow, stats[c].CSV(cols[c], len(seeds))...)
		}
		mdRows, csvRows = append(mdRows, mdRow), append(csvRows, csvRow)
		rep.Add(p, firstDir, firstRes, stats)
		if interrupted {
			fmt.Fprintf(stderr, "gridbed sweep: interrupted at point %d of %d; writing the %d points run so far\n", i+1, len(grid), len(mdRows))
			break
		}
	}
	table := sweep.Markdown(mdHead, mdRows)
	if replicated {
		table = fmt.Sprintf("Each cell: the mean over %d seeds (%d–%d) ± the half-width of its 95%% confidence interval (Student's t); a point the interrupt cut short says of how many seeds it holds.\n\n", len(seeds), seeds[0], seeds[len(seeds)-1]) + table
	}
	csv := strings.Join(csvHead, ",") + "\n"
	for _, r := range csvRows {
		csv += strings.Join(r, ",") + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.csv"), []byte(csv), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.md"), []byte(table), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	withFigures := f.withReport && !interrupted
	if withFigures {
		if _, err := rep.Write(dir); err != nil {
			fmt.Fprintf(stderr, "gridbed sweep: writing the report: %v\n", err)
			return 1
		}
	}
	if err := od.Commit(); err != nil {
		fmt.Fprintf(stderr, "gridbed sweep: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, table)
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(od.final, "sweep.csv"))
	if withFigures {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(od.final, "report.html"))
	}
	runs := "points"
	if replicated {
		runs = "runs"
	}
	switch {
	case interrupted:
		fmt.Fprintf(stdout, "outcome: INTERRUPTED — %d of %d points run\n", len(mdRows), len(grid))
		return emulator.ExitInterrupted
	case notPassed > 0:
		fmt.Fprintf(stdout, "outcome: %d of %d %s did not pass (see the outcome column)\n", notPassed, total, runs)
	default:
		fmt.Fprintf(stdout, "outcome: passed — every %s passed\n", strings.TrimSuffix(runs, "s"))
	}
	return 0
}

// varyFlag names the flag a grid point's assignment came from in a
// message about it: --vary for an axis's value (the scenario's errors say
// --set), unless the same assignment was also given with --set.
func varyFlag(msg string, assignments, sets []string) string {
	for _, a := range assignments {
		if !slices.Contains(sets, a) {
			msg = strings.ReplaceAll(msg, "--set "+a, "--vary "+a)
		}
	}
	return msg
}
