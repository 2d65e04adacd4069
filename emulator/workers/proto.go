// Package workers splits one run over several gridbed processes: a
// coordinator (the process that runs the scenario: its timeline, churn,
// faults, oracle and results) and N workers, each hosting a shard of the
// peers as actors on its own emulator driver (emulator/live). The
// coordinator serves a NATS server; every worker connects to it as a
// client, and the peers' messages travel on the run's subjects through
// that server, each worker subscribing only to the shards of its own
// peers (bus.NATSOptions.Subscribe). The coordinator drives the workers by
// request/reply on control subjects: host (the setup's peers, in
// batches), spawn, start, halt, collect (the oracle's snapshots, in
// chunks: chunks.go), quiesce, close. Workers report joins and ask for
// bootstrap contacts the same way, and heartbeat: a worker silent past
// the deadline is declared dead, its peers crash, and the run's outcome
// says so. In a run with a workload one worker hosts the job client, and
// every worker sends what its peers tell the oracle in batches, which the
// coordinator merges into its job ledger in emulated-time order (jobs.go).
// docs/WORKERS.md tells why clients of one server and not a cluster of
// servers.
package workers

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/faults/slow"
	"github.com/gridbed/gridbed/metrics"
)

// Control subjects. A worker says hello on helloSubject; everything else
// carries the run id, as the peers' subjects do.
const helloSubject = "gbw.hello"

func cmdSubject(run string, worker int) string { return fmt.Sprintf("gbw.%s.w.%d", run, worker) }
func bootSubject(run string) string            { return "gbw." + run + ".boot" }
func joinedSubject(run string) string          { return "gbw." + run + ".joined" }
func beatSubject(run string) string            { return "gbw." + run + ".beat" }
func readySubject(run string) string           { return "gbw." + run + ".ready" }
func jobsSubject(run string) string            { return "gbw." + run + ".jobs" }
func injectSubject(run string) string          { return "gbw." + run + ".inject" }

// Timing of the control protocol.
const (
	// BeatInterval is how often a worker tells the coordinator it lives.
	BeatInterval = 200 * time.Millisecond
	// DefaultDeadline is how long a worker whose control connection has
	// closed may stay silent before the coordinator declares it dead.
	DefaultDeadline = 3 * time.Second
	// DefaultHungDeadline is how long a worker still connected may stay
	// silent: a process starved of CPU (an overloaded machine, the race
	// detector) keeps its connection but sends its beats late, so
	// silence alone is weak evidence of death.
	DefaultHungDeadline = 30 * time.Second
	// requestTimeout bounds a control request that does not wait for the
	// peers (spawn, start, halt...).
	requestTimeout = 10 * time.Second
)

// Hello is what a worker says when it joins.
type Hello struct {
	Host string
	PID  int
	// CID is the server's id of its control connection: while that
	// connection is open the worker's process lives.
	CID uint64
	// Metrics is the address its /metrics listens on (in Ready).
	Metrics string
}

// Setup is what the coordinator tells a worker: its place in the run
// and everything its driver needs.
type Setup struct {
	Err string // the coordinator refused the worker
	Run string
	// Info labels the worker's series as the coordinator's: one run id,
	// so the dashboards sum the run over its processes.
	Info         metrics.RunInfo
	Index, Count int
	Scenario     string
	Seed         uint64
	TimeScale    float64
	Overlay      overlay.Config
	Connections  int
	Batched      bool
	Eager        bool
	Clock        driver.ClockSpread
	// BootPoints are the initial population's points when the overlay is
	// built in-process (peers.bootstrap: direct): every worker builds the
	// same overlay from the seed and adopts its own peers from it.
	BootPoints []can.Point
	JoinWindow time.Duration
	// Scenario's YAML: the worker applies its link section and timed link
	// faults to what its peers send (faults/timeline).
	YAML []byte
}

// Owner is the worker (0-based, of count) hosting peer id: peers are
// sharded by id, round robin.
func Owner(id core.NodeID, count int) int { return int(uint64(id-1) % uint64(count)) }

// Connections is the number of bus connections (shards) of a run over
// count workers with perWorker subscribed connections each: a multiple of
// count, so that shard k (address a % Connections) holds only addresses
// of one worker (OwnsShard).
func Connections(perWorker, count int) int { return max(perWorker, 1) * count }

// OwnsShard reports whether bus shard k holds the addresses of worker
// index: address a travels on shard a % conns, conns a multiple of
// count, and worker (a-1) % count hosts it.
func OwnsShard(k, index, count int) bool { return (k+count-1)%count == index }

// Ops of Cmd.
const (
	opSpawn    = "spawn"    // host peer ID at Point
	opAdopt    = "adopt"    // host peer ID from the overlay built in-process, starting at At
	opStartAt  = "start-at" // peer ID begins joining at At
	opStartNow = "start-now"
	opHalt     = "halt" // peer ID departs (crashes when Fail)
	opStart    = "start"
	opCollect  = "collect"
	opFreeze   = "freeze"
	opQuiesce  = "quiesce"
	opClose    = "close"
	opClient   = "client"  // host the run's job client (Client)
	opSubmit   = "submit"  // the client submits Job
	opTrigger  = "trigger" // triggered fault entry Index fires at At
	opResume   = "resume"  // the coordinator's server is back after outage Index (bus_restart)
	opHost     = "host"    // host Peers, in order (spawned or adopted): the run's setup in batches
)

// hostBatch bounds the peers of one host command: a spawn carries the
// peer's point, a few dozen bytes, so a batch stays well under a
// megabyte.
const hostBatch = 4096

// hostTimeout bounds a host command: its first adopt builds the overlay
// in-process on the worker.
const hostTimeout = 5 * time.Minute

// PeerSpec is one peer of a host command: spawned at Point, or adopted
// (Adopt) from the overlay built in-process, starting at At.
type PeerSpec struct {
	ID    core.NodeID
	Point can.Point
	At    time.Duration
	Adopt bool
}

// ClientWorker is the worker hosting the run's job client: the one whose
// bus shards hold peer.ClientAddress (OwnsShard), so that the client's
// messages arrive where it lives.
func ClientWorker(count int) int { return Owner(peer.ClientAddress, count) }

// Cmd is one command of the coordinator to a worker.
type Cmd struct {
	Op    string
	ID    core.NodeID
	Point can.Point
	At    time.Duration
	Fail  bool
	// Epoch is the wall instant (Unix ns) of emulated time Origin (start).
	Epoch  int64
	Origin time.Duration
	// Wait bounds a collect; its states go in chunks of at most
	// ChunkBytes to the subject Chunks (chunks.go).
	Wait       time.Duration
	Chunks     string
	ChunkBytes int
	// Client configures the job client (client); Job is a submission
	// (submit).
	Client jobs.ClientConfig
	Job    *Job
	// Index is a triggered fault entry's, among the triggered entries
	// (trigger), or an outage's number (resume).
	Index int
	// Peers are a host command's.
	Peers []PeerSpec
	// JobsNext is the Seq of the first batch of the worker's job events
	// the coordinator lacks (resume, quiesce, collect; 0: none named):
	// the worker drops the batches before it, and with resume and
	// quiesce sends the others again (jobOutbox).
	JobsNext uint64
}

// Job is a submission's wire.JobSpec, as the client receives it from the
// run's timeline (jobRun.start sets these fields).
type Job struct {
	ID   uint64
	Req  []uint32
	Work int64
	CID  []uint64
}

func jobOf(s *wire.JobSpec) *Job {
	return &Job{ID: s.Id, Req: s.Req, Work: s.Work, CID: s.Cid}
}

func (j *Job) spec() *wire.JobSpec {
	return &wire.JobSpec{Id: j.ID, Req: j.Req, Work: j.Work, Cid: j.CID}
}

// Report is a worker's counters, with its answer to collect, quiesce and
// close.
type Report struct {
	Err string
	// Chunks is how many chunks of peer states the worker published
	// before its answer to collect.
	Chunks     int
	Traffic    metrics.TrafficSnapshot
	Lag        metrics.QuantilesState
	Bus        bus.Stats
	Backlog    int64
	Panics     int64
	Settlement live.Settlement
	// The worker's fault layer: its link model, slow peers and outage
	// switch.
	Link   link.ChainStats
	Slow   slow.Stats
	Outage uint64
	// JobsSeq is the Seq of the batch of job events the worker published
	// just before this answer (a run with a workload; 0 without): the
	// coordinator waits for it before the oracle reads the ledger.
	JobsSeq uint64
	// CID is the server's id of the worker's control connection, with
	// its answer to resume (a restarted server gives new ids).
	CID uint64
	// Cost is what the worker's process has cost so far (with its
	// answers to collect and close; the close's is its last word).
	Cost Cost
}

// Cost is what a worker's process has cost the run so far, with each
// heartbeat and its answers to collect and close: its CPU time (user +
// system, getrusage) since its start command, the CPUs it may use
// (GOMAXPROCS) and the peers it hosted (spawned or adopted, churn joins
// included). Cores is 0 in a report that carries no cost.
type Cost struct {
	CPU   time.Duration
	Cores int
	Peers int
}

// JobBatch is what a worker's peers and job client told the oracle's
// sink (peer.JobSink) since its previous batch, in the order they told
// it. A worker publishes one on the jobs subject with every heartbeat and
// before its answers to collect, quiesce and close (which name it,
// Report.JobsSeq); the coordinator puts a worker's batches back in Seq
// order and merges the workers' items by Key before its ledger sees them
// (jobMerge).
type JobBatch struct {
	Index int
	Seq   uint64 // 1, 2, … per worker
	// Through is the worker's emulated time when it cut the batch: every
	// item it reports later has a Key at or after it.
	Through time.Duration
	// Final: the worker closed; no batch follows.
	Final bool
	Items []JobItem
}

// Kinds of JobItem: the peer.JobSink (and peer.CESink) call it carries.
const (
	itemEvent uint8 = iota + 1
	itemQueueLen
	itemResidual
	itemNodeJoined
	itemCELoad
)

// JobItem is one call of a worker's job sink.
type JobItem struct {
	// Key orders the items of a worker: the emulated time of the call,
	// raised to the previous item's (never decreasing).
	Key  time.Duration
	Kind uint8
	// At and Event are a job event's (itemEvent).
	At    time.Duration
	Event jobs.Event
	// Node and the others are the global view's updates.
	Node  core.NodeID
	N     int // queue length (itemQueueLen), cores (itemNodeJoined)
	Vec   jobs.Vec
	Point can.Point
	Speed float64
	Loads []hetce.Load
}

// Ready is a worker's word that its driver listens for commands.
type Ready struct {
	Index   int
	Metrics string // where it serves /metrics ("" without)
}

// Beat is a worker's heartbeat.
type Beat struct {
	Index int
	At    time.Duration // its emulated time
	// Pressure is its emulator driver's since its previous beat, for the
	// coordinator's overload guard.
	Pressure live.Pressure
	// CID is the server's id of its control connection (it changes when
	// the connection reconnects after a bus_restart).
	CID uint64
	// Cost is what its process has cost so far.
	Cost Cost
}

// Joined is a worker's report that a peer became a member.
type Joined struct {
	ID core.NodeID
	At time.Duration
}

func encode(v any) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		panic(fmt.Sprintf("workers: encode %T: %v", v, err)) // only our own types: a bug
	}
	return b.Bytes()
}

func decode(data []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return fmt.Errorf("workers: decode %T: %w", v, err)
	}
	return nil
}
