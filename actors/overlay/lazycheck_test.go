package overlay

import (
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// tLazy is m as a receiver that leaves lists encoded gets it
// (wire.DecodeLazy: its list kept as bytes, digested).
func tLazy(t *testing.T, from core.NodeID, to core.NodeID, m *wire.Heartbeat) *wire.LazyHeartbeat {
	t.Helper()
	payload, err := wire.MarshalPayload(m)
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Encode(nil, wire.Header{Type: wire.TypeOf(m), From: uint64(from), To: uint64(to)}, payload)
	if err != nil {
		t.Fatal(err)
	}
	_, lm, err := wire.DecodeLazy(data)
	if err != nil {
		t.Fatal(err)
	}
	lh, ok := lm.(*wire.LazyHeartbeat)
	if !ok {
		t.Fatalf("DecodeLazy gave a %T", lm)
	}
	return lh
}

// tCacheRig is A = [0,½)² after it dropped B (tombstone at version 2,
// set at 0), with two true neighbors: C = [½,1)×[0,½), whose list names
// B at that version with a zone abutting A, and E = [½,1)², whose list
// names F, a node in the far corner that never abuts A. Both lists change
// nothing while B's tombstone stands. G = [0,½)×[½,1) completes A's
// border (no hole to claim). alive has C, E and G send compact heartbeats
// (no list), so that A does not declare them failed.
func tCacheRig(t *testing.T, cfg Config) (a *Node, fromC, fromE, alive func(at time.Duration)) {
	t.Helper()
	a, c := tDropped(t)
	a.cfg.VerifyLazy, a.cfg.OnMisjudged = cfg.VerifyLazy, cfg.OnMisjudged
	e := tMember(t, 5, can.Point{tQ3, tQ3}, tZone2(tHalf, tFull, tHalf, tFull), 1)
	tLink(a, e, true)
	g := tMember(t, 7, can.Point{tQ1, tQ3}, tZone2(0, tHalf, tHalf, tFull), 1)
	tLink(a, g, true)
	abutting := zoneToWire(tZone2(tHalf, tFull, 0, tFull))
	far := zoneToWire(tZone2(tFull-tQuarter/4, tFull, tFull-tQuarter/4, tFull))
	cList := &wire.Heartbeat{Self: c.info(), Neighbors: []*wire.NodeInfo{{Id: 2, Zone: abutting, Version: 2}}}
	eList := &wire.Heartbeat{Self: e.info(), Neighbors: []*wire.NodeInfo{{Id: 6, Zone: far, Version: 1}}}
	fromC = func(at time.Duration) { lh := tLazy(t, 3, 1, cList); a.Step(at, 3, lh.Heartbeat); a.Step(at, 3, lh) }
	fromE = func(at time.Duration) { a.Step(at, 5, tLazy(t, 5, 1, eList)) }
	alive = func(at time.Duration) {
		for _, m := range []*Node{c, e, g} {
			a.Step(at, m.id, &wire.Heartbeat{Self: &wire.NodeInfo{Id: uint64(m.id), Version: m.version}})
		}
	}
	tDrain(a)
	return a, fromC, fromE, alive
}

// TestListCacheSkipsUnchangedLists: a neighbor's list that changed
// nothing is skipped when it comes again at the same state, and merged
// again once the table changed.
func TestListCacheSkipsUnchangedLists(t *testing.T) {
	a, _, fromE, _ := tCacheRig(t, tConfig)
	fromE(time.Second)
	if s := a.Status().ListsSkipped; s != 0 {
		t.Fatalf("first list skipped (%d): nothing was cached yet", s)
	}
	fromE(2 * time.Second)
	if s := a.Status().ListsSkipped; s != 1 {
		t.Fatalf("%d lists skipped, want the second, unchanged one", s)
	}
	// A table change (E's zone version moves) ends the judgement.
	e := tNeighbor(a, 5)
	a.learn(3*time.Second, &wire.NodeInfo{Id: 5, Zone: zoneToWire(e.Zone), Version: 2}, fromSelf)
	fromE(3 * time.Second)
	if s := a.Status().ListsSkipped; s != 1 {
		t.Fatalf("%d lists skipped: a list judged before the table changed was skipped after it", s)
	}
}

// TestListCacheLapsesWhenTombstonesExpire: a tombstone's expiry ends the
// judgements that consulted it: C's list, which names the dropped node B,
// is merged again once B's tombstone is gone, and B comes back as a
// neighbor. (It fails if expiries are left out of the key.)
func TestListCacheLapsesWhenTombstonesExpire(t *testing.T) {
	a, fromC, _, alive := tCacheRig(t, tConfig)
	at := time.Second
	fromC(at)
	if tNeighbor(a, 2) != nil {
		t.Fatal("setup: B's tombstone did not block C's news of it")
	}
	fromC(2 * at)
	if s := a.Status().ListsSkipped; s != 1 {
		t.Fatalf("%d lists skipped before the tombstone expired, want 1", s)
	}
	// The tombstone (set at 0) lives FailAfter+slack periods: the sweep
	// of the heartbeat after that deletes it.
	ttl := time.Duration(a.cfg.FailAfter+tombstoneSlack) * tPeriod
	for beat := tPeriod; beat <= ttl+tPeriod; beat += tPeriod {
		alive(beat - at)
		a.Tick(beat, core.TimerHeartbeat)
		if _, ok := a.gone[2]; ok != (beat <= ttl) {
			t.Fatalf("setup: at %v B's tombstone is there: %v", beat, ok)
		}
	}
	tDrain(a)
	fromC(ttl + tPeriod + at)
	if nb := tNeighbor(a, 2); nb == nil || a.Status().ListsSkipped != 1 {
		t.Fatalf("after B's tombstone expired C's list was skipped (%d skipped), B is %v", a.Status().ListsSkipped, nb)
	}
}

// TestVerifyLazyReportsMisjudgements: with Config.VerifyLazy, a cached
// judgement whose inputs changed behind the key's back (here a tombstone
// deleted without a sweep or a touch — a key with a gap) is merged anyway,
// reported and counted; the node ends as one that merged the list. A
// correct judgement is re-checked and reported as nothing.
func TestVerifyLazyReportsMisjudgements(t *testing.T) {
	var told []string
	cfg := tConfig
	cfg.VerifyLazy = true
	cfg.OnMisjudged = func(id core.NodeID, what string) { told = append(told, what) }
	a, fromC, fromE, _ := tCacheRig(t, cfg)
	for _, at := range []time.Duration{time.Second, 2 * time.Second} {
		fromC(at)
		fromE(at)
	}
	if st := a.Status(); st.ListsSkipped != 2 || st.LazyMisjudged != 0 || len(told) != 0 {
		t.Fatalf("right judgements: %d re-checked, %d misjudged %v", st.ListsSkipped, st.LazyMisjudged, told)
	}
	delete(a.gone, 2) // behind the key's back
	fromC(3 * time.Second)
	if st := a.Status(); st.ListsSkipped != 3 || st.LazyMisjudged != 1 || len(told) != 1 {
		t.Fatalf("stale judgement: %d re-checked, %d misjudged %v", st.ListsSkipped, st.LazyMisjudged, told)
	}
	if !strings.Contains(told[0], "neighbor table") || !strings.Contains(told[0], "3's list") {
		t.Errorf("report %q does not say what changed", told[0])
	}
	if tNeighbor(a, 2) == nil {
		t.Error("the re-checked list was not merged: B is still missing")
	}
	// Without the check, the same gap skips the list.
	a, fromC, _, _ = tCacheRig(t, tConfig)
	fromC(time.Second)
	delete(a.gone, 2)
	fromC(2 * time.Second)
	if tNeighbor(a, 2) != nil || a.Status().ListsSkipped != 1 {
		t.Fatalf("control: the stale judgement was not used (B %v, %d skipped)", tNeighbor(a, 2), a.Status().ListsSkipped)
	}
}
