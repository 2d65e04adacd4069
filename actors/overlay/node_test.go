package overlay

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

// Fractions of the span, for hand-made zones and points.
const (
	tFull    = can.Span
	tHalf    = can.Span / 2
	tQuarter = can.Span / 4
)

// Coordinates at a quarter and three quarters of the span.
const (
	tQ1 = uint32(tQuarter)
	tQ3 = uint32(3 * tQuarter)
)

const tPeriod = 10 * time.Second

var tConfig = Config{HeartbeatPeriod: tPeriod}

func tRand(id core.NodeID) *rand.Rand { return rand.New(rand.NewPCG(uint64(id), 42)) }

// tZone2 is the 2-D zone [x0, x1) × [y0, y1).
func tZone2(x0, x1, y0, y1 uint64) can.Zone {
	return can.Zone{Lo: []uint64{x0, y0}, Hi: []uint64{x1, y1}}
}

// tFounder creates node id at p and founds the overlay with it.
func tFounder(t *testing.T, id core.NodeID, p can.Point) *Node {
	t.Helper()
	n := New(id, p, tConfig, tRand(id))
	n.Bootstrap(0, 0)
	r := n.Ready()
	n.Advance()
	if !r.Joined {
		t.Fatalf("founder %d did not join", id)
	}
	return n
}

// tMember creates a member that owns zone z (version) with an empty
// neighbor table, bypassing the join protocol.
func tMember(t *testing.T, id core.NodeID, p can.Point, z can.Zone, version uint64) *Node {
	t.Helper()
	if !z.Contains(p) {
		t.Fatalf("test setup: %v not in %v", p, z)
	}
	n := New(id, p, tConfig, tRand(id))
	n.becomeMember(0, 0, z.Clone(), nil, nil)
	n.version = version
	n.Advance()
	return n
}

// tLink puts m, with its current zone and version, into n's table.
func tLink(n, m *Node, heard bool) {
	n.upsert(&Neighbor{ID: m.id, Zone: m.zone.Clone(), Version: m.version, Heard: heard})
}

// tDrain returns a copy of what n wants done and advances it (Ready's
// slices are reused).
func tDrain(n *Node) Ready {
	r := n.Ready()
	c := Ready{Outbox: core.Outbox{Messages: slices.Clone(r.Messages), Timers: slices.Clone(r.Timers)}, Joined: r.Joined, NeedBootstrap: r.NeedBootstrap}
	n.Advance()
	return c
}

// tOnly returns the single message of r, which must be a T addressed to to.
func tOnly[T proto.Message](t *testing.T, r Ready, to core.NodeID) T {
	t.Helper()
	if len(r.Messages) != 1 {
		t.Fatalf("want exactly one message, got %d: %v", len(r.Messages), r.Messages)
	}
	return tTo[T](t, r, to)
}

// tTo returns the one message of type T addressed to to.
func tTo[T proto.Message](t *testing.T, r Ready, to core.NodeID) T {
	t.Helper()
	var found []T
	for _, o := range r.Messages {
		if m, ok := o.Msg.(T); ok && o.To == to {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want one %T to %d, got %d in %v", zero, to, len(found), r.Messages)
	}
	return found[0]
}

func tIDs(n *Node) []core.NodeID {
	ids := make([]core.NodeID, len(n.nbrs))
	for i, nb := range n.nbrs {
		ids[i] = nb.ID
	}
	return ids
}

func tNeighbor(n *Node, id core.NodeID) *Neighbor {
	if i, ok := n.find(id); ok {
		return n.nbrs[i]
	}
	return nil
}

func tInfoIDs(infos []*wire.NodeInfo) []core.NodeID {
	ids := make([]core.NodeID, len(infos))
	for i, in := range infos {
		ids[i] = core.NodeID(in.Id)
	}
	slices.Sort(ids)
	return ids
}

func tWireZone(z can.Zone) can.Zone {
	return can.Zone{Lo: slices.Clone(z.Lo), Hi: slices.Clone(z.Hi)}
}

func TestFounderOwnsWholeSpace(t *testing.T) {
	for _, d := range []int{2, 3} {
		p := make(can.Point, d)
		for i := range p {
			p[i] = tQ1
		}
		now := 7 * time.Second
		n := New(1, p, tConfig, tRand(1))
		if n.Joined() {
			t.Fatal("joined before Bootstrap")
		}
		n.Bootstrap(now, 0)
		r := tDrain(n)
		if !r.Joined || !n.Joined() {
			t.Fatalf("d=%d: founder not joined", d)
		}
		if !n.Zone().Equal(can.Whole(d)) {
			t.Fatalf("d=%d: founder zone %v, want the whole space", d, n.Zone())
		}
		if len(r.Messages) != 0 || len(n.Neighbors()) != 0 {
			t.Fatalf("d=%d: founder sent %v / has neighbors %v", d, r.Messages, tIDs(n))
		}
		if len(r.Timers) != 1 || r.Timers[0].Kind != core.TimerHeartbeat || r.Timers[0].At < now || r.Timers[0].At >= now+tPeriod {
			t.Fatalf("d=%d: timers %v, want one heartbeat in [%v, %v)", d, r.Timers, now, now+tPeriod)
		}
		if s := n.Snapshot(); !s.Joined || s.Version != 1 {
			t.Fatalf("d=%d: snapshot %+v", d, s)
		}
		// Joined is reported once; a second Bootstrap does nothing.
		n.Bootstrap(now, 5)
		if r := tDrain(n); r.Joined || len(r.Messages) != 0 || len(r.Timers) != 0 {
			t.Fatalf("d=%d: second Ready %+v", d, r)
		}
	}
}

func TestHeartbeatPhaseSpreadOverPeriod(t *testing.T) {
	seen := map[time.Duration]bool{}
	for id := core.NodeID(1); id <= 20; id++ {
		n := New(id, can.Point{1, 2}, tConfig, tRand(id))
		n.Bootstrap(0, 0)
		r := tDrain(n)
		at := r.Timers[0].At
		if at < 0 || at >= tPeriod {
			t.Fatalf("node %d: first heartbeat at %v, outside [0, %v)", id, at, tPeriod)
		}
		seen[at] = true
	}
	if len(seen) < 10 {
		t.Fatalf("heartbeat phases not spread: %d distinct of 20", len(seen))
	}
}

func TestJoinSplitsOwnersZone(t *testing.T) {
	cases := []struct {
		name   string
		owner  can.Point
		joiner can.Point
		dim    uint32
		at     uint64
	}{
		{"2d-resource", can.Point{tQ1, tQ1}, can.Point{tQ3, tQ1}, 0, tHalf},
		{"2d-virtual", can.Point{tQ1, tQ3}, can.Point{tQ1, 5}, 1, tHalf},
		{"3d", can.Point{tQ1, tQ1, 9}, can.Point{tQ1 + 1, tQ3, 10}, 1, tHalf},
		// Points on the same side of the midpoint: split halfway between them.
		{"2d-between", can.Point{100, 7}, can.Point{300, 7}, 0, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := len(c.owner)
			a := tFounder(t, 1, c.owner)
			now := time.Second
			a.Step(now, 2, &wire.Join{Joiner: 2, Point: c.joiner})
			r := tDrain(a)
			acc := tOnly[*wire.JoinAccept](t, r, 2)
			give := tWireZone(can.Zone{Lo: acc.Zone.Lo, Hi: acc.Zone.Hi})
			if !give.Valid(d) || !give.Contains(c.joiner) {
				t.Fatalf("joiner's zone %v does not contain %v", give, c.joiner)
			}
			keep := a.Zone()
			if !keep.Contains(c.owner) || keep.Contains(c.joiner) {
				t.Fatalf("owner keeps %v (own point %v, joiner %v)", keep, c.owner, c.joiner)
			}
			if m, ok := can.Merge(keep, give); !ok || !m.Equal(can.Whole(d)) {
				t.Fatalf("halves %v and %v do not merge back to the whole space", keep, give)
			}
			if a.version != 2 {
				t.Fatalf("owner version %d, want 2", a.version)
			}
			if st := a.Status(); st.JoinsOwned != 1 || st.JoinsRejected != 0 {
				t.Fatalf("status %+v", st)
			}
			if !slices.Equal(tIDs(a), []core.NodeID{2}) {
				t.Fatalf("owner's table %v, want [2]", tIDs(a))
			}
			nb := a.Neighbors()[0]
			if !nb.Zone.Equal(give) || nb.Version != 1 || !nb.Heard || nb.LastHeard != now {
				t.Fatalf("owner's entry for the joiner %+v", nb)
			}
			// The joiner learns the owner's new zone and version.
			if len(acc.Neighbors) != 1 || acc.Neighbors[0].Id != 1 || acc.Neighbors[0].Version != 2 ||
				!tWireZone(can.Zone{Lo: acc.Neighbors[0].Zone.Lo, Hi: acc.Neighbors[0].Zone.Hi}).Equal(keep) {
				t.Fatalf("accept neighbors %v", acc.Neighbors)
			}
			// Split histories are mirror images.
			if len(a.history) != 1 || len(acc.History) != 1 {
				t.Fatalf("histories %v / %v", a.history, acc.History)
			}
			mine, theirs := a.history[0], acc.History[0]
			if mine.Dim != c.dim || mine.At != c.at {
				t.Fatalf("split at dim %d / %d, want dim %d / %d", mine.Dim, mine.At, c.dim, c.at)
			}
			if theirs.Dim != mine.Dim || theirs.At != mine.At || theirs.Upper == mine.Upper ||
				mine.Sibling != 2 || theirs.Sibling != 1 {
				t.Fatalf("history entries not mirror images: owner %v joiner %v", mine, theirs)
			}
			if mine.Upper != (keep.Lo[mine.Dim] == mine.At) || theirs.Upper != (give.Lo[mine.Dim] == mine.At) {
				t.Fatalf("Upper flags wrong: owner %v keep %v, joiner %v give %v", mine, keep, theirs, give)
			}
		})
	}
}

// TestJoinerBecomesMember drives a whole join: Bootstrap, JOIN to the
// contact, JOIN_ACCEPT back.
func TestJoinerBecomesMember(t *testing.T) {
	a := tFounder(t, 1, can.Point{tQ1, tQ1})
	b := New(2, can.Point{tQ3, tQ1}, tConfig, tRand(2))
	now := 3 * time.Second
	b.Bootstrap(now, 1)
	r := tDrain(b)
	join := tOnly[*wire.Join](t, r, 1)
	if join.Joiner != 2 || !slices.Equal(join.Point, []uint32{tQ3, tQ1}) || join.Hops != 0 {
		t.Fatalf("join %v", join)
	}
	if len(r.Timers) != 1 || r.Timers[0] != (core.Timer{Kind: core.TimerJoinRetry, At: now + 2*tPeriod}) || r.Joined || b.Joined() {
		t.Fatalf("after Bootstrap: %+v", r)
	}
	a.Step(now, 2, join)
	acc := tOnly[*wire.JoinAccept](t, tDrain(a), 2)

	now += time.Second
	b.Step(now, 1, acc)
	r = tDrain(b)
	if !r.Joined || !b.Joined() {
		t.Fatal("joiner not joined after JoinAccept")
	}
	if !b.Zone().Equal(tZone2(tHalf, tFull, 0, tFull)) {
		t.Fatalf("joiner zone %v", b.Zone())
	}
	if !slices.Equal(tIDs(b), []core.NodeID{1}) {
		t.Fatalf("joiner's table %v, want [1]", tIDs(b))
	}
	nb := b.Neighbors()[0]
	if !nb.Zone.Equal(a.Zone()) || nb.Version != 2 || !nb.Heard || nb.LastHeard != now {
		t.Fatalf("joiner's entry for the owner %+v", nb)
	}
	if len(r.Messages) != 0 || len(r.Timers) != 1 || r.Timers[0].Kind != core.TimerHeartbeat ||
		r.Timers[0].At < now || r.Timers[0].At >= now+tPeriod {
		t.Fatalf("after joining: %+v", r)
	}
	if s := b.Snapshot(); s.Version != 1 || len(b.history) != 1 || b.history[0].Sibling != 1 {
		t.Fatalf("joiner snapshot %+v history %v", s, b.history)
	}

	// The owner's accept again (sent for a retry that crossed the first)
	// changes nothing and is no duplicate; another owner's accept, of
	// another zone, is counted and changes nothing either.
	before := b.Snapshot()
	b.Step(now, 1, acc)
	if st := b.Status(); st.DuplicateAccepts != 0 {
		t.Fatalf("the same accept again counted as a duplicate: status %+v", st)
	}
	if r := tDrain(b); r.Joined || len(r.Messages) != 0 || !reflect.DeepEqual(before, b.Snapshot()) {
		t.Fatalf("the same accept again changed something: %+v", r)
	}
	other := proto.Clone(acc).(*wire.JoinAccept)
	other.Zone = zoneToWire(tZone2(0, tHalf, 0, tFull))
	b.Step(now, 3, other)
	if st := b.Status(); st.DuplicateAccepts != 1 {
		t.Fatalf("status %+v", st)
	}
	if r := tDrain(b); r.Joined || len(r.Messages) != 0 || !reflect.DeepEqual(before, b.Snapshot()) {
		t.Fatalf("duplicate accept changed something: %+v", r)
	}
}

// TestBufferedMessagesAfterJoin: a zone update reaching a node whose own
// JOIN_ACCEPT is still in flight waits until the node owns a zone; a
// JOIN reaching it is dropped (its joiner retries: a JOIN answered later
// could split a zone for a joiner accepted elsewhere meanwhile).
func TestBufferedMessagesAfterJoin(t *testing.T) {
	a := tFounder(t, 1, can.Point{tQ1, tQ1})
	b := New(2, can.Point{tQ3, tQ1}, tConfig, tRand(2))
	b.Bootstrap(0, 1)
	a.Step(0, 2, tOnly[*wire.Join](t, tDrain(b), 1))
	acc := tOnly[*wire.JoinAccept](t, tDrain(a), 2)

	// Node 3's join and a zone update reach b before its accept.
	b.Step(0, 3, &wire.Join{Joiner: 3, Point: []uint32{tQ3, tQ3}, Hops: 1})
	b.Step(0, 4, &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 4, Zone: zoneToWire(tZone2(0, 1, 0, 1)), Version: 1}})
	if r := tDrain(b); len(r.Messages) != 0 || r.Joined {
		t.Fatalf("unjoined node acted: %+v", r)
	}
	if len(b.pending) != 1 || b.Status().RouteDrops != 1 {
		t.Fatalf("pending %d, route drops %d; want the zone update kept and the JOIN dropped", len(b.pending), b.Status().RouteDrops)
	}
	// A heartbeat before joining is not buffered.
	b.Step(0, 1, &wire.Heartbeat{Self: a.info()})
	if len(b.pending) != 1 {
		t.Fatalf("heartbeat buffered: pending %d", len(b.pending))
	}

	b.Step(time.Second, 1, acc)
	r := tDrain(b)
	if !r.Joined || len(b.pending) != 0 {
		t.Fatalf("joined %v pending %d", r.Joined, len(b.pending))
	}
	if len(r.Messages) != 0 {
		t.Fatalf("messages %v, want none (the JOIN was dropped)", r.Messages)
	}
	if !b.Zone().Equal(tZone2(tHalf, tFull, 0, tFull)) || !slices.Equal(tIDs(b), []core.NodeID{1}) {
		t.Fatalf("after joining: zone %v table %v", b.Zone(), tIDs(b))
	}
	// The buffered update (node 4's zone does not abut) was looked at and ignored.
	if tNeighbor(b, 4) != nil || b.Status().BadMessages != 0 {
		t.Fatalf("node 4 in table or bad messages: %+v", b.Status())
	}
}

// tRouter is a member owning the left half of the 2-D space with three
// neighbors on its right: 2 = [½,1)×[0,¼), 3 = [½,1)×[¼,½), 4 = [½,1)×[½,1).
func tRouter(t *testing.T) *Node {
	t.Helper()
	a := tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	tLink(a, tMember(t, 2, can.Point{tQ3, 1}, tZone2(tHalf, tFull, 0, tQuarter), 1), true)
	tLink(a, tMember(t, 3, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, tQuarter, tHalf), 1), true)
	tLink(a, tMember(t, 4, can.Point{tQ3, tQ3}, tZone2(tHalf, tFull, tHalf, tFull), 1), true)
	return a
}

func TestJoinForwardedToNearestNeighbor(t *testing.T) {
	for _, p := range []can.Point{{tQ3, tQ3}, {tQ3, tQ1 + 5}, {tFull32, 0}, {tQ3, tQ1 - 1}} {
		a := tRouter(t)
		want, wantD := core.NodeID(0), 0.0
		for _, nb := range a.Neighbors() {
			if d := nb.Zone.Dist2(p); want == 0 || d < wantD {
				want, wantD = nb.ID, d
			}
		}
		j := &wire.Join{Joiner: 9, Point: p}
		a.Step(0, 9, j)
		fwd := tOnly[*wire.Join](t, tDrain(a), want)
		if fwd.Hops != 1 || fwd.Joiner != 9 || !slices.Equal(fwd.Point, p) {
			t.Fatalf("point %v: forwarded %v", p, fwd)
		}
		if fwd.Best != a.Zone().Dist2(p) {
			t.Fatalf("point %v: best %v, want this zone's distance %v", p, fwd.Best, a.Zone().Dist2(p))
		}
		if st := a.Status(); st.RouteForwards != 1 || st.RouteDrops != 0 || st.JoinsOwned != 0 || st.RouteNoProgress != 0 {
			t.Fatalf("point %v: status %+v", p, st)
		}
		if !a.Zone().Equal(tZone2(0, tHalf, 0, tFull)) {
			t.Fatalf("router's zone changed: %v", a.Zone())
		}
	}
}

const tFull32 = uint32(tFull - 1)

// TestJoinForwardedToNearestNotContaining: in 3-D, the neighbor owning the
// target is missing from the table; the JOIN goes to the nearest known zone
// and the hop is counted as making no progress.
func TestJoinForwardedToNearestNotContaining(t *testing.T) {
	a := tMember(t, 1, can.Point{tQ1, tQ1, 0}, can.Zone{Lo: []uint64{0, 0, 0}, Hi: []uint64{tHalf, tFull, tFull}}, 1)
	a.upsert(&Neighbor{ID: 2, Zone: can.Zone{Lo: []uint64{tHalf, 0, 0}, Hi: []uint64{tFull, tQuarter, tFull}}, Version: 1})
	a.upsert(&Neighbor{ID: 3, Zone: can.Zone{Lo: []uint64{tHalf, tQuarter, 0}, Hi: []uint64{tFull, tHalf, tFull}}, Version: 1})
	p := can.Point{tQ3, tQ3, 0}
	a.Step(0, 9, &wire.Join{Joiner: 9, Point: p})
	fwd := tOnly[*wire.Join](t, tDrain(a), 3)
	if fwd.Hops != 1 {
		t.Fatalf("hops %d", fwd.Hops)
	}
	if st := a.Status(); st.RouteForwards != 1 || st.RouteNoProgress != 1 {
		t.Fatalf("status %+v", st)
	}
}

func TestJoinDroppedWithoutNeighbors(t *testing.T) {
	a := tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	a.Step(0, 9, &wire.Join{Joiner: 9, Point: []uint32{tQ3, tQ1}})
	if r := tDrain(a); len(r.Messages) != 0 {
		t.Fatalf("sent %v", r.Messages)
	}
	if st := a.Status(); st.RouteDrops != 1 || st.RouteForwards != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestJoinDroppedAfterDetoursOrHops(t *testing.T) {
	p := []uint32{tQ3, tQ3}
	// Arrives no closer than a zone it already visited: a detour.
	a := tRouter(t)
	a.Step(0, 9, &wire.Join{Joiner: 9, Point: slices.Clone(p), Hops: 3, Best: 0.001, Detours: 7})
	fwd := tOnly[*wire.Join](t, tDrain(a), 4)
	if fwd.Detours != 8 || fwd.Hops != 4 || fwd.Best != 0.001 {
		t.Fatalf("forwarded %v", fwd)
	}
	if st := a.Status(); st.RouteDetours != 1 || st.RouteDrops != 0 {
		t.Fatalf("status %+v", st)
	}
	// One detour too many (default MaxDetours 8).
	a = tRouter(t)
	a.Step(0, 9, &wire.Join{Joiner: 9, Point: slices.Clone(p), Hops: 3, Best: 0.001, Detours: 8})
	if r := tDrain(a); len(r.Messages) != 0 || a.Status().RouteDrops != 1 {
		t.Fatalf("not dropped after too many detours: %v %+v", r.Messages, a.Status())
	}
	// Closer than before: progress, the best distance is lowered.
	a = tRouter(t)
	a.Step(0, 9, &wire.Join{Joiner: 9, Point: slices.Clone(p), Hops: 3, Best: 1, Detours: 8})
	fwd = tOnly[*wire.Join](t, tDrain(a), 4)
	if fwd.Detours != 8 || fwd.Best != a.Zone().Dist2(p) || a.Status().RouteDetours != 0 {
		t.Fatalf("forwarded %v status %+v", fwd, a.Status())
	}
	// MaxHops.
	a = tRouter(t)
	a.cfg.MaxHops = 4
	a.Step(0, 9, &wire.Join{Joiner: 9, Point: slices.Clone(p), Hops: 4, Best: 1})
	if r := tDrain(a); len(r.Messages) != 0 || a.Status().RouteDrops != 1 {
		t.Fatalf("not dropped at MaxHops: %v %+v", r.Messages, a.Status())
	}
}

func TestDuplicatePointRejected(t *testing.T) {
	p := can.Point{tQ1, tQ3, 12345}
	a := tFounder(t, 1, p)
	b := New(2, p, tConfig, tRand(2))
	b.Bootstrap(0, 1)
	a.Step(0, 2, tOnly[*wire.Join](t, tDrain(b), 1))
	rej := tOnly[*wire.JoinReject](t, tDrain(a), 2)
	if rej.Reason == "" {
		t.Fatal("reject without a reason")
	}
	if st := a.Status(); st.JoinsRejected != 1 || st.JoinsOwned != 0 {
		t.Fatalf("owner status %+v", st)
	}
	if !a.Zone().Equal(can.Whole(3)) || len(a.Neighbors()) != 0 || a.version != 1 {
		t.Fatalf("owner changed: zone %v table %v version %d", a.Zone(), tIDs(a), a.version)
	}

	// A reject from nobody is ignored.
	b.Step(0, 0, rej)
	if r := tDrain(b); len(r.Messages) != 0 || !slices.Equal(b.Point(), p) {
		t.Fatalf("reject from 0 acted upon: %v", r.Messages)
	}

	b.Step(0, 1, rej)
	np := slices.Clone(b.Point())
	if !slices.Equal(np[:2], p[:2]) || np[2] == p[2] {
		t.Fatalf("after reject point %v (was %v): want only the virtual coordinate redrawn", np, p)
	}
	join := tOnly[*wire.Join](t, tDrain(b), 1)
	if join.Joiner != 2 || !slices.Equal(join.Point, []uint32(np)) {
		t.Fatalf("rejoin %v", join)
	}
	if !slices.Equal(b.Snapshot().Point, np) {
		t.Fatal("snapshot has the old point")
	}
	a.Step(0, 2, join)
	acc := tOnly[*wire.JoinAccept](t, tDrain(a), 2)
	b.Step(0, 1, acc)
	if !b.Joined() || !b.Zone().Contains(np) || !a.Zone().Contains(p) {
		t.Fatalf("second attempt failed: joined %v zone %v", b.Joined(), b.Zone())
	}
	// Once joined, a reject is ignored.
	b.Step(0, 1, rej)
	if r := tDrain(b); len(r.Messages) != 0 || !slices.Equal(b.Point(), np) {
		t.Fatalf("reject after joining acted upon: %v", r.Messages)
	}
}

// TestHalveMovesJoinersVirtualCoordinate: with overlay.split halve, an owner
// whose point equals the joiner's halves the virtual dimension instead of
// rejecting the join, and tells the joiner its new virtual coordinate
// (002 §4.2.2); resource dimensions are halved without moving anybody.
func TestHalveMovesJoinersVirtualCoordinate(t *testing.T) {
	cfg := tConfig
	cfg.Split = SplitHalve
	p := can.Point{tQ1, tQ3, 12345}
	a := New(1, p, cfg, tRand(1))
	a.Bootstrap(0, 0)
	b := New(2, p, cfg, tRand(2))
	b.Bootstrap(0, 1)
	a.Step(0, 2, tOnly[*wire.Join](t, tDrain(b), 1))
	acc := tOnly[*wire.JoinAccept](t, tDrain(a), 2)
	if acc.Virtual == nil || acc.GetVirtual() == p[2] {
		t.Fatalf("accept %v: want a moved virtual coordinate", acc)
	}
	b.Step(time.Second, 1, acc)
	np := b.Point()
	if !b.Joined() || !slices.Equal(np[:2], p[:2]) || np[2] != acc.GetVirtual() || !b.Zone().Contains(np) {
		t.Fatalf("joiner joined %v at %v zone %v, want point %v with virtual %d", b.Joined(), np, b.Zone(), p, acc.GetVirtual())
	}
	if !a.Zone().Contains(p) || a.Zone().Volume().Cmp(b.Zone().Volume()) != 0 {
		t.Fatalf("owner %v and joiner %v: not two halves", a.Zone(), b.Zone())
	}
	// A joiner separated by a resource midpoint keeps its point.
	c := New(3, can.Point{tQ3, tQ3, 12345}, cfg, tRand(3))
	c.Bootstrap(0, 1)
	a.Step(0, 3, tOnly[*wire.Join](t, tDrain(c), 1))
	if acc := tTo[*wire.JoinAccept](t, tDrain(a), 3); acc.Virtual != nil {
		t.Fatalf("accept %v moved a joiner that a resource midpoint separates", acc)
	}
	// An accept whose zone does not hold the moved point is refused.
	d := New(4, p, cfg, tRand(4))
	d.Bootstrap(0, 1)
	tDrain(d)
	bad, upper := uint32(0), can.Whole(3)
	upper.Lo[2] = tHalf
	d.Step(0, 1, &wire.JoinAccept{Zone: zoneToWire(upper), Virtual: &bad})
	if d.Joined() || d.Status().BadMessages != 1 || !slices.Equal(d.Point(), p) {
		t.Fatalf("bad accept: joined %v point %v status %+v", d.Joined(), d.Point(), d.Status())
	}
}

// tColumn builds the 2-D layout of the ZoneUpdate test: owner 1 owns the
// left half, 2 = [½,1)×[0,½) and 3 = [½,1)×[½,1) the right half; all
// tables complete and first-hand.
func tColumn(t *testing.T) (o, r1, r2 *Node) {
	t.Helper()
	o = tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	r1 = tMember(t, 2, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, 0, tHalf), 1)
	r2 = tMember(t, 3, can.Point{tQ3, tQ3}, tZone2(tHalf, tFull, tHalf, tFull), 1)
	for _, pair := range [][2]*Node{{o, r1}, {o, r2}, {r1, r2}} {
		tLink(pair[0], pair[1], true)
		tLink(pair[1], pair[0], true)
	}
	return o, r1, r2
}

func TestZoneUpdateAfterSplit(t *testing.T) {
	o, r1, r2 := tColumn(t)
	now := time.Second
	o.Step(now, 4, &wire.Join{Joiner: 4, Point: []uint32{tQ1, tQ3}})
	r := tDrain(o)
	if len(r.Messages) != 3 {
		t.Fatalf("owner sent %v, want an accept and two updates", r.Messages)
	}
	acc := tTo[*wire.JoinAccept](t, r, 4)
	u1, u2 := tTo[*wire.ZoneUpdate](t, r, 2), tTo[*wire.ZoneUpdate](t, r, 3)
	if u1 != u2 {
		t.Fatal("old neighbors got different update values")
	}
	if u1.Self.Id != 1 || u1.Self.Version != 2 || len(u1.Others) != 1 || u1.Others[0].Id != 4 || u1.Others[0].Version != 1 {
		t.Fatalf("update %v", u1)
	}
	// The joiner gets the owner and all its old neighbors (it keeps those
	// abutting its part, and the whole list as the owner's, whose take-over
	// node it is).
	if ids := tInfoIDs(acc.Neighbors); !slices.Equal(ids, []core.NodeID{1, 2, 3}) {
		t.Fatalf("accept neighbors %v, want [1 2 3]", ids)
	}
	if u1.LastSplit == nil || u1.LastSplit.Sibling != 4 {
		t.Fatalf("update's last split %v, want the split with the joiner", u1.LastSplit)
	}
	jn := New(4, can.Point{tQ1, tQ3}, tConfig, tRand(4))
	jn.Bootstrap(0, 1)
	tDrain(jn)
	jn.Step(now, 1, acc)
	if ids := tIDs(jn); !slices.Equal(ids, []core.NodeID{1, 3}) {
		t.Fatalf("joiner's table %v, want [1 3]", ids)
	}
	if own := tNeighbor(jn, 1); own.LastSplit == nil || own.LastSplit.Sibling != 4 || len(jn.takeoverList(own)) != 2 {
		t.Fatalf("joiner's entry for the owner %+v: want its last split and its list", own)
	}
	// The owner keeps [0,½)×[0,½): 3 is now only a corner away.
	if !o.Zone().Equal(tZone2(0, tHalf, 0, tHalf)) || !slices.Equal(tIDs(o), []core.NodeID{2, 4}) {
		t.Fatalf("owner zone %v table %v", o.Zone(), tIDs(o))
	}
	if ts, ok := o.gone[3]; !ok || ts.version != 1 {
		t.Fatalf("owner has no tombstone for 3: %v", o.gone)
	}

	r1.Step(now, 1, u1)
	if !slices.Equal(tIDs(r1), []core.NodeID{1, 3}) || !tNeighbor(r1, 1).Zone.Equal(o.Zone()) || tNeighbor(r1, 1).Version != 2 {
		t.Fatalf("r1 table %v", tIDs(r1))
	}
	if st := r1.Status(); st.LinksLearned != 0 {
		t.Fatalf("r1 status %+v", st)
	}
	r2.Step(now, 1, u2)
	if !slices.Equal(tIDs(r2), []core.NodeID{2, 4}) {
		t.Fatalf("r2 table %v, want [2 4]", tIDs(r2))
	}
	if nb := tNeighbor(r2, 4); !nb.Zone.Equal(tZone2(0, tHalf, tHalf, tFull)) || nb.Version != 1 || nb.Heard {
		t.Fatalf("r2's entry for the joiner %+v", nb)
	}
	// An introduction by the node that split is not a repair.
	if st := r2.Status(); st.LinksLearned != 0 {
		t.Fatalf("r2 status %+v", st)
	}
	for _, n := range []*Node{r1, r2} {
		if r := tDrain(n); len(r.Messages) != 0 {
			t.Fatalf("node %d answered an update: %v", n.id, r.Messages)
		}
	}

	j := New(4, can.Point{tQ1, tQ3}, tConfig, tRand(4))
	j.Step(now, 1, acc)
	if !j.Joined() || !slices.Equal(tIDs(j), []core.NodeID{1, 3}) {
		t.Fatalf("joiner table %v", tIDs(j))
	}
	if !tNeighbor(j, 1).Heard || tNeighbor(j, 3).Heard {
		t.Fatal("joiner: only the owner's entry is first-hand")
	}

	// A heartbeat round changes nothing: every table is already exact.
	nodes := []*Node{o, r1, r2, j}
	net := newTNet(t)
	for _, n := range nodes {
		net.add(n)
		tDrain(n)
	}
	net.heartbeats(2 * tPeriod)
	tCheckExact(t, nodes, 2, "after heartbeats")
	for _, n := range nodes {
		if st := n.Status(); st.NotNeighborNotes != 0 || st.BadMessages != 0 {
			t.Fatalf("node %d: %+v", n.id, st)
		}
	}
}

// tTriangle: A = 1 owns the left half, C = 3 = [½,1)×[0,½), B = 2 =
// [½,1)×[½,1). A's table lacks B (a broken link); C knows both.
func tTriangle(t *testing.T, cHeardB bool) (a, b, c *Node) {
	t.Helper()
	a = tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	b = tMember(t, 2, can.Point{tQ3, tQ3}, tZone2(tHalf, tFull, tHalf, tFull), 1)
	c = tMember(t, 3, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, 0, tHalf), 1)
	tLink(a, c, true)
	tLink(c, a, true)
	tLink(c, b, cHeardB)
	tLink(b, c, true)
	tLink(b, a, false)
	return a, b, c
}

func TestRepairFromHeartbeatList(t *testing.T) {
	a, b, c := tTriangle(t, true)
	now := c.nextBeat
	c.Tick(now, core.TimerHeartbeat)
	r := tDrain(c)
	hb := tTo[*wire.Heartbeat](t, r, 1)
	if tTo[*wire.Heartbeat](t, r, 2) != hb {
		t.Fatal("heartbeats differ")
	}
	if ids := tInfoIDs(hb.Neighbors); !slices.Equal(ids, []core.NodeID{1, 2}) {
		t.Fatalf("heartbeat list %v", ids)
	}
	a.Step(now, 3, hb)
	if !slices.Equal(tIDs(a), []core.NodeID{2, 3}) {
		t.Fatalf("A's table %v, want [2 3]", tIDs(a))
	}
	// A introduces itself to B at once: B may lack A just as A lacked B.
	intro := tOnly[*wire.ZoneUpdate](t, tDrain(a), 2)
	if core.NodeID(intro.Self.Id) != 1 || !tWireZone(can.Zone{Lo: intro.Self.Zone.Lo, Hi: intro.Self.Zone.Hi}).Equal(a.Zone()) {
		t.Fatalf("introduction %v", intro)
	}
	if nb := tNeighbor(a, 2); !nb.Zone.Equal(b.Zone()) || nb.Version != 1 || nb.Heard {
		t.Fatalf("A's entry for B %+v", nb)
	}
	if st := a.Status(); st.LinksLearned != 1 {
		t.Fatalf("A status %+v", st)
	}
	// A's next heartbeat reaches B but does not relay B's second-hand entry.
	a.Tick(a.nextBeat, core.TimerHeartbeat)
	r = tDrain(a)
	hbA := tTo[*wire.Heartbeat](t, r, 2)
	if ids := tInfoIDs(hbA.Neighbors); !slices.Equal(ids, []core.NodeID{3}) {
		t.Fatalf("A relays %v, want only [3]", ids)
	}
	if tNeighbor(b, 1).Heard {
		t.Fatal("setup: B has heard from A")
	}
	b.Step(a.nextBeat, 1, hbA)
	if !tNeighbor(b, 1).Heard || len(tDrain(b).Messages) != 0 {
		t.Fatal("B did not take A's heartbeat as first-hand")
	}
}

func TestSecondHandEntryNotRelayed(t *testing.T) {
	a, _, c := tTriangle(t, false)
	now := c.nextBeat
	c.Tick(now, core.TimerHeartbeat)
	r := tDrain(c)
	if len(r.Messages) != 2 {
		t.Fatalf("C sent %v", r.Messages)
	}
	hb := tTo[*wire.Heartbeat](t, r, 1)
	if ids := tInfoIDs(hb.Neighbors); !slices.Equal(ids, []core.NodeID{1}) {
		t.Fatalf("heartbeat list %v, want only [1]", ids)
	}
	a.Step(now, 3, hb)
	if !slices.Equal(tIDs(a), []core.NodeID{3}) || a.Status().LinksLearned != 0 {
		t.Fatalf("A learned from a second-hand entry: %v %+v", tIDs(a), a.Status())
	}
}

// tStale: A = 1 owns [0,½)², B = 2 owns [½,1)² at version 2, only a corner
// away; A still holds B's version-1 zone [½,1)×[0,1), which abuts.
func tStale(t *testing.T) (a, b *Node) {
	t.Helper()
	a = tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tHalf), 1)
	b = tMember(t, 2, can.Point{tQ3, tQ3}, tZone2(tHalf, tFull, tHalf, tFull), 2)
	a.upsert(&Neighbor{ID: 2, Zone: tZone2(tHalf, tFull, 0, tFull), Version: 1, Heard: true})
	return a, b
}

func TestNotNeighborNote(t *testing.T) {
	a, b := tStale(t)
	now := a.nextBeat
	a.Tick(now, core.TimerHeartbeat)
	hb := tOnly[*wire.Heartbeat](t, tDrain(a), 2)
	b.Step(now, 1, hb)
	note := tOnly[*wire.ZoneUpdate](t, tDrain(b), 1)
	if note.Self.Id != 2 || note.Self.Version != 2 || len(note.Others) != 0 ||
		!tWireZone(can.Zone{Lo: note.Self.Zone.Lo, Hi: note.Self.Zone.Hi}).Equal(b.Zone()) {
		t.Fatalf("note %v", note)
	}
	if st := b.Status(); st.NotNeighborNotes != 1 || len(b.Neighbors()) != 0 {
		t.Fatalf("B status %+v table %v", st, tIDs(b))
	}
	a.Step(now, 2, note)
	if len(a.Neighbors()) != 0 {
		t.Fatalf("A kept %v", tIDs(a))
	}
	if ts, ok := a.gone[2]; !ok || ts.version != 2 {
		t.Fatalf("tombstone %v", a.gone)
	}
	if r := tDrain(a); len(r.Messages) != 0 {
		t.Fatalf("A answered the note: %v", r.Messages)
	}
	// A heartbeat from a true neighbor gets no note.
	c := tMember(t, 3, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, 0, tHalf), 1)
	a.Step(now, 3, &wire.Heartbeat{Self: c.info()})
	if r := tDrain(a); len(r.Messages) != 0 || a.Status().NotNeighborNotes != 0 || !slices.Equal(tIDs(a), []core.NodeID{3}) {
		t.Fatalf("A: %v %+v %v", r.Messages, a.Status(), tIDs(a))
	}
}

// tDropped returns A after it dropped B (tombstone at version 2) and C =
// [½,1)×[0,½), a true neighbor of A that relays news about B.
func tDropped(t *testing.T) (a, c *Node) {
	t.Helper()
	a, b := tStale(t)
	a.Step(0, 2, &wire.ZoneUpdate{Self: b.info()})
	if len(a.Neighbors()) != 0 {
		t.Fatal("setup: B not dropped")
	}
	c = tMember(t, 3, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, 0, tHalf), 1)
	tLink(a, c, true)
	return a, c
}

func TestTombstones(t *testing.T) {
	abutting := zoneToWire(tZone2(tHalf, tFull, 0, tFull)) // abuts A = [0,½)²
	for _, v := range []uint64{1, 2} {
		a, c := tDropped(t)
		a.Step(time.Second, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: abutting, Version: v}}})
		if tNeighbor(a, 2) != nil || a.Status().LinksLearned != 0 {
			t.Fatalf("second-hand version %d brought a dropped node back", v)
		}
		a.Step(time.Second, 3, &wire.ZoneUpdate{Self: c.info(), Others: []*wire.NodeInfo{{Id: 2, Zone: abutting, Version: v}}})
		if tNeighbor(a, 2) != nil {
			t.Fatalf("second-hand version %d in an update brought a dropped node back", v)
		}
	}
	// Newer second-hand news is considered, and clears the tombstone.
	a, c := tDropped(t)
	a.Step(time.Second, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: abutting, Version: 3}}})
	if nb := tNeighbor(a, 2); nb == nil || nb.Version != 3 || nb.Heard {
		t.Fatalf("newer second-hand news ignored: %+v", nb)
	}
	if _, ok := a.gone[2]; ok || a.Status().LinksLearned != 1 {
		t.Fatalf("tombstone kept or link not counted: %v %+v", a.gone, a.Status())
	}
	// First-hand news is always considered, whatever its version.
	a, _ = tDropped(t)
	a.Step(time.Second, 2, &wire.Heartbeat{Self: &wire.NodeInfo{Id: 2, Zone: abutting, Version: 1}})
	if nb := tNeighbor(a, 2); nb == nil || !nb.Heard || nb.LastHeard != time.Second {
		t.Fatalf("first-hand news ignored: %+v", nb)
	}
	// (B's zone overlaps C's as A knows them: A introduces the two rivals
	// to each other, and sends nothing else.)
	for _, o := range tDrain(a).Messages {
		if u, ok := o.Msg.(*wire.ZoneUpdate); !ok || len(u.Others) != 1 {
			t.Fatalf("unexpected note %v", o)
		}
	}
}

func TestTombstonesExpire(t *testing.T) {
	a, c := tDropped(t)
	abutting := zoneToWire(tZone2(tHalf, tFull, 0, tFull))
	// Heartbeats within the TTL keep the tombstone, later ones expire it.
	now := time.Duration(3+tombstoneSlack) * tPeriod // FailAfter + slack
	a.Tick(now, core.TimerHeartbeat)
	if _, ok := a.gone[2]; !ok {
		t.Fatal("tombstone expired too early")
	}
	now += tPeriod
	a.Tick(now, core.TimerHeartbeat)
	if _, ok := a.gone[2]; ok {
		t.Fatal("tombstone never expires")
	}
	a.Step(now, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: abutting, Version: 2}}})
	if tNeighbor(a, 2) == nil {
		t.Fatal("expired tombstone still blocks")
	}
}

func TestOlderInfoNeverOverwrites(t *testing.T) {
	a := tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	c := tMember(t, 3, can.Point{tQ3, 1}, tZone2(tHalf, tFull, 0, tQuarter), 1)
	tLink(a, c, true)
	z3 := tZone2(tHalf, tFull, tHalf, tFull)
	a.upsert(&Neighbor{ID: 2, Zone: z3.Clone(), Version: 3, Heard: true})
	older := tZone2(tHalf, tFull, tQuarter, tFull)
	for _, v := range []uint64{2, 3} {
		a.Step(time.Second, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: zoneToWire(older), Version: v}}})
		if nb := tNeighbor(a, 2); nb == nil || nb.Version != 3 || !nb.Zone.Equal(z3) {
			t.Fatalf("second-hand version %d overwrote version 3: %+v", v, nb)
		}
	}
	// Older first-hand news (reordered messages) does not overwrite either.
	a.Step(2*time.Second, 2, &wire.Heartbeat{Self: &wire.NodeInfo{Id: 2, Zone: zoneToWire(older), Version: 2}})
	if nb := tNeighbor(a, 2); nb.Version != 3 || !nb.Zone.Equal(z3) || nb.LastHeard != 2*time.Second {
		t.Fatalf("older first-hand news: %+v", nb)
	}
	// Newer second-hand news does.
	a.Step(3*time.Second, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: zoneToWire(older), Version: 4}}})
	if nb := tNeighbor(a, 2); nb.Version != 4 || !nb.Zone.Equal(older) {
		t.Fatalf("newer second-hand news ignored: %+v", nb)
	}
	// Newer news of a zone that no longer abuts drops the entry.
	a.Step(3*time.Second, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: zoneToWire(tZone2(tHalf, tFull, tHalf, tFull)), Version: 5}}})
	a.Step(3*time.Second, 3, &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: zoneToWire(tZone2(tHalf+1, tFull, tHalf, tFull)), Version: 6}}})
	if tNeighbor(a, 2) != nil || a.gone[2].version != 6 {
		t.Fatalf("entry kept after it stopped abutting: %v %v", tIDs(a), a.gone)
	}
}

func TestJoinRetry(t *testing.T) {
	b := New(2, can.Point{1, 2}, Config{HeartbeatPeriod: tPeriod, JoinTimeout: 5 * time.Second}, tRand(2))
	now := 10 * time.Second
	b.Bootstrap(now, 1)
	r := tDrain(b)
	deadline := now + 5*time.Second
	if len(r.Timers) != 1 || r.Timers[0] != (core.Timer{Kind: core.TimerJoinRetry, At: deadline}) {
		t.Fatalf("timers %v", r.Timers)
	}
	b.Tick(deadline-1, core.TimerJoinRetry)
	if r := tDrain(b); r.NeedBootstrap || b.Status().JoinRetries != 0 {
		t.Fatal("retry before the deadline")
	}
	b.Tick(deadline, core.TimerJoinRetry)
	if r := tDrain(b); !r.NeedBootstrap || len(r.Messages) != 0 || b.Status().JoinRetries != 1 {
		t.Fatalf("no retry at the deadline: %+v %+v", r, b.Status())
	}
	if r := tDrain(b); r.NeedBootstrap {
		t.Fatal("NeedBootstrap reported twice")
	}
	// A new attempt moves the deadline: the old timer is stale.
	b.Bootstrap(deadline, 3)
	r = tDrain(b)
	tOnly[*wire.Join](t, r, 3)
	if r.Timers[0].At != deadline+5*time.Second {
		t.Fatalf("second attempt timer %v", r.Timers)
	}
	b.Tick(deadline, core.TimerJoinRetry)
	if r := tDrain(b); r.NeedBootstrap {
		t.Fatal("stale retry timer acted upon")
	}

	// After joining, the retry timer does nothing.
	a := tFounder(t, 1, can.Point{tQ1, tQ1})
	j := New(4, can.Point{tQ3, tQ1}, tConfig, tRand(4))
	j.Bootstrap(0, 1)
	r = tDrain(j)
	a.Step(0, 4, tOnly[*wire.Join](t, r, 1))
	j.Step(0, 1, tOnly[*wire.JoinAccept](t, tDrain(a), 4))
	tDrain(j)
	j.Tick(r.Timers[0].At, core.TimerJoinRetry)
	if r := tDrain(j); r.NeedBootstrap || len(r.Messages) != 0 || j.Status().JoinRetries != 0 {
		t.Fatalf("retry after joining: %+v", r)
	}
	// The default timeout is two heartbeat periods.
	d := New(5, can.Point{1, 2}, tConfig, tRand(5))
	d.Bootstrap(0, 1)
	if r := tDrain(d); r.Timers[0].At != 2*tPeriod {
		t.Fatalf("default join timeout %v", r.Timers[0].At)
	}
}

func TestHeartbeatTimer(t *testing.T) {
	o, r1, r2 := tColumn(t)
	tNeighbor(o, 3).Heard = false
	due := o.nextBeat
	o.Tick(due-1, core.TimerHeartbeat)
	if r := tDrain(o); len(r.Messages) != 0 {
		t.Fatalf("heartbeat before it was due: %v", r.Messages)
	}
	o.Tick(due, core.TimerHeartbeat)
	r := tDrain(o)
	if len(r.Messages) != 2 {
		t.Fatalf("heartbeat went to %v, want both neighbors", r.Messages)
	}
	hb := tTo[*wire.Heartbeat](t, r, 2)
	if tTo[*wire.Heartbeat](t, r, 3) != hb {
		t.Fatal("neighbors got different heartbeat values")
	}
	if hb.Self.Id != 1 || hb.Self.Version != 1 || !tWireZone(can.Zone{Lo: hb.Self.Zone.Lo, Hi: hb.Self.Zone.Hi}).Equal(o.Zone()) {
		t.Fatalf("heartbeat self %v", hb.Self)
	}
	if ids := tInfoIDs(hb.Neighbors); !slices.Equal(ids, []core.NodeID{2}) {
		t.Fatalf("heartbeat list %v, want only the first-hand entry [2]", ids)
	}
	if len(r.Timers) != 1 || r.Timers[0] != (core.Timer{Kind: core.TimerHeartbeat, At: due + tPeriod}) {
		t.Fatalf("next timer %v, want %v", r.Timers, due+tPeriod)
	}
	// A duplicate tick for the same due time sends nothing.
	o.Tick(due, core.TimerHeartbeat)
	if r := tDrain(o); len(r.Messages) != 0 {
		t.Fatalf("second heartbeat in the same period: %v", r.Messages)
	}
	// A late tick keeps the phase: the next beat is on the grid after now.
	// (Late, but before the neighbors count as failed.)
	late := due + tPeriod + tPeriod/2
	o.Tick(late, core.TimerHeartbeat)
	r = tDrain(o)
	if len(r.Messages) != 2 || len(r.Timers) != 1 || r.Timers[0].At != due+2*tPeriod {
		t.Fatalf("late tick: %+v, want next at %v", r, due+2*tPeriod)
	}
	for _, n := range []*Node{r1, r2} {
		n.Step(due, 1, hb)
		if r := tDrain(n); len(r.Messages) != 0 {
			t.Fatalf("node %d answered a heartbeat: %v", n.id, r.Messages)
		}
	}
	// No heartbeats before joining.
	u := New(9, can.Point{1, 2}, tConfig, tRand(9))
	u.Tick(time.Hour, core.TimerHeartbeat)
	if r := tDrain(u); len(r.Messages) != 0 || len(r.Timers) != 0 {
		t.Fatalf("unjoined node beat: %+v", r)
	}
}

func TestMalformedMessages(t *testing.T) {
	bad3 := zoneToWire(can.Whole(3))
	cases := []struct {
		name     string
		joined   bool
		from     core.NodeID
		msg      proto.Message
		badCount uint64
	}{
		{"heartbeat-nil-self", true, 2, &wire.Heartbeat{}, 1},
		{"heartbeat-from-mismatch", true, 2, &wire.Heartbeat{Self: &wire.NodeInfo{Id: 3, Zone: zoneToWire(tZone2(tHalf, tFull, 0, tHalf)), Version: 1}}, 1},
		{"update-nil-self", true, 2, &wire.ZoneUpdate{Others: []*wire.NodeInfo{{Id: 5, Zone: zoneToWire(tZone2(tHalf, tFull, tHalf, tFull)), Version: 1}}}, 1},
		{"update-from-mismatch", true, 2, &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 3, Zone: zoneToWire(tZone2(tHalf, tFull, 0, tHalf)), Version: 9}}, 1},
		{"update-zone-wrong-dims", true, 2, &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 2, Zone: bad3, Version: 9}}, 1},
		{"update-zone-missing", true, 2, &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 2, Version: 9}}, 1},
		{"update-zone-empty", true, 2, &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 2, Zone: zoneToWire(tZone2(tHalf, tHalf, 0, tHalf)), Version: 9}}, 1},
		{"join-short-point", true, 2, &wire.Join{Joiner: 7, Point: []uint32{tQ3}}, 1},
		{"join-long-point", true, 2, &wire.Join{Joiner: 7, Point: []uint32{tQ3, tQ3, 1}}, 1},
		{"join-no-joiner", true, 2, &wire.Join{Point: []uint32{tQ1, tQ3}}, 1},
		{"join-short-point-unjoined", false, 2, &wire.Join{Joiner: 7, Point: []uint32{tQ3}}, 1},
		{"accept-wrong-dims", false, 1, &wire.JoinAccept{Zone: bad3}, 1},
		{"accept-no-zone", false, 1, &wire.JoinAccept{}, 1},
		{"accept-not-containing", false, 1, &wire.JoinAccept{Zone: zoneToWire(tZone2(0, tHalf, 0, tFull))}, 1},
		{"unknown-type", true, 2, &wire.Envelope{}, 1},
		{"nil", true, 2, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n *Node
			if c.joined {
				n, _, _ = tColumn(t) // node 1 with neighbors 2 and 3
			} else {
				n = New(1, can.Point{tQ3, tQ1}, tConfig, tRand(1))
				n.Bootstrap(0, 5)
				tDrain(n)
			}
			before := n.Snapshot()
			beforeNbrs := make([]Neighbor, len(n.nbrs))
			for i, nb := range n.nbrs {
				beforeNbrs[i] = *nb
			}
			st := n.Status()
			n.Step(time.Minute, c.from, c.msg)
			st.BadMessages += c.badCount
			if got := n.Status(); got != st {
				t.Fatalf("status %+v, want %+v", got, st)
			}
			if r := tDrain(n); len(r.Messages) != 0 || len(r.Timers) != 0 || r.Joined {
				t.Fatalf("acted upon: %+v", r)
			}
			if !reflect.DeepEqual(before, n.Snapshot()) {
				t.Fatalf("state changed: %+v -> %+v", before, n.Snapshot())
			}
			for i, nb := range n.nbrs {
				if !reflect.DeepEqual(*nb, beforeNbrs[i]) {
					t.Fatalf("neighbor changed: %+v -> %+v", beforeNbrs[i], *nb)
				}
			}
			if len(n.pending) != 0 {
				t.Fatalf("malformed message buffered")
			}
		})
	}
}

// TestHeartbeatWithBadZoneIgnored: a heartbeat whose sender zone is
// malformed is counted as bad and ignored whole: no not-neighbor answer,
// nothing learned from its list.
func TestHeartbeatWithBadZoneIgnored(t *testing.T) {
	a, b, _ := tTriangle(t, true)
	st := a.Status()
	a.Step(time.Second, 2, &wire.Heartbeat{
		Self:      &wire.NodeInfo{Id: 2, Zone: zoneToWire(can.Whole(3)), Version: 7},
		Neighbors: []*wire.NodeInfo{{Id: 2, Zone: zoneToWire(b.Zone()), Version: 1}},
	})
	st.BadMessages++
	if got := a.Status(); got != st {
		t.Errorf("status %+v, want %+v", got, st)
	}
	if r := tDrain(a); len(r.Messages) != 0 {
		t.Errorf("answered a malformed heartbeat: %v", r.Messages)
	}
	if tNeighbor(a, 2) != nil {
		t.Errorf("learned from a malformed heartbeat")
	}
}

func TestSnapshotIsACopy(t *testing.T) {
	o, _, _ := tColumn(t)
	s := o.Snapshot()
	want := o.Snapshot()
	if !reflect.DeepEqual(s, want) || s.ID != 1 || !s.Joined || !slices.Equal(s.Neighbors, []core.NodeID{2, 3}) ||
		!slices.Equal(s.NeighborVersions, []uint64{1, 1}) || !s.Zone.Equal(o.Zone()) {
		t.Fatalf("snapshot %+v", s)
	}
	s.Point[0]++
	s.Zone.Lo[0]++
	s.Zone.Hi[1]--
	s.Neighbors[0] = 99
	s.NeighborVersions[0] = 99
	if !reflect.DeepEqual(o.Snapshot(), want) {
		t.Fatalf("node changed with its snapshot: %+v", o.Snapshot())
	}
	if !o.Zone().Equal(tZone2(0, tHalf, 0, tFull)) || o.Point()[0] != tQ1 || o.Neighbors()[0].ID != 2 || o.Neighbors()[0].Version != 1 {
		t.Fatal("node changed with its snapshot")
	}
	// Unjoined nodes snapshot too.
	u := New(5, can.Point{1, 2}, tConfig, tRand(5))
	if s := u.Snapshot(); s.Joined || len(s.Neighbors) != 0 || !slices.Equal(s.Point, can.Point{1, 2}) {
		t.Fatalf("unjoined snapshot %+v", s)
	}
}

func TestNewCopiesPoint(t *testing.T) {
	p := can.Point{1, 2, 3}
	n := New(1, p, Config{Dims: 7}, tRand(1))
	p[0] = 100
	if n.Point()[0] != 1 || n.cfg.Dims != 3 {
		t.Fatalf("point %v dims %d", n.Point(), n.cfg.Dims)
	}
}

// tNet is overlay cores on the shared test network (actors/testnet):
// messages delivered at once, in the order they were sent, as copies (as
// the wire would). The tests beat the heartbeats themselves (heartbeats);
// the cores' own timers are not fired.
type tNet struct {
	*testnet.Net[core.NodeID, core.TimerKind]
	t     testing.TB
	nodes map[core.NodeID]*Node
}

func newTNet(t testing.TB) *tNet {
	return &tNet{Net: testnet.New[core.NodeID, core.TimerKind](t), t: t, nodes: map[core.NodeID]*Node{}}
}

// add puts n on the network.
func (w *tNet) add(n *Node) {
	w.nodes[n.id] = n
	w.Add(n.id, tEndpoint{n})
}

// remove takes node id off the network (it fails silently).
func (w *tNet) remove(id core.NodeID) {
	delete(w.nodes, id)
	w.Remove(id)
}

// collect queues what n wants sent (after driving it directly).
func (w *tNet) collect(n *Node) { w.Collect(n.id) }

// run delivers everything queued and everything it causes.
func (w *tNet) run() { w.Deliver() }

// tEndpoint is an overlay core on the test network.
type tEndpoint struct{ *Node }

func (e tEndpoint) Flush(send func(core.NodeID, proto.Message), timer func(time.Duration, core.TimerKind)) {
	r := e.Ready()
	for _, o := range r.Messages {
		send(o.To, o.Msg)
	}
	for _, tm := range r.Timers {
		timer(tm.At, tm.Kind)
	}
	e.Advance()
}

// heartbeats lets every node beat once at time at (sorted by ID) and
// delivers everything.
func (w *tNet) heartbeats(at time.Duration) {
	w.t.Helper()
	w.Now = at
	for _, id := range w.IDs() {
		n := w.nodes[id]
		if n.nextBeat > at {
			w.t.Fatalf("node %d: heartbeat due at %v, after %v", id, n.nextBeat, at)
		}
		n.Tick(at, core.TimerHeartbeat)
		w.collect(n)
	}
	w.DropTimers() // the tests beat themselves
	w.run()
}

// tCheckExact checks that the nodes' zones (their own and their extra
// zones) tile the space and that every table holds exactly the true
// neighbors with their current zones.
func tCheckExact(t *testing.T, nodes []*Node, d int, what string) {
	t.Helper()
	tCheckTiling(t, nodes, d, what)
	tCheckTables(t, nodes, what)
}

// tCheckTiling checks that the nodes' zones, extra zones included, tile
// the space.
func tCheckTiling(t *testing.T, nodes []*Node, d int, what string) {
	t.Helper()
	sum := new(big.Int)
	for i, n := range nodes {
		if !n.Joined() || !n.Zone().Valid(d) || !n.Zone().Contains(n.Point()) {
			t.Fatalf("%s: node %d joined %v zone %v point %v", what, n.id, n.Joined(), n.Zone(), n.Point())
		}
		for _, z := range n.zones() {
			sum.Add(sum, z.Volume())
		}
		for _, m := range nodes[i+1:] {
			for _, a := range n.zones() {
				for _, b := range m.zones() {
					if can.Overlaps(a, b) {
						t.Fatalf("%s: zones of %d and %d overlap", what, n.id, m.id)
					}
				}
			}
		}
	}
	if sum.Cmp(can.SpaceVolume(d)) != 0 {
		t.Fatalf("%s: zones do not tile the space", what)
	}
}

// tCheckIndex checks that a node's id index and neighbor boxes agree with
// its table.
func tCheckIndex(t *testing.T, n *Node, what string) {
	t.Helper()
	if len(n.ids) != len(n.nbrs) || len(n.boxes) != len(n.nbrs)*n.stride() {
		t.Fatalf("%s: node %d: %d ids, %d boxes for %d neighbors", what, n.id, len(n.ids), len(n.boxes), len(n.nbrs))
	}
	for i, nb := range n.nbrs {
		z, extra := n.box(i)
		if n.ids[i] != nb.ID || !z.Equal(nb.Zone) || extra != (len(nb.Extra) > 0) {
			t.Fatalf("%s: node %d: index %d says %d %v %v, table %d %v %d extras", what, n.id, i, n.ids[i], z, extra, nb.ID, nb.Zone, len(nb.Extra))
		}
	}
}

// tCheckTables checks that every table holds exactly the true neighbors
// with their current zones.
func tCheckTables(t *testing.T, nodes []*Node, what string) {
	t.Helper()
	for _, n := range nodes {
		var want []core.NodeID
		for _, m := range nodes {
			if m != n && n.abuts(m.zone, m.extra) {
				want = append(want, m.id)
			}
		}
		slices.Sort(want)
		if got := tIDs(n); !slices.Equal(got, want) {
			t.Fatalf("%s: node %d table %v, true neighbors %v", what, n.id, got, want)
		}
		tCheckIndex(t, n, what)
		for _, nb := range n.nbrs {
			for _, m := range nodes {
				if m.id == nb.ID && (!m.Zone().Equal(nb.Zone) || m.version != nb.Version || len(m.extra) != len(nb.Extra)) {
					t.Fatalf("%s: node %d knows %d as %v%v v%d, is %v%v v%d", what, n.id, m.id, nb.Zone, nb.Extra, nb.Version, m.Zone(), m.extra, m.version)
				}
			}
		}
	}
}

// TestSequentialJoinsKeepTablesExact: peers join one at a time through a
// random member; after each join has settled every table is exact, and a
// heartbeat round changes nothing.
func TestSequentialJoinsKeepTablesExact(t *testing.T) {
	t.Parallel()
	for _, d := range []int{2, 3, 4} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("d%d-seed%d", d, seed), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, uint64(d)))
				net := newTNet(t)
				var nodes []*Node
				const count = 60
				for i := 1; i <= count; i++ {
					p := make(can.Point, d)
					for k := range p {
						// Few resource levels, as in real populations, so
						// that zones share faces and points collide.
						p[k] = uint32(r.IntN(4)) << 30
					}
					p[d-1] = r.Uint32()
					if i == 7 {
						p = slices.Clone(nodes[2].Point()) // a duplicate: rejected, then redrawn
					}
					n := New(core.NodeID(i), p, tConfig, rand.New(rand.NewPCG(seed, uint64(i))))
					net.add(n)
					contact := core.NodeID(0)
					if len(nodes) > 0 {
						contact = nodes[r.IntN(len(nodes))].id
					}
					nodes = append(nodes, n)
					n.Bootstrap(net.Now, contact)
					net.collect(n)
					net.run()
					if !n.Joined() {
						t.Fatalf("seed %d: node %d did not join", seed, i)
					}
					tCheckExact(t, nodes, d, fmt.Sprintf("seed %d after join %d", seed, i))
				}
				var rejected uint64
				for _, n := range nodes {
					st := n.Status()
					rejected += st.JoinsRejected
					if st.BadMessages != 0 || st.RouteDrops != 0 || st.DuplicateAccepts != 0 {
						t.Fatalf("seed %d: node %d status %+v", seed, n.id, st)
					}
				}
				if rejected == 0 {
					t.Fatalf("seed %d: the duplicate point was never rejected", seed)
				}
				net.heartbeats(tPeriod)
				net.heartbeats(2 * tPeriod)
				tCheckExact(t, nodes, d, fmt.Sprintf("seed %d after heartbeats", seed))
				for _, n := range nodes {
					if st := n.Status(); st.NotNeighborNotes != 0 {
						t.Fatalf("seed %d: node %d sent not-neighbor notes: %+v", seed, n.id, st)
					}
					for _, nb := range n.nbrs {
						if !nb.Heard {
							t.Fatalf("seed %d: node %d never heard from neighbor %d", seed, n.id, nb.ID)
						}
					}
				}
			})
		}
	}
}

// TestZoneUpdateWithBadZoneIgnored: a zone update whose sender zone is
// malformed is counted as bad and its Others are not learned.
func TestZoneUpdateWithBadZoneIgnored(t *testing.T) {
	a, b, _ := tTriangle(t, true)
	st := a.Status()
	a.Step(time.Second, 3, &wire.ZoneUpdate{
		Self:   &wire.NodeInfo{Id: 3, Zone: zoneToWire(can.Whole(3)), Version: 7},
		Others: []*wire.NodeInfo{{Id: 2, Zone: zoneToWire(b.Zone()), Version: 1}},
	})
	st.BadMessages++
	if got := a.Status(); got != st {
		t.Errorf("status %+v, want %+v", got, st)
	}
	if tNeighbor(a, 2) != nil {
		t.Errorf("learned from a malformed update")
	}
}

func TestPendingBounded(t *testing.T) {
	n := New(2, can.Point{tQ3, tQ1}, tConfig, tRand(2))
	n.Bootstrap(0, 1)
	tDrain(n)
	upd := &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 3, Zone: zoneToWire(tZone2(0, tHalf, 0, tFull)), Version: 1}}
	for i := 0; i < maxPending+5; i++ {
		n.Step(0, 3, upd)
	}
	if len(n.pending) != maxPending || n.Status().RouteDrops != 5 {
		t.Fatalf("pending %d drops %d, want %d and 5", len(n.pending), n.Status().RouteDrops, maxPending)
	}
}

// tGrown builds an overlay of count nodes in d dimensions, joined one after
// another through random contacts, with settled tables.
func tGrown(t *testing.T, seed uint64, d, count int) (*tNet, []*Node) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, uint64(d)))
	net := newTNet(t)
	var nodes []*Node
	for i := 1; i <= count; i++ {
		p := make(can.Point, d)
		for k := range p {
			p[k] = uint32(r.IntN(4)) << 30
		}
		p[d-1] = r.Uint32()
		n := New(core.NodeID(i), p, tConfig, rand.New(rand.NewPCG(seed, uint64(i))))
		net.add(n)
		contact := core.NodeID(0)
		if len(nodes) > 0 {
			contact = nodes[r.IntN(len(nodes))].id
		}
		nodes = append(nodes, n)
		n.Bootstrap(net.Now, contact)
		net.collect(n)
		net.run()
	}
	net.heartbeats(tPeriod)
	net.heartbeats(2 * tPeriod)
	tCheckExact(t, nodes, d, fmt.Sprintf("seed %d after joins", seed))
	return net, nodes
}

// tRemove takes node id out of the relay and of nodes.
func tRemove(net *tNet, nodes []*Node, id core.NodeID) []*Node {
	net.remove(id)
	return slices.DeleteFunc(nodes, func(n *Node) bool { return n.id == id })
}

// TestLeavesKeepTheTiling: nodes leave gracefully one at a time (002
// §4.2.2); their take-over nodes absorb their zones across the plane of
// their last split, and the overlay stays exact after every leave.
func TestLeavesKeepTheTiling(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		net, nodes := tGrown(t, seed, 3, 40)
		r := rand.New(rand.NewPCG(seed, 77))
		takeovers := uint64(0)
		all := slices.Clone(nodes)
		for k := 0; k < 30; k++ {
			leaver := nodes[r.IntN(len(nodes))]
			leaver.Leave(net.Now)
			net.collect(leaver)
			nodes = tRemove(net, nodes, leaver.id)
			net.run()
			if !leaver.Left() || leaver.Joined() {
				t.Fatalf("seed %d: leaver %d still a member", seed, leaver.id)
			}
			tCheckExact(t, nodes, 3, fmt.Sprintf("seed %d after leave %d of node %d", seed, k, leaver.id))
		}
		for _, n := range all { // leavers' counters too
			takeovers += n.Status().Takeovers
		}
		if takeovers < 30 {
			t.Fatalf("seed %d: %d take-overs for 30 leaves", seed, takeovers)
		}
	}
}

// tFailOneAtATime grows a 40-node overlay in the given heartbeat mode and
// lets count random nodes fail silently, one at a time, checking after
// each that the overlay is exact again FailAfter + 2 periods later. It
// returns every node, the dead ones included (for their counters).
func tFailOneAtATime(t *testing.T, mode HeartbeatMode, seed uint64, count int) []*Node {
	t.Helper()
	return tFailOneAtATimeWith(t, func(c *Config) { c.Mode = mode }, seed, count)
}

// tFailOneAtATimeWith is tFailOneAtATime with every node's config set by set.
func tFailOneAtATimeWith(t *testing.T, set func(*Config), seed uint64, count int) []*Node {
	t.Helper()
	net, nodes := tGrown(t, seed, 3, 40)
	for _, n := range nodes {
		set(&n.cfg)
	}
	mode := nodes[0].cfg.Mode
	r := rand.New(rand.NewPCG(seed, 78))
	net.Lossy = true
	all := slices.Clone(nodes)
	beat := 2 * tPeriod
	for k := 0; k < count; k++ {
		dead := nodes[r.IntN(len(nodes))]
		nodes = tRemove(net, nodes, dead.id) // messages to it are lost from now on
		// FailAfter (3) periods, one for the detection phase, one for
		// the heartbeats that introduce new neighbors to each other.
		for i := 0; i <= 4; i++ {
			beat += tPeriod
			net.heartbeats(beat)
		}
		tCheckExact(t, nodes, 3, fmt.Sprintf("%s seed %d after failure %d of node %d", mode, seed, k, dead.id))
	}
	return all
}

// TestFailureTakenOverAfterMissedHeartbeats: a node that silently stops is
// declared failed after FailAfter heartbeat periods without a message, its
// take-over nodes claim its zone, and the overlay is exact again.
func TestFailureTakenOverAfterMissedHeartbeats(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		var detected, takeovers uint64
		for _, n := range tFailOneAtATime(t, HeartbeatVanilla, seed, 10) {
			detected += n.Status().FailuresDetected
			takeovers += n.Status().Takeovers
		}
		if detected == 0 || takeovers < 10 {
			t.Fatalf("seed %d: %d failures detected, %d take-overs for 10 failures", seed, detected, takeovers)
		}
	}
}

// TestCompactHeartbeatsCarryListsOnlyToTakeovers (002 §4.2.2): in compact
// mode the full list goes to the take-over nodes (across the plane of the
// last split) and every other neighbor gets the zone and last split only.
func TestCompactHeartbeatsCarryListsOnlyToTakeovers(t *testing.T) {
	t.Parallel()
	_, nodes := tGrown(t, 5, 3, 30)
	checked := 0
	for _, n := range nodes {
		n.cfg.Mode = HeartbeatCompact
		last := n.lastSplit()
		if last == nil || len(n.nbrs) < 2 {
			continue
		}
		n.Tick(n.nextBeat, core.TimerHeartbeat)
		r := tDrain(n)
		if len(r.Messages) != len(n.nbrs) {
			t.Fatalf("node %d sent %d heartbeats to %d neighbors", n.id, len(r.Messages), len(n.nbrs))
		}
		for _, o := range r.Messages {
			hb := o.Msg.(*wire.Heartbeat)
			nb := tNeighbor(n, o.To)
			if want := n.isOurTakeover(nb, last); want != (len(hb.Neighbors) > 0) {
				t.Fatalf("node %d → %d: take-over %v but list of %d", n.id, o.To, want, len(hb.Neighbors))
			}
			// The others get id and version only: they know the zone.
			if full := len(hb.Neighbors) > 0; full != (hb.Self.Zone != nil) || hb.Self.Version != n.version {
				t.Fatalf("node %d → %d: list of %d, self %v", n.id, o.To, len(hb.Neighbors), hb.Self)
			}
			if hb.LastSplit == nil || hb.LastSplit.At != last.At {
				t.Fatalf("node %d: heartbeat lacks the last split", n.id)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no node checked")
	}
}

// TestShortHeartbeatAtUnknownVersion: a compact heartbeat carries no zone.
// At the version the receiver knows it only refreshes the entry; at a newer
// version (a zone update was missed), or from a node the receiver does not
// know, the receiver asks the sender for a full update, whose answer
// carries the zone.
func TestShortHeartbeatAtUnknownVersion(t *testing.T) {
	a, b := tStale(t) // A holds B's version 1; B is at version 2
	b.cfg.Mode = HeartbeatCompact
	tLink(b, a, true)
	now := b.nextBeat
	b.Tick(now, core.TimerHeartbeat)
	hb := tOnly[*wire.Heartbeat](t, tDrain(b), 1)
	if hb.Self.Zone != nil || hb.Self.Version != 2 {
		t.Fatalf("compact heartbeat %v", hb)
	}
	a.Step(now, 2, hb)
	req := tOnly[*wire.FullUpdateRequest](t, tDrain(a), 2)
	if a.Status().ZoneQueries != 1 || tNeighbor(a, 2).Version != 1 {
		t.Fatalf("A: %+v, entry %+v", a.Status(), tNeighbor(a, 2))
	}
	b.Step(now, 1, req)
	full := tOnly[*wire.FullUpdate](t, tDrain(b), 1)
	a.Step(now, 2, full)
	// B's version-2 zone only touches A's at a corner: A drops it.
	if tNeighbor(a, 2) != nil {
		t.Fatalf("A kept B: %+v", tNeighbor(a, 2))
	}

	// At the known version: a refresh, no message.
	c, d := tColumnPair(t)
	d.cfg.Mode = HeartbeatCompact
	at := d.nextBeat
	d.Tick(at, core.TimerHeartbeat)
	c.Step(at, d.id, tOnly[*wire.Heartbeat](t, tDrain(d), c.id))
	if r := tDrain(c); len(r.Messages) != 0 || tNeighbor(c, d.id).LastHeard != at || c.Status().ZoneQueries != 0 {
		t.Fatalf("C answered %v, entry %+v", r.Messages, tNeighbor(c, d.id))
	}
}

// tColumnPair: two nodes splitting the space in halves along x, each
// knowing the other first-hand at its current version.
func tColumnPair(t *testing.T) (c, d *Node) {
	t.Helper()
	c = tMember(t, 10, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	d = tMember(t, 11, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, 0, tFull), 3)
	tLink(c, d, true)
	tLink(d, c, true)
	return c, d
}

// TestFailuresInEveryMode: one failure at a time (the dissertation's "no
// simultaneous events") leaves compact and adaptive overlays exact too
// (002 §4.2.2). In adaptive mode a take-over node also asks its new
// neighborhood for full updates at once.
func TestFailuresInEveryMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []HeartbeatMode{HeartbeatCompact, HeartbeatAdaptive} {
		for _, seed := range []uint64{1, 2} {
			var takeovers, reqs uint64
			for _, n := range tFailOneAtATime(t, mode, seed, 8) {
				takeovers += n.Status().Takeovers
				reqs += n.Status().FullUpdateReqs
			}
			if takeovers < 8 {
				t.Fatalf("%s seed %d: %d take-overs for 8 failures", mode, seed, takeovers)
			}
			if (mode == HeartbeatAdaptive) != (reqs >= takeovers) {
				t.Fatalf("%s seed %d: %d full-update requests for %d take-overs", mode, seed, reqs, takeovers)
			}
		}
	}
}

// TestOrphanClaimedWhenTakeoverAlsoFails: a node and its take-over node
// fail together, so nobody can extend over the first one's zone. After the
// take-over wait its surviving neighbors claim the unclaimed parts as extra
// zones (the smallest claimant first), and a few periods later the overlay
// is whole again in every mode: the zones, extras included, tile the space.
// In vanilla and adaptive mode every table also holds exactly the true
// neighbors; compact heartbeats cannot repair every link (002 §4.2.2).
func TestOrphanClaimedWhenTakeoverAlsoFails(t *testing.T) {
	t.Parallel()
	for _, mode := range HeartbeatModes {
		for _, seed := range []uint64{1, 2, 3, 4} {
			net, nodes := tGrown(t, seed, 3, 40)
			for _, n := range nodes {
				n.cfg.Mode = mode
			}
			net.Lossy = true
			all := slices.Clone(nodes)
			r := rand.New(rand.NewPCG(seed, 79))
			beat := 2 * tPeriod
			for k := 0; k < 4; k++ {
				// A victim with a take-over node: both fail at once.
				var dead, takeover *Node
				for _, i := range r.Perm(len(nodes)) {
					v := nodes[i]
					for _, nb := range v.nbrs {
						if v.isOurTakeover(nb, v.lastSplit()) {
							dead, takeover = v, net.nodes[nb.ID]
							break
						}
					}
					if dead != nil {
						break
					}
				}
				if dead == nil {
					t.Fatalf("%s seed %d: no node with a take-over node", mode, seed)
				}
				nodes = tRemove(net, nodes, dead.id)
				nodes = tRemove(net, nodes, takeover.id)
				for i := 0; i < 10; i++ {
					beat += tPeriod
					net.heartbeats(beat)
				}
				what := fmt.Sprintf("%s seed %d after nodes %d and %d (its take-over node) failed", mode, seed, dead.id, takeover.id)
				tCheckTiling(t, nodes, 3, what)
				if mode != HeartbeatCompact {
					tCheckTables(t, nodes, what)
				}
			}
			var claimed uint64
			for _, n := range all {
				claimed += n.Status().OrphansClaimed
			}
			if claimed == 0 {
				t.Fatalf("%s seed %d: no orphan claimed after 4 double failures", mode, seed)
			}
		}
	}
}

// tHolder is node 1 owning [0, ½) × [0, 1) with the extra zone
// [½, 1) × [0, ½), and node 2 owning [½, 1) × [½, 1) (2-D, no virtual
// dimension needed for the geometry).
func tHolder(t *testing.T) (a, b *Node) {
	h := uint64(1) << 31
	a = tMember(t, 1, can.Point{1, 1}, tZone2(0, h, 0, can.Span), 3)
	a.extra = []can.Zone{tZone2(h, can.Span, 0, h)}
	b = tMember(t, 2, can.Point{uint32(h + 1), uint32(h + 1)}, tZone2(h, can.Span, h, can.Span), 1)
	tLink(a, b, true)
	b.learn(0, a.info(), fromSelf)
	if tNeighbor(b, 1) == nil || len(tNeighbor(b, 1).Extra) != 1 {
		t.Fatal("test setup: B does not know A with its extra zone")
	}
	return a, b
}

// TestJoinIntoExtraZone: a joiner whose point lies in an extra zone gets it
// whole, without split history; the holder gives it up, tells its
// neighbors, and routes to the nearest of all its zones.
func TestJoinIntoExtraZone(t *testing.T) {
	a, b := tHolder(t)
	h := uint64(1) << 31
	p := can.Point{uint32(h + 5), 7}
	if d := can.Dist2(a.zone, a.extra, p); d != 0 {
		t.Fatalf("distance from A's zones to a point in its extra zone = %v, want 0", d)
	}
	a.Step(time.Second, 9, &wire.Join{Joiner: 9, Point: p})
	r := tDrain(a)
	acc := tTo[*wire.JoinAccept](t, r, 9)
	if z := tWireZone(can.Zone{Lo: acc.Zone.Lo, Hi: acc.Zone.Hi}); !z.Equal(tZone2(h, can.Span, 0, h)) || len(acc.History) != 0 {
		t.Fatalf("joiner got %v with history %v, want the extra zone without history", z, acc.History)
	}
	if len(a.extra) != 0 || a.version != 4 || a.Status().ExtrasHanded != 1 {
		t.Fatalf("holder: extras %v version %d status %+v", a.extra, a.version, a.Status())
	}
	up := tTo[*wire.ZoneUpdate](t, r, 2)
	if len(up.Self.Extra) != 0 || len(up.Others) != 1 || up.Others[0].Id != 9 {
		t.Fatalf("B's update %v: want A without extras and the joiner", up)
	}
	b.Step(time.Second, 1, up)
	if ids := tIDs(b); !slices.Equal(ids, []core.NodeID{1, 9}) {
		t.Fatalf("B's table %v, want [1 9]", ids)
	}
	j := New(9, p, tConfig, tRand(9))
	j.Bootstrap(0, 1)
	j.Advance()
	j.Step(time.Second, 1, acc)
	if !j.Joined() || !j.Zone().Equal(tZone2(h, can.Span, 0, h)) || j.lastSplit() != nil {
		t.Fatalf("joiner: joined %v zone %v", j.Joined(), j.Zone())
	}
	if ids := tIDs(j); !slices.Equal(ids, []core.NodeID{1, 2}) {
		t.Fatalf("joiner's table %v, want [1 2]", ids)
	}
}

// TestOverlappingClaimsSettle: of two nodes holding the same space as
// extra zones, the one with the smaller own zone keeps it and the other
// gives it up when it hears of the first; a node's own zone always beats an
// extra zone.
func TestOverlappingClaimsSettle(t *testing.T) {
	h, q := uint64(1)<<31, uint64(1)<<30
	orphan := tZone2(h, can.Span, 0, h)
	// A owns half the space, C a quarter: C's claim is the better one.
	a := tMember(t, 1, can.Point{1, 1}, tZone2(0, h, 0, can.Span), 3)
	c := tMember(t, 3, can.Point{uint32(h + 1), uint32(h + q + 1)}, tZone2(h, can.Span, h+q, can.Span), 1)
	a.extra = []can.Zone{orphan.Clone()}
	c.extra = []can.Zone{orphan.Clone()}
	if !winsClaim(3, c.zone, 1, a.zone) || winsClaim(1, a.zone, 3, c.zone) {
		t.Fatal("the smaller own zone must win, seen from both sides")
	}
	// C hears of A first: it keeps its claim and tells A.
	c.learn(time.Second, a.info(), fromRelay)
	r := tDrain(c)
	if len(c.extra) != 1 || c.Status().ExtrasYielded != 0 {
		t.Fatalf("winner gave up its claim: %v", c.extra)
	}
	up := tTo[*wire.ZoneUpdate](t, r, 1)
	a.Step(time.Second, 3, up)
	if len(a.extra) != 0 || a.version != 4 || a.Status().ExtrasYielded != 1 {
		t.Fatalf("loser still holds %v (version %d)", a.extra, a.version)
	}
	// A's own zone beats C's extra where they overlap, whatever the sizes.
	c.Step(2*time.Second, 1, &wire.ZoneUpdate{Self: &wire.NodeInfo{Id: 1, Version: 5, Zone: zoneToWire(tZone2(0, can.Span, 0, q))}})
	want := tZone2(h, can.Span, q, h)
	if len(c.extra) != 1 || !c.extra[0].Equal(want) {
		t.Fatalf("C's extras after A's own zone grew over part of them: %v, want [%v]", c.extra, want)
	}
}

// TestRejoinWhileTakingOver: a node whose take-over of a failed neighbor
// reveals a node owning part of its grown zone with a better claim gives
// up and joins again — in the middle of its heartbeat, which must stop
// there (regression: the hole check ran on the emptied zone).
func TestRejoinWhileTakingOver(t *testing.T) {
	h, q := uint64(1)<<31, uint64(3)<<30
	a := tMember(t, 1, can.Point{1, 1}, tZone2(0, h, 0, can.Span), 2)
	// D = [½,1)×[0,1), split off A (A is its take-over node); its list
	// names X = [¾,1)×[0,1), a joiner A never heard of.
	a.upsert(&Neighbor{ID: 4, Zone: tZone2(h, can.Span, 0, can.Span), Version: 1, Heard: true,
		LastSplit: &wire.Split{Dim: 0, At: h, Upper: true, Sibling: 1},
		kept:      &keptList{decoded: []*wire.NodeInfo{{Id: 5, Zone: zoneToWire(tZone2(q, can.Span, 0, can.Span)), Version: 1}}}})
	now := time.Duration(a.cfg.FailAfter+1) * a.cfg.HeartbeatPeriod
	a.Tick(now, core.TimerHeartbeat)
	r := tDrain(a)
	if a.Joined() || a.Status().Rejoins != 1 {
		t.Fatalf("joined %v, rejoins %d: A kept a zone overlapping X's better claim", a.Joined(), a.Status().Rejoins)
	}
	if j := tTo[*wire.Join](t, r, 5); j.Joiner != 1 {
		t.Fatalf("rejoin JOIN %v", j)
	}
	// Handed itself as a contact, it waits instead of founding an overlay.
	a.Bootstrap(now, 1)
	if a.Joined() {
		t.Fatal("a rejoining node founded a second overlay with itself as contact")
	}
}

// A node that is not a member routes nothing (and does not panic): the job
// core may ask while its peer joins again after losing a zone conflict.
func TestNextHopWhenNotJoined(t *testing.T) {
	n := New(7, can.Point{1, 2, 3}, Config{}, rand.New(rand.NewPCG(1, 7)))
	var hops, detours uint32
	var best float64
	if next := n.NextHop(can.Point{5, 5, 5}, &hops, &best, &detours); next != 0 || hops != 0 {
		t.Fatalf("NextHop before joining = %d (hops %d), want 0", next, hops)
	}
	if n.Status().RouteDrops != 1 {
		t.Fatalf("route drops %d, want 1", n.Status().RouteDrops)
	}
}

// TestQuietRepairs: with Config.QuietRepairs a node that learns a neighbor
// from another node's list (002 Fig 4.1) does not introduce itself at
// once; the repair still counts.
func TestQuietRepairs(t *testing.T) {
	a, _, c := tTriangle(t, true)
	a.cfg.QuietRepairs = true
	now := c.nextBeat
	c.Tick(now, core.TimerHeartbeat)
	a.Step(now, 3, tTo[*wire.Heartbeat](t, tDrain(c), 1))
	if !slices.Equal(tIDs(a), []core.NodeID{2, 3}) || a.Status().LinksLearned != 1 {
		t.Fatalf("A's table %v, status %+v", tIDs(a), a.Status())
	}
	if r := tDrain(a); len(r.Messages) != 0 {
		t.Fatalf("A sent %v", r.Messages)
	}
}

// TestNoZoneQueries: with Config.NoZoneQueries a compact heartbeat at a
// zone version the receiver does not know is a sign of life only: no
// full-update request, the stale entry stays (002 §4.2.2's bare reading).
func TestNoZoneQueries(t *testing.T) {
	a, b := tStale(t)
	a.cfg.NoZoneQueries = true
	b.cfg.Mode = HeartbeatCompact
	tLink(b, a, true)
	now := b.nextBeat
	b.Tick(now, core.TimerHeartbeat)
	a.Step(now, 2, tOnly[*wire.Heartbeat](t, tDrain(b), 1))
	if r := tDrain(a); len(r.Messages) != 0 || a.Status().ZoneQueries != 0 {
		t.Fatalf("A sent %v, status %+v", r.Messages, a.Status())
	}
	if nb := tNeighbor(a, 2); nb == nil || nb.Version != 1 || nb.LastHeard != now {
		t.Fatalf("A's entry for B %+v", nb)
	}
}

// TestNoTakeoverRequest: with Config.NoTakeoverRequest adaptive take-over
// nodes no longer ask for full updates at every take-over (compare
// TestFailuresInEveryMode), and one failure at a time still leaves the
// overlay exact.
func TestNoTakeoverRequest(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2} {
		var takeovers, reqs uint64
		for _, n := range tFailOneAtATimeWith(t, func(c *Config) { c.Mode, c.NoTakeoverRequest = HeartbeatAdaptive, true }, seed, 8) {
			takeovers += n.Status().Takeovers
			reqs += n.Status().FullUpdateReqs
		}
		if takeovers < 8 || reqs >= takeovers {
			t.Fatalf("seed %d: %d full-update requests for %d take-overs", seed, reqs, takeovers)
		}
	}
}

// tLoads is a load source that counts how often it is asked and what the
// table held then.
type tLoads struct {
	n     *Node
	asked int
	nbrs  []int
}

func (s *tLoads) LoadInfo() *wire.Load {
	s.asked++
	s.nbrs = append(s.nbrs, len(s.n.Neighbors()))
	return &wire.Load{Queue: uint32(s.asked)}
}

// The load source is asked once per heartbeat timer, before the period's
// failure detection, and its answer rides on that period's heartbeats
// (003 §4.4); the neighbor table the caller gets is a copy.
func TestLoadSourceRidesOnHeartbeats(t *testing.T) {
	a := tMember(t, 1, can.Point{tQ1, tQ1}, tZone2(0, tHalf, 0, tFull), 1)
	b := tMember(t, 2, can.Point{tQ3, tQ1}, tZone2(tHalf, tFull, 0, tFull), 1)
	tLink(a, b, true)
	src := &tLoads{n: a}
	a.SetLoadSource(src)
	a.Tick(a.nextBeat, core.TimerHeartbeat)
	if hb := tOnly[*wire.Heartbeat](t, tDrain(a), 2); src.asked != 1 || hb.GetLoad().GetQueue() != 1 {
		t.Fatalf("asked %d times, heartbeat's load %v: want asked once, queue 1", src.asked, hb.GetLoad())
	}
	// b falls silent: the period that declares it failed still carries the
	// load computed with b in the table.
	for i := 0; i <= a.cfg.FailAfter && len(a.Neighbors()) != 0; i++ {
		a.Tick(a.nextBeat, core.TimerHeartbeat)
		tDrain(a)
	}
	if len(a.Neighbors()) != 0 || src.nbrs[len(src.nbrs)-1] != 1 {
		t.Fatalf("table %v, source saw %v neighbors: want b dropped after the source was asked", a.Neighbors(), src.nbrs)
	}
	nbs := a.Neighbors()
	tLink(a, b, true)
	if c := a.Neighbors(); len(nbs) != 0 || len(c) != 1 {
		t.Fatalf("Neighbors shares the table: %v then %v", nbs, c)
	}
	c := a.Neighbors()
	c[0].Version = 99
	if a.Neighbors()[0].Version != 1 {
		t.Fatal("a change to Neighbors' copy reached the table")
	}
}
