package wire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ListDecoder decodes encoded neighbor lists (LazyHeartbeat.List) into
// NodeInfo values it reuses from one call to the next: a receiver that
// only reads the entries — merging them into its neighbor table, copying
// what it keeps — decodes a list without allocating once its buffers have
// grown to the longest list it has seen. While the overlay's tables change
// (joins, churn), every heartbeat's list must be processed, and decoding
// it with proto.Unmarshal — five allocations per entry, ~32 entries at
// d=4 — was most of a receiver's work and of the garbage collector's
// (docs/BENCHMARKS.md). The zero value is ready to use; a decoder
// is not safe for concurrent use.
type ListDecoder struct {
	infos []*NodeInfo // reused entries, grown as needed
	zones []*Zone     // reused zones for the entries' zone and extras
	used  int         // zones handed out by the current Decode
	out   []*NodeInfo
}

// errList marks a malformed list; Decode wraps it as LazyHeartbeat.Neighbors does.
var errList = errors.New("cannot parse invalid wire-format data")

// Decode decodes list as LazyHeartbeat.Neighbors does — the same entries,
// the same values, an error for exactly the same inputs — except that the
// entries and their zones belong to the decoder and are overwritten by its
// next call: copy what you keep. Repeated uint64 fields are accepted packed
// and unpacked, a zone field given twice is merged, unknown fields are
// skipped, as proto.Unmarshal does. A list with records of other Heartbeat
// fields (DecodeLazy never makes one) is decoded by proto.Unmarshal.
func (d *ListDecoder) Decode(list []byte) ([]*NodeInfo, error) {
	d.out, d.used = d.out[:0], 0
	for off := 0; off < len(list); {
		num, typ, n := protowire.ConsumeTag(list[off:])
		if n < 0 || !num.IsValid() {
			return nil, d.fail()
		}
		off += n
		if num != 2 || typ != protowire.BytesType {
			return (&LazyHeartbeat{List: list}).Neighbors()
		}
		v, m := protowire.ConsumeBytes(list[off:])
		if m < 0 {
			return nil, d.fail()
		}
		off += m
		info := d.entry()
		if !d.nodeInfo(v, info) {
			return nil, d.fail()
		}
		d.out = append(d.out, info)
	}
	return d.out, nil
}

func (d *ListDecoder) fail() error {
	d.out = d.out[:0]
	return fmt.Errorf("wire: bad heartbeat neighbor list: %w", errList)
}

// entry hands out the next reused NodeInfo, cleared.
func (d *ListDecoder) entry() *NodeInfo {
	i := len(d.out)
	if i == len(d.infos) {
		d.infos = append(d.infos, &NodeInfo{})
	}
	info := d.infos[i]
	info.Id, info.Zone, info.Version, info.Extra = 0, nil, 0, info.Extra[:0]
	return info
}

// zone hands out the next reused Zone, emptied.
func (d *ListDecoder) zone() *Zone {
	if d.used == len(d.zones) {
		d.zones = append(d.zones, &Zone{})
	}
	z := d.zones[d.used]
	d.used++
	z.Lo, z.Hi = z.Lo[:0], z.Hi[:0]
	return z
}

// nodeInfo decodes one NodeInfo record into info.
func (d *ListDecoder) nodeInfo(b []byte, info *NodeInfo) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return false
		}
		b = b[n:]
		switch {
		case (num == 1 || num == 3) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			if num == 1 {
				info.Id = v
			} else {
				info.Version = v
			}
		case (num == 2 || num == 4) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			var z *Zone
			switch {
			case num == 4:
				z = d.zone()
				info.Extra = append(info.Extra, z)
			case info.Zone == nil:
				z = d.zone()
				info.Zone = z
			default:
				z = info.Zone // a second zone record merges into the first
			}
			if !zoneRecord(v, z) {
				return false
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return false
			}
			b = b[n:]
		}
	}
	return true
}

// zoneRecord decodes one Zone record, appending to z's coordinates.
func zoneRecord(b []byte, z *Zone) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return false
		}
		b = b[n:]
		if num != 1 && num != 2 || typ != protowire.VarintType && typ != protowire.BytesType {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		dst := &z.Lo
		if num == 2 {
			dst = &z.Hi
		}
		if typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			*dst = append(*dst, v)
			continue
		}
		packed, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		for len(packed) > 0 {
			v, n := protowire.ConsumeVarint(packed)
			if n < 0 {
				return false
			}
			packed = packed[n:]
			*dst = append(*dst, v)
		}
	}
	return true
}

// CloneNodeInfo copies a NodeInfo, for keeping an entry of a ListDecoder.
func CloneNodeInfo(info *NodeInfo) *NodeInfo { return proto.Clone(info).(*NodeInfo) }
