package sim

import (
	"fmt"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
)

// Event is one event a World handled, as the determinism check sees it:
// a message delivered, a timer expired or an action run.
type Event struct {
	// N is the event's number in the run, from 1.
	N  uint64
	At time.Duration
	// Kind is "deliver", "timer" or "action".
	Kind string
	// To is the address a message or timer was for (a peer's id, or the
	// job client's); Timer the timer's kind.
	To    bus.Address
	Timer core.TimerKind
	// Type is a delivered message's type, Bytes its length and Hash an
	// FNV-1a hash of its bytes.
	Type  string
	Bytes int
	Hash  uint64
}

// String is the event in words.
func (e Event) String() string {
	switch e.Kind {
	case "deliver":
		return fmt.Sprintf("event %d at %v: %s to %d (%d bytes, hash %016x)", e.N, e.At, e.Type, e.To, e.Bytes, e.Hash)
	case "timer":
		return fmt.Sprintf("event %d at %v: timer %d of %d", e.N, e.At, e.Timer, e.To)
	}
	return fmt.Sprintf("event %d at %v: %s", e.N, e.At, e.Kind)
}

// BlockEvents is how many events the determinism check folds into one
// mark: a run keeps one 8-byte mark per block, whatever its length, and
// a divergence is looked for event by event inside the first block whose
// marks differ.
const BlockEvents = 1024

// Recorder follows a World's event stream for the determinism check
// (gridbed run --check-determinism): a hash chained over every event —
// its time, kind, address, timer kind and message bytes — marked at the
// end of every block of BlockEvents events.
//
// A first run records its marks (Marks). A second run given them
// (Compare) checks each of its marks as it goes; at the first that
// differs it keeps that block's events (Diverged). A third run asked for
// that block (Keep) keeps its events, so the two can be compared event by
// event; it also checks its marks against the first run's, so that a
// third run that diverged earlier says so (Diverged) rather than being
// taken for the first.
type Recorder struct {
	chain uint64
	n     uint64
	marks []uint64

	want  []uint64 // Compare: the first run's marks
	block []Event  // the current block's events (Compare and Keep)
	keep  int      // Keep: the block to keep, -1 none
	// diverged is the first block whose mark differed from want's, -1
	// none; kept that block's events.
	diverged int
	kept     []Event
}

// NewRecorder returns a recorder for a first run.
func NewRecorder() *Recorder { return &Recorder{keep: -1, diverged: -1} }

// Compare returns a recorder for a run that checks its marks against a
// first run's.
func Compare(marks []uint64) *Recorder {
	r := NewRecorder()
	r.want = marks
	return r
}

// Keep returns a recorder for a run that keeps the events of block b and
// checks its marks against marks.
func Keep(marks []uint64, b int) *Recorder {
	r := Compare(marks)
	r.keep = b
	return r
}

// Marks are the chained hash at the end of each block so far, the last
// one (the run's end) included when the run ended inside a block (End).
func (r *Recorder) Marks() []uint64 { return r.marks }

// Events is the number of events recorded.
func (r *Recorder) Events() uint64 { return r.n }

// Diverged is the first block whose mark differed from the compared
// run's (-1 none), and the events of that block in this run (in a
// Compare run; a Keep run keeps block Keep's, Kept).
func (r *Recorder) Diverged() int { return r.diverged }

// Kept is the kept block's events: a Compare run's first diverging block,
// or a Keep run's block.
func (r *Recorder) Kept() []Event { return r.kept }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvWord(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// see records one event of the World's loop.
func (r *Recorder) see(e *event) {
	r.n++
	h := fnvWord(r.chain, uint64(e.at))
	h = fnvWord(h, uint64(e.kind)<<8|uint64(e.tk))
	h = fnvWord(h, uint64(e.to))
	if e.kind == evDeliver {
		h = fnvBytes(fnvWord(h, uint64(len(e.data))), e.data)
	}
	r.chain = h
	b := int((r.n - 1) / BlockEvents)
	if r.want != nil && (r.diverged < 0 || b == r.keep) {
		r.block = append(r.block, describe(r.n, e))
	}
	if r.n%BlockEvents == 0 {
		r.mark(b)
	}
}

// mark ends block b at the current event.
func (r *Recorder) mark(b int) {
	r.marks = append(r.marks, r.chain)
	if r.want != nil {
		if r.diverged < 0 && (b >= len(r.want) || r.want[b] != r.chain) {
			r.diverged = b
			if r.keep < 0 {
				r.kept = r.block
			}
		}
		if b == r.keep {
			r.kept = r.block
		}
		r.block = nil
	}
}

// End marks the end of the run: a block the run ended inside counts as
// the last one. A run shorter than the compared one diverges at its
// first missing block.
func (r *Recorder) End() {
	if r.n%BlockEvents != 0 {
		r.mark(int(r.n / BlockEvents))
	}
	if r.want != nil && r.diverged < 0 && len(r.marks) < len(r.want) {
		r.diverged = len(r.marks)
		if r.keep < 0 {
			r.kept = nil
		}
	}
}

// describe is e as the check reports it.
func describe(n uint64, e *event) Event {
	ev := Event{N: n, At: e.at, To: e.to}
	switch e.kind {
	case evDeliver:
		ev.Kind, ev.Bytes, ev.Hash = "deliver", len(e.data), fnvBytes(fnvOffset, e.data)
		if t, ok := wire.PeekType(e.data); ok {
			ev.Type = t.String()
		} else {
			ev.Type = "unknown type"
		}
	case evTimer:
		ev.Kind, ev.Timer = "timer", e.tk
	default:
		ev.Kind = "action"
	}
	return ev
}

// FirstDifference is the first pair of events that differ between two
// runs' copies of one block (a nil side: that run had no such event).
func FirstDifference(a, b []Event) (x, y *Event) {
	for i := 0; i < max(len(a), len(b)); i++ {
		switch {
		case i >= len(a):
			return nil, &b[i]
		case i >= len(b):
			return &a[i], nil
		case a[i] != b[i]:
			return &a[i], &b[i]
		}
	}
	return nil, nil
}

// Record makes the world report every event it handles to r (the
// determinism check); nil stops it.
func (w *World) Record(r *Recorder) { w.rec = r }

// TapDeliveries makes the world report every message it hands to a
// handler, at its time, before the handler runs (a message trace); nil
// stops it.
func (w *World) TapDeliveries(f func(at time.Duration, to bus.Address, data []byte)) {
	w.delivered = f
}
