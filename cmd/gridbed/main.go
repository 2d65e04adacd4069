// Command gridbed runs emulation scenarios of P2P desktop-grid protocols.
//
//	gridbed run FILE [--out DIR] [--set key=value ...] [--driver emulator|sim] [--metrics-addr ADDR] [--pprof-addr ADDR] [--strict] [--workers N [--remote-workers M --listen HOST:PORT]]
//	gridbed worker --coordinator nats://HOST:PORT [--metrics-addr ADDR]
//	gridbed sweep FILE --vary key=v1,v2 [--vary ...] [--seeds N] [--set ...] [--driver sim] [--out DIR]
//	gridbed validate FILE [--set key=value ...]
//	gridbed bench [FILE] [--peers N] [--time-scale S] [--duration D] [--driver emulator|sim] [--json]
//	gridbed reproduce NAME|all|FILE [--seeds N] [--seed S] [--scale F] [--smoke] [--out DIR] [--list]
//	gridbed keys
//	gridbed version
//	gridbed completion bash|zsh|fish|powershell
//	gridbed help [COMMAND]
//
// The command line is built with cobra (docs/DESIGN.md, "Dependencies").
// See README.md for a quick start and docs/ for the scenario keys and the
// results schema.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/report"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/examples"
	"github.com/gridbed/gridbed/metrics"
)

func main() {
	emulator.TuneGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// readScenario parses a scenario file; an examples/NAME.yaml path that does
// not exist here is read from the examples built into gridbed, so that the
// docs' commands work from any directory.
func readScenario(file string) (scenario.Scenario, error) {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		if src, data, ok := examples.Lookup(file); ok {
			return scenario.Parse(src, data)
		}
	}
	return scenario.Load(file)
}

// noteBuiltin says on stderr when file will be read from the built-in
// examples.
func noteBuiltin(file string, stderr io.Writer) {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		if src, _, ok := examples.Lookup(file); ok {
			fmt.Fprintf(stderr, "gridbed: no %s here; using the %s built into gridbed\n", file, src)
		}
	}
}

// loadScenario reads a scenario file (readScenario) and applies the --set
// overrides.
func loadScenario(file string, sets []string) (scenario.Scenario, error) {
	return loadScenarioFaults(file, "", sets, nil)
}

// loadScenarioFaults reads a scenario file (readScenario), replaces its
// fault timeline with the one of faultsFile (--faults; "" keeps the
// file's own) and applies the --set overrides, in that order: a --set of
// a fault entry's field or of the seed changes the timeline and seed
// faultsFile gave. When faultsFile names another base scenario than
// file, a note says so on stderr (if not nil).
func loadScenarioFaults(file, faultsFile string, sets []string, stderr io.Writer) (scenario.Scenario, error) {
	sc, err := readScenario(file)
	if err != nil {
		return sc, err
	}
	if faultsFile != "" {
		o, err := scenario.LoadFaults(faultsFile)
		if err != nil {
			return sc, err
		}
		if o.Base != "" && filepath.Clean(o.Base) != filepath.Clean(file) && stderr != nil {
			fmt.Fprintf(stderr, "gridbed: note: the faults of %s were written for %s; running them on %s\n", faultsFile, o.Base, file)
		}
		o.Apply(&sc)
		if len(sets) == 0 {
			if err := sc.Validate(); err != nil {
				return sc, err
			}
		}
	}
	if len(sets) > 0 {
		if err := sc.SetAll(sets...); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	var sets []string
	var faults, driver string
	var plan bool
	c := &cobra.Command{
		Use:   "validate FILE",
		Short: "check a scenario file (and --set overrides) without running it",
		Long: `Checks a scenario file and the --set overrides: an unknown key, an
impossible value or a malformed line is reported with the file, the line
and what to write instead (exit status 2); a valid file prints "FILE: ok".
With --plan it also prints what gridbed run would do: the driver (the
emulator unless --driver sim), the emulated time and the planned wall
time, and the memory estimate run admits it by.`,
		Example: `  gridbed validate examples/quickstart.yaml --set peers.count=2000
  gridbed validate examples/quickstart.yaml --plan               # memory, planned wall time, driver
  gridbed validate examples/churn.yaml --plan --driver sim`,
		ValidArgsFunction: scenarioFiles,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				fmt.Fprintln(stderr, "gridbed validate: give exactly one scenario file, e.g. gridbed validate examples/quickstart.yaml")
				return exitCode(2)
			}
			noteBuiltin(args[0], stderr)
			sc, err := loadScenarioFaults(args[0], faults, sets, stderr)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return exitCode(2)
			}
			fmt.Fprintf(stdout, "%s: ok\n", args[0])
			if plan && !writePlan(stdout, sc, driver, memoryLimit()) {
				return exitCode(2) // gridbed run would refuse it
			}
			return nil
		},
	}
	addSetFlag(c.Flags(), &sets, "override a scenario key by dotted path (`key=value`); repeatable")
	addFaultsFlag(c.Flags(), &faults)
	c.Flags().BoolVar(&plan, "plan", false, "also print the run's plan: the driver, the emulated and planned wall time, the memory estimate and whether the run is admitted")
	addDriverFlag(c, &driver)
	return c
}

// writePlan prints what gridbed run would do with sc on driver: the
// driver, the emulated time and the wall time planned (duration over
// time_scale; the deterministic driver has none), and the memory
// estimate against limit (the run's admission, emulator.Admit). It
// reports whether the run would be admitted.
func writePlan(w io.Writer, sc scenario.Scenario, driver string, limit int64) bool {
	row := func(k, v string) { fmt.Fprintf(w, "  %-10s %s\n", k, v) }
	fmt.Fprintln(w, "plan:")
	switch driver {
	case emulator.DriverSim:
		row("driver", "sim (deterministic, virtual time; gridbed run's default is the emulator: drop --driver sim)")
	default:
		row("driver", "emulator (actors over embedded NATS at scaled wall time; the default of gridbed run and sweep)")
	}
	row("peers", fmt.Sprintf("%d, %d resource dimensions + virtual, %s heartbeats", sc.Peers.Count, sc.Overlay.Dimensions, sc.Overlay.Heartbeat.Mode))
	row("emulated", sc.Duration.String())
	if driver == emulator.DriverSim {
		row("wall", "no plan: the deterministic driver runs as fast as the machine goes (time_scale is not used)")
	} else {
		wall := time.Duration(float64(sc.Duration) / sc.TimeScale)
		row("wall", fmt.Sprintf("%s planned (duration %s / time_scale %g), plus the start and the results", wall.Round(100*time.Millisecond), sc.Duration, sc.TimeScale))
	}
	e := emulator.EstimateMemory(sc, driver)
	verdict, admitted := "no limit set: admitted", true
	if limit > 0 && limit != math.MaxInt64 {
		verdict = fmt.Sprintf("within the limit of %s: admitted", fmtMiB(limit))
		if err := emulator.Admit(sc, driver, limit); err != nil {
			verdict, admitted = "REFUSED: "+err.Error(), false
		}
	}
	row("memory", fmt.Sprintf("about %s estimated (%.1f KiB a peer); %s", fmtMiB(e.Bytes), e.PerPeer/1024, verdict))
	return admitted
}

// fmtMiB is b bytes in MiB, or GiB from 10 GiB.
func fmtMiB(b int64) string {
	if b >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func newKeysCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "keys",
		Short: "list every scenario key with its default and meaning",
		Long: `Lists every scenario key with its default and meaning, the meaning
wrapped to 100 columns (docs/SCENARIOS.md has them with examples).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			writeKeys(stdout, scenario.Keys(), 100)
			return nil
		},
	}
}

// writeKeys prints the keys as three columns, the meanings wrapped so that
// no line is longer than width (unless a key or a word is).
func writeKeys(w io.Writer, keys []scenario.KeyDoc, width int) {
	kw, dw := len("KEY"), len("DEFAULT")
	for _, k := range keys {
		kw, dw = max(kw, len(k.Key)), max(dw, len([]rune(k.Default)))
	}
	indent := kw + 2 + dw + 2
	row := func(key, def, meaning string) {
		lines := wrap(meaning, max(width-indent, 30))
		fmt.Fprintf(w, "%-*s  %-*s  %s\n", kw, key, dw, def, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", indent), l)
		}
	}
	row("KEY", "DEFAULT", "MEANING")
	for _, k := range keys {
		row(k.Key, k.Default, k.Doc)
	}
}

// wrap breaks text into lines of at most width runes at spaces (a longer
// word gets its own line).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// runFlags are gridbed run's flags.
type runFlags struct {
	sets                                []string
	faults                              string
	out, driver, metricsAddr, pprofAddr string
	progress                            string
	log                                 logFlags
	strict, withReport                  bool
	checkDeterminism                    bool
	trace                               traceFlags
	workers                             workerFlags
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "run a scenario and write its results and report",
		Long: `Runs a scenario on the emulator driver by default (actors over embedded
NATS at scaled wall time; --driver sim: deterministic, virtual time) and
writes its results (summary.json, timeseries.csv, …; docs/RESULTS.md) and
report.html into a results directory.

Every run ends with one outcome — passed, failed, overloaded, interrupted —
on its last line and in summary.json. Without --strict a run that
completed exits 0 whatever its outcome; with --strict anything but passed
is non-zero (3 failed, 4 overloaded). The first Ctrl-C stops the run and
writes what it measured (status 130), a second exits at once.

` + exitStatuses + `
Run the built binary (go build -o gridbed ./cmd/gridbed) where the status
matters: go run reports any non-zero status of the program as its own 1.`,
		Example: `  gridbed run examples/quickstart.yaml
  gridbed run examples/churn.yaml --driver sim --set seed=3 --out results/churn-3
  gridbed run examples/chaos.yaml --strict; echo "exit $?"
  gridbed run examples/jobs.yaml --driver sim --check-determinism`,
		ValidArgsFunction: scenarioFiles,
		RunE: func(c *cobra.Command, args []string) error {
			return status(cmdRun(c, f, args, stdout, stderr))
		},
	}
	fs := c.Flags()
	addSetFlag(fs, &f.sets, "override a scenario key by dotted path (`key=value`); repeatable")
	addFaultsFlag(fs, &f.faults)
	fs.StringVar(&f.out, "out", "", "the results `DIR` (default results/<file name>, results/<file name>-sim for --driver sim); checked before the run, written as a whole at its end, an earlier run's results there replaced")
	addDriverFlag(c, &f.driver)
	addAddrFlag(fs, &f.metricsAddr, "metrics-addr", defaultMetricsAddr, false,
		`serve /metrics here while running: host:port, ":PORT" for this machine only, or "off"; the default moves to a free port if busy, an address you give must be free`)
	addAddrFlag(fs, &f.pprofAddr, "pprof-addr", "", true, "serve Go's profiler (/debug/pprof/) here; a bare port means loopback (default: not served)")
	addChoiceFlag(c, &f.progress, "progress", "auto", []string{"auto", "on", "off"}, "a progress bar on stderr (auto: when stderr is a terminal)")
	addLogFlags(c, &f.log)
	fs.BoolVar(&f.strict, "strict", false, "exit non-zero unless the outcome is passed: 3 failed (an invariant failed), 4 overloaded (the machine could not keep up)")
	fs.BoolVar(&f.withReport, "report", true, "write report.html and its figures (--report=false skips them)")
	addTraceFlags(fs, &f.trace)
	fs.BoolVar(&f.checkDeterminism, "check-determinism", false, "with --driver sim: run the scenario twice and compare the runs event by event and their summaries; at the first difference say where (the event, its time, both sides) and exit 1; the first run's results are written")
	addWorkerFlags(c, &f.workers)
	return c
}

func cmdRun(c *cobra.Command, f runFlags, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "gridbed run: give exactly one scenario file, e.g. gridbed run examples/quickstart.yaml")
		return 2
	}
	noteBuiltin(args[0], stderr)
	sc, err := loadScenarioFaults(args[0], f.faults, f.sets, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if msg := f.workers.check(); msg != "" {
		fmt.Fprintln(stderr, "gridbed run: "+msg)
		return 2
	}
	if f.workers.local > 0 {
		stderr = shareable(stderr) // the local workers' output joins it
	}
	if f.workers.local+f.workers.remote > 0 && f.driver != emulator.DriverLive {
		fmt.Fprintln(stderr, "gridbed run: --workers runs the emulator driver; drop --driver sim")
		return 2
	}
	if sc.Link.Matrix != nil && f.workers.local+f.workers.remote > 0 {
		fmt.Fprintf(stderr, "gridbed run: link.latency_matrix (%s) runs in one process — its latencies are measured on the deliveries there: drop --workers\n", sc.Link.LatencyMatrix)
		return 2
	}
	tw, err := f.trace.open()
	if err != nil {
		fmt.Fprintf(stderr, "gridbed run: %v\n", err)
		return 2
	}
	if tw != nil && f.workers.local+f.workers.remote > 0 {
		tw.discard()
		fmt.Fprintln(stderr, "gridbed run: --trace follows the messages of one process: drop --workers")
		return 2
	}
	if tw != nil {
		defer tw.discard() // a no-op once finished
	}
	if f.checkDeterminism && f.driver != emulator.DriverSim {
		fmt.Fprintf(stderr, "gridbed run: --check-determinism compares two runs of the deterministic driver: add --driver %s (the emulator's actors read a scaled wall clock, so two of its runs differ by design)\n", emulator.DriverSim)
		return 2
	}
	dir := f.out
	if dir == "" {
		dir = defaultOut("", args[0], f.driver)
	}
	// Refuse what cannot work before anything runs: a results directory
	// that cannot be written, a run that cannot fit in memory, a metrics
	// address that is taken.
	od, err := prepareOut("--out", dir, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed run: %v\n", err)
		return 2
	}
	if err := emulator.Admit(sc, f.driver, memoryLimit()); err != nil {
		od.Discard()
		fmt.Fprintf(stderr, "gridbed run: %v\n", err)
		return 2
	}
	m := metrics.NewRun(metrics.RunInfo{Driver: f.driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	metrics.Advertise("run") // a Prometheus target file while it serves (metrics.TargetsDir)
	ep, err := serveEndpoints("run", m.Registry, f.metricsAddr, flagGiven(c.Flags(), "metrics-addr"), f.pprofAddr, stderr)
	if err != nil {
		od.Discard()
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer ep.Close()

	// While the bar is drawn, log lines and notices go above it.
	bar := newProgressBar(stderr, f.progress)
	logger := f.log.logger(bar.writer())
	ctx, stop := interruptContext(bar.writer())
	defer stop()
	who := fmt.Sprintf("%d peers", sc.Peers.Count)
	if sc.Allocation.On() {
		// The overlay's peers.count does not apply.
		who = fmt.Sprintf("%d machines (%s grid) and the allocator", len(alloc.Grid(sc.Allocation.Grid)), sc.Allocation.Grid)
		if sc.Allocation.PlacementMode() == alloc.Neighbors {
			who = fmt.Sprintf("%d machines (%s grid), each placing among its CAN neighbors", len(alloc.Grid(sc.Allocation.Grid)), sc.Allocation.Grid)
		}
	}
	fmt.Fprintf(stderr, "running %s: %s, %v emulated, driver %s, time scale %g\n", args[0], who, sc.Duration, f.driver, sc.TimeScale)
	if e := sc.Experiment; e != nil {
		fmt.Fprintf(stderr, "this file is an experiment (%s %s %s, %d findings): run measures one point of it; `gridbed reproduce %s` runs its sweep and judges the findings\n",
			e.Paper, e.Section, e.Figure, len(e.Findings), args[0])
	}
	wopt, lw := workersOption(ctx, f.workers, f.log, logger, stderr)
	opts := emulator.Options{Driver: f.driver, Metrics: m, Progress: bar.update, Logger: logger, Workers: wopt}
	if tw != nil {
		opts.Tap = tw.w
	}
	var res *emulator.Result
	var diverged *emulator.Divergence
	notCompared := false
	if f.checkDeterminism {
		fmt.Fprintln(stderr, "checking determinism: the scenario runs twice (up to three more times if the runs diverge)")
		res, err = emulator.CheckDeterminism(ctx, sc, opts)
		if errors.As(err, &diverged) {
			err = nil
		}
		if errors.Is(err, emulator.ErrNotCompared) {
			notCompared, err = true, nil
		}
	} else {
		res, err = emulator.Run(ctx, sc, opts)
	}
	if lw != nil {
		lw.wait(10 * time.Second)
	}
	bar.done()
	if err != nil {
		od.Discard()
		fmt.Fprintf(stderr, "gridbed: %v\n", err)
		return runErrorCode(err)
	}
	res.Summary.PrintTable(stdout)
	code := writeRun(od, res, f.withReport, stdout, stderr)
	if tw != nil {
		if err := tw.finish(res, stdout); err != nil {
			fmt.Fprintf(stderr, "gridbed run: writing the trace %s: %v\n", tw.path, err)
			code = 1
		}
	}
	switch {
	case diverged != nil:
		fmt.Fprintf(stderr, "gridbed run: not deterministic: %v\n", diverged)
		fmt.Fprintln(stdout, "determinism: the two runs diverged (where: on stderr)")
	case notCompared:
		fmt.Fprintf(stderr, "gridbed run: %v; the first run's results are written\n", emulator.ErrNotCompared)
	case f.checkDeterminism:
		fmt.Fprintln(stdout, "determinism: the two runs agree event for event and in their summaries")
	}
	// The outcome is said whatever the disk did: the table above holds
	// the figures even when the files could not be written.
	fmt.Fprintln(stdout, res.Summary.OutcomeLine())
	switch {
	case diverged != nil:
		return 1
	case notCompared:
		return 130
	}
	if code != 0 {
		return code
	}
	return res.Summary.ExitCode(f.strict)
}

// runErrorCode is the exit status of a run that could not be made: 2
// when the cause is the user's input found only when the run started (a
// bus.url where no NATS server answers), 1 otherwise.
func runErrorCode(err error) int {
	var unreachable *bus.UnreachableError
	if errors.As(err, &unreachable) {
		return 2
	}
	return 1
}

// writeRun writes a run's files into its results directory and puts it in
// place. An interrupted run skips report.html (rendering its figures would
// outlast the two seconds an interrupt may take). When the files cannot
// all be written (a full disk) it says which are complete and where, and
// keeps them; when only the report cannot be, the results are put in
// place without it. Either way it returns 1.
func writeRun(od *outDir, res *emulator.Result, withReport bool, stdout, stderr io.Writer) int {
	if err := res.WriteFiles(od.Dir()); err != nil {
		fmt.Fprintf(stderr, "gridbed: writing results: %v; not put in place as %s — that directory is a temporary of gridbed's: copy what you need out of it, the next run into the same parent removes it\n", err, od.final)
		return 1
	}
	code := 0
	withFigures := withReport && res.Summary.Outcome != emulator.OutcomeInterrupted
	if withFigures {
		if _, err := report.WriteRun(od.Dir(), res); err != nil {
			fmt.Fprintf(stderr, "gridbed: writing the report: %v; the results (summary.json, timeseries.csv, …) are complete and put in place without it\n", err)
			withFigures, withReport, code = false, false, 1
			removeReport(od.Dir())
		}
	}
	if err := od.Commit(); err != nil {
		fmt.Fprintf(stderr, "gridbed: %v (the results are complete in %s)\n", err, od.Dir())
		return 1
	}
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(od.final, "summary.json"))
	if withFigures {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(od.final, "report.html"))
	} else if withReport {
		fmt.Fprintln(stdout, "report: skipped (the run was interrupted)")
	} else if code != 0 {
		fmt.Fprintln(stdout, "report: not written")
	}
	return code
}

// removeReport removes what a failed report.WriteRun may have left in
// dir, a temporary results directory of gridbed's own: the page and its
// figures, so that the marker lists only complete files.
func removeReport(dir string) {
	os.Remove(filepath.Join(dir, "report.html"))
	os.RemoveAll(filepath.Join(dir, report.FigureDir))
}

// defaultOut is the default results directory of a run (prefix "") or a
// sweep (prefix "sweep-") of file on driver: the simulator's results go
// beside the emulator's, not over them.
func defaultOut(prefix, file, driver string) string {
	name := prefix + strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if driver == emulator.DriverSim {
		name += "-sim"
	}
	return filepath.Join("results", name)
}
