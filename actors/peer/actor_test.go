package peer

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
)

// A panic while an actor handles a message reaches OnPanic with its stack
// instead of the runtime's silent recovery; without OnPanic it propagates.
func TestReportPanicHandsThePanicOn(t *testing.T) {
	var got any
	var stack []byte
	func() {
		defer reportPanic(func(v any, st []byte) { got, stack = v, st })
		panic("boom")
	}()
	if got != "boom" || !bytes.Contains(stack, []byte("TestReportPanicHandsThePanicOn")) {
		t.Fatalf("OnPanic got %v with stack %q", got, stack)
	}
	propagated := func() (v any) {
		defer func() { v = recover() }()
		func() {
			defer reportPanic(nil)
			panic("again")
		}()
		return nil
	}()
	if propagated != "again" {
		t.Fatalf("without OnPanic the panic did not propagate: %v", propagated)
	}
}

// fakeEndpoint records what an Actor hands it.
type fakeEndpoint struct {
	delivered [][]byte
	fired     []core.TimerKind
}

func (f *fakeEndpoint) Deliver(data []byte) { f.delivered = append(f.delivered, data) }
func (f *fakeEndpoint) Fire(kind core.TimerKind, _ time.Duration) {
	f.fired = append(f.fired, kind)
}

// The one endpoint actor hands bus messages and timers to what it hosts,
// ignores messages meant for the other kind of endpoint, and after Halt
// counts what still arrives as discarded instead of handing it on.
func TestActorHostsAnEndpointUntilHalted(t *testing.T) {
	ep := &fakeEndpoint{}
	var backlog, timerBacklog, discarded atomic.Int64
	var lags int
	a := &Actor{Endpoint: ep, Backlog: &backlog, TimerBacklog: &timerBacklog, Discarded: &discarded, OnLag: func(float64) { lags++ }}
	recv := a.Handle
	backlog.Store(2)
	timerBacklog.Store(1)
	recv(&Inbound{Data: []byte("a")})
	recv(&TimerFired{Kind: 7, Due: time.Now()})
	recv(&StartJoin{})              // not a Peer: ignored
	recv(&SubmitJob{})              // not a Client: ignored
	recv(&CollectState{Reply: nil}) // not a Peer: no answer (a nil channel would block)
	if len(ep.delivered) != 1 || string(ep.delivered[0]) != "a" || len(ep.fired) != 1 || ep.fired[0] != 7 || lags != 1 {
		t.Fatalf("delivered %q, fired %v, lags %d", ep.delivered, ep.fired, lags)
	}
	done := make(chan struct{}, 1)
	recv(&Halt{Done: done})
	select {
	case <-done:
	default:
		t.Fatal("Halt was not answered")
	}
	recv(&Inbound{Data: []byte("b")})
	if len(ep.delivered) != 1 || discarded.Load() != 1 || backlog.Load() != 0 || timerBacklog.Load() != 0 {
		t.Fatalf("after Halt: delivered %d, discarded %d, backlog %d, timer backlog %d", len(ep.delivered), discarded.Load(), backlog.Load(), timerBacklog.Load())
	}
}
