package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

// Options configure Run.
type Options struct {
	// Driver is emulator.DriverLive (default) or emulator.DriverSim.
	Driver string
	// Ceiling configures the ceiling measurement (emulator driver only);
	// a zero Size uses the scenario's mean protocol message size, so both
	// rates move messages of the same size.
	Ceiling CeilingOptions
	// NoCeiling skips the ceiling measurement.
	NoCeiling bool
	Metrics   *metrics.Run
	Progress  func(emulator.Sample)
	Logger    *slog.Logger
}

// Report is one bench run's figures (gridbed bench --json). Rates are per
// wall second.
type Report struct {
	Scenario   string `json:"scenario"`
	Driver     string `json:"driver"`
	Date       string `json:"date"`
	CPUs       int    `json:"cpus"`
	GoVersion  string `json:"go_version"`
	LoadBefore string `json:"load_average_before"` // /proc/loadavg at the start
	LoadAfter  string `json:"load_average_after"`

	// Peers joined at the end, of PeersRequested; Dimensions resource
	// dimensions (plus the virtual one); heartbeat period and mode.
	Peers            int     `json:"peers"`
	PeersRequested   int     `json:"peers_requested"`
	Dimensions       int     `json:"dimensions"`
	HeartbeatSeconds float64 `json:"heartbeat_seconds"`
	HeartbeatMode    string  `json:"heartbeat_mode"`
	// PeersSustained is Peers when the run kept up (no bus drops, clock
	// lag within tolerance, steady window reached), else 0.
	PeersSustained int `json:"peers_sustained"`

	TimeScale       float64 `json:"time_scale"`
	EmulatedSeconds float64 `json:"emulated_seconds"`
	WallSeconds     float64 `json:"wall_seconds"`
	// TimeCompression is emulated seconds per wall second over the whole
	// run, spawning the peers and shutting down included.
	TimeCompression float64 `json:"time_compression"`

	// MessagesPerSecond is gridbed's protocol message rate over the
	// steady-state window (summary messages.per_wall_second); Steady
	// whether that window was measured (the population formed and the
	// window held at least emulator.MinWindowPeriods heartbeat periods).
	// Without one the rate is null, never 0.
	MessagesPerSecond *float64 `json:"messages_per_second"`
	Steady            bool     `json:"steady"`
	// Outcome and OutcomeReasons are the run's verdict (summary
	// outcome): a bench whose run did not pass measured something else
	// than the scenario.
	Outcome          string   `json:"outcome"`
	OutcomeReasons   []string `json:"outcome_reasons"`
	MessageBytesMean float64  `json:"message_bytes_mean"`
	// CeilingMessagesPerSecond is the raw actor → NATS → actor rate
	// measured in the same run (Ceiling), CeilingRatio the protocol's
	// share of it.
	CeilingMessagesPerSecond float64        `json:"ceiling_messages_per_second"`
	CeilingRatio             float64        `json:"ceiling_ratio"`
	Ceiling                  *CeilingResult `json:"ceiling,omitempty"`

	ClockLagP50Seconds float64 `json:"clock_lag_p50_seconds"`
	ClockLagP99Seconds float64 `json:"clock_lag_p99_seconds"`
	ClockLagMaxSeconds float64 `json:"clock_lag_max_seconds"`
	// KeptUp and SuggestedTimeScale are the emulator's own verdict
	// (summary emulator.kept_up, emulator.suggested_time_scale).
	KeptUp             bool    `json:"kept_up"`
	SuggestedTimeScale float64 `json:"suggested_time_scale"`
	// Aborted: the overload guard stopped the run (summary
	// emulator.aborted); the figures cover the run up to then.
	Aborted bool `json:"aborted"`

	// RSSBytes is the process's peak resident set during the scenario
	// (VmHWM, reset before it), RSSBytesPerPeer that over PeersRequested.
	RSSBytes        uint64  `json:"rss_bytes"`
	RSSBytesPerPeer float64 `json:"rss_bytes_per_peer"`
	// HeapLiveBytes is the largest live heap (what the last garbage
	// collection kept) seen at the oracle samples, HeapLiveBytesPerPeer
	// that over PeersRequested: the memory the peers really hold, which
	// the GC target (GOGC, GOMEMLIMIT) multiplies into RSS.
	HeapLiveBytes        uint64  `json:"heap_live_bytes"`
	HeapLiveBytesPerPeer float64 `json:"heap_live_bytes_per_peer"`
	// BusDrops are messages the bus dropped (NATS slow consumers); BusLost
	// messages it lost otherwise (outages).
	BusDrops uint64 `json:"bus_drops"`
	BusLost  uint64 `json:"bus_lost"`
	// BusFanout is bus.fanout; BusPublished the logical messages the bus
	// carried over the whole run and BusNATSMessages the NATS messages
	// they travelled in (summary bus.published, bus.nats_messages).
	BusFanout       string `json:"bus_fanout"`
	BusPublished    uint64 `json:"bus_published"`
	BusNATSMessages uint64 `json:"bus_nats_messages"`

	// Bootstrap is peers.bootstrap; with direct, HandoverSeconds is the
	// emulated time the in-process join phase handed over at and
	// BootstrapWallSeconds the wall time it took (not in WallSeconds'
	// emulated rate: the run's rates start at the handover).
	Bootstrap            string  `json:"bootstrap"`
	HandoverSeconds      float64 `json:"handover_seconds,omitempty"`
	BootstrapWallSeconds float64 `json:"bootstrap_wall_seconds,omitempty"`

	// EventsPerSecond is the deterministic driver's event loop speed
	// (protocol events per wall second, oracle excluded); 0 otherwise.
	EventsPerSecond float64 `json:"events_per_second"`
	Events          uint64  `json:"events"`

	Summary emulator.Summary `json:"-"`
}

// Run runs scenario sc with opts.Driver, then (emulator driver) measures
// the ceiling with messages of the scenario's mean size, and reports both.
func Run(ctx context.Context, sc scenario.Scenario, opts Options) (*Report, error) {
	if opts.Driver == "" {
		opts.Driver = emulator.DriverLive
	}
	if opts.Metrics != nil {
		opts.Metrics.Identify(sc.Name, sc.Seed) // gridbed_run_info from the ceiling phase on
	}
	rep := &Report{
		Scenario: sc.Name, Driver: opts.Driver, Date: time.Now().UTC().Format(time.DateOnly),
		CPUs: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), LoadBefore: loadAverage(),
		PeersRequested: sc.Peers.Count, Dimensions: sc.Overlay.Dimensions,
		HeartbeatSeconds: sc.Overlay.Heartbeat.Period.Seconds(), HeartbeatMode: sc.Overlay.Heartbeat.Mode.String(),
		TimeScale: sc.TimeScale, BusFanout: sc.Bus.Fanout,
	}
	resetPeakRSS()
	live := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	progress := func(s emulator.Sample) {
		rtmetrics.Read(live)
		if live[0].Value.Kind() == rtmetrics.KindUint64 {
			rep.HeapLiveBytes = max(rep.HeapLiveBytes, live[0].Value.Uint64())
		}
		if opts.Progress != nil {
			opts.Progress(s)
		}
	}
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: opts.Driver, Metrics: opts.Metrics, Progress: progress, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	rep.RSSBytes = peakRSS()
	s := res.Summary
	rep.Summary = s
	res = nil
	rep.Peers = s.Peers.Final
	if rep.PeersRequested > 0 {
		rep.RSSBytesPerPeer = float64(rep.RSSBytes) / float64(rep.PeersRequested)
		rep.HeapLiveBytesPerPeer = float64(rep.HeapLiveBytes) / float64(rep.PeersRequested)
	}
	rep.EmulatedSeconds, rep.WallSeconds = s.EmulatedSeconds, s.WallSeconds
	rep.Bootstrap, rep.BootstrapWallSeconds = s.Peers.Bootstrap, s.Peers.BootstrapWallSeconds
	if h := s.Peers.HandoverSeconds; h != nil {
		rep.HandoverSeconds = *h
	}
	if s.WallSeconds > 0 {
		// From the handover on with an overlay built in-process.
		rep.TimeCompression = (s.EmulatedSeconds - rep.HandoverSeconds) / s.WallSeconds
	}
	rep.MessagesPerSecond, rep.Steady = s.Messages.PerWallSecond, s.Messages.Window.Steady
	if s.Messages.Total > 0 {
		rep.MessageBytesMean = float64(s.Messages.Bytes) / float64(s.Messages.Total)
	}
	rep.ClockLagP50Seconds, rep.ClockLagP99Seconds, rep.ClockLagMaxSeconds = s.Clock.LagSeconds.P50, s.Clock.LagSeconds.P99, s.Clock.LagSeconds.Max
	rep.BusDrops, rep.BusLost = s.Bus.Dropped, s.Bus.Lost
	rep.BusPublished, rep.BusNATSMessages = s.Bus.Published, s.Bus.NATSMessages
	if e := s.Emulator; e != nil {
		rep.KeptUp, rep.SuggestedTimeScale, rep.Aborted = e.KeptUp, e.SuggestedTimeScale, e.Aborted
	}
	if sm := s.Sim; sm != nil {
		rep.KeptUp = true // virtual time never falls behind
		rep.Events, rep.EventsPerSecond = sm.Events, sm.EventsPerSecond
	}
	rep.Outcome, rep.OutcomeReasons = s.Outcome, s.OutcomeReasons
	if rep.KeptUp && rep.Steady && rep.BusDrops == 0 && s.Outcome == emulator.OutcomePassed {
		rep.PeersSustained = rep.Peers
	}

	if opts.Driver == emulator.DriverLive && !opts.NoCeiling && s.Outcome != emulator.OutcomeInterrupted {
		// Collect the scenario's heap first, so that the ceiling's heap
		// goal is its own — but keep the memory: returning it to the
		// system (debug.FreeOSMemory) made the first measurement fault
		// it back in, page by page, and lose two thirds of its rate to
		// the kernel (docs/BENCHMARKS.md, 2026-11-26 night).
		runtime.GC()
		co := opts.Ceiling
		if co.Size <= 0 {
			co.Size = max(1, int(rep.MessageBytesMean+0.5))
		}
		if co.Connections <= 0 {
			co.Connections = sc.Bus.Connections
		}
		c, err := Ceilings(ctx, co)
		if err != nil {
			return nil, fmt.Errorf("bench: ceiling: %w", err)
		}
		rep.Ceiling = &c
		rep.CeilingMessagesPerSecond = c.MessagesPerSecond
		if c.MessagesPerSecond > 0 && rep.MessagesPerSecond != nil {
			rep.CeilingRatio = *rep.MessagesPerSecond / c.MessagesPerSecond
		}
	}
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// PrintTable writes the report for people.
func (r *Report) PrintTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, f string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(f, a...)) }
	row("scenario", "%s  driver=%s  %s, %d CPUs, %s", r.Scenario, r.Driver, r.Date, r.CPUs, r.GoVersion)
	row("load average", "before %s, after %s", r.LoadBefore, r.LoadAfter)
	row("peers", "%d of %d joined (d=%d+virtual, %s heartbeats every %gs); sustained: %d", r.Peers, r.PeersRequested, r.Dimensions, r.HeartbeatMode, r.HeartbeatSeconds, r.PeersSustained)
	row("time", "%.0f s emulated in %.1f s wall: compression %.3g (time scale %g)", r.EmulatedSeconds, r.WallSeconds, r.TimeCompression, r.TimeScale)
	if r.MessagesPerSecond != nil {
		row("protocol messages", "%.0f msgs/s (steady window), mean %.0f B", *r.MessagesPerSecond, r.MessageBytesMean)
	} else {
		row("protocol messages", "not measured: no steady window (see the outcome below), mean %.0f B", r.MessageBytesMean)
	}
	if c := r.Ceiling; c != nil {
		row("ceiling", "%.0f msgs/s raw actor → NATS → actor (%d actors, %d in flight, %d B, %d connections; %d dropped)",
			c.MessagesPerSecond, c.Options.Actors, c.Options.InFlight, c.Options.Size, c.Options.Connections, c.Dropped)
		if len(c.Trials) > 1 {
			row("ceiling trials", "median of %d: %.0f–%.0f msgs/s", len(c.Trials), c.Min, c.Max)
		}
		row("ratio to ceiling", "%.1f%%", 100*r.CeilingRatio)
	}
	if r.Driver == emulator.DriverLive {
		row("clock lag", "p50 %.3g s, p99 %.3g s, max %.3g s (wall)", r.ClockLagP50Seconds, r.ClockLagP99Seconds, r.ClockLagMaxSeconds)
		verdict := "yes"
		if !r.KeptUp {
			verdict = "NO"
		}
		if r.Aborted {
			verdict = fmt.Sprintf("NO, run aborted at %.0f s emulated (%s)", r.EmulatedSeconds, r.Summary.Emulator.Reason)
		}
		row("kept up", "%s; estimated largest time scale that keeps up: %g", verdict, r.SuggestedTimeScale)
	} else {
		row("event loop", "%.0f protocol events/s (%d events)", r.EventsPerSecond, r.Events)
	}
	row("memory", "peak RSS %.2f GiB, %.1f KiB per peer; live heap %.2f GiB, %.1f KiB per peer", float64(r.RSSBytes)/(1<<30), r.RSSBytesPerPeer/1024,
		float64(r.HeapLiveBytes)/(1<<30), r.HeapLiveBytesPerPeer/1024)
	perNATS := 0.0
	if r.BusNATSMessages > 0 {
		perNATS = float64(r.BusPublished) / float64(r.BusNATSMessages)
	}
	row("bus", "fan-out %s: %d messages in %d NATS messages (%.2f each); dropped %d, lost %d", r.BusFanout, r.BusPublished, r.BusNATSMessages, perNATS, r.BusDrops, r.BusLost)
	tw.Flush()
	fmt.Fprintln(w, r.Summary.OutcomeLine())
}

// loadAverage is the first three fields of /proc/loadavg, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// resetPeakRSS resets the kernel's peak resident set of this process
// (Linux ≥ 4.0; ignored elsewhere), so peakRSS measures from now on.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set in bytes (VmHWM), or 0.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return v * 1024
				}
			}
		}
	}
	return 0
}
