// Package emutest is the test kit of gridbed's end-to-end tests: scenario
// builders (a YAML document or an example file with --set overrides), a
// run helper that fails with the seed and driver, checks every job's
// history and judges a live run's outcome before the test does, and the
// job-conservation checks (docs/JOBS.md). It is imported by tests only.
//
// The fakes the bus decorators' tests share are in emulator/bus/bustest,
// which imports nothing of the emulator (faults' own tests use it).
package emutest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// Parse parses a scenario written as YAML — doc formatted with args as by
// fmt.Sprintf when args are given — under the file name name; on an error
// the test stops with the document.
func Parse(t testing.TB, name, doc string, args ...any) scenario.Scenario {
	t.Helper()
	if len(args) > 0 {
		doc = fmt.Sprintf(doc, args...)
	}
	sc, err := scenario.Parse(name, []byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return sc
}

// Load reads a scenario file (an example: "../examples/quickstart.yaml")
// and applies --set overrides to it (key=value).
func Load(t testing.TB, path string, sets ...string) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	Set(t, &sc, sets...)
	return sc
}

// Set applies --set overrides (key=value) to sc.
func Set(t testing.TB, sc *scenario.Scenario, sets ...string) {
	t.Helper()
	if err := sc.SetAll(sets...); err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
}

// Timeout bounds one run of Run and RunWith.
const Timeout = 5 * time.Minute

// Run runs sc on driver (emulator.DriverSim or DriverLive) as RunWith
// does.
func Run(t testing.TB, sc scenario.Scenario, driver string) *emulator.Result {
	t.Helper()
	return RunWith(t, sc, emulator.Options{Driver: driver})
}

// RunWith runs sc with opts within Timeout, stops the test on an error
// (with the seed and driver), checks every job's history
// (CheckJobHistories) and judges a live run's outcome first (Live).
//
// A live run that came out overloaded says nothing about the code, only
// that the machine was busy: RunWith logs its outcome and reasons and runs
// the same scenario again at half its time scale (Slower), up to
// Retries times, so that the test's assertions judge a run that kept up.
// Only when the slowest run too fell behind does Live stop the test, with
// that outcome first. Under the race detector an overloaded run is judged
// as it is (Live).
func RunWith(t testing.TB, sc scenario.Scenario, opts emulator.Options) *emulator.Result {
	t.Helper()
	if opts.Driver != emulator.DriverLive {
		res := runOnce(t, sc, opts)
		CheckJobHistories(t, res)
		return res
	}
	res, _ := Retry(t, sc, func(sc scenario.Scenario) *emulator.Result { return runOnce(t, sc, opts) })
	Live(t, res.Summary)
	CheckJobHistories(t, res)
	return res
}

// Retry runs a live run, run(sc), and while its outcome is overloaded —
// the machine was busy, which says nothing about the code — logs the
// outcome and its reasons and runs it again at 1/Slower of the time
// scale, at most Retries times. It returns the last run and the scenario
// that made it (its time scale is the one that ran); the caller judges it
// with Live, which stops the test, outcome first, if even the slowest run
// fell behind. Under the race detector a run is not run again (Live
// judges what a late run still shows).
func Retry(t testing.TB, sc scenario.Scenario, run func(scenario.Scenario) *emulator.Result) (*emulator.Result, scenario.Scenario) {
	t.Helper()
	for try := 0; ; try++ {
		res := run(sc)
		if res.Summary.Outcome != emulator.OutcomeOverloaded || Race || try == Retries {
			return res, sc
		}
		t.Logf("seed %d: outcome overloaded at time scale %g (%s): the machine was busy; running it again at time scale %g",
			sc.Seed, sc.TimeScale, strings.Join(res.Summary.OutcomeReasons, "; "), sc.TimeScale/Slower)
		sc.TimeScale /= Slower
	}
}

// LiveTimeout bounds one live run of sc: Timeout, or four times its wall
// duration (duration / time_scale) when that is longer — a run Retry
// slowed down takes longer on the wall clock.
func LiveTimeout(sc scenario.Scenario) time.Duration {
	if sc.TimeScale <= 0 {
		return Timeout
	}
	return max(Timeout, 4*time.Duration(float64(sc.Duration)/sc.TimeScale))
}

// Retries is how many times RunWith runs an overloaded live run again,
// each time Slower times slower.
const Retries = 2

// Slower divides a live run's time scale when RunWith runs it again.
const Slower = 2

func runOnce(t testing.TB, sc scenario.Scenario, opts emulator.Options) *emulator.Result {
	t.Helper()
	timeout, share := Timeout, cores.Sim
	if opts.Driver == emulator.DriverLive {
		timeout, share = LiveTimeout(sc), cores.Live
	}
	// The run's share of the machine's cores, for as long as it runs:
	// a live run must find a core free when its timers fire.
	cores.Hold(t, share)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := emulator.Run(ctx, sc, opts)
	if err != nil {
		t.Fatalf("seed %d, driver %s: %v", sc.Seed, opts.Driver, err)
	}
	return res
}

// HeadroomEnv names the variable that makes Live fail a run whose
// measured headroom (the time scale the run suggests over the one it ran
// at) is below its value: GRIDBED_HEADROOM=5 go test ./... finds the live
// tests that would fall behind on a machine five times busier. Unset, the
// headroom is logged only: whether a machine keeps up is a benchmark's
// question, not a test's.
const HeadroomEnv = "GRIDBED_HEADROOM"

// Live judges a live-driver run before its test looks at the figures.
// A run that could not keep up with its time scale (outcome overloaded)
// has distorted figures, so the test stops there with the outcome and its
// reasons — not with whichever assertion the late actors broke first.
// Under the race detector (Race) the instrumented actors may fall behind
// by themselves: the outcome is logged and the test goes on, judging what
// a late run still shows (as ConservedOverNATS does).
func Live(t testing.TB, s emulator.Summary) {
	t.Helper()
	e := s.Emulator
	if e != nil {
		t.Logf("seed %d: live run at time scale %g, suggested %.3g: headroom %.1f× (lag p99 %.3g s emulated of %.3g s allowed; %.3g CPU s per emulated s on %d cores)",
			s.Seed, s.TimeScale, e.SuggestedTimeScale, e.SuggestedTimeScale/s.TimeScale, e.LagP99EmulatedSeconds, e.LagToleranceSeconds, e.CPUPerEmulatedSecond, e.Cores)
	}
	if s.Outcome == emulator.OutcomeOverloaded {
		msg := fmt.Sprintf("seed %d: outcome overloaded at time scale %g: %s", s.Seed, s.TimeScale, strings.Join(s.OutcomeReasons, "; "))
		if Race {
			t.Logf("%s (under the race detector: the test judges what a late run still shows)", msg)
			return
		}
		t.Fatalf("%s — the machine fell behind the run's time scale, so its figures say nothing about the code; run it on a quieter machine or lower the test's time_scale", msg)
	}
	if want, err := strconv.ParseFloat(os.Getenv(HeadroomEnv), 64); err == nil && e != nil && !Race && e.SuggestedTimeScale < want*s.TimeScale {
		t.Errorf("seed %d: headroom %.1f× (time scale %g, suggested %.3g), want at least %g× (%s)", s.Seed, e.SuggestedTimeScale/s.TimeScale, s.TimeScale, e.SuggestedTimeScale, want, HeadroomEnv)
	}
}

// CheckJobHistories runs the job-history checker over a run with a
// workload (Run does): every job's events follow the job's state machine
// (ledger.Check), else the test stops with the offending histories.
func CheckJobHistories(t testing.TB, res *emulator.Result) {
	t.Helper()
	if err := res.CheckJobs(); err != nil {
		t.Fatalf("seed %d, driver %s: %v", res.Summary.Seed, res.Summary.Driver, err)
	}
}

// Conserved asserts the job-conservation invariant: every job ended
// exactly once or is still held by a live peer (unfinished), none lost or
// run twice; with drained set, every job ended.
func Conserved(t testing.TB, name string, seed uint64, j *emulator.JobsSummary, drained bool) {
	t.Helper()
	if j == nil {
		t.Fatalf("%s seed %d: no jobs section", name, seed)
	}
	if j.Lost != 0 || j.Duplicated != 0 || drained && j.Unfinished != 0 || j.Completed+j.Failed+j.Unfinished != j.Submitted || j.Submitted == 0 {
		t.Errorf("%s seed %d: jobs %d submitted, %d completed, %d failed, %d unfinished, %d lost, %d duplicated; anomalies %+v",
			name, seed, j.Submitted, j.Completed, j.Failed, j.Unfinished, j.Lost, j.Duplicated, j.Anomalies)
	}
	for reason := range j.FailedBy {
		if reason != "no capable node found" {
			t.Errorf("%s seed %d: jobs failed for %q", name, seed, reason)
		}
	}
}

// ConservedOverNATS is Conserved for a run on the emulator driver, with at
// least minDone jobs completed (and, with drained, none unfinished). When
// the run kept up with its time scale the check is strict. When it did
// not — which only a race-detector run reaches, Live having stopped any
// other — owners take run nodes that are only late for failed and match
// their jobs again: no job may be lost and the books must balance, but a
// job may complete twice after such a recovery step (the history checker,
// run by Run, allows only that), fewer may complete, and a client may give
// up; they are logged, not failed.
func ConservedOverNATS(t testing.TB, s emulator.Summary, minDone uint64, drained bool) {
	t.Helper()
	if e := s.Emulator; e != nil && e.KeptUp {
		Conserved(t, "emulator", s.Seed, s.Jobs, drained)
		if s.Jobs.Completed < minDone {
			t.Errorf("seed %d: only %d of %d jobs completed", s.Seed, s.Jobs.Completed, s.Jobs.Submitted)
		}
		return
	}
	j := s.Jobs
	if j == nil || j.Submitted == 0 || j.Lost != 0 || j.Completed+j.Failed+j.Unfinished+j.Lost != j.Submitted {
		t.Fatalf("seed %d (did not keep up): jobs %+v", s.Seed, j)
	}
	if s.Outcome != emulator.OutcomeOverloaded {
		t.Errorf("seed %d: a run that did not keep up has outcome %q", s.Seed, s.Outcome)
	}
	t.Logf("seed %d: the emulator did not keep up (%s): %d submitted, %d completed, %d failed %v, %d unfinished, %d duplicated after re-matching live run nodes",
		s.Seed, s.Emulator.LagJudged, j.Submitted, j.Completed, j.Failed, j.FailedBy, j.Unfinished, j.Duplicated)
}

// SkipUnderRace skips a test of the deterministic driver alone when it
// runs under the race detector: such a run is one goroutine — its event
// loop, every peer's cores and the oracle — so the detector has nothing
// to find in it and only makes it ten or more times slower. The fast tier
// without -race runs it; why names the run.
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if Race {
		t.Skip("race pass: " + why + " on the deterministic driver, one goroutine, nothing for the race detector (go test -short runs it)")
	}
}
