package bus

import (
	"encoding/binary"
	"errors"
)

// A batch frame is the body of one NATS message that carries several
// logical messages to the addresses of one shard (bus.fanout: batched; see
// NATSBus.PublishBatch). It travels on the shard's subject with the token
// frameToken in place of an address, gb.<run>.<shard>.b, and reads
//
//	frameVersion                      1 byte
//	publisher                         uvarint: the publishing connection's random id
//	seq                               uvarint: this frame's number among the publisher's frames on the shard, from 1
//	before                            uvarint: messages in the publisher's earlier frames on the shard
//	count                             uvarint: messages in this frame, 1 to maxFrameEntries
//	count × (to uvarint, len uvarint, len bytes)
//
// seq and before let the receiver count, message by message, the frames
// it never saw (dropped by a slow consumer, lost in an outage): the gap
// between two frames of one publisher.
const (
	frameVersion = 1
	frameToken   = "b"
	// maxFrameEntries bounds count, so a corrupt frame cannot make the
	// receiver walk (or count) billions of entries.
	maxFrameEntries = 1 << 20
)

// frameHeader is a frame's header.
type frameHeader struct {
	publisher uint64
	seq       uint64
	before    uint64
	count     int
}

var errFrame = errors.New("bus: malformed batch frame")

// appendFrame appends the frame of h and the messages msgs[i] for i in idx
// to dst.
func appendFrame(dst []byte, h frameHeader, msgs []Message, idx []int) []byte {
	dst = append(dst, frameVersion)
	dst = binary.AppendUvarint(dst, h.publisher)
	dst = binary.AppendUvarint(dst, h.seq)
	dst = binary.AppendUvarint(dst, h.before)
	dst = binary.AppendUvarint(dst, uint64(len(idx)))
	for _, i := range idx {
		dst = binary.AppendUvarint(dst, uint64(msgs[i].To))
		dst = binary.AppendUvarint(dst, uint64(len(msgs[i].Data)))
		dst = append(dst, msgs[i].Data...)
	}
	return dst
}

// parseFrame checks a whole frame and returns its header and its entries'
// bytes (what follows the header). It never panics: anything malformed —
// a wrong version, a truncated or overlong field, a count that does not
// match the entries, trailing bytes — is errFrame.
func parseFrame(data []byte) (frameHeader, []byte, error) {
	var h frameHeader
	if len(data) == 0 || data[0] != frameVersion {
		return h, nil, errFrame
	}
	p := data[1:]
	var vals [4]uint64
	for i := range vals {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return h, nil, errFrame
		}
		vals[i], p = v, p[n:]
	}
	if vals[3] == 0 || vals[3] > maxFrameEntries {
		return h, nil, errFrame
	}
	h = frameHeader{publisher: vals[0], seq: vals[1], before: vals[2], count: int(vals[3])}
	body, rest := p, p
	for range h.count {
		var ok bool
		if _, _, rest, ok = nextEntry(rest); !ok {
			return h, nil, errFrame
		}
	}
	if len(rest) != 0 {
		return h, nil, errFrame
	}
	return h, body, nil
}

// nextEntry reads one entry of a frame's body: its address and bytes (a
// slice of body, capacity-limited so appending to it cannot overwrite the
// next entry).
func nextEntry(body []byte) (to Address, data, rest []byte, ok bool) {
	a, n := binary.Uvarint(body)
	if n <= 0 {
		return 0, nil, nil, false
	}
	body = body[n:]
	l, n := binary.Uvarint(body)
	if n <= 0 || l > uint64(len(body)-n) {
		return 0, nil, nil, false
	}
	body = body[n:]
	return Address(a), body[:l:l], body[l:], true
}
