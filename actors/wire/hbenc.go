package wire

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// appendHeartbeat appends the encoding of hb — byte for byte what
// proto.Marshal writes (TestAppendHeartbeatAgrees, FuzzAppendHeartbeat) —
// written field by field: every peer encodes one heartbeat per period with
// its whole neighbor list (002 §4.2.2), and protobuf's reflective encoder
// was a tenth of the deterministic driver's time (docs/BENCHMARKS.md). The
// load (jobs runs only) is written by hand too (appendLoad), unless it has
// Balloons, CE loads or unknown fields: those are encoded by proto. It reports false, appending
// nothing, for a heartbeat it leaves to proto.Marshal: one with unknown
// fields or a nil list entry (peers never build such messages).
func appendHeartbeat(buf []byte, hb *Heartbeat) ([]byte, bool) {
	if !plainHeartbeat(hb) {
		return buf, false
	}
	buf = slices.Grow(buf, sizeHeartbeat(hb))
	if hb.Self != nil {
		buf = appendNodeInfo(buf, 1, hb.Self)
	}
	for _, info := range hb.Neighbors {
		buf = appendNodeInfo(buf, 2, info)
	}
	if s := hb.LastSplit; s != nil {
		buf = protowire.AppendTag(buf, 3, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(sizeSplit(s)))
		buf = appendVarintField(buf, 1, uint64(s.Dim))
		buf = appendVarintField(buf, 2, s.At)
		buf = appendVarintField(buf, 3, protowire.EncodeBool(s.Upper))
		buf = appendVarintField(buf, 4, s.Sibling)
	}
	if hb.Load != nil && plainLoad(hb.Load) {
		buf = protowire.AppendTag(buf, 4, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(sizeLoad(hb.Load)))
		buf = appendLoad(buf, hb.Load)
	} else if hb.Load != nil {
		o := proto.MarshalOptions{Deterministic: true}
		buf = protowire.AppendTag(buf, 4, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(o.Size(hb.Load)))
		var err error
		if buf, err = o.MarshalAppend(buf, hb.Load); err != nil {
			return buf, false // cannot happen: Load has no required fields
		}
	}
	return buf, true
}

// sizeHeartbeat is the size of a plain heartbeat's encoding, but for a
// load proto encodes (whose size proto computes when it is encoded).
func sizeHeartbeat(hb *Heartbeat) int {
	n := 0
	if hb.Self != nil {
		n += sizeField(sizeNodeInfo(hb.Self))
	}
	for _, info := range hb.Neighbors {
		if info != nil {
			n += sizeField(sizeNodeInfo(info))
		}
	}
	if hb.LastSplit != nil {
		n += sizeField(sizeSplit(hb.LastSplit))
	}
	if hb.Load != nil && plainLoad(hb.Load) {
		n += sizeField(sizeLoad(hb.Load))
	}
	return n
}

// plainHeartbeat reports whether hb holds no unknown fields and no nil
// list entries, anywhere appendHeartbeat writes by hand.
func plainHeartbeat(hb *Heartbeat) bool {
	if len(hb.unknownFields) > 0 || hb.Self != nil && !plainInfo(hb.Self) || hb.LastSplit != nil && len(hb.LastSplit.unknownFields) > 0 {
		return false
	}
	for _, info := range hb.Neighbors {
		if info == nil || !plainInfo(info) {
			return false
		}
	}
	return true
}

func plainInfo(info *NodeInfo) bool {
	if len(info.unknownFields) > 0 || info.Zone != nil && len(info.Zone.unknownFields) > 0 {
		return false
	}
	for _, z := range info.Extra {
		if z == nil || len(z.unknownFields) > 0 {
			return false
		}
	}
	return true
}

func appendVarintField(buf []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return buf
	}
	buf = protowire.AppendTag(buf, num, protowire.VarintType)
	return protowire.AppendVarint(buf, v)
}

func sizeVarintField(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v) // field numbers 1–4: one-byte tags
}

func sizeSplit(s *Split) int {
	return sizeVarintField(uint64(s.Dim)) + sizeVarintField(s.At) + sizeVarintField(protowire.EncodeBool(s.Upper)) + sizeVarintField(s.Sibling)
}

// appendNodeInfo appends info as field num.
func appendNodeInfo(buf []byte, num protowire.Number, info *NodeInfo) []byte {
	buf = protowire.AppendTag(buf, num, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(sizeNodeInfo(info)))
	buf = appendVarintField(buf, 1, info.Id)
	if info.Zone != nil {
		buf = appendZone(buf, 2, info.Zone)
	}
	buf = appendVarintField(buf, 3, info.Version)
	for _, z := range info.Extra {
		buf = appendZone(buf, 4, z)
	}
	return buf
}

func sizeNodeInfo(info *NodeInfo) int {
	n := sizeVarintField(info.Id) + sizeVarintField(info.Version)
	if info.Zone != nil {
		n += sizeField(sizeZone(info.Zone))
	}
	for _, z := range info.Extra {
		n += sizeField(sizeZone(z))
	}
	return n
}

// sizeField is the size of a length-delimited field of n bytes (one-byte tag).
func sizeField(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// appendZone appends z as field num, its coordinates packed.
func appendZone(buf []byte, num protowire.Number, z *Zone) []byte {
	buf = protowire.AppendTag(buf, num, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(sizeZone(z)))
	buf = appendPacked(buf, 1, z.Lo)
	return appendPacked(buf, 2, z.Hi)
}

func sizeZone(z *Zone) int {
	n := 0
	if len(z.Lo) > 0 {
		n += sizeField(sizePacked(z.Lo))
	}
	if len(z.Hi) > 0 {
		n += sizeField(sizePacked(z.Hi))
	}
	return n
}

func appendPacked(buf []byte, num protowire.Number, vs []uint64) []byte {
	if len(vs) == 0 {
		return buf
	}
	buf = protowire.AppendTag(buf, num, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(sizePacked(vs)))
	for _, v := range vs {
		buf = protowire.AppendVarint(buf, v)
	}
	return buf
}

func sizePacked(vs []uint64) int {
	n := 0
	for _, v := range vs {
		n += protowire.SizeVarint(v)
	}
	return n
}
