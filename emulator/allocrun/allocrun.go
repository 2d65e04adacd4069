// Package allocrun hosts 004's resource-driven allocation on the testbed:
// every machine of the grid is a peer (actors/allocation.Node) that runs
// its jobs and reports their ends and its owner-load changes, the
// allocator is one more peer (actors/allocation.Allocator, centralized as
// in 004 §2), and every assignment, relocation order and relocated job's
// state is a message on the bus. The deterministic driver hosts the
// endpoints on sim.World (virtual time, in-memory bus, seeded event order);
// the emulator driver on NATS at scaled wall time, each endpoint with a
// mailbox of its own.
package allocrun

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/sim"
)

// Config is one allocation run.
type Config struct {
	Speeds               []alloc.Vector
	Jobs                 []alloc.Spec
	Spikes               []alloc.Spike
	Allocator, Relocator alloc.Scheme
	// Social is the reading of the SOCIAL score (allocation.social_score).
	Social   alloc.Reading
	Theta    float64
	MaxMoves int
	// Limit is the emulated instant the run gives up at, jobs unfinished.
	Limit time.Duration
	// Sample is the interval of the jobs-per-machine series (0: none).
	Sample time.Duration
	// CrashAt, if positive, crashes the allocator at that instant: it is
	// off the bus for DownFor, loses its view and rebuilds it from the
	// machines when it restarts; jobs arriving meanwhile wait at their
	// source. Under Neighbors there is no allocator: the machine holding
	// the most jobs at CrashAt crashes instead (crashMachine).
	CrashAt, DownFor time.Duration
	// Relocated and Completed, if set, are told of every relocation the
	// allocator orders and every job's completion instant, in the
	// allocator's context (metrics).
	Relocated func(n int)
	Completed func(at time.Duration)

	// Placement is where jobs are placed (allocation.placement): by the
	// central allocator, or under Neighbors by every machine among
	// itself and its CAN neighbours (neighbors.go), which tell each other
	// their state every GossipPeriod (0: DefaultGossipPeriod). Seed draws
	// the machines' points in the CAN and the machine each job arrives
	// at; Neighbors, if set, replaces the CAN's neighbour lists (tests).
	Placement    alloc.Placement
	GossipPeriod time.Duration
	Seed         uint64
	Neighbors    [][]int
	// Sent, if set, is told of every message sent, its kind and encoded
	// size, in the sender's context (metrics).
	Sent func(k alloc.Kind, bytes int)
	// Record, if set, sees every event of a deterministic run's world
	// (RunSim; the determinism check, sim.Recorder).
	Record *sim.Recorder
	// SocialGain is the SOCIAL relocator's normalization
	// (allocation.social_gain).
	SocialGain alloc.SocialGain
	// GossipRefresh is, under Neighbors, k of alloc.Peer.GossipRefresh:
	// an unchanged machine gossips every k-th period (0:
	// alloc.DefaultGossipRefresh; 1: every period).
	GossipRefresh int
	// padSkipped (tests) makes the deterministic driver draw, for every
	// gossip message a silent machine did not send, the random tie-break
	// a sent one would have drawn (an empty event in its place), so that
	// a run with and one without the silence see the same event order:
	// what differs between them is then what the gossip said.
	padSkipped bool
}

// Host is where the endpoints live: a bus, and a way to run a function at
// an emulated instant in an endpoint's own context.
type Host interface {
	Publish(to bus.Address, data []byte) error
	Register(addr bus.Address, h bus.Handler) error
	Unregister(addr bus.Address)
	// At runs fn at emulated instant t in the context of endpoint addr.
	At(addr bus.Address, t time.Duration, fn func())
	Now() time.Duration
	Stats() bus.Stats
}

// Result is what an allocation run measured.
type Result struct {
	Jobs, Submitted, Completed int
	// Makespan is the completion instant of the job that finished last
	// (004 §1), in emulated seconds.
	Makespan float64
	// Relocations counts the moves the allocator ordered; Migrated the
	// jobs' states that arrived at their new machine.
	Relocations, Migrated int
	// OffLoaded counts the relocations out of a machine whose owner load
	// was above 0; SpikeShare is the share of the allocated jobs that were
	// on the machine whose owner load rose first, when it rose (−1: no
	// owner load rose), SpikeJobs their number. 004 Fig 2.
	OffLoaded, SpikeJobs int
	SpikeShare           float64
	Messages             uint64
	DecodeErrors         int
	// Crashed is true when the allocator (under Neighbors: a machine)
	// crashed and restarted; Unroutable counts the messages that found no
	// endpoint (sent to the allocator, or the machine, while it was
	// down).
	Crashed    bool
	Unroutable uint64
	// Under Neighbors: CrashMachine is the machine that crashed (−1:
	// none), CrashJobs the jobs it held, stopped while it was down;
	// Replaced counts the jobs whose sender placed them again because
	// the machine was down (alloc.Peer.Refused), JobsLost the jobs sent
	// to it that reached it no more (on their way when it crashed): they
	// never complete.
	CrashMachine, CrashJobs, Replaced, JobsLost int
	// GossipSkipped counts the gossip periods a machine stayed silent,
	// its load and jobs unchanged (alloc.Peer.Gossip).
	GossipSkipped int
	// Series is the jobs on each machine at every Sample instant (004
	// Fig 2): Series[k][i] for machine i at (k+1)·Sample.
	Series [][]int
	// ByKind counts the messages sent and their encoded bytes, by kind
	// (indexed by alloc.Kind); they add up to Messages.
	ByKind [alloc.NumKinds]KindCount
	// NeighborsMean is the mean number of CAN neighbours of a machine
	// under allocation.placement neighbors (0 under central).
	NeighborsMean float64
	// Bus is the bus's counters when the run ended (the emulator driver's
	// after its bus closed), InFlight the messages the deterministic
	// driver's event queue still held: the run's message books.
	Bus      bus.Stats
	InFlight uint64
}

// KindCount is the messages of one kind sent and their encoded bytes.
type KindCount struct{ Count, Bytes uint64 }

// run is one run's endpoints; each is touched only from its own context.
type run struct {
	cfg      Config
	h        Host
	nodes    []*alloc.Node
	a        *alloc.Allocator
	decodeEr atomic.Int64 // bytes no endpoint could decode
	done     chan struct{}
	finished bool
	// completed mirrors the allocator's count for the other contexts.
	completed atomic.Int64
	// down: the allocator has crashed; held are the jobs that arrived
	// meanwhile (allocator context).
	down    bool
	crashed bool
	held    []alloc.Spec
	// sent counts the messages and bytes by kind (any context).
	sent [alloc.NumKinds]struct{ n, b atomic.Uint64 }
	// Under allocation.placement neighbors (neighbors.go): the peers,
	// and the completions and relocations of each already accounted for
	// (its own context).
	peers           []*alloc.Peer
	seen, moves, pl []int
	// handlers are the machines' bus handlers (a restarted machine
	// registers again); placed counts the jobs placed, lost the jobs
	// lost with a crashed machine, closeDone closes done once.
	handlers  []bus.Handler
	placed    atomic.Int64
	lost      atomic.Int64
	closeDone sync.Once
	// The crash under Neighbors (crash.go): the address of the machine
	// down (0: none), the job messages on their way to a machine (job →
	// address; only when a crash is configured), and what the crash did.
	downAddr atomic.Uint64
	mu       sync.Mutex
	inflight map[uint64]uint64
	crash    machineCrash
	// The first owner-load rise under Neighbors (the spike share): the
	// jobs on that machine and the jobs placed and not completed then.
	rose                  atomic.Bool
	riseMachine, riseGrid int
}

// Rand is the job-set stream of a run seed.
func Rand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x004a110c)) }

// start registers the endpoints on h and schedules the arrivals, the
// owner-load spikes and the allocator's crash; r.done is closed once every
// job has completed.
func start(cfg Config, h Host) (*run, error) {
	if cfg.Placement == alloc.Neighbors {
		return startNeighbors(cfg, h)
	}
	r := &run{cfg: cfg, h: h, a: alloc.NewAllocator(cfg.Allocator, cfg.Relocator, cfg.Theta, cfg.MaxMoves, cfg.Speeds), done: make(chan struct{})}
	r.a.Social = cfg.Social
	r.a.SocialGain = cfg.SocialGain
	if err := h.Register(bus.Address(alloc.AllocatorAddr), r.onAllocator); err != nil {
		return nil, err
	}
	for i, s := range cfg.Speeds {
		n := alloc.NewNode(i, s)
		r.nodes = append(r.nodes, n)
		if err := h.Register(bus.Address(alloc.MachineAddr(i)), func(_ bus.Address, data []byte) { r.onMachine(n, data) }); err != nil {
			return nil, err
		}
	}
	// Jobs arriving at one instant are allocated in order, in one step.
	for i := 0; i < len(cfg.Jobs); {
		k := i
		for k < len(cfg.Jobs) && cfg.Jobs[k].Arrival == cfg.Jobs[i].Arrival {
			k++
		}
		burst := cfg.Jobs[i:k]
		h.At(bus.Address(alloc.AllocatorAddr), burst[0].Arrival, func() { r.submit(burst) })
		i = k
	}
	if cfg.CrashAt > 0 {
		addr := bus.Address(alloc.AllocatorAddr)
		h.At(addr, cfg.CrashAt, func() { r.down, r.crashed = true, true; h.Unregister(addr) })
		h.At(addr, cfg.CrashAt+cfg.DownFor, func() {
			r.down = false
			if err := h.Register(addr, r.onAllocator); err != nil {
				return
			}
			r.a.Restart(h.Now())
			held := r.held
			r.held = nil
			r.submit(held)
		})
	}
	for _, sp := range cfg.Spikes {
		if sp.Machine >= len(r.nodes) {
			return nil, fmt.Errorf("owner-load spike on machine %d of a grid of %d", sp.Machine, len(r.nodes))
		}
		n := r.nodes[sp.Machine]
		h.At(bus.Address(alloc.MachineAddr(sp.Machine)), sp.At, func() { n.SetLoad(h.Now(), sp.Load); r.flushNode(n) })
	}
	return r, nil
}

func (r *run) submit(jobs []alloc.Spec) {
	if r.down {
		r.held = append(r.held, jobs...)
		return
	}
	now := r.h.Now()
	for _, s := range jobs {
		r.a.Submit(now, alloc.Job{ID: s.ID, Comp: alloc.Compositions[s.Type]}, s.Length)
	}
	r.flushAllocator()
}

func (r *run) onAllocator(_ bus.Address, data []byte) {
	if r.down {
		return // handed to the mailbox before the crash: lost with it
	}
	m, err := alloc.Decode(data)
	if err != nil {
		r.decodeEr.Add(1)
		return
	}
	moved, done := r.a.Relocations, r.a.Completed
	r.a.Step(r.h.Now(), m)
	if f := r.cfg.Relocated; f != nil && r.a.Relocations > moved {
		f(r.a.Relocations - moved)
	}
	if f := r.cfg.Completed; f != nil && r.a.Completed > done {
		f(m.At)
	}
	r.flushAllocator()
	r.completed.Store(int64(r.a.Completed))
	if !r.finished && r.a.Completed == len(r.cfg.Jobs) {
		r.finished = true
		close(r.done)
	}
}

func (r *run) onMachine(n *alloc.Node, data []byte) {
	m, err := alloc.Decode(data)
	if err != nil {
		r.decodeEr.Add(1)
		return
	}
	n.Step(r.h.Now(), m)
	r.flushNode(n)
}

func (r *run) flushAllocator() {
	for _, o := range r.a.Ready() {
		r.publish(o)
	}
}

// publish sends o, counting it by kind.
func (r *run) publish(o alloc.Out) {
	b := o.Msg.Encode(nil)
	if k := int(o.Msg.Kind); k < alloc.NumKinds {
		r.sent[k].n.Add(1)
		r.sent[k].b.Add(uint64(len(b)))
	}
	if f := r.cfg.Sent; f != nil {
		f(o.Msg.Kind, len(b))
	}
	r.h.Publish(bus.Address(o.To), b)
}

func (r *run) flushNode(n *alloc.Node) {
	out, at, ok := n.Ready()
	for _, o := range out {
		r.publish(o)
	}
	if ok {
		r.h.At(bus.Address(alloc.MachineAddr(n.Index)), at, func() { n.Tick(r.h.Now()); r.flushNode(n) })
	}
}

// result reads the run's figures; call it once the endpoints are quiet.
func (r *run) result(series [][]int) Result {
	var res Result
	if r.a == nil {
		res = r.neighborsResult(series)
	} else {
		res = r.centralResult(series)
	}
	for k := range res.ByKind {
		res.ByKind[k] = KindCount{Count: r.sent[k].n.Load(), Bytes: r.sent[k].b.Load()}
	}
	res.Bus = r.h.Stats()
	if r.a != nil {
		res.CrashMachine = -1
	}
	if q, ok := r.h.(interface{ InFlight() uint64 }); ok {
		res.InFlight = q.InFlight()
	}
	return res
}

// centralResult is result under the central allocator.
func (r *run) centralResult(series [][]int) Result {
	res := Result{Jobs: len(r.cfg.Jobs), Submitted: r.a.Submitted, Completed: r.a.Completed,
		Makespan: r.a.Makespan.Seconds(), Relocations: r.a.Relocations, DecodeErrors: int(r.decodeEr.Load()),
		Messages: r.h.Stats().Published, Series: series, Crashed: r.crashed, Unroutable: r.h.Stats().Unroutable}
	for _, n := range r.nodes {
		res.Migrated += n.Received
	}
	res.OffLoaded, res.SpikeShare = r.a.OffLoaded, -1
	if at := r.a.AtRise; at.Rose && at.Grid > 0 {
		res.SpikeShare, res.SpikeJobs = float64(at.Machine)/float64(at.Grid), at.Machine
	}
	return res
}

// sample schedules the jobs-per-machine series: at every Sample instant
// each machine writes its count in its own context, until every job has
// completed.
func (r *run) sample(series *[][]int, mu *sync.Mutex) {
	if r.cfg.Sample <= 0 {
		return
	}
	var at func(k int)
	at = func(k int) {
		t := time.Duration(k+1) * r.cfg.Sample
		if t > r.cfg.Limit {
			return
		}
		mu.Lock()
		*series = append(*series, make([]int, len(r.nodes)))
		mu.Unlock()
		for i, n := range r.nodes {
			r.h.At(bus.Address(alloc.MachineAddr(i)), t, func() {
				mu.Lock()
				(*series)[k][i] = len(n.Exec.Jobs)
				mu.Unlock()
				if i == 0 && !r.over() {
					at(k + 1)
				}
			})
		}
	}
	at(0)
}

// over reports whether every job has completed or was lost (under
// Neighbors, with a crashed machine).
func (r *run) over() bool {
	return int(r.completed.Load()+r.lost.Load()) >= len(r.cfg.Jobs)
}

// ErrIncomplete is returned (with the result) when the limit came before
// every job completed.
var ErrIncomplete = errors.New("allocation: not every job completed by the limit")

// checkDone reports the incomplete run.
func (r *run) checkDone(res Result) (Result, error) {
	if res.JobsLost > 0 {
		return res, fmt.Errorf("%w: %d of %d, %d lost with machine %d's crash", ErrIncomplete, res.Completed, res.Jobs, res.JobsLost, res.CrashMachine)
	}
	if res.Completed < res.Jobs {
		return res, fmt.Errorf("%w: %d of %d", ErrIncomplete, res.Completed, res.Jobs)
	}
	return res, nil
}
