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
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/cputime"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/faults/churn"
	"github.com/gridbed/gridbed/faults/nemesis"
	"github.com/gridbed/gridbed/metrics"
)

// Driver names, as --driver and summary.json's "driver" spell them. The
// live driver (emulator/live: actors over NATS at scaled wall-clock time)
// is called "emulator" on the command line and in results.
const (
	DriverLive = "emulator"
	DriverSim  = "sim"
)

// Driver is what runs the peers: both drivers implement it.
type Driver interface {
	Name() string
	// Spawn creates peer id (1, 2, 3, … in order) of the initial
	// population at point; it joins at its slot or once the previous peer
	// has joined, whichever is later (package joinorder).
	Spawn(id core.NodeID, point can.Point, slot time.Duration) error
	// Start starts emulated time (at 0) and the join sequence; call it once
	// the initial population is spawned.
	Start()
	// At runs fn at emulated time t in the driver's own context (the
	// simulator's event loop, the emulator's timer goroutine).
	At(t time.Duration, fn func())
	// Join adds peer id (the next id) at point, joining at once (churn).
	Join(id core.NodeID, point can.Point) error
	// Depart makes a random member leave gracefully, or crash when fail is
	// set; it returns the peer, or 0 when there was no member.
	Depart(fail bool) core.NodeID
	// DepartPicked makes the members pick chooses (given the current
	// members in increasing order) depart at once, crashing when fail is
	// set; it returns those that did.
	DepartPicked(pick func(members []core.NodeID) []core.NodeID, fail bool) []core.NodeID
	// Adopt adds the next peer of the initial population from an overlay
	// built outside the bus (peers.bootstrap: direct), already a member;
	// Start starts it, and emulated time, at at (the handover).
	Adopt(m driver.Member, at time.Duration) error
	// WrapBus puts a decorator (the fault layer; a message tap above it)
	// between the peers and the bus; called before the first Spawn, each
	// call wrapping what the previous ones put.
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
	Member(id core.NodeID) bool
	// Alive is the number of peers that should be members: spawned (or
	// adopted, or joined by churn) and not departed.
	Alive() int
	// Started is the number of peers hosted so far (departed included);
	// JoinedEver those of them that became members at some point.
	Started() int
	JoinedEver() int
}

// Optional capabilities of a Driver. Run asks a driver for them instead of
// naming its concrete type.
type (
	// pacedDriver runs against scaled wall time (the emulator's driver),
	// concurrently: it can fall behind its time scale, so the overload
	// guard watches its Pressure, the oracle's waits for its peers are
	// bounded, Freeze stops it where it stands for an abort, and its
	// summary says whether it kept up. Its bus counters feed the metrics
	// themselves.
	pacedDriver interface {
		Driver
		Pressure() live.Pressure
		Freeze()
		// Backlog is the number of bus messages waiting in mailboxes.
		Backlog() int64
	}
	// panicCounter counts the messages whose handling panicked in a peer.
	panicCounter interface{ Panics() int64 }
	// settledDriver says where the bus messages that reached no running
	// peer went (the message books, accounting.go).
	settledDriver interface{ Settlement() live.Settlement }
	// queueingDriver counts the messages still queued on its own bus.
	queueingDriver interface{ InFlight() uint64 }
	// eventLoopDriver runs an event loop: it counts the events handled and
	// the wall time spent handling them.
	eventLoopDriver interface {
		LoopStats() (events uint64, loop time.Duration)
	}
)

// The drivers' capabilities, checked at compile time.
var (
	_ pacedDriver     = (*live.Driver)(nil)
	_ panicCounter    = (*live.Driver)(nil)
	_ settledDriver   = (*live.Driver)(nil)
	_ queueingDriver  = (*sim.Driver)(nil)
	_ eventLoopDriver = (*sim.Driver)(nil)
)

// Options are the run's settings that are not part of the scenario.
type Options struct {
	// Driver is DriverLive (default) or DriverSim.
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
	// Workers, if set, opens the driver of a run split across processes
	// (emulator/workers: gridbed run --workers) in place of the emulator
	// driver: the peers run on worker processes, this process keeps the
	// timeline, the oracle and the results.
	Workers func(WorkersSetup) (Driver, error)
	// Record, if set, sees every event of a deterministic-driver run
	// (CheckDeterminism).
	Record *sim.Recorder
	// Tap, if set, sees every message sent and delivered (a message
	// trace, emulator/trace); not with Workers.
	Tap MessageTap
}

// WorkersSetup is what Options.Workers is given to open its driver.
type WorkersSetup struct {
	Scenario scenario.Scenario // as run: the nemesis expanded, peers split per core
	Overlay  overlay.Config
	Metrics  *metrics.Run
	Logger   *slog.Logger
	Eager    bool
	Clock    driver.ClockSpread
	// BootPoints are the initial population's points when the overlay is
	// built in-process (peers.bootstrap: direct); nil otherwise.
	BootPoints []can.Point
	// Jobs is the oracle's job ledger in a run with a workload (nil
	// without): the workers' peers and job client report their job
	// events to it through the coordinator (JobSetupFor).
	Jobs peer.JobSink
	// Central is the ledger as the global view of the schemes that read
	// one (GlobalView; nil for the others): the workers' peers ask the
	// coordinator, which answers from it (emulator/workers, central.go).
	Central jobs.Central
}

// workerFailures is a driver whose run is split across processes: it
// says how many workers it had and which of them died during the run.
type workerFailures interface {
	Failures() (workers int, lost []string)
	// LossTimes are when the dead workers were declared dead (emulated).
	LossTimes() []time.Duration
}

// workerCosts is a driver whose run is split across processes: what
// each worker process cost, as it last reported (read after Close).
type workerCosts interface {
	WorkerCosts() []WorkerCost
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
	// Allocation is a 004 allocation run's jobs-per-machine series
	// (allocation.csv); nil unless allocation.sample is set.
	Allocation *AllocationSeries
}

// Run executes scenario sc to its end and returns its results. Cancelling
// ctx interrupts the run: it stops within Options.InterruptWait and
// returns what it measured so far, with outcome interrupted (not an
// error). A run the overload guard or the memory ceiling stops returns
// its results with outcome overloaded.
//
// It goes in four phases: prepare (the population, an overlay built
// in-process, the driver), spawn (the peers, churn, faults and workload
// handed to the driver), loop (the oracle's samples until the end) and
// finish (the summary).
func Run(ctx context.Context, sc scenario.Scenario, opts Options) (*Result, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	// A random entry (the nemesis) becomes the plain timeline it draws
	// from the seed: the run, its events and its results see only that.
	sc, _ = nemesis.Expand(sc)
	if opts.Driver == "" {
		opts.Driver = DriverLive
	}
	if sc.Allocation.On() { // 004 resource-driven allocation: allocation.go
		return runAllocation(ctx, sc, opts)
	}
	if sc.Wave.On() && !sc.Wave.Actors(opts.Driver) {
		return runWave(ctx, sc, opts) // the Wave scheduler (001) as an event loop, wave.go
	}
	r := &run{ctx: ctx, sc: sc, opts: opts, m: opts.Metrics}
	if r.m == nil {
		r.m = metrics.NewRun(metrics.RunInfo{Driver: opts.Driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	}
	r.m.Identify(sc.Name, sc.Seed) // gridbed_run_info names the run (a no-op when the caller did)
	// The hard memory ceiling (memory.go) watches the whole run, the join
	// phase built in-process included; it stops the run as overloaded.
	ceiling := opts.MemoryCeiling
	if ceiling == 0 {
		ceiling = MemoryCeiling(debug.SetMemoryLimit(-1))
	}
	r.mctx = ctx
	if ceiling > 0 {
		// Memory an earlier run in this process left behind (reproduce
		// and sweep run many runs in one process) goes back to the system
		// first: the ceiling judges this run, not the last one's garbage.
		if goMemory() > ceiling/4 {
			debug.FreeOSMemory()
		}
		var stopMem func()
		r.mctx, stopMem = watchMemory(ctx, ceiling, opts.Logger, &r.pressure)
		defer stopMem()
	}
	r.runStart = time.Now()
	if stopped, err := r.prepare(); stopped != nil || err != nil {
		return stopped, err
	}
	defer func() {
		if !r.closed {
			r.drv.Close()
		}
	}()
	if err := r.spawn(); err != nil {
		return nil, err
	}
	if err := r.loop(); err != nil {
		return nil, err
	}
	return r.finish()
}

// run is one run of Run, carried from phase to phase.
type run struct {
	ctx  context.Context // the caller's: cancelled, it interrupts the run
	mctx context.Context // ctx, also ended by the memory ceiling
	// pressure is the overload guard's last window, for the memory
	// ceiling's reason.
	pressure atomic.Pointer[live.Pressure]
	gctx     context.Context // mctx, also ended by the overload guard
	sc       scenario.Scenario
	opts     Options
	m        *metrics.Run

	// prepare
	runStart  time.Time
	wallStart time.Time // the driver opened
	plan      []churn.Event
	sessions  []churn.Turnover
	nodes     []population.Node
	ocfg      overlay.Config
	regions   *regionMeter      // link.latency_matrix's measurements; nil without one
	boot      *sim.Bootstrapped // the overlay built in-process, if any
	bootWall  time.Duration
	jr        *jobRun
	wave      *waveRun // the Wave scheduler's peers on the bus (waveactors.go)
	drv       Driver
	pd        pacedDriver // drv, when it is paced
	closed    bool        // drv was closed

	// spawn
	ids     *idAlloc
	cha     *chaos
	churned *churnCounts

	// loop
	liveStart time.Time
	cpuStart  time.Duration
	// neighbors is the mean neighbor-table size of the last oracle
	// sample (float64 bits), for the overload guard's pace.
	neighbors   atomic.Uint64
	rec         *recorder
	stopGuard   func() *overloadTrip
	finalStates []peer.State
	abort       *overloadError
	interrupted bool
	snapshotGap string        // why the stopped run's last snapshot is incomplete
	end         time.Duration // the last sample's time
	liveWall    time.Duration
	handled     float64 // bus messages the peers had handled when the loop ended
}

// splitPerCore makes peers.count the peers of 002 §3.3's Multiple Peers:
// the cores of the peers.count nodes drawn (population.PerCore). The join
// window grows in proportion, so that peers join as far apart as nodes
// would. It returns the number of nodes.
func (r *run) splitPerCore() (int, error) {
	sc := r.sc
	nodes, err := population.Generate(sc.Peers.Population, sc.Peers.Count, sc.Overlay.Dimensions, sc.Seed)
	if err != nil {
		return 0, err
	}
	peers := len(population.PerCore(nodes, sc.Seed))
	r.sc.Peers.Count = peers
	r.sc.Peers.JoinWindow = time.Duration(int64(sc.Peers.JoinWindow) * int64(peers) / int64(len(nodes)))
	return len(nodes), nil
}

// prepare draws the population, builds the overlay in-process when the
// scenario says so, and opens the driver. A run stopped while building
// the overlay returns its (stopped) results.
func (r *run) prepare() (*Result, error) {
	var err error
	var nodes int // MP: the physical nodes of peers.count
	if r.sc.MP() {
		if nodes, err = r.splitPerCore(); err != nil {
			return nil, err
		}
	}
	sc, opts := r.sc, r.opts
	r.plan = churn.Plan(sc.Churn, sc.Duration, sc.Seed)
	r.sessions = churn.Lifetimes(sc.Churn, sc.Peers.Count, sc.Duration, sc.Seed)
	// Peers joining by churn continue the same population draw.
	total := sc.Peers.Count + churn.Joins(r.plan) + len(r.sessions)
	if sc.MP() {
		// Every node has a core at least: as many more nodes as peers
		// are needed split into enough peers.
		all, err := population.Generate(sc.Peers.Population, nodes+total-sc.Peers.Count, sc.Overlay.Dimensions, sc.Seed)
		if err != nil {
			return nil, err
		}
		r.nodes = population.PerCore(all, sc.Seed)[:total]
	} else if r.nodes, err = population.Generate(sc.Peers.Population, total, sc.Overlay.Dimensions, sc.Seed); err != nil {
		return nil, err
	}
	if t := subCAN(sc); t != nil {
		population.PlaceOnT(r.nodes, *t, sc.Peers.Categorical.InUse(), sc.Seed)
	}
	if sc.CEsOn() {
		placeCEs(r.nodes, sc.Peers.CEs, sc.Peers.Population, sc.Seed) // 002 §4.1
	}
	if sc.Wave.On() {
		if err := r.prepareWave(); err != nil { // the timezone CAN's labels (001 §III-B)
			return nil, err
		}
	}
	r.ocfg = overlay.Config{HeartbeatPeriod: sc.Overlay.Heartbeat.Period, Mode: sc.Overlay.Heartbeat.Mode, FailAfter: sc.Overlay.Heartbeat.FailAfter, Split: sc.Overlay.Split,
		QuietRepairs: !sc.Overlay.Heartbeat.AnnounceRepairs, NoZoneQueries: !sc.Overlay.Heartbeat.ZoneQueries, NoTakeoverRequest: !sc.Overlay.Heartbeat.TakeoverRequest,
		OrphanNotice: sc.Overlay.OrphanNotice, JoinRetry: sc.Overlay.JoinRetry}
	if r.ocfg.JoinRetry == 0 {
		r.ocfg.JoinRetry = sc.JoinRetryAuto(opts.Driver != DriverSim)
	}
	if sc.Peers.Bootstrap == scenario.BootstrapDirect {
		// The join phase runs in-process, in the deterministic driver
		// (the same cores, join sequence and heartbeats), before the bus
		// opens; the peers start over the bus as members.
		start := time.Now()
		points := make([]can.Point, sc.Peers.Count)
		for i, n := range r.nodes[:sc.Peers.Count] {
			points[i] = n.Point
		}
		r.boot, err = sim.BuildOverlay(r.mctx, sim.BootstrapOptions{Seed: sc.Seed, Overlay: r.ocfg, Points: points, JoinWindow: sc.Peers.JoinWindow})
		if err != nil {
			oe, _ := context.Cause(r.mctx).(*overloadError)
			if r.ctx.Err() != nil || oe != nil {
				// Stopped before any peer ran on the bus: the results say
				// so, and what the join phase had cost.
				return stoppedBeforeLive(sc, opts.Driver, time.Since(r.runStart), oe), nil
			}
			return nil, fmt.Errorf("peers.bootstrap: direct: %w", err)
		}
		r.bootWall = time.Since(start)
		if r.wave != nil {
			r.wave.base = r.boot.At // the clients submit from the handover on, as in the event loop
		}
		if r.boot.At >= sc.Duration {
			return nil, fmt.Errorf("peers.bootstrap: direct: the overlay of %d peers was ready at emulated %v, not before the end of the run (duration %v) — make duration longer", sc.Peers.Count, r.boot.At, sc.Duration)
		}
		if opts.Logger != nil {
			opts.Logger.Info("overlay built outside the bus", "peers", sc.Peers.Count, "handover_emulated", r.boot.At,
				"wall", r.bootWall.Round(time.Millisecond), "messages_in_memory", r.boot.Messages)
		}
	}
	r.jr = newJobRun(sc, r.m, r.nodes[:sc.Peers.Count])

	r.wallStart = time.Now()
	switch {
	case opts.Workers != nil && opts.Driver == DriverLive:
		setup := WorkersSetup{Scenario: sc, Overlay: r.ocfg, Metrics: r.m, Logger: opts.Logger, Eager: opts.EagerDecoding, Clock: clockSpread(sc)}
		if js := r.jr.setup(); js != nil {
			setup.Jobs = js.Sink // the workers' peers report to the ledger through the coordinator
			if GlobalView(sc) != "" {
				setup.Central = js.Central // and consult its global view by request
			}
		}
		if r.boot != nil {
			for _, n := range r.nodes[:sc.Peers.Count] {
				setup.BootPoints = append(setup.BootPoints, n.Point)
			}
		}
		if r.drv, err = opts.Workers(setup); err != nil {
			return nil, err
		}
		r.pd, _ = r.drv.(pacedDriver)
		return nil, nil
	}
	switch opts.Driver {
	case DriverSim:
		// The simulator's bus counters are published to the metrics at
		// every sample (the event loop is single-threaded; see recorder).
		r.drv = sim.NewDriver(sim.DriverOptions{Seed: sc.Seed, Overlay: r.ocfg, Traffic: r.m.Traffic, Jobs: r.jr.setup(), Wave: r.wave.setup(), EagerDecoding: r.opts.EagerDecoding,
			Clock: clockSpread(sc), Batched: sc.Bus.Fanout == scenario.FanoutBatched, Connections: sc.Bus.Connections, Record: r.opts.Record})
	case DriverLive:
		ld, err := live.New(live.Options{
			Seed: sc.Seed, TimeScale: sc.TimeScale, Overlay: r.ocfg, Metrics: r.m,
			BusURL: sc.Bus.URL, Connections: sc.Bus.Connections, Logger: opts.Logger, Jobs: r.jr.setup(), Wave: r.wave.setup(),
			EagerDecoding: opts.EagerDecoding, Clock: clockSpread(sc), Batched: sc.Bus.Fanout == scenario.FanoutBatched,
		})
		if err != nil {
			return nil, err
		}
		r.drv = ld
	default:
		return nil, fmt.Errorf("unknown driver %q: use %s or %s", opts.Driver, DriverLive, DriverSim)
	}
	r.pd, _ = r.drv.(pacedDriver)
	return nil, nil
}

// spawn hands the initial population (spawned, or adopted from the
// overlay built in-process), churn, faults and the workload to the driver,
// and starts it.
func (r *run) spawn() error {
	sc, drv := r.sc, r.drv
	r.ids = &idAlloc{}
	r.cha = newChaos(sc, drv, r.m, r.ids, r.opts.Logger)
	if sc.Link.Matrix != nil {
		r.regions = newRegionMeter(len(sc.Link.Matrix.Regions), r.cha.Region)
	}
	if r.opts.Tap != nil || r.regions != nil {
		// Above the fault layers: the tap sees what they then drop.
		if err := installTap(drv, r.opts.Tap, r.regions); err != nil {
			return err
		}
	}
	for i, n := range r.nodes[:sc.Peers.Count] {
		r.ids.Next(n.Point)
		if r.boot != nil {
			if err := drv.Adopt(r.boot.Members[i], r.boot.At); err != nil {
				return err
			}
			continue
		}
		startAt := time.Duration(0)
		if sc.Peers.Count > 1 {
			startAt = time.Duration(int64(sc.Peers.JoinWindow) * int64(i) / int64(sc.Peers.Count))
		}
		if err := drv.Spawn(core.NodeID(i+1), n.Point, startAt); err != nil {
			return err
		}
	}

	r.churned = scheduleChurn(drv, r.plan, r.nodes, sc.Peers.Count, r.ids, r.m, r.opts.Logger)
	scheduleSessions(drv, r.sessions, r.nodes[sc.Peers.Count+churn.Joins(r.plan):], sc.Peers.Count, r.ids, r.churned, r.m, r.opts.Logger)
	r.cha.Schedule()
	if err := r.jr.start(drv); err != nil {
		return err
	}
	drv.Start()
	return nil
}

// paceNow is the run's pace so far, at emulated time now (the overload
// guard's goroutine calls it): the same measurements the summary's
// suggested time scale is computed from at the end, up to now.
func (r *run) paceNow(now time.Duration) Pace {
	p := Pace{Scale: r.sc.TimeScale, LagP99: r.m.Lag.Quantile(0.99), Tolerance: r.sc.Emulator.LagTolerance * r.sc.Overlay.Heartbeat.Period.Seconds(),
		Cores: runtime.GOMAXPROCS(0), Wall: time.Since(r.liveStart), Need: neededRate(r.sc, math.Float64frombits(r.neighbors.Load()))}
	if now > 0 {
		p.CPUPerEmulated = (cputime.Process() - r.cpuStart).Seconds() / now.Seconds()
	}
	// Kept up so far, judged as the end judges the whole run (keepUp):
	// the lag p99 since the start within the tolerance. A window's late
	// timers warn; they do not make the run so far one that fell behind.
	p.KeptUp = p.LagP99 > 0 && p.LagP99*p.Scale <= p.Tolerance
	if r.pd != nil {
		p.Handled = float64(r.pd.BusStats().Delivered) - float64(r.pd.Backlog())
	}
	return p
}

// take records the oracle's snapshot states at t as a sample.
func (r *run) take(t time.Duration, states []peer.State) Sample {
	r.finalStates = states
	var bl int64
	if r.pd != nil {
		bl = r.pd.Backlog()
	}
	s := r.rec.sample(t, states, r.drv.BusStats(), bl, r.drv.Alive())
	r.neighbors.Store(math.Float64bits(s.Oracle.NeighborsMean))
	if jr := r.jr; jr != nil {
		s.JobEvents = jr.events()
		jr.tally(t, states)
		s.JobQueue, s.BusyNodes = jr.ledger.Live()
		s.Staleness = measureStaleness(states, r.sc.Overlay.Dimensions+1, r.sc.HoldsACID(), jr.stale)
		if t > r.sc.Duration {
			s.Duration = r.sc.Horizon() // draining: progress displays count to the drain limit
		}
		r.rec.series[len(r.rec.series)-1] = s
	}
	if r.wave != nil {
		s.Wave = r.wave.sample(states)
		r.rec.series[len(r.rec.series)-1].Wave = s.Wave
	}
	return s
}

// collect takes the oracle's snapshot; on a paced driver it waits at most
// wait for the peers' answers.
func (r *run) collect(ctx context.Context, wait time.Duration) ([]peer.State, error) {
	if r.pd != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return r.drv.Collect(ctx)
}

// overloaded reports whether the guard (or the memory ceiling) stopped
// the run, and keeps its reason.
func (r *run) overloaded() bool {
	if r.ctx.Err() != nil {
		return false
	}
	if oe, ok := context.Cause(r.gctx).(*overloadError); ok {
		r.abort = oe
		return true
	}
	return false
}

// loop samples the run at multiples of the oracle's interval until its
// end (or until it is interrupted or overloaded, then with a last
// snapshot of where it stood), and stops the overload guard.
func (r *run) loop() error {
	sc, opts, drv := r.sc, r.opts, r.drv
	r.liveStart = time.Now()
	r.cpuStart = cputime.Process()
	r.rec = newRecorder(sc, drv.Name(), r.pd != nil, r.m)
	r.rec.member = drv.Member
	origin := time.Duration(0) // emulated time at which the run goes live
	if r.boot != nil {
		origin = r.boot.At
		r.boot.Members = nil // the drivers own the cores now
		r.rec.lastT = origin
	}
	// The overload guard (overload.go) watches a paced driver while it
	// runs and cancels gctx with an *overloadError when it must stop.
	r.gctx, r.stopGuard = r.mctx, func() *overloadTrip { return nil }
	if r.pd != nil {
		r.gctx, r.stopGuard = watchOverload(r.mctx, r.pd, sc, opts, r.paceNow, &r.pressure)
	}
	// Samples at multiples of the interval (after the handover, with an
	// overlay built outside the bus), and at duration. With
	// workload.drain the run goes on past duration, an interval at a
	// time, while jobs have not ended, up to the horizon (jobs.go
	// draining); end is the last sample's time.
	r.end = sc.Duration
	for t := origin / sc.Oracle.Interval * sc.Oracle.Interval; ; {
		t += sc.Oracle.Interval
		if t > sc.Duration && t-sc.Oracle.Interval < sc.Duration {
			t = sc.Duration
		}
		t = min(t, sc.Horizon())
		err := drv.AdvanceTo(r.gctx, t)
		if r.ctx.Err() != nil {
			r.interrupted = true
			break
		}
		if r.overloaded() {
			break
		}
		if err != nil {
			r.stopGuard()
			return fmt.Errorf("run stopped at emulated %v: %w", drv.Now().Round(time.Second), err)
		}
		states, err := r.collect(r.gctx, cmp.Or(opts.SampleWait, time.Minute))
		if r.ctx.Err() != nil {
			r.interrupted = true
			break
		}
		if err != nil && r.pd != nil {
			// The guard tripped while the oracle waited, or the peers are
			// so far behind that they did not answer it: an overload, not
			// a reason to lose the run's results.
			if !r.overloaded() {
				r.abort = &overloadError{reason: err.Error() + " (their mailboxes are that far behind)"}
				if opts.Logger != nil {
					opts.Logger.Error("stopping the run: the emulator cannot keep up with its time scale: "+r.abort.reason+"; results so far are written with emulator.aborted",
						"emulated", drv.Now().Round(time.Second), "time_scale", sc.TimeScale)
				}
			}
			break
		}
		if err != nil {
			r.stopGuard()
			return err
		}
		s := r.take(t, states)
		r.end = t
		// Triggered faults fire before duration only: a drain adds none.
		if t < sc.Duration {
			if until, fired := r.cha.fire(s); fired {
				r.rec.extend(until)
			}
		}
		// A worker declared dead crashed its peers: a disturbance the
		// overlay must repair, as a crash of the fault timeline is.
		if wf, ok := drv.(workerFailures); ok {
			for _, at := range wf.LossTimes() {
				r.rec.extend(at)
			}
		}
		if opts.Progress != nil {
			opts.Progress(s)
		}
		if t >= sc.Duration && !r.jr.draining(t) {
			break
		}
	}
	r.liveWall = time.Since(r.liveStart)
	if r.pd != nil {
		r.handled = float64(r.pd.BusStats().Delivered) - float64(r.pd.Backlog())
	}
	if r.abort != nil || r.interrupted {
		return r.lastSnapshot()
	}
	return nil
}

// lastSnapshot stops every peer of a stopped run where it stands
// (mailboxes drain without work) and takes a last snapshot, so the
// results say what the run had done when it was stopped. An interrupt
// must end within InterruptWait: its snapshot waits less, and a peer that
// does not answer costs only that snapshot (the previous samples stand).
func (r *run) lastSnapshot() error {
	sc, rec := r.sc, r.rec
	r.end = min(max(r.drv.Now(), rec.lastT), sc.Horizon())
	if r.pd != nil {
		r.pd.Freeze()
	}
	if r.jr != nil {
		r.jr.stopped = "interrupted"
		if r.abort != nil {
			r.jr.stopped = "aborted (the emulator could not keep up)"
		}
	}
	sctx, wait := r.ctx, time.Minute // frozen peers answer once their mailboxes drain
	if r.interrupted {
		sctx, wait = context.Background(), interruptWait(r.opts)/2
	}
	states, err := r.collect(sctx, wait)
	switch {
	case err != nil && r.interrupted:
		r.snapshotGap = err.Error()
		states = nil // keep the last complete sample
	case err != nil && len(states) > 0:
		// A peer that does not answer (stuck behind its mailbox)
		// must not cost the results: the last snapshot goes without it.
		r.snapshotGap = err.Error()
	case err != nil:
		r.stopGuard()
		return err
	}
	switch {
	case states != nil && (r.end > rec.lastT || len(rec.series) == 0):
		s := r.take(r.end, states)
		if r.opts.Progress != nil {
			r.opts.Progress(s)
		}
	case states != nil:
		r.finalStates = states
	case len(rec.series) == 0:
		r.take(r.end, nil) // nothing answered and nothing sampled: an empty snapshot
	default:
		r.end = rec.lastT
	}
	return nil
}

// finish stops the overload guard and the driver and draws up the
// summary: the message books, whether a paced driver kept up, churn,
// faults, jobs and the invariants.
func (r *run) finish() (*Result, error) {
	sc, opts, drv, rec, abort, end := r.sc, r.opts, r.drv, r.rec, r.abort, r.end
	trip := r.stopGuard()
	cpu := cputime.Process() - r.cpuStart
	stopped := abort != nil || r.interrupted
	// Stop the peers before the final accounting, so that every message
	// counted as sent is also accounted for by the bus. An interrupted run
	// waits for that only briefly.
	r.closed = true
	closeWait := time.Duration(0)
	if r.interrupted {
		closeWait = interruptWait(opts) / 2
	}
	if err := closeWithin(drv, closeWait); err != nil {
		if !stopped {
			return nil, err
		}
		// The run was stopped: a peer that does not halt in time must not
		// cost the results either.
		r.snapshotGap = strings.TrimPrefix(r.snapshotGap+"; "+err.Error(), "; ")
	}
	sum := rec.summary(time.Since(r.wallStart), r.m.Traffic.Snapshot(), drv.BusStats())
	sum.Accounting = readMessageCounts(drv, r.cha, r.m.Traffic.Snapshot()).accounting() // the message books (accounting.go)
	sum.Peers.Bootstrap = sc.Peers.Bootstrap
	sum.Peers.Started, sum.Peers.Joined = drv.Started(), drv.JoinedEver()
	if boot := r.boot; boot != nil {
		at := boot.At.Seconds()
		sum.Peers.HandoverSeconds = &at
		sum.Peers.BootstrapWallSeconds = r.bootWall.Seconds()
		sum.Peers.BootstrapMessages = boot.Messages
	}
	keptUp := InvariantCheck{Name: "kept_up", OK: true, Detail: "deterministic driver: its clock is virtual and cannot fall behind"}
	var hosts []HostCost
	if wc, ok := drv.(workerCosts); ok {
		sum.Workers = splitCosts(wc.WorkerCosts(), cpu)
		hosts = sum.Workers.Hosts
	}
	if r.pd != nil {
		sum.Emulator = keepUp(sc.TimeScale, sc.Overlay.Heartbeat.Period, sc.Emulator.LagTolerance, sum.Clock.LagSeconds.P50, sum.Clock.LagSeconds.P99, sum.Clock.Timers, cpu, sum.EmulatedSeconds, sum.Bus.Dropped, hosts)
		sum.Emulator.Overload = sc.Emulator.Overload
		if pc, ok := drv.(panicCounter); ok {
			sum.Emulator.PeerPanics = pc.Panics()
		}
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
			// run, not from one bad window: the same function, with what
			// the guard saw so far while the run went on.
			p := sum.Emulator.pace
			p.KeptUp, p.Handled, p.Wall, p.Need = false, r.handled, r.liveWall, neededRate(sc, sum.Overlay.NeighborsMean)
			sum.Emulator.SuggestedTimeScale = SuggestTimeScale(p)
		}
		keptUp = sum.Emulator.check(sc.TimeScale, sum.Bus.Dropped)
		if !sum.Emulator.KeptUp && opts.Logger != nil {
			opts.Logger.Warn("the emulator could not keep up with the time scale: its results are distorted by late timers",
				"time_scale", sc.TimeScale, "lag_p99_emulated_seconds", sum.Emulator.LagP99EmulatedSeconds,
				"tolerance_emulated_seconds", sum.Emulator.LagToleranceSeconds, "bus_dropped", sum.Bus.Dropped,
				"suggested_time_scale", sum.Emulator.SuggestedTimeScale, "aborted", sum.Emulator.Aborted)
		}
	}
	if el, ok := drv.(eventLoopDriver); ok {
		events, loop := el.LoopStats()
		sum.Sim = &SimSummary{Events: events, LoopSeconds: loop.Seconds()}
		if loop > 0 {
			sum.Sim.EventsPerSecond = float64(events) / loop.Seconds()
		}
	}
	sum.Churn = r.churned.summary()
	sum.Faults = r.cha.summary()
	if r.regions != nil {
		sum.RegionLatency = r.regions.summary(sc)
	}
	annotateRecovery(sum.Faults.Events, rec.series)
	inForce := inForceAtEnd(sc)
	markInForce(sum.Faults.Events, inForce)
	var jobChecks []InvariantCheck
	var waits []float64
	var table []JobRow
	if jr := r.jr; jr != nil {
		// At the last sample's time: the states are from then, and the
		// emulator's clock ran on while the peers stopped.
		sum.Jobs, jobChecks = jr.summary(end, r.finalStates)
		waits = jr.waits
		table = jr.jobTable()
	}
	sum.Staleness = rec.staleness()
	sum.Invariants = rec.invariants(jobChecks, inForce)
	sum.Invariants.add(keptUp)
	if r.wave != nil {
		r.wave.finish(&sum, end, r.finalStates) // wave_conservation (waveactors.go)
	}
	sum.Invariants.add(sum.Accounting.Check()) // messages_accounted (accounting.go)
	if wf, ok := drv.(workerFailures); ok {
		if n, lost := wf.Failures(); len(lost) > 0 {
			sum.Invariants.fail("workers_alive", strings.Join(lost, "; "))
		} else {
			sum.Invariants.add(InvariantCheck{Name: "workers_alive", OK: true, Detail: fmt.Sprintf("all %d workers ran to the end", n)})
		}
	}
	if e := sum.Emulator; e != nil && e.PeerPanics > 0 {
		sum.Invariants.fail("no_peer_panics", fmt.Sprintf("%d messages panicked in a peer (logged with their stacks): a protocol bug", e.PeerPanics))
	}
	if abort != nil {
		detail := fmt.Sprintf("aborted at %v emulated of %v: %s", end.Round(time.Second), sc.Duration, abort.reason)
		if e := sum.Emulator; e != nil && !strings.HasPrefix(abort.reason, "memory:") {
			detail += fmt.Sprintf("; try --set time_scale=%g, or emulator.overload=warn to go on regardless", e.SuggestedTimeScale)
		}
		if r.snapshotGap != "" {
			detail += "; while stopping: " + r.snapshotGap
		}
		sum.Invariants.fail("run_completed", detail)
	}
	if rec.until >= 0 {
		v := rec.until.Seconds()
		sum.Faults.DisturbedUntilSeconds = &v
	}
	why := ""
	if r.interrupted {
		why = fmt.Sprintf("interrupted at %v emulated of %v; every figure covers the run up to there", end.Round(time.Second), sc.Duration)
		if r.snapshotGap != "" {
			why += " (while stopping: " + r.snapshotGap + ")"
		}
	}
	res := &Result{Summary: sum, Series: rec.series, Scenario: sc, JobWaits: waits, Jobs: table}
	if c, ok := res.jobHistories(); ok {
		sum.Invariants.add(c)
	}
	sum.decide(why)
	res.Summary = sum
	return res, nil
}

// scheduleSessions hands the session model's turnovers to the driver: the
// peer holding the slot departs and a new peer (the next of the population
// draw) joins in its place. A slot whose peer is no longer a member (a
// fault crashed it) is not refilled.
func scheduleSessions(drv Driver, plan []churn.Turnover, nodes []population.Node, slots int, ids *idAlloc, c *churnCounts, m *metrics.Run, logger *slog.Logger) {
	holder := make([]core.NodeID, slots) // written in the driver's context only
	for i := range holder {
		holder[i] = core.NodeID(i + 1)
	}
	for i, ev := range plan {
		n := nodes[i]
		drv.At(ev.At, func() {
			old := holder[ev.Slot]
			gone := drv.DepartPicked(func(members []core.NodeID) []core.NodeID {
				if _, ok := slices.BinarySearch(members, old); ok {
					return []core.NodeID{old}
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
			id := ids.Next(n.Point)
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
				id := ids.Next(n.Point)
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

// clockSpread is how the drivers draw the peers' own clocks (peers.clock).
func clockSpread(sc scenario.Scenario) driver.ClockSpread {
	return driver.ClockSpread{Drift: sc.Peers.Clock.Drift, Offset: sc.Peers.Clock.Offset}
}
