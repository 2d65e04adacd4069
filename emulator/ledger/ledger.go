// Package ledger is the oracle's view of jobs (docs/ARCHITECTURE.md
// principles 7 and 8): every event the job cores report, outside the bus, folded into
// one record per job — its state history, when it was submitted, matched,
// queued, started and finished, where, and how it ended — from which the
// run's job figures and the job-conservation check come. It is also the
// global view the centralized matchmaker (CENT, 003 §5.2) reads at no
// message cost: every live node's capabilities and queue length.
//
// A Ledger is safe for concurrent use: in the emulator every actor reports
// to it from its own goroutine.
package ledger

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/wire"
)

// Step is one entry of a job's state history.
type Step struct {
	At     time.Duration `json:"at_ns"`
	Event  string        `json:"event"`
	Peer   core.NodeID   `json:"peer"`
	Other  core.NodeID   `json:"other,omitempty"`
	Reason string        `json:"reason,omitempty"`
}

// Record is what the ledger knows of one job.
type Record struct {
	ID        uint64
	Submitted time.Duration // first submission
	Attempts  uint32
	// First assignment to a run node: matchmaking time, hops (routing to
	// the owner included) and the queue seen there.
	Queued    bool
	QueuedAt  time.Duration
	Hops      uint32
	QueueSeen int
	Pushed    bool
	// Migrations is how many times a run node received it from a
	// neighbor (000 §IV: internode scheduling and queue balancing).
	Migrations int
	starts     map[core.NodeID]time.Duration // latest start per run node
	// runs are the runs that may still be going: their start, per run
	// node; a run ends with its completion, or when its node drops the
	// job (cancelled, handed back) or takes it in again (queued,
	// migrated there). A crashed node's run stays here: Waits asks the
	// peers' states whether it still goes on.
	runs map[core.NodeID]time.Duration
	// The run that completed first: when it started and ended, where.
	Completions int
	StartedAt   time.Duration
	CompletedAt time.Duration
	RunNode     core.NodeID
	// How the job ended at the client.
	Ended    bool
	Failed   bool
	Reason   string
	EndedAt  time.Duration
	History  []Step
	lastStep time.Duration

	// HistoryDropped counts the steps past the history's bound, not kept.
	HistoryDropped int
}

// node is a live peer in the global view.
type node struct {
	point    can.Point
	speed    float64
	cores    int
	queue    int
	residual jobs.Vec // what it could start a job on now
	hasRes   bool     // residual is known
	combo    uint32   // its combination of categorical values plus one (0: none)
	het      nodeCEs  // its CEs and their loads (002 §4.1; hetce.go)
}

// Ledger collects job events.
type Ledger struct {
	mu      sync.Mutex
	jobs    map[uint64]*Record
	counts  [32]uint64 // events by kind
	nodes   map[core.NodeID]*node
	alive   func(core.NodeID) bool
	observe func(e jobs.Event, r *Record, at time.Duration, first bool)
	demand  func(req []uint32) jobs.Vec
	comboOf func(p can.Point) uint32
	ces     jobs.CEModel // cent-het's CE model (hetce.go); nil: Pick ignores CEs
	// backfilled counts starts that bypassed the head of a queue (000 §IV-A).
	backfilled uint64
	migrations map[string]uint64 // received migrations by mechanism
	// keepHistory bounds the per-job history (0: unlimited).
	keepHistory int
	// second is Dual-CAN's Manager node (manager.go).
	second manager
}

// New returns an empty ledger. alive tells whether a peer is a current
// member (CENT never picks a departed peer); observe, if set, is called
// (under the ledger's lock) after each event is recorded, for metrics;
// first says the event set the record's figure (first assignment, first
// completion, the outcome).
func New(alive func(core.NodeID) bool, observe func(e jobs.Event, r *Record, at time.Duration, first bool)) *Ledger {
	return &Ledger{jobs: map[uint64]*Record{}, nodes: map[core.NodeID]*node{}, migrations: map[string]uint64{}, alive: alive, observe: observe, keepHistory: 64}
}

// NodeJoined adds a peer to the global view.
func (l *Ledger) NodeJoined(id core.NodeID, point can.Point, speed float64, cores int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes[id] = &node{point: slices.Clone(point), speed: speed, cores: max(cores, 1)}
	if l.comboOf != nil {
		l.nodes[id].combo = l.comboOf(point)
	}
	if l.ces != nil {
		l.nodes[id].het = newNodeCEs(l.ces, point)
	}
}

// SetCombo tells the global view each peer's combination of categorical
// values plus one (0: none; 002 §5.1), read from its point: CENT then
// picks only nodes a job's CID accepts. Call it before any NodeJoined.
func (l *Ledger) SetCombo(comboOf func(p can.Point) uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.comboOf = comboOf
}

// SetDemand tells CENT what a job uses while it runs (jobs.Resources'
// Demand), so that it can place jobs on residual resources.
func (l *Ledger) SetDemand(demand func(req []uint32) jobs.Vec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.demand = demand
}

// Residual records a node's residual resources.
func (l *Ledger) Residual(id core.NodeID, r jobs.Vec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nd, ok := l.nodes[id]; ok {
		nd.residual, nd.hasRes = r, true
	}
}

// QueueLen records a node's queue length (jobs queued or running).
func (l *Ledger) QueueLen(id core.NodeID, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nd, ok := l.nodes[id]; ok {
		nd.queue = n
	}
}

// Pick is the centralized matchmaker (003 §5.2; 002 §3.3.2, Fig 3.17): an
// online greedy choice over every live capable node with the current
// global view — a node whose residual resources can start the job now,
// then the least loaded (queue length per core), then the one not
// over-provisioned by more than 10% in any constrained resource, then the
// fastest CPU. The chosen node's queue (and residual) is counted at once,
// so the next pick sees it even before the job arrives there.
func (l *Ledger) Pick(job *wire.JobSpec) core.NodeID {
	id, _ := l.pick(job, false)
	return id
}

// PickNow is the single-queue centralized scheduler of 000 §V-A: the
// node Pick would choose among those that can start the job now; when
// none can, 0 and whether any live node is capable of it at all (the job
// waits in the central queue).
func (l *Ledger) PickNow(job *wire.JobSpec) (core.NodeID, bool) { return l.pick(job, true) }

func (l *Ledger) pick(job *wire.JobSpec, now bool) (core.NodeID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ces != nil {
		return l.pickHet(job)
	}
	type cand struct {
		id    core.NodeID
		busy  bool // cannot start it now
		load  float64
		over  bool
		speed float64
	}
	var best *cand
	capable := false
	better := func(a, b *cand) bool {
		return cmp.Or(boolCmp(a.busy, b.busy), cmp.Compare(a.load, b.load), boolCmp(a.over, b.over), cmp.Compare(b.speed, a.speed), cmp.Compare(a.id, b.id)) < 0
	}
	var d jobs.Vec
	if l.demand != nil {
		d = l.demand(job.Req)
	}
	for id, nd := range l.nodes { // the comparison is total: order does not matter
		if !can.Capable(nd.point, job.Req) || !categorical.MatchesCombo(nd.combo, job.Cid) || (l.alive != nil && !l.alive(id)) {
			continue
		}
		c := &cand{id: id, busy: !nd.hasRes || l.demand == nil || !jobs.Fits(d, nd.residual), load: float64(nd.queue) / float64(nd.cores), over: overProvisioned(nd.point, job.Req), speed: nd.speed}
		capable = true
		if now && c.busy {
			continue
		}
		if best == nil || better(c, best) {
			best = c
		}
	}
	if best == nil {
		return 0, capable
	}
	nd := l.nodes[best.id]
	nd.queue++
	if !best.busy {
		nd.residual = nd.residual.Sub(d)
	}
	return best.id, true
}

// overProvisioned reports whether a node exceeds a constrained requirement
// by more than 10% (002 Fig 3.17's cap of 1.1), in coordinates.
func overProvisioned(p can.Point, req []uint32) bool {
	for i := 0; i < len(req)-1; i++ {
		if req[i] > 0 && float64(p[i]) > 1.1*float64(req[i]) {
			return true
		}
	}
	return false
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// JobEvent records one event at emulated time at.
func (l *Ledger) JobEvent(at time.Duration, e jobs.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(e.Kind) < len(l.counts) {
		l.counts[e.Kind]++
	}
	if e.Backfilled {
		l.backfilled++
	}
	if e.Kind == jobs.EvMigrated {
		l.migrations[e.Reason]++
	}
	if e.Job == 0 {
		// Not about one job (a PULL reject): counted only.
		if l.observe != nil {
			l.observe(e, nil, at, false)
		}
		return
	}
	r, ok := l.jobs[e.Job]
	if !ok {
		r = &Record{ID: e.Job, Submitted: at, starts: map[core.NodeID]time.Duration{}, runs: map[core.NodeID]time.Duration{}}
		l.jobs[e.Job] = r
	}
	if l.keepHistory == 0 || len(r.History) < l.keepHistory {
		r.History = append(r.History, Step{At: at, Event: e.Kind.String(), Peer: e.Peer, Other: e.Other, Reason: e.Reason})
	} else {
		r.HistoryDropped++
	}
	r.lastStep = at
	first := false
	switch e.Kind {
	case jobs.EvSubmitted:
		// Actors report concurrently: an owner's event may arrive before
		// the client's; the submission time is the earliest submission.
		r.Attempts = max(r.Attempts, e.Attempt)
		r.Submitted = min(r.Submitted, at)
	case jobs.EvPushed:
		r.Pushed = true
	case jobs.EvMigrated:
		r.Migrations++
		delete(r.runs, e.Peer)
	case jobs.EvQueued:
		delete(r.runs, e.Peer)
		if !r.Queued {
			r.Queued, r.QueuedAt, r.Hops, r.QueueSeen = true, at, e.Hops, e.Queue
			first = true
		}
	case jobs.EvStarted:
		r.starts[e.Peer] = at
		r.runs[e.Peer] = at
	case jobs.EvCancelled:
		delete(r.runs, e.Peer)
	case jobs.EvReturned:
		delete(r.runs, e.Other) // the owner reports it; Other is the run node that left
	case jobs.EvCompleted:
		delete(r.runs, e.Peer)
		r.Completions++
		if r.Completions == 1 {
			r.StartedAt, r.CompletedAt, r.RunNode = r.starts[e.Peer], at, e.Peer
			first = true
		}
	case jobs.EvResult:
		if !r.Ended {
			r.Ended, r.EndedAt = true, at
			first = true
		}
	case jobs.EvFailed:
		if !r.Ended {
			r.Ended, r.Failed, r.Reason, r.EndedAt = true, true, e.Reason, at
			first = true
		}
	}
	if l.observe != nil {
		l.observe(e, r, at, first)
	}
}

// Backfilled is the number of job starts that bypassed the head of
// their run node's queue (local scheduling, 000 §IV-A).
func (l *Ledger) Backfilled() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.backfilled
}

// Migrations are the jobs run nodes received from neighbors, by mechanism
// (jobs.Mechanism's names).
func (l *Ledger) Migrations() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.migrations)
}

// Seen reports whether the ledger has heard of job id (it was submitted).
func (l *Ledger) Seen(id uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.jobs[id]
	return ok
}

// Count is the number of events of kind k so far.
func (l *Ledger) Count(k jobs.EventKind) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(k) < len(l.counts) {
		return l.counts[k]
	}
	return 0
}

// Totals is the job accounting of a run at one moment.
type Totals struct {
	Submitted, Completed, Failed uint64
	// Unfinished jobs have not ended but some live peer holds them (owner,
	// run node, or a result awaiting acknowledgement), or they moved
	// within the client's timeout (a message in flight, a resubmission
	// under way).
	Unfinished uint64
	// Lost jobs have not ended, no live peer holds them, and nothing
	// happened to them for longer than twice the client's timeout: the
	// client should have resubmitted them and did not. (Twice: the
	// client's clock for a job also runs on its owner's status messages,
	// which the ledger does not see, and it checks every quarter timeout.)
	Lost uint64
	// Duplicated jobs completed more than once (ran to the end on two
	// run nodes); DuplicateRuns counts the extra completions.
	Duplicated, DuplicateRuns uint64
	FailedBy                  map[string]uint64
	// Anomalies are the state histories of lost and duplicated jobs, then
	// of unfinished ones (at most 20 in all), for the summary.
	Anomalies []Anomaly

	unfinished []*Record
}

// Anomaly is a job that broke conservation, with its history.
type Anomaly struct {
	Job     uint64 `json:"job"`
	Problem string `json:"problem"`
	History []Step `json:"history"`
}

// Tally counts the jobs at emulated time now. held says whether a live
// peer holds job id; timeout is the client's resubmit timeout.
func (l *Ledger) Tally(now time.Duration, held func(id uint64) bool, timeout time.Duration) Totals {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := Totals{FailedBy: map[string]uint64{}}
	for _, id := range l.sortedIDs() {
		r := l.jobs[id]
		t.Submitted++
		if r.Completions > 1 {
			t.Duplicated++
			t.DuplicateRuns += uint64(r.Completions - 1)
			t.anomaly(r, "duplicated")
		}
		switch {
		case r.Ended && r.Failed:
			t.Failed++
			t.FailedBy[r.Reason]++
		case r.Ended:
			t.Completed++
		case held(id) || now-r.lastStep <= 2*timeout:
			t.Unfinished++
			t.unfinished = append(t.unfinished, r)
		default:
			t.Lost++
			t.anomaly(r, "lost")
		}
	}
	for _, r := range t.unfinished {
		t.anomaly(r, "unfinished")
	}
	t.unfinished = nil
	return t
}

func (t *Totals) anomaly(r *Record, problem string) {
	if len(t.Anomalies) < 20 {
		t.Anomalies = append(t.Anomalies, Anomaly{Job: r.ID, Problem: problem, History: slices.Clone(r.History)})
	}
}

// Figures are the job performance figures of a run (003 §5.3's metrics).
type Figures struct {
	Wait       []float64 // seconds from submission to the start of the run that completed, per completed job (Waits: every job)
	Turnaround []float64 // seconds from submission to the client's receipt of the outcome, per completed job
	MatchSecs  []float64 // seconds from submission to the first assignment, per assigned job
	Hops       []float64 // matchmaking hops of the first assignment
	QueueSeen  []float64 // queue length seen at the first assignment
	Pushed     uint64    // jobs pushed at least once (CAN-P)
}

// sortedIDs are the jobs' ids in increasing order (job order); call with
// l.mu held.
func (l *Ledger) sortedIDs() []uint64 {
	ids := make([]uint64, 0, len(l.jobs))
	for id := range l.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Figures collects the per-job figures, in job order.
func (l *Ledger) Figures() Figures {
	l.mu.Lock()
	defer l.mu.Unlock()
	var f Figures
	for _, id := range l.sortedIDs() {
		r := l.jobs[id]
		if r.Pushed {
			f.Pushed++
		}
		if r.Queued {
			f.MatchSecs = append(f.MatchSecs, (r.QueuedAt - r.Submitted).Seconds())
			f.Hops = append(f.Hops, float64(r.Hops))
			f.QueueSeen = append(f.QueueSeen, float64(r.QueueSeen))
		}
		if r.Completions > 0 && r.Ended && !r.Failed {
			f.Wait = append(f.Wait, (r.StartedAt - r.Submitted).Seconds())
			f.Turnaround = append(f.Turnaround, (r.EndedAt - r.Submitted).Seconds())
		}
	}
	return f
}

// Waits are the jobs' waits at emulated time end (003 §5.3's wait time,
// from the first submission to the start of the run that completes the
// job), over every submitted job, in job order, with how many of them are
// censored (their start was not seen: the wait counted is a lower bound):
//
//   - a job that completed on some run node: to the start of the run that
//     completed first (as Figures.Wait, whether or not its result has
//     reached the client);
//   - a job that ended failed without completing: to its failure
//     (censored);
//   - a job running at end: to the start of its earliest run still going —
//     started there, neither completed nor dropped since, and, by running,
//     its run node still holds the job (a crashed node's run does not
//     count);
//   - any other job — matching, queued, in recovery, its run lost —: to
//     end (right-censored).
func (l *Ledger) Waits(end time.Duration, running func(job uint64, node core.NodeID) bool) (waits []float64, censored int) {
	return l.WaitsFrom(end, 0, running)
}

// WaitsFrom is Waits over the jobs submitted at or after from (a
// steady-state window that leaves out the warm-up, 003 §5.4).
func (l *Ledger) WaitsFrom(end, from time.Duration, running func(job uint64, node core.NodeID) bool) (waits []float64, censored int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := l.sortedIDs()
	waits = make([]float64, 0, len(ids))
	for _, id := range ids {
		r := l.jobs[id]
		if r.Submitted < from {
			continue
		}
		started, ok := time.Duration(0), false
		for node, at := range r.runs { // the earliest: order does not matter
			if (!ok || at < started) && running(id, node) {
				started, ok = at, true
			}
		}
		switch {
		case r.Completions > 0:
			started = r.StartedAt
		case r.Ended && r.Failed:
			started = r.EndedAt
			censored++
		case ok:
		default:
			started = max(end, r.Submitted)
			censored++
		}
		waits = append(waits, (started - r.Submitted).Seconds())
	}
	return waits, censored
}

// RunNode is what the global view knows of a peer that ran a job.
type RunNode struct {
	Speed float64
	Cores int
	// Combo is its combination of categorical values plus one (0: none).
	Combo uint32
}

// Records returns a copy of every job's record, in job order, with its
// state history so far (shared: read it, do not change it), and the run
// nodes they name (for a per-job table and the history checker, Check).
func (l *Ledger) Records() ([]Record, map[core.NodeID]RunNode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.jobs))
	nodes := map[core.NodeID]RunNode{}
	for _, r := range l.jobs {
		c := *r
		c.History, c.starts, c.runs = r.History[:len(r.History):len(r.History)], nil, nil
		out = append(out, c)
		if nd, ok := l.nodes[r.RunNode]; ok && r.RunNode != 0 {
			nodes[r.RunNode] = RunNode{Speed: nd.speed, Cores: nd.cores, Combo: nd.combo}
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.ID, b.ID) })
	return out, nodes
}

// Mean of xs, NaN when empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Quantile q of xs (nearest rank), NaN when empty. xs is sorted in place.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// Live is the number of jobs queued or running over all live nodes of the
// global view, and the number of nodes with a non-empty queue.
// NodeLoad is peer id's current jobs (queued or running) and cores, as
// the global view knows them (jobs.FreshLoad); ok is false for a peer
// it does not know or that is gone.
func (l *Ledger) NodeLoad(id core.NodeID) (queue, cores int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	nd, known := l.nodes[id]
	if !known || (l.alive != nil && !l.alive(id)) {
		return 0, 0, false
	}
	return nd.queue, nd.cores, true
}

// Busy counts the live peers and those holding at least one job (queued
// or running: a peer starts the head of its queue at once, so with
// single-core peers these are the peers running a job) — 003 Fig 5's
// utilization is busy/live at the last submission.
func (l *Ledger) Busy() (busy, live int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, nd := range l.nodes {
		if l.alive != nil && !l.alive(id) {
			continue
		}
		live++
		if nd.queue > 0 {
			busy++
		}
	}
	return busy, live
}

func (l *Ledger) Live() (queued, busy int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, nd := range l.nodes {
		if l.alive != nil && !l.alive(id) {
			continue
		}
		queued += nd.queue
		if nd.queue > 0 {
			busy++
		}
	}
	return queued, busy
}
