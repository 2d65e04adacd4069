package emulator_test

import (
	"encoding/json"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
)

// TestLazyHeartbeatsChangeNothing: peers that leave heartbeats' neighbor
// lists encoded, and skip the lists that would change nothing (wire.
// DecodeLazy, overlay onHeartbeat), run exactly as peers that decode and
// process every list: identical summaries — every message, overlay event,
// take-over and repair counted — with a workload whose jobs ride on the
// heartbeats' load, crashes and departures. The golden test does the same
// for churn and chaos at the examples' full size (eagerGolden); a jobs
// example at full size decodes eagerly for minutes, so this one is reduced.
func TestLazyHeartbeatsChangeNothing(t *testing.T) {
	t.Parallel() // deterministic-driver runs: one event loop each
	if testing.Short() {
		t.Skip("single-threaded simulator runs (no data races to find); the full test run covers them")
	}
	for _, tc := range []struct {
		file string
		sets []string
	}{
		{"../examples/jobs-failures.yaml", []string{"duration=4h", "workload.jobs=500"}},
	} {
		sc := emutest.Load(t, tc.file)
		sets := append(tc.sets, "peers.count=200")
		if err := sc.SetAll(sets...); err != nil {
			t.Fatal(err)
		}
		run := func(eager bool) []byte {
			s := emutest.RunWith(t, sc, emulator.Options{Driver: emulator.DriverSim, EagerDecoding: eager}).Summary
			s.WallSeconds, s.Messages.PerWallSecond, s.Peers.BootstrapWallSeconds = 0, nil, 0
			s.Sim.LoopSeconds, s.Sim.EventsPerSecond = 0, 0
			js, _ := json.Marshal(s)
			return js
		}
		eager, lazy := run(true), run(false)
		if string(eager) != string(lazy) {
			t.Errorf("%s seed %d: lazy heartbeat decoding changed the run:\neager %s\nlazy  %s", tc.file, sc.Seed, eager, lazy)
		}
	}
}
