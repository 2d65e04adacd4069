package workers

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/wire"
)

// The global view over workers. CENT's matchmakers (003 §5.2, 000 §V-A,
// 002 §4.3.1), matchmaking.load_view oracle and Dual-CAN's Manager node
// (002 §3.1.2) read the oracle's global view at no message cost: in one
// process a call into the run's job ledger. Split across processes, that
// ledger lives in the coordinator, fed by the workers' job batches; a
// worker's peer asks it by request/reply on centralSubject (remoteView)
// and waits for the answer, as an in-process call waits for the ledger's
// lock. The view is as fresh as the batches that reached the ledger (up
// to a worker heartbeat behind, BeatInterval of wall time); a pick counts
// the chosen node's queue at once, as in one process, and a node's load
// reported before that pick is not allowed to undo it (jobMerge.apply).
// Not control traffic the papers count: no message of the run's books.

func centralSubject(run string) string { return "gbw." + run + ".central" }

// How long a question to the global view is asked again while the
// coordinator's server is away (bus_restart), and how often.
const (
	askPatience = 30 * time.Second
	askRetry    = 50 * time.Millisecond
)

// centralOp is what a peer asks of the global view.
type centralOp uint8

const (
	opPick             centralOp = iota + 1 // jobs.Central
	opPickNow                               // jobs.CentralQueue
	opNodeLoad                              // jobs.FreshLoad
	opSecondaryContact                      // jobs.Manager
	opSecondaryJoined                       // jobs.Manager (published: no answer)
	opSecondaryLeft                         // jobs.Manager (published: no answer)
)

// CentralReq is a peer's question to the coordinator's global view.
type CentralReq struct {
	Op   centralOp
	Job  []byte // the job's wire.JobSpec (opPick, opPickNow)
	Node core.NodeID
	// At is the asking worker's emulated time: a pick supersedes the
	// chosen node's loads reported before it.
	At time.Duration
}

// CentralRep is its answer.
type CentralRep struct {
	Node         core.NodeID
	OK           bool
	Queue, Cores int
}

// remoteView is a worker's jobs.Central (and CentralQueue, FreshLoad,
// Manager): each call a request to the coordinator's global view. Safe
// for concurrent use: every peer asks from its own goroutine.
type remoteView struct {
	nc     *nats.Conn
	subj   string
	now    func() time.Duration
	log    *slog.Logger
	failed atomic.Uint64 // questions without an answer
}

// ask sends q and waits for the answer; ok is false when none came (the
// caller then acts as the view's "nothing known").
func (v *remoteView) ask(q CentralReq) (CentralRep, bool) {
	q.At = v.now()
	var r CentralRep
	var msg *nats.Msg
	var err error
	// A bus_restart stops the coordinator's server: the question is asked
	// again, every askRetry, until the connection and the coordinator's
	// subscription are back (as an in-process call would wait), within
	// askPatience; a closed connection ends it at once.
	for deadline := time.Now().Add(askPatience); ; {
		msg, err = v.nc.Request(v.subj, encode(q), requestTimeout)
		if err == nil || v.nc.IsClosed() || time.Now().After(deadline) {
			break
		}
		time.Sleep(askRetry)
	}
	if err == nil {
		err = decode(msg.Data, &r)
	}
	if err != nil {
		if v.failed.Add(1) == 1 {
			v.log.Warn("the coordinator's global view did not answer", "op", q.Op, "err", err)
		}
		return CentralRep{}, false
	}
	return r, true
}

func (v *remoteView) pick(job *wire.JobSpec, op centralOp) (CentralRep, bool) {
	b, err := proto.Marshal(job)
	if err != nil {
		return CentralRep{}, false
	}
	return v.ask(CentralReq{Op: op, Job: b})
}

// Pick implements jobs.Central; 0 when no answer came (the job fails as
// with no capable node; the worker logs it).
func (v *remoteView) Pick(job *wire.JobSpec) core.NodeID {
	r, _ := v.pick(job, opPick)
	return r.Node
}

// PickNow implements jobs.CentralQueue; without an answer the job waits
// in the central queue and is asked for again.
func (v *remoteView) PickNow(job *wire.JobSpec) (core.NodeID, bool) {
	r, ok := v.pick(job, opPickNow)
	if !ok {
		return 0, true
	}
	return r.Node, r.OK
}

// NodeLoad implements jobs.FreshLoad; without an answer the node is not
// known (matchmaking reads the neighbor's heartbeat instead).
func (v *remoteView) NodeLoad(id core.NodeID) (queue, cores int, ok bool) {
	r, answered := v.ask(CentralReq{Op: opNodeLoad, Node: id})
	return r.Queue, r.Cores, answered && r.OK
}

// SecondaryContact implements jobs.Manager; 0 without an answer (the
// search falls back as with an empty directory).
func (v *remoteView) SecondaryContact(id core.NodeID) core.NodeID {
	r, _ := v.ask(CentralReq{Op: opSecondaryContact, Node: id})
	return r.Node
}

// SecondaryJoined implements jobs.Manager: published, in order with the
// worker's later questions (one connection, one subscriber).
func (v *remoteView) SecondaryJoined(id core.NodeID) { v.tell(opSecondaryJoined, id) }

// SecondaryLeft implements jobs.Manager.
func (v *remoteView) SecondaryLeft(id core.NodeID) { v.tell(opSecondaryLeft, id) }

func (v *remoteView) tell(op centralOp, id core.NodeID) {
	if err := v.nc.Publish(v.subj, encode(CentralReq{Op: op, Node: id, At: v.now()})); err != nil && v.failed.Add(1) == 1 {
		v.log.Warn("the coordinator's global view could not be told", "op", op, "err", err)
	}
}

// onCentral answers a worker's peer from the coordinator's global view
// (Options.Central).
func (c *Coordinator) onCentral(msg *nats.Msg) {
	var q CentralReq
	if err := decode(msg.Data, &q); err != nil {
		c.log.Warn("a question to the global view could not be read", "err", err)
		return // the asker times out and acts as with nothing known
	}
	view := c.opts.Central
	var r CentralRep
	switch q.Op {
	case opPick, opPickNow:
		var job wire.JobSpec
		if err := proto.Unmarshal(q.Job, &job); err != nil {
			c.log.Warn("a job to pick for could not be read", "err", err)
			return
		}
		r.Node, r.OK = c.merge.pick(&job, q.Op == opPickNow, q.At)
	case opNodeLoad:
		if f, ok := view.(jobs.FreshLoad); ok {
			r.Queue, r.Cores, r.OK = f.NodeLoad(q.Node)
		}
	case opSecondaryContact:
		if m, ok := view.(jobs.Manager); ok {
			r.Node = m.SecondaryContact(q.Node)
		}
	case opSecondaryJoined, opSecondaryLeft:
		if m, ok := view.(jobs.Manager); ok {
			if q.Op == opSecondaryJoined {
				m.SecondaryJoined(q.Node)
			} else {
				m.SecondaryLeft(q.Node)
			}
		}
		return
	default:
		return
	}
	if err := msg.Respond(encode(r)); err != nil {
		c.log.Warn("the global view's answer could not be sent", "err", err)
	}
}

// pick is the global view's pick for job, asked at emulated instant at:
// the chosen node's loads reported before at are superseded (apply skips
// them), as the pick counted the job on it before the node could.
func (m *jobMerge) pick(job *wire.JobSpec, now bool, at time.Duration) (core.NodeID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var id core.NodeID
	ok := true
	if q, isQueue := m.central.(jobs.CentralQueue); now && isQueue {
		id, ok = q.PickNow(job)
	} else {
		id = m.central.Pick(job)
		ok = id != 0
	}
	if id != 0 {
		if m.picked == nil {
			m.picked = map[core.NodeID]time.Duration{}
		}
		m.picked[id] = max(m.picked[id], at)
	}
	return id, ok
}

// stale reports whether a load item of node id keyed at key precedes a
// pick of id (pick): the pick already counted what the item would undo.
func (m *jobMerge) stale(id core.NodeID, key time.Duration) bool {
	at, ok := m.picked[id]
	return ok && key < at
}
