// Command gridbed runs emulation scenarios of P2P desktop-grid protocols.
//
//	gridbed run FILE [--out DIR] [--set key=value ...] [--driver emulator|sim] [--metrics-addr ADDR] [--pprof-addr ADDR] [--strict]
//	gridbed sweep FILE --vary key=v1,v2 [--vary ...] [--set ...] [--driver sim] [--out DIR]
//	gridbed validate FILE [--set key=value ...]
//	gridbed bench [FILE] [--peers N] [--time-scale S] [--duration D] [--driver emulator|sim] [--json]
//	gridbed reproduce NAME|all|FILE [--seeds N] [--seed S] [--scale F] [--smoke] [--out DIR] [--list]
//	gridbed keys
//
// See README.md for a quick start and docs/ for the scenario keys and the
// results schema.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/report"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

const usage = `gridbed — an emulation testbed for P2P desktop-grid protocols

Usage:
  gridbed run FILE [flags]        run a scenario and write its results
  gridbed sweep FILE --vary k=a,b [flags]
                                  run a parameter grid and tabulate it
  gridbed validate FILE [flags]   check a scenario file (and --set overrides)
  gridbed reproduce NAME|all      run a published experiment of examples/papers/
                                  (replicated, deterministic) and judge the
                                  paper's findings; --list, --seeds, --scale
  gridbed keys                    list every scenario key with its default
  gridbed bench [FILE] [flags]    measure speed: the raw actor → NATS → actor
                                  ceiling and a scenario's rate, lag, memory
                                  (default FILE examples/bench.yaml; --peers,
                                  --time-scale, --duration, --driver, --json)

Run flags:
  --out DIR              results directory (default results/<scenario file name>,
                         results/<name>-sim for --driver sim); checked before the
                         run, written as a whole at its end, an earlier run's
                         results there replaced
  --set key=value        override a scenario key by dotted path; repeatable
  --driver NAME          emulator (actors over embedded NATS, default) or sim
                         (deterministic, virtual time)
  --metrics-addr ADDR    serve /metrics here while running (default
                         127.0.0.1:9464, which moves to a free port if busy;
                         an address you give must be free; "off" disables)
  --pprof-addr ADDR      serve Go's profiler (/debug/pprof/) here; a bare port
                         means loopback (default: not served)
  --progress MODE        auto (a progress bar when stderr is a terminal), on, off
  --log-level LEVEL      debug, info, warn (default), error; logs go to stderr
  --strict               exit non-zero unless the outcome is passed: 3 failed
                         (an invariant failed), 4 overloaded (the machine could
                         not keep up)
  --report=false         skip report.html and its figures (written by default)

Every run ends with one outcome — passed, failed, overloaded, interrupted —
on its last line and in summary.json. Exit status: 0 for a completed run
(whatever its outcome, without --strict); 4 when the overload guard stopped
it; 130 when interrupted (the first Ctrl-C stops the run and writes what it
measured, a second exits at once); 2 when it could not start (bad scenario,
results directory, memory, address).

Sweep flags:
  --vary key=v1,v2,…     a grid axis; repeatable (the grid is their product)
  --set, --driver, --out as for run (default out: results/sweep-<file name>)
  --columns a.b,c.d      summary.json paths to tabulate
  --report=false         skip report.html (figures comparing the grid points)
`

func main() {
	emulator.TuneGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "sweep":
		return cmdSweep(args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "keys":
		return cmdKeys(stdout)
	case "bench":
		return cmdBench(args[1:], stdout, stderr)
	case "reproduce":
		return cmdReproduce(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "gridbed: unknown command %q — use run, sweep, reproduce, validate, keys or bench\n\n%s", args[0], usage)
	return 2
}

// setFlags collects repeated --set flags.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// parseInterleaved parses flags that may come before or after positional
// arguments ("run FILE --out DIR" and "run --out DIR FILE" both work).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// validDriver reports whether name is a driver, saying what to write
// instead on stderr when it is not.
func validDriver(cmd, name string, stderr io.Writer) bool {
	if name == emulator.DriverLive || name == emulator.DriverSim {
		return true
	}
	fmt.Fprintf(stderr, "gridbed %s: --driver %q is not a driver — write --driver emulator or --driver sim\n", cmd, name)
	return false
}

// parseLogLevel reads --log-level, saying what to write instead on stderr
// when it is not a level.
func parseLogLevel(cmd, s string, stderr io.Writer) (slog.Level, bool) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		fmt.Fprintf(stderr, "gridbed %s: --log-level %q — write debug, info, warn or error\n", cmd, s)
		return level, false
	}
	return level, true
}

func loadScenario(file string, sets []string) (scenario.Scenario, error) {
	sc, err := scenario.Load(file)
	if err != nil {
		return sc, err
	}
	if len(sets) > 0 {
		if err := sc.SetAll(sets...); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario key (key=value); repeatable")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "gridbed validate: give exactly one scenario file, e.g. gridbed validate examples/quickstart.yaml")
		return 2
	}
	if _, err := loadScenario(pos[0], sets); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: ok\n", pos[0])
	return 0
}

func cmdKeys(stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tDEFAULT\tMEANING")
	for _, k := range scenario.Keys() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Key, k.Default, k.Doc)
	}
	tw.Flush()
	return 0
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario key (key=value); repeatable")
	out := fs.String("out", "", "results directory")
	driver := fs.String("driver", emulator.DriverLive, "emulator or sim")
	metricsAddr := fs.String("metrics-addr", defaultMetricsAddr, `serve /metrics here ("off" disables)`)
	pprofAddr := fs.String("pprof-addr", "", `serve Go's profiler (/debug/pprof/) here; a bare port means loopback (default: not served)`)
	progress := fs.String("progress", "auto", "auto, on or off")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	strict := fs.Bool("strict", false, "exit non-zero unless the outcome is passed (3 failed, 4 overloaded)")
	withReport := fs.Bool("report", true, "write report.html and its figures into the results directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "gridbed run: give exactly one scenario file, e.g. gridbed run examples/quickstart.yaml")
		return 2
	}
	if !validDriver("run", *driver, stderr) {
		return 2
	}
	level, ok := parseLogLevel("run", *logLevel, stderr)
	if !ok {
		return 2
	}
	sc, err := loadScenario(pos[0], sets)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	dir := *out
	if dir == "" {
		dir = defaultOut("", pos[0], *driver)
	}
	// Refuse what cannot work before anything runs: a results directory
	// that cannot be written, a run that cannot fit in memory, a metrics
	// address that is taken.
	od, err := prepareOut("--out", dir)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed run: %v\n", err)
		return 2
	}
	if err := emulator.Admit(sc, *driver, memoryLimit()); err != nil {
		od.Discard()
		fmt.Fprintf(stderr, "gridbed run: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	m := metrics.NewRun(metrics.RunInfo{Driver: *driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	ep, err := serveEndpoints("run", m.Registry, *metricsAddr, flagGiven(fs, "metrics-addr"), *pprofAddr, stderr)
	if err != nil {
		od.Discard()
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer ep.Close()

	bar := newProgressBar(stderr, *progress)
	ctx, stop := interruptContext(stderr)
	defer stop()
	fmt.Fprintf(stderr, "running %s: %d peers, %v emulated, driver %s, time scale %g\n", pos[0], sc.Peers.Count, sc.Duration, *driver, sc.TimeScale)
	if e := sc.Experiment; e != nil {
		fmt.Fprintf(stderr, "this file is an experiment (%s %s %s, %d findings): run measures one point of it; `gridbed reproduce %s` runs its sweep and judges the findings\n",
			e.Paper, e.Section, e.Figure, len(e.Findings), pos[0])
	}
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: *driver, Metrics: m, Progress: bar.update, Logger: logger})
	bar.done()
	if err != nil {
		od.Discard()
		fmt.Fprintf(stderr, "gridbed: %v\n", err)
		return 1
	}
	res.Summary.PrintTable(stdout)
	if code := writeRun(od, res, *withReport, stdout, stderr); code != 0 {
		return code
	}
	fmt.Fprintln(stdout, res.Summary.OutcomeLine())
	return res.Summary.ExitCode(*strict)
}

// writeRun writes a run's files into its results directory and puts it in
// place. An interrupted run skips report.html (rendering its figures would
// outlast the two seconds an interrupt may take).
func writeRun(od *outDir, res *emulator.Result, withReport bool, stdout, stderr io.Writer) int {
	if err := res.WriteFiles(od.Dir()); err != nil {
		fmt.Fprintf(stderr, "gridbed: writing results: %v (partial files in %s)\n", err, od.Dir())
		return 1
	}
	withFigures := withReport && res.Summary.Outcome != emulator.OutcomeInterrupted
	if withFigures {
		if _, err := report.WriteRun(od.Dir(), res); err != nil {
			fmt.Fprintf(stderr, "gridbed: writing the report: %v\n", err)
			return 1
		}
	}
	if err := od.Commit(); err != nil {
		fmt.Fprintf(stderr, "gridbed: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(od.final, "summary.json"))
	if withFigures {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(od.final, "report.html"))
	} else if withReport {
		fmt.Fprintln(stdout, "report: skipped (the run was interrupted)")
	}
	return 0
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

// flagGiven reports whether flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// progressBar draws emulated progress on a terminal.
type progressBar struct {
	w       io.Writer
	on      bool
	started time.Time
}

func newProgressBar(w io.Writer, mode string) *progressBar {
	on := mode == "on"
	if mode == "auto" {
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				on = true
			}
		}
	}
	return &progressBar{w: w, on: on, started: time.Now()}
}

func (p *progressBar) update(s emulator.Sample) {
	if !p.on || s.Duration <= 0 {
		return
	}
	const width = 30
	frac := float64(s.T) / float64(s.Duration)
	n := min(max(int(frac*width), 0), width)
	bar := strings.Repeat("█", n) + strings.Repeat("░", width-n)
	fmt.Fprintf(p.w, "\r%s %5.1f%%  %v / %v  peers %d  broken links %d  lag p99 %s  wall %s ",
		bar, 100*frac, s.T.Round(time.Second), s.Duration, s.Oracle.Members, s.Oracle.BrokenLinks,
		time.Duration(s.LagP99*float64(time.Second)).Round(time.Microsecond), time.Since(p.started).Round(100*time.Millisecond))
}

func (p *progressBar) done() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}
