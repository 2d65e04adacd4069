package emulator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
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
			sc, err := scenario.Parse("alloc-test.yaml", []byte(allocationScenario))
			if err != nil {
				t.Fatal(err)
			}
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
