package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bench"
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
	driver := fs.String("driver", emulator.DriverEmulator, "emulator or sim")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	noCeiling := fs.Bool("no-ceiling", false, "skip the raw actor → NATS → actor ceiling")
	ceilingFor := fs.Duration("ceiling-duration", 5*time.Second, "how long the ceiling is measured (after 1 s of warm-up)")
	ceilingActors := fs.Int("ceiling-actors", 0, "actors in the ceiling measurement (default 10000)")
	ceilingSize := fs.Int("ceiling-size", 0, "ceiling message size in bytes (default: the scenario's mean message size)")
	metricsAddr := fs.String("metrics-addr", "off", `serve /metrics and /debug/pprof/ here while running ("off" disables)`)
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
	if *duration > 0 {
		sets = append(sets, "duration="+duration.String())
	}
	sc, err := loadScenario(file, sets)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	m := metrics.NewRun(metrics.RunInfo{Driver: *driver, Mode: sc.Overlay.Heartbeat.Mode, Population: sc.Peers.Population})
	if *metricsAddr != "off" && *metricsAddr != "" {
		srv, err := metrics.Serve(*metricsAddr, m.Registry)
		if err != nil {
			fmt.Fprintf(stderr, "gridbed bench: metrics disabled: %v\n", err)
		} else {
			defer srv.Close()
			fmt.Fprintf(stderr, "metrics: http://%s/metrics\n", srv.Addr())
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "bench %s: %d peers, %v emulated, driver %s, time scale %g\n", file, sc.Peers.Count, sc.Duration, *driver, sc.TimeScale)
	rep, err := bench.Run(ctx, sc, bench.Options{
		Driver: *driver, Metrics: m, Logger: logger, NoCeiling: *noCeiling,
		Ceiling: bench.CeilingOptions{Duration: *ceilingFor, Actors: *ceilingActors, Size: *ceilingSize},
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "gridbed bench: interrupted")
			return 130
		}
		fmt.Fprintf(stderr, "gridbed bench: %v\n", err)
		return 1
	}
	if *asJSON {
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "gridbed bench: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(js))
		return 0
	}
	rep.PrintTable(stdout)
	return 0
}
