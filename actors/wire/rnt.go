package wire

import "google.golang.org/protobuf/proto"

// The Chord ring's and the Rendezvous Node Tree's messages (003 §5.1),
// kept apart from codec.go's switches so that they stay small.

// IsRNT reports whether messages of type t belong to the Chord ring or the
// Rendezvous Node Tree built on it (matchmaking.scheme rnt).
func IsRNT(t MsgType) bool { return t >= MsgType_MSG_CHORD_FIND && t <= MsgType_MSG_RNT_SEARCH }

func newRNTPayload(t MsgType) proto.Message {
	switch t {
	case MsgType_MSG_CHORD_FIND:
		return &ChordFind{}
	case MsgType_MSG_CHORD_FOUND:
		return &ChordFound{}
	case MsgType_MSG_CHORD_STABILIZE:
		return &ChordStabilize{}
	case MsgType_MSG_CHORD_STATE:
		return &ChordState{}
	case MsgType_MSG_CHORD_NOTIFY:
		return &ChordNotify{}
	case MsgType_MSG_CHORD_PING:
		return &ChordPing{}
	case MsgType_MSG_CHORD_PONG:
		return &ChordPong{}
	case MsgType_MSG_RNT_UP:
		return &RntUp{}
	case MsgType_MSG_RNT_DOWN:
		return &RntDown{}
	case MsgType_MSG_RNT_SEARCH:
		return &RntSearch{}
	}
	return nil
}

func typeOfRNT(m proto.Message) MsgType {
	switch m.(type) {
	case *ChordFind:
		return MsgType_MSG_CHORD_FIND
	case *ChordFound:
		return MsgType_MSG_CHORD_FOUND
	case *ChordStabilize:
		return MsgType_MSG_CHORD_STABILIZE
	case *ChordState:
		return MsgType_MSG_CHORD_STATE
	case *ChordNotify:
		return MsgType_MSG_CHORD_NOTIFY
	case *ChordPing:
		return MsgType_MSG_CHORD_PING
	case *ChordPong:
		return MsgType_MSG_CHORD_PONG
	case *RntUp:
		return MsgType_MSG_RNT_UP
	case *RntDown:
		return MsgType_MSG_RNT_DOWN
	case *RntSearch:
		return MsgType_MSG_RNT_SEARCH
	}
	return MsgType_MSG_UNSPECIFIED
}
