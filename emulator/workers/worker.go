package workers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/cputime"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/faults/timeline"
	"github.com/gridbed/gridbed/metrics"
)

// WorkerOptions configure Work.
type WorkerOptions struct {
	// MetricsAddr is where the worker serves /metrics ("" or "off": not).
	MetricsAddr string
	Logger      *slog.Logger
	// Ready, if set, is called with the worker's place once the
	// coordinator accepted it.
	Ready func(index, count int)
}

// Work joins the run of the coordinator at url as a worker and hosts its
// share of the peers until the coordinator closes the run (nil), the
// connection to the coordinator is lost, or ctx ends.
func Work(ctx context.Context, url string, opts WorkerOptions) error {
	return work(ctx, url, opts, nil)
}

// work is Work; beforeStart, if set, is called with the worker's index
// and its bus's delivered count as the start command arrives, before the
// worker starts its clock and peers (a test's stand-in for a worker the
// machine kept from starting while the others ran).
func work(ctx context.Context, url string, opts WorkerOptions, beforeStart func(index int, delivered func() uint64)) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &worker{log: log, done: make(chan struct{}), beforeStart: beforeStart}
	// The control connection rides out a bus_restart of the
	// coordinator's server (reconnecting, holding what it would publish
	// meanwhile, outage.go); in a scenario without one, losing the
	// server means the coordinator is gone.
	nc, err := nats.Connect(url, nats.Name("gridbed-worker"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			if w.cut() == 0 {
				cancel(errors.New("the connection to the coordinator closed"))
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { w.reconnected() }),
		nats.ClosedHandler(func(*nats.Conn) { cancel(errors.New("the connection to the coordinator closed")) }))
	if err != nil {
		return fmt.Errorf("worker: connect to the coordinator at %s: %w", url, err)
	}
	defer nc.Close()
	host, _ := os.Hostname()
	hello := Hello{Host: host, PID: os.Getpid()}
	hello.CID, _ = nc.GetClientID()
	msg, err := nc.Request(helloSubject, encode(hello), requestTimeout)
	if err != nil {
		return fmt.Errorf("worker: the coordinator at %s did not answer: %w", url, err)
	}
	var st Setup
	if err := decode(msg.Data, &st); err != nil {
		return err
	}
	if st.Err != "" {
		return fmt.Errorf("worker: the coordinator refused: %s", st.Err)
	}
	// The worker's series carry the coordinator's run labels (run_id
	// included): dashboards sum the run over its processes.
	m := metrics.NewRun(st.Info)
	ready := Ready{Index: st.Index}
	if opts.MetricsAddr != "" && opts.MetricsAddr != "off" {
		srv, err := metrics.Serve(opts.MetricsAddr, m.Registry)
		if err != nil {
			return fmt.Errorf("worker: serve metrics on %s: %w", opts.MetricsAddr, err)
		}
		defer srv.Close()
		ready.Metrics = srv.Addr()
	}
	w.nc, w.st, w.log, w.m = nc, st, log.With("worker", st.Index), m
	var sc *scenario.Scenario
	var js *peer.JobSetup
	if len(st.YAML) > 0 {
		s, err := scenario.Parse("coordinator", st.YAML)
		if err != nil {
			return fmt.Errorf("worker %d: the coordinator's scenario: %w", st.Index, err)
		}
		sc = &s
		w.setGrace(outageGrace(s))
		if s.Workload.On() {
			// The peers' job cores as in a one-process run; what they
			// tell the oracle goes to the coordinator's ledger.
			w.jobs = &jobSink{index: st.Index, now: func() time.Duration { return w.drv.Now() }}
			js = emulator.JobSetupFor(s)
			js.Sink = w.jobs
			if emulator.GlobalView(s) != "" {
				// The scheme reads the global view: the coordinator's
				// ledger answers (central.go).
				js.Central = &remoteView{nc: nc, subj: centralSubject(st.Run), now: w.jobs.now, log: w.log}
			}
		}
	}
	w.drv, err = live.New(live.Options{
		Seed: st.Seed, TimeScale: st.TimeScale, Overlay: st.Overlay, Metrics: m,
		BusURL: url, Connections: st.Connections, Run: st.Run, Logger: log,
		EagerDecoding: st.Eager, Clock: st.Clock, Batched: st.Batched, Jobs: js,
		Worker: &live.WorkerOptions{Membership: w, Subscribe: func(k int) bool { return OwnsShard(k, st.Index, st.Count) }},
	})
	if err != nil {
		return fmt.Errorf("worker %d: %w", st.Index, err)
	}
	if sc != nil {
		// The fault layer before any peer exists, its timed entries on
		// the worker's clock (the coordinator's epoch); the triggered
		// ones when the coordinator says they fire (opTrigger).
		w.tl = timeline.New(*sc, faultHost{w.drv}, m, noIDs{}, log)
		w.tl.Schedule()
	}
	sub, err := nc.Subscribe(cmdSubject(st.Run, st.Index), w.handle)
	if err != nil {
		w.drv.Close()
		return err
	}
	defer sub.Unsubscribe()
	// Ready: the coordinator may send commands now.
	if _, err := nc.Request(readySubject(st.Run), encode(ready), requestTimeout); err != nil {
		w.drv.Close()
		return fmt.Errorf("worker %d: the coordinator did not acknowledge it: %w", st.Index, err)
	}
	if opts.Ready != nil {
		opts.Ready(st.Index, st.Count)
	}
	// Heartbeats until the end.
	beat := time.NewTicker(BeatInterval)
	defer beat.Stop()
	w.beat()
	for {
		select {
		case <-beat.C:
			if d := w.cutFor(); d > w.grace() {
				w.drv.Close()
				return fmt.Errorf("worker %d: cut off from the coordinator's server for %v, longer than any bus_restart of the run", st.Index, d.Round(time.Second))
			}
			w.beat()
		case <-w.done:
			return nil
		case <-ctx.Done():
			if w.closing.Load() {
				// The run closed; the coordinator may go before the
				// close is finished here.
				<-w.done
				return nil
			}
			w.drv.Close()
			return fmt.Errorf("worker %d: %w", st.Index, context.Cause(ctx))
		}
	}
}

// worker is one worker's side of the run.
type worker struct {
	nc   *nats.Conn
	st   Setup
	log  *slog.Logger
	m    *metrics.Run
	drv  *live.Driver
	done chan struct{}

	bootOnce sync.Once
	boot     *sim.Bootstrapped
	bootErr  error

	tl   *timeline.Timeline // the fault layer, nil without a scenario
	jobs *jobSink           // the job events on their way to the coordinator; nil without a workload
	// jobsOut keeps the batches sent until the coordinator has them
	// (resent on resume and quiesce).
	jobsOut jobOutbox

	closing atomic.Bool // the coordinator asked it to close

	beforeStart func(index int, delivered func() uint64) // work's

	// The worker's cost (Cost): its process's CPU time at the start
	// command (started says it came), and the peers it hosted.
	cpuStart atomic.Int64
	started  atomic.Bool
	peers    atomic.Int64

	hold // the control path through a bus_restart (outage_worker.go)

	mu      sync.Mutex
	lastLag metrics.QuantilesState
	closed  bool
}

func (w *worker) beat() {
	if w.paused() {
		return // a bus outage: silent until the coordinator says resume
	}
	cid, _ := w.nc.GetClientID()
	_ = w.nc.Publish(beatSubject(w.st.Run), encode(Beat{Index: w.st.Index, At: w.drv.Now(), Pressure: w.drv.Pressure(), CID: cid, Cost: w.cost()}))
	if !w.closing.Load() {
		w.sendJobs(false) // closing: the close's answer sends the last
	}
}

// cost is what the worker's process has cost so far: its CPU time since
// the start command (0 before it), its GOMAXPROCS, the peers it hosted.
func (w *worker) cost() Cost {
	c := Cost{Cores: runtime.GOMAXPROCS(0), Peers: int(w.peers.Load())}
	if w.started.Load() {
		c.CPU = cputime.Process() - time.Duration(w.cpuStart.Load())
	}
	return c
}

// sendJobs publishes the job events told since the previous batch (final:
// the last batch) and returns its Seq; 0 without a workload.
func (w *worker) sendJobs(final bool) uint64 {
	if w.jobs == nil {
		return 0
	}
	b := w.jobs.batch(final)
	data := encode(b)
	w.jobsOut.keep(b.Seq, data) // until the coordinator has it
	w.publish(jobsSubject(w.st.Run), data)
	return b.Seq
}

// resendJobs publishes again every batch of job events sent from Seq
// next on (Cmd.JobsNext: the first the coordinator lacks); those before
// it are dropped.
func (w *worker) resendJobs(next uint64) {
	if w.jobs == nil {
		return
	}
	for _, data := range w.jobsOut.unacked(next) {
		w.publish(jobsSubject(w.st.Run), data)
	}
}

// Inject asks the coordinator for the member the job client submits
// through (driver.RemoteInjector): the run's members are the
// coordinator's.
func (w *worker) Inject() core.NodeID {
	w.awaitResumed()
	msg, err := w.nc.Request(injectSubject(w.st.Run), nil, requestTimeout/3)
	if err != nil || len(msg.Data) != 8 {
		w.log.Warn("injection request to the coordinator failed", "err", err)
		return 0
	}
	return core.NodeID(binary.BigEndian.Uint64(msg.Data))
}

// Bootstrap asks the coordinator for a member to join through
// (driver.Membership).
func (w *worker) Bootstrap(id core.NodeID) core.NodeID {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	for range 3 {
		w.awaitResumed()
		msg, err := w.nc.Request(bootSubject(w.st.Run), b[:], requestTimeout/3)
		if err == nil && len(msg.Data) == 8 {
			return core.NodeID(binary.BigEndian.Uint64(msg.Data))
		}
		w.log.Warn("bootstrap request to the coordinator failed", "peer", id, "err", err)
	}
	return 0
}

// Joined tells the coordinator that id became a member (driver.Membership).
func (w *worker) Joined(id core.NodeID, at time.Duration) {
	w.publish(joinedSubject(w.st.Run), encode(Joined{ID: id, At: at}))
}

// report reads the worker's counters; the clock lags are those since the
// last report.
func (w *worker) report() Report {
	lag := w.m.Lag.State()
	w.mu.Lock()
	delta := lag.Sub(w.lastLag)
	w.lastLag = lag
	w.mu.Unlock()
	r := Report{Traffic: w.m.Traffic.Snapshot(), Lag: delta, Bus: w.drv.BusStats(), Backlog: w.drv.Backlog(), Panics: w.drv.Panics(), Cost: w.cost()}
	if w.tl != nil {
		r.Link, r.Slow, r.Outage = w.tl.Link(), w.tl.Slow(), w.tl.OutageDropped()
	}
	return r
}

// faultHost is the worker's driver as its fault layer's host: the link
// model and the timed link faults apply here, to what the worker's peers
// send; crashes, leaves and restarts are the coordinator's (its timeline
// picks from the run's members), so they do nothing here.
type faultHost struct{ *live.Driver }

func (faultHost) DepartPicked(func([]core.NodeID) []core.NodeID, bool) []core.NodeID { return nil }
func (faultHost) Join(core.NodeID, can.Point) error                                  { return nil }

// noIDs: a worker's fault layer adds no peers (faultHost.Join).
type noIDs struct{}

func (noIDs) Next(can.Point) core.NodeID  { return 0 }
func (noIDs) Point(core.NodeID) can.Point { return nil }

// host hosts peer p: spawned at its point, or adopted from the overlay
// built in-process (which the first adopt builds). A peer already hosted
// is done already (a command asked again after a bus outage).
func (w *worker) host(p PeerSpec) error {
	if _, ok := w.drv.Endpoint(p.ID); ok {
		return nil
	}
	if !p.Adopt {
		err := w.drv.Spawn(p.ID, p.Point, 0)
		if err == nil {
			w.peers.Add(1)
		}
		return err
	}
	w.bootOnce.Do(func() {
		w.boot, w.bootErr = sim.BuildOverlay(context.Background(), sim.BootstrapOptions{Seed: w.st.Seed, Overlay: w.st.Overlay, Points: w.st.BootPoints, JoinWindow: w.st.JoinWindow})
	})
	switch {
	case w.bootErr != nil:
		return w.bootErr
	case int(p.ID) > len(w.boot.Members):
		return fmt.Errorf("no peer %d in the overlay built in-process (%d peers)", p.ID, len(w.boot.Members))
	}
	err := w.drv.Adopt(w.boot.Members[p.ID-1], p.At)
	w.boot.Members[p.ID-1] = driver.Member{} // the driver owns the core now
	if err == nil {
		w.peers.Add(1)
	}
	return err
}

// handle carries out one command of the coordinator.
func (w *worker) handle(msg *nats.Msg) {
	var c Cmd
	if err := decode(msg.Data, &c); err != nil {
		w.reply(msg, Report{Err: err.Error()})
		return
	}
	var err error
	switch c.Op {
	case opSpawn:
		err = w.host(PeerSpec{ID: c.ID, Point: c.Point})
	case opAdopt:
		err = w.host(PeerSpec{ID: c.ID, At: c.At, Adopt: true})
	case opHost:
		for k, p := range c.Peers {
			if err = w.host(p); err != nil {
				err = fmt.Errorf("peer %d (%d of %d in the batch): %w", p.ID, k+1, len(c.Peers), err)
				break
			}
		}
	case opStartAt:
		w.drv.StartPeerAt(c.ID, c.At)
	case opStartNow:
		w.drv.StartPeerNow(c.ID)
	case opHalt:
		w.drv.HaltHosted(c.ID, c.Fail)
	case opStart:
		if !w.started.Load() {
			w.cpuStart.Store(int64(cputime.Process()))
			w.started.Store(true)
		}
		if w.beforeStart != nil {
			w.beforeStart(w.st.Index, func() uint64 { return w.drv.BusStats().Delivered })
		}
		w.drv.StartFrom(time.Unix(0, c.Epoch))
	case opClient:
		if w.jobs == nil {
			err = errors.New("a job client in a run without a workload")
			break
		}
		err = w.drv.AddClient(c.Client)
	case opSubmit:
		if c.Job != nil {
			w.drv.Submit(c.Job.spec())
		}
	case opTrigger:
		if w.tl != nil {
			w.tl.FireTriggered(c.Index, c.At)
		}
	case opFreeze:
		w.drv.Freeze()
	case opResume:
		w.reply(msg, w.resume(c.JobsNext))
		w.beat()
		return
	case opCollect:
		w.jobsOut.ack(c.JobsNext)
		// The oracle's wait runs beside the commands that follow.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.Wait)
			defer cancel()
			states, err := w.drv.Collect(ctx)
			r := w.report()
			n, perr := publishChunks(w.nc, c.Chunks, states, c.ChunkBytes)
			r.Chunks = n
			r.JobsSeq = w.sendJobs(false)
			switch {
			case err != nil:
				r.Err = err.Error()
			case perr != nil:
				r.Err = "publish the states: " + perr.Error()
			}
			w.reply(msg, r)
		}()
		return
	case opQuiesce:
		_, err = w.drv.Quiesce()
		// Nothing publishes any more: what the bus accepted reaches the
		// server before any worker closes, so the books at the end see
		// it received (and an outage's losses are exact, outage.go).
		if f, ok := w.drv.Bus().(interface{ Flush() error }); ok {
			if e := f.Flush(); err == nil && e != nil && !errors.Is(e, bus.ErrClosed) {
				err = e
			}
		}
		// The batches the coordinator lacks go again (one lost with an
		// outage's server, or one still on its way: the merge takes a
		// batch once), then what was told since.
		w.resendJobs(c.JobsNext)
		r := Report{JobsSeq: w.sendJobs(false)}
		if err != nil {
			r.Err = err.Error()
		}
		w.reply(msg, r)
		return
	case opClose:
		w.closing.Store(true)
		err = w.drv.Close()
		r := w.report()
		r.Settlement = w.drv.Settlement()
		r.JobsSeq = w.sendJobs(true)
		if err != nil {
			r.Err = err.Error()
		}
		w.reply(msg, r)
		_ = w.nc.Flush()
		w.mu.Lock()
		if !w.closed {
			w.closed = true
			close(w.done)
		}
		w.mu.Unlock()
		return
	default:
		err = fmt.Errorf("unknown command %q", c.Op)
	}
	r := Report{}
	if err != nil {
		r.Err = err.Error()
		w.log.Error("command failed", "op", c.Op, "peer", c.ID, "err", err)
	}
	w.reply(msg, r)
}

func (w *worker) reply(msg *nats.Msg, r Report) {
	if msg.Reply != "" {
		_ = msg.Respond(encode(r))
	}
}
