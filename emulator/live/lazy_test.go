package live_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/metrics"
)

// driver is what the test needs of either driver (emulator.Driver's
// overlay part; that package's tests import this one's).
type driver interface {
	Spawn(id core.NodeID, point can.Point, slot time.Duration) error
	Start()
	Now() time.Duration
	At(t time.Duration, fn func())
	Join(id core.NodeID, point can.Point) error
	Depart(fail bool) core.NodeID
	WrapBus(wrap func(bus.Bus) bus.Bus)
	AdvanceTo(ctx context.Context, t time.Duration) error
	Collect(ctx context.Context) ([]peer.State, error)
	Close() error
}

// lazyPlan is a run under churn and faults, in emulated time: peers join
// over joinWindow; from churnFrom to churnTo, every churnEvery, a peer
// joins or departs (crashing or leaving, in turn); about a third of the
// peers is cut off from the rest from cutAt to healAt (longer than the
// failure timeout: both sides take the other's zones over, and conflicts
// follow the heal); from churnFrom on 2% of the messages are lost and 1%
// duplicated; delays are exponential (mean 50 ms) with a jitter that
// reorders messages.
type lazyPlan struct {
	peers                        int
	joinWindow                   time.Duration
	churnFrom, churnTo, churnGap time.Duration
	cutAt, healAt, end           time.Duration
}

// lazyRun is what the nodes' checks found.
type lazyRun struct {
	members, peers         int    // members at the end, peers created
	checked, misjudged     uint64 // lists the cache skipped (re-checked), misjudged
	failures, takeovers    uint64
	conflicts, partitioned uint64
	reports                []string
}

// runVerified runs plan on d, every node re-checking its list cache
// (overlay.Config.VerifyLazy; the caller put it in d's overlay config,
// with report as OnMisjudged), and sums the nodes' counters.
func runVerified(t *testing.T, d driver, seed uint64, plan lazyPlan, reports *lazyReports) lazyRun {
	t.Helper()
	defer d.Close()
	var chain *link.Chain
	d.WrapBus(func(inner bus.Bus) bus.Bus {
		chain = link.NewChain(inner, d, seed)
		return chain
	})
	chain.Delay.SetLatency(link.Latency{Dist: link.DistExponential, Mean: 50 * time.Millisecond, Jitter: 20 * time.Millisecond})

	joins := int((plan.churnTo-plan.churnFrom)/plan.churnGap) + 1
	nodes, err := population.Generate(population.Mixed, plan.peers+joins, 3, seed)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plan.peers {
		slot := time.Duration(int64(plan.joinWindow) * int64(i) / int64(plan.peers))
		if err := d.Spawn(core.NodeID(i+1), nodes[i].Point, slot); err != nil {
			t.Fatal(err)
		}
	}
	// Churn runs in the driver's context (At): ids go on in order.
	next, turn := plan.peers, 0
	for at := plan.churnFrom; at <= plan.churnTo; at += plan.churnGap {
		d.At(at, func() {
			turn++
			if turn%2 == 1 && next < len(nodes) {
				next++
				if err := d.Join(core.NodeID(next), nodes[next-1].Point); err != nil {
					t.Errorf("seed %d: join %d: %v", seed, next, err)
				}
				return
			}
			d.Depart(turn%4 == 0)
		})
	}
	third := func(a bus.Address) bool { return (uint64(a)*0x9e3779b97f4a7c15^seed)>>61 < 3 } // ~3/8 of the addresses
	// Loss from the end of the join phase: the initial peers join one
	// after another, and a lost JOIN holds the sequence up for a timeout.
	d.At(plan.churnFrom, func() {
		chain.Loss.SetLoss(0.02)
		chain.Duplicate.SetDuplicate(0.01)
	})
	d.At(plan.cutAt, func() { chain.Partition.Cut("third", third, false) })
	d.At(plan.healAt, func() { chain.Partition.Heal("third") })
	d.Start()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := d.AdvanceTo(ctx, plan.end); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	states, err := d.Collect(ctx)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	r := lazyRun{peers: len(states)}
	for _, s := range states {
		if s.Snapshot.Joined {
			r.members++
		}
		r.checked += s.Status.ListsSkipped
		r.misjudged += s.Status.LazyMisjudged
		r.failures += s.Status.FailuresDetected
		r.takeovers += s.Status.Takeovers
		r.conflicts += s.Status.Conflicts
	}
	r.partitioned = chain.Faults().DroppedPartition
	r.reports = reports.get()
	return r
}

// lazyReports collects misjudgements from the nodes (any goroutine).
type lazyReports struct {
	mu   sync.Mutex
	list []string
}

func (l *lazyReports) add(_ core.NodeID, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) < 5 {
		l.list = append(l.list, what)
	}
}

func (l *lazyReports) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// check asserts that no cached judgement was wrong, and that the run
// exercised what it is meant to: lists skipped (re-checked), failures,
// take-overs, a partition.
func (r lazyRun) check(t *testing.T, what string, seed uint64) {
	t.Helper()
	t.Logf("%s seed %d: %d of %d peers members at the end; %d lists re-checked, %d misjudged; %d failures detected, %d take-overs, %d zone conflicts, %d messages cut by the partition",
		what, seed, r.members, r.peers, r.checked, r.misjudged, r.failures, r.takeovers, r.conflicts, r.partitioned)
	if r.misjudged != 0 {
		t.Errorf("%s seed %d: %d lists the cache would have skipped changed something: %v", what, seed, r.misjudged, r.reports)
	}
	if r.checked == 0 || r.failures == 0 || r.takeovers == 0 || r.partitioned == 0 || 2*r.members < r.peers {
		t.Errorf("%s seed %d: the run did not exercise the cache under faults (%d of %d peers members, %d lists re-checked, %d failures, %d take-overs, %d messages cut)",
			what, seed, r.members, r.peers, r.checked, r.failures, r.takeovers, r.partitioned)
	}
}

// TestLazyListsVerifiedOverNATS: peers that leave heartbeats' lists
// encoded and skip those their cache judges to change nothing (overlay
// onHeartbeat) behave as peers that merge every list — on the emulator
// driver (protoactor actors over embedded NATS, scaled wall clock), under
// churn, a partition that heals, loss, duplication and reordering. The
// live driver is not deterministic, so instead of comparing two runs'
// summaries (TestGoldenExamples and TestLazyHeartbeatsChangeNothing do that on the simulator)
// every node re-checks every list its cache skips
// (overlay.Config.VerifyLazy: merged anyway, the whole state compared)
// and no judgement may have been wrong.
func TestLazyListsVerifiedOverNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a 9-s live run over NATS")
	}
	const seed = 11
	plan := lazyPlan{peers: 100, joinWindow: time.Minute, churnFrom: 2 * time.Minute, churnTo: 12 * time.Minute, churnGap: 20 * time.Second,
		cutAt: 4 * time.Minute, healAt: 8 * time.Minute, end: 16 * time.Minute}
	scale := 60.0
	var reports lazyReports
	cfg := overlay.Config{HeartbeatPeriod: 30 * time.Second, VerifyLazy: true, OnMisjudged: reports.add}
	d, err := live.New(live.Options{Seed: seed, TimeScale: scale, Overlay: cfg, Metrics: metrics.NewRun(metrics.RunInfo{Driver: "emulator"})})
	if err != nil {
		t.Fatal(err)
	}
	r := runVerified(t, d, seed, plan, &reports)
	if n := d.Panics(); n != 0 {
		t.Errorf("seed %d: %d messages panicked in a peer", seed, n)
	}
	r.check(t, "emulator", seed)
}

// TestLazyListsVerifiedInSimulator: the same check on the deterministic
// driver, over many seeds and every heartbeat mode.
func TestLazyListsVerifiedInSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	plan := lazyPlan{peers: 120, joinWindow: time.Minute, churnFrom: 2 * time.Minute, churnTo: 14 * time.Minute, churnGap: 10 * time.Second,
		cutAt: 4 * time.Minute, healAt: 8 * time.Minute, end: 20 * time.Minute}
	for _, mode := range overlay.HeartbeatModes {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", mode, seed), func(t *testing.T) {
				var reports lazyReports
				cfg := overlay.Config{HeartbeatPeriod: 30 * time.Second, Mode: mode, VerifyLazy: true, OnMisjudged: reports.add}
				d := sim.NewDriver(sim.DriverOptions{Seed: seed, Overlay: cfg})
				runVerified(t, d, seed, plan, &reports).check(t, mode.String(), seed)
			})
		}
	}
}
