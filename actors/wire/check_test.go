package wire

import (
	"bytes"
	"errors"
	"testing"
)

// TestEveryByteChangeRejected: changing any one byte of an encoded
// message, to any other value, makes both decoders reject it with
// ErrChecksum (reason "checksum") — never a plausible message — and
// Open gives the envelope back only for the untouched bytes. This is the
// guarantee the link's corruption relies on (faults/link.Corrupt flips
// one byte).
func TestEveryByteChangeRejected(t *testing.T) {
	p, _ := MarshalPayload(sampleHeartbeat())
	msgs := map[string][]byte{}
	msgs["heartbeat"], _ = Encode(nil, Header{Type: MsgType_MSG_HEARTBEAT, From: 7, To: 9, Seq: 42, SentAt: 123456789}, p)
	jp, _ := MarshalPayload(&Join{Joiner: 5, Point: []uint32{1, 2, 3}, Hops: 2})
	msgs["join"], _ = Encode(nil, Header{Type: MsgType_MSG_JOIN, From: 5, To: 1, Seq: 1}, jp)
	msgs["empty"], _ = Encode(nil, Header{}, nil)
	for name, b := range msgs {
		body, err := Open(b)
		if err != nil || !bytes.Equal(body, b[:len(b)-CheckLen]) {
			t.Fatalf("%s: Open of an intact message: %v", name, err)
		}
		for i := range b {
			for x := 1; x < 256; x++ {
				c := bytes.Clone(b)
				c[i] ^= byte(x)
				for dn, dec := range map[string]func([]byte) (Header, any, error){
					"Decode":     func(d []byte) (Header, any, error) { return Decode(d) },
					"DecodeLazy": func(d []byte) (Header, any, error) { return DecodeLazy(d) },
				} {
					if _, _, err := dec(c); !errors.Is(err, ErrChecksum) || RejectReason(err) != RejectChecksum {
						t.Fatalf("%s: byte %d ^ %#x: %s returned %v, want ErrChecksum", name, i, x, dn, err)
					}
				}
			}
		}
		// Cut short or extended, it is rejected as well.
		for n := range len(b) {
			if _, _, err := Decode(b[:n]); !errors.Is(err, ErrChecksum) {
				t.Fatalf("%s cut to %d bytes: %v", name, n, err)
			}
		}
		if _, _, err := Decode(append(bytes.Clone(b), 0)); !errors.Is(err, ErrChecksum) {
			t.Fatalf("%s with a trailing byte: %v", name, err)
		}
	}
}

// TestRejectReason tells a failed check, an unknown type and a malformed
// envelope apart.
func TestRejectReason(t *testing.T) {
	unknown, _ := Encode(nil, Header{Type: MsgType(999)}, nil)
	malformed := Seal([]byte{0x32, 0x05, 0x01}) // payload field cut short
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{[]byte{0xff, 0xff}, RejectChecksum},
		{unknown, RejectUnknownType},
		{malformed, RejectMalformed},
	} {
		_, _, err := Decode(tc.data)
		if err == nil || RejectReason(err) != tc.want {
			t.Errorf("Decode(%x): %v, reason %q; want %q", tc.data, err, RejectReason(err), tc.want)
		}
		_, _, err = DecodeLazy(tc.data)
		if err == nil || RejectReason(err) != tc.want {
			t.Errorf("DecodeLazy(%x): %v, reason %q; want %q", tc.data, err, RejectReason(err), tc.want)
		}
	}
}
