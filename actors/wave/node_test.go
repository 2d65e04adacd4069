package wave

import (
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// line is a timezone CAN of n hosts in a row along the timezone axis,
// each owning an equal slice (the whole virtual axis): a View per host.
type line struct{ n int }

type lineView struct {
	l  line
	id core.NodeID
}

func (l line) zone(id core.NodeID) can.Zone {
	w := uint64(can.Span) / uint64(l.n)
	lo := uint64(id-1) * w
	hi := lo + w
	if int(id) == l.n {
		hi = can.Span
	}
	return can.Zone{Lo: []uint64{lo, 0}, Hi: []uint64{hi, can.Span}}
}

func (v lineView) ID() core.NodeID       { return v.id }
func (v lineView) Joined() bool          { return true }
func (v lineView) Owns(p can.Point) bool { return v.l.zone(v.id).Contains(p) }
func (v lineView) Point() can.Point {
	z := v.l.zone(v.id)
	return can.Point{uint32((z.Lo[0] + z.Hi[0]) / 2), 1}
}
func (v lineView) Neighbors() []overlay.Neighbor {
	var out []overlay.Neighbor
	for _, d := range []int{-1, 1} {
		if o := int(v.id) + d; o >= 1 && o <= v.l.n {
			out = append(out, overlay.Neighbor{ID: core.NodeID(o), Zone: v.l.zone(core.NodeID(o))})
		}
	}
	return out
}
func (v lineView) NextHop(p can.Point, hops *uint32, _ *float64, _ *uint32) core.NodeID {
	*hops++
	if p[0] < uint32(v.l.zone(v.id).Lo[0]) {
		return v.id - 1
	}
	return v.id + 1
}

// world steps Wave nodes over an in-order message queue at 1 ms a hop,
// firing their timers, until until; it returns every event.
type world struct {
	nodes  map[core.NodeID]*Node
	now    time.Duration
	timers map[core.NodeID][]time.Duration
	events []Event
	sent   map[wire.MsgType]int
	// drop, when set, loses the messages it returns true for (a lossy
	// link: they are sent, counted, and never delivered).
	drop func(m msg) bool
	lost map[wire.MsgType]int
}

type msg struct {
	from, to core.NodeID
	m        proto.Message
}

func (w *world) flush(id core.NodeID, q *[]msg) {
	r := w.nodes[id].Ready()
	w.events = append(w.events, r.Events...)
	for _, o := range r.Messages {
		w.sent[wire.TypeOf(o.Msg)]++
		*q = append(*q, msg{id, o.To, proto.Clone(o.Msg)})
	}
	for _, t := range r.Timers {
		w.timers[id] = append(w.timers[id], t.At)
	}
	w.nodes[id].Advance()
}

func (w *world) run(until time.Duration) {
	var q []msg
	for id := range w.nodes {
		w.flush(id, &q)
	}
	for w.now < until {
		for len(q) > 0 {
			m := q[0]
			q = q[1:]
			w.now += time.Millisecond
			if w.drop != nil && w.drop(m) {
				w.lost[wire.TypeOf(m.m)]++
				continue
			}
			w.nodes[m.to].Step(w.now, m.from, m.m)
			w.flush(m.to, &q)
		}
		// The next timer of any node.
		next, who := until, core.NodeID(0)
		for id := core.NodeID(1); int(id) <= len(w.nodes); id++ {
			for _, t := range w.timers[id] {
				if t < next {
					next, who = t, id
				}
			}
		}
		if who == 0 {
			return
		}
		w.now = max(w.now, next)
		ts := w.timers[who][:0]
		for _, t := range w.timers[who] {
			if t != next {
				ts = append(ts, t)
			}
		}
		w.timers[who] = ts
		w.nodes[who].Tick(w.now)
		w.flush(who, &q)
	}
}

func newWorld(n int, cfg Config, jobs map[core.NodeID][]Job) *world {
	w := &world{nodes: map[core.NodeID]*Node{}, timers: map[core.NodeID][]time.Duration{}, sent: map[wire.MsgType]int{}, lost: map[wire.MsgType]int{}}
	l := line{n}
	for id := core.NodeID(1); int(id) <= n; id++ {
		v := lineView{l, id}
		w.nodes[id] = New(v, cfg, TimezoneAt(v.Point()[0]), jobs[id], rand.New(rand.NewPCG(7, uint64(id))))
		w.nodes[id].Joined(0)
	}
	return w
}

// A job goes from its client to a host found by discovery messages, runs
// there in screensaver mode and completes with exactly its runtime's work
// (001 §IV); with no daytime free time and an adaptive strategy, it
// migrates when its host's night ends (001 §IV-A).
func TestNodeJobLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		strategy  Strategy
		discovery Discovery
		dayFree   float64
		migrates  bool
	}{
		{"no-migration, always free, random", NoMigration, DiscoveryRandom, 1, false},
		{"wave-adaptive, always free, ring", WaveAdaptive, DiscoveryRing, 1, false},
		{"migration-adaptive, never free by day, random", MigrationAdaptive, DiscoveryRandom, 0, true},
		{"wave-adaptive, never free by day, ring", WaveAdaptive, DiscoveryRing, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Strategy: tc.strategy, Discovery: tc.discovery, Profile: Profile{Seed: 3, DayFree: tc.dayFree}, MigrationBytes: 64}
			w := newWorld(48, cfg, map[core.NodeID][]Job{5: {{ID: 0, Runtime: 20 * time.Hour, Submit: 30 * time.Minute}}})
			w.run(10 * Day)
			var work float64
			var placed, completed, left int
			for _, e := range w.events {
				switch e.Kind {
				case Placed:
					placed++
				case Left:
					left++
					work += e.Work
				case Completed:
					completed++
					work += e.Work
				case Failed:
					t.Fatalf("seed 3: job failed: %+v", e)
				}
			}
			if completed != 1 || placed != left+1 {
				t.Fatalf("seed 3: %d placed, %d left, %d completed; events %+v", placed, left, completed, w.events)
			}
			if d := work - (20 * time.Hour).Seconds(); d > 1 || d < -1 {
				t.Fatalf("seed 3: work %.1f s for a 20 h job", work)
			}
			if (left > 0) != tc.migrates {
				t.Fatalf("seed 3: %d migrations, want some: %v", left, tc.migrates)
			}
			if w.sent[wire.MsgType_MSG_WAVE_SHIP] != 1 || w.sent[wire.MsgType_MSG_WAVE_DONE] != 1 || w.sent[wire.MsgType_MSG_WAVE_MIGRATE] != left {
				t.Fatalf("seed 3: messages %v", w.sent)
			}
		})
	}
}

// tally counts a run's events by kind, and the work done on hosts.
func tally(events []Event) (kinds map[EventKind]int, work float64) {
	kinds = map[EventKind]int{}
	for _, e := range events {
		kinds[e.Kind]++
		if e.Kind == Left || e.Kind == Completed {
			work += e.Work
		}
	}
	return kinds, work
}

// A job's transfers are acknowledged (TransferSends): a lost WaveShip or
// WaveMigrate is sent again, a lost acknowledgment makes the receiver
// see the job twice and run it once, a receiver that never answers makes
// the sender give the transfer up after TransferSends sends and say so —
// the job is never lost silently nor run twice.
func TestNodeTransferUnderLoss(t *testing.T) {
	const seed = 3
	ship, migrate, ack := wire.MsgType_MSG_WAVE_SHIP, wire.MsgType_MSG_WAVE_MIGRATE, wire.MsgType_MSG_WAVE_ACK
	for _, tc := range []struct {
		name string
		// drop loses the n-th message (from 1) of each type it names.
		drop      map[wire.MsgType]func(n int) bool
		completed int
		resent    bool
		duplicate bool
		unacked   int
	}{
		{"no loss", nil, 1, false, false, 0},
		{"first two ships lost", map[wire.MsgType]func(int) bool{ship: func(n int) bool { return n <= 2 }}, 1, true, false, 0},
		{"every other migration lost", map[wire.MsgType]func(int) bool{migrate: func(n int) bool { return n%2 == 1 }}, 1, true, false, 0},
		{"first three acks lost", map[wire.MsgType]func(int) bool{ack: func(n int) bool { return n <= 3 }}, 1, true, true, 0},
		{"every ship lost", map[wire.MsgType]func(int) bool{ship: func(int) bool { return true }}, 0, true, false, 1},
		{"every ack lost", map[wire.MsgType]func(int) bool{ack: func(int) bool { return true }}, 1, true, true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Strategy: MigrationAdaptive, Discovery: DiscoveryRandom, Profile: Profile{Seed: seed, DayFree: 0}, MigrationBytes: 64}
			w := newWorld(48, cfg, map[core.NodeID][]Job{5: {{ID: 0, Runtime: 20 * time.Hour, Submit: 30 * time.Minute}}})
			seen := map[wire.MsgType]int{}
			w.drop = func(m msg) bool {
				typ := wire.TypeOf(m.m)
				seen[typ]++
				f := tc.drop[typ]
				return f != nil && f(seen[typ])
			}
			w.run(10 * Day)
			k, work := tally(w.events)
			if k[Completed] != tc.completed {
				t.Fatalf("seed %d: %d completed, want %d; events %v, lost %v", seed, k[Completed], tc.completed, k, w.lost)
			}
			// Run once: one Placed per host the job ran on, its work once.
			if k[Placed] != k[Left]+tc.completed || k[Failed] != 0 {
				t.Fatalf("seed %d: %d placed, %d left, %d failed: events %v", seed, k[Placed], k[Left], k[Failed], k)
			}
			if d := work - float64(tc.completed)*(20*time.Hour).Seconds(); d > 1 || d < -1 {
				t.Fatalf("seed %d: work %.1f s", seed, work)
			}
			if (k[Resent] > 0) != tc.resent || (k[Duplicate] > 0) != tc.duplicate {
				t.Fatalf("seed %d: %d resent, %d duplicates; lost %v", seed, k[Resent], k[Duplicate], w.lost)
			}
			if tc.unacked >= 0 && k[Unacked] != tc.unacked || tc.unacked < 0 && k[Unacked] == 0 {
				t.Fatalf("seed %d: %d transfers given up, want %d", seed, k[Unacked], tc.unacked)
			}
			// Every send whose job or acknowledgment was lost timed out:
			// the job was sent again, or the transfer given up after
			// TransferSends sends; every duplicate is a copy whose
			// acknowledgment was lost before.
			if lost := w.lost[ship] + w.lost[migrate] + w.lost[ack]; k[Resent]+k[Unacked] != lost {
				t.Fatalf("seed %d: %d job messages and acknowledgments lost, %d resent, %d given up", seed, lost, k[Resent], k[Unacked])
			}
			if k[Duplicate] > w.lost[ack] {
				t.Fatalf("seed %d: %d duplicates with %d acknowledgments lost", seed, k[Duplicate], w.lost[ack])
			}
			if k[Unacked] > 0 && w.sent[ship]+w.sent[migrate] < TransferSends {
				t.Fatalf("seed %d: given up after %d sends", seed, w.sent[ship]+w.sent[migrate])
			}
			t.Logf("seed %d: events %v, sent %v, lost %v", seed, k, w.sent, w.lost)
		})
	}
}

// An expanding ring's hosts that answered yes and were not taken are
// released at once (WaveRelease): once the jobs are placed, no host still
// holds itself for a finished discovery, so the next discovery can take
// it. Ten clients submit a minute apart, by day at their ring's centre
// and at night two hops away.
func TestNodeRingReleasesUnchosen(t *testing.T) {
	const seed = 3
	cfg := Config{Strategy: MigrationImmediate, Discovery: DiscoveryRing, Profile: Profile{Seed: seed, DayFree: 0}, MigrationBytes: 64}
	jobs := map[core.NodeID][]Job{}
	for i := range 10 {
		c := core.NodeID(20 + 2*i)
		jobs[c] = []Job{{ID: uint32(i), Runtime: 20 * time.Hour, Submit: 30*time.Minute + time.Duration(i)*time.Minute}}
	}
	w := newWorld(48, cfg, jobs)
	w.run(45 * time.Minute)
	k, _ := tally(w.events)
	if k[Placed] == 0 || w.sent[wire.MsgType_MSG_WAVE_RELEASE] == 0 {
		t.Fatalf("seed %d: %d placed, %d released of %d yes answers", seed, k[Placed], w.sent[wire.MsgType_MSG_WAVE_RELEASE], w.sent[wire.MsgType_MSG_WAVE_REPLY])
	}
	for id, n := range w.nodes {
		if n.hold.req != 0 {
			t.Fatalf("seed %d: host %d still holds itself for request %d of %d", seed, id, n.hold.req, n.hold.origin)
		}
	}
	t.Logf("seed %d: %d placed, %d yes answers, %d released", seed, k[Placed], w.sent[wire.MsgType_MSG_WAVE_REPLY], w.sent[wire.MsgType_MSG_WAVE_RELEASE])
}
