// Package wire is gridbed's one wire format: an Envelope (type, from, to,
// sequence, emulated send time, payload) whose payload is the protobuf
// encoding of the message its type names. The MsgType enum is append-only.
// The bytes produced here are the bytes the message-volume metrics count.
package wire

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrUnknownType is returned when an envelope names a type this build does
// not know (e.g. a newer peer's message).
var ErrUnknownType = errors.New("wire: unknown message type")

// NumTypes is one more than the largest MsgType value; arrays indexed by
// MsgType have this length.
var NumTypes = func() int {
	n := 0
	for v := range MsgType_name {
		if int(v)+1 > n {
			n = int(v) + 1
		}
	}
	return n
}()

// Name is the lower-case short name of a message type ("heartbeat"), used as
// a metric label value and a summary key.
func Name(t MsgType) string {
	if int(t) >= 0 && int(t) < len(shortNames) {
		return shortNames[t]
	}
	return "unknown"
}

var shortNames = func() []string {
	names := make([]string, NumTypes)
	for v, n := range MsgType_name {
		names[v] = strings.ToLower(strings.TrimPrefix(n, "MSG_"))
	}
	return names
}()

// newPayload returns an empty message of the Go type that t names.
func newPayload(t MsgType) (proto.Message, error) {
	switch t {
	case MsgType_MSG_JOIN:
		return &Join{}, nil
	case MsgType_MSG_JOIN_ACCEPT:
		return &JoinAccept{}, nil
	case MsgType_MSG_JOIN_REJECT:
		return &JoinReject{}, nil
	case MsgType_MSG_HEARTBEAT:
		return &Heartbeat{}, nil
	case MsgType_MSG_ZONE_UPDATE:
		return &ZoneUpdate{}, nil
	case MsgType_MSG_LEAVE:
		return &Leave{}, nil
	case MsgType_MSG_FULL_UPDATE_REQUEST:
		return &FullUpdateRequest{}, nil
	case MsgType_MSG_FULL_UPDATE:
		return &FullUpdate{}, nil
	case MsgType_MSG_JOB_SUBMIT:
		return &JobSubmit{}, nil
	case MsgType_MSG_JOB_ROUTE:
		return &JobRoute{}, nil
	case MsgType_MSG_JOB_PUSH:
		return &JobPush{}, nil
	case MsgType_MSG_JOB_ASSIGN:
		return &JobAssign{}, nil
	case MsgType_MSG_JOB_QUEUED:
		return &JobQueued{}, nil
	case MsgType_MSG_RUN_HEARTBEAT:
		return &RunHeartbeat{}, nil
	case MsgType_MSG_OWNER_HEARTBEAT:
		return &OwnerHeartbeat{}, nil
	case MsgType_MSG_JOB_ADOPT:
		return &JobAdopt{}, nil
	case MsgType_MSG_JOB_RETURN:
		return &JobReturn{}, nil
	case MsgType_MSG_JOB_CANCEL:
		return &JobCancel{}, nil
	case MsgType_MSG_JOB_RESULT:
		return &JobResult{}, nil
	case MsgType_MSG_JOB_STATUS:
		return &JobStatus{}, nil
	case MsgType_MSG_MIGRATE_OFFER:
		return &MigrateOffer{}, nil
	case MsgType_MSG_MIGRATE_REPLY:
		return &MigrateReply{}, nil
	case MsgType_MSG_PULL_REQUEST:
		return &PullRequest{}, nil
	case MsgType_MSG_PULL_REJECT:
		return &PullReject{}, nil
	case MsgType_MSG_MIGRATE_JOB:
		return &MigrateJob{}, nil
	case MsgType_MSG_MIGRATE_ACK:
		return &MigrateAck{}, nil
	case MsgType_MSG_BALLOON_ATTACH:
		return &BalloonAttach{}, nil
	case MsgType_MSG_BALLOON_ACK:
		return &BalloonAck{}, nil
	case MsgType_MSG_WAVE_ROUTE:
		return &WaveRoute{}, nil
	case MsgType_MSG_WAVE_PROBE:
		return &WaveProbe{}, nil
	case MsgType_MSG_WAVE_REPLY:
		return &WaveReply{}, nil
	case MsgType_MSG_WAVE_SHIP:
		return &WaveShip{}, nil
	case MsgType_MSG_WAVE_MIGRATE:
		return &WaveMigrate{}, nil
	case MsgType_MSG_WAVE_FAIL:
		return &WaveFail{}, nil
	case MsgType_MSG_WAVE_DONE:
		return &WaveDone{}, nil
	case MsgType_MSG_WAVE_ACK:
		return &WaveAck{}, nil
	case MsgType_MSG_WAVE_RELEASE:
		return &WaveRelease{}, nil
	case MsgType_MSG_DUAL_SEARCH:
		return &DualSearch{}, nil
	}
	if m := newRNTPayload(t); m != nil {
		return m, nil
	}
	if p, ok := Primary(t); ok && p != t {
		return newPayload(p)
	}
	return nil, fmt.Errorf("%w %d", ErrUnknownType, int32(t))
}

// IsJob reports whether messages of type t belong to the job protocol
// (003 §4.1) rather than the overlay's.
func IsJob(t MsgType) bool {
	switch t {
	case MsgType_MSG_JOB_SUBMIT, MsgType_MSG_JOB_ROUTE, MsgType_MSG_JOB_PUSH, MsgType_MSG_JOB_ASSIGN,
		MsgType_MSG_JOB_QUEUED, MsgType_MSG_RUN_HEARTBEAT, MsgType_MSG_OWNER_HEARTBEAT, MsgType_MSG_JOB_ADOPT,
		MsgType_MSG_JOB_RETURN, MsgType_MSG_JOB_CANCEL, MsgType_MSG_JOB_RESULT, MsgType_MSG_JOB_STATUS,
		MsgType_MSG_MIGRATE_OFFER, MsgType_MSG_MIGRATE_REPLY, MsgType_MSG_PULL_REQUEST, MsgType_MSG_PULL_REJECT,
		MsgType_MSG_MIGRATE_JOB, MsgType_MSG_MIGRATE_ACK, MsgType_MSG_BALLOON_ATTACH, MsgType_MSG_BALLOON_ACK,
		MsgType_MSG_DUAL_SEARCH:
		return true
	}
	return false
}

// IsWave reports whether messages of type t belong to the Wave scheduler
// (001 §IV).
func IsWave(t MsgType) bool {
	return t >= MsgType_MSG_WAVE_ROUTE && t <= MsgType_MSG_WAVE_DONE || t == MsgType_MSG_WAVE_ACK || t == MsgType_MSG_WAVE_RELEASE
}

// dualOffset is the distance between an overlay message type and its
// Secondary CAN twin (MSG_JOIN .. MSG_FULL_UPDATE, MSG_DUAL_JOIN ..
// MSG_DUAL_FULL_UPDATE).
const dualOffset = MsgType_MSG_DUAL_JOIN - MsgType_MSG_JOIN

// Dual is the Secondary CAN's type for overlay message type t (002
// §3.1.2: Dual-CAN's second overlay runs the same protocol, counted
// apart); false for a type that is not the overlay's.
func Dual(t MsgType) (MsgType, bool) {
	if t < MsgType_MSG_JOIN || t > MsgType_MSG_FULL_UPDATE {
		return t, false
	}
	return t + dualOffset, true
}

// Primary is the overlay message type a Secondary CAN type twins, with
// true; an overlay type is its own primary (true); any other type is
// returned with false.
func Primary(t MsgType) (MsgType, bool) {
	switch {
	case t >= MsgType_MSG_JOIN && t <= MsgType_MSG_FULL_UPDATE:
		return t, true
	case t >= MsgType_MSG_DUAL_JOIN && t <= MsgType_MSG_DUAL_FULL_UPDATE:
		return t - dualOffset, true
	}
	return t, false
}

// IsDual reports whether t is a Secondary CAN overlay message (002
// §3.1.2), for the Residue-node's overlay core.
func IsDual(t MsgType) bool {
	return t >= MsgType_MSG_DUAL_JOIN && t <= MsgType_MSG_DUAL_FULL_UPDATE
}

// GetJob is the job a DualSearch carries (messages carrying a job
// profile are checked once, on arrival).
func (x *DualSearch) GetJob() *JobSpec { return x.GetPush().GetJob() }

// TypeOf returns the MsgType of a payload message, or MSG_UNSPECIFIED.
func TypeOf(m proto.Message) MsgType {
	switch m.(type) {
	case *Join:
		return MsgType_MSG_JOIN
	case *JoinAccept:
		return MsgType_MSG_JOIN_ACCEPT
	case *JoinReject:
		return MsgType_MSG_JOIN_REJECT
	case *Heartbeat:
		return MsgType_MSG_HEARTBEAT
	case *ZoneUpdate:
		return MsgType_MSG_ZONE_UPDATE
	case *Leave:
		return MsgType_MSG_LEAVE
	case *FullUpdateRequest:
		return MsgType_MSG_FULL_UPDATE_REQUEST
	case *FullUpdate:
		return MsgType_MSG_FULL_UPDATE
	case *JobSubmit:
		return MsgType_MSG_JOB_SUBMIT
	case *JobRoute:
		return MsgType_MSG_JOB_ROUTE
	case *JobPush:
		return MsgType_MSG_JOB_PUSH
	case *JobAssign:
		return MsgType_MSG_JOB_ASSIGN
	case *JobQueued:
		return MsgType_MSG_JOB_QUEUED
	case *RunHeartbeat:
		return MsgType_MSG_RUN_HEARTBEAT
	case *OwnerHeartbeat:
		return MsgType_MSG_OWNER_HEARTBEAT
	case *JobAdopt:
		return MsgType_MSG_JOB_ADOPT
	case *JobReturn:
		return MsgType_MSG_JOB_RETURN
	case *JobCancel:
		return MsgType_MSG_JOB_CANCEL
	case *JobResult:
		return MsgType_MSG_JOB_RESULT
	case *JobStatus:
		return MsgType_MSG_JOB_STATUS
	case *MigrateOffer:
		return MsgType_MSG_MIGRATE_OFFER
	case *MigrateReply:
		return MsgType_MSG_MIGRATE_REPLY
	case *PullRequest:
		return MsgType_MSG_PULL_REQUEST
	case *PullReject:
		return MsgType_MSG_PULL_REJECT
	case *MigrateJob:
		return MsgType_MSG_MIGRATE_JOB
	case *MigrateAck:
		return MsgType_MSG_MIGRATE_ACK
	case *BalloonAttach:
		return MsgType_MSG_BALLOON_ATTACH
	case *BalloonAck:
		return MsgType_MSG_BALLOON_ACK
	case *WaveRoute:
		return MsgType_MSG_WAVE_ROUTE
	case *WaveProbe:
		return MsgType_MSG_WAVE_PROBE
	case *WaveReply:
		return MsgType_MSG_WAVE_REPLY
	case *WaveShip:
		return MsgType_MSG_WAVE_SHIP
	case *WaveMigrate:
		return MsgType_MSG_WAVE_MIGRATE
	case *WaveFail:
		return MsgType_MSG_WAVE_FAIL
	case *WaveDone:
		return MsgType_MSG_WAVE_DONE
	case *WaveAck:
		return MsgType_MSG_WAVE_ACK
	case *WaveRelease:
		return MsgType_MSG_WAVE_RELEASE
	case *DualSearch:
		return MsgType_MSG_DUAL_SEARCH
	}
	return typeOfRNT(m)
}

// Entries is the number of node descriptions (NodeInfo: id, zone, version)
// message m carries: the dissertation's unit of heartbeat volume (002
// §4.2, Table 4.2 counts neighbor entries, not bytes). A compact heartbeat
// counts 1 (the sender, without its zone).
func Entries(m proto.Message) int {
	switch m := m.(type) {
	case *JoinAccept:
		return 1 + len(m.Neighbors)
	case *Heartbeat:
		return 1 + len(m.Neighbors)
	case *ZoneUpdate:
		return 1 + len(m.Others)
	case *Leave:
		return 1 + len(m.Neighbors)
	case *FullUpdateRequest:
		return 1
	case *FullUpdate:
		return 1 + len(m.Neighbors)
	}
	return 0
}

// Header is the envelope without its payload.
type Header struct {
	Type   MsgType
	From   uint64
	To     uint64
	Seq    uint64
	SentAt int64 // emulated nanoseconds since the start of the run
}

// MarshalPayload encodes a payload message once, so that one heartbeat can be
// wrapped into many envelopes without encoding it again.
func MarshalPayload(m proto.Message) ([]byte, error) { return AppendPayload(nil, m) }

// AppendPayload is MarshalPayload appending to buf: a sender that is
// done with a payload once its envelopes are written (they copy it)
// encodes the next one into the same buffer.
func AppendPayload(buf []byte, m proto.Message) ([]byte, error) {
	if hb, ok := m.(*Heartbeat); ok {
		if b, ok := appendHeartbeat(buf, hb); ok {
			return b, nil
		}
	}
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf, m)
}

// Encode builds the envelope bytes for header h and an already encoded
// payload, appending to buf (which may be nil).
//
// The envelope is written field by field (protowire), byte for byte what
// proto.Marshal writes for the same Envelope (FuzzEncode), without building
// one: it is encoded once per message and receiver. The frame check
// (CheckLen bytes, see Seal) follows it.
func Encode(buf []byte, h Header, payload []byte) ([]byte, error) {
	start := len(buf)
	if h.Type != 0 {
		buf = protowire.AppendTag(buf, 1, protowire.VarintType)
		buf = protowire.AppendVarint(buf, uint64(int64(h.Type)))
	}
	for _, f := range [...]struct {
		num protowire.Number
		v   uint64
	}{{2, h.From}, {3, h.To}, {4, h.Seq}, {5, uint64(h.SentAt)}} {
		if f.v != 0 {
			buf = protowire.AppendTag(buf, f.num, protowire.VarintType)
			buf = protowire.AppendVarint(buf, f.v)
		}
	}
	if len(payload) > 0 {
		buf = protowire.AppendTag(buf, 6, protowire.BytesType)
		buf = protowire.AppendBytes(buf, payload)
	}
	return appendCheck(buf, buf[start:]), nil
}

// Decode verifies the frame check of a message (Open), then parses the
// envelope and the payload it carries. It never panics: a failed check is
// ErrChecksum, any other malformed input an error (RejectReason tells
// them apart).
func Decode(data []byte) (Header, proto.Message, error) {
	body, err := Open(data)
	if err != nil {
		return Header{}, nil, err
	}
	var env Envelope
	if err := proto.Unmarshal(body, &env); err != nil {
		return Header{}, nil, fmt.Errorf("wire: bad envelope: %w", err)
	}
	h := Header{Type: env.Type, From: env.From, To: env.To, Seq: env.Seq, SentAt: env.SentAt}
	m, err := newPayload(env.Type)
	if err != nil {
		return h, nil, err
	}
	if err := proto.Unmarshal(env.Payload, m); err != nil {
		return h, nil, fmt.Errorf("wire: bad %s payload: %w", Name(env.Type), err)
	}
	return h, m, nil
}

// PeekType reads the message type of an envelope without decoding it:
// Encode (and proto.Marshal) write the type first, so it is the leading
// varint field 1 when present. ok is false when the bytes do not start
// with a well-formed type field (an envelope whose type is 0 has none).
// It never panics.
func PeekType(data []byte) (t MsgType, ok bool) {
	num, typ, n := protowire.ConsumeTag(data)
	if n < 0 || num != 1 || typ != protowire.VarintType {
		return 0, false
	}
	v, m := protowire.ConsumeVarint(data[n:])
	if m < 0 {
		return 0, false
	}
	return MsgType(int32(v)), true
}

// PeekHeader reads an envelope's header — type, sender, receiver,
// sequence number and sending time — without checking its frame or
// decoding its payload: Encode writes those fields first, in field order,
// so it stops at the payload (field 6) or at the first field that is not
// one of them. ok is false when no type was read (bytes that do not start
// as an envelope does, or a type-0 envelope). It never panics. For
// observers of the bus (a trace), not for a receiver, which must Decode.
func PeekHeader(data []byte) (h Header, ok bool) {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 || typ != protowire.VarintType || num < 1 || num > 5 {
			break
		}
		v, m := protowire.ConsumeVarint(data[n:])
		if m < 0 {
			return Header{}, false
		}
		h.set(num, v)
		data = data[n+m:]
	}
	return h, h.Type != 0
}

// set stores envelope field num (1–5: type, sender, receiver, sequence
// number, sending time) read as the varint v.
func (h *Header) set(num protowire.Number, v uint64) {
	switch num {
	case 1:
		h.Type = MsgType(int32(v))
	case 2:
		h.From = v
	case 3:
		h.To = v
	case 4:
		h.Seq = v
	case 5:
		h.SentAt = int64(v)
	}
}

// PeekFrom reads the sender address of an envelope without decoding it
// (fault injectors need the sender of every message; a full Decode per
// message would cost more than the delivery). It walks the envelope's
// fields (the last `from` wins, as in Decode); ok is false for bytes that
// are not a well-formed sequence of fields. It never panics.
func PeekFrom(data []byte) (from uint64, ok bool) {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return 0, false
		}
		data = data[n:]
		if num == 2 && typ == protowire.VarintType {
			from = 0 // a repeated field: the last one wins, as in Decode
		}
		v, n := protowire.ConsumeVarint(data)
		if num != 2 || typ != protowire.VarintType {
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return 0, false
		}
		if num == 2 && typ == protowire.VarintType {
			from = v
		}
		data = data[n:]
	}
	return from, true // proto3 leaves a zero `from` out
}
