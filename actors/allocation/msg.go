package allocation

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// Kind names an allocation message.
type Kind uint8

// The messages between the allocator and the machines (004 §2.1: a machine
// notifies the allocator of a job's end and of a change of its owner load;
// the allocator assigns jobs and orders relocations, and the job's state
// travels from machine to machine).
const (
	// MsgAssign: allocator → machine, run job Job (Comp, Remaining).
	MsgAssign Kind = iota + 1
	// MsgMigrate: allocator → machine, preempt job Job and send it to To.
	MsgMigrate
	// MsgState: machine → machine, the preempted job Job with its
	// composition and remaining operations ℓ'_j (004 §2.1).
	MsgState
	// MsgEnded: machine → allocator, job Job completed at At.
	MsgEnded
	// MsgLoad: machine → allocator, the owner load is now Load (since At).
	MsgLoad
	// MsgSync: a restarted allocator → machine, tell me what you hold.
	MsgSync
	// MsgSynced: machine → allocator, the answer: the owner load (Load),
	// the jobs running (List) and every job ended here (List, Ended).
	MsgSynced
	// MsgGossip: machine → neighbouring machine under
	// allocation.placement neighbors (peer.go), the sender's owner load
	// (Load) and the jobs it runs (List).
	MsgGossip
	maxKind
)

// Msg is one allocation message.
type Msg struct {
	Kind      Kind
	From      uint64 // the sender's bus address
	Job       uint64
	To        uint64 // MsgMigrate: the machine the job goes to
	At        time.Duration
	Load      float64
	Remaining float64
	Comp      Vector
	// List is MsgSynced's jobs.
	List []Entry
}

// Entry is a job in MsgSynced: running (its composition), or ended at At.
type Entry struct {
	ID    uint64
	Ended bool
	At    time.Duration
	Comp  Vector
}

// maxList bounds a decoded list (a machine of 004's grids holds a few
// hundred jobs at most).
const maxList = 1 << 20

// Encode appends m's encoding to b: kind, then from, job, to and at as
// varints, then load, remaining and the composition as float64 bits, then
// the list's length and entries (id, ended, at, composition).
func (m *Msg) Encode(b []byte) []byte {
	b = append(b, byte(m.Kind))
	b = binary.AppendUvarint(b, m.From)
	b = binary.AppendUvarint(b, m.Job)
	b = binary.AppendUvarint(b, m.To)
	b = binary.AppendVarint(b, int64(m.At))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Load))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Remaining))
	for _, c := range m.Comp {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c))
	}
	b = binary.AppendUvarint(b, uint64(len(m.List)))
	for _, e := range m.List {
		b = binary.AppendUvarint(b, e.ID)
		ended := byte(0)
		if e.Ended {
			ended = 1
		}
		b = append(b, ended)
		b = binary.AppendVarint(b, int64(e.At))
		for _, c := range e.Comp {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c))
		}
	}
	return b
}

// ErrMalformed is returned for bytes that are not an allocation message.
var ErrMalformed = errors.New("allocation: malformed message")

// Decode reads a message Encode wrote. It never panics: truncated,
// overlong or out-of-range input is ErrMalformed.
func Decode(b []byte) (Msg, error) {
	var m Msg
	if len(b) < 1 || b[0] == 0 || Kind(b[0]) >= maxKind {
		return m, ErrMalformed
	}
	m.Kind, b = Kind(b[0]), b[1:]
	for _, p := range []*uint64{&m.From, &m.Job, &m.To} {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return Msg{}, ErrMalformed
		}
		*p, b = v, b[n:]
	}
	at, n := binary.Varint(b)
	if n <= 0 {
		return Msg{}, ErrMalformed
	}
	m.At, b = time.Duration(at), b[n:]
	if len(b) < 8*(2+D) {
		return Msg{}, ErrMalformed
	}
	fs := []*float64{&m.Load, &m.Remaining, &m.Comp[0], &m.Comp[1], &m.Comp[2]}
	if !floats(b, fs) {
		return Msg{}, ErrMalformed
	}
	b = b[8*(2+D):]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > maxList || count > uint64(len(b)) {
		return Msg{}, ErrMalformed
	}
	b = b[n:]
	for range count {
		var e Entry
		id, n := binary.Uvarint(b)
		if n <= 0 || len(b) < n+1 || b[n] > 1 {
			return Msg{}, ErrMalformed
		}
		e.ID, e.Ended, b = id, b[n] == 1, b[n+1:]
		at, n := binary.Varint(b)
		if n <= 0 || len(b) < n+8*D {
			return Msg{}, ErrMalformed
		}
		e.At, b = time.Duration(at), b[n:]
		if !floats(b, []*float64{&e.Comp[0], &e.Comp[1], &e.Comp[2]}) {
			return Msg{}, ErrMalformed
		}
		b = b[8*D:]
		m.List = append(m.List, e)
	}
	if len(b) != 0 {
		return Msg{}, ErrMalformed
	}
	return m, nil
}

// floats reads len(ps) float64s from b (long enough), refusing NaN and ±Inf.
func floats(b []byte, ps []*float64) bool {
	for i, p := range ps {
		*p = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		if math.IsNaN(*p) || math.IsInf(*p, 0) {
			return false
		}
	}
	return true
}
