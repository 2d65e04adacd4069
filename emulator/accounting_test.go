package emulator_test

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// checkBooks asserts that a run's message books close (unaccounted 0),
// that the invariant messages_accounted says so, and that the books agree
// with the figures reported elsewhere in the summary.
func checkBooks(t *testing.T, s emulator.Summary) emulator.Accounting {
	t.Helper()
	a := s.Accounting
	var check *emulator.InvariantCheck
	for i := range s.Invariants.Checks {
		if s.Invariants.Checks[i].Name == "messages_accounted" {
			check = &s.Invariants.Checks[i]
		}
	}
	if check == nil {
		t.Fatalf("seed %d %s: no messages_accounted invariant in %+v", s.Seed, s.Driver, s.Invariants.Checks)
	}
	t.Logf("seed %d %s: %s", s.Seed, s.Driver, check.Detail)
	if a.Unaccounted != 0 || !check.OK {
		t.Errorf("seed %d %s: the message books do not close: %s\n%+v", s.Seed, s.Driver, check.Detail, a)
	}
	if a.Sent != s.Messages.Total || a.Sent == 0 {
		t.Errorf("seed %d %s: accounting sent %d, messages.total %d", s.Seed, s.Driver, a.Sent, s.Messages.Total)
	}
	if a.Identity != emulator.AccountingIdentity {
		t.Errorf("seed %d %s: identity %q", s.Seed, s.Driver, a.Identity)
	}
	f := a.InFlightAtEnd
	if f.Total != f.LinkDelay+f.Bus+f.Mailbox+f.Unregistered {
		t.Errorf("seed %d %s: in flight at end %+v: total is not the sum", s.Seed, s.Driver, f)
	}
	if a.Duplicated != s.Faults.Duplicated || a.Dropped.Partition != s.Faults.Dropped["partition"] || a.Dropped.Loss != s.Faults.Dropped["loss"] {
		t.Errorf("seed %d %s: accounting %+v disagrees with faults %+v", s.Seed, s.Driver, a, s.Faults)
	}
	// The bus's own books: what it handed to endpoints is what they
	// received, plus what stopped peers ignored or mailboxes still held.
	if got := a.Delivered + a.StoppedPeer + f.Mailbox; got != s.Bus.Delivered {
		t.Errorf("seed %d %s: delivered %d + stopped peer %d + mailbox %d = %d, bus delivered %d", s.Seed, s.Driver, a.Delivered, a.StoppedPeer, f.Mailbox, got, s.Bus.Delivered)
	}
	return a
}

// TestMessagesAccountedSim: under churn, a partition, loss, duplication, a
// latency that leaves messages in the link-delay queue at the end, crashes
// and a bus outage, every message the deterministic driver's peers sent is
// in exactly one bucket — and each of those faults put messages in its
// own.
func TestMessagesAccountedSim(t *testing.T) {
	emutest.SkipUnderRace(t, "single-threaded simulator runs")
	t.Parallel() // deterministic-driver runs: one event loop each
	for _, seed := range []uint64{3, 4} {
		sc := faultScenario(t, seed, "latency: {dist: exponential, mean: 200ms}", `
  - {at: 2m, loss: {p: 0.02}}
  - {at: 2m, duplicate: {p: 0.02}}
  - {at: 3m, partition: {name: cut, fraction: 0.3}}
  - {at: 5m, heal: {name: cut}}
  - {at: 6m, crash: {fraction: 0.1, restart_after: 1m}}
  - {at: 8m, bus_restart: {down_for: 5s}}
  - {at: 11m50s, latency: {dist: constant, mean: 30s}}
`)
		sc.Churn.Interval, sc.Churn.Start, sc.Churn.Stop, sc.Churn.FailFraction = 20*time.Second, 2*time.Minute, 9*time.Minute, 0.5
		s := emutest.Run(t, sc, emulator.DriverSim).Summary
		a := checkBooks(t, s)
		if a.Dropped.Partition == 0 || a.Dropped.Loss == 0 || a.Duplicated == 0 || a.Dropped.BusOutage == 0 ||
			a.Unroutable == 0 || a.InFlightAtEnd.LinkDelay == 0 || a.Delivered == 0 {
			t.Errorf("seed %d: a fault put no message in its bucket: %+v", seed, a)
		}
		if s.Churn.Joins == 0 || s.Churn.Failures == 0 {
			t.Errorf("seed %d: no churn: %+v", seed, s.Churn)
		}
		if a.Refused+a.Lost+a.PublishFailed+a.StoppedPeer+a.InFlightAtEnd.Mailbox+a.InFlightAtEnd.Unregistered != 0 {
			t.Errorf("seed %d: emulator-only terms nonzero under the deterministic driver: %+v", seed, a)
		}
	}
}

// TestMessagesAccountedOnEmulator runs the chaos example over NATS,
// shortened (its timeline compressed) and with loss, duplication and a NATS
// server restart added: the books close, whatever the wall-clock timing,
// with either bus.fanout (batched: frames lost in the outage or dropped
// are counted message by message).
func TestMessagesAccountedOnEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: two 16-s live runs over NATS")
	}
	for _, fanout := range []string{scenario.FanoutPerReceiver, scenario.FanoutBatched} {
		t.Run(fanout, func(t *testing.T) { messagesAccountedOnEmulator(t, fanout) })
	}
}

func messagesAccountedOnEmulator(t *testing.T, fanout string) {
	sc := emutest.Load(t, "../examples/chaos.yaml")
	const full = 45 * time.Minute
	sc.Duration, sc.Peers.Count, sc.Peers.JoinWindow = 9*time.Minute, 150, time.Minute
	sc.Bus.Fanout = fanout
	if fanout == scenario.FanoutBatched {
		// No link latency until the timeline's latency fault: a delayed
		// message travels alone, and the frames must meet the loss,
		// duplication and the outage.
		sc.Link.Latency = scenario.Latency{Dist: "constant"}
	}
	for i := range sc.Faults {
		sc.Faults[i].At = time.Duration(float64(sc.Faults[i].At) * float64(sc.Duration) / float64(full))
	}
	sc.Faults = append(sc.Faults,
		scenario.Fault{At: sc.Duration / 2, Kind: scenario.FaultLoss, P: 0.02, Region: -1},
		scenario.Fault{At: sc.Duration / 2, Kind: scenario.FaultDuplicate, P: 0.02, Region: -1},
		scenario.Fault{At: sc.Duration * 3 / 4, Kind: scenario.FaultBusRestart, DownFor: 5 * time.Second, Region: -1},
	)
	if err := sc.Validate(); err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	a := checkBooks(t, s)
	if a.Dropped.Partition == 0 || a.Dropped.Loss == 0 || a.Duplicated == 0 || a.Refused+a.Lost == 0 || a.Delivered == 0 {
		t.Errorf("seed %d: a fault put no message in its bucket: %+v", sc.Seed, a)
	}
	if s.Bus.Outages != 1 {
		t.Errorf("seed %d: %d bus outages, want 1", sc.Seed, s.Bus.Outages)
	}
	if batched := fanout == scenario.FanoutBatched; batched != (s.Bus.NATSMessages < s.Bus.Published) {
		t.Errorf("seed %d, bus.fanout %s: %d NATS messages for %d messages", sc.Seed, fanout, s.Bus.NATSMessages, s.Bus.Published)
	}
}

// TestInFlightAtEndCounted: with a latency far beyond the run every
// message is still in the link-delay queue when the run ends; the books
// count each of them as in flight (not lost silently), on both drivers.
func TestInFlightAtEndCounted(t *testing.T) {
	for _, driver := range []string{emulator.DriverSim, emulator.DriverLive} {
		sc := quickstart(t)
		// The overlay is built outside the bus, so that every peer
		// heartbeats over it from the start.
		if err := sc.SetAll("link.latency.mean=1000h", "link.latency.dist=constant", "peers.count=20", "peers.join_window=20s", "peers.bootstrap=direct", "duration=3m", "time_scale=40"); err != nil {
			t.Fatal(err)
		}
		s := emutest.Run(t, sc, driver).Summary
		a := checkBooks(t, s)
		if a.InFlightAtEnd.LinkDelay != a.Sent || a.Sent < 100 || a.Delivered != 0 || s.Bus.Published != 0 {
			t.Errorf("seed %d %s: sent %d, in the link-delay queue %d, delivered %d, bus published %d: want every message in the queue",
				sc.Seed, driver, a.Sent, a.InFlightAtEnd.LinkDelay, a.Delivered, s.Bus.Published)
		}
	}
}
