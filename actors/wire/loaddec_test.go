package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"
)

// randomLoad is a load as job cores send one, with n dimensions and its
// optional parts chosen by r (no Balloons or CE loads).
func randomLoad(r *rand.Rand, n int) *Load {
	f := func() float32 {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(r.IntN(100))
		}
		return r.Float32() * 1e3
	}
	l := &Load{Queue: uint32(r.IntN(5)), Free: uint32(r.IntN(3)), Speed: f(), Cores: f(), Demand: f(),
		Waiting: uint32(r.IntN(3)), Nbc: uint32(r.IntN(2)), NormLoad: f(), NearWaiting: uint32(r.IntN(2)), Combo: uint32(r.IntN(3))}
	if r.IntN(4) > 0 {
		for range n {
			l.Point = append(l.Point, r.Uint32()>>uint(r.IntN(32)))
			l.Agg = append(l.Agg, &AggLoad{Nodes: f(), Queue: f(), Cores: f()})
		}
	}
	if r.IntN(2) == 0 {
		for range r.IntN(5) {
			l.Residual = append(l.Residual, f())
		}
	}
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(3) {
			l.Acid = append(l.Acid, r.Uint64()>>uint(r.IntN(64)))
		}
	}
	return l
}

// unmarshalLoad is what proto.Unmarshal makes of p.
func unmarshalLoad(t testing.TB, p []byte) *Load {
	t.Helper()
	l := &Load{}
	if err := proto.Unmarshal(p, l); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	return l
}

// sameLoad compares two loads field by field and by their deterministic
// encodings (which tell -0 from 0).
func sameLoad(t testing.TB, got, want *Load) bool {
	t.Helper()
	o := proto.MarshalOptions{Deterministic: true}
	a, err1 := o.Marshal(got)
	b, err2 := o.Marshal(want)
	if err1 != nil || err2 != nil {
		t.Fatalf("marshal: %v / %v", err1, err2)
	}
	return proto.Equal(got, want) && bytes.Equal(a, b) && (got.Point == nil) == (want.Point == nil) &&
		(got.Residual == nil) == (want.Residual == nil) && (got.Acid == nil) == (want.Acid == nil) && (got.Agg == nil) == (want.Agg == nil)
}

// Loads as job cores send them, with 1 to 9 dimensions, take the fast
// path and decode to what proto.Unmarshal gives.
func TestDecodeLoadAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		l := randomLoad(r, 1+i%9)
		p, err := proto.MarshalOptions{Deterministic: true}.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeLoad(p)
		if !ok {
			t.Fatalf("load %d: fast path refused %v", i, l)
		}
		if want := unmarshalLoad(t, p); !sameLoad(t, got, want) {
			t.Fatalf("load %d: decoded\n%v\nwant\n%v", i, got, want)
		}
	}
}

// Loads laid out otherwise — Balloons, CE loads, a field twice, unpacked
// coordinates, unknown fields, an aggregated load with a field twice — are
// left to proto.Unmarshal, and a heartbeat carrying one still decodes
// to what Decode gives.
func TestDecodeLoadRefuses(t *testing.T) {
	enc := func(l *Load) []byte {
		p, err := proto.MarshalOptions{Deterministic: true}.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := enc(&Load{Queue: 1, Point: []uint32{1, 2}})
	for name, p := range map[string][]byte{
		"balloons":      enc(&Load{Queue: 1, Balloons: []*Balloon{{Node: 3}}}),
		"ces":           enc(&Load{Ces: []*CELoad{{Queue: 1}}}),
		"queue twice":   append(append([]byte{}, base...), 0x08, 0x02),
		"point twice":   append(append([]byte{}, base...), 0x22, 0x01, 0x05),
		"unpacked":      {0x20, 0x07},
		"unknown":       {0x88, 0x01, 0x01}, // field 17
		"agg field x2":  {0x2a, 0x0a, 0x0d, 0, 0, 0x80, 0x3f, 0x0d, 0, 0, 0x80, 0x3f},
		"agg unknown":   {0x2a, 0x02, 0x20, 0x01},
		"float varint":  {0x18, 0x01},
		"short float":   {0x1d, 0x00, 0x00},
		"bad residual":  {0x42, 0x03, 1, 2, 3},
		"bad point":     {0x22, 0x01, 0x80},
		"truncated agg": {0x2a, 0x03, 0x0d, 0, 0},
	} {
		if _, ok := decodeLoad(p); ok {
			t.Errorf("%s: fast path accepted a load it must leave to proto.Unmarshal", name)
		}
		hb := append([]byte{0x0a, 0x02, 0x08, 0x05, 0x22, byte(len(p))}, p...) // Self{Id: 5}, Load
		b, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 5, To: 2}, hb)
		_, m1, err1 := Decode(b)
		_, m2, err2 := DecodeLazy(b)
		if (err1 == nil) != (err2 == nil) || err1 == nil && !proto.Equal(m1, eager(t, m2)) {
			t.Errorf("%s: Decode %v / DecodeLazy %v\n%v\n%v", name, err1, err2, m1, m2)
		}
	}
}

// FuzzDecodeLoad: on any input decodeLoad never panics, and what it
// accepts proto.Unmarshal accepts and decodes to the same load.
func FuzzDecodeLoad(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 8 {
		p, _ := proto.MarshalOptions{Deterministic: true}.Marshal(randomLoad(r, 1+i))
		f.Add(p)
	}
	f.Add([]byte{})
	f.Add([]byte{0x2a, 0x00})
	f.Fuzz(func(t *testing.T, p []byte) {
		got, ok := decodeLoad(p)
		if !ok {
			return
		}
		want := &Load{}
		if err := proto.Unmarshal(p, want); err != nil {
			t.Fatalf("decodeLoad accepted what proto.Unmarshal rejects: %v", err)
		}
		if !sameLoad(t, got, want) {
			t.Fatalf("decoded\n%v\nwant\n%v", got, want)
		}
	})
}

// typicalLoad is a load as a multi-core job run sends one: d = 4 +
// virtual, the node's point, every aggregated load, the residual
// resources.
func typicalLoad() *Load {
	l := &Load{Queue: 3, Free: 1, Speed: 1.5, Point: []uint32{1 << 30, 3 << 29, 1 << 20, 12345, 1 << 31},
		Cores: 4, Demand: 2.5, Residual: []float32{1.5, 2048, 10240}, Waiting: 1, Nbc: 2, NormLoad: 0.375}
	for i := range 5 {
		l.Agg = append(l.Agg, &AggLoad{Nodes: float32(10 + i), Queue: float32(3 * i), Cores: float32(40 + i)})
	}
	return l
}

// BenchmarkLoadCodec decodes and encodes a typical load (typicalLoad) by
// hand (decodeLoad, appendLoad) and with proto, as every heartbeat of a
// run with a workload needs once per receiver and once per sender.
func BenchmarkLoadCodec(b *testing.B) {
	l := typicalLoad()
	p, err := proto.MarshalOptions{Deterministic: true}.Marshal(l)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode=proto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := proto.Unmarshal(p, &Load{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode=hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodeLoad(p); !ok {
				b.Fatal("refused")
			}
		}
	})
	buf := make([]byte, 0, 256)
	b.Run("encode=proto", func(b *testing.B) {
		b.ReportAllocs()
		o := proto.MarshalOptions{Deterministic: true}
		for b.Loop() {
			buf, _ = o.MarshalAppend(buf[:0], l)
		}
	})
	b.Run("encode=hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = appendLoad(buf[:0], l)
		}
	})
}

// BenchmarkDecodeLazyLoadedHeartbeat decodes a heartbeat with a typical
// load, as peers of a run with a workload receive one per neighbor and
// period: d = 4 + virtual, 20 neighbors.
func BenchmarkDecodeLazyLoadedHeartbeat(b *testing.B) {
	hb := richHeartbeat()
	hb.Self.Extra = nil
	hb.Load = typicalLoad()
	for len(hb.Neighbors) < 20 {
		hb.Neighbors = append(hb.Neighbors, hb.Neighbors...)
	}
	hb.Neighbors = hb.Neighbors[:20]
	p, err := MarshalPayload(hb)
	if err != nil {
		b.Fatal(err)
	}
	data, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 7, To: 2, Seq: 9, SentAt: 1e9}, p)
	var dec Decoder
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := dec.DecodeLazy(data); err != nil {
			b.Fatal(err)
		}
	}
}
