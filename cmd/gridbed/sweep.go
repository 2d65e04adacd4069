package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/report"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sweep"
	"github.com/gridbed/gridbed/metrics"
)

// jobColumns are the default figures of a sweep over a scenario with a
// workload (003 §5.3's metrics).
var jobColumns = []string{
	"jobs.completed", "jobs.failed", "jobs.unfinished", "jobs.lost", "jobs.duplicated",
	"jobs.wait_seconds.mean", "jobs.wait_seconds.p90", "jobs.wait_censored", "jobs.turnaround_seconds.mean",
	"jobs.matchmaking.hops_mean", "jobs.matchmaking.seconds_mean", "jobs.queue_length_mean", "jobs.pushed",
	"messages.per_node_per_minute", "bytes.per_node_per_minute",
}

// defaultColumns are the summary figures a sweep tabulates unless --columns
// says otherwise (jobColumns when the scenario has a workload).
var defaultColumns = []string{
	"peers.final", "messages.per_node_per_minute", "bytes.per_node_per_minute", "entries.per_node_per_minute",
	"overlay.neighbors_mean", "overlay.broken_links.mean", "overlay.broken_links.final",
	"overlay.zone_gaps", "overlay.takeovers", "overlay.repairs", "overlay.reconverge_seconds",
}

// axesFlag collects repeated --vary flags.
type axesFlag []sweep.Axis

func (a *axesFlag) String() string { return fmt.Sprint(*a) }
func (a *axesFlag) Set(v string) error {
	ax, err := sweep.ParseAxis(v)
	if err != nil {
		return err
	}
	*a = append(*a, ax)
	return nil
}

func cmdSweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets setFlags
	var axes axesFlag
	fs.Var(&sets, "set", "override a scenario key for every run (key=value); repeatable")
	fs.Var(&axes, "vary", "a grid axis: key=value1,value2,…; repeatable")
	out := fs.String("out", "", "results directory")
	driver := fs.String("driver", emulator.DriverLive, "emulator or sim")
	withReport := fs.Bool("report", true, "write report.html with figures comparing the grid points (and each point's own report)")
	columns := fs.String("columns", "", "summary.json paths to tabulate, comma separated (default: the overlay's figures, or the jobs' when the scenario has a workload)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || len(axes) == 0 {
		fmt.Fprintln(stderr, "gridbed sweep: give one scenario file and at least one --vary key=v1,v2, e.g.\n  gridbed sweep examples/churn.yaml --driver sim --vary overlay.heartbeat.mode=vanilla,compact,adaptive")
		return 2
	}
	if !validDriver("sweep", *driver, stderr) {
		return 2
	}
	grid := sweep.Grid(axes)
	// Validate every combination before running any.
	scenarios := make([]scenario.Scenario, len(grid))
	for i, p := range grid {
		sc, err := loadScenario(pos[0], append(append([]string(nil), sets...), p.Assignments(axes)...))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		if err := emulator.Admit(sc, *driver, memoryLimit()); err != nil {
			fmt.Fprintf(stderr, "gridbed sweep: %s: %v\n", p.Name(axes), err)
			return 2
		}
		scenarios[i] = sc
	}
	dir := *out
	if dir == "" {
		dir = defaultOut("sweep-", pos[0], *driver)
	}
	od, err := prepareOut("--out", dir)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed sweep: %v\n", err)
		return 2
	}
	if *columns == "" {
		*columns = strings.Join(defaultColumns, ",")
		if scenarios[0].Workload.On() {
			*columns = strings.Join(jobColumns, ",")
		}
	}
	cols := strings.Split(*columns, ",")
	if !slices.Contains(cols, "outcome") {
		// Every point's verdict beside its figures: a point that did
		// not pass measured something else than its scenario.
		cols = append([]string{"outcome"}, cols...)
	}
	head := []string{}
	for _, a := range axes {
		head = append(head, a.Key)
	}
	head = append(head, cols...)

	ctx, stop := interruptContext(stderr)
	defer stop()
	var rows [][]string
	rep := &report.Sweep{Name: scenarios[0].Name, File: pos[0], Axes: axes, Columns: cols}
	dir = od.Dir()
	interrupted, notPassed := false, 0
	for i, p := range grid {
		sc := scenarios[i]
		fmt.Fprintf(stderr, "[%d/%d] %s\n", i+1, len(grid), strings.Join(p.Assignments(axes), " "))
		m := metrics.NewRun(metrics.RunInfo{Driver: *driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
		res, err := emulator.Run(ctx, sc, emulator.Options{Driver: *driver, Metrics: m})
		if err != nil {
			od.Discard()
			fmt.Fprintf(stderr, "gridbed sweep: %s: %v\n", p.Name(axes), err)
			return 1
		}
		interrupted = res.Summary.Outcome == emulator.OutcomeInterrupted
		if res.Summary.Outcome != emulator.OutcomePassed {
			notPassed++
			fmt.Fprintf(stderr, "gridbed sweep: %s: %s\n", p.Name(axes), res.Summary.OutcomeLine())
		}
		sub := fmt.Sprintf("%02d-%s", i+1, p.Name(axes))
		if err := res.WriteFiles(filepath.Join(dir, sub)); err != nil {
			fmt.Fprintf(stderr, "gridbed sweep: writing results: %v\n", err)
			return 1
		}
		if *withReport && !interrupted {
			if _, err := report.WriteRun(filepath.Join(dir, sub), res); err != nil {
				fmt.Fprintf(stderr, "gridbed sweep: writing the report: %v\n", err)
				return 1
			}
		}
		row := append([]string(nil), p...)
		for _, c := range cols {
			v, ok := sweep.Lookup(res.Summary, strings.TrimSpace(c))
			if !ok {
				v = "?"
			}
			row = append(row, v)
		}
		rows = append(rows, row)
		rep.Add(p, sub, res, row[len(axes):])
		if interrupted {
			fmt.Fprintf(stderr, "gridbed sweep: interrupted at point %d of %d; writing the %d points run so far\n", i+1, len(grid), len(rows))
			break
		}
	}
	table := sweep.Markdown(head, rows)
	csv := strings.Join(head, ",") + "\n"
	for _, r := range rows {
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
	withFigures := *withReport && !interrupted
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
	switch {
	case interrupted:
		fmt.Fprintf(stdout, "outcome: INTERRUPTED — %d of %d points run\n", len(rows), len(grid))
		return emulator.ExitInterrupted
	case notPassed > 0:
		fmt.Fprintf(stdout, "outcome: %d of %d points did not pass (see the outcome column)\n", notPassed, len(grid))
	default:
		fmt.Fprintf(stdout, "outcome: passed — every point passed\n")
	}
	return 0
}
