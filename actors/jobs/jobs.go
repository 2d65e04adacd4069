// Package jobs is the pure job core of a peer (003 §4;
// 000 §III-A): the three roles a peer plays for a job — injection node
// (route the job to the owner of its point), owner (matchmaking, watching
// the run node, telling the client) and run node (FIFO queue, emulated
// execution, watching the owner) — and the client that submits jobs and
// resubmits those it hears nothing about.
//
// Like the overlay core it is a single-threaded state machine: the driver
// hands it messages (Step) and timer expiries (Tick) with the emulated time
// and collects what it wants done (Ready, then Advance once done). It
// reads the peer's overlay state (zone, neighbors and the load their
// heartbeats carried) through View, never the other way round, and keeps
// its own estimates of the neighbors' loads (estimates.go). No goroutines,
// clocks or global randomness inside.
//
// The Node's code is split by role: node.go holds its state, Step, Tick and
// the periodic round; owner.go the injection node and the owner (003 §4.1);
// match.go matchmaking (003 §4.2-4.4); runnode.go the run node's queue and
// execution; sched.go dynamic scheduling (000 §IV); balloon.go the Balloon
// model (002 §3.1.3); modes.go the schemes and modes Config chooses among.
package jobs

import (
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// Failure reasons a job can end with.
const (
	ReasonNoCapableNode = "no capable node found"
	ReasonGaveUp        = "gave up after max attempts"
	ReasonPushLimit     = "push limit reached without a capable node"
	// ReasonMultiCore: under MP (002 §3.3) every peer is one core, so a
	// job requiring several cores cannot run anywhere.
	ReasonMultiCore = "needs several cores: MP peers have one each"
)

// EventKind names a step of a job's life, as the ledger (the oracle's
// view of jobs) records it.
type EventKind uint8

// Job events.
const (
	EvSubmitted         EventKind = iota + 1 // client: handed to an injection node (an attempt)
	EvRouteDrop                              // a routed job or adoption could not be forwarded
	EvOwned                                  // the owner of the job's point took it
	EvPushed                                 // CAN-P: pushed one hop further
	EvQueued                                 // a run node queued it (Queue: jobs ahead; Hops: matchmaking hops)
	EvStarted                                // a run node started running it
	EvCompleted                              // a run node finished running it
	EvRematched                              // the owner matches it again (Reason says why)
	EvAdopted                                // a new owner adopted it from its run node
	EvCancelled                              // a run node dropped it (run elsewhere)
	EvReturned                               // a leaving run node handed it back
	EvResult                                 // the client received its outcome (first time)
	EvDuplicateResult                        // the client received another result for it
	EvResubmitted                            // the client resubmits it (silence for the client timeout)
	EvFailed                                 // it ended failed (Reason)
	EvMigrated                               // a run node received it from a neighbor (Reason: mechanism)
	EvMigrationReturned                      // a migration was not acknowledged: the sender took it back
	EvDisowned                               // its owner handed it to the new owner of its point
	EvOfferRejected                          // a neighbor refused a PUSH offer of it
	EvPullRejected                           // a neighbor had no job for a PULL request (Job 0)
	EvBalloon                                // matchmaking chose a Balloon (Other: its physical node; 002 §3.1.4)
	EvPullForwarded                          // a node passed a PULL request on (Job 0; scheduling.pull_reach > 1)
	EvResidue                                // matchmaking chose a Residue-node of the Secondary CAN (Other: its physical node; 002 Algorithm 1)
)

var eventNames = [...]string{"", "submitted", "route_drop", "owned", "pushed", "queued", "started", "completed", "rematched", "adopted", "cancelled", "returned", "result", "duplicate_result", "resubmitted", "failed", "migrated", "migration_returned", "disowned", "offer_rejected", "pull_rejected", "balloon_matched", "pull_forwarded", "residue_matched"}

// String is the event's name (a metric label and trigger name).
func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}

// Event is one job event; the driver stamps the time.
type Event struct {
	Kind    EventKind
	Job     uint64
	Attempt uint32
	Peer    core.NodeID // where it happened
	Other   core.NodeID // the run node (Queued, Rematched), owner (Adopted)
	Hops    uint32
	Queue   int
	Reason  string
	// BC is a started job's backfilling counter; Backfilled says it
	// bypassed the queue's head (000 §IV-A).
	BC         uint32
	Backfilled bool
}

// Ready is what the job core wants done.
type Ready struct {
	core.Outbox
	Events []Event
	// Queue is set (with QueueLen) when the node's queue length changed:
	// the oracle's global view (CENT) follows it at no message cost.
	QueueChanged bool
	QueueLen     int
	Residual     Vec // the node's residual resources then
	// CELoads is, with a CE model (002 §4.1), each CE's load then: the
	// central baseline that knows CEs follows it.
	CELoads []hetce.Load
}

// View is what the job core reads of its peer's overlay core
// (*overlay.Node implements it).
type View interface {
	ID() core.NodeID
	Joined() bool
	Owns(p can.Point) bool
	Zone() can.Zone
	Point() can.Point
	Neighbors() []overlay.Neighbor
	NextHop(p can.Point, hops *uint32, best *float64, detours *uint32) core.NodeID
}

// Central is the CENT matchmaker: the oracle's global view of every live
// node, consulted at no message cost. Pick returns the run node for job,
// 0 when no live node is capable.
type Central interface {
	Pick(job *wire.JobSpec) core.NodeID
}

// FreshLoad is the global view's current load of a node: its jobs
// (queued or running) and cores; ok is false for a node it does not know
// or that is gone. Config.LoadView LoadViewOracle reads it instead of the
// neighbors' last heartbeats — an experiment switch that removes the
// staleness of 003 §4.4's periodic neighbor state, not a protocol.
type FreshLoad interface {
	NodeLoad(id core.NodeID) (queue, cores int, ok bool)
}

// CentralQueue is the single-queue centralized scheduler (000 §V-A):
// PickNow returns a live node that can start job now, or 0 and whether
// any live node is capable of it (then the job waits and is asked for
// again). SchemeCENTQueue uses it.
type CentralQueue interface {
	PickNow(job *wire.JobSpec) (core.NodeID, bool)
}

func ref(id uint64, epoch uint32) *wire.JobRef { return &wire.JobRef{Id: id, Epoch: epoch} }

func runTime(work int64, speed float64) time.Duration {
	if speed <= 0 {
		speed = 1
	}
	return time.Duration(float64(work) / speed)
}

// EventNames lists every event's name, in EventKind order.
func EventNames() []string { return append([]string(nil), eventNames[1:]...) }
