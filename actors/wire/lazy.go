package wire

import (
	"fmt"
	"hash/maphash"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// LazyHeartbeat is a received Heartbeat whose neighbor list is left
// encoded until the receiver needs it (DecodeLazy): a vanilla heartbeat
// repeats the sender's whole list every period, and in a steady overlay
// the list is the one the receiver already processed, so decoding it again
// — most of the receiver's work per heartbeat (docs/BENCHMARKS.md) — would
// be wasted. The bytes on the wire are those of a Heartbeat; only the
// receiver's decoding differs.
type LazyHeartbeat struct {
	// Heartbeat has every field decoded but Neighbors (nil).
	*Heartbeat
	// List is the encoded neighbor list: the payload's neighbors field
	// records (field 2). It aliases the received bytes: copy it to keep it.
	List []byte
}

// listSeed keys ListDigest; digests are compared within one process only.
var listSeed = maphash.MakeSeed()

// ListDigest is a 64-bit digest of an encoded neighbor list: equal lists
// have equal digests, and different ones collide with probability 2⁻⁶⁴.
func ListDigest(list []byte) uint64 { return maphash.Bytes(listSeed, list) }

// Neighbors decodes the neighbor list.
func (h *LazyHeartbeat) Neighbors() ([]*NodeInfo, error) {
	if len(h.List) == 0 {
		return nil, nil
	}
	var hb Heartbeat
	if err := proto.Unmarshal(h.List, &hb); err != nil {
		return nil, fmt.Errorf("wire: bad heartbeat neighbor list: %w", err)
	}
	return hb.Neighbors, nil
}

// DecodeLazy is Decode, except that a heartbeat comes back as a
// *LazyHeartbeat (its neighbor list still encoded) and the envelope is
// parsed without copying its payload. It accepts and rejects exactly the
// inputs Decode does, except for neighbor lists, whose errors surface in
// LazyHeartbeat.Neighbors. It never panics.
func DecodeLazy(data []byte) (Header, proto.Message, error) { return decodeLazy(data, nil) }

// Decoder is DecodeLazy with a heartbeat of its own that it decodes into
// again and again instead of allocating one per message: a peer receives
// a heartbeat from every neighbor every period — most of its messages —
// and keeps none of it but the sender's load, allocated apart for it to
// keep, and a copy of the sender's split when it changed. The zero value
// is ready to use; a Decoder is not safe for concurrent use.
type Decoder struct {
	block heartbeatBlock
}

// DecodeLazy is the package's DecodeLazy, except that a heartbeat that
// takes the fast path (decodeHeartbeat) — its LazyHeartbeat, Heartbeat,
// the sender's NodeInfo, zone and split — is the decoder's, valid until
// its next call: copy what you keep beyond that but Load, which is the
// caller's. Any other message is the caller's, as from DecodeLazy.
func (d *Decoder) DecodeLazy(data []byte) (Header, proto.Message, error) {
	return decodeLazy(data, &d.block)
}

// decodeLazy is DecodeLazy decoding a fast-path heartbeat into block, or
// into a new one when block is nil.
func decodeLazy(data []byte, block *heartbeatBlock) (Header, proto.Message, error) {
	body, err := Open(data)
	if err != nil {
		return Header{}, nil, err
	}
	h, payload, err := parseEnvelope(body)
	if err != nil {
		return Header{}, nil, err
	}
	if h.Type != MsgType_MSG_HEARTBEAT {
		m, err := newPayload(h.Type)
		if err != nil {
			return h, nil, err
		}
		if err := proto.Unmarshal(payload, m); err != nil {
			return h, nil, fmt.Errorf("wire: bad %s payload: %w", Name(h.Type), err)
		}
		return h, m, nil
	}
	if lh, ok := decodeHeartbeat(payload, block); ok {
		return h, lh, nil
	}
	// The neighbors' records are usually one run (a marshaller writes
	// fields in order); the fields around it are decoded in place, merged
	// into one message. Records of field 2 scattered among others are
	// legal protobuf too: then the whole payload is decoded (no laziness).
	from, to, runs := -1, -1, 0
	for off := 0; off < len(payload); {
		num, typ, n := protowire.ConsumeTag(payload[off:])
		if n < 0 {
			return h, nil, fmt.Errorf("wire: bad heartbeat payload: %w", protowire.ParseError(n))
		}
		if !num.IsValid() {
			return h, nil, fmt.Errorf("wire: bad heartbeat payload: invalid field number %d", num)
		}
		m := protowire.ConsumeFieldValue(num, typ, payload[off+n:])
		if m < 0 {
			return h, nil, fmt.Errorf("wire: bad heartbeat payload: %w", protowire.ParseError(m))
		}
		if num == 2 && typ == protowire.BytesType {
			if to != off {
				runs++
				from = off
			}
			to = off + n + m
		}
		off += n + m
	}
	hb := &Heartbeat{}
	if runs > 1 {
		if err := proto.Unmarshal(payload, hb); err != nil {
			return h, nil, fmt.Errorf("wire: bad heartbeat payload: %w", err)
		}
		list, err := proto.Marshal(&Heartbeat{Neighbors: hb.Neighbors})
		if err != nil {
			return h, nil, err
		}
		hb.Neighbors = nil
		return h, &LazyHeartbeat{Heartbeat: hb, List: list}, nil
	}
	var list []byte
	rest := payload
	if runs == 1 {
		list = payload[from:to]
		if err := proto.Unmarshal(payload[:from], hb); err != nil {
			return h, nil, fmt.Errorf("wire: bad heartbeat payload: %w", err)
		}
		rest = payload[to:]
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(rest, hb); err != nil {
		return h, nil, fmt.Errorf("wire: bad heartbeat payload: %w", err)
	}
	return h, &LazyHeartbeat{Heartbeat: hb, List: list}, nil
}

// parseEnvelope walks an Envelope's fields (the last occurrence of a field
// wins, as in proto.Unmarshal) without copying the payload.
func parseEnvelope(data []byte) (Header, []byte, error) {
	var h Header
	var payload []byte
	bad := func(err error) (Header, []byte, error) {
		return Header{}, nil, fmt.Errorf("wire: bad envelope: %w", err)
	}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return bad(protowire.ParseError(n))
		}
		if !num.IsValid() {
			return bad(fmt.Errorf("invalid field number %d", num))
		}
		data = data[n:]
		switch {
		case num >= 1 && num <= 5 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return bad(protowire.ParseError(n))
			}
			data = data[n:]
			h.set(num, v)
		case num == 6 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return bad(protowire.ParseError(n))
			}
			payload, data = v, data[n:]
		default:
			// Unknown fields, and known ones with another wire type, are
			// skipped, as proto.Unmarshal does.
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return bad(protowire.ParseError(n))
			}
			data = data[n:]
		}
	}
	return h, payload, nil
}
