package jobs

import (
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// Dual-CAN's tests (002 §3.1.2, Algorithm 1) use the test resource model
// vRes, as the Balloon model's: a node of 4 cores and 8 GiB whose residue
// moves the virtual coordinate.

const (
	tBestID core.NodeID = 60 // the push's best Primary CAN candidate
	tInjID  core.NodeID = 61 // the Manager's injection node
)

// tManager is the Manager node's directory as a job core sees it: one
// member to name.
type tManager struct{ member core.NodeID }

func (m tManager) Pick(*wire.JobSpec) core.NodeID              { return 0 }
func (m tManager) SecondaryContact(id core.NodeID) core.NodeID { return m.member }
func (tManager) SecondaryJoined(core.NodeID)                   {}
func (tManager) SecondaryLeft(core.NodeID)                     {}

// dNode is a 4-core, 8-GiB node in the Dual-CAN model whose Residue-node
// (when sec is not nil) is in the Secondary CAN as sec.
func dNode(t *testing.T, sec *fakeView, mgr Central) *Node {
	t.Helper()
	v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}}
	n := tNew(v, Config{Res: vRes{}, Residue: ResidueDualCAN}, 1, mgr)
	if sec != nil {
		n.SetSecondary(sec)
	}
	tDrain(n)
	return n
}

// dResidue is a Secondary CAN neighbor whose heartbeat carried a residue
// of cores and memory at CPU speed.
func dResidue(id core.NodeID, zone can.Zone, cores, mem uint32, speed float32) *overlay.Neighbor {
	return &overlay.Neighbor{ID: id, Zone: zone, Load: &wire.Load{Point: []uint32{uint32(tQ3), uint32(tQ3), vAmt(cores, mem)}, Speed: speed, Cores: float32(cores)}}
}

// The zones of the search tests: the Secondary CAN member R owns the
// job's requirement point (vSpec asks for {0, 0, amounts}) or lies away
// from it; U is above R along dimension 0.
func zR() can.Zone    { return tZone(0, tQ1, 0, tQ1, 0, tQ2) }
func zRUp() can.Zone  { return tZone(tQ1, tQ2, 0, tQ1, 0, tQ2) }
func zAway() can.Zone { return tZone(tQ2, tQ3, tQ2, tQ3, 0, tQ2) }

// A search of the Secondary CAN (002 Algorithm 1 lines 4–10) gives the
// job to the fastest capable Residue-node in sight, else routes on
// towards the requirement point, climbs from its owner, and falls back to
// the Primary CAN's best candidate when the Secondary CAN has no way on.
func TestDualSearchPicksRoutesClimbsFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sec    *fakeView // nil: the node has no Residue-node
		climbs uint32
		// want: the JobAssign's addressee, else the DualSearch's.
		assign, search core.NodeID
		residue        bool // the assignment is a Residue-node match
	}{
		{name: "capable neighbor", sec: &fakeView{id: 1, zone: zAway(), nbs: []*overlay.Neighbor{dResidue(42, zRUp(), 2, 4, 2)}}, assign: 42, residue: true},
		{name: "fastest capable", sec: &fakeView{id: 1, zone: zAway(), nbs: []*overlay.Neighbor{dResidue(42, zRUp(), 2, 4, 2), dResidue(43, zR(), 3, 6, 3), dResidue(44, zR(), 1, 1, 9)}}, assign: 43, residue: true},
		{name: "too small: route on", sec: &fakeView{id: 1, zone: zAway(), next: 77, nbs: []*overlay.Neighbor{dResidue(44, zR(), 1, 1, 9)}}, search: 77},
		{name: "owner climbs", sec: &fakeView{id: 1, zone: zR(), nbs: []*overlay.Neighbor{{ID: 45, Zone: zRUp()}}}, search: 45},
		{name: "climbs exhausted", sec: &fakeView{id: 1, zone: zR(), nbs: []*overlay.Neighbor{{ID: 45, Zone: zRUp()}}}, climbs: 64, assign: tBestID},
		{name: "owner, none above", sec: &fakeView{id: 1, zone: zR()}, assign: tBestID},
		{name: "no way on", sec: &fakeView{id: 1, zone: zAway()}, assign: tBestID},
		{name: "no Residue-node", assign: tBestID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sec *fakeView
			if tc.sec != nil {
				sec = tc.sec
				sec.point = can.Point{uint32(tQ2) + 5, uint32(tQ2) + 5, vAmt(0, 0)}
			}
			n := dNode(t, sec, nil)
			push := &wire.JobPush{Job: vSpec(9, 1, 2, time.Hour), Owner: uint64(tOwnerID), Epoch: 2, Hops: 5, Best: &wire.Candidate{Id: uint64(tBestID), Score: 1}}
			n.Step(time.Minute, 30, &wire.DualSearch{Push: push, Hops: 2, Climbs: tc.climbs})
			r := tDrain(n)
			if tc.assign != 0 {
				a := tOne[*wire.JobAssign](t, r, tc.assign)
				if a.Job.Id != 9 || a.Epoch != 2 || a.Owner != uint64(tOwnerID) || a.Hops != 7 {
					t.Fatalf("assign %v: want job 9, epoch 2, owner %d, 5+2 hops", a, tOwnerID)
				}
				if ev := tEvents(r, EvResidue); tc.residue != (len(ev) == 1) || tc.residue && ev[0].Other != tc.assign {
					t.Fatalf("residue events %v, want one: %v", ev, tc.residue)
				}
				tNone[*wire.DualSearch](t, r)
				return
			}
			s := tOne[*wire.DualSearch](t, r, tc.search)
			tNone[*wire.JobAssign](t, r)
			if s.Hops != 3 || s.Push.Best.GetId() != uint64(tBestID) {
				t.Fatalf("search %v: want 3 hops and the Primary CAN's candidate kept", s)
			}
			if climbing := tc.sec.zone.Contains(can.Point(push.Job.Req)); climbing != (s.Climbs == 1) {
				t.Fatalf("climbs %d: the owner of the point climbs, a router does not", s.Climbs)
			}
		})
	}
}

// A neighbor's residue matched once is not matched again before its next
// heartbeat (it would draw every job of the period).
func TestDualSearchTakesAResidueOncePerBeat(t *testing.T) {
	nb := dResidue(42, zRUp(), 2, 4, 2)
	sec := &fakeView{id: 1, zone: zAway(), point: can.Point{uint32(tQ2) + 5, uint32(tQ2) + 5, 0}, nbs: []*overlay.Neighbor{nb}}
	n := dNode(t, sec, nil)
	search := func(id uint64) Ready {
		push := &wire.JobPush{Job: vSpec(id, 1, 2, time.Hour), Owner: uint64(tOwnerID), Epoch: 1, Best: &wire.Candidate{Id: uint64(tBestID)}}
		n.Step(time.Minute, 30, &wire.DualSearch{Push: push})
		return tDrain(n)
	}
	tOne[*wire.JobAssign](t, search(1), 42)
	tOne[*wire.JobAssign](t, search(2), tBestID)
	nb.Load = dResidue(42, zRUp(), 1, 2, 2).Load // its next heartbeat
	tOne[*wire.JobAssign](t, search(3), 42)
}

// Where a CAN-P push stops (here: no upper neighbor, the node itself busy)
// a node without a Residue-node hands the job to the Manager's injection
// node; one whose Residue-node is a member searches from it; with no
// Secondary CAN at all the Primary CAN's candidate runs it.
func TestDualStopSearchesTheSecondaryCAN(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sec    bool
		member core.NodeID
		want   core.NodeID // DualSearch addressee; 0: assigned to ourselves
	}{
		{"injection node", false, tInjID, tInjID},
		{"no Secondary CAN", false, 0, 0},
		{"own Residue-node", true, tInjID, 88},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sec *fakeView
			if tc.sec {
				sec = &fakeView{id: 1, zone: zAway(), next: 88, point: can.Point{uint32(tQ2) + 5, uint32(tQ2) + 5, 0}}
			}
			n := dNode(t, sec, tManager{member: tc.member})
			vAssign(n, 0, vSpec(1, 4, 8, time.Hour)) // every core busy: no residue, not free
			n.Step(time.Second, 30, &wire.JobPush{Job: vSpec(2, 1, 1, time.Hour), Owner: uint64(tOwnerID), Epoch: 1})
			r := tDrain(n)
			if tc.want == 0 {
				tNone[*wire.DualSearch](t, r)
				if !slices.ContainsFunc(n.queue, func(h *held) bool { return h.spec.Id == 2 }) {
					t.Fatalf("job 2 not queued here, the Primary CAN's only candidate: %s", tMsgString(r))
				}
				return
			}
			s := tOne[*wire.DualSearch](t, r, tc.want)
			if s.Push.GetJob().GetId() != 2 || s.Push.Best.GetId() != 1 {
				t.Fatalf("search %v: want job 2 with ourselves as the Primary CAN's candidate", s)
			}
		})
	}
}

// The Residue-node is the Balloon model's: a running node with a free core
// and nothing waiting has one, at its residue's point; idle or full, none.
func TestResiduePointFollowsTheResidue(t *testing.T) {
	n := dNode(t, nil, nil)
	if p := n.ResiduePoint(); p != nil {
		t.Fatalf("idle node: Residue-node at %v, want none", p)
	}
	vAssign(n, 0, vSpec(1, 1, 2, time.Hour))
	if p := n.ResiduePoint(); !slices.Equal(p, []uint32{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(3, 6)}) {
		t.Fatalf("Residue-node at %v, want 3 cores and 6 GiB free", p)
	}
	vAssign(n, 0, vSpec(2, 3, 2, time.Hour))
	if p := n.ResiduePoint(); p != nil {
		t.Fatalf("full node: Residue-node at %v, want none", p)
	}
	b := tNew(&fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}}, Config{Res: vRes{}, Residue: ResidueBalloon}, 1, nil)
	vAssign(b, 0, vSpec(1, 1, 2, time.Hour))
	if p := b.ResiduePoint(); p != nil {
		t.Fatalf("Balloon model: Residue-node in a Secondary CAN at %v", p)
	}
}
