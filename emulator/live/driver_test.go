package live_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/oracle"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/metrics"
)

// What the emulator driver promises, each on a small overlay over an
// embedded NATS server at a scaled wall clock: peers spawned in order join
// one after another; At runs at emulated times, also when scheduled before
// Start; a departed peer stops (its messages become unroutable, the oracle
// sees it gone) and the overlay closes over it; the client's jobs reach
// the peers and come back; Collect answers for every peer or says why
// not; Close halts everything and settles every message.

const (
	tScale  = 60.0 // emulated seconds per wall second
	tPeriod = 10 * time.Second
	tDims   = 3
)

// sink records what the job cores tell the oracle (any goroutine).
type sink struct {
	mu     sync.Mutex
	joined []core.NodeID
	events []jobs.Event
}

func (s *sink) JobEvent(_ time.Duration, e jobs.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}
func (s *sink) QueueLen(core.NodeID, int)      {}
func (s *sink) Residual(core.NodeID, jobs.Vec) {}
func (s *sink) NodeJoined(id core.NodeID, _ can.Point, _ float64, _ int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joined = append(s.joined, id)
}

func (s *sink) joins() []core.NodeID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.joined)
}

func (s *sink) count(k jobs.EventKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// newDriver opens a driver whose peers have a job core reporting to the
// returned sink.
func newDriver(t *testing.T, seed uint64) (*live.Driver, *sink) {
	t.Helper()
	s := &sink{}
	setup := &peer.JobSetup{
		Config: func(can.Point) jobs.Config {
			return jobs.Config{Period: tPeriod, Speed: 1, Cores: 1}
		},
		Sink: s,
	}
	d, err := live.New(live.Options{Seed: seed, TimeScale: tScale, Overlay: overlay.Config{HeartbeatPeriod: tPeriod},
		Metrics: metrics.NewRun(metrics.RunInfo{Driver: "emulator"}), Jobs: setup})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Cleanup(func() { d.Close() })
	return d, s
}

// spawn spawns n peers of a mixed population, one emulated second apart.
func spawn(t *testing.T, d *live.Driver, seed uint64, n int) []population.Node {
	t.Helper()
	nodes, err := population.Generate(population.Mixed, n, tDims, seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, nd := range nodes {
		if err := d.Spawn(core.NodeID(i+1), nd.Point, time.Duration(i)*time.Second); err != nil {
			t.Fatalf("seed %d: spawn %d: %v", seed, i+1, err)
		}
	}
	return nodes
}

// poll waits until cond holds, failing the test after a minute of wall time.
func poll(t *testing.T, seed uint64, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("seed %d: %s: still not so after a minute", seed, what)
		case <-tick.C:
		}
	}
}

// collect asks every peer for its state (at most a minute).
func collect(t *testing.T, d *live.Driver, seed uint64) []peer.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	states, err := d.Collect(ctx)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return states
}

// exact reports whether the members' zones tile the space with exact
// tables, and how many members there are.
func exact(t *testing.T, d *live.Driver, seed uint64, dims int) (bool, int) {
	snaps := make([]overlay.Snapshot, 0)
	for _, s := range collect(t, d, seed) {
		snaps = append(snaps, s.Snapshot)
	}
	r := oracle.Check(snaps, dims)
	return r.Exact() && r.StaleLinks == 0, r.Members
}

func allMembers(d *live.Driver, n int) bool {
	for id := 1; id <= n; id++ {
		if !d.Member(core.NodeID(id)) {
			return false
		}
	}
	return true
}

// TestSpawnJoinsInOrderAndCollects: peers spawned in id order join one
// after another once Start has started the clock, Collect answers for
// each, and the overlay is exact; a peer spawned out of order is refused.
func TestSpawnJoinsInOrderAndCollects(t *testing.T) {
	const seed, n = 1, 12
	d, s := newDriver(t, seed)
	nodes := spawn(t, d, seed, n)
	if err := d.Spawn(n+2, nodes[0].Point, 0); err == nil {
		t.Fatalf("seed %d: peer %d spawned after %d", seed, n+2, n)
	}
	if d.Member(1) {
		t.Fatalf("seed %d: a member before Start", seed)
	}
	d.Start()
	poll(t, seed, "every peer a member", func() bool { return allMembers(d, n) })
	if d.Alive() != n {
		t.Fatalf("seed %d: %d alive, want %d", seed, d.Alive(), n)
	}
	want := make([]core.NodeID, n)
	for i := range want {
		want[i] = core.NodeID(i + 1)
	}
	if got := s.joins(); !slices.Equal(got, want) {
		t.Fatalf("seed %d: joined in the order %v, want %v", seed, got, want)
	}
	states := collect(t, d, seed)
	if len(states) != n {
		t.Fatalf("seed %d: %d states for %d peers", seed, len(states), n)
	}
	dims := len(nodes[0].Point)
	poll(t, seed, "an exact overlay", func() bool { ok, m := exact(t, d, seed, dims); return ok && m == n })
	if p := d.Panics(); p != 0 {
		t.Fatalf("seed %d: %d panics", seed, p)
	}
}

// TestAtRunsAtEmulatedTime: functions scheduled with At run no earlier
// than their emulated time, those scheduled before Start too, and
// AdvanceTo returns once the clock has reached its time.
func TestAtRunsAtEmulatedTime(t *testing.T) {
	const seed = 2
	d, _ := newDriver(t, seed)
	spawn(t, d, seed, 2)
	type ran struct{ at, now time.Duration }
	var mu sync.Mutex
	var got []ran
	at := func(when time.Duration) {
		d.At(when, func() {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ran{when, d.Now()})
		})
	}
	at(20 * time.Second) // before Start: held until the clock restarts
	d.Start()
	at(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.AdvanceTo(ctx, 30*time.Second); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if now := d.Now(); now < 30*time.Second {
		t.Fatalf("seed %d: AdvanceTo(30s) returned at emulated %v", seed, now)
	}
	poll(t, seed, "both functions ran", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if got[0].at != 10*time.Second || got[1].at != 20*time.Second {
		t.Fatalf("seed %d: ran in the order %+v, want 10s then 20s", seed, got)
	}
	for _, r := range got {
		if r.now < r.at {
			t.Fatalf("seed %d: a function due at %v ran at emulated %v", seed, r.at, r.now)
		}
	}
}

// TestDepartStopsPeers: a crashed peer is no member, the oracle sees it
// gone, messages to it count as unroutable, and its neighbors take its
// zone over; a peer that leaves hands its zone on; DepartPicked stops
// exactly the members picked.
func TestDepartStopsPeers(t *testing.T) {
	const seed, n = 3, 10
	d, _ := newDriver(t, seed)
	nodes := spawn(t, d, seed, n)
	dims := len(nodes[0].Point)
	d.Start()
	poll(t, seed, "every peer a member", func() bool { return allMembers(d, n) })

	crashed := d.Depart(true)
	if crashed == 0 || d.Member(crashed) || d.Alive() != n-1 {
		t.Fatalf("seed %d: crashed %d, member %v, %d alive", seed, crashed, d.Member(crashed), d.Alive())
	}
	for _, s := range collect(t, d, seed) {
		if s.Snapshot.ID == crashed && s.Snapshot.Joined {
			t.Fatalf("seed %d: the oracle sees crashed peer %d as a member", seed, crashed)
		}
	}
	poll(t, seed, "messages to the crashed peer unroutable", func() bool { return d.BusStats().Unroutable > 0 })
	poll(t, seed, "the overlay exact without the crashed peer", func() bool { ok, m := exact(t, d, seed, dims); return ok && m == n-1 })

	left := d.Depart(false)
	if left == 0 || left == crashed || d.Member(left) {
		t.Fatalf("seed %d: left %d (crashed %d), member %v", seed, left, crashed, d.Member(left))
	}
	poll(t, seed, "the overlay exact without the leaver", func() bool { ok, m := exact(t, d, seed, dims); return ok && m == n-2 })

	var offered []core.NodeID
	picked := d.DepartPicked(func(members []core.NodeID) []core.NodeID {
		offered = members
		return members[:2]
	}, true)
	if len(offered) != n-2 || !slices.IsSorted(offered) || slices.Contains(offered, crashed) || slices.Contains(offered, left) {
		t.Fatalf("seed %d: offered %v, want the %d members in order", seed, offered, n-2)
	}
	if !slices.Equal(picked, offered[:2]) || d.Member(picked[0]) || d.Member(picked[1]) || d.Alive() != n-4 {
		t.Fatalf("seed %d: picked %v of %v, %d alive", seed, picked, offered, d.Alive())
	}
}

// TestClientJobsComeBack: the client's jobs, submitted through the
// driver, are run by the peers and their results reach the client; a
// second client is refused.
func TestClientJobsComeBack(t *testing.T) {
	const seed, n, count = 4, 6, 5
	d, s := newDriver(t, seed)
	nodes := spawn(t, d, seed, n)
	if err := d.AddClient(jobs.ClientConfig{Timeout: 10 * time.Minute}); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if err := d.AddClient(jobs.ClientConfig{Timeout: 10 * time.Minute}); err == nil {
		t.Fatalf("seed %d: a second client was added", seed)
	}
	d.Start()
	poll(t, seed, "every peer a member", func() bool { return allMembers(d, n) })
	for id := uint64(1); id <= count; id++ {
		d.Submit(&wire.JobSpec{Id: id, Req: make([]uint32, len(nodes[0].Point)), Work: int64(20 * time.Second)})
	}
	poll(t, seed, "every job's result at the client", func() bool { return s.count(jobs.EvResult) == count })
	if c := s.count(jobs.EvCompleted); c != count {
		t.Fatalf("seed %d: %d completions for %d jobs", seed, c, count)
	}
}

// TestCollectAndClose: Collect with an ended context asks no peer and says
// so; Close halts every peer, leaves no message in a mailbox (nor any in
// the count by type), and may be called again.
func TestCollectAndClose(t *testing.T) {
	const seed, n = 5, 4
	d, _ := newDriver(t, seed)
	spawn(t, d, seed, n)
	d.Start()
	poll(t, seed, "every peer a member", func() bool { return allMembers(d, n) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if states, err := d.Collect(ctx); err == nil || len(states) != 0 {
		t.Fatalf("seed %d: Collect with an ended context: %d states, error %v", seed, len(states), err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if s := d.Settlement(); s.Mailbox != 0 {
		t.Fatalf("seed %d: %d messages left in mailboxes after Close: %+v", seed, s.Mailbox, s)
	}
	// The mailboxes' count by message type comes out even with the total.
	if p := d.Pressure(); p.Backlog != 0 || p.Waiting != nil {
		t.Fatalf("seed %d: after Close the pressure still counts %d waiting, by type %v", seed, p.Backlog, p.Waiting)
	}
	if st := d.BusStats(); st.Published == 0 {
		t.Fatalf("seed %d: no message published: %+v", seed, st)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("seed %d: second Close: %v", seed, err)
	}
}
