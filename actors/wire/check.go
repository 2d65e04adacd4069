package wire

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"google.golang.org/protobuf/encoding/protowire"
)

// The frame check: every message on the bus is an envelope followed by
// field 7 of wire type fixed32 holding the CRC-32C (Castagnoli) of the
// envelope's bytes — so the frame is still a protobuf Envelope, and a
// reader that walks fields (PeekFrom) skips the check like any field.
// Encode writes it; Decode and DecodeLazy verify and strip it before
// parsing anything, so a message whose bytes changed on the way (the
// link's corruption, link.corrupt) is rejected with ErrChecksum instead of
// being decoded into a plausible message. CRC-32C detects every error
// burst of up to 32 bits, so any change within one byte — or within four
// consecutive ones — is always caught; other changes escape with
// probability 2⁻³².
const (
	checkField = 7
	// CheckLen is the length of the frame check (tag and CRC) at the end
	// of every encoded message. The message-volume metrics leave it out,
	// so byte counts are those of the envelope alone.
	CheckLen = 5
)

// checkTag is field 7's tag with wire type fixed32 (one byte: 0x3d).
var checkTag = byte(protowire.EncodeTag(checkField, protowire.Fixed32Type))

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrChecksum is returned for a message whose frame check is missing or
// does not match its bytes: it was corrupted on the way (or is not a
// gridbed message at all).
var ErrChecksum = errors.New("wire: frame check failed")

// Seal appends the frame check of env (an encoded envelope) to env.
func Seal(env []byte) []byte {
	return appendCheck(env, env)
}

// appendCheck appends the check of body to dst (body is a suffix of dst or
// dst itself).
func appendCheck(dst, body []byte) []byte {
	dst = append(dst, checkTag)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(body, castagnoli))
}

// Open verifies the frame check at the end of data and returns the
// envelope before it (a slice of data). It never panics.
func Open(data []byte) ([]byte, error) {
	n := len(data) - CheckLen
	if n < 0 || data[n] != checkTag {
		return nil, ErrChecksum
	}
	if binary.LittleEndian.Uint32(data[n+1:]) != crc32.Checksum(data[:n], castagnoli) {
		return nil, ErrChecksum
	}
	return data[:n], nil
}

// Reject reasons: why a receiver threw a message away (bounded: the label
// values of gridbed_messages_rejected_total and the keys of
// messages.rejected in summary.json).
const (
	RejectChecksum     = "checksum"     // frame check missing or wrong: corrupted on the way
	RejectMalformed    = "malformed"    // the check passed but the envelope or payload does not parse
	RejectUnknownType  = "unknown_type" // a message type this build does not know
	RejectMisaddressed = "misaddressed" // a well-formed message for another address
)

// RejectReasons lists the reject reasons, in a fixed order.
var RejectReasons = [...]string{RejectChecksum, RejectMalformed, RejectUnknownType, RejectMisaddressed}

// RejectReason is the reject reason of an error Decode or DecodeLazy
// returned.
func RejectReason(err error) string {
	switch {
	case errors.Is(err, ErrChecksum):
		return RejectChecksum
	case errors.Is(err, ErrUnknownType):
		return RejectUnknownType
	}
	return RejectMalformed
}
