package allocation

import (
	"reflect"
	"testing"
	"time"
)

func TestMsgRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Kind: MsgAssign, From: 1, Job: 42, Remaining: 250e3, Comp: Compositions[1]},
		{Kind: MsgMigrate, From: 1, Job: 7, To: 5},
		{Kind: MsgState, From: 3, Job: 7, Remaining: 12.5, Comp: Compositions[4]},
		{Kind: MsgEnded, From: 9, Job: 1 << 40, At: 3 * time.Hour},
		{Kind: MsgLoad, From: 2, Load: 0.95, At: 1500 * time.Second},
		{Kind: MsgSync, From: 1},
		{Kind: MsgSynced, From: 4, Load: 0.5, List: []Entry{{ID: 3, Comp: Compositions[2]}, {ID: 9, Ended: true, At: time.Minute}}},
	} {
		got, err := Decode(m.Encode(nil))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %+v: %+v, %v", m, got, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add((&Msg{Kind: MsgState, From: 3, Job: 7, Remaining: 12.5, Comp: Compositions[4]}).Encode(nil))
	f.Add([]byte{})
	f.Add([]byte{1, 0x80})
	f.Add((&Msg{Kind: MsgSynced, From: 4, List: []Entry{{ID: 3, Ended: true, At: 5}}}).Encode(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if again, err := Decode(m.Encode(nil)); err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("decoded %+v does not re-encode to itself: %+v, %v", m, again, err)
		}
	})
}
