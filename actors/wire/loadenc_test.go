package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"
)

// Loads as job cores send them, NaN, infinities and negative zeros
// included, are written by hand byte for byte as proto.Marshal writes
// them, alone and inside a heartbeat.
func TestAppendLoadAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	o := proto.MarshalOptions{Deterministic: true}
	for i := range 3000 {
		l := randomLoad(r, 1+i%9)
		switch i % 7 {
		case 1:
			l.Speed = float32(math.NaN())
		case 2:
			l.NormLoad = float32(math.Inf(-1))
		case 3:
			l.Agg = append(l.Agg, &AggLoad{})
		}
		if !plainLoad(l) {
			t.Fatalf("load %d not plain: %v", i, l)
		}
		want, err := o.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLoad(nil, l); !bytes.Equal(got, want) || sizeLoad(l) != len(want) {
			t.Fatalf("load %d: appendLoad %x (size %d), proto %x", i, got, sizeLoad(l), want)
		}
		hb := &Heartbeat{Self: &NodeInfo{Id: 3, Zone: &Zone{Lo: []uint64{1}, Hi: []uint64{2}}}, Load: l}
		got, err1 := MarshalPayload(hb)
		want, err2 := o.Marshal(hb)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Fatalf("heartbeat %d: MarshalPayload %x, %v; proto %x, %v", i, got, err1, want, err2)
		}
	}
	for name, l := range map[string]*Load{
		"balloons": {Balloons: []*Balloon{{Node: 1}}},
		"ces":      {Ces: []*CELoad{{Queue: 1}}},
		"nil agg":  {Agg: []*AggLoad{nil}},
	} {
		if plainLoad(l) {
			t.Errorf("%s: written by hand, must be left to proto", name)
		}
	}
}

// FuzzAppendLoad: on any load proto.Unmarshal accepts, the hand encoder
// writes what proto.Marshal writes, or leaves it to proto.
func FuzzAppendLoad(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 8 {
		p, _ := proto.MarshalOptions{Deterministic: true}.Marshal(randomLoad(r, 1+i))
		f.Add(p)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		l := &Load{}
		if proto.Unmarshal(data, l) != nil || !plainLoad(l) {
			return
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLoad(nil, l); !bytes.Equal(got, want) || sizeLoad(l) != len(want) {
			t.Fatalf("encodings differ\n got %x (size %d)\nwant %x", got, sizeLoad(l), want)
		}
	})
}
