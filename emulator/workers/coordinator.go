package workers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/faults/slow"
	"github.com/gridbed/gridbed/metrics"
)

// Options configure a coordinator.
type Options struct {
	// Workers is how many workers the run waits for.
	Workers int
	// Listen is the host:port the coordinator's NATS server listens on;
	// "" is 127.0.0.1 on a free port (local workers only). Workers on
	// other machines need a reachable address, e.g. 0.0.0.0:4222.
	Listen string
	// OnListen, if set, is called with the server's URL once it listens:
	// the caller starts its local workers there.
	OnListen func(url string) error
	// OnJoin, if set, is called as each worker joins.
	OnJoin func(index int, h Hello)
	// Wait bounds how long the run waits for its workers to join; 0
	// means a minute.
	Wait time.Duration
	// Deadline is how long a worker whose control connection to the
	// coordinator's server has closed may stay silent before it is
	// declared dead; 0 means DefaultDeadline.
	Deadline time.Duration
	// HungDeadline is how long a worker still connected may stay silent
	// (a hung or starved process); 0 means DefaultHungDeadline.
	HungDeadline time.Duration
	Logger       *slog.Logger
	// ChunkBytes bounds each chunk of a worker's peer states in its
	// answer to collect; 0 means DefaultChunkBytes.
	ChunkBytes int
	// Jobs is the oracle's job ledger of a run with a workload (nil
	// without): the workers' peers and job client report to it through
	// the coordinator (jobMerge).
	Jobs peer.JobSink
	// Central is the global view of a workload whose scheme reads one
	// (emulator.GlobalView; nil otherwise): the workers' peers consult it
	// by request on centralSubject (central.go).
	Central jobs.Central
}

// Coordinator is the driver of a run whose peers live on workers: the
// run's bookkeeping (driver.Base: members, bootstrap contacts, the join
// sequence, departures) and clock are its own; each peer runs on worker
// Owner(id). It implements emulator.Driver and the emulator driver's
// optional capabilities.
type Coordinator struct {
	driver.Base[core.NodeID]
	opts   Options
	st     Setup
	m      *metrics.Run
	log    *slog.Logger
	srv    *server.Server // guarded by mu: a bus_restart replaces it
	host   string         // where srv listens, for a restart
	port   int
	url    string
	nc     *nats.Conn
	subs   []*nats.Subscription
	clock  *clock.Clock
	timers *clock.Timers
	stop   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	workers  []*remote
	joinedCh chan struct{} // closed when every worker is ready
	ready    int
	started  bool
	early    []earlyTimer
	adoptAt  time.Duration
	adopting bool
	origin   time.Duration
	failures []string
	lostAt   []time.Duration // when each lost worker was declared dead, emulated
	closed   bool
	closing  bool // Close has begun: its requests judge the workers
	final    live.Settlement
	inject   jobs.Injector // the job client's draws (AddClient)

	merge *jobMerge // the workers' job events on their way to Options.Jobs; nil without

	// The bus outages (outage.go). ctl serialises stopServer and
	// startServer; back (guarded by mu) is non-nil, and closed when it
	// ends, from a server stop until every worker is back; held are the
	// commands sent meanwhile; transitLost what the outages destroyed on
	// the server, known at Close.
	ctl  sync.Mutex
	back chan struct{}
	// outCtx is cancelled when the next outage begins: requests in
	// flight then are asked again once every worker is back (their
	// answers died with the server).
	outCtx      context.Context
	outCancel   context.CancelFunc
	stoppedAt   time.Time
	outages     uint64
	held        []heldCmd
	transitLost uint64

	chunks atomic.Uint64 // chunks of peer states received (collect)

	// hosting are the peers of the run's setup not yet sent, per worker
	// (guarded by mu): the setup hosts them in batches (hostBatch, and
	// the rest as the run starts); hosted says the setup is over.
	hosting [][]PeerSpec
	hosted  bool
}

// remote is the coordinator's view of one worker.
type remote struct {
	hello    Hello
	lastBeat time.Time
	dead     bool
	ready    bool
	window   live.Pressure // from its beats since the last Pressure
	last     Report        // the latest counters it reported
	seen     bool          // last is set
	cost     Cost          // the latest cost it reported (beat or answer)
}

// note keeps the latest cost a worker reported (a report without one
// changes nothing); its CPU time never goes back, so a beat overtaken by
// the close's answer does not undo it.
func (w *remote) note(c Cost) {
	if c.Cores == 0 {
		return
	}
	c.CPU = max(c.CPU, w.cost.CPU)
	w.cost = c
}

type earlyTimer struct {
	at time.Duration
	fn func()
}

// Open starts the coordinator's NATS server, waits for opts.Workers
// workers to join and hands each of them st (with its place); m receives
// the run's merged counters. Close it.
func Open(ctx context.Context, opts Options, st Setup, m *metrics.Run) (*Coordinator, error) {
	if opts.Workers < 1 {
		return nil, errors.New("workers: at least one worker")
	}
	if opts.Wait == 0 {
		opts.Wait = time.Minute
	}
	if opts.Deadline == 0 {
		opts.Deadline = DefaultDeadline
	}
	if opts.HungDeadline == 0 {
		opts.HungDeadline = DefaultHungDeadline
	}
	opts.HungDeadline = max(opts.HungDeadline, opts.Deadline)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if st.Run == "" {
		st.Run = fmt.Sprintf("w%d", time.Now().UnixNano()%1e9)
	}
	st.Count = opts.Workers
	st.Info = m.Info()
	// The workers export the peers' traffic; this registry's merged copy
	// (for the summary) stays out of /metrics so dashboards count it once.
	m.PeersElsewhere()
	st.Connections = Connections((max(st.Connections, bus.DefaultConnections)+opts.Workers-1)/opts.Workers, opts.Workers)
	host, port := "127.0.0.1", 0
	if opts.Listen != "" {
		h, p, err := splitHostPort(opts.Listen)
		if err != nil {
			return nil, err
		}
		host, port = h, p
	}
	srv, err := bus.ServeEmbedded(host, port)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{opts: opts, st: st, m: m, log: log, srv: srv, host: host, port: listenPort(srv), url: srv.ClientURL(), stop: make(chan struct{}), joinedCh: make(chan struct{})}
	c.outCtx, c.outCancel = context.WithCancel(context.Background())
	c.Init("workers", (*chost)(c), driver.Options{Seed: st.Seed, Overlay: st.Overlay, Traffic: metrics.NewTraffic(), Clock: st.Clock})
	// Through a bus_restart the connection reconnects at once, and
	// refuses publishes meanwhile (the commands are held, outage.go).
	if c.nc, err = nats.Connect(c.url, nats.Name("gridbed-coordinator"), nats.MaxReconnects(-1),
		nats.ReconnectWait(5*time.Millisecond), nats.ReconnectJitter(0, 0), nats.ReconnectBufSize(-1)); err != nil {
		c.shutdown()
		return nil, err
	}
	handlers := map[string]nats.MsgHandler{helloSubject: c.onHello, bootSubject(st.Run): c.onBoot, joinedSubject(st.Run): c.onJoined, beatSubject(st.Run): c.onBeat, readySubject(st.Run): c.onReady}
	if opts.Jobs != nil {
		c.merge = newJobMerge(opts.Jobs, opts.Workers)
		handlers[jobsSubject(st.Run)] = c.onJobs
		handlers[injectSubject(st.Run)] = c.onInject
	}
	if opts.Central != nil && c.merge != nil {
		c.merge.central = opts.Central
		handlers[centralSubject(st.Run)] = c.onCentral
	}
	for subj, h := range handlers {
		sub, err := c.nc.Subscribe(subj, h)
		if err != nil {
			c.shutdown()
			return nil, err
		}
		c.subs = append(c.subs, sub)
	}
	if err := c.nc.Flush(); err != nil {
		c.shutdown()
		return nil, err
	}
	c.log.Info("coordinator listening for workers", "url", c.url, "workers", opts.Workers)
	if opts.OnListen != nil {
		if err := opts.OnListen(c.url); err != nil {
			c.shutdown()
			return nil, err
		}
	}
	wait := time.NewTimer(opts.Wait)
	defer wait.Stop()
	select {
	case <-c.joinedCh:
	case <-wait.C:
		c.shutdown()
		return nil, fmt.Errorf("workers: only %d of %d workers joined %s within %v — start them with: gridbed worker --coordinator %s", c.joined(), opts.Workers, c.url, opts.Wait, c.url)
	case <-ctx.Done():
		c.shutdown()
		return nil, ctx.Err()
	}
	c.clock = clock.New(st.TimeScale)
	c.timers = clock.NewTimers(c.clock)
	c.wg.Add(1)
	go c.watch()
	return c, nil
}

func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("workers: listen address %q: want host:port", addr)
	}
	var port int
	if _, err := fmt.Sscanf(addr[i+1:], "%d", &port); err != nil {
		return "", 0, fmt.Errorf("workers: listen address %q: want host:port", addr)
	}
	return addr[:i], port, nil
}

// URL is where workers join: gridbed worker --coordinator URL.
func (c *Coordinator) URL() string { return c.url }

func (c *Coordinator) joined() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// onHello gives a joining worker its place, or refuses it.
func (c *Coordinator) onHello(msg *nats.Msg) {
	var h Hello
	if err := decode(msg.Data, &h); err != nil {
		_ = msg.Respond(encode(Setup{Err: err.Error()}))
		return
	}
	c.mu.Lock()
	if len(c.workers) >= c.opts.Workers {
		c.mu.Unlock()
		_ = msg.Respond(encode(Setup{Err: fmt.Sprintf("the run already has its %d workers", c.opts.Workers)}))
		return
	}
	st := c.st
	st.Index = len(c.workers)
	c.workers = append(c.workers, &remote{hello: h, lastBeat: time.Now()})
	c.mu.Unlock()
	_ = msg.Respond(encode(st))
}

// onReady counts a worker whose driver is up and listening for commands.
func (c *Coordinator) onReady(msg *nats.Msg) {
	var b Ready
	if decode(msg.Data, &b) != nil {
		return
	}
	c.mu.Lock()
	full, fresh := false, false
	var h Hello
	if b.Index >= 0 && b.Index < len(c.workers) && !c.workers[b.Index].ready {
		w := c.workers[b.Index]
		w.ready, w.lastBeat, w.hello.Metrics, fresh = true, time.Now(), b.Metrics, true
		h = w.hello
		c.ready++
		full = c.ready == c.opts.Workers
	}
	c.mu.Unlock()
	_ = msg.Respond(nil)
	if fresh {
		c.log.Info("worker joined", "index", b.Index, "host", h.Host, "pid", h.PID, "metrics", h.Metrics)
		if c.opts.OnJoin != nil {
			c.opts.OnJoin(b.Index, h)
		}
	}
	if full {
		close(c.joinedCh)
	}
}

// onBoot answers a worker's peer asking for a bootstrap contact.
func (c *Coordinator) onBoot(msg *nats.Msg) {
	var id core.NodeID // 0 (no peer named) only draws a contact
	if len(msg.Data) == 8 {
		id = core.NodeID(binary.BigEndian.Uint64(msg.Data))
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(c.ContactFor(id, c.clock.Now())))
	_ = msg.Respond(b[:])
}

// onJoined records a worker's peer that became a member.
func (c *Coordinator) onJoined(msg *nats.Msg) {
	var j Joined
	if decode(msg.Data, &j) == nil {
		c.JoinedAt(j.ID, j.At)
	}
}

// onJobs takes a worker's batch of job events (with its heartbeat).
func (c *Coordinator) onJobs(msg *nats.Msg) {
	var b JobBatch
	if decode(msg.Data, &b) == nil {
		c.merge.add(&b)
	}
}

// jobsWait bounds how long the coordinator waits for a batch of job
// events a worker's answer names (it was published just before the
// answer, on the same connection: it is normally here already).
const jobsWait = 5 * time.Second

// awaitJobs waits until the batches of job events the workers' answers
// name have arrived and the ledger has what it can be given.
func (c *Coordinator) awaitJobs(reps []Report) {
	if c.merge == nil {
		return
	}
	seqs := make([]uint64, len(reps))
	for i, r := range reps {
		seqs[i] = r.JobsSeq
	}
	if !c.merge.await(seqs, jobsWait) {
		c.log.Warn("a worker's job events did not arrive in time; the ledger goes on without them", "wait", jobsWait)
	}
}

// onInject answers the job client's worker with the member a submission
// goes through: the coordinator's draw from the run's members
// (driver.Base.Injector), as a one-process run draws it.
func (c *Coordinator) onInject(msg *nats.Msg) {
	c.mu.Lock()
	inject := c.inject
	c.mu.Unlock()
	var id core.NodeID
	if inject != nil {
		id = inject()
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	_ = msg.Respond(b[:])
}

func (c *Coordinator) onBeat(msg *nats.Msg) {
	var b Beat
	if decode(msg.Data, &b) != nil {
		return
	}
	c.mu.Lock()
	if b.Index >= 0 && b.Index < len(c.workers) {
		w := c.workers[b.Index]
		w.lastBeat = time.Now()
		if b.CID != 0 {
			w.hello.CID = b.CID
		}
		w.note(b.Cost)
		// The window since the coordinator's last Pressure: the worst
		// lag, all timers; the levels as last reported.
		p, q := &w.window, b.Pressure
		p.LagP99, p.TimerServiceLag = max(p.LagP99, q.LagP99), max(p.TimerServiceLag, q.TimerServiceLag)
		p.Timers += q.Timers
		p.Backlog, p.TimersQueued, p.TimersOverdue, p.Published = q.Backlog, q.TimersQueued, q.TimersOverdue, q.Published
	}
	c.mu.Unlock()
}

// watch declares dead the workers silent past the deadline: a worker
// whose control connection has closed after Options.Deadline, one still
// connected (hung, or starved of CPU on an overloaded machine) after
// Options.HungDeadline. Once Close has begun its requests judge the
// workers instead.
func (c *Coordinator) watch() {
	defer c.wg.Done()
	tick := time.NewTicker(BeatInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		type quiet struct {
			i      int
			cid    uint64
			silent time.Duration
		}
		var silent []quiet
		c.mu.Lock()
		for i, w := range c.workers {
			// During a bus outage nobody beats: startServer restarts
			// the count once every worker is back.
			if d := time.Since(w.lastBeat); !w.dead && !c.closing && c.back == nil && d > c.opts.Deadline {
				silent = append(silent, quiet{i, w.hello.CID, d})
			}
		}
		c.mu.Unlock()
		for _, q := range silent {
			switch {
			case !c.connected(q.cid):
				c.lose(q.i, fmt.Sprintf("sent no heartbeat for %v and its connection closed", c.opts.Deadline))
			case q.silent > c.opts.HungDeadline:
				c.lose(q.i, fmt.Sprintf("sent no heartbeat for %v though still connected (hung)", c.opts.HungDeadline))
			}
		}
	}
}

// connected reports whether the control connection with server id cid
// is open on the coordinator's server (a worker that gave none counts as
// connected: its silence alone judges it).
func (c *Coordinator) connected(cid uint64) bool {
	if cid == 0 {
		return true
	}
	c.mu.Lock()
	srv := c.srv
	c.mu.Unlock()
	cz, err := srv.Connz(&server.ConnzOptions{CID: cid, State: server.ConnOpen})
	return err != nil || (cz != nil && len(cz.Conns) > 0 && cz.Conns[0].Cid == cid)
}

// lose declares worker i dead: its peers crash (they depart as failed
// members do, and the overlay must repair around them), and the run's
// results say so (Failures).
func (c *Coordinator) lose(i int, why string) {
	c.mu.Lock()
	w := c.workers[i]
	if w.dead || c.closed || c.closing {
		c.mu.Unlock()
		return
	}
	w.dead = true
	c.mu.Unlock()
	c.merge.lose(i)
	now := c.clock.Now()
	gone := c.DepartPicked(func(members []core.NodeID) []core.NodeID {
		var out []core.NodeID
		for _, id := range members {
			if Owner(id, c.opts.Workers) == i {
				out = append(out, id)
			}
		}
		return out
	}, true)
	hosted := 0
	for id := core.NodeID(1); int(id) <= c.Started(); id++ {
		if Owner(id, c.opts.Workers) == i {
			hosted++
		}
	}
	msg := fmt.Sprintf("worker %d (pid %d on %s) %s at emulated %v: its %d peers crashed (%d of them members)",
		i, w.hello.PID, w.hello.Host, why, now.Round(time.Second), hosted, len(gone))
	c.log.Error("worker lost", "worker", i, "detail", msg)
	c.mu.Lock()
	c.failures = append(c.failures, msg)
	c.lostAt = append(c.lostAt, now.Round(time.Second))
	c.mu.Unlock()
}

// LossTimes are the emulated times at which workers were declared dead:
// their peers crashed then, a disturbance the overlay must repair.
func (c *Coordinator) LossTimes() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lostAt)
}

// Failures says how many workers the run had and which died during it,
// and when (lost is empty when none did).
func (c *Coordinator) Failures() (workers int, lost []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts.Workers, slices.Clone(c.failures)
}

// WorkerCosts is what each worker's process cost the run, as it last
// reported (read after Close): its host and pid, the peers it hosted, its
// CPU time since the start and its GOMAXPROCS; a dead worker's is its
// last heartbeat's. A worker whose host and pid are the coordinator's
// runs in this very process (a test's in-process workers): its CPU time
// is the process's, not its own (emulator.WorkerCost.InProcess).
func (c *Coordinator) WorkerCosts() []emulator.WorkerCost {
	host, _ := os.Hostname()
	pid := os.Getpid()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]emulator.WorkerCost, 0, c.opts.Workers)
	for i, w := range c.workers {
		out = append(out, emulator.WorkerCost{
			Worker: i, Host: w.hello.Host, PID: w.hello.PID, Peers: w.cost.Peers,
			CPUSeconds: w.cost.CPU.Seconds(), Cores: w.cost.Cores, Alive: !w.dead,
			InProcess: w.hello.PID == pid && w.hello.Host == host,
		})
	}
	return out
}

// alive reports whether worker i still counts.
func (c *Coordinator) alive(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.workers[i].dead
}

// send hands worker i a command that needs no answer; commands to one
// worker arrive in the order sent. During a bus outage it is held and
// sent once every worker is back (outage.go).
func (c *Coordinator) send(i int, cmd Cmd) {
	c.mu.Lock()
	pending := c.hosting != nil && len(c.hosting[i]) > 0
	c.mu.Unlock()
	if pending {
		c.flushHosting(i) // the peers it names come first
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.workers[i].dead:
	case c.back != nil:
		c.held = append(c.held, heldCmd{i, cmd})
	default:
		_ = c.nc.Publish(cmdSubject(c.st.Run, i), encode(cmd))
	}
}

// request hands worker i a command and waits for its answer. During a
// bus outage it waits for the workers to be back first (at most
// timeout); one an outage interrupted is asked again (the worker's
// commands that may be asked twice do their work once).
func (c *Coordinator) request(i int, cmd Cmd, timeout time.Duration) (Report, error) {
	var r Report
	var msg *nats.Msg
	for attempt := 0; ; attempt++ {
		if !c.alive(i) {
			return r, fmt.Errorf("worker %d is dead", i)
		}
		k, octx, err := c.awaitUp(timeout)
		if err != nil {
			return r, fmt.Errorf("worker %d: %s: %w", i, cmd.Op, err)
		}
		rctx, cancel := context.WithTimeout(octx, timeout)
		msg, err = c.nc.RequestWithContext(rctx, cmdSubject(c.st.Run, i), encode(cmd))
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			err = nats.ErrTimeout // the worker's silence, as Request says it
		case errors.Is(err, context.Canceled):
			err = errBusDown // an outage began: its answer died with the server
		}
		if err != nil && c.interrupted(k) && attempt < 3 {
			c.log.Info("a request met a bus outage: asking again", "worker", i, "op", cmd.Op, "err", err)
			continue
		}
		if err != nil {
			return r, fmt.Errorf("worker %d: %s: %w", i, cmd.Op, err)
		}
		break
	}
	if err := decode(msg.Data, &r); err != nil {
		return r, err
	}
	if r.Err != "" {
		return r, fmt.Errorf("worker %d: %s: %s", i, cmd.Op, r.Err)
	}
	return r, nil
}

// all sends cmd to every live worker at once and waits for their answers.
func (c *Coordinator) all(cmd Cmd, timeout time.Duration) ([]Report, []error) {
	return c.each(func(int) Cmd { return cmd }, timeout)
}

// each sends cmd(i) to every live worker i at once and waits for their
// answers.
func (c *Coordinator) each(cmd func(i int) Cmd, timeout time.Duration) ([]Report, []error) {
	n := c.opts.Workers
	reps, errs := make([]Report, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		if !c.alive(i) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i], errs[i] = c.request(i, cmd(i), timeout)
		}()
	}
	wg.Wait()
	return reps, errs
}

// chost is the Coordinator as driver.Base's host: every hosting decision
// becomes a command to the peer's worker.
type chost Coordinator

// IO implements driver.Host: the coordinator's copy of a peer never runs.
func (h *chost) IO(core.NodeID, clock.Skew) peer.IO { return idleIO{(*Coordinator)(h)} }

// AddPeer implements driver.Host: the peer's worker hosts it.
func (h *chost) AddPeer(p *peer.Peer, _ peer.IO) (core.NodeID, error) {
	c := (*Coordinator)(h)
	id := p.ID()
	spec := PeerSpec{ID: id, Point: p.State().Snapshot.Point}
	cmd := Cmd{Op: opSpawn, ID: id, Point: spec.Point}
	if c.adopting {
		spec = PeerSpec{ID: id, At: c.adoptAt, Adopt: true}
		cmd = Cmd{Op: opAdopt, ID: id, At: c.adoptAt}
	}
	if c.batch(spec) {
		return id, nil
	}
	if down, _ := c.down(); down {
		// A join during a bus outage (churn, a restart) comes from the
		// coordinator's timer goroutine, which must not wait for the
		// end of the outage (it ends it): the spawn is held in order,
		// and its failure, if any, is the worker's log's.
		c.send(Owner(id, c.opts.Workers), cmd)
		return id, nil
	}
	_, err := c.request(Owner(id, c.opts.Workers), cmd, requestTimeout)
	if err != nil && !c.alive(Owner(id, c.opts.Workers)) {
		err = nil // a dead worker's peers are crashed peers, not an error
	}
	return id, err
}

// batch adds a peer of the run's setup to its worker's next host command,
// which it sends once it holds hostBatch peers; false once the setup is
// over (a churn join, after Start, is hosted at once: its start-now
// follows).
func (c *Coordinator) batch(p PeerSpec) bool {
	i := Owner(p.ID, c.opts.Workers)
	c.mu.Lock()
	if c.hosted {
		c.mu.Unlock()
		return false
	}
	if c.hosting == nil {
		c.hosting = make([][]PeerSpec, c.opts.Workers)
	}
	c.hosting[i] = append(c.hosting[i], p)
	full := len(c.hosting[i]) >= hostBatch
	c.mu.Unlock()
	if full {
		c.flushHosting(i)
	}
	return true
}

// flushHosting sends worker i the peers of the setup it has not been
// sent yet, as one host command; a worker that fails to host them is
// lost (its peers crash), as one that fails to start.
func (c *Coordinator) flushHosting(i int) {
	c.mu.Lock()
	var peers []PeerSpec
	if c.hosting != nil {
		peers = c.hosting[i]
		c.hosting[i] = nil
	}
	c.mu.Unlock()
	if len(peers) == 0 {
		return
	}
	// The first adopt builds the overlay in-process on the worker: the
	// answer may take a while.
	if _, err := c.request(i, Cmd{Op: opHost, Peers: peers}, hostTimeout); err != nil {
		c.lose(i, "did not host its peers: "+err.Error())
	}
}

// endSetup sends every worker the rest of the setup's peers, at once,
// and hosts the peers that come later one by one.
func (c *Coordinator) endSetup() {
	c.mu.Lock()
	c.hosted = true
	c.mu.Unlock()
	var wg sync.WaitGroup
	for i := range c.opts.Workers {
		wg.Go(func() { c.flushHosting(i) })
	}
	wg.Wait()
}

// AddClient implements driver.Host: never called, the Coordinator's
// AddClient has the client hosted on its worker.
func (h *chost) AddClient(*peer.Client, peer.IO) error {
	return errors.New("workers: the job client lives on a worker (Coordinator.AddClient)")
}

// StartAt implements driver.Host.
func (h *chost) StartAt(id core.NodeID, at time.Duration) {
	c := (*Coordinator)(h)
	c.send(Owner(id, c.opts.Workers), Cmd{Op: opStartAt, ID: id, At: at})
}

// StartNow implements driver.Host.
func (h *chost) StartNow(id core.NodeID) {
	c := (*Coordinator)(h)
	c.send(Owner(id, c.opts.Workers), Cmd{Op: opStartNow, ID: id})
}

// StartMember implements driver.Host: the workers start their adopted
// peers when the run starts, at the handover.
func (h *chost) StartMember(_ core.NodeID, _ []core.Timer, at time.Duration) {
	c := (*Coordinator)(h)
	c.mu.Lock()
	c.origin = at
	c.mu.Unlock()
}

// Halt implements driver.Host.
func (h *chost) Halt(id core.NodeID, _ core.NodeID, graceful bool) {
	c := (*Coordinator)(h)
	c.send(Owner(id, c.opts.Workers), Cmd{Op: opHalt, ID: id, Fail: !graceful})
}

// idleIO is the environment of the coordinator's copies of the peers,
// which never run: their workers' copies do.
type idleIO struct{ c *Coordinator }

func (e idleIO) Now() time.Duration {
	if e.c.clock == nil {
		return 0
	}
	return e.c.clock.Now()
}
func (idleIO) Publish(core.NodeID, []byte)                         {}
func (idleIO) SetTimer(core.NodeID, core.TimerKind, time.Duration) {}

// Name is the emulator's: the peers run on emulator drivers.
func (c *Coordinator) Name() string { return "emulator" }

// Adopt hosts the next peer of the overlay built in-process on its
// worker, which builds the same overlay from the seed.
func (c *Coordinator) Adopt(m driver.Member, at time.Duration) error {
	c.adopting, c.adoptAt = true, at
	defer func() { c.adopting = false }()
	return c.Base.Adopt(m, at)
}

// Start starts the run's clock, on every worker from the same wall
// instant, and the join sequence.
func (c *Coordinator) Start() {
	start := time.Now()
	c.endSetup()
	c.log.Info("workers host their peers", "peers", c.Started(), "wall", time.Since(start).Round(time.Millisecond))
	c.mu.Lock()
	origin := c.origin
	c.mu.Unlock()
	epoch := time.Now()
	c.clock.RestartFrom(epoch, origin)
	_, errs := c.all(Cmd{Op: opStart, Epoch: epoch.UnixNano(), Origin: origin}, requestTimeout)
	for i, err := range errs {
		if err != nil {
			c.lose(i, "did not start: "+err.Error())
		}
	}
	c.Base.Start()
	c.mu.Lock()
	early := c.early
	c.early, c.started = nil, true
	c.mu.Unlock()
	for _, e := range early {
		fn := e.fn
		c.timers.At(e.at, func(time.Time) { fn() })
	}
}

// At runs fn at emulated time t on the coordinator's timer goroutine.
func (c *Coordinator) At(t time.Duration, fn func()) {
	c.mu.Lock()
	if !c.started {
		c.early = append(c.early, earlyTimer{t, fn})
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.timers.At(t, func(time.Time) { fn() })
}

// WrapBus gives the coordinator's fault layer a bus no peer publishes on:
// its crashes and restarts act through the driver, its bus_restart stops
// the run's server (outage.go), while the link model and the timed link
// faults run on every worker's bus (Setup.YAML), whose counters
// RemoteFaults sums.
func (c *Coordinator) WrapBus(wrap func(bus.Bus) bus.Bus) { _ = wrap(nullBus{c}) }

// AdvanceTo waits until the scaled clock reaches emulated time t.
func (c *Coordinator) AdvanceTo(ctx context.Context, t time.Duration) error {
	return c.clock.Await(ctx, t)
}

// Now is the run's emulated time.
func (c *Coordinator) Now() time.Duration { return c.clock.Now() }

// Collect gathers every live worker's peer states (the oracle's
// snapshot, by request/reply) and counters. A worker that does not answer
// at all is lost (its peers crash); one whose peers did not answer in
// time fails the collect, as the emulator driver's does.
func (c *Coordinator) Collect(ctx context.Context) ([]peer.State, error) {
	wait := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if wait <= 0 {
		return nil, fmt.Errorf("workers: the oracle asked no peer: its wait had ended at emulated %v", c.clock.Now().Round(time.Second))
	}
	start := time.Now()
	n := c.opts.Workers
	reps, errs, states := make([]Report, n), make([]error, n), make([][]peer.State, n)
	var wg sync.WaitGroup
	for i := range n {
		if c.alive(i) {
			wg.Go(func() { reps[i], states[i], errs[i] = c.collectFrom(i, wait) })
		}
	}
	wg.Wait()
	var out []peer.State
	var slow error
	c.awaitJobs(reps)
	for i, r := range reps {
		err := errs[i]
		switch {
		case errors.Is(err, errChunks):
			slow = err // the worker answered; its states did not all arrive
		case err != nil && r.Err == "" && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, errBusDown):
			c.lose(i, "did not answer the oracle ("+err.Error()+")")
			continue
		case err != nil && r.Err == "":
			if !c.alive(i) {
				continue
			}
			slow = err
			continue
		case err != nil:
			slow = err
		}
		c.absorb(i, r)
		for _, s := range states[i] {
			out = append(out, c.Observed(s))
		}
	}
	slices.SortFunc(out, func(a, b peer.State) int { return int(a.Snapshot.ID) - int(b.Snapshot.ID) })
	c.log.Debug("collect", "states", len(out), "wall", time.Since(start).Round(time.Microsecond))
	return out, slow
}

// errChunks marks a collect whose answer came but not all its chunks.
var errChunks = errors.New("the states did not all arrive")

// collectFrom asks worker i for its peers' states (the oracle waits at
// most wait for them): the answer carries the counters, the states come
// in chunks beside it (chunks.go).
func (c *Coordinator) collectFrom(i int, wait time.Duration) (Report, []peer.State, error) {
	set := newChunkSet()
	subj := nats.NewInbox()
	sub, err := c.nc.Subscribe(subj, func(m *nats.Msg) {
		set.add(m.Data)
		c.chunks.Add(1)
	})
	if err != nil {
		return Report{}, nil, fmt.Errorf("worker %d: collect: %w", i, err)
	}
	defer sub.Unsubscribe()
	// The chunks of a large population must not be dropped as a slow
	// consumer's while they are decoded.
	_ = sub.SetPendingLimits(-1, -1)
	r, err := c.request(i, Cmd{Op: opCollect, Wait: wait, Chunks: subj, ChunkBytes: c.opts.ChunkBytes, JobsNext: c.merge.next(i)}, wait+c.opts.Deadline)
	if err != nil && r.Err == "" {
		return r, nil, err
	}
	states, cerr := set.wait(r.Chunks, chunkWait)
	if cerr != nil {
		return r, nil, fmt.Errorf("workers: collect from worker %d: %w: %w", i, errChunks, cerr)
	}
	return r, states, err
}

// CollectChunks is how many chunks of peer states the coordinator has
// received (every collect of every worker).
func (c *Coordinator) CollectChunks() uint64 { return c.chunks.Load() }

// absorb adds what worker i counted since its last report to the run's
// counters. A report no worker filled (a worker already dead, skipped by
// the collect or the close) changes nothing: its counters stay as last
// reported.
func (c *Coordinator) absorb(i int, r Report) {
	if r.Traffic.Count == nil {
		return
	}
	c.mu.Lock()
	w := c.workers[i]
	w.note(r.Cost)
	prev := w.last.Traffic
	if !w.seen {
		prev = metrics.TrafficSnapshot{}
	}
	w.last, w.seen = r, true
	c.mu.Unlock()
	c.m.Traffic.Add(r.Traffic.Sub(prev))
	c.m.Lag.Add(r.Lag)
}

// BusStats sums the workers' bus counters (as last reported).
func (c *Coordinator) BusStats() bus.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s bus.Stats
	for _, w := range c.workers {
		b := w.last.Bus
		s.Published += b.Published
		s.Delivered += b.Delivered
		s.Unroutable += b.Unroutable
		s.Dropped += b.Dropped
		s.PublishErrs += b.PublishErrs
		s.Refused += b.Refused
		s.Lost += b.Lost
		s.Outages += b.Outages
		s.Reconnects += b.Reconnects
		s.Discarded += b.Discarded
		s.Transport += b.Transport
	}
	s.Outages += c.outages
	s.Lost += c.transitLost
	return s
}

// RemoteFaults sums the workers' fault-layer counters (as last
// reported): the run's link model runs on the workers.
func (c *Coordinator) RemoteFaults() (link.ChainStats, slow.Stats, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var l link.ChainStats
	var s slow.Stats
	var o uint64
	for _, w := range c.workers {
		r := w.last
		l.DroppedPartition += r.Link.DroppedPartition
		l.DroppedLoss += r.Link.DroppedLoss
		l.Duplicated += r.Link.Duplicated
		l.Delayed += r.Link.Delayed
		l.DelayPending += r.Link.DelayPending
		s.Served += r.Slow.Served
		s.Wait += r.Slow.Wait
		s.MaxWait = max(s.MaxWait, r.Slow.MaxWait)
		s.Pending += r.Slow.Pending
		o += r.Outage
	}
	return l, s, o
}

// Backlog sums the workers' mailbox backlogs (as last reported).
func (c *Coordinator) Backlog() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, w := range c.workers {
		n += w.last.Backlog
	}
	return n
}

// Panics sums the messages whose handling panicked on the workers.
func (c *Coordinator) Panics() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, w := range c.workers {
		n += w.last.Panics
	}
	return n
}

// Pressure is the workers' since the previous call, from their
// heartbeats, for the overload guard: the worst timer lags of any worker,
// and the sums of their timers, backlogs and publishes.
func (c *Coordinator) Pressure() live.Pressure {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p live.Pressure
	for _, w := range c.workers {
		q := w.window
		w.window.LagP99, w.window.TimerServiceLag, w.window.Timers = 0, 0, 0
		if w.dead {
			continue
		}
		p.LagP99, p.TimerServiceLag = max(p.LagP99, q.LagP99), max(p.TimerServiceLag, q.TimerServiceLag)
		p.Timers += q.Timers
		p.Backlog += q.Backlog
		for t, n := range q.Waiting {
			if p.Waiting == nil {
				p.Waiting = make(map[string]int64)
			}
			p.Waiting[t] += n
		}
		p.TimersQueued += q.TimersQueued
		p.TimersOverdue += q.TimersOverdue
		p.Published += q.Published
	}
	return p
}

// Freeze stops every worker's peers where they stand.
func (c *Coordinator) Freeze() {
	for i := range c.opts.Workers {
		c.send(i, Cmd{Op: opFreeze})
	}
}

// Settlement sums the workers' (read after Close).
func (c *Coordinator) Settlement() live.Settlement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.final
}

// Member, Alive, ... come from driver.Base.

// AddClient has the run's job client hosted on its worker
// (ClientWorker), an actor on that worker's driver as in a one-process
// run: its messages travel on the run's bus and count in that worker's
// books. It submits through the members the coordinator draws
// (onInject), and reports to the ledger as the peers do (jobMerge).
func (c *Coordinator) AddClient(cfg jobs.ClientConfig) error {
	if c.merge == nil {
		return errors.New("workers: a job client without the run's job ledger (Options.Jobs)")
	}
	c.mu.Lock()
	c.inject = c.Base.Injector()
	c.mu.Unlock()
	_, err := c.request(ClientWorker(c.opts.Workers), Cmd{Op: opClient, Client: cfg}, requestTimeout)
	return err
}

// Submit hands a job to the client on its worker.
func (c *Coordinator) Submit(spec *wire.JobSpec) {
	c.send(ClientWorker(c.opts.Workers), Cmd{Op: opSubmit, Job: jobOf(spec)})
}

// ForwardTriggered has every worker apply triggered fault entry j at
// emulated time at to its own fault layer (timeline.Forwarder): the link
// model runs on the workers.
func (c *Coordinator) ForwardTriggered(j int, at time.Duration) {
	for i := range c.opts.Workers {
		c.send(i, Cmd{Op: opTrigger, Index: j, At: at})
	}
}

// Close ends the run on every worker in two steps — all quiesce (no peer
// publishes any more), then all close their buses — so that a message
// one worker's peer sent to another's is counted at the end wherever it
// is; it sums their final counters and stops the server.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	down := c.back != nil
	c.mu.Unlock()
	c.timers.Stop()
	if down {
		// The run ends during a bus outage (its end timer stopped with
		// the others): the server comes back for the end's requests.
		if err := c.startServer(); err != nil && !errors.Is(err, bus.ErrServerRunning) {
			c.log.Error("bus_restart: the server could not restart for the end of the run", "err", err)
		}
	}
	var first error
	// Each worker sends again the batches of job events the coordinator
	// lacks (jobOutbox) before its last.
	_, errs := c.each(func(i int) Cmd { return Cmd{Op: opQuiesce, JobsNext: c.merge.next(i)} }, 2*time.Minute)
	for _, err := range errs {
		first = cmpErr(first, err)
	}
	reps, errs := c.all(Cmd{Op: opClose}, 2*time.Minute)
	// Every worker has closed (or is lost): the ledger gets the rest
	// before the oracle's last tally.
	c.awaitJobs(reps)
	for _, gap := range c.merge.flush() {
		c.log.Error("job events lost: the ledger goes without them", "detail", gap)
	}
	c.mu.Lock()
	c.closed = true // no worker is lost from here on
	c.mu.Unlock()
	close(c.stop)
	c.wg.Wait()
	final := make([]bus.Stats, 0, len(reps))
	for i, r := range reps {
		if errs[i] == nil {
			final = append(final, r.Bus)
		}
	}
	if _, k := c.down(); k > 0 {
		if lost, ok := lostInTransit(final); ok && len(final) == c.opts.Workers {
			c.mu.Lock()
			c.transitLost = lost
			c.mu.Unlock()
		} else {
			c.log.Error("bus_restart: the messages the outages destroyed on the server are not known (a worker's final counters are missing or do not add up)", "workers_closed", len(final))
		}
	}
	for i, r := range reps {
		if errs[i] != nil && r.Traffic.Count == nil {
			first = cmpErr(first, errs[i])
			continue
		}
		first = cmpErr(first, errs[i])
		c.absorb(i, r)
		c.mu.Lock()
		s := r.Settlement
		c.final.UnroutableInRun += s.UnroutableInRun
		c.final.UnroutableAtEnd += s.UnroutableAtEnd
		c.final.DiscardedInRun += s.DiscardedInRun
		c.final.DiscardedAtEnd += s.DiscardedAtEnd
		c.final.Mailbox += s.Mailbox
		c.mu.Unlock()
	}
	c.shutdown()
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// shutdown closes the control connection and the server.
func (c *Coordinator) shutdown() {
	if c.nc != nil {
		c.nc.Close()
	}
	c.mu.Lock()
	srv := c.srv
	c.mu.Unlock()
	srv.Shutdown()
	srv.WaitForShutdown()
}

// nullBus is the bus the coordinator's fault layer wraps: no peer of the
// coordinator publishes.
type nullBus struct{ c *Coordinator }

func (nullBus) Publish(bus.Address, []byte) error       { return nil }
func (nullBus) Register(bus.Address, bus.Handler) error { return nil }
func (nullBus) Unregister(bus.Address)                  {}
func (b nullBus) Stats() bus.Stats                      { return b.c.BusStats() }
func (nullBus) Close() error                            { return nil }
