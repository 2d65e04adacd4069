package workers

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

func TestOutageGrace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []scenario.Fault
		scale  float64
		want   time.Duration
	}{
		{"no bus_restart", []scenario.Fault{{Kind: scenario.FaultLoss, P: 0.1}}, 60, 0},
		{"the longest, in wall time", []scenario.Fault{{Kind: scenario.FaultBusRestart, DownFor: 60 * time.Second}, {Kind: scenario.FaultBusRestart, DownFor: 120 * time.Second}}, 60, 2*time.Second + settleWait},
		{"a nemesis that may draw one", []scenario.Fault{{Kind: scenario.FaultRandom, Random: &scenario.Random{Kinds: []string{scenario.FaultBusRestart}}}}, 1, 30*time.Second + settleWait},
		{"a nemesis that may not", []scenario.Fault{{Kind: scenario.FaultRandom, Random: &scenario.Random{Kinds: []string{scenario.FaultLoss}}}}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outageGrace(scenario.Scenario{Faults: tc.faults, TimeScale: tc.scale}); got != tc.want {
				t.Errorf("outageGrace = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLostInTransit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		final []bus.Stats
		lost  uint64
		ok    bool
	}{
		// Worker 0 published 100, of which worker 1 received 60 and
		// worker 0 itself 25 (delivered, unroutable, dropped, discarded).
		{"published minus received, over the workers", []bus.Stats{
			{Published: 100, Delivered: 20, Unroutable: 5},
			{Published: 0, Delivered: 50, Dropped: 4, Discarded: 6},
		}, 15, true},
		{"refused publishes are not in transit", []bus.Stats{
			{Published: 10, Refused: 7, Lost: 7, Delivered: 10},
		}, 0, true},
		{"more received than published: unknown", []bus.Stats{{Published: 1, Delivered: 2}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost, ok := lostInTransit(tc.final)
			if lost != tc.lost || ok != tc.ok {
				t.Errorf("lostInTransit = (%d, %v), want (%d, %v)", lost, ok, tc.lost, tc.ok)
			}
		})
	}
}

// TestDeadWorkersCountersKept: once a worker is dead the collect and
// the close skip it, and the report they leave empty for it must not
// wipe what it last reported (nor subtract it from the run's traffic).
func TestDeadWorkersCountersKept(t *testing.T) {
	c := &Coordinator{m: metrics.NewRun(metrics.RunInfo{}), workers: []*remote{{}}}
	r := Report{Traffic: metrics.NewTraffic().Snapshot(), Bus: bus.Stats{Published: 5, Delivered: 4}}
	r.Traffic.Received = 10
	c.absorb(0, r)
	c.absorb(0, Report{}) // the worker died: nobody filled its report
	if got := c.m.Traffic.Snapshot().Received; got != 10 {
		t.Errorf("received %d after an empty report, want the 10 it had reported", got)
	}
	if b := c.BusStats(); b.Published != 5 || b.Delivered != 4 {
		t.Errorf("bus %+v after an empty report, want its last counters (5 published, 4 delivered)", b)
	}
}
