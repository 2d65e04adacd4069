package workers_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/workers"
)

// timedCoordinator times the control path of a split run: the setup (from
// the workers' joining to the end of Start: every peer spawned or
// adopted) and each of the oracle's collects.
type timedCoordinator struct {
	*workers.Coordinator
	opened time.Time
	setup  time.Duration

	mu       sync.Mutex
	collects []time.Duration
}

func (d *timedCoordinator) Start() {
	d.Coordinator.Start()
	d.setup = time.Since(d.opened)
}

func (d *timedCoordinator) Collect(ctx context.Context) ([]peer.State, error) {
	t := time.Now()
	s, err := d.Coordinator.Collect(ctx)
	d.mu.Lock()
	d.collects = append(d.collects, time.Since(t))
	d.mu.Unlock()
	return s, err
}

// TestMeasureControlPath measures the setup and the collects of
// examples/quickstart.yaml with GRIDBED_MEASURE_PEERS peers over two
// in-process workers (bootstrap GRIDBED_MEASURE_BOOTSTRAP, direct by
// default): the numbers of docs/BENCHMARKS.md's control-path block. Not
// run unless GRIDBED_MEASURE_PEERS is set.
func TestMeasureControlPath(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GRIDBED_MEASURE_PEERS"))
	if n == 0 {
		t.Skip("set GRIDBED_MEASURE_PEERS to measure")
	}
	boot := os.Getenv("GRIDBED_MEASURE_BOOTSTRAP")
	if boot == "" {
		boot = "direct"
	}
	sc := load(t, "../../examples/quickstart.yaml")
	if err := sc.SetAll("peers.count="+strconv.Itoa(n), "peers.bootstrap="+boot, "duration=3m", "time_scale=2", "oracle.interval=15s"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	var d *timedCoordinator
	open := workers.Opener(ctx, workers.Options{Workers: 2, OnListen: inProcess(ctx, 2, errs)})
	res, err := emulator.Run(ctx, sc, emulator.Options{Workers: func(ws emulator.WorkersSetup) (emulator.Driver, error) {
		c, err := open(ws)
		if err != nil {
			return nil, err
		}
		d = &timedCoordinator{Coordinator: c.(*workers.Coordinator), opened: time.Now()}
		return d, nil
	}})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	s := res.Summary
	var sum, most time.Duration
	for _, c := range d.collects {
		sum += c
		most = max(most, c)
	}
	t.Logf("%d peers (bootstrap %s) over 2 workers: setup %.2f s; %d collects, mean %.3f s, max %.3f s; outcome %s, %d members at the end, kept up %v",
		n, boot, d.setup.Seconds(), len(d.collects), sum.Seconds()/float64(max(1, len(d.collects))), most.Seconds(), s.Outcome, s.Peers.Final, s.Emulator.KeptUp)
}
