package jobs

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// tSet is a CID or ACID holding the given combinations.
func tSet(combos ...int) categorical.Set {
	s := categorical.NewSet(128)
	for _, c := range combos {
		s.Add(c)
	}
	return s
}

// The heartbeat load carries the node's combination and its ACID: its own
// CID OR its upper neighbors' ACIDs along every dimension, never a lower
// neighbor's (002 Eq 5.1). Without categorical resources neither is set.
func TestLoadInfoCarriesACID(t *testing.T) {
	n, v := tPushNode(1, Config{Combo: 3})
	v.nb(idU0).Load.Acid = tSet(5)
	v.nb(idU1).Load.Acid = tSet(7, 100)
	v.nb(idU2).Load.Acid = tSet(1)
	v.nb(idL0).Load.Acid = tSet(9)
	l := n.LoadInfo()
	want := tSet(2, 5, 7, 100, 1)
	if l.Combo != 3 || !categorical.Set(l.Acid).Equal(want) {
		t.Fatalf("load combo %d, ACID %v; want combo 3, ACID %v", l.Combo, l.Acid, want)
	}
	if !n.ACID().Equal(want) {
		t.Fatalf("ACID() = %v, want %v", n.ACID(), want)
	}
	n, _ = tPushNode(1, Config{})
	if l := n.LoadInfo(); l.Combo != 0 || l.Acid != nil {
		t.Fatalf("without categorical resources: combo %d, ACID %v; want neither", l.Combo, l.Acid)
	}
}

// Under cid, CAN-P pushes towards the upper neighbor minimizing F_d among
// those whose ACID holds a combination the job accepts (002 Algorithm 3
// lines 10–13); with none left the job climbs only where an ACID matches,
// and fails when none does. Under none the filter is off. The job accepts
// combinations 4 and 6; no neighbor itself can run it (their combinations
// are 1, 2, 3), so it is pushed, never assigned.
func TestCIDPushFilter(t *testing.T) {
	job := tSet(4, 6)
	for _, tc := range []struct {
		name             string
		mode             CategoricalMode
		acid0, acid1, a2 categorical.Set
		want             core.NodeID // 0: the job fails
	}{
		{"none ignores ACIDs", CategoricalNone, tSet(0), tSet(0), tSet(0), idU1},
		{"cid: the least F_d matches", CategoricalCID, tSet(4), tSet(6), tSet(4), idU1},
		{"cid: skip U1", CategoricalCID, tSet(4), tSet(0, 1, 2), tSet(6), idU2},
		{"cid: only U0 matches", CategoricalCID, tSet(4, 6), tSet(0), tSet(2, 3), idU0},
		{"cid: no ACID matches", CategoricalCID, tSet(0), tSet(1), tSet(2), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 10; seed++ {
				n, v := tPushNode(seed, Config{Combo: 1, Categorical: tc.mode})
				for i, id := range []core.NodeID{idU0, idU1, idU2} {
					l := v.nb(id).Load
					l.Combo = uint32(i + 2)
					l.Acid = []categorical.Set{tc.acid0, tc.acid1, tc.a2}[i]
				}
				n.LoadInfo()
				spec := tSpec(7, time.Second)
				spec.Cid = job
				n.Step(time.Second, 50, &wire.JobSubmit{Job: spec})
				r := tDrain(n)
				tNone[*wire.JobAssign](t, r)
				if tc.want == 0 {
					tNone[*wire.JobPush](t, r)
					if s := n.Snapshot(); len(s.Owned) != 0 {
						t.Fatalf("seed %d: job still owned, want it failed (%s)", seed, tMsgString(r))
					}
					continue
				}
				tOne[*wire.JobPush](t, r, tc.want)
			}
		})
	}
}

// A neighbor whose combination the job does not accept is no candidate,
// however fast and free: the job runs on a matching one (002 Algorithm 3
// line 6), whatever the pushing mode.
func TestCandidatesRespectCategories(t *testing.T) {
	for _, mode := range CategoricalModes {
		v := &fakeView{id: idS, zone: zSelf(), point: pSelfYes()}
		fast, slow := tLoad(0, 1, 9, pCap(1)), tLoad(0, 1, 1, pCap(2))
		fast.Combo, slow.Combo = 1, 2 // combinations 0 and 1
		v.nbs = []*overlay.Neighbor{tNb(idU0, zUp0(), fast), tNb(idU1, zUp1(), slow)}
		tr := categorical.NewTransform(categorical.Space{Values: []int{2, 2}})
		n := tNew(v, Config{Scheme: SchemeCANP, Combo: 3, Categorical: mode, SubCAN: &tr}, 1, nil)
		n.LoadInfo()
		spec := tSpec(7, time.Second)
		spec.Cid = tSet(1)
		n.Step(time.Second, 50, &wire.JobSubmit{Job: spec})
		tOne[*wire.JobAssign](t, tDrain(n), idU1)

		// Without a constraint the fastest free node wins.
		n = tNew(v, Config{Scheme: SchemeCANP, Combo: 3, Categorical: mode, SubCAN: &tr}, 1, nil)
		n.Step(time.Second, 50, &wire.JobSubmit{Job: tSpec(8, time.Second)})
		tOne[*wire.JobAssign](t, tDrain(n), idU0)
	}
}

// Under subcan, CAN-P pushes only towards upper neighbors whose zone meets
// one of the job's sub-CANs along the transform dimension T, the last one
// (002 §2.4). The layout: S, U0 and U1 span T's lower half — positions 0
// and 1 of four combinations — U2 its upper half. No neighbor can run the
// job (none has a combination), so it is pushed, never assigned; U1 has
// the least F_d.
func TestSubCANPushFilter(t *testing.T) {
	tr := categorical.NewTransform(categorical.Space{Values: []int{2, 2}})
	at := func(positions ...int) categorical.Set {
		s := categorical.NewSet(4)
		for _, p := range positions {
			s.Add(tr.At(p))
		}
		return s
	}
	for _, tc := range []struct {
		name string
		mode CategoricalMode
		job  categorical.Set
		want core.NodeID
	}{
		{"none ignores sub-CANs", CategoricalNone, at(3), idU1},
		{"subcan: a lower sub-CAN, the least F_d", CategoricalSubCAN, at(1), idU1},
		{"subcan: an upper sub-CAN, only U2", CategoricalSubCAN, at(3), idU2},
		{"subcan: both halves", CategoricalSubCAN, at(0, 2), idU1},
		{"subcan: no constraint", CategoricalSubCAN, nil, idU1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 10; seed++ {
				n, v := tPushNode(seed, Config{Combo: 1, Categorical: tc.mode, SubCAN: &tr})
				for _, id := range []core.NodeID{idU0, idU1, idU2} {
					v.nb(id).Load.Combo = 0
				}
				if l := n.LoadInfo(); tc.mode == CategoricalSubCAN && l.Acid != nil {
					t.Fatalf("subcan heartbeat carries an ACID %v", l.Acid)
				}
				spec := tSpec(7, time.Second)
				spec.Cid = tc.job
				n.Step(time.Second, 50, &wire.JobSubmit{Job: spec})
				r := tDrain(n)
				tNone[*wire.JobAssign](t, r)
				tOne[*wire.JobPush](t, r, tc.want)
			}
		})
	}
}

// Under subcan a job climbs only towards upper neighbors whose zone meets
// one of its sub-CANs: with every resource neighbor outside them, towards
// the one along T.
func TestSubCANClimbStaysInSubCANs(t *testing.T) {
	tr := categorical.NewTransform(categorical.Space{Values: []int{2, 2}})
	job := categorical.NewSet(4)
	job.Add(tr.At(2))
	for seed := uint64(1); seed <= 10; seed++ {
		n, v := tPushNode(seed, Config{Combo: 1, Categorical: CategoricalSubCAN, SubCAN: &tr})
		for _, id := range []core.NodeID{idU0, idU1, idU2} {
			l := v.nb(id).Load
			l.Combo, l.Agg = 0, nil // no aggregated load: CAN-P cannot push, the job climbs
		}
		n.LoadInfo()
		spec := tSpec(7, time.Second)
		spec.Cid = job
		n.Step(time.Second, 50, &wire.JobSubmit{Job: spec})
		tOne[*wire.JobPush](t, tDrain(n), idU2)
	}
}
