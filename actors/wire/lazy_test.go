package wire

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// eager turns DecodeLazy's answer into what Decode returns.
func eager(t *testing.T, m proto.Message) proto.Message {
	t.Helper()
	lh, ok := m.(*LazyHeartbeat)
	if !ok {
		return m
	}
	list, err := lh.Neighbors()
	if err != nil {
		t.Fatalf("neighbors: %v", err)
	}
	hb := proto.Clone(lh.Heartbeat).(*Heartbeat)
	hb.Neighbors = list
	return hb
}

// TestDecodeLazyAgrees: DecodeLazy gives the header and message Decode
// gives, with heartbeats' lists decoded on demand, including lists whose
// records are scattered among the other fields and heartbeats without a
// list; equal lists have equal digests.
func TestDecodeLazyAgrees(t *testing.T) {
	hb := sampleHeartbeat()
	p, _ := MarshalPayload(hb)
	// The same heartbeat with its fields in another order: Self, one
	// neighbor, LastSplit, the other neighbors.
	var scattered []byte
	for off := 0; off < len(p); {
		num, typ, n := protowire.ConsumeTag(p[off:])
		m := protowire.ConsumeFieldValue(num, typ, p[off+n:])
		scattered = append(scattered, p[off:off+n+m]...)
		off += n + m
	}
	self, _ := proto.Marshal(&Heartbeat{Self: hb.Self})
	first, _ := proto.Marshal(&Heartbeat{Neighbors: hb.Neighbors[:1]})
	split, _ := proto.Marshal(&Heartbeat{LastSplit: &Split{Dim: 1, At: 7}})
	rest, _ := proto.Marshal(&Heartbeat{Neighbors: hb.Neighbors[1:]})
	scattered = append(append(append(append(self, first...), split...), rest...), scattered[:0]...)
	short, _ := MarshalPayload(&Heartbeat{Self: &NodeInfo{Id: 1, Version: 2}})
	join, _ := MarshalPayload(&Join{Joiner: 5, Point: []uint32{1, 2, 3}, Hops: 2})
	for name, tc := range map[string]struct {
		typ     MsgType
		payload []byte
	}{
		"heartbeat": {MsgType_MSG_HEARTBEAT, p}, "scattered": {MsgType_MSG_HEARTBEAT, scattered},
		"short": {MsgType_MSG_HEARTBEAT, short}, "join": {MsgType_MSG_JOIN, join},
	} {
		b, _ := Encode(nil, Header{Type: tc.typ, From: 1, To: 2, Seq: 3, SentAt: -4}, tc.payload)
		h1, m1, err1 := Decode(b)
		h2, m2, err2 := DecodeLazy(b)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v / %v", name, err1, err2)
		}
		if h1 != h2 || !proto.Equal(m1, eager(t, m2)) {
			t.Errorf("%s: lazy decoding differs:\n%v %v\n%v %v", name, h1, m1, h2, eager(t, m2))
		}
	}
	a, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 1, To: 2}, p)
	b, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 1, To: 3, Seq: 9}, p)
	_, ma, _ := DecodeLazy(a)
	_, mb, _ := DecodeLazy(b)
	la, lb := ma.(*LazyHeartbeat).List, mb.(*LazyHeartbeat).List
	if len(la) == 0 || ListDigest(la) != ListDigest(lb) {
		t.Errorf("the same list to two receivers: digests %x, %x", ListDigest(la), ListDigest(lb))
	}
	if ListDigest(la) == ListDigest(la[:len(la)-1]) {
		t.Error("different lists, equal digests")
	}
}

// FuzzDecodeLazy: on any input DecodeLazy never panics and agrees with
// Decode — both reject it, or both accept it with the same header and
// message — except that a malformed neighbor list is reported by
// Neighbors instead.
func FuzzDecodeLazy(f *testing.F) {
	p, _ := MarshalPayload(sampleHeartbeat())
	b, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 1, To: 2, Seq: 3, SentAt: 4}, p)
	f.Add(b)
	rp, _ := MarshalPayload(richHeartbeat())
	rb, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 7, To: 2}, rp)
	f.Add(rb)
	jp, _ := MarshalPayload(&Join{Joiner: 5, Point: []uint32{1, 2, 3}, Hops: 2})
	jb, _ := Encode(nil, Header{Type: MsgType_MSG_JOIN}, jp)
	f.Add(jb)
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x04, 0x32, 0x02, 0x12, 0x00})
	f.Add([]byte{0x08, 0x04, 0x32, 0x03, 0x12, 0x01, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, _, err := DecodeLazy(data); err == nil {
			if _, _, err := Decode(data); err != nil {
				t.Fatalf("DecodeLazy accepted what Decode rejects: %v", err)
			}
		}
		// The same bytes behind a valid frame check reach the parsers.
		data = Seal(append([]byte(nil), data...))
		h1, m1, err1 := Decode(data)
		h2, m2, err2 := DecodeLazy(data)
		if lh, ok := m2.(*LazyHeartbeat); ok && err2 == nil {
			list, err := lh.Neighbors()
			if err != nil {
				if err1 == nil {
					t.Fatalf("Decode accepted a list Neighbors rejects: %v", err)
				}
				return
			}
			hb := proto.Clone(lh.Heartbeat).(*Heartbeat)
			hb.Neighbors = list
			m2 = hb
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Decode: %v, DecodeLazy: %v", err1, err2)
		}
		if err1 == nil && (h1 != h2 || !proto.Equal(m1, m2)) {
			t.Fatalf("decodings differ:\n%v %v\n%v %v", h1, m1, h2, m2)
		}
	})
}

// sameInfos compares decoded lists by value (a reused empty slice and a
// nil one are the same list).
func sameInfos(a, b []*NodeInfo) bool {
	if len(a) != len(b) {
		return false
	}
	zoneEq := func(x, y *Zone) bool {
		if (x == nil) != (y == nil) {
			return false
		}
		return x == nil || slicesEqual(x.Lo, y.Lo) && slicesEqual(x.Hi, y.Hi)
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Id != y.Id || x.Version != y.Version || !zoneEq(x.Zone, y.Zone) || len(x.Extra) != len(y.Extra) {
			return false
		}
		for j := range x.Extra {
			if !zoneEq(x.Extra[j], y.Extra[j]) {
				return false
			}
		}
	}
	return true
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestListDecoderAgrees: ListDecoder decodes a heartbeat's list as
// LazyHeartbeat.Neighbors does, including entries with extra zones, an
// unpacked and a split zone record, and reuses its entries: the second
// list decoded by the same decoder is right too, and allocates nothing.
func TestListDecoderAgrees(t *testing.T) {
	hb := sampleHeartbeat()
	hb.Neighbors[0].Extra = []*Zone{{Lo: []uint64{1, 2}, Hi: []uint64{3, 4}}}
	list, _ := proto.Marshal(&Heartbeat{Neighbors: hb.Neighbors})
	// One entry by hand: id, the zone's lo unpacked in one record, its hi
	// in a second zone record (merged), a version and an unknown field.
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.VarintType)
	e = protowire.AppendVarint(e, 9)
	var lo []byte
	for _, v := range []uint64{5, 6} {
		lo = protowire.AppendTag(lo, 1, protowire.VarintType)
		lo = protowire.AppendVarint(lo, v)
	}
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendBytes(e, lo)
	hi, _ := proto.Marshal(&Zone{Hi: []uint64{7, 8}})
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendBytes(e, hi)
	e = protowire.AppendTag(e, 3, protowire.VarintType)
	e = protowire.AppendVarint(e, 4)
	e = protowire.AppendTag(e, 99, protowire.Fixed32Type)
	e = protowire.AppendFixed32(e, 1)
	odd := protowire.AppendTag(nil, 2, protowire.BytesType)
	odd = protowire.AppendBytes(odd, e)
	var d ListDecoder
	for _, l := range [][]byte{list, odd, list} {
		want, err := (&LazyHeartbeat{List: l}).Neighbors()
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Decode(l)
		if err != nil || !sameInfos(got, want) {
			t.Fatalf("Decode: %v\n got %v\nwant %v", err, got, want)
		}
	}
	if got, _ := d.Decode(odd); got[0].Zone.Lo[1] != 6 || got[0].Zone.Hi[1] != 8 {
		t.Fatalf("merged zone: %v", got[0].Zone)
	}
	if a := testing.AllocsPerRun(100, func() { d.Decode(list) }); a != 0 {
		t.Errorf("Decode allocates %v times per list once warm, want 0", a)
	}
}

// FuzzListDecoder: ListDecoder accepts and rejects exactly the lists
// LazyHeartbeat.Neighbors does and decodes them to the same values, also
// when the decoder was used before (its reused buffers hold old entries).
func FuzzListDecoder(f *testing.F) {
	hb := sampleHeartbeat()
	hb.Neighbors = append(hb.Neighbors, &NodeInfo{Id: 4, Extra: []*Zone{{Lo: []uint64{1}, Hi: []uint64{3}}}})
	list, _ := proto.Marshal(&Heartbeat{Neighbors: hb.Neighbors})
	f.Add(list)
	f.Add([]byte{})
	f.Add([]byte{0x12, 0x04, 0x08, 0x01, 0x12, 0x00})
	f.Add([]byte{0x12, 0x05, 0x12, 0x03, 0x08, 0xff, 0x01})
	f.Add([]byte{0x0a, 0x00})
	var d ListDecoder
	f.Fuzz(func(t *testing.T, data []byte) {
		d.Decode(list) // leave old entries in the buffers
		want, err1 := (&LazyHeartbeat{List: data}).Neighbors()
		got, err2 := d.Decode(data)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Neighbors: %v, ListDecoder: %v", err1, err2)
		}
		if err1 == nil && !sameInfos(got, want) {
			t.Fatalf("decodings differ:\n got %v\nwant %v", got, want)
		}
	})
}
