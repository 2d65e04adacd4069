// Package clock maps emulated time to wall time for the emulator driver
// (docs/ARCHITECTURE.md principle 3): with time scale s, one wall second is s
// emulated seconds (time_scale 1000 = one emulated second per wall
// millisecond). Timers fire on one goroutine at the wall instant their
// emulated deadline maps to; each callback is told that instant, so the
// receiver can measure how late it really handled the timer (clock lag).
package clock

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/emulator/heap"
)

// Clock is the scaled emulated clock of one run. Safe for concurrent
// use: a worker of a run split across processes restarts its clock from
// the coordinator's epoch while messages from workers that started first
// may already reach its peers.
type Clock struct {
	scale float64
	e     atomic.Pointer[epoch]
}

// epoch is when the clock (re)started and the emulated time then.
type epoch struct {
	start  time.Time
	origin time.Duration
}

// New starts an emulated clock at 0 now, running scale times faster than
// wall time.
func New(scale float64) *Clock {
	c := &Clock{scale: scale}
	c.e.Store(&epoch{start: time.Now()})
	return c
}

// Restart sets emulated time 0 to now. Call it before any timer is set.
func (c *Clock) Restart() { c.RestartAt(0) }

// RestartAt sets emulated time origin to now: the run goes on from there
// (an overlay built outside the bus hands over at origin). Call it before
// any timer is set.
func (c *Clock) RestartAt(origin time.Duration) { c.RestartFrom(time.Now(), origin) }

// RestartFrom sets emulated time origin to wall instant start: the
// processes of a run split across processes (emulator/workers) share one
// epoch, the coordinator's. Call it before any timer is set.
func (c *Clock) RestartFrom(start time.Time, origin time.Duration) {
	c.e.Store(&epoch{start: start, origin: origin})
}

// Now is the emulated time since the start.
func (c *Clock) Now() time.Duration {
	e := c.e.Load()
	return e.origin + time.Duration(float64(time.Since(e.start))*c.scale)
}

// WallAt is the wall instant at which emulated time t is reached (rounded
// up, so that Now() at that instant is not before t).
func (c *Clock) WallAt(t time.Duration) time.Time {
	e := c.e.Load()
	return e.start.Add(time.Duration(math.Ceil(float64(t-e.origin) / c.scale)))
}

// Await blocks until the clock reaches emulated time t or ctx ends (then
// ctx's error); a t already passed returns at once.
func (c *Clock) Await(ctx context.Context, t time.Duration) error {
	wait := time.Until(c.WallAt(t))
	if wait <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Timers runs callbacks at emulated deadlines on one goroutine. Callbacks
// must not block (hand work to a mailbox).
type Timers struct {
	c    *Clock
	mu   sync.Mutex
	heap heap.Heap[entry]
	seq  uint64
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type entry struct {
	at  time.Time
	seq uint64
	fn  func(due time.Time)
}

func (a *entry) before(b *entry) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}

// NewTimers starts the timer goroutine of clock c.
func NewTimers(c *Clock) *Timers {
	t := &Timers{c: c, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	t.heap.Less = (*entry).before
	go t.loop()
	return t
}

// At calls fn(due) on the timer goroutine once emulated time at is reached,
// where due is the wall instant that at maps to.
func (t *Timers) At(at time.Duration, fn func(due time.Time)) {
	e := entry{at: t.c.WallAt(at), fn: fn}
	t.mu.Lock()
	t.seq++
	e.seq = t.seq
	t.heap.Push(e)
	first := t.heap.Min().seq == e.seq
	t.mu.Unlock()
	if first {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// Earliest is the wall instant of the earliest timer not yet fired; ok is
// false when there is none. Compared with the wall clock it tells how far
// the timer goroutine itself is behind.
func (t *Timers) Earliest() (due time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.heap.Len() == 0 {
		return time.Time{}, false
	}
	return t.heap.Min().at, true
}

// Overdue counts the timers whose instant has passed but which have not
// fired yet: work the timer goroutine is behind on (delayed messages of
// the fault layer included). It visits only those entries and their
// children.
func (t *Timers) Overdue() int {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.heap.Items()
	n := 0
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h) || h[i].at.After(now) {
			continue
		}
		n++
		stack = append(stack, 2*i+1, 2*i+2)
	}
	return n
}

// Pending is the number of timers not yet fired.
func (t *Timers) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.heap.Len()
}

func (t *Timers) loop() {
	defer close(t.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []entry
	for {
		now := time.Now()
		t.mu.Lock()
		due = due[:0]
		for t.heap.Len() > 0 && !t.heap.Min().at.After(now) {
			due = append(due, t.heap.Pop())
		}
		var wait time.Duration = -1
		if t.heap.Len() > 0 {
			wait = t.heap.Min().at.Sub(now)
		}
		t.mu.Unlock()
		for _, e := range due {
			e.fn(e.at)
		}
		if len(due) > 0 {
			continue // time moved on while running callbacks: look again
		}
		if wait < 0 {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-t.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-t.stop:
			return
		}
	}
}

// Stop ends the timer goroutine; pending timers never fire.
func (t *Timers) Stop() {
	t.once.Do(func() { close(t.stop) })
	<-t.done
}
