package schemes_test

import (
	"testing"

	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// categoricalScenario is jobsScenario with 002 §5.2.1's categorical
// setup: four types of two values (16 combinations, equally many peers in
// each), 62.5% exact-match jobs and the rest don't care.
func categoricalScenario(t *testing.T, seed uint64, scheme, mode, extra string) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "categorical.yaml", `
seed: %d
duration: 4h
peers: {count: 100, population: mixed, categorical: {types: 4, values: 2}}
overlay: {dimensions: 3}
link: {latency: {dist: exponential, mean: 50ms}}
workload: {jobs: 300, interarrival: 30s, runtime: 40m, categorical: {exact: 0.625}}
matchmaking: {scheme: %s, categorical: %s}
%s`, seed, scheme, mode, extra)
}

// categoriesRespected asserts the categorical account of a run: every
// completed job ran on a peer whose combination its CID accepts, and
// the jobs_categories invariant says so.
func categoriesRespected(t *testing.T, name string, s emulator.Summary, combinations int) {
	t.Helper()
	c := s.Jobs.Categorical
	if c == nil {
		t.Fatalf("%s seed %d: no jobs.categorical section", name, s.Seed)
	}
	if c.CompletedMismatched != 0 || c.CompletedMatching != s.Jobs.Completed || c.CompletedMatching == 0 {
		t.Errorf("%s seed %d: %d completed, %d on a matching peer, %d on a mismatched one", name, s.Seed, s.Jobs.Completed, c.CompletedMatching, c.CompletedMismatched)
	}
	if c.Combinations != combinations || c.Exact == 0 || c.Any == 0 || c.Exact+c.Range+c.Any != uint64(s.Jobs.Submitted) && s.Jobs.Submitted == 300 {
		t.Errorf("%s seed %d: categorical account %+v", name, s.Seed, c)
	}
	found := false
	for _, chk := range s.Invariants.Checks {
		if chk.Name == "jobs_categories" {
			found = true
			if !chk.OK {
				t.Errorf("%s seed %d: jobs_categories failed: %s", name, s.Seed, chk.Detail)
			}
		}
	}
	if !found {
		t.Errorf("%s seed %d: no jobs_categories invariant", name, s.Seed)
	}
}

// Every completed job ran on a peer whose categorical values it accepts,
// under CID pushing, under pushing that ignores categories (the run node
// still checks them), under sub-CANs (002 §2.4) and under CENT (002
// §5.2's comparison respects them).
func TestCategoricalJobsRunOnMatchingPeers(t *testing.T) {
	t.Parallel() // deterministic-driver runs: one event loop each
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	const seed = 5
	for _, c := range []struct{ scheme, mode string }{{"can-p", "cid"}, {"can-p", "none"}, {"can", "cid"}, {"cent", "none"}, {"can-p", "subcan"}, {"can", "subcan"}} {
		name := c.scheme + "/" + c.mode
		s := emutest.Run(t, categoricalScenario(t, seed, c.scheme, c.mode, ""), emulator.DriverSim).Summary
		emutest.Conserved(t, name, seed, s.Jobs, false)
		categoriesRespected(t, name, s, 16)
		t.Logf("%s: completed %d failed %v unfinished %d hops %.1f wait %.0f pushed %d", name, s.Jobs.Completed, s.Jobs.FailedBy, s.Jobs.Unfinished, *s.Jobs.Matchmaking.HopsMean, *s.Jobs.WaitSeconds.Mean, s.Jobs.Pushed)
	}
}

// Conservation under churn with CID pushing: peers join (with a
// combination of their own) and leave or crash while jobs are matched
// along ACIDs carried on compact heartbeats; no job is lost or run twice,
// and every completed job ran on a matching peer.
func TestCIDConservedUnderChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	for _, seed := range []uint64{3, 4} {
		sc := categoricalScenario(t, seed, "can-p", "cid", "churn: {interval: 20s, start: 10m, stop: 3h}\n")
		if err := sc.SetAll("overlay.heartbeat.mode=compact", "workload.categorical.range=0.375", "workload.categorical.dont_care=0.5"); err != nil {
			t.Fatal(err)
		}
		s := emutest.Run(t, sc, emulator.DriverSim).Summary
		emutest.Conserved(t, "cid/churn", seed, s.Jobs, false)
		categoriesRespected(t, "cid/churn", s, 16)
		if s.Churn.Joins == 0 || s.Churn.Leaves+s.Churn.Failures == 0 {
			t.Errorf("seed %d: churn %+v: no join or no departure", seed, s.Churn)
		}
		if c := s.Jobs.Categorical; c.Range == 0 {
			t.Errorf("seed %d: no range job in %+v", seed, c)
		}
	}
}

// Conservation under churn with sub-CANs (002 §2.4): joining peers take
// their place in their combination's sub-CAN, jobs are routed into a
// sub-CAN they accept and pushed inside those; no job is lost or run
// twice, and every completed job ran on a matching peer.
func TestSubCANConservedUnderChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	for _, seed := range []uint64{3, 4} {
		sc := categoricalScenario(t, seed, "can-p", "subcan", "churn: {interval: 20s, start: 10m, stop: 3h}\n")
		if err := sc.SetAll("overlay.heartbeat.mode=compact", "workload.categorical.range=0.375", "workload.categorical.dont_care=0.5"); err != nil {
			t.Fatal(err)
		}
		res := emutest.Run(t, sc, emulator.DriverSim)
		s := res.Summary
		emutest.Conserved(t, "subcan/churn", seed, s.Jobs, false)
		// A sub-CAN's heartbeats carry no ACID: none is judged wrong.
		if s.Staleness == nil || s.Staleness.Samples == 0 || s.Staleness.ACIDWrongFraction != nil {
			t.Errorf("seed %d: staleness %+v, want the load's errors and no ACID figure under subcan", seed, s.Staleness)
		}
		// Every constrained job is routed into a sub-CAN it accepts.
		tr := categorical.NewTransform(sc.Peers.Categorical.Space())
		routed := 0
		for _, r := range res.Jobs {
			if len(r.Job.CID) == 0 {
				continue
			}
			x := r.Job.Req[len(r.Job.Req)-1]
			if c := tr.CombinationAt(x); !r.Job.CID.Has(c) {
				t.Fatalf("seed %d: job %d (CID %s) routed to T %d, the sub-CAN of combination %d", seed, r.Job.ID, r.Job.CID.String(16), x, c)
			}
			routed++
		}
		if routed == 0 {
			t.Errorf("seed %d: no job with a categorical constraint", seed)
		}
		categoriesRespected(t, "subcan/churn", s, 16)
		if s.Churn.Joins == 0 || s.Churn.Leaves+s.Churn.Failures == 0 {
			t.Errorf("seed %d: churn %+v: no join or no departure", seed, s.Churn)
		}
		if c := s.Jobs.Categorical; c.Range == 0 {
			t.Errorf("seed %d: no range job in %+v", seed, c)
		}
	}
}

// The same over real NATS: ACIDs ride on the actors' heartbeats, jobs are
// pushed along them, and every one ends exactly once on a matching peer.
func TestCIDOverNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a 9-s live run over NATS")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	doc := `
seed: 3
duration: 3h
time_scale: 300
emulator: {lag_tolerance: 0.1}
peers: {count: 40, population: mixed, join_window: 30s, categorical: {types: 2, values: 2}}
overlay: {dimensions: 3}
workload: {jobs: 80, interarrival: 30s, runtime: 20m, start: 5m, categorical: {exact: 0.5, range: 0.25}}
matchmaking: {scheme: can-p, categorical: cid}
faults:
  - {at: 30m, crash: {fraction: 0.1}}
`
	sc := emutest.Parse(t, "cid-nats.yaml", doc)
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	emutest.ConservedOverNATS(t, s, 50, true)
	if c := s.Jobs.Categorical; c == nil || c.CompletedMismatched != 0 || c.CompletedMatching == 0 {
		t.Errorf("seed %d: categorical account %+v", sc.Seed, c)
	}
}

// CID against pushing that ignores categories (002 §5.1.2: "if there is
// no capable node for a particular dimension, we do not attempt to push
// the job along that dimension"): with exact-match jobs only, a job for
// which no reachable peer matches is abandoned after fewer pushes, and
// as many jobs complete.
func TestCIDShortensAbandonedSearches(t *testing.T) {
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	type tally struct{ completed, failed, failedPushes float64 }
	got := map[string]*tally{"cid": {}, "none": {}}
	for _, seed := range []uint64{5, 6, 7} {
		for mode, tl := range got { // independent runs: order does not matter
			sc := categoricalScenario(t, seed, "can-p", mode, "")
			if err := sc.SetAll("workload.categorical.exact=1", "workload.constraint_ratio=0.2", "peers.count=150"); err != nil {
				t.Fatal(err)
			}
			res := emutest.Run(t, sc, emulator.DriverSim)
			emutest.Conserved(t, mode, seed, res.Summary.Jobs, false)
			tl.completed += float64(res.Summary.Jobs.Completed)
			for _, r := range res.Jobs {
				if !r.Record.Failed {
					continue
				}
				tl.failed++
				for _, st := range r.Record.History {
					if st.Event == "pushed" {
						tl.failedPushes++
					}
				}
			}
		}
	}
	cid, none := got["cid"], got["none"]
	perCID, perNone := cid.failedPushes/cid.failed, none.failedPushes/none.failed
	t.Logf("pushes per failed job: cid %.2f, none %.2f; completed: cid %.0f, none %.0f", perCID, perNone, cid.completed, none.completed)
	if !(perCID < 0.85*perNone) {
		t.Errorf("pushes per failed job: cid %.2f, none %.2f; want cid below 0.85 × none", perCID, perNone)
	}
	if cid.completed < 0.97*none.completed {
		t.Errorf("completed: cid %.0f, none %.0f; want cid at least 0.97 × none", cid.completed, none.completed)
	}
}
