package overlay

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

// TestTraces runs the overlay traces in testdata/*.trace: scripts of steps
// (nodes joining, heartbeat rounds, failures, leaves) with the messages
// each step caused and the state it left (package testnet; -rewrite
// rewrites the expected output). Commands:
//
//	join ID at=X,Y [via=C] [mode=M]  node ID at point (X,Y) (fractions of the
//	                                  span) joins through C (none: founds)
//	beat [rounds=N]                  N heartbeat rounds, one period apart
//	fail ID…                         the nodes stop silently
//	leave ID                         the node leaves gracefully
//	state                            every node's zone, version and table
//
// A step prints the messages it delivered (heartbeats only counted, per
// round) and the status counters it changed.
func TestTraces(t *testing.T) {
	testnet.RunTraces(t, "testdata/*.trace", func(t *testing.T) func(*testing.T, *testnet.Step) string {
		tr := &tTrace{net: newTNet(t), all: map[core.NodeID]*Node{}}
		tr.net.Lossy = true
		tr.net.OnDeliver = tr.delivered
		return tr.step
	})
}

// tTrace is the state of one trace.
type tTrace struct {
	net  *tNet
	all  map[core.NodeID]*Node // every node created, departed ones included
	out  []string
	beat int // heartbeats delivered in the current round (counted, not printed)
}

func (tr *tTrace) delivered(m testnet.Msg[core.NodeID]) {
	if _, ok := m.Msg.(*wire.Heartbeat); ok && !m.Lost {
		tr.beat++
		return
	}
	line := fmt.Sprintf("%v %d→%d %s", tr.net.Now, m.From, m.To, testnet.Format(m.Msg))
	if m.Lost {
		line += " (lost)"
	}
	tr.out = append(tr.out, line)
}

func (tr *tTrace) step(t *testing.T, s *testnet.Step) string {
	t.Helper()
	tr.out = nil
	before := tr.statuses()
	switch s.Cmd {
	case "join":
		ids := s.IDs(t)
		if len(ids) != 1 {
			t.Fatalf("%s: join one node", s.Pos)
		}
		var p can.Point
		for _, x := range s.Fractions(t, "at") {
			if x >= can.Span {
				t.Fatalf("%s: a point lies inside the span", s.Pos)
			}
			p = append(p, uint32(x))
		}
		cfg := tConfig
		cfg.Mode = HeartbeatMode(s.Keys["mode"])
		id := core.NodeID(ids[0])
		n := New(id, p, cfg, tRand(id))
		tr.all[id] = n
		tr.net.add(n)
		n.Bootstrap(tr.net.Now, core.NodeID(s.Int(t, "via", 0)))
		tr.net.collect(n)
		tr.net.run()
	case "beat":
		for range s.Int(t, "rounds", 1) {
			tr.beat = 0
			tr.net.heartbeats(tr.net.Now + tPeriod)
			tr.out = append(tr.out, fmt.Sprintf("%v %d heartbeats", tr.net.Now, tr.beat))
		}
	case "fail":
		for _, id := range s.IDs(t) {
			tr.net.remove(core.NodeID(id))
		}
	case "leave":
		for _, id := range s.IDs(t) {
			n := tr.all[core.NodeID(id)]
			n.Leave(tr.net.Now)
			tr.net.collect(n)
			tr.net.remove(n.id)
			tr.net.run()
		}
	case "state":
		for _, id := range tr.net.IDs() {
			tr.out = append(tr.out, tState(tr.net.nodes[id]))
		}
	default:
		t.Fatalf("%s: unknown command %q", s.Pos, s.Cmd)
	}
	return strings.Join(append(tr.out, tr.changed(before)...), "\n")
}

// tState writes a node's zone, extra zones, version and table.
func tState(n *Node) string {
	s := fmt.Sprintf("%d %s v%d", n.id, testnet.Zone(n.zone.Lo, n.zone.Hi), n.version)
	for _, z := range n.extra {
		s += " +" + testnet.Zone(z.Lo, z.Hi)
	}
	var nbs []string
	for _, nb := range n.nbrs {
		nbs = append(nbs, fmt.Sprintf("%d:v%d", nb.ID, nb.Version))
	}
	s += " nbrs " + strings.Join(nbs, " ")
	if !n.joined {
		s += " (not joined)"
	}
	return s
}

func (tr *tTrace) statuses() map[core.NodeID]Status {
	st := map[core.NodeID]Status{}
	for id, n := range tr.all {
		st[id] = n.Status()
	}
	return st
}

// changed lists the status counters that changed since before, by node.
func (tr *tTrace) changed(before map[core.NodeID]Status) []string {
	ids := make([]core.NodeID, 0, len(tr.all))
	for id := range tr.all {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		a, b := reflect.ValueOf(before[id]), reflect.ValueOf(tr.all[id].Status())
		var d []string
		for i := range a.NumField() {
			if x, y := a.Field(i).Uint(), b.Field(i).Uint(); x != y {
				d = append(d, fmt.Sprintf("%s+%d", a.Type().Field(i).Name, y-x))
			}
		}
		if len(d) > 0 {
			out = append(out, fmt.Sprintf("status %d: %s", id, strings.Join(d, " ")))
		}
	}
	return out
}
