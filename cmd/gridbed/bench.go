package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bench"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

// defaultBenchFile is the scenario gridbed bench runs without a FILE (read
// from the built-in examples when it is not where gridbed runs).
const defaultBenchFile = "examples/bench.yaml"

// benchFlags are gridbed bench's flags.
type benchFlags struct {
	sets                                                              []string
	peers, ceilingActors, ceilingSize, ceilingTrials, ceilingInFlight int
	timeScale                                                         float64
	duration, ceilingFor                                              time.Duration
	driver, metricsAddr, pprofAddr                                    string
	log                                                               logFlags
	asJSON, noCeiling                                                 bool
}

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	var f benchFlags
	c := &cobra.Command{
		Use:   "bench [FILE]",
		Short: "measure speed: the raw actor → NATS → actor ceiling and a scenario's rate, lag, memory",
		Long: `Measures how fast gridbed runs on this machine: the raw actor → NATS → actor
message ceiling, then a scenario's protocol message rate, clock lag and
memory, and how close the one comes to the other (docs/BENCHMARKS.md).
FILE defaults to examples/bench.yaml (built into gridbed: works from any
directory).

` + exitStatuses,
		Example: `  gridbed bench --json
  gridbed bench --peers 10000 --time-scale 10 --duration 10m
  gridbed bench examples/bench-10k.yaml --driver sim`,
		ValidArgsFunction: scenarioFiles,
		RunE: func(_ *cobra.Command, args []string) error {
			return status(cmdBench(f, args, stdout, stderr))
		},
	}
	fs := c.Flags()
	addSetFlag(fs, &f.sets, "override a scenario key by dotted path (`key=value`); repeatable")
	fs.IntVar(&f.peers, "peers", 0, "peers.count (0: the scenario's)")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "time_scale (0: the scenario's)")
	fs.DurationVar(&f.duration, "duration", 0, "emulated duration, e.g. 10m (0: the scenario's; the join window is fitted to it)")
	addDriverFlag(c, &f.driver)
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&f.noCeiling, "no-ceiling", false, "skip the raw actor → NATS → actor ceiling")
	fs.DurationVar(&f.ceilingFor, "ceiling-duration", 5*time.Second, "how long the ceiling is measured (after 1 s of warm-up)")
	fs.IntVar(&f.ceilingTrials, "ceiling-trials", 3, "how many times the ceiling is measured (the median is the ratio's baseline)")
	fs.IntVar(&f.ceilingActors, "ceiling-actors", 0, "actors in the ceiling measurement (0: 10000)")
	fs.IntVar(&f.ceilingInFlight, "ceiling-in-flight", 0, "messages kept in flight during the ceiling measurement (0: 8192)")
	fs.IntVar(&f.ceilingSize, "ceiling-size", 0, "ceiling message size in bytes (0: the scenario's mean message size)")
	addAddrFlag(fs, &f.metricsAddr, "metrics-addr", "off", false, `serve /metrics here while running: host:port, ":PORT" for this machine only, or "off"`)
	addAddrFlag(fs, &f.pprofAddr, "pprof-addr", "", true, "serve Go's profiler (/debug/pprof/) here; a bare port means loopback (default: not served)")
	addLogFlags(c, &f.log)
	return c
}

func cmdBench(f benchFlags, pos []string, stdout, stderr io.Writer) int {
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "gridbed bench: give at most one scenario file, e.g. gridbed bench examples/bench.yaml")
		return 2
	}
	for _, bad := range []struct {
		flag string
		neg  bool
	}{{"--peers", f.peers < 0}, {"--time-scale", f.timeScale < 0}, {"--duration", f.duration < 0},
		{"--ceiling-duration", f.ceilingFor <= 0}, {"--ceiling-actors", f.ceilingActors < 0}, {"--ceiling-trials", f.ceilingTrials < 1}, {"--ceiling-size", f.ceilingSize < 0}, {"--ceiling-in-flight", f.ceilingInFlight < 0}} {
		if bad.neg {
			fmt.Fprintf(stderr, "gridbed bench: %s must be positive (0 where allowed: the scenario's or the default)\n", bad.flag)
			return 2
		}
	}
	file := defaultBenchFile
	if len(pos) == 1 {
		file = pos[0]
	}
	noteBuiltin(file, stderr)
	sets := append([]string(nil), f.sets...)
	// The shortcut flags are --set overrides applied after the others, so
	// they get the same validation and error messages.
	if f.peers > 0 {
		sets = append(sets, "peers.count="+strconv.Itoa(f.peers))
	}
	if f.timeScale > 0 {
		sets = append(sets, "time_scale="+strconv.FormatFloat(f.timeScale, 'g', -1, 64))
	}
	var fitted string
	if f.duration > 0 {
		// The scenario's join window was chosen for its own duration: fit
		// it to the one asked for, so that a window is left to measure.
		base, err := loadScenario(file, sets)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		if jw := fitJoinWindow(base, f.duration); jw != base.Peers.JoinWindow && !setsKey(sets, "peers.join_window") {
			sets = append(sets, "peers.join_window="+jw.String())
			fitted = fmt.Sprintf("gridbed bench: peers.join_window fitted to %v (was %v) for --duration %v\n", jw, base.Peers.JoinWindow, f.duration)
		}
		sets = append(sets, "duration="+f.duration.String())
	}
	sc, err := loadScenario(file, sets)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprint(stderr, fitted)
	logger := f.log.logger(stderr)
	m := metrics.NewRun(metrics.RunInfo{Driver: f.driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	if err := emulator.Admit(sc, f.driver, memoryLimit()); err != nil {
		fmt.Fprintf(stderr, "gridbed bench: %v\n", err)
		return 2
	}
	ep, err := serveEndpoints("bench", m.Registry, f.metricsAddr, true, f.pprofAddr, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer ep.Close()
	ctx, stop := interruptContext(stderr)
	defer stop()
	fmt.Fprintf(stderr, "bench %s: %d peers, %v emulated, driver %s, time scale %g\n", file, sc.Peers.Count, sc.Duration, f.driver, sc.TimeScale)
	rep, err := bench.Run(ctx, sc, bench.Options{
		Driver: f.driver, Metrics: m, Logger: logger, NoCeiling: f.noCeiling,
		Ceiling: bench.CeilingOptions{Duration: f.ceilingFor, Actors: f.ceilingActors, Size: f.ceilingSize, Trials: f.ceilingTrials, InFlight: f.ceilingInFlight},
	})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "gridbed bench: interrupted while measuring the ceiling")
			return emulator.ExitInterrupted
		}
		fmt.Fprintf(stderr, "gridbed bench: %v\n", err)
		return 1
	}
	code := 0
	if rep.Outcome == emulator.OutcomeInterrupted {
		code = emulator.ExitInterrupted
	}
	if f.asJSON {
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "gridbed bench: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(js))
		return code
	}
	rep.PrintTable(stdout)
	return code
}

// fitJoinWindow is the join window for running sc for duration: the
// scenario's own, unless that leaves no measured window — the window opens
// at the first oracle sample at least one heartbeat period after the join
// window and must hold emulator.MinWindowPeriods periods — then the longest
// that does, or half the duration when none does (the run's invariant
// measured then says how long a duration is needed).
func fitJoinWindow(sc scenario.Scenario, duration time.Duration) time.Duration {
	period, interval := sc.Overlay.Heartbeat.Period, sc.Oracle.Interval
	need := time.Duration(emulator.MinWindowPeriods) * period
	// Largest jw with the first sample from jw+period on at most
	// duration-need.
	room := (duration-need)/interval*interval - period
	jw := min(sc.Peers.JoinWindow, room)
	if jw <= 0 {
		jw = duration / 2
	}
	return jw.Round(time.Second)
}

// setsKey reports whether the --set overrides assign key.
func setsKey(sets []string, key string) bool {
	for _, s := range sets {
		if k, _, ok := strings.Cut(s, "="); ok && strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}
