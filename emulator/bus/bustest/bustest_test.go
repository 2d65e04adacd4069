package bustest_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
)

var (
	_ bus.Bus     = (*bustest.Bus)(nil)
	_ bus.Bus     = (*bustest.BatchBus)(nil)
	_ bus.Batcher = (*bustest.BatchBus)(nil)
)

// TestBus: a message to a registered address is delivered at once with the
// caller's own bytes, one to nobody is unroutable; both are counted and
// recorded as copies stamped with the clock's time; after Close every
// Publish fails and counts as an error; the books always close.
func TestBus(t *testing.T) {
	c := bustest.NewClock()
	b := bustest.NewBus(bustest.WithClock(c))
	var got [][]byte
	if err := b.Register(1, func(to bus.Address, data []byte) { got = append(got, data) }); err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello")
	if err := b.Publish(1, msg); err != nil {
		t.Fatal(err)
	}
	c.Set(time.Second)
	if err := b.Publish(2, []byte("nobody")); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || &got[0][0] != &msg[0] {
		t.Fatalf("handler got %q, want the caller's own bytes once", got)
	}
	msg[0] = 'X' // the record is a copy
	want := []bustest.Sent{{To: 1, Data: []byte("hello"), At: 0}, {To: 2, Data: []byte("nobody"), At: time.Second}}
	if s := b.Sent(); fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("Sent = %v, want %v", s, want)
	}
	if s := b.SentTo(2); len(s) != 1 || s[0].At != time.Second {
		t.Errorf("SentTo(2) = %v", s)
	}
	b.Unregister(1)
	_ = b.Publish(1, msg)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(1, msg); !errors.Is(err, bustest.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	if err := b.Register(3, func(bus.Address, []byte) {}); !errors.Is(err, bustest.ErrClosed) {
		t.Errorf("Register after Close = %v, want ErrClosed", err)
	}
	st := b.Stats()
	if st.Published != 3 || st.Delivered != 1 || st.Unroutable != 2 || st.PublishErrs != 1 || st.Transport != 3 || st.Unsettled() != 0 {
		t.Errorf("Stats = %+v", st)
	}
	if len(got) != 1 || len(b.Sent()) != 3 {
		t.Errorf("%d delivered, %d recorded after Unregister and Close; want 1 and 3", len(got), len(b.Sent()))
	}
}

// TestBusZeroValue: the zero Bus delivers and records (for embedding).
func TestBusZeroValue(t *testing.T) {
	var b bustest.Bus
	n := 0
	if err := b.Register(1, func(bus.Address, []byte) { n++ }); err != nil {
		t.Fatal(err)
	}
	_ = b.Publish(1, nil)
	if n != 1 || b.Stats().Delivered != 1 || len(b.Sent()) != 1 {
		t.Errorf("zero Bus: %d delivered, Stats %+v", n, b.Stats())
	}
}

// TestBusHandlerMayPublish: delivery runs outside the bus's lock.
func TestBusHandlerMayPublish(t *testing.T) {
	b := bustest.NewBus()
	hops := 0
	_ = b.Register(1, func(bus.Address, []byte) {
		hops++
		if hops < 3 {
			_ = b.Publish(1, nil)
		}
	})
	_ = b.Publish(1, nil)
	if hops != 3 || b.Stats().Delivered != 3 {
		t.Errorf("%d hops, Stats %+v", hops, b.Stats())
	}
}

// TestBatchBus: only the batching variant is a Batcher, so bus.PublishBatch
// takes Publish's path on a plain Bus; a batch counts its messages one by
// one, recorded as its size, as one transport message.
func TestBatchBus(t *testing.T) {
	if _, ok := any(bustest.NewBus()).(bus.Batcher); ok {
		t.Fatal("a plain Bus is a bus.Batcher: decorators would take the batch path")
	}
	bb := bustest.NewBatchBus()
	if _, ok := any(bb.Bus).(bus.Batcher); ok {
		t.Fatal("BatchBus's embedded Bus is a bus.Batcher")
	}
	n := 0
	_ = bb.Register(1, func(bus.Address, []byte) { n++ })
	msgs := []bus.Message{{To: 1, Data: []byte("a")}, {To: 2, Data: []byte("b")}, {To: 1, Data: []byte("c")}}
	if err := bus.PublishBatch(bb, msgs); err != nil {
		t.Fatal(err)
	}
	_ = bb.Publish(1, []byte("d"))
	if err := bus.PublishBatch(bb, msgs[:1]); err != nil {
		t.Fatal(err)
	}
	if got := bb.Batches(); !slices.Equal(got, []int{3, 1}) {
		t.Errorf("Batches = %v, want [3 1]", got)
	}
	st := bb.Stats()
	if n != 4 || st.Published != 5 || st.Delivered != 4 || st.Unroutable != 1 || st.Transport != 3 {
		t.Errorf("%d delivered, Stats %+v: want 4 delivered, 5 published, 1 unroutable, 3 transport", n, st)
	}
	_ = bb.Close()
	if err := bb.PublishBatch(msgs); !errors.Is(err, bustest.ErrClosed) || bb.Stats().PublishErrs != 3 {
		t.Errorf("PublishBatch after Close = %v, Stats %+v", err, bb.Stats())
	}

	plain := bustest.NewBus()
	if err := bus.PublishBatch(plain, msgs); err != nil || plain.Stats().Transport != 3 {
		t.Errorf("bus.PublishBatch on a plain Bus: %v, Stats %+v: want one Publish per message", err, plain.Stats())
	}
}

// TestCountOnly: a count-only bus counts, delivers and records nothing,
// and refuses a handler.
func TestCountOnly(t *testing.T) {
	b := bustest.NewBus(bustest.CountOnly())
	if err := b.Register(1, func(bus.Address, []byte) {}); !errors.Is(err, bustest.ErrCountOnly) {
		t.Errorf("Register = %v, want ErrCountOnly", err)
	}
	for range 5 {
		_ = b.Publish(1, []byte("x"))
	}
	_ = b.Close()
	if err := b.Publish(1, nil); !errors.Is(err, bustest.ErrClosed) {
		t.Errorf("Publish after Close = %v", err)
	}
	st := b.Stats()
	if st.Published != 5 || st.Dropped != 5 || st.Transport != 5 || st.PublishErrs != 1 || st.Unsettled() != 0 || len(b.Sent()) != 0 {
		t.Errorf("Stats = %+v, %d recorded", st, len(b.Sent()))
	}
}

// TestBusConcurrent: concurrent publishers and (un)registrations (-race).
func TestBusConcurrent(t *testing.T) {
	for _, opts := range [][]bustest.Option{nil, {bustest.CountOnly()}} {
		b := bustest.NewBus(opts...)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 500 {
					_ = b.Publish(bus.Address(i%3), []byte{byte(w)})
					if i%50 == 0 {
						_ = b.Register(bus.Address(w), func(bus.Address, []byte) {})
						b.Unregister(bus.Address(w))
					}
				}
			})
		}
		wg.Wait()
		if st := b.Stats(); st.Published != 2000 || st.Unsettled() != 0 {
			t.Errorf("Stats = %+v", st)
		}
	}
}

// TestClock: queued functions run in time order, ties in the order they
// were queued, each with Now at its time; those they queue run too, one
// scheduled in the past runs at Now; RunUntil stops at its horizon and
// moves Now there; Set and Advance run nothing.
func TestClock(t *testing.T) {
	c := bustest.NewClock()
	var log []string
	at := func(name string, t time.Duration) {
		c.At(t, func() { log = append(log, fmt.Sprintf("%s@%v", name, c.Now())) })
	}
	at("c", 3*time.Second)
	at("a", time.Second)
	at("b1", 2*time.Second)
	at("b2", 2*time.Second)
	c.At(2*time.Second, func() {
		log = append(log, "b3")
		at("past", 0)           // runs at Now, after those already due
		at("d", 10*time.Second) // beyond the horizon
	})
	if c.Len() != 5 || !slices.Equal(c.Pending(), []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second}) {
		t.Fatalf("Len %d, Pending %v", c.Len(), c.Pending())
	}
	if n := c.RunUntil(5 * time.Second); n != 6 || c.Now() != 5*time.Second {
		t.Fatalf("RunUntil(5s) ran %d, Now %v; want 6 and 5s", n, c.Now())
	}
	want := []string{"a@1s", "b1@2s", "b2@2s", "b3", "past@2s", "c@3s"}
	if !slices.Equal(log, want) {
		t.Fatalf("ran %v, want %v", log, want)
	}
	if c.Len() != 1 || c.Pending()[0] != 10*time.Second {
		t.Fatalf("pending %v, want d at 10s", c.Pending())
	}
	c.Advance(time.Second)
	c.Set(c.Now() + time.Second)
	if c.Now() != 7*time.Second || c.Len() != 1 {
		t.Fatalf("Set/Advance: Now %v, %d pending", c.Now(), c.Len())
	}
	if !c.Step() || c.Step() || c.Now() != 10*time.Second || log[len(log)-1] != "d@10s" {
		t.Fatalf("Step: Now %v, ran %v", c.Now(), log)
	}
	if n := c.Run(); n != 0 {
		t.Errorf("Run on an empty queue ran %d", n)
	}
}

// TestImmediateClock: At runs fn at once and leaves Now alone.
func TestImmediateClock(t *testing.T) {
	c := bustest.NewImmediateClock()
	c.Set(time.Second)
	ran := false
	c.At(time.Hour, func() { ran = c.Now() == time.Second })
	if !ran || c.Len() != 0 || c.Run() != 0 {
		t.Errorf("ran %v, %d queued", ran, c.Len())
	}
}

// TestClockConcurrent: At and Now from many goroutines, then Run (-race).
func TestClockConcurrent(t *testing.T) {
	c := bustest.NewClock()
	var mu sync.Mutex
	ran := 0
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 250 {
				c.At(c.Now()+time.Duration(w*i), func() {
					mu.Lock()
					ran++
					mu.Unlock()
				})
			}
		})
	}
	wg.Wait()
	if n := c.Run(); n != 1000 || ran != 1000 {
		t.Errorf("Run ran %d (counted %d), want 1000", n, ran)
	}
}
