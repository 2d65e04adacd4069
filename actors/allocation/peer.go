package allocation

import (
	"fmt"
	"slices"
	"time"
)

// Placement is where allocation decisions are made
// (allocation.placement): by 004's central allocator, or — a gridbed
// extension, not in 004 — by every machine from its CAN neighbours' view
// (Peer).
type Placement uint8

// Placements.
const (
	// Central: one Allocator sees every machine (004 §2).
	Central Placement = iota
	// Neighbors: every machine places the jobs that arrive at it, and
	// relocates, among itself and its CAN neighbours (Peer).
	Neighbors
)

var placementNames = [...]string{Central: "central", Neighbors: "neighbors"}

func (p Placement) String() string {
	if int(p) < len(placementNames) {
		return placementNames[p]
	}
	return fmt.Sprintf("placement(%d)", uint8(p))
}

// Placements are the names allocation.placement accepts, default first.
func Placements() []string { return placementNames[:] }

// ParsePlacement reads a placement name as the scenario spells it.
func ParsePlacement(name string) (Placement, bool) {
	for i, n := range placementNames {
		if n == name {
			return Placement(i), true
		}
	}
	return Central, false
}

// Peer is a machine that is its own allocator under allocation.placement
// neighbors, a gridbed extension of 004 (which is centralized) that shows
// what decentralizing its allocation costs. It runs its jobs as a Node
// does, and knows only its CAN neighbours (Layout): each of them tells it
// every gossip period its owner load λ_m and the jobs J_m it runs
// (MsgGossip, Gossip), so its view of them is stale by up to one period.
// A job arriving at the machine (Submit) goes to the best of the machine
// itself and its neighbours by the allocator's score f(j, m) of 004 §2.2
// (Allocate, unchanged: the same schemes and readings); when one of its
// jobs ends or its owner load changes it runs the relocator of 004 §2.3
// (Relocate, the same f, θ and N) over itself and its neighbours, moving
// jobs with the same MsgMigrate and MsgState messages as the central
// allocator. It counts its own placements and moves into its view at
// once. SOCIAL's relative reading takes each job's best machine among
// the ones the peer sees.
//
// The caller delivers messages (Step), owner-load changes (SetLoad), the
// completion timer (Tick) and the gossip instants (Gossip), then takes
// Ready.
type Peer struct {
	*Node
	Allocator, Relocator Scheme
	Social               Reading
	// SocialGain is the SOCIAL relocator's normalization, as the
	// central allocator's.
	SocialGain SocialGain
	Theta      float64
	MaxMoves   int

	// Neighbors are the machines whose zones abut this one's, ascending;
	// view[k] is what the peer knows of Neighbors[k].
	Neighbors []int
	view      []Machine

	// Placed counts the jobs that arrived here and were placed (here or
	// on a neighbour); Relocations the moves this peer ordered, OffLoaded
	// those out of a machine whose owner load was above 0.
	Placed, Relocations, OffLoaded int
	// Completed counts the jobs completed here; Makespan is the latest
	// completion instant among them.
	Completed int
	Makespan  time.Duration

	// GossipRefresh is k: a machine whose owner load and jobs have not
	// changed since its last gossip stays silent, except that it gossips
	// at least every k-th period (Gossip); k ≤ 1 gossips every period.
	GossipRefresh int
	// gossiped is Exec's change count at the last gossip sent, quiet the
	// periods skipped since; GossipSkipped counts every skipped period.
	gossiped      uint64
	quiet         int
	GossipSkipped int

	// A crashed machine (Crash) is down until Restart: it runs nothing
	// and holds the jobs arriving at it and its owner-load change.
	down     bool
	held     []pendingJob // the jobs that arrived while it was down
	heldLoad *float64
	// Replaced counts the jobs this peer placed again because the
	// machine it sent them to was down (Refused).
	Replaced int
}

// DefaultGossipRefresh is GossipRefresh's default: an unchanged machine
// gossips every 6th period (every 60 s at the default 10 s period), so
// that a neighbour acting on a lost gossip — or one that restarted with
// an empty view (Restart) — hears the truth within 6 periods.
const DefaultGossipRefresh = 6

// NewPeer is machine index of speed s whose CAN neighbours are neighbors,
// of speeds speeds[k]: a machine learns its neighbours'
// speed vectors as it learns of them; their owner loads are 0 and they
// run no job until they say otherwise.
func NewPeer(index int, s Vector, neighbors []int, speeds []Vector, alloc, reloc Scheme, theta float64, maxMoves int) *Peer {
	p := &Peer{Node: NewNode(index, s), Allocator: alloc, Relocator: reloc, Theta: theta, MaxMoves: maxMoves,
		Neighbors: slices.Clone(neighbors), GossipRefresh: DefaultGossipRefresh}
	slices.Sort(p.Neighbors)
	for _, k := range p.Neighbors {
		p.view = append(p.view, Machine{Speed: speeds[k]})
	}
	return p
}

// View is what the peer knows of its neighbours, in Neighbors' order
// (read only).
func (p *Peer) View() []Machine { return p.view }

// local is the machines the peer decides among — itself, as it is now,
// and its neighbours as it last heard or placed — in ascending machine
// index (ties go to the lowest index, as under the central allocator),
// each with a copy of its jobs; idx[i] is local[i]'s machine index and
// self the peer's own position.
func (p *Peer) local() (ms []Machine, idx []int, self int) {
	own := Machine{Speed: p.Exec.Speed, Load: p.Exec.Load}
	for _, r := range p.Exec.Jobs {
		own.Jobs = append(own.Jobs, Job{ID: r.ID, Comp: r.Comp})
	}
	self = -1
	for k, nb := range p.Neighbors {
		if self < 0 && nb > p.Index {
			self = len(ms)
			ms, idx = append(ms, own), append(idx, p.Index)
		}
		m := p.view[k]
		m.Jobs = slices.Clone(m.Jobs)
		ms, idx = append(ms, m), append(idx, nb)
	}
	if self < 0 {
		self = len(ms)
		ms, idx = append(ms, own), append(idx, p.Index)
	}
	return ms, idx, self
}

// keep writes the neighbours' entries of ms (local's order) back into the
// view.
func (p *Peer) keep(ms []Machine, idx []int) {
	for i, m := range ms {
		if k, ok := slices.BinarySearch(p.Neighbors, idx[i]); ok {
			p.view[k] = m
		}
	}
}

// Submit places a job of length ops arriving at this machine at now on
// the best of itself and its neighbours (004 §2.2's allocator over the
// peer's view); it reports false when none can take it.
func (p *Peer) Submit(now time.Duration, j Job, ops float64) bool {
	if p.down {
		p.held = append(p.held, pendingJob{j, ops})
		return true
	}
	ms, idx, self := p.local()
	best := Allocate(p.Allocator, p.Social, ms, j.Comp)
	if best < 0 {
		return false
	}
	p.Placed++
	assign := Msg{Kind: MsgAssign, Job: j.ID, Comp: j.Comp, Remaining: ops, At: now}
	if best == self {
		p.Node.Step(now, assign)
	} else {
		ms[best].Jobs = append(ms[best].Jobs, j)
		p.keep(ms, idx)
		p.send(MachineAddr(idx[best]), assign)
	}
	p.settle(now)
	return true
}

// Step handles a message at now: a neighbour's gossip updates the view,
// everything else is the Node's.
func (p *Peer) Step(now time.Duration, m Msg) {
	if p.down {
		return // off the bus: the host delivers nothing
	}
	if m.Kind == MsgGossip {
		if k, ok := slices.BinarySearch(p.Neighbors, int(m.From)-int(MachineAddr(0))); ok && m.From >= MachineAddr(0) {
			jobs := make([]Job, 0, len(m.List))
			for _, e := range m.List {
				jobs = append(jobs, Job{ID: e.ID, Comp: e.Comp})
			}
			p.view[k].Load, p.view[k].Jobs = m.Load, jobs
		}
		return
	}
	p.Node.Step(now, m)
	p.settle(now)
}

// Gossip is a gossip period's instant: it sends every neighbour this
// machine's owner load and jobs (MsgGossip) if either changed since its
// last gossip (a job added, moved away or completed, the load set — even
// if a later change undid it), or if it has been silent for
// GossipRefresh − 1 periods: the refresh repeats unchanged data, so that
// a neighbour does not act for ever on a view it got wrong. A crashed
// machine sends nothing.
func (p *Peer) Gossip(now time.Duration) {
	if p.down {
		return
	}
	p.Exec.advance(now)
	if p.Exec.changes == p.gossiped && p.quiet+1 < p.GossipRefresh {
		p.quiet++
		p.GossipSkipped++
		return
	}
	p.gossiped, p.quiet = p.Exec.changes, 0
	list := make([]Entry, 0, len(p.Exec.Jobs))
	for _, r := range p.Exec.Jobs {
		list = append(list, Entry{ID: r.ID, Comp: r.Comp})
	}
	for _, nb := range p.Neighbors {
		p.send(MachineAddr(nb), Msg{Kind: MsgGossip, Load: p.Exec.Load, At: now, List: list})
	}
}

// SetLoad changes the owner load λ_m at now and runs the relocator on
// this machine (004 §2.3: out of it when the load rose, into it when it
// fell).
func (p *Peer) SetLoad(now time.Duration, load float64) {
	if p.down {
		p.heldLoad = &load
		return
	}
	old := p.Exec.Load
	p.Node.SetLoad(now, load)
	p.settle(now)
	switch {
	case load > old:
		p.relocate(now, LoadUp)
	case load < old:
		p.relocate(now, LoadDown)
	}
	p.settle(now)
}

// Tick completes the jobs done by now; each completion runs the
// relocator into this machine (004 §2.3).
func (p *Peer) Tick(now time.Duration) {
	if p.down {
		return // its jobs do not run
	}
	p.Node.Tick(now)
	p.settle(now)
}

// settle takes the reports the Node addressed to a central allocator —
// there is none — as the peer's own events: a job's end is counted and
// runs the relocator into this machine (LoadDown); a load change was
// handled by SetLoad. Moves out of this machine can complete more jobs,
// so it repeats until no report is left.
func (p *Peer) settle(now time.Duration) {
	var kept []Out
	for len(p.Node.out) > 0 {
		out := p.Node.out
		p.Node.out = nil
		for _, o := range out {
			if o.To != AllocatorAddr {
				kept = append(kept, o)
				continue
			}
			if o.Msg.Kind == MsgEnded {
				p.Completed++
				p.Makespan = max(p.Makespan, o.Msg.At)
				p.relocate(now, LoadDown)
			}
		}
	}
	p.Node.out = kept
}

// relocate runs the relocator of 004 §2.3 on this machine after ev over
// itself and its neighbours, and carries out the moves: a job leaving
// this machine is preempted here and its state sent to its new machine
// (MsgState); a job coming from a neighbour is ordered over (MsgMigrate).
func (p *Peer) relocate(now time.Duration, ev Event) {
	if p.Relocator == None {
		return
	}
	ms, idx, self := p.local()
	for _, mv := range Relocate(p.Relocator, p.Social, p.SocialGain, ms, self, ev, p.Theta, p.MaxMoves) {
		p.Relocations++
		if ms[mv.From].Load > 0 {
			p.OffLoaded++
		}
		to := MachineAddr(idx[mv.To])
		if mv.From == self {
			p.Node.Step(now, Msg{Kind: MsgMigrate, Job: mv.Job, To: to})
		} else {
			p.send(MachineAddr(idx[mv.From]), Msg{Kind: MsgMigrate, Job: mv.Job, To: to})
		}
	}
	p.keep(ms, idx)
}

// Crash takes the machine down at now (allocation.crash_at under
// allocation.placement neighbors; not in 004, whose machines do not
// crash): its jobs stop where they are — their states ℓ'_j are what 004
// §2.1's preemption saves — and, until Restart, it runs nothing,
// receives nothing (the host takes it off the bus), sends nothing, and
// holds the jobs arriving at it and its owner-load change.
func (p *Peer) Crash(now time.Duration) {
	p.Exec.advance(now)
	p.down = true
	p.timerSet = false // the completion timer the host holds finds it down
}

// Down reports whether the machine is crashed.
func (p *Peer) Down() bool { return p.down }

// Restart brings a crashed machine back at now: its jobs run again from
// the states they stopped in (the time down is lost to them), its view
// of its neighbours is lost — they are idle until they gossip (within
// GossipRefresh periods) — and it gossips at the next period (it
// changed). Then the owner-load change and the jobs that arrived while
// it was down are handled, in that order.
func (p *Peer) Restart(now time.Duration) {
	if !p.down {
		return
	}
	p.down = false
	p.Exec.resume(now)
	p.Exec.changes++
	for k := range p.view {
		p.view[k] = Machine{Speed: p.view[k].Speed}
	}
	if l := p.heldLoad; l != nil {
		p.heldLoad = nil
		p.SetLoad(now, *l)
	}
	held := p.held
	p.held = nil
	for _, h := range held {
		p.Submit(now, h.j, h.ops)
	}
	p.settle(now)
}

// Refused is the host telling the peer, at now, that job message m
// (MsgAssign or MsgState) it sent could not be delivered: machine to is
// down (a crashed machine's connection refused). The peer takes the
// machine as unavailable (owner load 1) until it gossips again, and
// places the job anew, with its remaining operations, on the best of
// itself and its neighbours (004 §2.2's allocator over its view; itself
// if none can take it).
func (p *Peer) Refused(now time.Duration, m Msg, to uint64) {
	if k, ok := slices.BinarySearch(p.Neighbors, int(to)-int(MachineAddr(0))); ok && to >= MachineAddr(0) {
		p.view[k] = Machine{Speed: p.view[k].Speed, Load: 1}
	}
	p.Replaced++
	j := Job{ID: m.Job, Comp: m.Comp}
	ms, idx, self := p.local()
	best := Allocate(p.Allocator, p.Social, ms, j.Comp)
	assign := Msg{Kind: MsgAssign, Job: j.ID, Comp: j.Comp, Remaining: m.Remaining, At: now}
	if best < 0 || best == self {
		p.Node.Step(now, assign)
	} else {
		ms[best].Jobs = append(ms[best].Jobs, j)
		p.keep(ms, idx)
		assign.Kind = m.Kind
		p.send(MachineAddr(idx[best]), assign)
	}
	p.settle(now)
}
