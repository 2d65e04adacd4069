package wire

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// heartbeatBlock holds a received heartbeat's decoded parts in one
// allocation: the message, the sender's NodeInfo, its zone, (up to 8
// dimensions) the zone's coordinates and its split. The load is
// allocated apart: receivers keep it (a neighbor's last load) and should
// not keep the rest alive with it; a receiver keeps a copy of the split
// when it changed (overlay.keepSplit), which a Decoder's reuse of the
// block requires.
type heartbeatBlock struct {
	lazy   LazyHeartbeat
	hb     Heartbeat
	self   NodeInfo
	zone   Zone
	coords [16]uint64
	split  Split
}

// decodeHeartbeat is DecodeLazy's fast path for a heartbeat payload laid
// out as MarshalPayload writes one (002 §4.2.2's periodic neighbor update:
// the sender's NodeInfo, its neighbor list, its last split, its load): each
// field once, the list's records in one run, packed coordinates, no unknown
// fields. It decodes such a payload by hand — every heartbeat a peer
// receives, the bulk of the messages on the bus — into what proto.Unmarshal
// would give, with one allocation (the block; none into a Decoder's) and
// the load's instead of eight. It reports false for
// anything else, valid or not, and the caller decodes that the general way
// (which also produces the errors). It decodes into b (cleared first), or
// a new block when b is nil (Decoder reuses one).
func decodeHeartbeat(p []byte, b *heartbeatBlock) (*LazyHeartbeat, bool) {
	if b == nil {
		b = &heartbeatBlock{}
	} else {
		*b = heartbeatBlock{}
	}
	b.lazy.Heartbeat = &b.hb
	from, to := -1, -1 // the list's run
	for off := 0; off < len(p); {
		num, typ, n := protowire.ConsumeTag(p[off:])
		if n < 0 || typ != protowire.BytesType {
			return nil, false
		}
		v, m := protowire.ConsumeBytes(p[off+n:])
		if m < 0 {
			return nil, false
		}
		switch {
		case num == 1 && b.hb.Self == nil:
			if !b.nodeInfo(v) {
				return nil, false
			}
			b.hb.Self = &b.self
		case num == 2 && (from < 0 || to == off):
			if from < 0 {
				from = off
			}
			// The records that follow, skipped at once: the list is most
			// of the payload, and the receiver only wants its extent.
			if to = listEnd(p, off+n+m); to < 0 {
				return nil, false
			}
			off = to
			continue
		case num == 3 && b.hb.LastSplit == nil:
			if !split(v, &b.split) {
				return nil, false
			}
			b.hb.LastSplit = &b.split
		case num == 4 && b.hb.Load == nil:
			l, ok := decodeLoad(v)
			if !ok {
				l = &Load{}
				if proto.Unmarshal(v, l) != nil {
					return nil, false
				}
			}
			b.hb.Load = l
		default:
			return nil, false
		}
		off += n + m
	}
	if from >= 0 {
		b.lazy.List = p[from:to]
	}
	return &b.lazy, true
}

// listEnd is where the run of neighbor records (field 2, one-byte tag
// 0x12) starting at off ends, or -1 if one of them is truncated: what
// decodeHeartbeat's loop finds record by record, without its generic
// tag and length decoding.
func listEnd(p []byte, off int) int {
	for off < len(p) && p[off] == 0x12 {
		off++
		var n uint64
		if off < len(p) && p[off] < 0x80 {
			n = uint64(p[off])
			off++
		} else {
			v, m := protowire.ConsumeVarint(p[off:])
			if m < 0 {
				return -1
			}
			n, off = v, off+m
		}
		if n > uint64(len(p)-off) {
			return -1
		}
		off += int(n)
	}
	return off
}

// nodeInfo decodes the sender's NodeInfo into the block.
func (b *heartbeatBlock) nodeInfo(p []byte) bool {
	var seen [5]bool
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 || num < 1 || num > 4 || seen[num] && num != 4 {
			return false
		}
		seen[num] = true
		p = p[n:]
		switch {
		case (num == 1 || num == 3) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				return false
			}
			p = p[n:]
			if num == 1 {
				b.self.Id = v
			} else {
				b.self.Version = v
			}
		case (num == 2 || num == 4) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(p)
			if n < 0 {
				return false
			}
			p = p[n:]
			if num == 2 {
				b.zone.Lo, b.zone.Hi = b.coords[:0:8], b.coords[8:8:16]
				if !packedZone(v, &b.zone) {
					return false
				}
				b.self.Zone = &b.zone
				continue
			}
			z := &Zone{}
			if !packedZone(v, z) {
				return false
			}
			b.self.Extra = append(b.self.Extra, z)
		default:
			return false
		}
	}
	return true
}

// packedZone decodes a Zone record whose coordinates are packed, each
// field at most once, appending to z's slices; false for anything else.
func packedZone(p []byte, z *Zone) bool {
	var seen [3]bool
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 || num < 1 || num > 2 || seen[num] || typ != protowire.BytesType {
			return false
		}
		seen[num] = true
		packed, m := protowire.ConsumeBytes(p[n:])
		if m < 0 {
			return false
		}
		p = p[n+m:]
		dst := &z.Lo
		if num == 2 {
			dst = &z.Hi
		}
		for len(packed) > 0 {
			v, n := protowire.ConsumeVarint(packed)
			if n < 0 {
				return false
			}
			packed = packed[n:]
			*dst = append(*dst, v)
		}
	}
	if !seen[1] {
		z.Lo = nil // as proto.Unmarshal leaves an absent field
	}
	if !seen[2] {
		z.Hi = nil
	}
	return true
}

// split decodes a Split record, each field at most once; false for
// anything else.
func split(p []byte, s *Split) bool {
	var seen [5]bool
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 || num < 1 || num > 4 || seen[num] || typ != protowire.VarintType {
			return false
		}
		seen[num] = true
		v, m := protowire.ConsumeVarint(p[n:])
		if m < 0 {
			return false
		}
		p = p[n+m:]
		switch num {
		case 1:
			s.Dim = uint32(v)
		case 2:
			s.At = v
		case 3:
			s.Upper = protowire.DecodeBool(v)
		case 4:
			s.Sibling = v
		}
	}
	return true
}
