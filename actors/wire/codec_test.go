package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
)

func sampleHeartbeat() *Heartbeat {
	z := &Zone{Lo: []uint64{0, 1 << 31}, Hi: []uint64{1 << 31, 1 << 32}}
	return &Heartbeat{
		Self:      &NodeInfo{Id: 7, Zone: z, Version: 3},
		Neighbors: []*NodeInfo{{Id: 9, Zone: z, Version: 1}},
	}
}

func TestRoundTrip(t *testing.T) {
	hb := sampleHeartbeat()
	p, err := MarshalPayload(hb)
	if err != nil {
		t.Fatal(err)
	}
	h := Header{Type: MsgType_MSG_HEARTBEAT, From: 7, To: 9, Seq: 42, SentAt: 123456789}
	b, err := Encode(nil, h, p)
	if err != nil {
		t.Fatal(err)
	}
	gh, gm, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if gh != h {
		t.Fatalf("header %+v, want %+v", gh, h)
	}
	if !proto.Equal(gm, hb) {
		t.Fatalf("payload %v, want %v", gm, hb)
	}
}

func TestEveryTypeHasPayloadAndName(t *testing.T) {
	for v := 1; v < NumTypes; v++ {
		mt := MsgType(v)
		m, err := newPayload(mt)
		if err != nil {
			t.Fatalf("type %d has no payload: %v", v, err)
		}
		if p, _ := Primary(mt); TypeOf(m) != p {
			t.Fatalf("TypeOf(newPayload(%v)) = %v", mt, TypeOf(m))
		}
		if Name(mt) == "unknown" || Name(mt) == "" {
			t.Fatalf("type %d has no name", v)
		}
	}
	if Name(MsgType_MSG_HEARTBEAT) != "heartbeat" || Name(MsgType_MSG_JOIN_ACCEPT) != "join_accept" {
		t.Fatalf("short names: %q %q", Name(MsgType_MSG_HEARTBEAT), Name(MsgType_MSG_JOIN_ACCEPT))
	}
}

// A Secondary CAN message decodes (eagerly and lazily) to the overlay
// payload it twins, under its own type; a DualSearch carries its job.
func TestDualTypesTwinTheOverlays(t *testing.T) {
	for pt := MsgType_MSG_JOIN; pt <= MsgType_MSG_FULL_UPDATE; pt++ {
		dt, ok := Dual(pt)
		if !ok || !IsDual(dt) || IsDual(pt) || IsJob(dt) || Name(dt) != "dual_"+Name(pt) {
			t.Fatalf("%v: twin %v (%v), named %q", pt, dt, ok, Name(dt))
		}
		if back, ok := Primary(dt); !ok || back != pt {
			t.Fatalf("Primary(%v) = %v, %v; want %v", dt, back, ok, pt)
		}
	}
	if _, ok := Dual(MsgType_MSG_JOB_PUSH); ok {
		t.Fatal("a job message has a Secondary CAN twin")
	}
	p, _ := MarshalPayload(sampleHeartbeat())
	b, _ := Encode(nil, Header{Type: MsgType_MSG_DUAL_HEARTBEAT, From: 1, To: 2}, p)
	for name, dec := range map[string]func([]byte) (Header, proto.Message, error){"eager": Decode, "lazy": DecodeLazy} {
		h, m, err := dec(b)
		if err != nil || h.Type != MsgType_MSG_DUAL_HEARTBEAT || !proto.Equal(m, sampleHeartbeat()) {
			t.Fatalf("%s: %v %T %v", name, h.Type, m, err)
		}
	}
	s := &DualSearch{Push: &JobPush{Job: &JobSpec{Id: 7}}}
	if TypeOf(s) != MsgType_MSG_DUAL_SEARCH || !IsJob(MsgType_MSG_DUAL_SEARCH) || s.GetJob().GetId() != 7 || (&DualSearch{}).GetJob() != nil {
		t.Fatalf("DualSearch: type %v, job %v", TypeOf(s), s.GetJob())
	}
}

func TestDecodeRejectsUnknownTypeAndGarbage(t *testing.T) {
	b, _ := Encode(nil, Header{Type: MsgType(999)}, nil)
	if _, _, err := Decode(b); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown type: got %v", err)
	}
	if _, _, err := Decode([]byte{0xff, 0xff, 0xff}); err == nil {
		t.Fatal("garbage decoded without error")
	}
	// A Balloon whose point is cut short, a Balloon ack whose point is not
	// a packed list of varints.
	b, _ = Encode(nil, Header{Type: MsgType_MSG_BALLOON_ATTACH}, []byte{0x0a, 0x04, 0x08, 0x09, 0x12, 0x05, 0x01})
	if _, _, err := Decode(b); err == nil {
		t.Fatal("truncated BalloonAttach decoded without error")
	}
	b, _ = Encode(nil, Header{Type: MsgType_MSG_BALLOON_ACK}, []byte{0x0a, 0x02, 0xff, 0xff})
	if _, _, err := Decode(b); err == nil {
		t.Fatal("bad BalloonAck decoded without error")
	}
	// A heartbeat envelope whose payload is not a heartbeat.
	b, _ = Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT}, []byte{0x0a, 0x05, 0x01})
	if _, _, err := Decode(b); err == nil {
		t.Fatal("truncated payload decoded without error")
	}
}

// FuzzDecode proves that Decode never panics on arbitrary bytes and that
// whatever it accepts re-encodes to something it accepts again.
func FuzzDecode(f *testing.F) {
	p, _ := MarshalPayload(sampleHeartbeat())
	b, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 1, To: 2, Seq: 3, SentAt: 4}, p)
	f.Add(b)
	jp, _ := MarshalPayload(&Join{Joiner: 5, Point: []uint32{1, 2, 3}, Hops: 2})
	jb, _ := Encode(nil, Header{Type: MsgType_MSG_JOIN}, jp)
	f.Add(jb)
	bp, _ := MarshalPayload(&BalloonAttach{Balloon: &Balloon{Node: 9, Point: []uint32{1, 2, 3}, Speed: 1.5, Cores: 2, Beta: 0.8}, WantAck: true, Hops: 1})
	bb, _ := Encode(nil, Header{Type: MsgType_MSG_BALLOON_ATTACH, From: 9, To: 3}, bp)
	f.Add(bb)
	rp, _ := MarshalPayload(&RntSearch{Job: &JobSpec{Id: 7, Req: []uint32{1, 2, 3}}, Owner: 4, Epoch: 1, Hops: 3,
		Cands: []*RntCandidate{{Id: 5, Util: 1.5, Free: true, Speed: 2}}, Stack: []uint64{6, 8}, Visited: []uint64{4, 5}, Up: 4, UpParent: 2, UpOutside: true})
	rb, _ := Encode(nil, Header{Type: MsgType_MSG_RNT_SEARCH, From: 4, To: 6}, rp)
	f.Add(rb)
	cp, _ := MarshalPayload(&ChordState{Pred: 3, Succs: []uint64{5, 9}})
	cb, _ := Encode(nil, Header{Type: MsgType_MSG_CHORD_STATE, From: 5, To: 3}, cp)
	f.Add(cb)
	wp, _ := MarshalPayload(&WaveRoute{Search: &WaveSearch{Req: 7, Origin: 3, Job: 2, Lo: 1, Hi: 1 << 32, Criterion: 1}, Point: []uint32{5, 6}, Ring: 2, Hops: 1})
	wb, _ := Encode(nil, Header{Type: MsgType_MSG_WAVE_ROUTE, From: 3, To: 4}, wp)
	f.Add(wb)
	mp, _ := MarshalPayload(&WaveMigrate{Job: &WaveJob{Id: 1, Client: 2, Runtime: 3, Remaining: 4.5, Submitted: 6, Migrations: 1, State: make([]byte, 16)}})
	mb, _ := Encode(nil, Header{Type: MsgType_MSG_WAVE_MIGRATE, From: 4, To: 5}, mp)
	f.Add(mb)
	ap, _ := MarshalPayload(&WaveAck{Job: 1, Migrations: 2, Ok: true})
	ab, _ := Encode(nil, Header{Type: MsgType_MSG_WAVE_ACK, From: 5, To: 4}, ap)
	f.Add(ab)
	lp, _ := MarshalPayload(&WaveRelease{Req: 9})
	lb, _ := Encode(nil, Header{Type: MsgType_MSG_WAVE_RELEASE, From: 4, To: 5}, lp)
	f.Add(lb)
	// Dual-CAN: a Secondary CAN heartbeat (a Heartbeat payload under its
	// own type) and a search of the Secondary CAN.
	db, _ := Encode(nil, Header{Type: MsgType_MSG_DUAL_HEARTBEAT, From: 1, To: 2, Seq: 5}, p)
	f.Add(db)
	sp, _ := MarshalPayload(&DualSearch{Push: &JobPush{Job: &JobSpec{Id: 7, Req: []uint32{1, 2, 3}}, Owner: 4, Best: &Candidate{Id: 5, Score: 0.5}}, Hops: 2, Best: 1e9, Climbs: 1})
	sb, _ := Encode(nil, Header{Type: MsgType_MSG_DUAL_SEARCH, From: 4, To: 6}, sp)
	f.Add(sb)
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x04, 0x32, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		Decode(data) // arbitrary bytes: almost always a failed frame check
		// The same bytes as an envelope with a valid frame check, so the
		// fuzzer reaches the envelope and payload parsers behind it.
		h, m, err := Decode(Seal(append([]byte(nil), data...)))
		if err != nil {
			return
		}
		p, err := MarshalPayload(m)
		if err != nil {
			t.Fatalf("re-marshal payload: %v", err)
		}
		b, err := Encode(nil, h, p)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		h2, m2, err := Decode(b)
		if err != nil || h2 != h || !proto.Equal(m, m2) {
			t.Fatalf("round trip changed the message: %v", err)
		}
	})
}

func TestEntries(t *testing.T) {
	info := &NodeInfo{Id: 1}
	cases := []struct {
		m    proto.Message
		want int
	}{
		{&Heartbeat{Self: info}, 1},
		{&Heartbeat{Self: info, Neighbors: []*NodeInfo{info, info}}, 3},
		{&ZoneUpdate{Self: info, Others: []*NodeInfo{info}}, 2},
		{&JoinAccept{Neighbors: []*NodeInfo{info, info}}, 3},
		{&Leave{Self: info, Neighbors: []*NodeInfo{info}}, 2},
		{&FullUpdateRequest{Self: info}, 1},
		{&FullUpdate{Self: info, Neighbors: []*NodeInfo{info, info, info}}, 4},
		{&Join{Joiner: 1}, 0},
	}
	for _, c := range cases {
		if got := Entries(c.m); got != c.want {
			t.Errorf("%T: %d entries, want %d", c.m, got, c.want)
		}
	}
}

// FuzzPeekFrom: PeekFrom never panics and, on every envelope Decode
// accepts, names the same sender.
func FuzzPeekFrom(f *testing.F) {
	p, _ := MarshalPayload(sampleHeartbeat())
	b, _ := Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 1234567, To: 2, Seq: 3, SentAt: 4}, p)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x10})
	f.Fuzz(func(t *testing.T, data []byte) {
		sealed := Seal(append([]byte(nil), data...))
		for _, b := range [][]byte{data, sealed} {
			from, ok := PeekFrom(b)
			if h, _, err := Decode(b); err == nil && (!ok || from != h.From) {
				t.Fatalf("PeekFrom = %d, %v; Decode says from %d", from, ok, h.From)
			}
		}
	})
}

// FuzzPeekHeader: PeekHeader never panics on any bytes and, on every
// envelope Encode writes with a type, reads the header it was given.
func FuzzPeekHeader(f *testing.F) {
	f.Add(int32(MsgType_MSG_HEARTBEAT), uint64(1234567), uint64(2), uint64(3), int64(4), []byte{1, 2})
	f.Add(int32(0), uint64(7), uint64(0), uint64(0), int64(0), []byte{})
	f.Add(int32(-3), uint64(0), uint64(1<<40), uint64(9), int64(-1), []byte{0x08})
	f.Fuzz(func(t *testing.T, typ int32, from, to, seq uint64, sentAt int64, payload []byte) {
		PeekHeader(payload) // arbitrary bytes: must not panic
		h := Header{Type: MsgType(typ), From: from, To: to, Seq: seq, SentAt: sentAt}
		b, err := Encode(nil, h, payload)
		if err != nil {
			t.Skip()
		}
		got, ok := PeekHeader(b)
		if want := h.Type != 0; ok != want || (ok && got != h) {
			t.Fatalf("PeekHeader(Encode(%+v)) = %+v, %v", h, got, ok)
		}
	})
}

// FuzzPeekType: PeekType never panics on any bytes and, on every envelope
// Encode writes, names its type (none for type 0, which Encode leaves out).
func FuzzPeekType(f *testing.F) {
	f.Add(int32(MsgType_MSG_HEARTBEAT), uint64(1), []byte{1, 2})
	f.Add(int32(0), uint64(7), []byte{})
	f.Add(int32(-3), uint64(0), []byte{0x08})
	f.Fuzz(func(t *testing.T, typ int32, from uint64, payload []byte) {
		PeekType(payload) // arbitrary bytes: must not panic
		b, _ := Encode(nil, Header{Type: MsgType(typ), From: from}, payload)
		got, ok := PeekType(b)
		if ok != (typ != 0) || got != MsgType(typ) {
			t.Fatalf("PeekType = %v, %v for an envelope of type %d", got, ok, typ)
		}
	})
}

// FuzzEncode: Encode writes exactly the bytes proto.Marshal writes for the
// same Envelope (deterministic), then the frame check, appending to what
// buf holds.
func FuzzEncode(f *testing.F) {
	f.Add(int32(1), uint64(1), uint64(2), uint64(3), int64(4), []byte{1, 2})
	f.Add(int32(0), uint64(0), uint64(0), uint64(0), int64(0), []byte{})
	f.Add(int32(-1), uint64(1)<<63, uint64(0), uint64(9), int64(-5), []byte(nil))
	f.Fuzz(func(t *testing.T, typ int32, from, to, seq uint64, sentAt int64, payload []byte) {
		h := Header{Type: MsgType(typ), From: from, To: to, Seq: seq, SentAt: sentAt}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&Envelope{Type: h.Type, From: from, To: to, Seq: seq, SentAt: sentAt, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		want = Seal(want)
		got, err := Encode([]byte("x"), h, payload)
		if err != nil || string(got[1:]) != string(want) || got[0] != 'x' {
			t.Fatalf("Encode(%+v, %x) = %x, %v; proto.Marshal: %x", h, payload, got, err, want)
		}
	})
}
