package jobs

import (
	"math"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// The Balloon model's tests (002 §3.1.3) use the test resource model vRes:
// a node of 4 cores and 8 GiB at S's corner, whose residue moves the
// virtual coordinate (where vRes writes the amounts).

const tHostID core.NodeID = 7

// bNode is a 4-core, 8-GiB run node in the Balloon model. With routed, its
// zone leaves out the virtual coordinates below 3500, where its residues
// lie: its Balloon is routed (NextHop answers tHostID); otherwise it owns
// its residues and hosts its own Balloon.
func bNode(t *testing.T, routed bool, nbs ...*overlay.Neighbor) (*Node, *fakeView) {
	t.Helper()
	z := zSelf()
	if routed {
		z = tZone(tQ1, tQ2, tQ1, tQ2, 3500, tQ2)
	}
	v := &fakeView{id: 1, zone: z, point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}, nbs: nbs}
	if routed {
		v.next = tHostID
	}
	n := tNew(v, Config{Res: vRes{}, Residue: ResidueBalloon}, 1, nil)
	tDrain(n)
	return n, v
}

// bPoint is the point of bNode's residue with cores and memory free.
func bPoint(cores, mem uint32) []uint32 {
	return []uint32{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(cores, mem)}
}

func TestBalloonAttachesTowardsItsResidue(t *testing.T) {
	t.Run("routed", func(t *testing.T) {
		n, v := bNode(t, true)
		r := vAssign(n, 0, vSpec(1, 1, 2, time.Hour)) // runs: 3 cores, 6 GiB left
		m := tOne[*wire.BalloonAttach](t, r, tHostID)
		if m.Detach || !m.WantAck || m.Balloon.Node != 1 || !slices.Equal(m.Balloon.Point, bPoint(3, 6)) || m.Balloon.Cores != 3 {
			t.Fatalf("attach %v: want node 1's residue at %v with 3 cores, asking for an acknowledgement", m, bPoint(3, 6))
		}
		if len(v.asked) != 1 || !slices.Equal(v.asked[0], bPoint(3, 6)) || m.Hops != 1 {
			t.Fatalf("NextHop asked about %v (hops %d): want the residue's point, one hop", v.asked, m.Hops)
		}
		// β = 1/(1+Ω) for a minimal job joining the running one: Ω =
		// 2·max(p, 2·SDR·(2/8)^4) = 2p.
		if want := float32(1 / (1 + 2*ContentionP)); math.Abs(float64(m.Balloon.Beta-want)) > 1e-6 {
			t.Fatalf("β %v, want %v", m.Balloon.Beta, want)
		}
		if l := n.LoadInfo(); len(l.Balloons) != 0 {
			t.Fatalf("the node reports Balloons %v it does not host", l.Balloons)
		}
	})
	t.Run("local", func(t *testing.T) {
		n, _ := bNode(t, false)
		r := vAssign(n, 0, vSpec(1, 1, 2, time.Hour))
		tNone[*wire.BalloonAttach](t, r)
		tNone[*wire.BalloonAck](t, r)
		l := n.LoadInfo()
		if len(l.Balloons) != 1 || l.Balloons[0].Node != 1 || !slices.Equal(l.Balloons[0].Point, bPoint(3, 6)) {
			t.Fatalf("Load.Balloons %v: want our own Balloon at %v", l.Balloons, bPoint(3, 6))
		}
		if n.res.host != 1 {
			t.Fatalf("host %d, want ourselves", n.res.host)
		}
	})
	t.Run("off", func(t *testing.T) {
		v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ1) + 10, uint32(tQ1) + 10, vAmt(4, 8)}, next: tHostID}
		n := tNew(v, Config{Res: vRes{}}, 1, nil)
		r := vAssign(n, 0, vSpec(1, 1, 2, time.Hour))
		tNone[*wire.BalloonAttach](t, r)
		if l := n.LoadInfo(); len(l.Balloons) != 0 {
			t.Fatalf("residue none: Balloons %v", l.Balloons)
		}
	})
}

// The host acknowledges a new Balloon, reports it on its Load, keeps it
// while it beats, drops it after FailAfter silent periods, and forwards
// one whose point it does not own.
func TestBalloonHostReportsAndExpires(t *testing.T) {
	v := &fakeView{id: 1, zone: zSelf(), point: pSelfYes(), next: idU0}
	n := tNew(v, Config{Res: vRes{}, Residue: ResidueBalloon}, 1, nil)
	b := &wire.Balloon{Node: 42, Point: []uint32{uint32(tQ1) + 5, uint32(tQ1) + 5, vAmt(2, 4)}, Speed: 2, Cores: 2, Beta: 0.8}
	n.Step(0, idL0, &wire.BalloonAttach{Balloon: b, Hops: 3})
	r := tDrain(n)
	if a := tOne[*wire.BalloonAck](t, r, 42); !slices.Equal(a.Point, b.Point) {
		t.Fatalf("ack %v, want the Balloon's point", a)
	}
	if l := n.LoadInfo(); len(l.Balloons) != 1 || l.Balloons[0].Node != 42 {
		t.Fatalf("Load.Balloons %v: want node 42's", l.Balloons)
	}
	// Beats (straight from the node) keep it, without acknowledgement.
	for i := 1; i <= 5; i++ {
		now := time.Duration(i) * tPeriod
		n.Step(now, 42, &wire.BalloonAttach{Balloon: b})
		if r := tDrain(n); len(r.Messages) != 0 {
			t.Fatalf("beat %d answered: %s", i, tMsgString(r))
		}
		n.Tick(now, core.TimerJobs)
		tDrain(n)
	}
	if l := n.LoadInfo(); len(l.Balloons) != 1 {
		t.Fatalf("a beating Balloon was dropped: %v", l.Balloons)
	}
	// A beat asking for an acknowledgement gets one.
	n.Step(5*tPeriod+time.Second, 42, &wire.BalloonAttach{Balloon: b, WantAck: true})
	tOne[*wire.BalloonAck](t, tDrain(n), 42)
	// Silence for FailAfter periods: gone.
	last := 5*tPeriod + time.Second
	for now := last + tPeriod; now <= last+tTimeout+tPeriod; now += tPeriod {
		n.Tick(now, core.TimerJobs)
		tDrain(n)
	}
	if l := n.LoadInfo(); len(l.Balloons) != 0 {
		t.Fatalf("a Balloon silent for %v still reported: %v", tTimeout+tPeriod, l.Balloons)
	}
	// A Balloon whose point left our zone is forwarded, not hosted.
	n.Step(last+tTimeout+2*tPeriod, 42, &wire.BalloonAttach{Balloon: b})
	tDrain(n)
	out := &wire.Balloon{Node: 43, Point: []uint32{uint32(tQ2) + 5, uint32(tQ1) + 5, 9}, Speed: 1, Cores: 1, Beta: 1}
	n.Step(last+tTimeout+2*tPeriod, 43, &wire.BalloonAttach{Balloon: out})
	r = tDrain(n)
	if f := tOne[*wire.BalloonAttach](t, r, idU0); f.Balloon.Node != 43 || f.Hops != 1 {
		t.Fatalf("forwarded %v: want node 43's Balloon one hop on", f)
	}
	if l := n.LoadInfo(); len(l.Balloons) != 1 || l.Balloons[0].Node != 42 {
		t.Fatalf("Load.Balloons %v: want node 42's only", l.Balloons)
	}
	// A host whose zone no longer holds the point forwards the next beat
	// and drops the Balloon.
	v.zone = zUp1()
	n.Step(last+tTimeout+3*tPeriod, 42, &wire.BalloonAttach{Balloon: b})
	tOne[*wire.BalloonAttach](t, tDrain(n), idU0)
	if len(n.hosted) != 0 {
		t.Fatalf("still hosting %v after the point left the zone", n.hostedIDs())
	}
	// Malformed Balloons are ignored.
	v.zone = zSelf()
	for _, bad := range []*wire.BalloonAttach{{}, {Balloon: &wire.Balloon{Node: 44, Point: []uint32{1}}}, {Balloon: &wire.Balloon{Node: 44, Point: b.Point, Beta: float32(math.NaN())}}, {Balloon: &wire.Balloon{Point: b.Point, Beta: 1}}} {
		n.Step(last+tTimeout+4*tPeriod, 44, bad)
		if r := tDrain(n); len(r.Messages) != 0 || len(n.hosted) != 0 {
			t.Fatalf("malformed %v: hosted %v, sent %s", bad, n.hostedIDs(), tMsgString(r))
		}
	}
}

// TNC (002 Eq 3.1): an upper neighbor's cores in AI count the Balloons
// attached to it, discounted by β.
func TestBalloonTNCInAggregation(t *testing.T) {
	l := &wire.Load{Queue: 1, Speed: 1, Point: pCap(1), Cores: 4, Demand: 3, Residual: []float32{1, 0, 0},
		Balloons: []*wire.Balloon{{Node: 42, Point: pCap(2), Speed: 1, Cores: 2, Beta: 0.5}, {Node: 43, Point: pCap(3), Speed: 1, Cores: 4, Beta: 0.25}}}
	v := &fakeView{id: 1, zone: zSelf(), point: pSelfYes(), nbs: []*overlay.Neighbor{tNb(idU0, zUp0(), l)}}
	n := tNew(v, Config{Res: vRes{}, Residue: ResidueBalloon}, 1, nil)
	ai := n.LoadInfo().Agg[0]
	if ai.Nodes != 1 || ai.Cores != 6 || ai.Queue != 3 {
		t.Fatalf("AI_0 %+v: want 1 node, TNC = 4 + 0.5·2 + 0.25·4 = 6 cores, 3 required", ai)
	}
	if got := load.TNC(4, []load.Balloon{{Cores: 2, Beta: 0.5}}); got != 5 {
		t.Fatalf("TNC = %v, want 5", got)
	}
}

// With no free neighbor, matchmaking hands the job to the fastest capable
// Balloon of a neighbor (its physical node runs it) and marks it used, so
// the next job does not count on it before its node beats again.
func TestBalloonMatchedWhenNoNeighborIsFree(t *testing.T) {
	busy := &wire.Load{Queue: 3, Speed: 3, Point: pCap(1), Cores: 4, Demand: 6, Residual: []float32{0, 0, 0}, Waiting: 2}
	slow := &wire.Balloon{Node: 41, Point: pCap(vAmt(2, 4)), Speed: 1, Cores: 2, Beta: 0.8}
	fast := &wire.Balloon{Node: 42, Point: pCap(vAmt(2, 4)), Speed: 2, Cores: 2, Beta: 0.8}
	small := &wire.Balloon{Node: 43, Point: pCap(vAmt(2, 1)), Speed: 3, Cores: 2, Beta: 0.8} // too little memory
	host := &wire.Load{Queue: 1, Speed: 1, Point: pCap(2), Cores: 1, Demand: 1, Residual: []float32{0, 0, 0},
		Balloons: []*wire.Balloon{slow, fast, small}}
	for _, scheme := range []Scheme{SchemeCAN, SchemeCANP} {
		t.Run(scheme.String(), func(t *testing.T) {
			h := proto.Clone(host).(*wire.Load)
			v := &fakeView{id: 1, zone: zSelf(), point: pSelfNo(), nbs: []*overlay.Neighbor{tNb(idU0, zUp0(), proto.Clone(busy).(*wire.Load)), tNb(idU1, zUp1(), h)}}
			n := tNew(v, Config{Scheme: scheme, Res: vRes{}, Residue: ResidueBalloon}, 1, nil)
			job := func(id uint64) *wire.JobSpec {
				s := vSpec(id, 1, 2, time.Hour)
				s.Req = []uint32{tReq0, tReq1, vAmt(1, 2)}
				return s
			}
			// No upper neighbor reports AI: CAN-P stops here at once.
			n.Step(0, idL0, &wire.JobPush{Job: job(1), Owner: uint64(tOwnerID), Epoch: 1, Best: &wire.Candidate{Id: uint64(idU0), Score: 1}})
			r := tDrain(n)
			if a := tOne[*wire.JobAssign](t, r, 42); a.Job.Id != 1 {
				t.Fatalf("assigned %v to the fast Balloon's node, want job 1", a)
			}
			if e := tOneEvent(t, r, EvBalloon); e.Other != 42 || e.Job != 1 {
				t.Fatalf("balloon event %+v", e)
			}
			n.Step(0, idL0, &wire.JobPush{Job: job(2), Owner: uint64(tOwnerID), Epoch: 1, Best: &wire.Candidate{Id: uint64(idU0), Score: 1}})
			if a := tOne[*wire.JobAssign](t, tDrain(n), 41); a.Job.Id != 2 {
				t.Fatalf("second job: assigned %v, want node 41's Balloon (42's is used)", a)
			}
			n.Step(0, idL0, &wire.JobPush{Job: job(3), Owner: uint64(tOwnerID), Epoch: 1, Best: &wire.Candidate{Id: uint64(idU0), Score: 1}})
			r = tDrain(n)
			tNone[*wire.BalloonAttach](t, r)
			if len(tEvents(r, EvBalloon)) != 0 {
				t.Fatalf("third job matched to a Balloon: %s", tMsgString(r))
			}
			if n.Status().BalloonMatches != 2 {
				t.Fatalf("BalloonMatches %d, want 2", n.Status().BalloonMatches)
			}
		})
	}
}

// Our own hosted Balloons are candidates too; a free neighbor still comes
// first (002 §3.1.4: free nodes, then Balloons, then busy nodes).
func TestBalloonAfterFreeNodes(t *testing.T) {
	free := &wire.Load{Queue: 0, Speed: 1, Point: pCap(1), Cores: 4, Residual: []float32{4, 8, 0}}
	v := &fakeView{id: 1, zone: zSelf(), point: pSelfNo(), nbs: []*overlay.Neighbor{tNb(idU0, zUp0(), free)}}
	n := tNew(v, Config{Scheme: SchemeCAN, Res: vRes{}, Residue: ResidueBalloon}, 1, nil)
	n.Step(0, 42, &wire.BalloonAttach{Balloon: &wire.Balloon{Node: 42, Point: []uint32{tReq0 + 1, tReq1 + 1, vAmt(2, 4)}, Speed: 3, Cores: 2, Beta: 1}})
	tDrain(n)
	spec := vSpec(1, 1, 2, time.Hour)
	spec.Req = []uint32{tReq0, tReq1, vAmt(1, 2)}
	n.Step(0, idL0, &wire.JobPush{Job: spec, Owner: uint64(tOwnerID), Epoch: 1})
	tOne[*wire.JobAssign](t, tDrain(n), idU0)
	busy := proto.Clone(free).(*wire.Load) // U0's next heartbeat: busy
	busy.Residual, busy.Waiting = []float32{0, 0, 0}, 1
	v.nbs[0].Load = busy
	spec = vSpec(2, 1, 2, time.Hour)
	spec.Req = []uint32{tReq0, tReq1, vAmt(1, 2)}
	n.Step(0, idL0, &wire.JobPush{Job: spec, Owner: uint64(tOwnerID), Epoch: 1})
	tOne[*wire.JobAssign](t, tDrain(n), 42)
	if !n.hosted[42].taken || len(n.LoadInfo().Balloons) != 0 {
		t.Fatalf("a Balloon we matched a job to is still offered")
	}
}

// The node's Balloon follows its residue: a changed residue goes straight
// to the host (which forwards it if the point left its zone); a vanished
// one detaches; beats go every period and ask for an acknowledgement after
// FailAfter periods; with none for twice that, the Balloon is routed anew.
func TestBalloonFollowsResidue(t *testing.T) {
	n, v := bNode(t, true)
	vAssign(n, 0, vSpec(1, 1, 2, time.Hour))
	n.Step(time.Second, tHostID, &wire.BalloonAck{Point: bPoint(3, 6)})
	tDrain(n)
	v.asked = nil
	r := vAssign(n, 2*time.Second, vSpec(2, 1, 2, time.Hour)) // 2 cores, 4 GiB left
	m := tOne[*wire.BalloonAttach](t, r, tHostID)
	if m.Detach || !slices.Equal(m.Balloon.Point, bPoint(2, 4)) || len(v.asked) != 0 {
		t.Fatalf("re-attach %v (NextHop asked %v): want the new point straight to the host", m, v.asked)
	}
	// Beats: one per period, to the host, one-way until FailAfter periods
	// pass without an acknowledgement.
	for i := 1; i <= 3; i++ {
		now := time.Duration(i) * tPeriod
		n.Tick(now, core.TimerJobs)
		b := tOne[*wire.BalloonAttach](t, tDrain(n), tHostID)
		if want := now-time.Second >= tTimeout; b.WantAck != want || !slices.Equal(b.Balloon.Point, bPoint(2, 4)) {
			t.Fatalf("beat at %v: %v, want ack asked %v", now, b, want)
		}
	}
	// No acknowledgement for 2·FailAfter periods: routed afresh.
	n.Tick(7*tPeriod, core.TimerJobs)
	if m := tOne[*wire.BalloonAttach](t, tDrain(n), tHostID); !m.WantAck {
		t.Fatalf("routed afresh without asking for an acknowledgement: %v", m)
	}
	// (The jobs' silent owner has them adopted: NextHop is asked about
	// their points too.)
	if !slices.ContainsFunc(v.asked, func(p can.Point) bool { return slices.Equal(p, bPoint(2, 4)) }) || n.res.host != 0 {
		t.Fatalf("after a silent host: NextHop asked %v, host %d; want routed afresh", v.asked, n.res.host)
	}
	n.Step(7*tPeriod+time.Second, 8, &wire.BalloonAck{Point: bPoint(2, 4)})
	tDrain(n)
	if n.res.host != 8 {
		t.Fatalf("host %d, want the new one (8)", n.res.host)
	}
	// Every core busy: the Balloon detaches.
	vAssign(n, 8*tPeriod, vSpec(3, 1, 2, time.Hour))
	tDrain(n)
	r = vAssign(n, 8*tPeriod, vSpec(4, 1, 0, time.Hour))
	if d := tOne[*wire.BalloonAttach](t, r, 8); !d.Detach || d.Balloon.Node != 1 {
		t.Fatalf("want a detach to host 8, got %v", d)
	}
	if n.res.point != nil {
		t.Fatalf("residue %v after detaching", n.res.point)
	}
	// No Balloon, no beat.
	n.Tick(9*tPeriod, core.TimerJobs)
	tNone[*wire.BalloonAttach](t, tDrain(n))
}

// An idle node's Max-node represents it: its Balloon detaches when its
// last job ends, and when it leaves.
func TestBalloonDetachesWhenIdleOrLeaving(t *testing.T) {
	n, _ := bNode(t, true)
	vAssign(n, 0, vSpec(1, 1, 2, time.Minute))
	n.Step(time.Second, tHostID, &wire.BalloonAck{Point: bPoint(3, 6)})
	tDrain(n)
	n.Tick(time.Minute, core.TimerRunDone)
	if d := tOne[*wire.BalloonAttach](t, tDrain(n), tHostID); !d.Detach {
		t.Fatalf("job done, node idle: want a detach, got %v", d)
	}
	vAssign(n, 2*time.Minute, vSpec(2, 1, 2, time.Hour))
	n.Step(2*time.Minute+time.Second, tHostID, &wire.BalloonAck{Point: bPoint(3, 6)})
	tDrain(n)
	n.Leave(3 * time.Minute)
	if d := tOne[*wire.BalloonAttach](t, tDrain(n), tHostID); !d.Detach {
		t.Fatalf("leaving: want a detach, got %v", d)
	}
}

// Ω (002 Eq 3.6) is n times the running time each job loses: n·max(p,
// n·SDR·(C/R)^m).
func TestOmega(t *testing.T) {
	c := Vec{4, 8, 100}
	for _, tc := range []struct {
		n    int
		used Vec
		want float64
	}{
		{1, Vec{1, 8, 100}, 0},
		{2, Vec{2, 1, 0}, 2 * ContentionP},
		{2, Vec{2, 8, 0}, 2 * 2 * ContentionSDR},
		{4, Vec{4, 0, 100}, 4 * 4 * ContentionSDR},
	} {
		if got := Omega(tc.n, tc.used, c); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Omega(%d, %v) = %v, want %v", tc.n, tc.used, got, tc.want)
		}
	}
}
