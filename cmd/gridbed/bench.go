package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bench"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

// defaultBenchFile is the scenario gridbed bench runs without a FILE.
const defaultBenchFile = "examples/bench.yaml"

func cmdBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario key (key=value); repeatable")
	peers := fs.Int("peers", 0, "peers.count (0: the scenario's)")
	timeScale := fs.Float64("time-scale", 0, "time_scale (0: the scenario's)")
	duration := fs.Duration("duration", 0, "emulated duration (0: the scenario's)")
	driver := fs.String("driver", emulator.DriverLive, "emulator or sim")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	noCeiling := fs.Bool("no-ceiling", false, "skip the raw actor → NATS → actor ceiling")
	ceilingFor := fs.Duration("ceiling-duration", 5*time.Second, "how long the ceiling is measured (after 1 s of warm-up)")
	ceilingActors := fs.Int("ceiling-actors", 0, "actors in the ceiling measurement (default 10000)")
	ceilingSize := fs.Int("ceiling-size", 0, "ceiling message size in bytes (default: the scenario's mean message size)")
	metricsAddr := fs.String("metrics-addr", "off", `serve /metrics here while running ("off" disables)`)
	pprofAddr := fs.String("pprof-addr", "", `serve Go's profiler (/debug/pprof/) here; a bare port means loopback (default: not served)`)
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "gridbed bench: give at most one scenario file, e.g. gridbed bench examples/bench.yaml")
		return 2
	}
	file := defaultBenchFile
	if len(pos) == 1 {
		file = pos[0]
	}
	if !validDriver("bench", *driver, stderr) {
		return 2
	}
	level, ok := parseLogLevel("bench", *logLevel, stderr)
	if !ok {
		return 2
	}
	// The shortcut flags are --set overrides applied after the others, so
	// they get the same validation and error messages.
	if *peers > 0 {
		sets = append(sets, "peers.count="+strconv.Itoa(*peers))
	}
	if *timeScale > 0 {
		sets = append(sets, "time_scale="+strconv.FormatFloat(*timeScale, 'g', -1, 64))
	}
	var fitted string
	if *duration > 0 {
		// The scenario's join window was chosen for its own duration: fit
		// it to the one asked for, so that a window is left to measure.
		base, err := loadScenario(file, sets)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		if jw := fitJoinWindow(base, *duration); jw != base.Peers.JoinWindow && !setsKey(sets, "peers.join_window") {
			sets = append(sets, "peers.join_window="+jw.String())
			fitted = fmt.Sprintf("gridbed bench: peers.join_window fitted to %v (was %v) for --duration %v\n", jw, base.Peers.JoinWindow, *duration)
		}
		sets = append(sets, "duration="+duration.String())
	}
	sc, err := loadScenario(file, sets)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprint(stderr, fitted)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	m := metrics.NewRun(metrics.RunInfo{Driver: *driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	if err := emulator.Admit(sc, *driver, memoryLimit()); err != nil {
		fmt.Fprintf(stderr, "gridbed bench: %v\n", err)
		return 2
	}
	ep, err := serveEndpoints("bench", m.Registry, *metricsAddr, true, *pprofAddr, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer ep.Close()
	ctx, stop := interruptContext(stderr)
	defer stop()
	fmt.Fprintf(stderr, "bench %s: %d peers, %v emulated, driver %s, time scale %g\n", file, sc.Peers.Count, sc.Duration, *driver, sc.TimeScale)
	rep, err := bench.Run(ctx, sc, bench.Options{
		Driver: *driver, Metrics: m, Logger: logger, NoCeiling: *noCeiling,
		Ceiling: bench.CeilingOptions{Duration: *ceilingFor, Actors: *ceilingActors, Size: *ceilingSize},
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
	if *asJSON {
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
