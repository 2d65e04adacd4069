package emulator

// The run's message books: where every protocol message the peers sent
// went. Every message counted as sent (metrics.Traffic, in the peer
// adapter: messages.total) and every extra copy the link model made ends
// in exactly one bucket, each counted where it happens:
//
//	sent + duplicated = delivered
//	                  + dropped.partition + dropped.loss + dropped.bus_outage + dropped.slow_consumer
//	                  + refused + publish_failed + unroutable + stopped_peer + lost
//	                  + in_flight_at_end.link_delay + in_flight_at_end.bus
//	                  + in_flight_at_end.mailbox + in_flight_at_end.unregistered
//	                  + unaccounted
//
// and unaccounted must be 0 (the invariant messages_accounted). Where each
// term is counted, by driver:
//
//   - sent: metrics.Traffic.Sent, once per envelope a peer or the client
//     publishes; duplicated: link.Duplicate's extra copies.
//   - delivered: metrics.Traffic.Received, once per message handed to
//     peer.Peer.Deliver or peer.Client.Deliver (decode errors included).
//   - dropped.partition, .loss: the link.Partition and link.Loss
//     layers, at send time. dropped.bus_outage: the deterministic
//     driver's outage switch (outage.Switch), for messages sent, or coming due
//     after a delay, while the bus is down. dropped.slow_consumer: the NATS
//     subscriptions' slow-consumer drops (bus.Stats.Dropped).
//   - refused: publishes the NATS bus refused because the server was down
//     (bus.Stats.Refused; a delayed copy coming due then included).
//     publish_failed: other failed publishes (bus closed, oversized
//     payload): bus.Stats.PublishErrs − Refused.
//   - unroutable: messages that reached the bus for an address nobody had
//     registered during the run — a peer that had crashed or left.
//     stopped_peer (emulator): messages handed to the mailbox of a peer
//     that had crashed or left, which ignored them (peer.Actor.Discarded,
//     before the end).
//   - lost: accepted by NATS and destroyed by a server stop (bus_restart):
//     bus.Stats.Lost − Refused.
//   - lost_on_disconnect: accepted by NATS and destroyed when the server
//     cut a connection off mid-run (a slow consumer: its outbound buffer
//     for the connection overflowed, or a write to it timed out, as under
//     memory pressure; a stale connection; a failed write): what the
//     server had queued for the connection and the client had not yet
//     written (bus.Stats.LostOnDisconnect, settled when the bus closes).
//     The term and the key appear only in runs that lost some. The
//     messages refused while the cut connection reconnected are in refused.
//   - dropped.bandwidth: refused by a full access-link queue
//     (bandwidth.Stats.Dropped, link.bandwidth.queue); the term and the
//     key appear only in runs that limit bandwidth.
//   - in_flight_at_end: still on their way when the run ended — held by
//     the link model's delay (link.DelayStats.Pending: the scheduler
//     stopped first) or waiting for a slow peer's service (slow.Stats.Pending,
//     counted in link_delay too) or in an access-link queue
//     (bandwidth.Stats.Pending, in link_delay too); on the transport (NATS subscription buffers when the
//     bus closed, bus.Stats.Discarded; the simulator's event queue,
//     sim.World.InFlight); in a mailbox, handed to a peer the end of the
//     run had already halted or frozen (live.Settlement DiscardedAtEnd +
//     Mailbox); arriving at the bus after the end had unregistered the
//     peers (live.Settlement UnroutableAtEnd).
//
// The end of the run is when the emulator driver's Close (or, for an
// aborted run, Freeze) began; the deterministic driver simply stops its
// event loop, so it only has link_delay and bus in flight at the end.

import (
	"fmt"
	"strings"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/metrics"
)

// AccountingIdentity is the identity the accounting closes, written with
// the keys of summary.json's accounting object.
const AccountingIdentity = "sent + duplicated = delivered + dropped.partition + dropped.loss + dropped.bus_outage + dropped.slow_consumer" +
	" + refused + publish_failed + unroutable + stopped_peer + lost" +
	" + in_flight_at_end.link_delay + in_flight_at_end.bus + in_flight_at_end.mailbox + in_flight_at_end.unregistered + unaccounted"

// Accounting is summary.json's accounting object: every term of
// AccountingIdentity (see the top of this file for where each is counted).
type Accounting struct {
	Identity      string          `json:"identity"`
	Sent          uint64          `json:"sent"`
	Duplicated    uint64          `json:"duplicated"`
	Delivered     uint64          `json:"delivered"`
	Dropped       AccountingDrops `json:"dropped"`
	Refused       uint64          `json:"refused"`
	PublishFailed uint64          `json:"publish_failed"`
	Unroutable    uint64          `json:"unroutable"`
	StoppedPeer   uint64          `json:"stopped_peer"`
	Lost          uint64          `json:"lost"`
	// LostOnDisconnect: destroyed with a connection the NATS server cut
	// off mid-run (bus.Stats.LostOnDisconnect); written, and in the
	// identity (AccountingIdentityDisconnect), only when nonzero.
	LostOnDisconnect uint64           `json:"lost_on_disconnect,omitempty"`
	InFlightAtEnd    AccountingFlight `json:"in_flight_at_end"`
	// LostWithWorkers, in a run split over worker processes one of which
	// died, is what its counters took with them: the messages its peers
	// sent and received after its last report (sent and not counted
	// received, or received elsewhere and never counted sent). The books
	// close by naming them; written only when a worker died
	// (AccountingIdentityWorkers), and the run fails workers_alive.
	LostWithWorkers int64 `json:"lost_with_workers,omitempty"`
	// Unaccounted is sent + duplicated minus every other term: messages
	// that vanished (positive) or were counted twice (negative). 0 in a
	// run whose books close.
	Unaccounted int64 `json:"unaccounted"`
}

// AccountingDrops are the messages dropped on purpose, by reason.
type AccountingDrops struct {
	Partition    uint64 `json:"partition"`
	Loss         uint64 `json:"loss"`
	BusOutage    uint64 `json:"bus_outage"`
	SlowConsumer uint64 `json:"slow_consumer"`
	// Bandwidth: dropped on a full access-link queue (link.bandwidth.queue);
	// written only in runs that limit bandwidth (AccountingIdentityBandwidth).
	Bandwidth uint64 `json:"bandwidth,omitempty"`
}

// AccountingIdentityBandwidth is AccountingIdentity of a run that limits
// bandwidth (link.bandwidth): the access links' queues drop messages too,
// and hold some at the end (in_flight_at_end.link_delay).
const AccountingIdentityBandwidth = "sent + duplicated = delivered + dropped.partition + dropped.loss + dropped.bus_outage + dropped.slow_consumer + dropped.bandwidth" +
	" + refused + publish_failed + unroutable + stopped_peer + lost" +
	" + in_flight_at_end.link_delay + in_flight_at_end.bus + in_flight_at_end.mailbox + in_flight_at_end.unregistered + unaccounted"

// AccountingIdentityDisconnect is the term a run in which the NATS server
// cut a connection off mid-run adds to its identity, after lost
// (Accounting.LostOnDisconnect).
const AccountingIdentityDisconnect = " + lost_on_disconnect"

// AccountingIdentityWorkers is the term a run that lost a worker process
// adds to its identity, before unaccounted (Accounting.LostWithWorkers).
const AccountingIdentityWorkers = " + lost_with_workers"

// AccountingFlight are the messages still on their way when the run
// ended, by where they were; Total is their sum.
type AccountingFlight struct {
	LinkDelay    uint64 `json:"link_delay"`
	Bus          uint64 `json:"bus"`
	Mailbox      uint64 `json:"mailbox"`
	Unregistered uint64 `json:"unregistered"`
	Total        uint64 `json:"total"`
}

// messageCounts are the counters the accounting is drawn up from, read
// after the driver closed.
type messageCounts struct {
	traffic metrics.TrafficSnapshot
	faults  link.ChainStats
	outage  uint64 // the deterministic driver's outage drops
	slow    uint64 // held for a slow peer's service at the end
	bus     bus.Stats
	// Driver-specific: the emulator's Settlement, or the simulator's
	// messages still in its event queue.
	live        *live.Settlement
	simInFlight uint64
	// bandwidth: the access links' drops and the messages they held at the
	// end; bwOn when link.bandwidth limits anything.
	bwDropped, bwPending uint64
	bwOn                 bool
	// workersLost: the run was split over worker processes and some died.
	workersLost bool
}

// readMessageCounts reads the counters of a run whose driver has closed.
func readMessageCounts(drv Driver, c *chaos, traffic metrics.TrafficSnapshot) messageCounts {
	mc := messageCounts{traffic: traffic, bus: drv.BusStats()}
	if c != nil {
		mc.faults = c.Link()
		mc.outage = c.OutageDropped()
		mc.slow = c.Slow().Pending
		st, m := c.Bandwidth()
		mc.bwDropped, mc.bwPending, mc.bwOn = st.DroppedTotal(), st.Pending, m != nil
	}
	if wf, ok := drv.(workerFailures); ok {
		_, lost := wf.Failures()
		mc.workersLost = len(lost) > 0
	}
	if d, ok := drv.(settledDriver); ok {
		s := d.Settlement()
		mc.live = &s
	}
	if d, ok := drv.(queueingDriver); ok {
		mc.simInFlight = d.InFlight()
	}
	return mc
}

// accounting draws up the books (AccountingIdentity) from the counters.
func (mc messageCounts) accounting() Accounting {
	sent, _ := mc.traffic.Total()
	a := Accounting{
		Identity:   AccountingIdentity,
		Sent:       sent,
		Duplicated: mc.faults.Duplicated,
		Delivered:  mc.traffic.Received,
		Dropped: AccountingDrops{
			Partition:    mc.faults.DroppedPartition,
			Loss:         mc.faults.DroppedLoss,
			BusOutage:    mc.outage,
			SlowConsumer: mc.bus.Dropped,
		},
		Refused:          mc.bus.Refused,
		PublishFailed:    mc.bus.PublishErrs - min(mc.bus.Refused, mc.bus.PublishErrs),
		Unroutable:       mc.bus.Unroutable,
		Lost:             mc.bus.Lost - min(mc.bus.Refused, mc.bus.Lost),
		LostOnDisconnect: mc.bus.LostOnDisconnect,
	}
	f := &a.InFlightAtEnd
	f.LinkDelay = mc.faults.DelayPending + mc.slow + mc.bwPending
	if mc.bwOn {
		a.Identity = AccountingIdentityBandwidth
		a.Dropped.Bandwidth = mc.bwDropped
	}
	if a.LostOnDisconnect != 0 {
		a.Identity = strings.Replace(a.Identity, " + lost + ", " + lost"+AccountingIdentityDisconnect+" + ", 1)
	}
	f.Bus = mc.bus.Discarded + mc.simInFlight
	if s := mc.live; s != nil {
		a.Unroutable = s.UnroutableInRun
		a.StoppedPeer = s.DiscardedInRun
		f.Mailbox = s.DiscardedAtEnd + s.Mailbox
		f.Unregistered = s.UnroutableAtEnd
	}
	f.Total = f.LinkDelay + f.Bus + f.Mailbox + f.Unregistered
	in := a.Sent + a.Duplicated
	out := a.Delivered + a.Dropped.Partition + a.Dropped.Loss + a.Dropped.BusOutage + a.Dropped.SlowConsumer + a.Dropped.Bandwidth +
		a.Refused + a.PublishFailed + a.Unroutable + a.StoppedPeer + a.Lost + a.LostOnDisconnect + f.Total
	a.Unaccounted = int64(in) - int64(out)
	if mc.workersLost {
		// What the dead workers' counters took with them is all the
		// books cannot place: name it instead of leaving it unaccounted.
		a.Identity = strings.Replace(a.Identity, " + unaccounted", AccountingIdentityWorkers+" + unaccounted", 1)
		a.LostWithWorkers, a.Unaccounted = a.Unaccounted, 0
	}
	return a
}

// terms lists the nonzero terms of the right-hand side, in the identity's
// order, as "name value".
func (a Accounting) terms() []string {
	var out []string
	add := func(name string, v uint64) {
		if v != 0 {
			out = append(out, fmt.Sprintf("%s %d", name, v))
		}
	}
	add("delivered", a.Delivered)
	add("dropped.partition", a.Dropped.Partition)
	add("dropped.loss", a.Dropped.Loss)
	add("dropped.bus_outage", a.Dropped.BusOutage)
	add("dropped.slow_consumer", a.Dropped.SlowConsumer)
	add("dropped.bandwidth", a.Dropped.Bandwidth)
	add("refused", a.Refused)
	add("publish_failed", a.PublishFailed)
	add("unroutable", a.Unroutable)
	add("stopped_peer", a.StoppedPeer)
	add("lost", a.Lost)
	if a.LostOnDisconnect != 0 {
		out = append(out, fmt.Sprintf("lost_on_disconnect %d (held by a bus connection the NATS server cut off mid-run: its outbound buffer and the client's unwritten one)", a.LostOnDisconnect))
	}
	add("in_flight_at_end.link_delay", a.InFlightAtEnd.LinkDelay)
	add("in_flight_at_end.bus", a.InFlightAtEnd.Bus)
	add("in_flight_at_end.mailbox", a.InFlightAtEnd.Mailbox)
	add("in_flight_at_end.unregistered", a.InFlightAtEnd.Unregistered)
	if a.LostWithWorkers != 0 {
		out = append(out, fmt.Sprintf("lost_with_workers %d (the messages a dead worker's peers sent and received after its last report: its counters died with it)", a.LostWithWorkers))
	}
	return out
}

// Check is the invariant messages_accounted: OK iff the books close
// (Unaccounted == 0); the detail names every nonzero term.
func (a Accounting) Check() InvariantCheck {
	c := InvariantCheck{Name: "messages_accounted", OK: a.Unaccounted == 0}
	if a.Sent == 0 && a.Duplicated == 0 && a.Unaccounted == 0 {
		c.Detail = "no protocol message was sent: nothing to account for"
		return c
	}
	lhs := fmt.Sprintf("sent %d", a.Sent)
	if a.Duplicated != 0 {
		lhs += fmt.Sprintf(" + duplicated %d", a.Duplicated)
	}
	rhs := strings.Join(a.terms(), " + ")
	if rhs == "" {
		rhs = "0"
	}
	c.Detail = fmt.Sprintf("%s = %s; unaccounted %d", lhs, rhs, a.Unaccounted)
	if !c.OK {
		c.Detail += " (positive: messages that vanished; negative: counted twice)"
	}
	return c
}

// line is the accounting in one line of the printed summary: the buckets
// grouped.
func (a Accounting) line() string {
	d := a.Dropped
	s := fmt.Sprintf("sent %d", a.Sent)
	if a.Duplicated != 0 {
		s += fmt.Sprintf(" + duplicated %d", a.Duplicated)
	}
	f := a.InFlightAtEnd
	lost := fmt.Sprintf("lost %d", a.Refused+a.PublishFailed+a.Lost+a.LostOnDisconnect)
	if a.LostOnDisconnect != 0 {
		lost += fmt.Sprintf(" (%d with a connection the NATS server cut off)", a.LostOnDisconnect)
	}
	s += fmt.Sprintf(" = delivered %d + dropped %d + unroutable %d + %s + in flight at end %d (delay %d, bus %d, mailbox %d, unregistered %d)",
		a.Delivered, d.Partition+d.Loss+d.BusOutage+d.SlowConsumer+d.Bandwidth, a.Unroutable+a.StoppedPeer, lost,
		f.Total, f.LinkDelay, f.Bus, f.Mailbox, f.Unregistered)
	if a.LostWithWorkers != 0 {
		s += fmt.Sprintf(" + lost with dead workers %d", a.LostWithWorkers)
	}
	return s + fmt.Sprintf("; unaccounted %d", a.Unaccounted)
}
