// Package emulator runs a scenario: it generates the peer population, hands
// the peers to a driver — the emulator (protoactor actors over NATS at scaled
// wall time, emulator/live) or the deterministic simulator (emulator/sim) —
// takes ground-truth snapshots with the oracle at a fixed emulated interval,
// exports them as metrics, and produces the run's results: a summary, a time
// series, and the effective scenario.
package emulator

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/churn"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/metrics"
)

// Driver names.
const (
	DriverEmulator = "emulator"
	DriverSim      = "sim"
)

// Driver is what runs the peers: both drivers implement it.
type Driver interface {
	Name() string
	// Spawn creates peer id (1, 2, 3, … in order) of the initial
	// population at point; it joins at its slot or once the previous peer
	// has joined, whichever is later (package joinorder).
	Spawn(id overlay.NodeID, point can.Point, slot time.Duration) error
	// Start starts emulated time (at 0) and the join sequence; call it once
	// the initial population is spawned.
	Start()
	// At runs fn at emulated time t in the driver's own context (the
	// simulator's event loop, the emulator's timer goroutine).
	At(t time.Duration, fn func())
	// Join adds peer id (the next id) at point, joining at once (churn).
	Join(id overlay.NodeID, point can.Point) error
	// Depart makes a random member leave gracefully, or crash when fail is
	// set; it returns the peer, or 0 when there was no member.
	Depart(fail bool) overlay.NodeID
	// DepartPicked makes the members pick chooses (given the current
	// members in increasing order) depart at once, crashing when fail is
	// set; it returns those that did.
	DepartPicked(pick func(members []overlay.NodeID) []overlay.NodeID, fail bool) []overlay.NodeID
	// Adopt adds the next peer of the initial population from an overlay
	// built outside the bus (peers.bootstrap: direct), already a member;
	// Start starts it, and emulated time, at at (the handover).
	Adopt(m sim.Member, at time.Duration) error
	// WrapBus puts a decorator (the fault layer) between the peers and the
	// bus; called once, before the first Spawn.
	WrapBus(wrap func(bus.Bus) bus.Bus)
	// AdvanceTo returns once emulated time t has been reached.
	AdvanceTo(ctx context.Context, t time.Duration) error
	// Now is the current emulated time.
	Now() time.Duration
	// Collect copies every peer's state, outside the bus.
	Collect(ctx context.Context) ([]peer.State, error)
	BusStats() bus.Stats
	Close() error
	// AddClient creates the run's job client (runs with a workload).
	AddClient(cfg jobs.ClientConfig) error
	// Submit hands a job to the client; call it in the driver's context (At).
	Submit(spec *wire.JobSpec)
	// Member reports whether peer id is a current member of the overlay.
	Member(id overlay.NodeID) bool
	// Alive is the number of peers that should be members: spawned (or
	// adopted, or joined by churn) and not departed.
	Alive() int
}

// Options are the run's settings that are not part of the scenario.
type Options struct {
	// Driver is DriverEmulator (default) or DriverSim.
	Driver string
	// Metrics receives the run's series; nil creates a private one.
	Metrics *metrics.Run
	// Progress, if set, is called after every oracle sample.
	Progress func(Sample)
	// Logger receives diagnostics (protoactor's included); nil discards.
	Logger *slog.Logger
	// OverloadWindow is the wall time between two looks of the emulator's
	// overload guard (overload.go); 0 means one second. Tests shorten it.
	OverloadWindow time.Duration
	// SampleWait bounds how long an oracle sample of the emulator waits
	// for the peers' answers; 0 means a minute. Peers that do not answer
	// in time are too far behind their mailboxes: the run stops as an
	// overload, with its results. Tests shorten it.
	SampleWait time.Duration
	// InterruptWait bounds how long an interrupted run (ctx cancelled)
	// spends stopping: its last snapshot and halting the peers share it;
	// 0 means 1.5 s, so that the command ends within 2 s of a signal.
	InterruptWait time.Duration
	// MemoryCeiling is the Go heap and runtime memory at which the run is
	// stopped as overloaded (with its results); 0 means MemoryCeiling()
	// of the process's memory limit, negative none.
	MemoryCeiling int64
	// EagerDecoding makes every peer decode messages whole instead of
	// leaving heartbeats' neighbor lists encoded until needed
	// (peer.DecodeEagerly): the same run, for tests.
	EagerDecoding bool
}

// Result is what a run produced.
type Result struct {
	Summary  Summary
	Series   []Sample
	Scenario scenario.Scenario
	// JobWaits are every submitted job's wait in emulated seconds, as
	// jobs.wait_seconds (from submission to the start of the run that
	// completed the job or is still going; a job not started counts up to
	// the end of the run, a failed one up to its failure: censored), in
	// job order; nil without a workload. Not in summary.json: reports draw
	// their distribution (emulator/report).
	JobWaits []float64
	// Jobs is the per-job table (jobs.csv), in job order; nil without a
	// workload.
	Jobs []JobRow
}

// Run executes scenario sc to its end and returns its results. Cancelling
// ctx interrupts the run: it stops within Options.InterruptWait and
// returns what it measured so far, with outcome interrupted (not an
// error). A run the overload guard or the memory ceiling stops returns
// its results with outcome overloaded.
func Run(ctx context.Context, sc scenario.Scenario, opts Options) (*Result, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if opts.Driver == "" {
		opts.Driver = DriverEmulator
	}
	m := opts.Metrics
	if m == nil {
		m = metrics.NewRun(metrics.RunInfo{Driver: opts.Driver, Mode: sc.Overlay.Heartbeat.Mode, Population: sc.Peers.Population})
	}
	// The hard memory ceiling (memory.go) watches the whole run, the join
	// phase built in-process included; it stops the run as overloaded.
	ceiling := opts.MemoryCeiling
	if ceiling == 0 {
		ceiling = MemoryCeiling(debug.SetMemoryLimit(-1))
	}
	mctx := ctx
	if ceiling > 0 {
		var stopMem func()
		mctx, stopMem = watchMemory(ctx, ceiling, opts.Logger)
		defer stopMem()
	}
	runStart := time.Now()
	plan := churn.Plan(sc.Churn, sc.Duration, sc.Seed)
	sessions := churn.Lifetimes(sc.Churn, sc.Peers.Count, sc.Duration, sc.Seed)
	// Peers joining by churn continue the same population draw.
	nodes, err := population.Generate(sc.Peers.Population, sc.Peers.Count+churn.Joins(plan)+len(sessions), sc.Overlay.Dimensions, sc.Seed)
	if err != nil {
		return nil, err
	}
	ocfg := overlay.Config{HeartbeatPeriod: sc.Overlay.Heartbeat.Period, Mode: sc.Overlay.Heartbeat.Mode, FailAfter: sc.Overlay.Heartbeat.FailAfter, Split: sc.Overlay.Split,
		QuietRepairs: !sc.Overlay.Heartbeat.AnnounceRepairs, NoZoneQueries: !sc.Overlay.Heartbeat.ZoneQueries, NoTakeoverRequest: !sc.Overlay.Heartbeat.TakeoverRequest}
	var boot *sim.Bootstrapped
	var bootWall time.Duration
	if sc.Peers.Bootstrap == scenario.BootstrapDirect {
		// The join phase runs in-process, in the deterministic driver
		// (the same cores, join sequence and heartbeats), before the bus
		// opens; the peers start over the bus as members.
		start := time.Now()
		points := make([]can.Point, sc.Peers.Count)
		for i, n := range nodes[:sc.Peers.Count] {
			points[i] = n.Point
		}
		boot, err = sim.BuildOverlay(mctx, sim.BootstrapOptions{Seed: sc.Seed, Overlay: ocfg, Points: points, JoinWindow: sc.Peers.JoinWindow})
		if err != nil {
			oe, _ := context.Cause(mctx).(*overloadError)
			if ctx.Err() != nil || oe != nil {
				// Stopped before any peer ran on the bus: the results say
				// so, and what the join phase had cost.
				return stoppedBeforeLive(sc, opts.Driver, time.Since(runStart), oe), nil
			}
			return nil, fmt.Errorf("peers.bootstrap: direct: %w", err)
		}
		bootWall = time.Since(start)
		if boot.At >= sc.Duration {
			return nil, fmt.Errorf("peers.bootstrap: direct: the overlay of %d peers was ready at emulated %v, not before the end of the run (duration %v) — make duration longer", sc.Peers.Count, boot.At, sc.Duration)
		}
		if opts.Logger != nil {
			opts.Logger.Info("overlay built outside the bus", "peers", sc.Peers.Count, "handover_emulated", boot.At,
				"wall", bootWall.Round(time.Millisecond), "messages_in_memory", boot.Messages)
		}
	}
	jr := newJobRun(sc, m, nodes[:sc.Peers.Count])

	var drv Driver
	var backlog func() int64
	wallStart := time.Now()
	switch opts.Driver {
	case DriverSim:
		// The simulator's bus counters are published to the metrics at
		// every sample (the event loop is single-threaded; see recorder).
		drv = sim.NewDriver(sim.DriverOptions{Seed: sc.Seed, Overlay: ocfg, Traffic: m.Traffic, Jobs: jr.setup(), EagerDecoding: opts.EagerDecoding})
	case DriverEmulator:
		ld, err := live.New(live.Options{
			Seed: sc.Seed, TimeScale: sc.TimeScale, Overlay: ocfg, Metrics: m,
			BusURL: sc.Bus.URL, Connections: sc.Bus.Connections, Logger: opts.Logger, Jobs: jr.setup(),
			EagerDecoding: opts.EagerDecoding,
		})
		if err != nil {
			return nil, err
		}
		drv, backlog = ld, ld.Backlog
	default:
		return nil, fmt.Errorf("unknown driver %q: use %s or %s", opts.Driver, DriverEmulator, DriverSim)
	}
	closed := false
	defer func() {
		if !closed {
			drv.Close()
		}
	}()

	ids := &idAlloc{}
	cha := newChaos(sc, drv, m, ids, opts.Logger)
	for i, n := range nodes[:sc.Peers.Count] {
		ids.next(n.Point)
		if boot != nil {
			if err := drv.Adopt(boot.Members[i], boot.At); err != nil {
				return nil, err
			}
			continue
		}
		startAt := time.Duration(0)
		if sc.Peers.Count > 1 {
			startAt = time.Duration(int64(sc.Peers.JoinWindow) * int64(i) / int64(sc.Peers.Count))
		}
		if err := drv.Spawn(overlay.NodeID(i+1), n.Point, startAt); err != nil {
			return nil, err
		}
	}

	churned := scheduleChurn(drv, plan, nodes, sc.Peers.Count, ids, m, opts.Logger)
	scheduleSessions(drv, sessions, nodes[sc.Peers.Count+churn.Joins(plan):], sc.Peers.Count, ids, churned, m, opts.Logger)
	cha.schedule()
	if err := jr.start(drv); err != nil {
		return nil, err
	}
	drv.Start()
	liveStart := time.Now()
	cpuStart := cpuTime()
	rec := newRecorder(sc, drv.Name(), m)
	origin := time.Duration(0) // emulated time at which the run goes live
	if boot != nil {
		origin = boot.At
		boot.Members = nil // the drivers own the cores now
		rec.lastT = origin
	}
	// The overload guard (overload.go) watches the emulator while it runs
	// and cancels gctx with an *overloadError when it must stop.
	gctx, stopGuard := mctx, func() *overloadTrip { return nil }
	ld, _ := drv.(*live.Driver)
	if ld != nil {
		gctx, stopGuard = watchOverload(mctx, ld, sc, opts, cpuStart)
	}
	var finalStates []peer.State
	take := func(t time.Duration, states []peer.State) Sample {
		finalStates = states
		var bl int64
		if backlog != nil {
			bl = backlog()
		}
		s := rec.sample(t, states, drv.BusStats(), bl, drv.Alive())
		if jr != nil {
			s.JobEvents = jr.events()
			jr.tally(t, states)
			s.JobQueue, s.BusyNodes = jr.ledger.Live()
			if t > sc.Duration {
				s.Duration = sc.Horizon() // draining: progress displays count to the drain limit
			}
			rec.series[len(rec.series)-1] = s
		}
		return s
	}
	// collect takes the oracle's snapshot; on the emulator it waits at most
	// wait for the peers' answers.
	collect := func(ctx context.Context, wait time.Duration) ([]peer.State, error) {
		if ld != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, wait)
			defer cancel()
		}
		return drv.Collect(ctx)
	}
	var abort *overloadError
	interrupted := false
	var snapshotGap string // why the stopped run's last snapshot is incomplete
	// overloaded reports whether the guard (or the memory ceiling) stopped
	// the run, and keeps its reason.
	overloaded := func() bool {
		if ctx.Err() != nil {
			return false
		}
		if oe, ok := context.Cause(gctx).(*overloadError); ok {
			abort = oe
			return true
		}
		return false
	}
	// Samples at multiples of the interval (after the handover, with an
	// overlay built outside the bus), and at duration. With
	// workload.drain the run goes on past duration, an interval at a
	// time, while jobs have not ended, up to the horizon (jobs.go
	// draining); end is the last sample's time.
	end := sc.Duration
	for t := origin / sc.Oracle.Interval * sc.Oracle.Interval; ; {
		t += sc.Oracle.Interval
		if t > sc.Duration && t-sc.Oracle.Interval < sc.Duration {
			t = sc.Duration
		}
		t = min(t, sc.Horizon())
		err := drv.AdvanceTo(gctx, t)
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		if overloaded() {
			break
		}
		if err != nil {
			stopGuard()
			return nil, fmt.Errorf("run stopped at emulated %v: %w", drv.Now().Round(time.Second), err)
		}
		states, err := collect(gctx, cmp.Or(opts.SampleWait, time.Minute))
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		if err != nil && ld != nil {
			// The guard tripped while the oracle waited, or the peers are
			// so far behind that they did not answer it: an overload, not
			// a reason to lose the run's results.
			if !overloaded() {
				abort = &overloadError{reason: err.Error() + " (their mailboxes are that far behind)"}
				if opts.Logger != nil {
					opts.Logger.Error("stopping the run: the emulator cannot keep up with its time scale: "+abort.reason+"; results so far are written with emulator.aborted",
						"emulated", drv.Now().Round(time.Second), "time_scale", sc.TimeScale)
				}
			}
			break
		}
		if err != nil {
			stopGuard()
			return nil, err
		}
		s := take(t, states)
		end = t
		// Triggered faults fire before duration only: a drain adds none.
		if t < sc.Duration {
			if until, fired := cha.fire(s); fired {
				rec.extend(until)
			}
		}
		if opts.Progress != nil {
			opts.Progress(s)
		}
		if t >= sc.Duration && !jr.draining(t) {
			break
		}
	}
	liveWall := time.Since(liveStart)
	var handled float64 // bus messages the peers had handled when the loop ended
	if ld != nil {
		handled = float64(ld.BusStats().Delivered) - float64(ld.Backlog())
	}
	stopped := abort != nil || interrupted
	if stopped {
		// Stop every peer where it stands (mailboxes drain without work)
		// and take a last snapshot, so the results say what the run had
		// done when it was stopped. An interrupt must end within
		// InterruptWait: its snapshot waits less, and a peer that does not
		// answer costs only that snapshot (the previous samples stand).
		end = min(max(drv.Now(), rec.lastT), sc.Horizon())
		if ld != nil {
			ld.Freeze()
		}
		if jr != nil {
			jr.stopped = "interrupted"
			if abort != nil {
				jr.stopped = "aborted (the emulator could not keep up)"
			}
		}
		sctx, wait := ctx, time.Minute // frozen peers answer once their mailboxes drain
		if interrupted {
			sctx, wait = context.Background(), interruptWait(opts)/2
		}
		states, err := collect(sctx, wait)
		switch {
		case err != nil && interrupted:
			snapshotGap = err.Error()
			states = nil // keep the last complete sample
		case err != nil && len(states) > 0:
			// A peer that does not answer (stuck behind its mailbox)
			// must not cost the results: the last snapshot goes without it.
			snapshotGap = err.Error()
		case err != nil:
			stopGuard()
			return nil, err
		}
		switch {
		case states != nil && (end > rec.lastT || len(rec.series) == 0):
			s := take(end, states)
			if opts.Progress != nil {
				opts.Progress(s)
			}
		case states != nil:
			finalStates = states
		case len(rec.series) == 0:
			take(end, nil) // nothing answered and nothing sampled: an empty snapshot
		default:
			end = rec.lastT
		}
	}
	trip := stopGuard()
	cpu := cpuTime() - cpuStart
	// Stop the peers before the final accounting, so that every message
	// counted as sent is also accounted for by the bus. An interrupted run
	// waits for that only briefly.
	closed = true
	closeWait := time.Duration(0)
	if interrupted {
		closeWait = interruptWait(opts) / 2
	}
	if err := closeWithin(drv, closeWait); err != nil {
		if !stopped {
			return nil, err
		}
		// The run was stopped: a peer that does not halt in time must not
		// cost the results either.
		snapshotGap = strings.TrimPrefix(snapshotGap+"; "+err.Error(), "; ")
	}
	sum := rec.summary(time.Since(wallStart), m.Traffic.Snapshot(), drv.BusStats())
	sum.Accounting = readMessageCounts(drv, cha, m.Traffic.Snapshot()).accounting() // the message books (accounting.go)
	sum.Peers.Bootstrap = sc.Peers.Bootstrap
	if boot != nil {
		at := boot.At.Seconds()
		sum.Peers.HandoverSeconds = &at
		sum.Peers.BootstrapWallSeconds = bootWall.Seconds()
		sum.Peers.BootstrapMessages = boot.Messages
	}
	keptUp := InvariantCheck{Name: "kept_up", OK: true, Detail: "deterministic driver: its clock is virtual and cannot fall behind"}
	switch d := drv.(type) {
	case *live.Driver:
		sum.Emulator = keepUp(sc.TimeScale, sc.Overlay.Heartbeat.Period, sc.Emulator.LagTolerance, sum.Clock.LagSeconds.P50, sum.Clock.LagSeconds.P99, sum.Clock.Timers, cpu, sum.EmulatedSeconds, sum.Bus.Dropped)
		sum.Emulator.Overload = sc.Emulator.Overload
		sum.Emulator.PeerPanics = d.Panics()
		trip.record(sum.Emulator)
		if abort != nil {
			sum.Emulator.Aborted, sum.Emulator.Reason = true, abort.reason
			if sum.Emulator.OverloadAtSeconds == nil {
				v := end.Seconds()
				sum.Emulator.OverloadAtSeconds = &v
			}
			sum.Emulator.KeptUp = false
		}
		sum.Emulator.clampTo(end.Seconds())
		if !sum.Emulator.KeptUp {
			// Planned from what the peers sustained over the whole live
			// run, not from one bad window.
			sum.Emulator.SuggestedTimeScale = sustainedTimeScale(sc, sum, liveWall, handled)
		}
		keptUp = sum.Emulator.check(sc.TimeScale, sum.Bus.Dropped)
		if !sum.Emulator.KeptUp && opts.Logger != nil {
			opts.Logger.Warn("the emulator could not keep up with the time scale: its results are distorted by late timers",
				"time_scale", sc.TimeScale, "lag_p99_emulated_seconds", sum.Emulator.LagP99EmulatedSeconds,
				"tolerance_seconds", sum.Emulator.LagToleranceSeconds, "bus_dropped", sum.Bus.Dropped,
				"suggested_time_scale", sum.Emulator.SuggestedTimeScale, "aborted", sum.Emulator.Aborted)
		}
	case *sim.Driver:
		events, loop := d.LoopStats()
		sum.Sim = &SimSummary{Events: events, LoopSeconds: loop.Seconds()}
		if loop > 0 {
			sum.Sim.EventsPerSecond = float64(events) / loop.Seconds()
		}
	}
	sum.Churn = churned.summary()
	sum.Faults = cha.summary()
	annotateRecovery(sum.Faults.Events, rec.series)
	var jobChecks []InvariantCheck
	var waits []float64
	var table []JobRow
	if jr != nil {
		// At the last sample's time: the states are from then, and the
		// emulator's clock ran on while the peers stopped.
		sum.Jobs, jobChecks = jr.summary(end, finalStates)
		waits = jr.waits
		table = jr.jobTable()
	}
	sum.Invariants = rec.invariants(jobChecks)
	sum.Invariants.add(keptUp)
	sum.Invariants.add(sum.Accounting.Check()) // messages_accounted (accounting.go)
	if e := sum.Emulator; e != nil && e.PeerPanics > 0 {
		sum.Invariants.fail("no_peer_panics", fmt.Sprintf("%d messages panicked in a peer (logged with their stacks): a protocol bug", e.PeerPanics))
	}
	if abort != nil {
		detail := fmt.Sprintf("aborted at %v emulated of %v: %s", end.Round(time.Second), sc.Duration, abort.reason)
		if e := sum.Emulator; e != nil && !strings.HasPrefix(abort.reason, "memory:") {
			detail += fmt.Sprintf("; try --set time_scale=%g, or emulator.overload=warn to go on regardless", e.SuggestedTimeScale)
		}
		if snapshotGap != "" {
			detail += "; while stopping: " + snapshotGap
		}
		sum.Invariants.fail("run_completed", detail)
	}
	if rec.until >= 0 {
		v := rec.until.Seconds()
		sum.Faults.DisturbedUntilSeconds = &v
	}
	why := ""
	if interrupted {
		why = fmt.Sprintf("interrupted at %v emulated of %v; every figure covers the run up to there", end.Round(time.Second), sc.Duration)
		if snapshotGap != "" {
			why += " (while stopping: " + snapshotGap + ")"
		}
	}
	sum.decide(why)
	return &Result{Summary: sum, Series: rec.series, Scenario: sc, JobWaits: waits, Jobs: table}, nil
}

// scheduleSessions hands the session model's turnovers to the driver: the
// peer holding the slot departs and a new peer (the next of the population
// draw) joins in its place. A slot whose peer is no longer a member (a
// fault crashed it) is not refilled.
func scheduleSessions(drv Driver, plan []churn.Turnover, nodes []population.Node, slots int, ids *idAlloc, c *churnCounts, m *metrics.Run, logger *slog.Logger) {
	holder := make([]overlay.NodeID, slots) // written in the driver's context only
	for i := range holder {
		holder[i] = overlay.NodeID(i + 1)
	}
	for i, ev := range plan {
		n := nodes[i]
		drv.At(ev.At, func() {
			old := holder[ev.Slot]
			gone := drv.DepartPicked(func(members []overlay.NodeID) []overlay.NodeID {
				if _, ok := slices.BinarySearch(members, old); ok {
					return []overlay.NodeID{old}
				}
				return nil
			}, ev.Fail)
			if len(gone) == 0 {
				c.skipped.Add(1)
				return
			}
			kind := churn.Leave
			if ev.Fail {
				kind = churn.Fail
				c.failures.Add(1)
			} else {
				c.leaves.Add(1)
			}
			m.Churn(kind.String())
			id := ids.next(n.Point)
			if err := drv.Join(id, n.Point); err != nil {
				c.skipped.Add(1)
				if logger != nil {
					logger.Warn("session join failed", "peer", id, "err", err)
				}
				return
			}
			holder[ev.Slot] = id
			c.joins.Add(1)
			m.Churn(churn.Join.String())
		})
	}
}

// churnCounts counts the churn events carried out (written in the driver's
// context, read after the driver stopped).
type churnCounts struct{ joins, leaves, failures, skipped atomic.Uint64 }

func (c *churnCounts) summary() ChurnSummary {
	return ChurnSummary{Joins: c.joins.Load(), Leaves: c.leaves.Load(), Failures: c.failures.Load(), Skipped: c.skipped.Load()}
}

// scheduleChurn hands the churn plan to the driver: joins take the next
// peer of the population, departures a random member.
func scheduleChurn(drv Driver, plan []churn.Event, nodes []population.Node, next int, ids *idAlloc, m *metrics.Run, logger *slog.Logger) *churnCounts {
	c := &churnCounts{}
	for _, ev := range plan {
		switch ev.Kind {
		case churn.Join:
			n := nodes[next]
			next++
			drv.At(ev.At, func() {
				// Ids are handed out when peers are added (crash-restarts
				// add peers too), so the drivers see them in order.
				id := ids.next(n.Point)
				if err := drv.Join(id, n.Point); err != nil {
					c.skipped.Add(1)
					if logger != nil {
						logger.Warn("churn join failed", "peer", id, "err", err)
					}
					return
				}
				c.joins.Add(1)
				m.Churn(ev.Kind.String())
			})
		case churn.Leave, churn.Fail:
			fail := ev.Kind == churn.Fail
			drv.At(ev.At, func() {
				if drv.Depart(fail) == 0 {
					c.skipped.Add(1)
					return
				}
				if fail {
					c.failures.Add(1)
				} else {
					c.leaves.Add(1)
				}
				m.Churn(ev.Kind.String())
			})
		}
	}
	return c
}
