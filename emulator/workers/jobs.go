package workers

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/peer"
)

// jobSink is a worker's peer.JobSink (and peer.CESink): what its peers
// and the job client tell the oracle goes into a batch, which the worker
// sends to the coordinator with its next heartbeat or answer (JobBatch).
// Safe for concurrent use: every actor reports from its own goroutine.
type jobSink struct {
	now   func() time.Duration // the worker's emulated time
	index int

	mu    sync.Mutex
	items []JobItem
	key   time.Duration // the latest Key handed out (or Through)
	seq   uint64        // batches cut
}

// add appends it with a Key at or after every earlier item's; call it
// with at the call's emulated time.
func (s *jobSink) add(at time.Duration, it JobItem) {
	s.mu.Lock()
	s.key = max(s.key, at)
	it.Key = s.key
	s.items = append(s.items, it)
	s.mu.Unlock()
}

// JobEvent implements peer.JobSink.
func (s *jobSink) JobEvent(at time.Duration, e jobs.Event) {
	s.add(at, JobItem{Kind: itemEvent, At: at, Event: e})
}

// QueueLen implements peer.JobSink.
func (s *jobSink) QueueLen(id core.NodeID, n int) {
	s.add(s.now(), JobItem{Kind: itemQueueLen, Node: id, N: n})
}

// Residual implements peer.JobSink.
func (s *jobSink) Residual(id core.NodeID, r jobs.Vec) {
	s.add(s.now(), JobItem{Kind: itemResidual, Node: id, Vec: r})
}

// NodeJoined implements peer.JobSink.
func (s *jobSink) NodeJoined(id core.NodeID, point can.Point, speed float64, cores int) {
	s.add(s.now(), JobItem{Kind: itemNodeJoined, Node: id, Point: slices.Clone(point), Speed: speed, N: cores})
}

// CELoad implements peer.CESink.
func (s *jobSink) CELoad(id core.NodeID, loads []hetce.Load) {
	s.add(s.now(), JobItem{Kind: itemCELoad, Node: id, Loads: slices.Clone(loads)})
}

// batch cuts the items told since the previous batch; final marks the
// worker's last.
func (s *jobSink) batch(final bool) *JobBatch {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = max(s.key, now)
	s.seq++
	b := &JobBatch{Index: s.index, Seq: s.seq, Through: s.key, Final: final, Items: s.items}
	s.items = nil
	return b
}

// jobOutbox is a worker's batches of job events on their way to the
// coordinator, each kept (encoded) until the coordinator says it has it:
// a batch the worker published in the instant before a bus_restart's
// stop was noticed, or that the stopped server had not yet handed on, is
// gone with the server, and nothing else would ever say so — the
// coordinator's merge would hold the worker's later batches behind the
// gap until the end and then hand them on without it (a job's history
// missing its submission). The coordinator names the first batch it
// lacks with every resume, quiesce and collect (Cmd.JobsNext): the
// batches before it are dropped, and resume and quiesce send the others
// again (the merge ignores a batch it already has).
type jobOutbox struct {
	mu   sync.Mutex
	kept []keptBatch // in Seq order
}

type keptBatch struct {
	seq  uint64
	data []byte
}

// keep notes batch seq (encoded as data) as sent.
func (o *jobOutbox) keep(seq uint64, data []byte) {
	o.mu.Lock()
	o.kept = append(o.kept, keptBatch{seq, data})
	o.mu.Unlock()
}

// ack drops the batches before next: the coordinator has them.
func (o *jobOutbox) ack(next uint64) {
	if next == 0 {
		return // a command that names no batch
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	k := 0
	for k < len(o.kept) && o.kept[k].seq < next {
		k++
	}
	o.kept = slices.Delete(o.kept, 0, k)
}

// unacked acknowledges the batches before next and returns the others,
// in order, to be sent again.
func (o *jobOutbox) unacked(next uint64) [][]byte {
	o.ack(next)
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([][]byte, len(o.kept))
	for i, b := range o.kept {
		out[i] = b.data
	}
	return out
}

// jobMerge is the coordinator's side of the workers' job sinks: it puts
// each worker's batches back in order and hands their items to the
// oracle's sink (the run's ledger) merged by Key, an item only once no
// live worker can still report an earlier one (every worker's Through
// has passed it). The ledger then hears of a job's events in emulated
// time order even when they happened on two workers (a job that migrated,
// or the client's submission and its owner's queueing): the order a
// one-process run gives it, up to the emulated instants the actors read.
type jobMerge struct {
	sink peer.JobSink

	mu      sync.Mutex
	arrived *sync.Cond // on mu: a batch was put in order
	w       []mergeWorker
	// central is the global view the workers' peers ask (central.go);
	// picked, each node's latest pick's emulated instant.
	central jobs.Central
	picked  map[core.NodeID]time.Duration
}

// mergeWorker is one worker's stream of batches.
type mergeWorker struct {
	next    uint64 // the Seq of the batch it expects
	held    map[uint64]*JobBatch
	queue   []JobItem
	through time.Duration
	// out: dead, or closed — its Through no longer holds the others back.
	out  bool
	lost bool // dead: nothing more is awaited from it
}

func newJobMerge(sink peer.JobSink, workers int) *jobMerge {
	m := &jobMerge{sink: sink, w: make([]mergeWorker, workers)}
	m.arrived = sync.NewCond(&m.mu)
	for i := range m.w {
		m.w[i] = mergeWorker{next: 1, held: map[uint64]*JobBatch{}}
	}
	return m
}

// add takes one batch of worker b.Index (in any order) and hands the
// ledger every item it can.
func (m *jobMerge) add(b *JobBatch) {
	if m == nil || b == nil || b.Index < 0 || b.Index >= len(m.w) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := &m.w[b.Index]
	if b.Seq < w.next {
		return // a duplicate
	}
	w.held[b.Seq] = b
	for {
		nb, ok := w.held[w.next]
		if !ok {
			break
		}
		delete(w.held, w.next)
		w.next++
		w.queue = append(w.queue, nb.Items...)
		w.through = max(w.through, nb.Through)
		if nb.Final {
			w.out = true
		}
	}
	m.deliver()
	m.arrived.Broadcast()
}

// next is the Seq of the first batch of worker i the merge lacks: it has
// put every earlier one in order (Cmd.JobsNext).
func (m *jobMerge) next(i int) uint64 {
	if m == nil || i < 0 || i >= len(m.w) {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.w[i].next
}

// await waits until every worker i has had its batches up to seqs[i] put
// in order (0: none awaited), or wait has passed; it reports whether
// they all came.
func (m *jobMerge) await(seqs []uint64, wait time.Duration) bool {
	if m == nil {
		return true
	}
	expired := false
	t := time.AfterFunc(wait, func() {
		m.mu.Lock()
		expired = true
		m.mu.Unlock()
		m.arrived.Broadcast()
	})
	defer t.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		all := true
		for i, s := range seqs {
			if i < len(m.w) && !m.w[i].lost && m.w[i].next <= s {
				all = false
			}
		}
		if all || expired {
			return all
		}
		m.arrived.Wait()
	}
}

// lose stops waiting for worker i (it died): its items already here are
// handed on, and the others no longer wait for its Through.
func (m *jobMerge) lose(i int) {
	if m == nil || i < 0 || i >= len(m.w) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.w[i].out, m.w[i].lost = true, true
	m.deliver()
	m.arrived.Broadcast()
}

// flush hands on everything received, in order: the run is over (every
// worker closed or is lost); a batch after a gap in a worker's sequence
// (one that never came) is taken as it is. It returns the gaps, one line
// a worker: the batches that never came, their job events lost (a live
// worker's are sent again until the coordinator has them: jobOutbox).
func (m *jobMerge) flush() (gaps []string) {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.w {
		w := &m.w[i]
		var missing []uint64
		for _, s := range slices.Sorted(maps.Keys(w.held)) {
			for ; w.next < s; w.next++ {
				missing = append(missing, w.next)
			}
			w.next = s + 1
			w.queue = append(w.queue, w.held[s].Items...)
			delete(w.held, s)
		}
		if len(missing) > 0 {
			who := fmt.Sprintf("worker %d", i)
			if w.lost {
				who += " (dead)"
			}
			gaps = append(gaps, fmt.Sprintf("%s: its batches of job events %v never came, their events are not in the ledger", who, missing))
		}
		w.out = true
	}
	m.deliver()
	return gaps
}

// deliver hands the ledger, in Key order (ties: the lower worker), every
// queued item no live worker can still precede; call with mu held.
func (m *jobMerge) deliver() {
	limit := time.Duration(math.MaxInt64)
	for i := range m.w {
		if !m.w[i].out {
			limit = min(limit, m.w[i].through)
		}
	}
	for {
		best := -1
		for i := range m.w {
			if q := m.w[i].queue; len(q) > 0 && q[0].Key <= limit && (best < 0 || q[0].Key < m.w[best].queue[0].Key) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := &m.w[best]
		m.apply(w.queue[0])
		w.queue[0] = JobItem{}
		w.queue = w.queue[1:]
		if len(w.queue) == 0 {
			w.queue = nil
		}
	}
}

// apply makes the sink call item it stands for.
func (m *jobMerge) apply(it JobItem) {
	switch it.Kind {
	case itemEvent:
		m.sink.JobEvent(it.At, it.Event)
	case itemQueueLen:
		if !m.stale(it.Node, it.Key) {
			m.sink.QueueLen(it.Node, it.N)
		}
	case itemResidual:
		if !m.stale(it.Node, it.Key) {
			m.sink.Residual(it.Node, it.Vec)
		}
	case itemNodeJoined:
		m.sink.NodeJoined(it.Node, it.Point, it.Speed, it.N)
	case itemCELoad:
		if cs, ok := m.sink.(peer.CESink); ok && !m.stale(it.Node, it.Key) {
			cs.CELoad(it.Node, it.Loads)
		}
	}
}
