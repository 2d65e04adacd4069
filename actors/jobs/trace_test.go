package jobs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

// TestTraces runs the job core traces in testdata/*.trace: scripts of
// steps with the messages and events each caused and the queues it left
// (package testnet; -rewrite rewrites the expected output). Nodes use the
// test resource model (vRes: the virtual coordinate is cores × 1000 +
// memory in GiB) and the 3-D zones of the unit tests. Commands:
//
//	node ID zone=Z cores=C mem=M [mode=M]  a job node owning zone Z (self,
//	                                       up0, up1, low0, low1), a member:
//	                                       its scheduling rounds start
//	listen ID                              an endpoint that only listens
//	                                       (the jobs' owner)
//	link A B                               A and B become neighbors
//	load B to=A                            B's heartbeat brings A its load
//	assign ID job=J cores=C mem=M work=D [owner=O]  owner O (50) assigns
//	                                       a job to node ID
//	run until=T                            timers fire until time T
//	state                                  every node's queue
func TestTraces(t *testing.T) {
	testnet.RunTraces(t, "testdata/*.trace", func(t *testing.T) func(*testing.T, *testnet.Step) string {
		tr := &tTrace{net: newTNet(t), views: map[core.NodeID]*fakeView{}}
		tr.net.Lossy = false
		tr.net.OnDeliver = func(m testnet.Msg[core.NodeID]) {
			tr.events()
			tr.out = append(tr.out, fmt.Sprintf("%v %d→%d %s", tr.net.Now, m.From, m.To, testnet.Format(m.Msg)))
		}
		return tr.step
	})
}

type tTrace struct {
	net   *tNet
	views map[core.NodeID]*fakeView
	out   []string
	seen  int // events already printed
}

// tZones are the zones a trace names.
var tZones = map[string]func() can.Zone{"self": zSelf, "up0": zUp0, "up1": zUp1, "low0": zLow0, "low1": zLow1}

func (tr *tTrace) one(t *testing.T, s *testnet.Step) core.NodeID {
	t.Helper()
	ids := s.IDs(t)
	if len(ids) != 1 {
		t.Fatalf("%s: %s takes one node", s.Pos, s.Cmd)
	}
	return core.NodeID(ids[0])
}

func (tr *tTrace) step(t *testing.T, s *testnet.Step) string {
	t.Helper()
	tr.out = nil
	switch s.Cmd {
	case "node":
		id := tr.one(t, s)
		zf, ok := tZones[s.Keys["zone"]]
		if !ok {
			t.Fatalf("%s: zone=%q", s.Pos, s.Keys["zone"])
		}
		z := zf()
		// At the middle of the zone in the first two dimensions.
		p := can.Point{uint32((z.Lo[0] + z.Hi[0]) / 2), uint32((z.Lo[1] + z.Hi[1]) / 2), vAmt(uint32(s.Int(t, "cores", 1)), uint32(s.Int(t, "mem", 0)))}
		v := &fakeView{id: id, zone: z, point: p}
		tr.views[id] = v
		n := tNew(v, Config{Mode: SchedMode(s.Keys["mode"]), Res: vRes{}, SchedPeriod: 5 * time.Second}, uint64(id), nil)
		tr.net.add(id, n)
		n.Joined(tr.net.Now)
		tr.net.Collect(id)
		tr.net.Deliver()
	case "listen":
		tr.net.Add(tr.one(t, s), tListener{})
	case "link":
		ids := s.IDs(t)
		if len(ids) != 2 {
			t.Fatalf("%s: link two nodes", s.Pos)
		}
		a, b := tr.views[core.NodeID(ids[0])], tr.views[core.NodeID(ids[1])]
		a.nbs = append(a.nbs, tNb(b.id, b.zone, nil))
		b.nbs = append(b.nbs, tNb(a.id, a.zone, nil))
	case "load":
		from := tr.one(t, s)
		to := tr.views[core.NodeID(s.Int(t, "to", 0))]
		nb := to.nb(from)
		if nb == nil {
			t.Fatalf("%s: %d is not a neighbor of %d", s.Pos, from, to.id)
		}
		nb.Load = tr.net.nodes[from].LoadInfo()
		tr.out = append(tr.out, fmt.Sprintf("%v %d→%d load %s", tr.net.Now, from, to.id, testnet.Format(nb.Load)))
	case "assign":
		id := tr.one(t, s)
		owner := core.NodeID(s.Int(t, "owner", int(tOwnerID)))
		spec := vSpec(uint64(s.Int(t, "job", 0)), uint32(s.Int(t, "cores", 1)), uint32(s.Int(t, "mem", 0)), s.Dur(t, "work", time.Hour))
		tr.net.Send(owner, id, &wire.JobAssign{Job: spec, Owner: uint64(owner), Epoch: 1})
		tr.net.Deliver()
	case "run":
		tr.net.RunUntil(s.Dur(t, "until", 0))
	case "state":
		ids := make([]core.NodeID, 0, len(tr.net.nodes))
		for id := range tr.net.nodes {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			n := tr.net.nodes[id]
			var running, waiting []uint64
			for i, h := range n.queue {
				if i < n.running {
					running = append(running, h.spec.Id)
				} else {
					waiting = append(waiting, h.spec.Id)
				}
			}
			snap := n.Snapshot()
			tr.out = append(tr.out, fmt.Sprintf("%d running %v waiting %v held %v done %v free cores %v mem %v", id, running, waiting, snap.Held, snap.Done, n.residual()[ResCores], n.residual()[ResMemory]))
		}
	default:
		t.Fatalf("%s: unknown command %q", s.Pos, s.Cmd)
	}
	tr.events()
	return strings.Join(tr.out, "\n")
}

// events prints the events not printed yet.
func (tr *tTrace) events() {
	for _, e := range tr.net.events[tr.seen:] {
		line := fmt.Sprintf("%v event %v job %d at %d", tr.net.Now, e.Kind, e.Job, e.Peer)
		if e.Other != 0 {
			line += fmt.Sprintf(" other %d", e.Other)
		}
		if e.Reason != "" {
			line += " " + e.Reason
		}
		tr.out = append(tr.out, line)
	}
	tr.seen = len(tr.net.events)
}

// tListener is an endpoint that only listens.
type tListener struct{}

func (tListener) Step(time.Duration, core.NodeID, proto.Message) {}
func (tListener) Tick(time.Duration, core.TimerKind)             {}
func (tListener) Flush(func(core.NodeID, proto.Message), func(time.Duration, core.TimerKind)) {
}
