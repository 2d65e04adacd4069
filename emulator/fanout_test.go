package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// TestFanoutModesAgree runs examples with bus.fanout per-receiver and
// batched on the deterministic driver: every link fault is still decided
// per (sender, receiver) with the same seeded draws, and every message is
// still counted on its own, so the summaries must be identical but for the
// transport count (bus.nats_messages), which batching must lower. chaos
// has link latency, which sends every message alone when due (so batching
// saves almost nothing there); chaos-instant is chaos with the latency at
// 0 until its latency faults, so that batches cross partitions, loss and
// duplication — at half the peers: with every take-over answered at the
// instant it is asked, zone updates grow to ~11 KB each (against 300 B
// with latency) and the full example takes 6× longer.
func TestFanoutModesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two examples twice; without -short only")
	}
	for _, name := range []string{"churn", "chaos", "chaos-instant"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := "../examples/" + strings.TrimSuffix(name, "-instant") + ".yaml"
			var (
				sums [2][]byte
				nats [2]uint64
				pub  [2]uint64
			)
			for i, mode := range []string{scenario.FanoutPerReceiver, scenario.FanoutBatched} {
				sc := emutest.Load(t, file)
				sc.Bus.Fanout = mode
				if strings.HasSuffix(name, "-instant") {
					sc.Link.Latency = scenario.Latency{Dist: "constant"}
					sc.Peers.Count /= 2
				}
				cores.Hold(t, cores.Sim)
				res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
				if err != nil {
					t.Fatalf("%s (seed %d, bus.fanout %s): %v", file, sc.Seed, mode, err)
				}
				s := res.Summary
				nats[i], pub[i] = s.Bus.NATSMessages, s.Bus.Published
				s.Bus.NATSMessages = 0
				sums[i] = withoutFanout(t, goldenSummary(t, s))
			}
			if !bytes.Equal(sums[0], sums[1]) {
				t.Errorf("%s: bus.fanout batched changed the run:\n%s", file, lineDiff(string(sums[0]), string(sums[1])))
			}
			if nats[0] != pub[0] {
				t.Errorf("%s per-receiver: %d NATS messages for %d published, want one each", file, nats[0], pub[0])
			}
			if name == "chaos" {
				// Delayed messages travel alone: only the few sent
				// at once (none here) could share a NATS message.
				if nats[1] > nats[0] {
					t.Errorf("%s batched: %d NATS messages, more than per-receiver's %d", file, nats[1], nats[0])
				}
			} else if nats[1] >= nats[0] || nats[1] == 0 {
				t.Errorf("%s batched: %d NATS messages, want fewer than per-receiver's %d (and some)", file, nats[1], nats[0])
			}
			t.Logf("%s: %d messages, %d NATS messages per-receiver, %d batched (%.2f messages each)",
				file, pub[0], nats[0], nats[1], float64(pub[1])/float64(max(nats[1], 1)))
		})
	}
}

// withoutFanout removes the scenario's bus.fanout key from a summary, if
// the summary echoes it.
func withoutFanout(t *testing.T, sum []byte) []byte {
	t.Helper()
	var tree map[string]any
	if err := json.Unmarshal(sum, &tree); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "bus.fanout")
			if b, ok := v["bus"].(map[string]any); ok {
				delete(b, "fanout")
			}
			for _, c := range v {
				strip(c)
			}
		case []any:
			for _, c := range v {
				strip(c)
			}
		}
	}
	strip(tree)
	out, err := json.MarshalIndent(tree, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
