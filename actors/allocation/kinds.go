package allocation

import "fmt"

// NumKinds is one more than the largest Kind: arrays indexed by Kind have
// this length.
const NumKinds = int(maxKind)

var kindNames = [...]string{MsgAssign: "assign", MsgMigrate: "migrate", MsgState: "state", MsgEnded: "ended",
	MsgLoad: "load", MsgSync: "sync", MsgSynced: "synced", MsgGossip: "gossip"}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Kinds are every message kind, in order.
func Kinds() []Kind {
	ks := make([]Kind, 0, NumKinds-1)
	for k := Kind(1); k < maxKind; k++ {
		ks = append(ks, k)
	}
	return ks
}
