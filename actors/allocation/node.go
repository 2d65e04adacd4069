package allocation

import "time"

// Bus addresses of the endpoints: the allocator at AllocatorAddr, machine i
// at MachineAddr(i).
const AllocatorAddr uint64 = 1

// MachineAddr is the bus address of machine i.
func MachineAddr(i int) uint64 { return uint64(i) + 2 }

// machineIndex is the machine at address a, or −1.
func machineIndex(a uint64, n int) int {
	if a < 2 || a-2 >= uint64(n) {
		return -1
	}
	return int(a - 2)
}

// Out is a message to send.
type Out struct {
	To  uint64
	Msg Msg
}

// Node is a machine of the grid as a pure core (docs/ARCHITECTURE.md
// principle 1): it runs the jobs assigned to it by round robin (004 §2.1,
// Exec), tells the allocator when a job ends or its owner load changes,
// and hands a preempted job's state to the machine the allocator names.
// The caller delivers messages (Step), owner-load changes (SetLoad) and
// the completion timer (Tick), then takes Ready.
type Node struct {
	Index int
	Exec  Exec

	out      []Out
	timer    time.Duration // the latest completion timer handed to the caller
	timerSet bool          // … and it has not fired yet
	// Received counts the jobs that arrived by relocation (MsgState).
	Received int
	// ended are the jobs completed here, for a restarted allocator.
	ended []Entry
}

// NewNode is machine index of speed s.
func NewNode(index int, s Vector) *Node { return &Node{Index: index, Exec: Exec{Speed: s}} }

func (n *Node) send(to uint64, m Msg) {
	m.From = MachineAddr(n.Index)
	n.out = append(n.out, Out{To: to, Msg: m})
}

// Step handles a message at now.
func (n *Node) Step(now time.Duration, m Msg) {
	switch m.Kind {
	case MsgAssign:
		n.Exec.Add(now, Running{ID: m.Job, Comp: m.Comp, Remaining: m.Remaining})
	case MsgState:
		n.Received++
		n.Exec.Add(now, Running{ID: m.Job, Comp: m.Comp, Remaining: m.Remaining})
	case MsgMigrate:
		// A job that ended before the order came is not here: the
		// allocator learns of its end from MsgEnded.
		if r, ok := n.Exec.Remove(now, m.Job); ok {
			n.send(m.To, Msg{Kind: MsgState, Job: r.ID, Remaining: r.Remaining, Comp: r.Comp, At: now})
		}
	case MsgSync:
		n.Exec.advance(now)
		list := append([]Entry(nil), n.ended...)
		for _, r := range n.Exec.Jobs {
			list = append(list, Entry{ID: r.ID, Comp: r.Comp})
		}
		n.send(AllocatorAddr, Msg{Kind: MsgSynced, Load: n.Exec.Load, At: now, List: list})
	}
	n.Tick(now)
}

// SetLoad changes the owner load λ_m at now and notifies the allocator
// (004 §2.1).
func (n *Node) SetLoad(now time.Duration, load float64) {
	n.Exec.SetLoad(now, load)
	n.send(AllocatorAddr, Msg{Kind: MsgLoad, Load: load, At: now})
	n.Tick(now)
}

// Tick completes the jobs done by now and notifies the allocator of each
// (the completion timer, or any event).
func (n *Node) Tick(now time.Duration) {
	if n.timerSet && now >= n.timer {
		n.timerSet = false // the timer the caller held has fired
	}
	for _, r := range n.Exec.Complete(now) {
		n.ended = append(n.ended, Entry{ID: r.ID, Ended: true, At: now})
		n.send(AllocatorAddr, Msg{Kind: MsgEnded, Job: r.ID, At: now})
	}
}

// Ready returns the messages to send and, when the next completion is due
// at an instant the caller holds no timer for, that instant (ok); it
// clears the messages. Timers the caller already holds that turned out
// early fire harmlessly (Tick finds nothing done).
func (n *Node) Ready() (out []Out, timer time.Duration, ok bool) {
	out, n.out = n.out, nil
	if at, has := n.Exec.Next(); has && (!n.timerSet || at != n.timer) {
		n.timer, n.timerSet = at, true
		return out, at, true
	}
	return out, 0, false
}

// Allocator is the centralized allocator of 004 §2 as a pure core: it
// assigns each arriving job to a machine (Allocate) and, when a machine
// reports a job's end or a change of its owner load, relocates jobs
// (Relocate) by ordering the machine holding each to hand it over.
type Allocator struct {
	Allocator, Relocator Scheme
	// Social is the reading of SOCIAL's score (allocation.social_score).
	Social   Reading
	Theta    float64
	MaxMoves int

	view []Machine
	out  []Out
	// completed are the jobs known to have ended (a restarted allocator
	// learns them again from the machines); syncing counts the machines
	// whose MsgSynced a restarted allocator still awaits, pending the
	// jobs that arrived meanwhile.
	completed map[uint64]bool
	syncing   int
	pending   []pendingJob

	Submitted, Completed int
	// Relocations counts the moves ordered; OffLoaded those out of a
	// machine whose owner load was above 0 (004 Fig 2: off the machine
	// its owner took).
	Relocations, OffLoaded int
	// AtRise is the allocator's view when an owner load first rose (004
	// Fig 2's spike): the jobs on that machine and on the whole grid;
	// Rose is false until then.
	AtRise struct {
		Rose          bool
		Machine, Grid int
	}
	// Makespan is the latest completion instant reported.
	Makespan time.Duration

	// SocialGain is the SOCIAL relocator's normalization
	// (allocation.social_gain).
	SocialGain SocialGain
}

// NewAllocator is the allocator of a grid of the given speed vectors, all
// owner loads 0.
func NewAllocator(alloc, reloc Scheme, theta float64, maxMoves int, speeds []Vector) *Allocator {
	a := &Allocator{Allocator: alloc, Relocator: reloc, Theta: theta, MaxMoves: maxMoves, completed: map[uint64]bool{}}
	for _, s := range speeds {
		a.view = append(a.view, Machine{Speed: s})
	}
	return a
}

// View is the allocator's view of the machines (read only).
func (a *Allocator) View() []Machine { return a.view }

// pendingJob is a job waiting to be placed: at a restarted allocator
// until its view is rebuilt, at a crashed machine until it restarts.
type pendingJob struct {
	j   Job
	ops float64
}

// Submit allocates a job of length ops arriving at now (004 §2.2); it
// reports false when no machine can take it. While a restarted allocator
// rebuilds its view the job waits.
func (a *Allocator) Submit(now time.Duration, j Job, ops float64) bool {
	if a.syncing > 0 {
		a.pending = append(a.pending, pendingJob{j, ops})
		return true
	}
	m := Allocate(a.Allocator, a.Social, a.view, j.Comp)
	if m < 0 {
		return false
	}
	a.Submitted++
	a.view[m].Jobs = append(a.view[m].Jobs, j)
	a.out = append(a.out, Out{To: MachineAddr(m), Msg: Msg{Kind: MsgAssign, From: AllocatorAddr, Job: j.ID, Comp: j.Comp, Remaining: ops, At: now}})
	return true
}

// Step handles a machine's report at now.
func (a *Allocator) Step(now time.Duration, msg Msg) {
	m := machineIndex(msg.From, len(a.view))
	if m < 0 {
		return
	}
	switch msg.Kind {
	case MsgEnded:
		if a.completed[msg.Job] {
			return
		}
		// A job whose state was on its way between machines while a
		// restarted allocator rebuilt its view is not in the view.
		a.forget(msg.Job)
		a.ended(msg.Job, msg.At)
		a.relocate(m, LoadDown)
	case MsgSynced:
		a.synced(now, m, msg)
	case MsgLoad:
		old := a.view[m].Load
		a.view[m].Load = msg.Load
		if a.syncing > 0 {
			return
		}
		switch {
		case msg.Load > old:
			if !a.AtRise.Rose {
				a.AtRise.Rose, a.AtRise.Machine = true, len(a.view[m].Jobs)
				for i := range a.view {
					a.AtRise.Grid += len(a.view[i].Jobs)
				}
			}
			a.relocate(m, LoadUp)
		case msg.Load < old:
			a.relocate(m, LoadDown)
		}
	}
}

func (a *Allocator) ended(id uint64, at time.Duration) {
	a.completed[id] = true
	a.Completed = len(a.completed)
	a.Makespan = max(a.Makespan, at)
}

// Restart is the allocator after a crash: it has lost its view, its
// count of completed jobs and its makespan, and asks every machine what
// it holds (MsgSync); jobs submitted until the last machine has answered
// wait, then are allocated. Submitted, the jobs it has allocated, is
// kept: the job source counts them, not the allocator's memory.
func (a *Allocator) Restart(now time.Duration) {
	for i := range a.view {
		a.view[i].Jobs, a.view[i].Load = nil, 0
		a.out = append(a.out, Out{To: MachineAddr(i), Msg: Msg{Kind: MsgSync, From: AllocatorAddr, At: now}})
	}
	a.completed, a.Completed, a.Makespan = map[uint64]bool{}, 0, 0
	a.syncing = len(a.view)
}

// synced takes a machine's answer to MsgSync.
func (a *Allocator) synced(now time.Duration, m int, msg Msg) {
	if a.syncing == 0 {
		return
	}
	a.view[m].Load = msg.Load
	for _, e := range msg.List {
		if e.Ended {
			a.ended(e.ID, e.At)
		}
	}
	for _, e := range msg.List {
		if !e.Ended && !a.completed[e.ID] {
			a.view[m].Jobs = append(a.view[m].Jobs, Job{ID: e.ID, Comp: e.Comp})
		}
	}
	if a.syncing--; a.syncing == 0 {
		waiting := a.pending
		a.pending = nil
		for _, p := range waiting {
			a.Submit(now, p.j, p.ops)
		}
	}
}

// Syncing reports whether a restarted allocator is still rebuilding its
// view.
func (a *Allocator) Syncing() bool { return a.syncing > 0 }

// forget removes a job from the view.
func (a *Allocator) forget(id uint64) bool {
	for i := range a.view {
		for k, j := range a.view[i].Jobs {
			if j.ID == id {
				a.view[i].Jobs = append(a.view[i].Jobs[:k], a.view[i].Jobs[k+1:]...)
				return true
			}
		}
	}
	return false
}

// relocate runs the relocator on machine m after ev (004 §2.3) and orders
// the moves.
func (a *Allocator) relocate(m int, ev Event) {
	if a.Relocator == None || a.syncing > 0 {
		return
	}
	for _, mv := range Relocate(a.Relocator, a.Social, a.SocialGain, a.view, m, ev, a.Theta, a.MaxMoves) {
		a.Relocations++
		if a.view[mv.From].Load > 0 {
			a.OffLoaded++
		}
		a.out = append(a.out, Out{To: MachineAddr(mv.From), Msg: Msg{Kind: MsgMigrate, From: AllocatorAddr, Job: mv.Job, To: MachineAddr(mv.To)}})
	}
}

// Ready returns the messages to send and clears them.
func (a *Allocator) Ready() []Out {
	out := a.out
	a.out = nil
	return out
}
