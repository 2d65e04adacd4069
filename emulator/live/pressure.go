package live

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Pressure is how far behind the emulator is, measured over one window of
// wall time (between two calls of Driver.Pressure): the overload guard
// (emulator/overload.go) reads it while the run goes on.
type Pressure struct {
	// LagP99 is the 99th percentile of how late (wall seconds) the timers
	// handled in the window were, rounded up to a power of two of
	// microseconds; 0 when none was handled.
	LagP99 float64
	// Timers is the number of timers handled in the window.
	Timers uint64
	// TimerServiceLag is how overdue (wall seconds) the earliest timer not
	// yet handed to its peer is: the timer goroutine itself falling behind.
	TimerServiceLag float64
	// Backlog is the bus messages waiting in actor mailboxes; TimersQueued
	// the expired timers waiting there; TimersOverdue the expired timers
	// the timer goroutine has not handed out yet (messages the fault
	// layer delays wait there too: in flight).
	Backlog int64
	// Waiting is Backlog by message type (wire.Name), nil when empty.
	Waiting       map[string]int64 `json:",omitempty"`
	TimersQueued  int64
	TimersOverdue int64
	// Published counts the messages published on the bus so far (for
	// the rate at which mailboxes are fed).
	Published uint64
}

// lagBuckets counts timer lags by power of two of microseconds: bucket k
// holds lags in [2^(k-1), 2^k) µs (bucket 0: below 1 µs). Actors add to it
// concurrently; the guard drains it once per window.
type lagBuckets [40]atomic.Uint64

func (b *lagBuckets) observe(seconds float64) {
	us := uint64(0)
	if seconds > 0 {
		us = uint64(min(seconds*1e6, float64(math.MaxUint32)))
	}
	k := min(bits.Len64(us), len(b)-1)
	b[k].Add(1)
}

// drain empties the buckets and returns the p99 (the upper bound of its
// bucket, in seconds) and the count.
func (b *lagBuckets) drain() (p99 float64, n uint64) {
	var counts [len(lagBuckets{})]uint64
	for k := range b {
		counts[k] = b[k].Swap(0)
		n += counts[k]
	}
	if n == 0 {
		return 0, 0
	}
	rank := n - n/100 // the smallest count covering 99%
	var seen uint64
	for k, c := range counts {
		seen += c
		if seen >= rank {
			return float64(uint64(1)<<k) / 1e6, n
		}
	}
	return float64(uint64(1)<<(len(counts)-1)) / 1e6, n
}

// Pressure reports the window since the previous call (see Pressure).
func (d *Driver) Pressure() Pressure {
	p99, n := d.lagWin.drain()
	p := Pressure{LagP99: p99, Timers: n, Backlog: d.backlog.Load(), Waiting: d.waiting.Counts(), TimersQueued: d.timerBacklog.Load(), TimersOverdue: int64(d.timers.Overdue()), Published: d.raw.Stats().Published}
	if due, ok := d.timers.Earliest(); ok {
		if late := time.Since(due); late > 0 {
			p.TimerServiceLag = late.Seconds()
		}
	}
	return p
}

// Freeze stops the run where it stands, for an abort: timers stop and
// every peer ignores what its mailbox still holds (so mailboxes drain
// fast) but answers the oracle and Halt, so Collect and Close still work.
// Messages discarded that way were delivered by the bus (its counters
// stay exact) and are reported as the abort's cut; Freeze marks the end of
// the run for the message accounting, so they count as in flight at the
// end (Settlement).
func (d *Driver) Freeze() {
	d.markEnd()
	d.frozen.Store(true)
	d.timers.Stop()
}
