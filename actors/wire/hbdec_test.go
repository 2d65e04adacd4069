package wire

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// richHeartbeat has every Heartbeat field set, extras and a load included,
// with 9 dimensions (more coordinates than the block holds inline).
func richHeartbeat() *Heartbeat {
	lo := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8}
	hi := []uint64{10, 11, 12, 13, 14, 15, 16, 17, 1 << 40}
	return &Heartbeat{
		Self: &NodeInfo{Id: 7, Zone: &Zone{Lo: lo[:5], Hi: hi[:5]}, Version: 3,
			Extra: []*Zone{{Lo: lo, Hi: hi}, {Lo: lo[:2], Hi: hi[:2]}}},
		Neighbors: sampleHeartbeat().Neighbors,
		LastSplit: &Split{Dim: 4, At: 1 << 33, Upper: true, Sibling: 12},
		Load: &Load{Queue: 3, Free: 1, Speed: 1.5, Point: []uint32{1, 2}, Cores: 4, Residual: []float32{0.5},
			Agg: []*AggLoad{{}}, Waiting: 2, Nbc: 5, NormLoad: 0.25, Combo: 3, Acid: []uint64{0x5, 1 << 63}},
	}
}

// TestDecodeHeartbeatFastPath: heartbeats as peers send them — full,
// compact (no zone), with a split, a load, extras, 9 dimensions — take the
// hand-written path and decode to what proto.Unmarshal gives; payloads
// laid out otherwise (a field twice, scattered list records, unpacked
// coordinates, unknown fields) are left to the general path.
func TestDecodeHeartbeatFastPath(t *testing.T) {
	nine := richHeartbeat()
	nine.Self.Zone = nine.Self.Extra[0]
	for name, hb := range map[string]*Heartbeat{
		"sample":  sampleHeartbeat(),
		"rich":    richHeartbeat(),
		"nine":    nine,
		"compact": {Self: &NodeInfo{Id: 1, Version: 2}, LastSplit: &Split{Dim: 1}},
		"empty":   {},
	} {
		p, err := MarshalPayload(hb)
		if err != nil {
			t.Fatal(err)
		}
		lh, ok := decodeHeartbeat(p, nil)
		if !ok {
			t.Errorf("%s: fast path refused a heartbeat as peers write it", name)
			continue
		}
		list, err := lh.Neighbors()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := proto.Clone(lh.Heartbeat).(*Heartbeat)
		got.Neighbors = list
		want := &Heartbeat{}
		if err := proto.Unmarshal(p, want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: fast path decoded\n%v\nwant\n%v", name, got, want)
		}
	}
	p, _ := MarshalPayload(richHeartbeat())
	self, _ := proto.Marshal(&Heartbeat{Self: &NodeInfo{Id: 8}})
	list, _ := proto.Marshal(&Heartbeat{Neighbors: sampleHeartbeat().Neighbors})
	unpacked := []byte{0x0a, 0x06, 0x12, 0x04, 0x08, 0x01, 0x10, 0x02} // Self{Zone{lo: 1, hi: 2}} unpacked
	unknown := []byte{0x0a, 0x02, 0x28, 0x01}                          // Self{field 5: 1}
	for name, q := range map[string][]byte{
		"self twice": append(append([]byte{}, p...), self...),
		"scattered":  append(append(append([]byte{}, list...), self...), list...),
		"unpacked":   unpacked,
		"unknown":    unknown,
	} {
		if _, ok := decodeHeartbeat(q, nil); ok {
			t.Errorf("%s: fast path accepted a payload it must leave to proto.Unmarshal", name)
		}
		b, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 1, To: 2}, q)
		_, m1, err1 := Decode(b)
		_, m2, err2 := DecodeLazy(b)
		if err1 != nil || err2 != nil || !proto.Equal(m1, eager(t, m2)) {
			t.Errorf("%s: general path: %v / %v\n%v\n%v", name, err1, err2, m1, m2)
		}
	}
}
