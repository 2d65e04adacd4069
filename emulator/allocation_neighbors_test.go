package emulator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/metrics"
)

// TestAllocationMessagesByType: under both placements every allocation
// message is counted by type in summary.json (messages.by_type, adding up
// to messages.total and messages.bytes) and in gridbed_messages_total and
// gridbed_message_bytes_total; under neighbors there is no allocator, so
// no machine reports an end (alloc_ended) and the machines gossip
// (alloc_gossip), and a machine moving its own job out sends its state
// without an order (alloc_migrate below the relocations); the
// deterministic driver gives identical summaries twice.
func TestAllocationMessagesByType(t *testing.T) {
	for _, tc := range []struct {
		placement      string
		ended, gossip  bool
		neighborsGiven bool
	}{
		{"central", true, false, false},
		{"neighbors", false, true, true},
	} {
		t.Run(tc.placement, func(t *testing.T) {
			sc := emutest.Parse(t, "alloc-test.yaml", allocationScenario)
			if err := sc.Set("allocation.placement=" + tc.placement); err != nil {
				t.Fatal(err)
			}
			var summaries [2][]byte
			for i := range summaries {
				m := metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverSim})
				res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim, Metrics: m})
				if err != nil {
					t.Fatalf("seed 3: %v", err)
				}
				s := res.Summary
				a := s.Allocation
				if s.Outcome != emulator.OutcomePassed || a.Completed != a.Jobs || a.Placement != tc.placement || (a.NeighborsMean != nil) != tc.neighborsGiven {
					t.Fatalf("seed 3: outcome %s %v, allocation %+v", s.Outcome, s.OutcomeReasons, a)
				}
				var n, b uint64
				for typ, c := range s.Messages.ByType {
					n, b = n+c.Count, b+c.Bytes
					if got := scrape(t, m, "gridbed_messages_total", "type", typ); got != float64(c.Count) {
						t.Errorf("seed 3: gridbed_messages_total{type=%q} %v, summary %d", typ, got, c.Count)
					}
					if got := scrape(t, m, "gridbed_message_bytes_total", "type", typ); got != float64(c.Bytes) {
						t.Errorf("seed 3: gridbed_message_bytes_total{type=%q} %v, summary %d", typ, got, c.Bytes)
					}
				}
				if n != s.Messages.Total || b != s.Messages.Bytes || n != s.Bus.Published || b == 0 {
					t.Errorf("seed 3: by type %d messages, %d bytes; total %d, %d bytes; bus %d", n, b, s.Messages.Total, s.Messages.Bytes, s.Bus.Published)
				}
				bt := s.Messages.ByType
				if bt["alloc_assign"].Count == 0 || (bt["alloc_ended"].Count == uint64(a.Jobs)) != tc.ended || (bt["alloc_gossip"].Count > 0) != tc.gossip ||
					bt["alloc_state"].Count != uint64(a.Migrated) || bt["alloc_migrate"].Count > uint64(a.Relocations) ||
					(tc.placement == "central" && bt["alloc_migrate"].Count != uint64(a.Relocations)) {
					t.Errorf("seed 3: messages by type %+v, allocation %+v", bt, a)
				}
				if a.MessagesPerJob != float64(s.Messages.Total)/float64(a.Jobs) {
					t.Errorf("seed 3: %v messages a job of %d messages, %d jobs", a.MessagesPerJob, s.Messages.Total, a.Jobs)
				}
				s.WallSeconds = 0
				if summaries[i], err = json.Marshal(s); err != nil {
					t.Fatal(err)
				}
			}
			if string(summaries[0]) != string(summaries[1]) {
				t.Fatalf("seed 3: two deterministic runs gave different summaries:\n%s\n%s", summaries[0], summaries[1])
			}
		})
	}
}

// TestAllocationNeighborsCrash: under placement neighbors
// allocation.crash_at crashes a machine (there is no allocator), and the
// summary says so: allocation.crash names the machine, its stopped jobs,
// the jobs placed elsewhere and the jobs lost; the messages lost with it
// are the books' unroutable term; a run that lost jobs fails and says
// why, one that lost none passes. Over NATS (without -short; ×1000,
// about 3 s of wall time) which machine crashes, and whether a job is
// lost, depends on the timing: there every job completes or is counted
// lost, the books close, and the run passes exactly when none was lost.
func TestAllocationNeighborsCrash(t *testing.T) {
	if !testing.Short() {
		neighborsCrashLive(t)
	}
	for _, tc := range []struct {
		at   string
		lost bool
	}{{"30s", false}, {"25s", true}} {
		sc := emutest.Parse(t, "alloc-test.yaml", allocationScenario)
		if err := sc.SetAll("allocation.placement=neighbors", "allocation.crash_at="+tc.at, "allocation.crash_down_for=40s"); err != nil {
			t.Fatal(err)
		}
		res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
		if err != nil {
			t.Fatalf("seed 3, crash at %s: %v", tc.at, err)
		}
		s := res.Summary
		a, c := s.Allocation, s.Allocation.Crash
		if c == nil || c.Crashed != "machine" || c.Machine == nil || c.JobsLost == nil || c.JobsStopped == nil || c.JobsReplaced == nil {
			t.Fatalf("seed 3, crash at %s: crash %+v", tc.at, c)
		}
		t.Logf("crash at %s: machine %d, %d jobs stopped, %d placed elsewhere, %d lost, %d messages lost; outcome %s %v",
			tc.at, *c.Machine, *c.JobsStopped, *c.JobsReplaced, *c.JobsLost, c.LostMessages, s.Outcome, s.OutcomeReasons)
		lost := *c.JobsLost
		if (lost > 0) != tc.lost || a.Completed+lost != a.Jobs || s.Accounting.Unroutable != c.LostMessages || s.Accounting.Unaccounted != 0 ||
			len(s.Faults.Events) != 1 || s.Faults.Events[0].Kind != "machine_crash" {
			t.Fatalf("seed 3, crash at %s: allocation %+v, crash %+v, accounting %+v, faults %+v", tc.at, a, c, s.Accounting, s.Faults)
		}
		want := emulator.OutcomePassed
		if tc.lost {
			want = emulator.OutcomeFailed
		}
		if s.Outcome != want || (tc.lost && (len(s.OutcomeReasons) != 1 || !strings.Contains(s.OutcomeReasons[0], "lost with machine"))) {
			t.Fatalf("seed 3, crash at %s: outcome %s %v, want %s", tc.at, s.Outcome, s.OutcomeReasons, want)
		}
	}
}

// neighborsCrashLive is TestAllocationNeighborsCrash over NATS.
func neighborsCrashLive(t *testing.T) {
	sc := emutest.Parse(t, "alloc-test.yaml", allocationScenario)
	if err := sc.SetAll("allocation.placement=neighbors", "allocation.crash_at=30s", "allocation.crash_down_for=40s", "time_scale=1000"); err != nil {
		t.Fatal(err)
	}
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	if c := s.Allocation.Crash; c == nil || c.Machine == nil || c.JobsLost == nil || s.Allocation.Completed+*c.JobsLost != s.Allocation.Jobs ||
		s.Accounting.Unaccounted != 0 || s.Accounting.Unroutable != c.LostMessages || (*c.JobsLost == 0) != (s.Outcome == emulator.OutcomePassed) {
		t.Fatalf("seed 3, live: outcome %s %v, allocation %+v, crash %+v, accounting %+v", s.Outcome, s.OutcomeReasons, s.Allocation, s.Allocation.Crash, s.Accounting)
	}
}
