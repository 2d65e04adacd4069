// Package metrics turns what gridbed's peers and drivers count into
// Prometheus series on a private registry (never the global one), serves
// /metrics (and Go's profiler only when asked), and keeps the quantile
// histograms the run summary reports. Names follow Prometheus conventions: gridbed_ prefix, base
// units, _total counters, bounded labels (message type, event — never a peer).
package metrics

import (
	"sync/atomic"

	"github.com/gridbed/gridbed/actors/wire"
)

// Traffic counts protocol messages and bytes sent, by message type. The bytes
// are the encoded envelopes handed to the bus, so the message-volume figures
// include the wire format's overhead. It also counts the messages handed to
// an endpoint from the bus (received), for the run's message accounting.
// Oracle traffic never passes through it. Safe for concurrent use.
type Traffic struct {
	msgs, bytes, entries []atomic.Uint64
	decodeErrors         atomic.Uint64
	received             atomic.Uint64
	rejected             [len(wire.RejectReasons)]atomic.Uint64 // by wire.RejectReasons
}

// NewTraffic returns zeroed counters for every message type.
func NewTraffic() *Traffic {
	return &Traffic{
		msgs:    make([]atomic.Uint64, wire.NumTypes),
		bytes:   make([]atomic.Uint64, wire.NumTypes),
		entries: make([]atomic.Uint64, wire.NumTypes),
	}
}

// Sent counts one message of type t of n bytes carrying entries node
// descriptions (wire.Entries).
func (t *Traffic) Sent(typ wire.MsgType, n, entries int) {
	if int(typ) < 0 || int(typ) >= len(t.msgs) {
		typ = wire.MsgType_MSG_UNSPECIFIED
	}
	t.msgs[typ].Add(1)
	t.bytes[typ].Add(uint64(n))
	t.entries[typ].Add(uint64(entries))
}

// DecodeError counts a received message that could not be decoded.
func (t *Traffic) DecodeError() { t.decodeErrors.Add(1) }

// Reject counts a received message thrown away for reason (one of
// wire.RejectReasons; anything else counts as malformed): a decode error
// too.
func (t *Traffic) Reject(reason string) {
	t.decodeErrors.Add(1)
	i := rejectIndex(reason)
	t.rejected[i].Add(1)
}

func rejectIndex(reason string) int {
	for i, r := range wire.RejectReasons {
		if r == reason {
			return i
		}
	}
	return 1 // malformed
}

// Received counts one message from the bus handed to a peer or the client
// (decodable or not).
func (t *Traffic) Received() { t.received.Add(1) }

// TrafficSnapshot is a copy of the counters at one moment.
type TrafficSnapshot struct {
	Count, Bytes, Entries []uint64 // indexed by wire.MsgType
	DecodeErrors          uint64
	Received              uint64 // messages handed to endpoints (Traffic.Received)
	// Rejected counts the received messages thrown away, by reason
	// (indexed as wire.RejectReasons); they are DecodeErrors too.
	Rejected [len(wire.RejectReasons)]uint64
}

// Snapshot copies the counters.
func (t *Traffic) Snapshot() TrafficSnapshot {
	s := TrafficSnapshot{Count: make([]uint64, len(t.msgs)), Bytes: make([]uint64, len(t.msgs)), Entries: make([]uint64, len(t.msgs))}
	for i := range t.msgs {
		s.Count[i] = t.msgs[i].Load()
		s.Bytes[i] = t.bytes[i].Load()
		s.Entries[i] = t.entries[i].Load()
	}
	s.DecodeErrors = t.decodeErrors.Load()
	s.Received = t.received.Load()
	for i := range t.rejected {
		s.Rejected[i] = t.rejected[i].Load()
	}
	return s
}

// Total is the number of messages and bytes over all types.
func (s TrafficSnapshot) Total() (msgs, bytes uint64) {
	for i := range s.Count {
		msgs += s.Count[i]
		bytes += s.Bytes[i]
	}
	return msgs, bytes
}

// TotalEntries is the number of node descriptions over all types.
func (s TrafficSnapshot) TotalEntries() (entries uint64) {
	for _, e := range s.Entries {
		entries += e
	}
	return entries
}

// Sub returns s − o, the traffic between two snapshots.
func (s TrafficSnapshot) Sub(o TrafficSnapshot) TrafficSnapshot {
	d := TrafficSnapshot{Count: make([]uint64, len(s.Count)), Bytes: make([]uint64, len(s.Count)), Entries: make([]uint64, len(s.Count))}
	for i := range s.Count {
		if i < len(o.Count) && i < len(o.Entries) {
			d.Count[i] = s.Count[i] - o.Count[i]
			d.Bytes[i] = s.Bytes[i] - o.Bytes[i]
			d.Entries[i] = s.Entries[i] - o.Entries[i]
		} else {
			d.Count[i], d.Bytes[i], d.Entries[i] = s.Count[i], s.Bytes[i], s.Entries[i]
		}
	}
	d.DecodeErrors = s.DecodeErrors - o.DecodeErrors
	d.Received = s.Received - o.Received
	for i := range s.Rejected {
		d.Rejected[i] = s.Rejected[i] - o.Rejected[i]
	}
	return d
}

// Add adds the traffic of d (another process's, between two of its
// snapshots) to the counters: the coordinator of a run split across
// processes sums its workers' traffic so.
func (t *Traffic) Add(d TrafficSnapshot) {
	for i := range min(len(d.Count), len(t.msgs)) {
		t.msgs[i].Add(d.Count[i])
		t.bytes[i].Add(d.Bytes[i])
		t.entries[i].Add(d.Entries[i])
	}
	t.decodeErrors.Add(d.DecodeErrors)
	t.received.Add(d.Received)
}
