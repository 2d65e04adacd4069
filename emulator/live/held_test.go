package live_test

import (
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/metrics"
)

// TestMessagesBeforeStartWaitForIt: a message the bus delivers to a peer
// before Start (in a run split over workers, one a worker that started
// first sends to a worker that has not yet) waits for Start instead of
// being handled on a clock not yet restarted: no peer has received it
// until Start, and Start hands it over (Held counts it).
func TestMessagesBeforeStartWaitForIt(t *testing.T) {
	const seed = 5
	m := metrics.NewRun(metrics.RunInfo{Driver: "emulator"})
	d, err := live.New(live.Options{Seed: seed, TimeScale: tScale, Overlay: overlay.Config{HeartbeatPeriod: tPeriod}, Metrics: m})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Spawn(1, can.Point{1 << 31, 1 << 31, 1 << 31}, 0); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	payload, err := wire.MarshalPayload(&wire.FullUpdateRequest{Self: &wire.NodeInfo{Id: 2}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Encode(nil, wire.Header{Type: wire.MsgType_MSG_FULL_UPDATE_REQUEST, From: 2, To: 1}, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Bus().Publish(bus.Address(core.NodeID(1)), data); err != nil {
		t.Fatalf("seed %d: publish: %v", seed, err)
	}
	poll(t, seed, "the bus delivered the message", func() bool { return d.BusStats().Delivered >= 1 })
	// The bus counts a delivery once its handler has returned: had the
	// handler put the message in the mailbox, the peer would have
	// received it before answering this state request, sent after it.
	collect(t, d, seed)
	if got := m.Traffic.Snapshot().Received; got != 0 {
		t.Fatalf("seed %d: the peer received %d messages before Start", seed, got)
	}
	if d.Backlog() != 1 {
		t.Fatalf("seed %d: backlog %d before Start, want the held message", seed, d.Backlog())
	}
	d.Start()
	if d.Held() != 1 {
		t.Fatalf("seed %d: Start released %d held messages, want 1", seed, d.Held())
	}
	poll(t, seed, "the peer received the held message", func() bool { return m.Traffic.Snapshot().Received == 1 && d.Backlog() == 0 })
}
