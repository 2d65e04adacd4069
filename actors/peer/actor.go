package peer

import (
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// Messages the emulator sends to a peer actor's mailbox. None of them
// travels over the bus: bus traffic arrives as Inbound.
type (
	// Inbound carries the bytes of one message received from the bus and
	// its message type as the sender's side read it (wire.PeekType), so
	// that the mailboxes' content can be counted by type (Waiting).
	Inbound struct {
		Data []byte
		Type wire.MsgType
	}
	// TimerFired is the expiry of a timer set for emulated time At; Due is
	// the wall instant At maps to, so the actor can measure lag.
	TimerFired struct {
		Kind core.TimerKind
		At   time.Duration
		Due  time.Time
	}
	// StartJoin tells the peer to join the overlay.
	StartJoin struct{}
	// StartMember starts a peer whose overlay core joined outside the bus
	// (Peer.StartMember) with the timers its core had pending.
	StartMember struct{ Timers []core.Timer }
	// CollectState asks for a copy of the peer's state (oracle traffic,
	// outside the bus).
	CollectState struct{ Reply chan<- State }
	// Halt ends the endpoint's activity: the actor answers on Done (if
	// set) and from then on ignores every message but CollectState, so
	// once all have answered nothing more is sent on the bus. With
	// Graceful a peer first leaves the overlay (churn); without, it simply
	// stops (a crash, as its neighbors see it).
	Halt struct {
		Graceful bool
		Done     chan<- struct{}
	}
	// SubmitJob hands a new job to a job client.
	SubmitJob struct{ Spec *wire.JobSpec }
)

// Endpoint is what an Actor hosts: a Peer, or a run's job Client. Messages
// meant for the other kind (StartJoin for a client, SubmitJob for a peer)
// are ignored.
type Endpoint interface {
	// Deliver handles the bytes of one message received from the bus.
	Deliver(data []byte)
	// Fire handles the expiry of a timer set for emulated time at.
	Fire(kind core.TimerKind, at time.Duration)
}

// Actor is the thin actor adapter of an Endpoint (docs/ARCHITECTURE.md
// principle 2): Handle type-switches and hands the message to the
// endpoint. Timers come back as messages to the same mailbox, so the
// endpoint needs no lock. The actor runtime (protoactor-go) stays behind
// the emulator driver's seam (emulator/live), which hands Handle each
// message of the mailbox.
type Actor struct {
	Endpoint Endpoint
	// OnLag receives how late (wall seconds) each timer was handled.
	OnLag func(seconds float64)
	// Backlog counts Inbound messages handed to mailboxes but not yet
	// processed; the sender increments it, Handle decrements it.
	Backlog *atomic.Int64
	// Waiting, if set, counts the same Inbound messages by message type:
	// the sender adds one under the Inbound's Type, Handle takes it off.
	Waiting *Waiting
	// TimerBacklog counts TimerFired messages waiting in mailboxes (the
	// timer goroutine increments it, Handle decrements it).
	TimerBacklog *atomic.Int64
	// Frozen, once set, makes the actor ignore everything but CollectState
	// and Halt, as if halted: the emulator freezes all peers at once to
	// abort an overloaded run.
	Frozen *atomic.Bool
	// Discarded, if set, counts the Inbound messages the actor received
	// after it had stopped (halted or frozen) and so never handed to its
	// peer: bus messages that reached a stopped peer.
	Discarded *atomic.Int64
	// OnPanic, if set, hears of a panic while handling a message (the
	// value and the stack); the message's work stops there and the peer
	// goes on with the next one. Without it the runtime (protoactor)
	// would recover the panic silently and restart the actor.
	OnPanic func(v any, stack []byte)

	halted bool
}

// reportPanic is deferred by Handle: a panic in a protocol core must be
// seen (OnPanic), not swallowed by the runtime's supervisor.
func reportPanic(on func(any, []byte)) {
	if on == nil {
		return
	}
	if v := recover(); v != nil {
		on(v, debug.Stack())
	}
}

// Handle handles one message of the actor's mailbox, on the mailbox's
// goroutine (one at a time). The runtime that owns the mailbox calls it:
// the emulator's protoactor adapter (emulator/live), or any other mailbox
// (a benchmark's), so actors/ does not depend on the actor runtime.
func (a *Actor) Handle(msg any) {
	defer reportPanic(a.OnPanic)
	if !a.halted && a.Frozen != nil && a.Frozen.Load() {
		a.halted = true
	}
	p, _ := a.Endpoint.(*Peer)
	switch m := msg.(type) {
	case *Inbound:
		if a.Backlog != nil {
			a.Backlog.Add(-1)
		}
		if a.Waiting != nil {
			a.Waiting.Add(m.Type, -1)
		}
		if !a.halted {
			a.Endpoint.Deliver(m.Data)
		} else if a.Discarded != nil {
			a.Discarded.Add(1)
		}
	case *TimerFired:
		if a.TimerBacklog != nil {
			a.TimerBacklog.Add(-1)
		}
		if !a.halted {
			if a.OnLag != nil {
				a.OnLag(time.Since(m.Due).Seconds())
			}
			a.Endpoint.Fire(m.Kind, m.At)
		}
	case *StartJoin:
		if !a.halted && p != nil {
			p.Start()
		}
	case *StartMember:
		if !a.halted && p != nil {
			p.StartMember(m.Timers)
		}
	case *SubmitJob:
		if c, ok := a.Endpoint.(*Client); ok && !a.halted {
			c.Submit(m.Spec)
		}
	case *CollectState:
		// Halted peers answer too: their counters stay in the run's
		// totals (the driver marks them departed).
		if p != nil {
			m.Reply <- p.State()
		}
	case *Halt:
		if m.Graceful && !a.halted && p != nil {
			p.Leave()
		}
		a.halted = true
		if m.Done != nil {
			m.Done <- struct{}{}
		}
	}
}
