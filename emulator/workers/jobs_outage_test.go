package workers

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/emulator/bus"
)

// TestJobBatchLostAtOutageSentAgain: a batch of job events a worker
// published just before a bus_restart's stop, which the server never
// handed to the coordinator, is sent again when the coordinator asks the
// worker to resume — the job keeps its submission. This is how
// TestCentralSchemeThroughBusRestart lost a job's first events: the job
// client (worker 1) submitted job 7 at 471 s, the batch carrying it was
// published as the server stopped at 480 s and lost with it, and the
// coordinator's merge, short of that batch, held worker 1's later
// batches behind the gap until the end of the run and then handed them
// on without it: job 7's history began with its owner's "owned" (worker
// 0). Deterministic: the coordinator's subscription to the job batches
// is away while the batch is published (the server drops it, as a
// stopping server does), and back before the worker resumes.
func TestJobBatchLostAtOutageSentAgain(t *testing.T) {
	s := time.Second
	srv, err := bus.ServeEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	connect := func(name string) *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL(), nats.Name(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	const run = "lost-batch"

	// The coordinator's side: its merge over two workers, fed by the
	// jobs subject.
	r := &recorder{}
	m := newJobMerge(r, 2)
	c := &Coordinator{merge: m}
	cnc := connect("coordinator")
	subscribe := func() *nats.Subscription {
		sub, err := cnc.Subscribe(jobsSubject(run), c.onJobs)
		if err != nil {
			t.Fatal(err)
		}
		if err := cnc.Flush(); err != nil {
			t.Fatal(err)
		}
		return sub
	}

	// Worker 1 hosts the job client.
	now := 471 * s
	w := &worker{nc: connect("worker 1"), st: Setup{Run: run, Index: 1}}
	w.jobs = &jobSink{index: 1, now: func() time.Duration { return now }}
	w.jobs.JobEvent(471*s, jobs.Event{Kind: jobs.EvSubmitted, Job: 7, Peer: 9})

	// The batch carrying the submission is published as the server
	// stops: it never reaches the coordinator.
	now = 480 * s
	if seq := w.sendJobs(false); seq != 1 {
		t.Fatalf("first batch Seq %d", seq)
	}
	if err := w.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	sub := subscribe() // the coordinator is back (its subscription with it)
	defer sub.Unsubscribe()

	// The worker notices the drop: what it cuts meanwhile is held.
	w.cut()
	now = 500 * s
	w.jobs.JobEvent(495*s, jobs.Event{Kind: jobs.EvResult, Job: 7, Peer: 9})
	if seq := w.sendJobs(false); seq != 2 {
		t.Fatalf("second batch Seq %d", seq)
	}
	// Worker 0's peer owned the job, queued it and ran it.
	m.add(&JobBatch{Index: 0, Seq: 1, Through: 520 * s, Items: []JobItem{
		ev(471400*time.Millisecond, jobs.EvOwned, 2), ev(471600*time.Millisecond, jobs.EvQueued, 2),
		ev(472*s, jobs.EvStarted, 2), ev(490*s, jobs.EvCompleted, 2),
	}})

	// The server is back: the coordinator asks the worker to resume,
	// naming the first batch it lacks from it (Coordinator.resume).
	if next := m.next(1); next != 1 {
		t.Fatalf("the merge lacks worker 1's batch %d, want 1", next)
	}
	if rep := w.resume(m.next(1)); rep.Err != "" {
		t.Fatalf("resume: %s", rep.Err)
	}
	if err := w.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if !m.await([]uint64{0, 2}, 5*time.Second) {
		t.Errorf("worker 1's batches 1 and 2 never came (the merge expects %d)", m.next(1))
	}
	if gaps := m.flush(); len(gaps) > 0 {
		t.Errorf("gaps at the end: %q", gaps)
	}
	want := []string{"7m51s:submitted@9", "7m51.4s:owned@2", "7m51.6s:queued@2", "7m52s:started@2", "8m10s:completed@2", "8m15s:result@9"}
	if !slices.Equal(r.got, want) {
		t.Errorf("the ledger heard\n%q\nwant\n%q", r.got, want)
	}
}

// TestJobOutboxAcknowledged: a worker keeps each batch it sent until the
// coordinator names a later one as the first it lacks; those it still
// lacks are sent again, in order.
func TestJobOutboxAcknowledged(t *testing.T) {
	var o jobOutbox
	for seq := uint64(1); seq <= 4; seq++ {
		o.keep(seq, []byte{byte(seq)})
	}
	o.ack(0) // a command that names no batch
	if got := o.unacked(2); !slices.EqualFunc(got, [][]byte{{2}, {3}, {4}}, slices.Equal) {
		t.Errorf("unacked(2) = %v, want batches 2, 3, 4", got)
	}
	o.ack(4)
	if got := o.unacked(1); len(got) != 1 || got[0][0] != 4 {
		t.Errorf("after ack(4), unacked = %v, want batch 4", got)
	}
	o.ack(9)
	if got := o.unacked(0); len(got) != 0 {
		t.Errorf("after ack(9), unacked = %v, want none", got)
	}
}

// TestJobMergeNamesGaps: at the end the merge hands on a batch that came
// after a gap, and says which batches never came.
func TestJobMergeNamesGaps(t *testing.T) {
	r := &recorder{}
	m := newJobMerge(r, 2)
	m.add(&JobBatch{Index: 0, Seq: 1, Through: 10 * time.Second, Final: true})
	m.add(&JobBatch{Index: 1, Seq: 3, Through: 20 * time.Second, Items: []JobItem{ev(15*time.Second, jobs.EvStarted, 3)}})
	if m.next(1) != 1 {
		t.Errorf("next(1) = %d, want 1", m.next(1))
	}
	gaps := m.flush()
	if want := []string{"worker 1: its batches of job events [1 2] never came, their events are not in the ledger"}; !slices.Equal(gaps, want) {
		t.Errorf("gaps %q, want %q", gaps, want)
	}
	if want := []string{"15s:started@3"}; !slices.Equal(r.got, want) {
		t.Errorf("handed on %q, want %q", r.got, want)
	}
}
