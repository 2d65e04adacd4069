package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"
)

// randomHeartbeat builds a heartbeat with every field drawn from r: ids,
// versions and coordinates over the whole varint range (0 included, so
// fields are absent too), extras, a split, a load or not.
func randomHeartbeat(r *rand.Rand) *Heartbeat {
	u := func() uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Uint64N(200)
		default:
			return r.Uint64() >> r.IntN(64)
		}
	}
	zone := func() *Zone {
		if r.IntN(8) == 0 {
			return nil
		}
		z := &Zone{}
		for range r.IntN(6) {
			z.Lo, z.Hi = append(z.Lo, u()), append(z.Hi, u())
		}
		return z
	}
	info := func() *NodeInfo {
		n := &NodeInfo{Id: u(), Zone: zone(), Version: u()}
		for range r.IntN(3) {
			if z := zone(); z != nil {
				n.Extra = append(n.Extra, z)
			}
		}
		return n
	}
	hb := &Heartbeat{}
	if r.IntN(8) > 0 {
		hb.Self = info()
	}
	for range r.IntN(40) {
		hb.Neighbors = append(hb.Neighbors, info())
	}
	if r.IntN(2) == 0 {
		hb.LastSplit = &Split{Dim: uint32(u()), At: u(), Upper: r.IntN(2) == 0, Sibling: u()}
	}
	if r.IntN(3) == 0 {
		hb.Load = &Load{Queue: uint32(u()), Speed: r.Float32(), Point: []uint32{uint32(u())}, Agg: []*AggLoad{{Nodes: 2}}, Combo: uint32(u()), Acid: []uint64{u(), u()}}
	}
	return hb
}

// TestAppendHeartbeatAgrees: MarshalPayload's hand-written heartbeat
// encoding is byte for byte proto.Marshal's, on random heartbeats.
func TestAppendHeartbeatAgrees(t *testing.T) {
	t.Parallel()
	const seed = 42
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range 2000 {
		hb := randomHeartbeat(r)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(hb)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendHeartbeat(nil, hb)
		if !ok {
			t.Fatalf("seed %d, heartbeat %d: refused", seed, i)
		}
		if hb.Load == nil && sizeHeartbeat(hb) != len(want) {
			t.Fatalf("seed %d, heartbeat %d: sizeHeartbeat %d, encoding has %d bytes", seed, i, sizeHeartbeat(hb), len(want))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d, heartbeat %d: encodings differ\n got %x\nwant %x\n%v", seed, i, got, want, hb)
		}
	}
}

// TestAppendHeartbeatLeavesOddMessagesToProto: unknown fields and nil
// entries go to proto.Marshal (MarshalPayload still encodes them).
func TestAppendHeartbeatLeavesOddMessagesToProto(t *testing.T) {
	withUnknown := sampleHeartbeat()
	if err := proto.Unmarshal([]byte{0x0a, 0x02, 0x28, 0x01}, withUnknown); err != nil { // Self{field 5: 1}
		t.Fatal(err)
	}
	for name, hb := range map[string]*Heartbeat{
		"unknown field": withUnknown,
		"nil entry":     {Neighbors: []*NodeInfo{nil}},
		"nil extra":     {Self: &NodeInfo{Extra: []*Zone{nil}}},
	} {
		if _, ok := appendHeartbeat(nil, hb); ok {
			t.Errorf("%s: encoded by hand", name)
		}
		got, err1 := MarshalPayload(hb)
		want, err2 := proto.MarshalOptions{Deterministic: true}.Marshal(hb)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalPayload %x, %v; proto %x, %v", name, got, err1, want, err2)
		}
	}
}

// FuzzAppendHeartbeat: on any heartbeat proto.Unmarshal accepts, the hand
// encoder writes what proto.Marshal writes, or leaves it to proto.
func FuzzAppendHeartbeat(f *testing.F) {
	p, _ := proto.Marshal(richHeartbeat())
	f.Add(p)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		hb := &Heartbeat{}
		if proto.Unmarshal(data, hb) != nil {
			return
		}
		got, ok := appendHeartbeat(nil, hb)
		if !ok {
			return
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(hb)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodings differ\n got %x\nwant %x (%v)", got, want, err)
		}
	})
}
