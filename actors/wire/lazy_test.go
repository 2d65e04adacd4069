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
	jp, _ := MarshalPayload(&Join{Joiner: 5, Point: []uint32{1, 2, 3}, Hops: 2})
	jb, _ := Encode(nil, Header{Type: MsgType_MSG_JOIN}, jp)
	f.Add(jb)
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x04, 0x32, 0x02, 0x12, 0x00})
	f.Add([]byte{0x08, 0x04, 0x32, 0x03, 0x12, 0x01, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
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
