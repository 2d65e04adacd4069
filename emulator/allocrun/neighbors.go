package allocrun

import (
	"fmt"
	"math/rand/v2"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/emulator/bus"
)

// DefaultGossipPeriod is allocation.gossip_period's default: the overlay's
// default heartbeat period (overlay.heartbeat.period), the cadence at
// which gridbed's CAN peers already tell their neighbours about
// themselves, and shorter than the 25 s between job set 2's bursts, so
// that each burst is placed on a view that has heard of the one before.
const DefaultGossipPeriod = 10 * time.Second

// LayoutPoints are the machines' points in the CAN of
// allocation.placement neighbors (alloc.Layout): uniform in the
// alloc.LayoutDims-dimensional space, drawn from the run seed.
func LayoutPoints(seed uint64, machines int) []can.Point {
	rng := rand.New(rand.NewPCG(seed, 0xca11a7))
	pts := make([]can.Point, machines)
	for i := range pts {
		pts[i] = make(can.Point, alloc.LayoutDims)
		for d := range pts[i] {
			pts[i][d] = rng.Uint32()
		}
	}
	return pts
}

// Sources are the machines the jobs arrive at under allocation.placement
// neighbors (004's jobs arrive at its one allocator): each job's drawn
// uniformly among the machines from the run seed, in job order.
func Sources(seed uint64, jobs, machines int) []int {
	rng := rand.New(rand.NewPCG(seed, 0x5011ce))
	src := make([]int, jobs)
	for i := range src {
		src[i] = rng.IntN(machines)
	}
	return src
}

// Neighbors is the CAN neighbours of every machine under
// allocation.placement neighbors: cfg.Neighbors when given, else the
// layout of LayoutPoints(cfg.Seed).
func Neighbors(cfg Config) ([][]int, error) {
	if cfg.Neighbors != nil {
		return cfg.Neighbors, nil
	}
	_, nbs, err := alloc.Layout(LayoutPoints(cfg.Seed, len(cfg.Speeds)))
	return nbs, err
}

// startNeighbors is start under allocation.placement neighbors: no
// allocator endpoint; every machine is an alloc.Peer that places the jobs
// arriving at it, relocates, and gossips its state to its CAN neighbours
// every cfg.GossipPeriod until every job has completed.
func startNeighbors(cfg Config, h Host) (*run, error) {
	nbs, err := Neighbors(cfg)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, h: h, done: make(chan struct{})}
	r.seen, r.moves, r.pl = make([]int, len(cfg.Speeds)), make([]int, len(cfg.Speeds)), make([]int, len(cfg.Speeds))
	if cfg.CrashAt > 0 {
		r.inflight = map[uint64]uint64{}
	}
	for i, s := range cfg.Speeds {
		p := alloc.NewPeer(i, s, nbs[i], cfg.Speeds, cfg.Allocator, cfg.Relocator, cfg.Theta, cfg.MaxMoves)
		p.Social, p.SocialGain = cfg.Social, cfg.SocialGain
		if cfg.GossipRefresh > 0 {
			p.GossipRefresh = cfg.GossipRefresh
		}
		r.peers, r.nodes = append(r.peers, p), append(r.nodes, p.Node)
		hd := func(_ bus.Address, data []byte) { r.onPeer(p, data) }
		r.handlers = append(r.handlers, hd)
		if err := h.Register(bus.Address(alloc.MachineAddr(i)), hd); err != nil {
			return nil, err
		}
	}
	// Jobs arriving at one instant at one machine are placed in job
	// order, in one step.
	src := Sources(cfg.Seed, len(cfg.Jobs), len(cfg.Speeds))
	for i := 0; i < len(cfg.Jobs); {
		k := i
		for k < len(cfg.Jobs) && cfg.Jobs[k].Arrival == cfg.Jobs[i].Arrival {
			k++
		}
		at := map[int][]alloc.Spec{}
		for x := i; x < k; x++ {
			at[src[x]] = append(at[src[x]], cfg.Jobs[x])
		}
		for m := range len(cfg.Speeds) {
			if jobs := at[m]; len(jobs) > 0 {
				p := r.peers[m]
				h.At(bus.Address(alloc.MachineAddr(m)), jobs[0].Arrival, func() {
					now := h.Now()
					for _, s := range jobs {
						p.Submit(now, alloc.Job{ID: s.ID, Comp: alloc.Compositions[s.Type]}, s.Length)
					}
					r.flushPeer(p)
				})
			}
		}
		i = k
	}
	for _, sp := range cfg.Spikes {
		if sp.Machine >= len(r.peers) {
			return nil, fmt.Errorf("owner-load spike on machine %d of a grid of %d", sp.Machine, len(r.peers))
		}
		p := r.peers[sp.Machine]
		h.At(bus.Address(alloc.MachineAddr(sp.Machine)), sp.At, func() {
			if sp.Load > p.Exec.Load && !p.Down() && r.rose.CompareAndSwap(false, true) {
				r.riseMachine, r.riseGrid = len(p.Exec.Jobs), int(r.placed.Load()-r.completed.Load())
			}
			p.SetLoad(h.Now(), sp.Load)
			r.flushPeer(p)
		})
	}
	if cfg.CrashAt > 0 {
		r.crashMachine()
	}
	period := cfg.GossipPeriod
	if period <= 0 {
		period = DefaultGossipPeriod
	}
	for _, p := range r.peers {
		addr := bus.Address(alloc.MachineAddr(p.Index))
		var gossip func(t time.Duration)
		gossip = func(t time.Duration) {
			if t > cfg.Limit || r.over() {
				return
			}
			h.At(addr, t, func() {
				if r.over() {
					return
				}
				skipped := p.GossipSkipped
				p.Gossip(h.Now())
				if cfg.padSkipped && p.GossipSkipped > skipped {
					for range p.Neighbors {
						h.At(addr, h.Now()+SimLatency, func() {})
					}
				}
				r.flushPeer(p)
				gossip(t + period)
			})
		}
		gossip(period)
	}
	return r, nil
}

func (r *run) onPeer(p *alloc.Peer, data []byte) {
	m, err := alloc.Decode(data)
	if err != nil {
		r.decodeEr.Add(1)
		return
	}
	if p.Down() {
		// Handed to the mailbox before the crash (the emulator driver):
		// lost with it — a job among them is counted at the restart.
		return
	}
	if r.inflight != nil && carriesJob(m.Kind) {
		r.mu.Lock()
		delete(r.inflight, m.Job)
		r.mu.Unlock()
	}
	p.Step(r.h.Now(), m)
	r.flushPeer(p)
}

// carriesJob reports whether a message of kind k carries a job.
func carriesJob(k alloc.Kind) bool { return k == alloc.MsgAssign || k == alloc.MsgState }

// flushPeer sends a peer's messages, sets its completion timer, and
// accounts for the jobs it placed, the relocations it ordered and the
// jobs it completed (the run's end), in the peer's context. A job sent
// to the crashed machine while it is down is refused — the peer places
// it again (alloc.Peer.Refused), as a sender whose connection to a
// crashed machine is refused would.
func (r *run) flushPeer(p *alloc.Peer) {
	for {
		out, at, ok := p.Ready()
		refused := false
		for _, o := range out {
			if d := r.downAddr.Load(); d != 0 && o.To == d && carriesJob(o.Msg.Kind) {
				p.Refused(r.h.Now(), o.Msg, o.To)
				refused = true
				continue
			}
			if r.inflight != nil && carriesJob(o.Msg.Kind) {
				r.mu.Lock()
				r.inflight[o.Msg.Job] = o.To
				r.mu.Unlock()
			}
			r.publish(o)
		}
		if ok {
			r.h.At(bus.Address(alloc.MachineAddr(p.Index)), at, func() { p.Tick(r.h.Now()); r.flushPeer(p) })
		}
		if !refused {
			break
		}
	}
	if n := p.Placed - r.pl[p.Index]; n > 0 {
		r.pl[p.Index] = p.Placed
		r.placed.Add(int64(n))
	}
	if n := p.Relocations - r.moves[p.Index]; n > 0 {
		r.moves[p.Index] = p.Relocations
		if f := r.cfg.Relocated; f != nil {
			f(n)
		}
	}
	if n := p.Completed - r.seen[p.Index]; n > 0 {
		r.seen[p.Index] = p.Completed
		if f := r.cfg.Completed; f != nil {
			for range n {
				f(p.Makespan)
			}
		}
		r.completed.Add(int64(n))
		r.checkOver()
	}
}

// checkOver closes done once every job has completed or was lost.
func (r *run) checkOver() {
	if r.over() {
		r.closeDone.Do(func() { close(r.done) })
	}
}

// neighborsResult is result under allocation.placement neighbors: the
// peers' counts added up.
func (r *run) neighborsResult(series [][]int) Result {
	res := Result{Jobs: len(r.cfg.Jobs), DecodeErrors: int(r.decodeEr.Load()), Messages: r.h.Stats().Published,
		Series: series, Unroutable: r.h.Stats().Unroutable, SpikeShare: -1, CrashMachine: -1}
	if r.rose.Load() && r.riseGrid > 0 {
		res.SpikeShare, res.SpikeJobs = float64(r.riseMachine)/float64(r.riseGrid), r.riseMachine
	}
	if c := r.crash; c.happened {
		res.Crashed, res.CrashMachine, res.CrashJobs = true, c.machine, c.jobs
	}
	res.JobsLost = int(r.lost.Load())
	var links int
	for _, p := range r.peers {
		res.Replaced += p.Replaced
		res.GossipSkipped += p.GossipSkipped
		res.Submitted += p.Placed
		res.Completed += p.Completed
		res.Makespan = max(res.Makespan, p.Makespan.Seconds())
		res.Relocations += p.Relocations
		res.OffLoaded += p.OffLoaded
		res.Migrated += p.Received
		links += len(p.Neighbors)
	}
	if len(r.peers) > 0 {
		res.NeighborsMean = float64(links) / float64(len(r.peers))
	}
	return res
}

// TypeLabel is the message type label of an allocation message kind in
// the summary's messages.by_type and gridbed_messages_total{type}:
// "alloc_assign", …, "alloc_gossip" — the overlay's own types are named
// without the prefix.
func TypeLabel(k alloc.Kind) string { return "alloc_" + k.String() }

// TypeLabels are every kind's TypeLabel, in kind order (index k − 1).
func TypeLabels() []string {
	var ls []string
	for _, k := range alloc.Kinds() {
		ls = append(ls, TypeLabel(k))
	}
	return ls
}
