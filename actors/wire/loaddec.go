package wire

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// loadBlock holds a decoded Load in one allocation with, for the usual
// sizes, its aggregated loads (one per CAN dimension), its point and its
// residual resources. Receivers keep a neighbor's last load whole (the
// overlay's Neighbor.Load, the job core's estimates), so the parts live
// and die together.
type loadBlock struct {
	l     Load
	aggs  [loadInline]AggLoad
	ptrs  [loadInline]*AggLoad
	point [loadInline]uint32
	resid [3]float32
}

// loadInline is how many dimensions a loadBlock holds inline: the papers'
// d = 4 resources plus the virtual dimension. Larger loads allocate the
// rest apart.
const loadInline = 5

// decodeLoad is decodeHeartbeat's fast path for the Load a heartbeat
// carries (runs with a workload), laid out as proto.Marshal writes one:
// every singular field at most once, repeated scalars packed, once each,
// aggregated loads with each field at most once, no unknown fields, no
// Balloons or CE loads. It decodes such a load by hand — one per heartbeat
// a peer receives — into what proto.Unmarshal would give: proto's
// reflective decoder, with an allocation per aggregated load, was a tenth
// of a jobs run's time (docs/BENCHMARKS.md). It reports false for
// anything else, valid or not, and the caller decodes that with
// proto.Unmarshal (which also produces the errors).
func decodeLoad(p []byte) (*Load, bool) {
	b := &loadBlock{}
	l := &b.l
	var seen uint32 // bit i: field i was read
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 || num < 1 || num > 15 || num == 12 {
			return nil, false
		}
		bit := uint32(1) << num
		if num != 5 && seen&bit != 0 {
			return nil, false
		}
		seen |= bit
		p = p[n:]
		switch num {
		case 1, 2, 9, 10, 13, 14: // uint32
			if typ != protowire.VarintType {
				return nil, false
			}
			v, m := protowire.ConsumeVarint(p)
			if m < 0 {
				return nil, false
			}
			p = p[m:]
			switch num {
			case 1:
				l.Queue = uint32(v)
			case 2:
				l.Free = uint32(v)
			case 9:
				l.Waiting = uint32(v)
			case 10:
				l.Nbc = uint32(v)
			case 13:
				l.NearWaiting = uint32(v)
			case 14:
				l.Combo = uint32(v)
			}
		case 3, 6, 7, 11: // float
			if typ != protowire.Fixed32Type || len(p) < 4 {
				return nil, false
			}
			f := math.Float32frombits(binary.LittleEndian.Uint32(p))
			p = p[4:]
			switch num {
			case 3:
				l.Speed = f
			case 6:
				l.Cores = f
			case 7:
				l.Demand = f
			case 11:
				l.NormLoad = f
			}
		default: // length-delimited: 4 point, 5 agg, 8 residual, 15 acid
			if typ != protowire.BytesType {
				return nil, false
			}
			v, m := protowire.ConsumeBytes(p)
			if m < 0 {
				return nil, false
			}
			p = p[m:]
			var ok bool
			switch num {
			case 4:
				l.Point, ok = packedUint32(v, b.point[:0])
			case 5:
				ok = b.agg(v)
			case 8:
				l.Residual, ok = packedFloat32(v, b.resid[:0])
			case 15:
				l.Acid, ok = packedUint64(v)
			}
			if !ok {
				return nil, false
			}
		}
	}
	return l, true
}

// agg decodes one AggLoad record and appends it to the load's Agg.
func (b *loadBlock) agg(p []byte) bool {
	var a *AggLoad
	if i := len(b.l.Agg); i < loadInline {
		a = &b.aggs[i]
		if i == 0 {
			b.l.Agg = b.ptrs[:0]
		}
	} else {
		a = &AggLoad{}
	}
	var seen [4]bool
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 || num < 1 || num > 3 || seen[num] || typ != protowire.Fixed32Type || len(p) < n+4 {
			return false
		}
		seen[num] = true
		f := math.Float32frombits(binary.LittleEndian.Uint32(p[n:]))
		p = p[n+4:]
		switch num {
		case 1:
			a.Nodes = f
		case 2:
			a.Queue = f
		case 3:
			a.Cores = f
		}
	}
	b.l.Agg = append(b.l.Agg, a)
	return true
}

// packedUint32 decodes packed varints as uint32s (truncated, as proto
// does) into dst's array when they fit; nil for none, as proto leaves it.
func packedUint32(p []byte, dst []uint32) ([]uint32, bool) {
	n := varints(p)
	if n == 0 {
		return nil, len(p) == 0
	}
	if n > cap(dst) {
		dst = make([]uint32, 0, n)
	}
	for len(p) > 0 {
		v, m := protowire.ConsumeVarint(p)
		if m < 0 {
			return nil, false
		}
		p = p[m:]
		dst = append(dst, uint32(v))
	}
	return dst, true
}

// packedUint64 decodes packed varints; nil for none.
func packedUint64(p []byte) ([]uint64, bool) {
	n := varints(p)
	if n == 0 {
		return nil, len(p) == 0
	}
	dst := make([]uint64, 0, n)
	for len(p) > 0 {
		v, m := protowire.ConsumeVarint(p)
		if m < 0 {
			return nil, false
		}
		p = p[m:]
		dst = append(dst, v)
	}
	return dst, true
}

// packedFloat32 decodes packed fixed32 floats into dst's array when they
// fit; nil for none.
func packedFloat32(p []byte, dst []float32) ([]float32, bool) {
	if len(p)%4 != 0 {
		return nil, false
	}
	n := len(p) / 4
	if n == 0 {
		return nil, true
	}
	if n > cap(dst) {
		dst = make([]float32, 0, n)
	}
	for ; len(p) > 0; p = p[4:] {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(p)))
	}
	return dst, true
}

// varints counts the varints in p: its bytes without the continuation bit.
func varints(p []byte) int {
	n := 0
	for _, c := range p {
		if c < 0x80 {
			n++
		}
	}
	return n
}
