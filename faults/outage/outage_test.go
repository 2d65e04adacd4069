package outage

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
)

// serverBus is a bustest.Bus with the Server capability (OwnsServer,
// StopServer, StartServer) that Wrap looks for: only this package's tests
// need a fake server, so it stays here.
type serverBus struct {
	bustest.Bus
	owns          bool
	mu            sync.Mutex
	stops, starts int
	startErr      error
}

func (b *serverBus) OwnsServer() bool { return b.owns }
func (b *serverBus) StopServer() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stops++
	return nil
}
func (b *serverBus) StartServer() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts++
	return b.startErr
}

func TestSwitchDropsWhileDown(t *testing.T) {
	inner := bustest.NewBus()
	o, b := Wrap(inner)
	if b == bus.Bus(inner) {
		t.Fatal("Wrap returned the inner bus for a bus without a server; want a Switch over it")
	}
	b.Publish(1, nil)
	end, detail := o.Begin(20*time.Second, nil)
	if end == nil || detail != "bus down for 20s: messages sent meanwhile are lost" {
		t.Fatalf("Begin = (%v, %q)", end != nil, detail)
	}
	b.Publish(1, nil)
	b.Publish(2, nil)
	end()
	b.Publish(1, nil)
	if inner.Stats().Published != 2 || o.Dropped() != 2 {
		t.Errorf("published %d, dropped %d; want 2 and 2", inner.Stats().Published, o.Dropped())
	}
	if b.Stats().Published != 2 {
		t.Errorf("Stats().Published = %d, want the inner bus's 2", b.Stats().Published)
	}
}

func TestServerStopsAndStarts(t *testing.T) {
	inner := &serverBus{owns: true, startErr: errors.New("no port")}
	o, b := Wrap(inner)
	if b != bus.Bus(inner) {
		t.Fatal("Wrap put a Switch over a bus with its own server")
	}
	warned := make(chan string, 2)
	end, detail := o.Begin(10*time.Second, func(msg string, err error) { warned <- msg + ": " + err.Error() })
	if end == nil || detail != "embedded NATS server stopped for 10s" {
		t.Fatalf("Begin = (%v, %q)", end != nil, detail)
	}
	end()
	select {
	case w := <-warned:
		if w != "NATS server restart failed: no port" {
			t.Errorf("warned %q, want the restart failure", w)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no warning 10 s after end; want the restart failure")
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	if inner.stops != 1 || inner.starts != 1 {
		t.Errorf("stops %d, starts %d; want 1 and 1", inner.stops, inner.starts)
	}
	if o.Dropped() != 0 {
		t.Errorf("Dropped = %d for a server bus, want 0", o.Dropped())
	}
}

func TestExternalServerHasNoOutage(t *testing.T) {
	inner := &serverBus{owns: false}
	o, b := Wrap(inner)
	if b != bus.Bus(inner) {
		t.Fatal("Wrap put a Switch over a bus on an external server")
	}
	end, detail := o.Begin(time.Second, nil)
	if end != nil || detail != "not applied: the bus is an external NATS server, which gridbed does not control" {
		t.Errorf("Begin = (%v, %q), want no outage", end != nil, detail)
	}
	if inner.stops != 0 {
		t.Errorf("StopServer called %d times on an external server", inner.stops)
	}
}
