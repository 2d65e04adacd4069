package timeline_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sim"
	"github.com/gridbed/gridbed/faults/timeline"
	"github.com/gridbed/gridbed/metrics"
)

// host is a timeline.Host on a sim.World (bus and scheduler at once): its
// members are addresses 1..n, each registered and counting what reaches it.
type host struct {
	w       *sim.World
	b       bus.Bus // the world behind the timeline's decorators
	members []core.NodeID
	crashed []core.NodeID
	joined  map[core.NodeID]can.Point
	got     map[bus.Address]int
}

func newHost(seed uint64) *host {
	return &host{w: sim.New(seed, 0), joined: map[core.NodeID]can.Point{}, got: map[bus.Address]int{}}
}

func (h *host) Now() time.Duration                 { return h.w.Now() }
func (h *host) At(t time.Duration, fn func())      { h.w.At(t, fn) }
func (h *host) WrapBus(wrap func(bus.Bus) bus.Bus) { h.b = wrap(h.w) }
func (h *host) BusStats() bus.Stats                { return h.w.Stats() }

func (h *host) DepartPicked(pick func([]core.NodeID) []core.NodeID, fail bool) []core.NodeID {
	ids := pick(slices.Clone(h.members))
	h.members = slices.DeleteFunc(h.members, func(id core.NodeID) bool { return slices.Contains(ids, id) })
	if fail {
		h.crashed = append(h.crashed, ids...)
	}
	return ids
}

func (h *host) Join(id core.NodeID, p can.Point) error {
	h.joined[id] = p
	h.members = append(h.members, id)
	return nil
}

// ids is a timeline.IDs over a slice of points.
type ids struct{ points []can.Point }

func (a *ids) Next(p can.Point) core.NodeID {
	a.points = append(a.points, p)
	return core.NodeID(len(a.points))
}
func (a *ids) Point(id core.NodeID) can.Point { return a.points[id-1] }

// rig builds a timeline for the fault list faults over n members.
func rig(t *testing.T, seed uint64, n int, faults string) (*timeline.Timeline, *host) {
	t.Helper()
	doc := fmt.Sprintf("seed: %d\nduration: 10m\npeers: {count: %d}\nfaults:\n%s", seed, n, faults)
	sc, err := scenario.Parse("timeline-test.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, doc)
	}
	h := newHost(seed)
	a := &ids{}
	tl := timeline.New(sc, h, metrics.NewRun(metrics.RunInfo{}), a, nil)
	for i := range n {
		id := a.Next(can.Point{uint32(i)})
		h.members = append(h.members, id)
		addr := bus.Address(id)
		if err := h.b.Register(addr, func(bus.Address, []byte) { h.got[addr]++ }); err != nil {
			t.Fatal(err)
		}
	}
	tl.Schedule()
	return tl, h
}

// send publishes one message from → to through the timeline's decorators.
func send(t *testing.T, h *host, from, to uint64) {
	t.Helper()
	data, err := wire.Encode(nil, wire.Header{Type: wire.MsgType_MSG_HEARTBEAT, From: from, To: to}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.b.Publish(bus.Address(to), data); err != nil {
		t.Fatal(err)
	}
}

func TestPartitionCutsAndHeals(t *testing.T) {
	const seed = 7
	tl, h := rig(t, seed, 4, "  - {at: 1m, partition: {peers: [1, 2]}}\n  - {at: 2m, heal: {}}\n")
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 150 * time.Second} {
		h.At(at, func() {
			send(t, h, 1, 3) // across the cut
			send(t, h, 3, 4) // on one side
		})
	}
	h.w.RunUntil(10 * time.Minute)
	if h.got[3] != 2 || h.got[4] != 3 {
		t.Errorf("seed %d: peer 3 got %d (want 2: the message during the partition is lost), peer 4 got %d (want 3)", seed, h.got[3], h.got[4])
	}
	if d := tl.Drops(); d.Partition != 1 {
		t.Errorf("seed %d: %d messages dropped by the partition, want 1", seed, d.Partition)
	}
	want := []timeline.Event{
		{At: time.Minute, Kind: scenario.FaultPartition, Detail: "partition-0: 2 peers cut off from the rest, both ways"},
		{At: 2 * time.Minute, Kind: scenario.FaultHeal, Detail: "every partition"},
	}
	if got := tl.Events(); !slices.Equal(got, want) {
		t.Errorf("seed %d: events %+v, want %+v", seed, got, want)
	}
}

func TestCrashRestartsAtTheSamePoints(t *testing.T) {
	const seed = 3
	tl, h := rig(t, seed, 10, "  - {at: 1m, crash: {fraction: 0.3, restart_after: 2m}}\n")
	h.w.RunUntil(10 * time.Minute)
	if len(h.crashed) != 3 {
		t.Fatalf("seed %d: %d peers crashed, want 3 (30%% of 10)", seed, len(h.crashed))
	}
	if len(h.joined) != 3 || len(h.members) != 10 {
		t.Fatalf("seed %d: %d peers rejoined, %d members; want 3 and 10", seed, len(h.joined), len(h.members))
	}
	for j, old := range h.crashed {
		id := core.NodeID(11 + j)
		if p, ok := h.joined[id]; !ok || p[0] != uint32(old-1) {
			t.Errorf("seed %d: new peer %d at %v (joined %v), want at crashed peer %d's point %v", seed, id, p, ok, old, old-1)
		}
	}
	if k := tl.ByKind(); k[scenario.FaultCrash] != 1 || k["restart"] != 1 {
		t.Errorf("seed %d: faults by kind %v, want one crash and one restart", seed, k)
	}
}

func TestBusRestartDropsOnTheSwitch(t *testing.T) {
	const seed = 5
	tl, h := rig(t, seed, 2, "  - {at: 1m, bus_restart: {down_for: 30s}}\n")
	for _, at := range []time.Duration{50 * time.Second, 70 * time.Second, 80 * time.Second, 100 * time.Second} {
		h.At(at, func() { send(t, h, 1, 2) })
	}
	h.w.RunUntil(10 * time.Minute)
	if h.got[2] != 2 || tl.OutageDropped() != 2 || tl.Drops().BusOutage != 2 {
		t.Errorf("seed %d: delivered %d, outage dropped %d (drops %d); want 2, 2, 2", seed, h.got[2], tl.OutageDropped(), tl.Drops().BusOutage)
	}
}

func TestTriggeredFaultFiresOnCount(t *testing.T) {
	const seed = 11
	tl, h := rig(t, seed, 2, "  - {when: {event: takeover, count: 2}, loss: {p: 1}}\n")
	count := map[string]uint64{"takeover": 1}
	if _, fired := tl.Fire(time.Minute, func(e string) uint64 { return count[e] }); fired {
		t.Fatalf("seed %d: fired after 1 takeover, want 2", seed)
	}
	count["takeover"] = 2
	if _, fired := tl.Fire(2*time.Minute, func(e string) uint64 { return count[e] }); !fired {
		t.Fatalf("seed %d: not fired after 2 takeovers", seed)
	}
	if _, fired := tl.Fire(3*time.Minute, func(e string) uint64 { return count[e] }); fired {
		t.Errorf("seed %d: fired twice", seed)
	}
	h.At(150*time.Second, func() { send(t, h, 1, 2) })
	h.w.RunUntil(10 * time.Minute)
	want := []timeline.Event{{At: 2 * time.Minute, Kind: scenario.FaultLoss, Detail: "p = 1"}}
	if got := tl.Events(); !slices.Equal(got, want) || h.got[2] != 0 || tl.Link().DroppedLoss != 1 {
		t.Errorf("seed %d: events %+v (want %+v), delivered %d, lost %d; want the message lost", seed, got, want, h.got[2], tl.Link().DroppedLoss)
	}
}

// TestOneWayLinkCut: a partition from: [1] to: [2, 3] with oneway drops
// only 1 → 2 and 1 → 3, until healed; 2 → 1 and 1 → 4 pass.
func TestOneWayLinkCut(t *testing.T) {
	const seed = 2
	tl, h := rig(t, seed, 4, "  - {at: 1m, partition: {name: c, from: [1], to: [2, 3], oneway: true}}\n  - {at: 2m, heal: {name: c}}\n")
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 150 * time.Second} {
		h.At(at, func() {
			send(t, h, 1, 2)
			send(t, h, 1, 3)
			send(t, h, 2, 1)
			send(t, h, 1, 4)
		})
	}
	h.w.RunUntil(10 * time.Minute)
	if h.got[2] != 2 || h.got[3] != 2 || h.got[1] != 3 || h.got[4] != 3 || tl.Drops().Partition != 2 {
		t.Errorf("seed %d: delivered %v, %d dropped; want 1→2 and 1→3 lost once each, the rest delivered", seed, h.got, tl.Drops().Partition)
	}
	want := []timeline.Event{
		{At: time.Minute, Kind: scenario.FaultPartition, Detail: "c: the links from 1 peers to 2 peers cut, one way"},
		{At: 2 * time.Minute, Kind: scenario.FaultHeal, Detail: "c"},
	}
	if got := tl.Events(); !slices.Equal(got, want) {
		t.Errorf("seed %d: events %+v, want %+v", seed, got, want)
	}
}

// TestFlapEndsAfterItsDuration: the links of peer 1 flap from 1m for 2m
// (about a third of the time down): messages on them are lost only then,
// others never, and the end is recorded as a heal.
func TestFlapEndsAfterItsDuration(t *testing.T) {
	const seed = 4
	tl, h := rig(t, seed, 3, "  - {at: 1m, flap: {peers: [1], up: 4s, down: 2s, duration: 2m}}\n")
	for i := range 600 { // one message a second on each link for 10 minutes
		h.At(time.Duration(i)*time.Second, func() {
			send(t, h, 2, 1)
			send(t, h, 2, 3)
		})
	}
	h.w.RunUntil(10 * time.Minute)
	lost := 600 - h.got[1]
	if h.got[3] != 600 || lost < 20 || lost > 70 {
		t.Errorf("seed %d: 2→1 lost %d of the 120 sent during the flap (want about 40), 2→3 delivered %d of 600", seed, lost, h.got[3])
	}
	if uint64(lost) != tl.Drops().Partition {
		t.Errorf("seed %d: %d lost, %d counted as partition drops", seed, lost, tl.Drops().Partition)
	}
	ev := tl.Events()
	if len(ev) != 2 || ev[0].Kind != scenario.FaultFlap || ev[1].Kind != scenario.FaultHeal || ev[1].At != 3*time.Minute {
		t.Errorf("seed %d: events %+v, want the flap at 1m and its end at 3m", seed, ev)
	}
	t.Logf("seed %d: %+v", seed, ev)
}

// TestCorruptFault: corrupt {p: 1} makes every message arrive corrupted
// (its frame check fails) until corrupt {p: 0}.
func TestCorruptFault(t *testing.T) {
	const seed = 6
	tl, h := rig(t, seed, 2, "  - {at: 1m, corrupt: {p: 1}}\n  - {at: 2m, corrupt: {p: 0}}\n")
	bad := 0
	if err := h.b.Register(2, func(_ bus.Address, data []byte) {
		if _, _, err := wire.Decode(data); err != nil {
			bad++
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 100 * time.Second, 150 * time.Second} {
		h.At(at, func() { send(t, h, 1, 2) })
	}
	h.w.RunUntil(10 * time.Minute)
	if bad != 2 || tl.Drops().Corrupted != 2 || tl.Link().Corrupted != 2 {
		t.Errorf("seed %d: %d rejected, %d corrupted; want 2 and 2", seed, bad, tl.Drops().Corrupted)
	}
}

// TestTriggeredFlapDisturbsUntilItsEnd: a flap waiting for a protocol
// event disturbs the run until its duration is over.
func TestTriggeredFlapDisturbsUntilItsEnd(t *testing.T) {
	const seed = 12
	tl, h := rig(t, seed, 2, "  - {when: {event: takeover}, flap: {fraction: 0.5, up: 10s, down: 10s, duration: 2m}}\n")
	until, fired := tl.Fire(time.Minute, func(string) uint64 { return 1 })
	if !fired || until != 3*time.Minute {
		t.Fatalf("seed %d: fired %v, disturbed until %v; want until 3m", seed, fired, until)
	}
	h.w.RunUntil(10 * time.Minute)
	if k := tl.ByKind(); k[scenario.FaultFlap] != 1 || k[scenario.FaultHeal] != 1 {
		t.Errorf("seed %d: faults by kind %v, want the flap and its end", seed, k)
	}
}
