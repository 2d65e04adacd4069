package workers_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/workers"
)

func load(t *testing.T, path string) scenario.Scenario {
	t.Helper()
	return emutest.Load(t, path)
}

// inProcess starts n workers as goroutines of the test, joining the
// coordinator at the URL it is given; their errors arrive on the channel.
func inProcess(ctx context.Context, n int, errs chan<- error) func(url string) error {
	return func(url string) error {
		for range n {
			go func() { errs <- workers.Work(ctx, url, workers.WorkerOptions{}) }()
		}
		return nil
	}
}

// runOn runs sc split over n workers started by start.
func runOn(t *testing.T, sc scenario.Scenario, n int, start func(url string) error) *emulator.Result {
	t.Helper()
	cores.Hold(t, cores.Process)
	ctx, cancel := context.WithTimeout(context.Background(), emutest.LiveTimeout(sc))
	defer cancel()
	res, err := emulator.Run(ctx, sc, emulator.Options{Workers: workers.Opener(ctx, workers.Options{Workers: n, OnListen: start})})
	if err != nil {
		t.Fatalf("seed %d, %d workers: %v", sc.Seed, n, err)
	}
	return res
}

// runInProcess runs sc over n workers started as goroutines of the test
// and reports any worker's error. A run the busy machine overloaded is
// run again at half the time scale (emutest.Retry).
func runInProcess(t *testing.T, sc scenario.Scenario, n int) *emulator.Result {
	t.Helper()
	res, _ := emutest.Retry(t, sc, func(sc scenario.Scenario) *emulator.Result { return runInProcessOnce(t, sc, n) })
	return res
}

func runInProcessOnce(t *testing.T, sc scenario.Scenario, n int) *emulator.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, n)
	res := runOn(t, sc, n, inProcess(ctx, n, errs))
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	return res
}

// runOneProcess runs sc in this process on the emulator driver, the run
// a split one is compared with (again at half the time scale when the
// machine overloaded it: emutest.Retry).
func runOneProcess(t *testing.T, sc scenario.Scenario) emulator.Summary {
	t.Helper()
	return runOneProcessResult(t, sc).Summary
}

// runOneProcessResult is runOneProcess's whole result.
func runOneProcessResult(t *testing.T, sc scenario.Scenario) *emulator.Result {
	t.Helper()
	res, _ := emutest.Retry(t, sc, func(sc scenario.Scenario) *emulator.Result {
		cores.Hold(t, cores.Live)
		ctx, cancel := context.WithTimeout(context.Background(), emutest.LiveTimeout(sc))
		defer cancel()
		res, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverLive})
		if err != nil {
			t.Fatalf("seed %d, one process: %v", sc.Seed, err)
		}
		return res
	})
	return res
}

// onTwoAndOne runs sc on two in-process workers and in one process
// and hands each summary, named, to each.
func onTwoAndOne(t *testing.T, sc scenario.Scenario, each func(name string, s emulator.Summary)) (two, one emulator.Summary) {
	t.Helper()
	two = runInProcess(t, sc, 2).Summary
	one = runOneProcess(t, sc)
	each("2 workers", two)
	each("1 process", one)
	return two, one
}

// livePassed: the run passed. A run that could not keep up with its
// time scale stops the test with the outcome and its reasons
// (emutest.Live); under the race detector, whose instrumented actors may
// fall behind by themselves, an overloaded outcome is logged and every
// protocol invariant must still hold.
func livePassed(t *testing.T, seed uint64, s emulator.Summary) {
	t.Helper()
	emutest.Live(t, s)
	switch s.Outcome {
	case emulator.OutcomePassed:
	case emulator.OutcomeOverloaded:
		for _, r := range s.OutcomeReasons {
			if !strings.HasPrefix(r, "kept_up:") && !strings.HasPrefix(r, "run_completed:") {
				t.Errorf("seed %d: outcome overloaded, and also: %s", seed, r)
			}
		}
	default:
		t.Errorf("seed %d: outcome %s: %v", seed, s.Outcome, s.OutcomeReasons)
	}
}

// within: a (2 workers) and b (1 process) differ by at most tol of the
// larger; false after an error saying by how much.
func within(t *testing.T, seed uint64, what string, a, b, tol float64) bool {
	t.Helper()
	if math.Abs(a-b) > tol*math.Max(a, b) {
		t.Errorf("seed %d: %s: 2 workers %.3f vs 1 process %.3f differ by more than %.0f%%", seed, what, a, b, 100*tol)
		return false
	}
	return true
}

// TestTwoWorkersInProcess: a small quickstart over two workers running
// as goroutines builds a consistent overlay and passes.
func TestTwoWorkersInProcess(t *testing.T) {
	sc := load(t, "../../examples/quickstart.yaml")
	sc.Peers.Count, sc.Duration = 120, 4*time.Minute
	sc.TimeScale = 35 // 6× headroom here over two workers (the example's 60: 3.5×)
	s := runInProcess(t, sc, 2).Summary
	livePassed(t, sc.Seed, s)
	if s.Peers.Final != sc.Peers.Count || s.Overlay.ZoneGaps != 0 || s.Overlay.ZoneOverlaps != 0 {
		t.Errorf("seed %d: %d of %d peers, gaps %d overlaps %d", sc.Seed, s.Peers.Final, sc.Peers.Count, s.Overlay.ZoneGaps, s.Overlay.ZoneOverlaps)
	}
	t.Logf("summary: outcome %s peers %d neighbors %.2f msgs %d accounting %+v", s.Outcome, s.Peers.Final, s.Overlay.NeighborsMean, s.Messages.Total, s.Accounting)
	checkCosts(t, sc.Seed, s, 2, true)
}

// checkCosts: the summary's workers block names n live workers whose
// peers add up to the run's, each with its CPU time and cores, and
// cpu_seconds_all counts each process once (a worker in the test's
// process, inProcess, shares the coordinator's CPU time and is not
// added).
func checkCosts(t *testing.T, seed uint64, s emulator.Summary, n int, inProcess bool) {
	t.Helper()
	w := s.Workers
	if w == nil || s.Emulator == nil {
		t.Fatalf("seed %d: no workers block (or no emulator block) in a split run's summary", seed)
	}
	if w.Count != n || len(w.Processes) != n {
		t.Fatalf("seed %d: workers block count %d with %d processes, want %d", seed, w.Count, len(w.Processes), n)
	}
	peers := 0
	for _, p := range w.Processes {
		peers += p.Peers
		if !p.Alive || p.CPUSeconds <= 0 || p.Cores < 1 || p.PID == 0 || p.InProcess != inProcess {
			t.Errorf("seed %d: worker %d: %+v, want alive with CPU time, cores and pid, in_process %v", seed, p.Worker, p, inProcess)
		}
	}
	if peers != s.Peers.Started {
		t.Errorf("seed %d: the workers hosted %d peers, the run started %d", seed, peers, s.Peers.Started)
	}
	c := w.Coordinator
	if c.CPUSeconds != s.Emulator.CPUSeconds || c.Cores < 1 {
		t.Errorf("seed %d: coordinator %+v, want emulator.cpu_seconds %g", seed, c, s.Emulator.CPUSeconds)
	}
	sum := c.CPUSeconds
	for _, p := range w.Processes {
		if !p.InProcess {
			sum += p.CPUSeconds
		}
	}
	if w.CPUSecondsAll < c.CPUSeconds || math.Abs(w.CPUSecondsAll-sum) > 1e-9 {
		t.Errorf("seed %d: cpu_seconds_all %g, want the coordinator's %g plus the separate workers' = %g", seed, w.CPUSecondsAll, c.CPUSeconds, sum)
	}
	for _, p := range w.Processes {
		t.Logf("worker %d: %d peers, %.2f s CPU, %d cores, pid %d, in process %v", p.Worker, p.Peers, p.CPUSeconds, p.Cores, p.PID, p.InProcess)
	}
	t.Logf("coordinator %.2f s CPU, all processes %.2f s, hosts %+v, suggested time scale %g", c.CPUSeconds, w.CPUSecondsAll, w.Hosts, s.Emulator.SuggestedTimeScale)
}

// TestChaosOnTwoWorkers: examples/chaos.yaml (overlay built in-process,
// link latency, a partition and its heal, a crash of a fifth, latency
// spikes) passes on two workers (strictly when the machine keeps up: the
// command-line run in docs/BENCHMARKS.md did), its books close, and every
// fault of its timeline was applied. 45 emulated minutes at ×30: 90 s,
// with 250 of the example's 500 peers (500 had 2.5× headroom here; a live
// test wants 5×).
func TestChaosOnTwoWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90 s emulator run")
	}
	sc := load(t, "../../examples/chaos.yaml")
	sc.Peers.Count = 250
	res := runInProcess(t, sc, 2)
	s := res.Summary
	if s.Accounting.Unaccounted != 0 {
		t.Errorf("seed %d: %d messages unaccounted", sc.Seed, s.Accounting.Unaccounted)
	}
	if slices.ContainsFunc(s.OutcomeReasons, func(r string) bool { return strings.HasPrefix(r, "run_completed:") }) {
		// Beside the rest of the test suite on two cores the overload
		// guard may stop the run (two workers cost three times one
		// process's CPU): a stopped run is not judged — its books are.
		t.Logf("seed %d: the machine could not keep up and the run was stopped: %v", sc.Seed, s.OutcomeReasons)
		return
	}
	livePassed(t, sc.Seed, s)
	if s.Faults.Dropped["partition"] == 0 || s.Faults.Delayed == 0 {
		t.Errorf("seed %d: partition drops %d, delayed %d: the workers' link layers did not act", sc.Seed, s.Faults.Dropped["partition"], s.Faults.Delayed)
	}
	if want := len(sc.Faults); len(s.Faults.Events) != want {
		t.Errorf("seed %d: %d fault events, want %d: %+v", sc.Seed, len(s.Faults.Events), want, s.Faults.Events)
	}
	t.Logf("outcome %s; faults %+v; peers final %d; accounting unaccounted %d", s.Outcome, s.Faults.Dropped, s.Peers.Final, s.Accounting.Unaccounted)
}

// TestCollectInManyChunks: with chunks of 2 KB the oracle's collect
// gathers every worker's states in several chunks each (about 130 bytes
// a state, 60 states a worker), and the run is the one a collect in one
// chunk gives: every peer a member, the overlay exact.
func TestCollectInManyChunks(t *testing.T) {
	sc := load(t, "../../examples/quickstart.yaml")
	sc.Peers.Count, sc.Duration = 120, 4*time.Minute
	sc.TimeScale = 35 // 6× headroom here over two workers (the example's 60: 3.5×)
	var coord *workers.Coordinator
	res, _ := emutest.Retry(t, sc, func(sc scenario.Scenario) *emulator.Result {
		cores.Hold(t, cores.Process)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errs := make(chan error, 2)
		open := workers.Opener(ctx, workers.Options{Workers: 2, OnListen: inProcess(ctx, 2, errs), ChunkBytes: 2048})
		res, err := emulator.Run(ctx, sc, emulator.Options{Workers: func(ws emulator.WorkersSetup) (emulator.Driver, error) {
			d, err := open(ws)
			coord, _ = d.(*workers.Coordinator)
			return d, err
		}})
		if err != nil {
			t.Fatalf("seed %d: %v", sc.Seed, err)
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("worker: %v", err)
			}
		}
		return res
	})
	s := res.Summary
	livePassed(t, sc.Seed, s)
	if s.Peers.Final != sc.Peers.Count || s.Overlay.ZoneGaps != 0 || s.Overlay.ZoneOverlaps != 0 {
		t.Errorf("seed %d: %d of %d peers, gaps %d overlaps %d", sc.Seed, s.Peers.Final, sc.Peers.Count, s.Overlay.ZoneGaps, s.Overlay.ZoneOverlaps)
	}
	// At least one collect per sample, and the last one, over 2 workers.
	collects := 2 * (len(res.Series) + 1)
	if got := coord.CollectChunks(); got < uint64(3*collects) {
		t.Errorf("seed %d: %d chunks for %d samples over 2 workers: want several per collect", sc.Seed, got, len(res.Series))
	}
	t.Logf("%d chunks for %d samples", coord.CollectChunks(), len(res.Series))
}
