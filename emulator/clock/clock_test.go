package clock

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

func TestClockScale(t *testing.T) {
	c := New(1000)
	w := c.WallAt(5 * time.Second)
	if d := w.Sub(c.e.Load().start); d != 5*time.Millisecond {
		t.Fatalf("5 emulated seconds at scale 1000 map to %v wall, want 5ms", d)
	}
}

// TestTimersFireInDeadlineOrder schedules timers out of order and checks
// they fire in deadline order, each no earlier than its wall instant.
func TestTimersFireInDeadlineOrder(t *testing.T) {
	c := New(1000) // 1 emulated second = 1 wall millisecond
	tm := NewTimers(c)
	defer tm.Stop()
	var mu sync.Mutex
	var got []int
	done := make(chan struct{})
	order := []int{5, 1, 4, 2, 3}
	for _, k := range order {
		k := k
		tm.At(time.Duration(k)*10*time.Second, func(due time.Time) {
			if time.Now().Before(due) {
				t.Errorf("timer %d fired before its due time", k)
			}
			mu.Lock()
			got = append(got, k)
			if len(got) == len(order) {
				close(done)
			}
			mu.Unlock()
		})
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("timers did not fire within 10s")
	}
	for i, k := range got {
		if k != i+1 {
			t.Fatalf("fired in order %v, want 1..5", got)
		}
	}
	if tm.Pending() != 0 {
		t.Fatalf("%d timers pending", tm.Pending())
	}
}

func TestStopDropsPending(t *testing.T) {
	c := New(1)
	tm := NewTimers(c)
	fired := make(chan struct{}, 1)
	tm.At(time.Hour, func(time.Time) { fired <- struct{}{} })
	tm.Stop()
	select {
	case <-fired:
		t.Fatal("timer fired after Stop")
	default:
	}
}

// TestRestartAt: a clock restarted at an emulated origin (the handover of
// an overlay built outside the bus) reads that origin now and maps it to
// now; earlier emulated times map to the past.
func TestRestartAt(t *testing.T) {
	c := New(10)
	origin := 5 * time.Minute
	before := time.Now()
	c.RestartAt(origin)
	if now := c.Now(); now < origin || now > origin+10*time.Second {
		t.Errorf("Now() = %v right after RestartAt(%v)", now, origin)
	}
	if w := c.WallAt(origin); w.Before(before) || w.After(time.Now()) {
		t.Errorf("WallAt(origin) = %v, want the restart instant (after %v)", w, before)
	}
	if w := c.WallAt(origin - time.Minute); !w.Before(before) {
		t.Errorf("WallAt(origin - 1m) = %v, want 6 s before the restart", w)
	}
}

// TestSkewRoundTrip: a timer set on a skewed clock fires at the earliest
// emulated instant at which that clock has reached the deadline.
func TestSkewRoundTrip(t *testing.T) {
	for _, s := range []Skew{{}, {Drift: 0.01}, {Drift: -0.3, Anchor: 7 * time.Second}, {Drift: 0.3, Offset: 2 * time.Second, Anchor: time.Minute}} {
		for _, local := range []time.Duration{s.Anchor + s.Offset, s.Anchor + s.Offset + 1, s.Anchor + s.Offset + 30*time.Second + 7, s.Anchor + s.Offset + 3*time.Hour + 13} {
			e := s.Emulated(local)
			if got := s.Local(e); got < local {
				t.Fatalf("%+v: Local(Emulated(%v)) = %v, before the deadline", s, local, got)
			}
			if e > s.Anchor && s.Local(e-1) >= local {
				t.Fatalf("%+v: Emulated(%v) = %v is not the earliest instant", s, local, e)
			}
		}
	}
	// 30 s of a clock 30% slow take 30/0.7 s of emulated time.
	s := Skew{Drift: -0.3}
	if got, want := s.Emulated(30*time.Second), time.Duration(math.Ceil(30e9/0.7)); got != want {
		t.Fatalf("Emulated(30s) on a clock 30%% slow = %v, want %v", got, want)
	}
}

// Await returns once the clock has reached t (then Now is not before t),
// at once for a t already passed, and with the context's error when the
// context ends first.
func TestAwait(t *testing.T) {
	c := New(1000) // an emulated second per wall millisecond
	if err := c.Await(context.Background(), 0); err != nil {
		t.Fatalf("a passed deadline: %v", err)
	}
	at := c.Now() + 20*time.Millisecond*1000
	if err := c.Await(context.Background(), at); err != nil || c.Now() < at {
		t.Fatalf("Await(%v) = %v with Now %v", at, err, c.Now())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Await(ctx, c.Now()+time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context: %v", err)
	}
}
