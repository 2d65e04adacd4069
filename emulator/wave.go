package emulator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/waverun"
	"github.com/gridbed/gridbed/metrics"
)

// runWave runs a Wave scheduler scenario (wave.strategy set; 001 §V) with
// package waverun: the timezone CAN built by the overlay core, then the
// strategies, availability and discoveries in virtual time (wave.engine
// events, the deterministic driver's default). wave.engine actors runs
// the peers on the bus instead, through Run's usual phases
// (waveactors.go).
func runWave(ctx context.Context, sc scenario.Scenario, opts Options) (*Result, error) {
	if opts.Driver != DriverSim {
		return nil, fmt.Errorf("wave.strategy %s: wave.engine events runs on the deterministic driver only — run it with --driver sim, or write wave.engine: actors", sc.Wave.Strategy)
	}
	start := time.Now()
	strategy, err := wave.ParseStrategy(sc.Wave.Strategy)
	if err != nil {
		return nil, err
	}
	res, err := waverun.Run(ctx, waverun.Config{
		Seed: sc.Seed, Peers: sc.Peers.Count, Strategy: strategy, Discovery: wave.Discovery(sc.Wave.Discovery),
		DayFree: sc.Wave.DayFree, Clients: sc.Wave.Clients, RuntimeMin: sc.Wave.RuntimeMin, RuntimeMax: sc.Wave.RuntimeMax,
		SubmitWindow: sc.Wave.SubmitWindow, ClockStart: sc.Clock.Start, Duration: sc.Duration, MigrationBytes: sc.Wave.MigrationBytes,
		Overlay: overlay.Config{HeartbeatPeriod: sc.Overlay.Heartbeat.Period, Mode: sc.Overlay.Heartbeat.Mode,
			FailAfter: sc.Overlay.Heartbeat.FailAfter, Split: sc.Overlay.Split},
		JoinWindow: sc.Peers.JoinWindow,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wave run interrupted: %w", err)
		}
		return nil, err
	}
	var s Summary
	s.Scenario, s.Driver, s.Seed, s.TimeScale = sc.Name, opts.Driver, sc.Seed, sc.TimeScale
	s.EmulatedSeconds = sc.Duration.Seconds()
	s.WallSeconds = time.Since(start).Seconds()
	s.Peers.Initial, s.Peers.Started, s.Peers.Joined, s.Peers.Final = sc.Peers.Count, sc.Peers.Count, sc.Peers.Count, sc.Peers.Count
	s.Peers.Bootstrap = scenario.BootstrapDirect
	h := res.HandoverSeconds
	s.Peers.HandoverSeconds = &h
	s.Peers.AllJoinedSeconds = &h
	s.Peers.BootstrapMessages = res.OverlayMessages
	s.Messages.ByType = map[string]TypeCount{}
	for typ, c := range res.Messages {
		s.Messages.ByType[typ] = TypeCount{Count: c.Count, Bytes: c.Bytes}
		s.Messages.Total += c.Count
		s.Messages.Bytes += c.Bytes
	}
	s.Overlay.Dimensions, s.Overlay.HeartbeatMode, s.Overlay.Split = 1, sc.Overlay.Heartbeat.Mode.String(), sc.Overlay.Split.String()
	s.Oracle.IntervalSeconds = sc.Oracle.Interval.Seconds()
	s.Invariants.OK = true
	s.Invariants.add(InvariantCheck{Name: "wave_conservation", OK: res.Conservation,
		Detail: waveConservationDetail(res)})
	s.Wave = res
	if opts.Metrics != nil {
		waveMetrics(opts.Metrics.EnableWave(), res)
	}
	s.decide("")
	return &Result{Summary: s, Scenario: sc}, nil
}

func waveConservationDetail(res *waverun.Result) string {
	if res.Conservation {
		d := fmt.Sprintf("every one of %d jobs ended once (%d completed, %d failed, %d unfinished", res.Jobs, res.Completed, res.Failed, res.Unfinished)
		if res.Lost > 0 || res.Withdrawn > 0 {
			d += fmt.Sprintf(", %d lost with a departed host or a lost message, %d withdrawn by a departed client", res.Lost, res.Withdrawn)
		}
		return d + "), one host at a time, its work done once"
	}
	return "the job-history check failed: " + strings.Join(res.ConservationNotes, "; ")
}

// waveMetrics exports a Wave run's figures (docs/WAVE.md).
func waveMetrics(w *metrics.Wave, res *waverun.Result) {
	for outcome, n := range map[string]int{"completed": res.Completed, "failed": res.Failed, "unfinished": res.Unfinished} {
		w.Jobs.WithLabelValues(res.Strategy, outcome).Set(float64(n))
	}
	for _, v := range res.Slowdowns {
		w.Slowdown.WithLabelValues(res.Strategy).Observe(v)
	}
	w.Migrations.WithLabelValues(res.Strategy).Add(float64(res.Migrations))
	for typ, c := range res.Messages {
		w.Messages.WithLabelValues(typ).Add(float64(c.Count))
	}
}
