package peer

import (
	"sync/atomic"

	"github.com/gridbed/gridbed/actors/wire"
)

// Waiting counts the bus messages waiting in mailboxes by message type,
// so that a backlog that grows without bound can be named (the emulator's
// overload guard and memory ceiling say which messages pile up). Types
// outside its slots, and messages whose type could not be read, share
// slot 0. Safe for concurrent use.
type Waiting [64]atomic.Int64

// Add adds n (negative to take off) to type t's count.
func (w *Waiting) Add(t wire.MsgType, n int64) {
	i := int(t)
	if i < 0 || i >= len(w) {
		i = 0
	}
	w[i].Add(n)
}

// Counts returns the types with messages waiting, by wire.Name (slot 0 as
// "unknown"), or nil when none wait.
func (w *Waiting) Counts() map[string]int64 {
	var m map[string]int64
	for i := range w {
		n := w[i].Load()
		if n <= 0 {
			continue
		}
		if m == nil {
			m = make(map[string]int64)
		}
		name := "unknown"
		if i > 0 {
			name = wire.Name(wire.MsgType(i))
		}
		m[name] += n
	}
	return m
}
