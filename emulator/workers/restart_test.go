package workers_test

import (
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// restartDoc is emulator's TestNATSRestartSurvived scenario: 60 peers
// under heartbeats, the bus down for 10 emulated seconds at 3m.
const restartDoc = `
seed: 5
time_scale: 60
duration: 6m
peers: {count: 60, join_window: 1m}
overlay: {dimensions: 2, heartbeat: {period: 30s}}
`

// TestBusRestartOnTwoWorkers: a bus_restart over two workers stops the
// coordinator's NATS server and starts it again; the workers ride it out
// (none is declared dead), the run passes its invariants, the summary
// counts the outage and the messages it lost (refused publishes, and
// those the server destroyed in transit, known at the end), the books
// close, and the counts are those of the same scenario in one process
// within the spread of an outage whose wall length differs (the workers
// reconnect over TCP, one process in-process).
func TestBusRestartOnTwoWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("two wall-clock runs of 6 s; exactness at the end needs timers on time")
	}
	for _, tc := range []struct{ name, fault string }{
		{"timed", "  - {at: 3m, bus_restart: {down_for: 10s}}\n"},
		// Fired at an oracle sample, the outage meets the next collect
		// in flight: it must be asked again at once after the restart,
		// not wait out its timeout while the workers' clocks run on.
		{"triggered", "  - {when: {event: join_owned, count: 59}, bus_restart: {down_for: 10s}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := emutest.Parse(t, "nats-restart.yaml", restartDoc+"faults:\n"+tc.fault)
			busRestartOnTwoWorkers(t, sc)
		})
	}
}

func busRestartOnTwoWorkers(t *testing.T, sc scenario.Scenario) {
	two, one := onTwoAndOne(t, sc, func(name string, s emulator.Summary) {
		b := s.Bus
		types := map[string]uint64{}
		for k, v := range s.Messages.ByType {
			if v.Count > 0 {
				types[k] = v.Count
			}
		}
		t.Logf("%s: messages %d %v; faults %+v", name, s.Messages.Total, types, s.Faults.Events)
		t.Logf("%s: outcome %s; bus published %d delivered %d refused %d lost %d outages %d reconnects %d; accounting lost %d refused %d unaccounted %d",
			name, s.Outcome, b.Published, b.Delivered, b.Refused, b.Lost, b.Outages, b.Reconnects, s.Accounting.Lost, s.Accounting.Refused, s.Accounting.Unaccounted)
		if b.Outages != 1 || b.Reconnects < uint64(max(sc.Bus.Connections, 8)) {
			t.Errorf("seed %d, %s: outages %d, reconnects %d: want 1 and every connection back", sc.Seed, name, b.Outages, b.Reconnects)
		}
		if b.Lost == 0 || b.Lost < b.Refused {
			t.Errorf("seed %d, %s: lost %d, refused %d: a 10 s outage under heartbeats must lose messages, refused ones included", sc.Seed, name, b.Lost, b.Refused)
		}
		if s.Faults.ByKind["bus_restart"] != 1 {
			t.Errorf("seed %d, %s: faults %+v do not report the outage", sc.Seed, name, s.Faults)
		}
		for _, name := range []string{"population_formed", "overlay_reconverged", "messages_accounted", "workers_alive"} {
			if c := s.Invariants.Check(name); c != nil && !c.OK {
				t.Errorf("seed %d, %s: %s: %s", sc.Seed, name, name, c.Detail)
			} else if c == nil && name != "workers_alive" {
				t.Errorf("seed %d, %s: no invariant %s", sc.Seed, name, name)
			}
		}
	})
	if c := two.Invariants.Check("workers_alive"); c == nil || !c.OK {
		t.Errorf("seed %d: workers_alive %+v: a worker was declared dead during the outage", sc.Seed, c)
	}
	// The same order of magnitude: the split run's outage lasts longer in
	// wall time (TCP reconnects, the workers' resume), so it may lose
	// a few times more, never none and never orders of magnitude more.
	if l2, l1 := two.Bus.Lost, one.Bus.Lost; l2 > 5*l1+50 || 5*l2+50 < l1 {
		t.Errorf("seed %d: lost %d over two workers, %d in one process: not the same outage", sc.Seed, l2, l1)
	}
	// The coordinator's clock kept pace with the workers': a request
	// stalled by the outage would stretch the run's wall time (and the
	// workers' peers would go on heartbeating past the run's end).
	if w2, w1 := two.WallSeconds, one.WallSeconds; w2 > 2*w1+5 {
		t.Errorf("seed %d: %.1f s wall over two workers, %.1f s in one process: the run stalled", sc.Seed, w2, w1)
	}
}
