package overlay

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// TestHoleClaimsDoNotRunAway: a node whose border shows a hole that never
// closes (here: it knows no neighbor at all) claims it once, within its
// own zone mirrored across the face; a hole beyond its extra zone, next to
// no zone it knows but its own extras, is not claimed (holeLimit). Before
// the limit, each claim was mirrored across the last extra zone, which
// doubled every holeWait periods (chaos seed 8116: extra zones of 69% and
// 32% of the space, over hundreds of other nodes' zones).
func TestHoleClaimsDoNotRunAway(t *testing.T) {
	w := uint64(can.Span / 8)
	a := tMember(t, 1, can.Point{1, 1}, tZone2(0, w, 0, can.Span), 1) // [0, ⅛) × [0, 1)
	for k := 1; k <= 40; k++ {
		a.Tick(time.Duration(k)*tPeriod, core.TimerHeartbeat)
		tDrain(a)
	}
	if a.Status().HolesClaimed == 0 {
		t.Fatal("a hole that persisted for 40 periods was never claimed: the rule must still claim")
	}
	want := tZone2(w, 2*w, 0, can.Span)
	if len(a.extra) != 1 || !a.extra[0].Equal(want) {
		t.Fatalf("after 40 periods (%d hole claims) the extra zones are %v, want [%v]: our zone mirrored across the face, no further", a.Status().HolesClaimed, a.extra, want)
	}
}

// tRivals is the orphan of TestOrphanNotice: D owned [¼, ¾) × [0, 1) and
// departed; A owns [0, ¼) × [0, 1) on one side of it and C [¾, 1) × [0, 1)
// on the other. A and C abut only D: nobody can introduce them.
func tRivals(t *testing.T, notice bool) (a, c *Node, orphan can.Zone, list []*wire.NodeInfo) {
	q := uint64(can.Span / 4)
	a = tMember(t, 1, can.Point{1, 1}, tZone2(0, q, 0, can.Span), 1)
	c = tMember(t, 3, can.Point{uint32(3*q + 1), 1}, tZone2(3*q, can.Span, 0, can.Span), 1)
	a.cfg.OrphanNotice, c.cfg.OrphanNotice = notice, notice
	orphan = tZone2(q, 3*q, 0, can.Span)
	list = []*wire.NodeInfo{a.info(), c.info()} // D's last list
	return a, c, orphan, list
}

// TestOrphanNotice: with Config.OrphanNotice a node that claims an orphan
// tells the departed node's other neighbors (from its last list) of the
// claim, so that a rival claimant on the far side of the orphan settles
// the overlap; without it nobody tells the rival.
func TestOrphanNotice(t *testing.T) {
	for _, notice := range []bool{false, true} {
		a, c, orphan, list := tRivals(t, notice)
		a.await(0, orphan, nil, list)
		c.await(0, orphan, nil, list)
		now := (takeoverWait + 1) * tPeriod
		a.claimOrphans(now)
		ra := tDrain(a)
		c.claimOrphans(now)
		rc := tDrain(c)
		if len(a.extra) != 1 || len(c.extra) != 1 {
			t.Fatalf("notice %v: both sides should have claimed the orphan: A %v, C %v", notice, a.extra, c.extra)
		}
		var toC, toA *wire.ZoneUpdate
		for _, m := range ra.Messages {
			if u, ok := m.Msg.(*wire.ZoneUpdate); ok && m.To == 3 {
				toC = u
			}
		}
		for _, m := range rc.Messages {
			if u, ok := m.Msg.(*wire.ZoneUpdate); ok && m.To == 1 {
				toA = u
			}
		}
		if !notice {
			if toC != nil || toA != nil {
				t.Fatalf("without orphan_notice a claimant told a node it does not know")
			}
			continue
		}
		if toC == nil || toA == nil {
			t.Fatalf("with orphan_notice each claimant must tell the other: A→C %v, C→A %v", toC != nil, toA != nil)
		}
		c.Step(now, 1, toC)
		a.Step(now, 3, toA)
		tDrain(a)
		tDrain(c)
		// A's own zone and C's are the same size: the smaller id wins.
		if len(a.extra) != 1 || len(c.extra) != 0 {
			t.Fatalf("after the notices A holds %v and C %v: one claim (A's, the smaller id) must remain", a.extra, c.extra)
		}
		if a.Status().OrphanNotices != 1 || c.Status().OrphanNotices != 1 {
			t.Fatalf("orphan notices counted: A %d, C %d, want 1 each", a.Status().OrphanNotices, c.Status().OrphanNotices)
		}
	}
}
