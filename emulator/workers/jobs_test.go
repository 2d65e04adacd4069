package workers

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
)

// recorder is a job sink that notes the events in the order it hears them.
type recorder struct{ got []string }

func (r *recorder) JobEvent(at time.Duration, e jobs.Event) {
	r.got = append(r.got, fmt.Sprintf("%v:%s@%d", at, e.Kind, e.Peer))
}
func (r *recorder) QueueLen(id core.NodeID, n int) {
	r.got = append(r.got, fmt.Sprintf("queue %d=%d", id, n))
}
func (*recorder) Residual(core.NodeID, jobs.Vec)                  {}
func (*recorder) NodeJoined(core.NodeID, can.Point, float64, int) {}

func ev(at time.Duration, k jobs.EventKind, peer core.NodeID) JobItem {
	return JobItem{Key: at, At: at, Kind: itemEvent, Event: jobs.Event{Kind: k, Job: 7, Peer: peer}}
}

// TestJobMergeOrdersByEmulatedTime: the coordinator hands its ledger the
// workers' job events in emulated time order — whatever order their
// batches arrive in — and only once no live worker can still report an
// earlier one; a lost worker no longer holds the others back, and the
// run's end hands on everything.
func TestJobMergeOrdersByEmulatedTime(t *testing.T) {
	s := time.Second
	// A job submitted by the client (worker 1), queued on worker 0's
	// peer 2, migrated to worker 1's peer 3, started and completed there.
	w0 := []*JobBatch{
		{Index: 0, Seq: 1, Through: 5 * s, Items: []JobItem{ev(2*s, jobs.EvQueued, 2)}},
		{Index: 0, Seq: 2, Through: 9 * s, Items: []JobItem{ev(6*s, jobs.EvMigrated, 2)}},
	}
	w1 := []*JobBatch{
		{Index: 1, Seq: 1, Through: 4 * s, Items: []JobItem{ev(1*s, jobs.EvSubmitted, 1)}},
		{Index: 1, Seq: 2, Through: 12 * s, Items: []JobItem{ev(7*s, jobs.EvStarted, 3), ev(11*s, jobs.EvCompleted, 3)}},
	}
	for _, tc := range []struct {
		name  string
		order []*JobBatch
		// want after the batches arrive, then after the end (flush).
		want, end []string
	}{
		{"in order", []*JobBatch{w1[0], w0[0], w0[1], w1[1]},
			[]string{"1s:submitted@1", "2s:queued@2", "6s:migrated@2", "7s:started@3"}, []string{"11s:completed@3"}},
		{"the later worker first", []*JobBatch{w1[1], w1[0], w0[1], w0[0]},
			[]string{"1s:submitted@1", "2s:queued@2", "6s:migrated@2", "7s:started@3"}, []string{"11s:completed@3"}},
		{"one worker silent", []*JobBatch{w1[0], w1[1]},
			nil, []string{"1s:submitted@1", "7s:started@3", "11s:completed@3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			m := newJobMerge(r, 2)
			for _, b := range tc.order {
				m.add(b)
			}
			if !slices.Equal(r.got, tc.want) {
				t.Errorf("after the batches: %q, want %q", r.got, tc.want)
			}
			m.flush()
			if want := append(slices.Clone(tc.want), tc.end...); !slices.Equal(r.got, want) {
				t.Errorf("after the end: %q, want %q", r.got, want)
			}
		})
	}
}

// TestJobMergeLostWorker: once a worker is lost the others' events are
// no longer held back for it, and a batch it had sent is handed on.
func TestJobMergeLostWorker(t *testing.T) {
	r := &recorder{}
	m := newJobMerge(r, 2)
	m.add(&JobBatch{Index: 0, Seq: 1, Through: 10 * time.Second, Items: []JobItem{ev(3*time.Second, jobs.EvQueued, 2)}})
	m.add(&JobBatch{Index: 1, Seq: 2, Through: 20 * time.Second, Items: []JobItem{ev(15*time.Second, jobs.EvStarted, 3)}}) // its batch 1 never came
	if len(r.got) != 0 {
		t.Fatalf("handed on %q while worker 1's first batch is missing", r.got)
	}
	m.lose(1)
	if want := []string{"3s:queued@2"}; !slices.Equal(r.got, want) {
		t.Errorf("after worker 1 is lost: %q, want %q", r.got, want)
	}
	if !m.await([]uint64{1, 5}, time.Second) {
		t.Errorf("await waits for a lost worker")
	}
}

// TestJobSinkKeysNeverDecrease: a worker's items are keyed in the order
// its actors told them, never before the previous batch's Through — the
// coordinator's merge relies on it.
func TestJobSinkKeysNeverDecrease(t *testing.T) {
	now := 10 * time.Second
	s := &jobSink{now: func() time.Duration { return now }}
	s.JobEvent(5*time.Second, jobs.Event{Kind: jobs.EvQueued, Job: 1})
	s.JobEvent(4*time.Second, jobs.Event{Kind: jobs.EvStarted, Job: 1}) // read its clock earlier, told later
	b := s.batch(false)
	if b.Seq != 1 || b.Through != 10*time.Second || len(b.Items) != 2 || b.Items[0].Key != 5*time.Second || b.Items[1].Key != 5*time.Second || b.Items[1].At != 4*time.Second {
		t.Fatalf("batch %+v", b)
	}
	s.JobEvent(8*time.Second, jobs.Event{Kind: jobs.EvCompleted, Job: 1}) // before the Through just sent
	s.QueueLen(2, 1)
	b = s.batch(true)
	if b.Seq != 2 || !b.Final || b.Items[0].Key != 10*time.Second || b.Items[0].At != 8*time.Second || b.Items[1].Kind != itemQueueLen {
		t.Fatalf("second batch %+v", b)
	}
}
