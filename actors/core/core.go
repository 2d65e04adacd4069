// Package core is what the protocol cores (actors/overlay, actors/jobs)
// share with each other and with the adapter that drives them
// (actors/peer): node ids, the messages and timers a core asks for, the
// timer kinds of every core, and the outbox a core keeps them in.
//
// A core owns its outbox: Ready hands out what it holds, and the core's
// Advance, called once the caller is done with it, clears it (dropping the
// references to what was sent) for reuse, as etcd-io/raft's
// Ready/Advance.
package core

import (
	"time"

	"google.golang.org/protobuf/proto"
)

// NodeID is a peer's address; 0 means "nobody".
type NodeID uint64

// TimerKind names a timer a core asks the driver for. The kinds of all
// cores share the driver's timer channel, so they are declared together.
type TimerKind uint8

// Timer kinds.
const (
	// TimerHeartbeat is the overlay's periodic heartbeat (002 §4.2).
	TimerHeartbeat TimerKind = iota + 1
	// TimerJoinRetry is the overlay's join timeout.
	TimerJoinRetry
	// TimerJobs is the job core's periodic owner/run-node heartbeat and
	// recovery check (003 §4.1).
	TimerJobs
	// TimerRunDone is the end of a running job's emulated execution.
	TimerRunDone
	// TimerClient is the client's periodic resubmission check.
	TimerClient
	// TimerSched paces internode scheduling and queue balancing (000 §IV).
	TimerSched
	// TimerRNT is the Chord ring's maintenance period and the Rendezvous
	// Node Tree's aggregation (003 §5.1; actors/chord, actors/rnt).
	TimerRNT
	// TimerWave is the Wave core's next deadline (001: the hourly slot,
	// a job's completion, a linger's end, a discovery's timeout).
	TimerWave
	// TimerDualHeartbeat and TimerDualJoinRetry are TimerHeartbeat and
	// TimerJoinRetry of a peer's second overlay core, its Residue-node in
	// Dual-CAN's Secondary CAN (002 §3.1.2).
	TimerDualHeartbeat
	TimerDualJoinRetry
)

// Dual is the Secondary CAN's twin of an overlay timer kind (002 §3.1.2),
// and whether k has one.
func (k TimerKind) Dual() (TimerKind, bool) {
	switch k {
	case TimerHeartbeat:
		return TimerDualHeartbeat, true
	case TimerJoinRetry:
		return TimerDualJoinRetry, true
	}
	return k, false
}

// Primary is the overlay timer kind a Secondary CAN timer twins, and
// whether k is one.
func (k TimerKind) Primary() (TimerKind, bool) {
	switch k {
	case TimerDualHeartbeat:
		return TimerHeartbeat, true
	case TimerDualJoinRetry:
		return TimerJoinRetry, true
	}
	return k, false
}

// Overlay reports whether k is one of the overlay core's timers (else it
// is the job core's or the client's).
func (k TimerKind) Overlay() bool { return k == TimerHeartbeat || k == TimerJoinRetry }

// Out is a message a core wants sent. Its wire type is wire.TypeOf(Msg).
// The same Msg value may be addressed to several receivers (one heartbeat
// to every neighbor); drivers may encode it once.
type Out struct {
	To  NodeID
	Msg proto.Message
}

// Timer asks the driver to call the core's Tick(At, Kind) at emulated time
// At.
type Timer struct {
	Kind TimerKind
	At   time.Duration
}

// Outbox is what a core wants done: messages to send and timers to set.
type Outbox struct {
	Messages []Out
	Timers   []Timer
}

// Send queues m for to.
func (o *Outbox) Send(to NodeID, m proto.Message) {
	o.Messages = append(o.Messages, Out{To: to, Msg: m})
}

// SetTimer queues a timer of kind at emulated time at.
func (o *Outbox) SetTimer(kind TimerKind, at time.Duration) {
	o.Timers = append(o.Timers, Timer{Kind: kind, At: at})
}

// Clear empties the outbox, keeping its arrays for reuse. It drops their
// references to what was sent: otherwise every peer would keep its last
// messages (a vanilla heartbeat with ~32 neighbor entries at d=4) alive
// until it sends again.
func (o *Outbox) Clear() {
	clear(o.Messages)
	o.Messages, o.Timers = o.Messages[:0], o.Timers[:0]
}
