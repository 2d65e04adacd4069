package emulator

import (
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/metrics"
)

// books are counters in which every term of the identity is nonzero and
// that close exactly: 1000 sent + 10 duplicated.
func books() messageCounts {
	tr := metrics.TrafficSnapshot{Count: []uint64{0, 600, 400}, Bytes: []uint64{0, 1, 1}, Entries: []uint64{0, 0, 0}, Received: 924}
	return messageCounts{
		traffic: tr,
		faults:  link.ChainStats{DroppedPartition: 20, DroppedLoss: 10, Duplicated: 10, DelayPending: 7},
		outage:  4,
		// 13 refused (also publish errors, and lost), 2 other publish
		// errors, 5 lost in transit, 3 slow-consumer drops, 6 discarded at
		// close, 12 unroutable.
		bus:  bus.Stats{Refused: 13, PublishErrs: 15, Lost: 18, Dropped: 3, Discarded: 6, Unroutable: 12},
		live: &live.Settlement{UnroutableInRun: 9, UnroutableAtEnd: 3, DiscardedInRun: 1, DiscardedAtEnd: 2, Mailbox: 1},
	}
}

// TestAccountingCloses: every term lands where the identity says, and the
// check names each nonzero term.
func TestAccountingCloses(t *testing.T) {
	a := books().accounting()
	if a.Sent != 1000 || a.Delivered != 924 || a.Refused != 13 || a.PublishFailed != 2 || a.Lost != 5 ||
		a.Unroutable != 9 || a.StoppedPeer != 1 || a.Dropped.BusOutage != 4 || a.Dropped.SlowConsumer != 3 {
		t.Fatalf("terms %+v", a)
	}
	if f := a.InFlightAtEnd; f.LinkDelay != 7 || f.Bus != 6 || f.Mailbox != 3 || f.Unregistered != 3 || f.Total != 19 {
		t.Fatalf("in flight at end %+v", f)
	}
	c := a.Check()
	if a.Unaccounted != 0 || !c.OK || c.Name != "messages_accounted" {
		t.Fatalf("unaccounted %d, check %+v", a.Unaccounted, c)
	}
	for _, term := range []string{"sent 1000", "duplicated 10", "delivered 924", "dropped.partition 20", "dropped.loss 10", "dropped.bus_outage 4",
		"dropped.slow_consumer 3", "refused 13", "publish_failed 2", "unroutable 9", "stopped_peer 1", "lost 5",
		"in_flight_at_end.link_delay 7", "in_flight_at_end.bus 6", "in_flight_at_end.mailbox 3", "in_flight_at_end.unregistered 3", "unaccounted 0"} {
		if !strings.Contains(c.Detail, term) {
			t.Errorf("detail %q does not name %q", c.Detail, term)
		}
	}
}

// TestAccountingSeesLeaks: a message counted nowhere, or counted twice,
// fails the check with the signed difference.
func TestAccountingSeesLeaks(t *testing.T) {
	mc := books()
	mc.traffic.Received--
	if a := mc.accounting(); a.Unaccounted != 1 || a.Check().OK {
		t.Errorf("one message vanished: unaccounted %d, check %+v", a.Unaccounted, a.Check())
	}
	mc = books()
	mc.faults.DelayPending++
	if a := mc.accounting(); a.Unaccounted != -1 || a.Check().OK || !strings.Contains(a.Check().Detail, "unaccounted -1") {
		t.Errorf("one message counted twice: unaccounted %d, check %+v", a.Unaccounted, a.Check())
	}
	if c := (messageCounts{traffic: metrics.TrafficSnapshot{Count: []uint64{0}, Bytes: []uint64{0}}}).accounting().Check(); !c.OK || !strings.Contains(c.Detail, "nothing to account for") {
		t.Errorf("no message sent: check %+v", c)
	}
}

// TestAccountingCutConnection: messages destroyed with a bus connection the
// NATS server cut off mid-run are a term of their own, named in the
// identity, the check and the printed line; without them neither the key
// nor the term appears.
func TestAccountingCutConnection(t *testing.T) {
	mc := books()
	mc.traffic.Count[1] += 40 // 40 more sent, lost with the cut connection
	mc.bus.LostOnDisconnect = 40
	a := mc.accounting()
	if a.LostOnDisconnect != 40 || a.Unaccounted != 0 || !a.Check().OK {
		t.Fatalf("lost on disconnect %d, unaccounted %d, check %+v", a.LostOnDisconnect, a.Unaccounted, a.Check())
	}
	if !strings.Contains(a.Identity, " + lost + lost_on_disconnect + in_flight_at_end.link_delay") {
		t.Errorf("identity %q", a.Identity)
	}
	if c := a.Check(); !strings.Contains(c.Detail, "lost_on_disconnect 40 (held by a bus connection the NATS server cut off") {
		t.Errorf("detail %q", c.Detail)
	}
	if l := a.line(); !strings.Contains(l, "(40 with a connection the NATS server cut off)") {
		t.Errorf("line %q", l)
	}
	if a := books().accounting(); a.Identity != AccountingIdentity || strings.Contains(a.Check().Detail, "disconnect") {
		t.Errorf("no cut: identity %q, detail %q", a.Identity, a.Check().Detail)
	}
	mc.bwOn = true
	if a := mc.accounting(); !strings.Contains(a.Identity, "dropped.bandwidth") || !strings.Contains(a.Identity, "lost_on_disconnect") {
		t.Errorf("bandwidth and a cut: identity %q", a.Identity)
	}
}
