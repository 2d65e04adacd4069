package emulator_test

import (
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// bandwidthScenario is 80 peers in an 8-dimensional CAN for 5 minutes
// behind 1 Mbit/s uplinks and 8 Mbit/s downlinks, with heartbeat mode
// mode and access queues of queue bytes.
func bandwidthScenario(t *testing.T, seed uint64, mode, queue string) scenario.Scenario {
	t.Helper()
	return emutest.Parse(t, "bandwidth-test.yaml", `
seed: %d
time_scale: 40
duration: 5m
peers: {count: 80, join_window: 1m}
overlay: {dimensions: 8, heartbeat: {period: 30s, mode: %s}}
link: {bandwidth: {up: 1Mbit, down: 8Mbit, queue: %s}}
oracle: {interval: 30s}
`, seed, mode, queue)
}

// TestBandwidthHeartbeatSize: behind the same thin uplinks, vanilla
// heartbeats (every neighbor's zone, to every neighbor) queue far longer
// than compact ones, and with a small queue they overflow it while compact
// ones do not; the message books close with the drops and the messages
// still queued at the end. Both drivers (the emulator's in full runs only,
// with the small queue).
func TestBandwidthHeartbeatSize(t *testing.T) {
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	const seed = 3
	for _, c := range []struct{ driver, queue string }{
		{emulator.DriverSim, "0"},
		{emulator.DriverSim, "16KB"},
		{emulator.DriverLive, "16KB"},
	} {
		t.Run(c.driver+" queue "+c.queue, func(t *testing.T) {
			if c.driver == emulator.DriverLive && testing.Short() {
				t.Skip("emulator run")
			}
			type result struct {
				mean, p99 float64
				dropped   uint64
			}
			got := map[string]result{}
			for _, mode := range []string{"vanilla", "compact"} {
				s := emutest.Run(t, bandwidthScenario(t, seed, mode, c.queue), c.driver).Summary
				b := s.Faults.Bandwidth
				if b == nil || b.Messages == 0 || len(b.Classes) != 1 {
					t.Fatalf("seed %d, %s: faults.bandwidth = %+v, want the queued messages and the one class", seed, mode, b)
				}
				if s.Accounting.Unaccounted != 0 || s.Accounting.Dropped.Bandwidth != b.DroppedUp+b.DroppedDown || s.Faults.Dropped["bandwidth"] != b.DroppedUp+b.DroppedDown {
					t.Fatalf("seed %d, %s: accounting %+v, faults.dropped %v, bandwidth %+v", seed, mode, s.Accounting, s.Faults.Dropped, b)
				}
				got[mode] = result{b.UpQueueMean, b.UpQueueP99, b.DroppedUp + b.DroppedDown}
				t.Logf("seed %d, %s: %d messages queued, uplink queueing mean %.4fs p99 %.4fs, %d dropped, broken links mean %.2f",
					seed, mode, b.Messages, b.UpQueueMean, b.UpQueueP99, b.DroppedUp+b.DroppedDown, s.Overlay.BrokenLinks.Mean)
			}
			// Without a queue limit vanilla waits 12× longer (seed 3); a
			// 16KB queue caps its waits by dropping (2.5× here).
			v, k := got["vanilla"], got["compact"]
			ratio := 1.5
			if c.queue == "0" {
				ratio = 5
			}
			if !(v.mean > ratio*k.mean && v.p99 > k.p99) {
				t.Errorf("seed %d: uplink queueing vanilla mean %.4fs p99 %.4fs, compact %.4fs %.4fs: want vanilla's mean above %g× compact's, and its p99 above", seed, v.mean, v.p99, k.mean, k.p99, ratio)
			}
			if c.queue == "0" && (v.dropped != 0 || k.dropped != 0) {
				t.Errorf("seed %d: %d and %d dropped without a queue limit", seed, v.dropped, k.dropped)
			}
			if c.queue != "0" && (v.dropped == 0 || k.dropped != 0) {
				t.Errorf("seed %d: dropped on full %s queues: vanilla %d, compact %d; want some, none", seed, c.queue, v.dropped, k.dropped)
			}
		})
	}
}
