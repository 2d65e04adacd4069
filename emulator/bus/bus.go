// Package bus is gridbed's one narrow transport interface: publish bytes to a
// peer address, and register a handler that receives the bytes published to
// an address. The NATS implementation (nats.go in this package) carries the
// emulator's traffic; the deterministic driver has its own in-memory
// implementation (emulator/sim). The link model (faults/link) decorates it.
package bus

// Address identifies a peer on the bus. Peers address each other only by
// this number, so a run can be split across processes sharing a NATS cluster.
type Address uint64

// Handler receives the bytes of one message published to a registered
// address. It must not retain data after it returns unless it copies it; it
// is called from a bus goroutine and must not block for long (hand the
// message to a mailbox).
type Handler func(to Address, data []byte)

// Bus moves opaque messages between peer addresses.
type Bus interface {
	// Publish sends data to the peer registered at to. Delivery is
	// asynchronous and best-effort: a message to an address nobody has
	// registered is dropped and counted in Stats().Unroutable.
	Publish(to Address, data []byte) error
	// Register makes h receive every message published to addr until
	// Unregister(addr). Registering an address twice replaces the handler.
	Register(addr Address, h Handler) error
	// Unregister stops delivery to addr. Messages already in flight to it are
	// dropped and counted as Unroutable.
	Unregister(addr Address)
	// Stats reports what the bus did so far.
	Stats() Stats
	// Close releases connections (and stops an embedded server it started).
	Close() error
}

// Stats are cumulative counters of a bus since it was opened.
//
// Every message a peer publishes is either accepted (Published) or refused
// (PublishErrs). An accepted message, or one refused because the transport
// was down (Refused), ends up exactly once as Delivered, Unroutable, Dropped,
// Lost or — once the bus is closed — Discarded or LostOnDisconnect, so once
// the bus is quiescent (no publishers, Flush returned and the handlers have
// caught up), and always after Close,
//
//	Published + Refused == Delivered + Unroutable + Dropped + Lost + Discarded + LostOnDisconnect
//
// i.e. Unsettled() == 0. While messages are in flight Unsettled() counts
// them; a bus that cannot see some of its losses (see NATSBus.Stats) also
// leaves them there.
type Stats struct {
	Published   uint64 // messages accepted by Publish
	Delivered   uint64 // messages handed to a registered handler
	Unroutable  uint64 // messages that arrived for an unregistered address
	Dropped     uint64 // messages the transport dropped (e.g. NATS slow consumer)
	PublishErrs uint64 // Publish calls that returned an error (including Refused)
	// Refused counts Publish calls that failed because the transport was
	// down (e.g. the NATS server stopped): messages the peer sent that went
	// nowhere. They are also in PublishErrs and in Lost.
	Refused uint64
	// Lost counts messages that vanished in the transport during outages:
	// Refused, plus messages accepted by Publish that an outage destroyed
	// before delivery. Counted when known (never merely in flight), so it
	// only grows.
	Lost       uint64
	Outages    uint64 // transport outages (NATS server stops)
	Reconnects uint64 // transport connections re-established after a disconnect
	// Discarded counts accepted messages that were still waiting for
	// delivery inside the transport (a NATS subscription's pending buffer)
	// when Close stopped delivery: in flight at the end, handed to nobody.
	Discarded uint64
	// LostOnDisconnect counts accepted messages destroyed when the
	// transport cut a connection off mid-run other than by a server stop
	// (NATS: the server closed it as a slow consumer or a stale
	// connection, or a write on it failed): what the server had queued for
	// the connection and the client had not yet written. Known once the
	// bus is closed (see NATSBus.Close); Cuts counts those connections.
	LostOnDisconnect uint64
	Cuts             uint64
	// Transport counts the transport messages published (NATS messages;
	// for the deterministic driver's bus, the messages it would have
	// published): one per Publish, one per receiving connection of a
	// PublishBatch. Every other counter counts logical messages — one per
	// receiver, what the papers count — so the invariant above holds in
	// logical messages whatever the fan-out mode.
	Transport uint64
}

// Unsettled returns Published + Refused - Delivered - Unroutable - Dropped -
// Lost - Discarded - LostOnDisconnect: the messages still in flight, or lost
// without the bus noticing. It is 0 for a quiescent or closed bus that
// accounts for all its losses.
func (s Stats) Unsettled() int64 {
	return int64(s.Published+s.Refused) - int64(s.Delivered+s.Unroutable+s.Dropped+s.Lost+s.Discarded+s.LostOnDisconnect)
}

// Message is one logical message of a batch: the bytes for one receiver.
type Message struct {
	To   Address
	Data []byte
}

// Batcher is implemented by a bus that can carry several logical messages
// as one transport message per receiving connection (bus.fanout: batched):
// a peer's heartbeat to its neighbors, say, travels as one NATS message per
// connection of the receivers instead of one per receiver. Every message of
// the batch is still a message of its own for Stats (Published, Delivered,
// ...), exactly as if it had been published alone; only Stats.Transport
// counts the transport messages.
type Batcher interface {
	// PublishBatch publishes every message of msgs, in order, as Publish
	// would one by one; it returns the first error. The caller may reuse
	// the messages' bytes once it returns, on the same terms as Publish.
	PublishBatch(msgs []Message) error
}

// PublishBatch publishes msgs through b's own PublishBatch when b is a
// Batcher, and otherwise with one Publish per message, in order. It returns
// the first error.
func PublishBatch(b Bus, msgs []Message) error {
	if bb, ok := b.(Batcher); ok {
		return bb.PublishBatch(msgs)
	}
	var first error
	for _, m := range msgs {
		if err := b.Publish(m.To, m.Data); err != nil && first == nil {
			first = err
		}
	}
	return first
}
