package wire

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// plainLoad reports whether appendLoad writes l by hand: no unknown
// fields (in l or its aggregated loads), no nil aggregated load, no
// Balloons or CE loads (those go to proto, as before).
func plainLoad(l *Load) bool {
	if len(l.unknownFields) > 0 || len(l.Balloons) > 0 || len(l.Ces) > 0 {
		return false
	}
	for _, a := range l.Agg {
		if a == nil || len(a.unknownFields) > 0 {
			return false
		}
	}
	return true
}

// appendLoad appends the encoding of a plain load (plainLoad) — byte for
// byte what proto.Marshal writes (TestAppendLoadAgrees, FuzzAppendLoad):
// fields in number order, zero scalars left out (a negative zero float
// is written), repeated scalars packed. Every heartbeat of a run with a
// workload carries a load, and proto's reflective encoder was most of a
// jobs run's encoding time (docs/BENCHMARKS.md).
func appendLoad(buf []byte, l *Load) []byte {
	buf = appendVarintField(buf, 1, uint64(l.Queue))
	buf = appendVarintField(buf, 2, uint64(l.Free))
	buf = appendFloatField(buf, 3, l.Speed)
	if len(l.Point) > 0 {
		buf = protowire.AppendTag(buf, 4, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(sizePacked32(l.Point)))
		for _, v := range l.Point {
			buf = protowire.AppendVarint(buf, uint64(v))
		}
	}
	for _, a := range l.Agg {
		buf = protowire.AppendTag(buf, 5, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(sizeAgg(a)))
		buf = appendFloatField(buf, 1, a.Nodes)
		buf = appendFloatField(buf, 2, a.Queue)
		buf = appendFloatField(buf, 3, a.Cores)
	}
	buf = appendFloatField(buf, 6, l.Cores)
	buf = appendFloatField(buf, 7, l.Demand)
	if len(l.Residual) > 0 {
		buf = protowire.AppendTag(buf, 8, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(4*len(l.Residual)))
		for _, f := range l.Residual {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
		}
	}
	buf = appendVarintField(buf, 9, uint64(l.Waiting))
	buf = appendVarintField(buf, 10, uint64(l.Nbc))
	buf = appendFloatField(buf, 11, l.NormLoad)
	buf = appendVarintField(buf, 13, uint64(l.NearWaiting))
	buf = appendVarintField(buf, 14, uint64(l.Combo))
	if len(l.Acid) > 0 {
		buf = protowire.AppendTag(buf, 15, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(sizePacked(l.Acid)))
		for _, v := range l.Acid {
			buf = protowire.AppendVarint(buf, v)
		}
	}
	return buf
}

// sizeLoad is the size of appendLoad's encoding of l.
func sizeLoad(l *Load) int {
	n := sizeVarintField(uint64(l.Queue)) + sizeVarintField(uint64(l.Free)) + sizeFloatField(l.Speed)
	if len(l.Point) > 0 {
		n += sizeField(sizePacked32(l.Point))
	}
	for _, a := range l.Agg {
		n += sizeField(sizeAgg(a))
	}
	n += sizeFloatField(l.Cores) + sizeFloatField(l.Demand)
	if len(l.Residual) > 0 {
		n += sizeField(4 * len(l.Residual))
	}
	n += sizeVarintField(uint64(l.Waiting)) + sizeVarintField(uint64(l.Nbc)) + sizeFloatField(l.NormLoad)
	n += sizeVarintField(uint64(l.NearWaiting)) + sizeVarintField(uint64(l.Combo))
	if len(l.Acid) > 0 {
		n += sizeField(sizePacked(l.Acid))
	}
	return n
}

func sizeAgg(a *AggLoad) int {
	return sizeFloatField(a.Nodes) + sizeFloatField(a.Queue) + sizeFloatField(a.Cores)
}

// appendFloatField appends a proto3 float field: left out when it is
// (positive) zero, as proto does.
func appendFloatField(buf []byte, num protowire.Number, f float32) []byte {
	if math.Float32bits(f) == 0 {
		return buf
	}
	buf = protowire.AppendTag(buf, num, protowire.Fixed32Type)
	return binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
}

func sizeFloatField(f float32) int {
	if math.Float32bits(f) == 0 {
		return 0
	}
	return 5 // field numbers 1–15: one-byte tags
}

func sizePacked32(vs []uint32) int {
	n := 0
	for _, v := range vs {
		n += protowire.SizeVarint(uint64(v))
	}
	return n
}
