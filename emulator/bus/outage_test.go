package bus

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// streamer publishes a steady stream round-robin to addresses [0, addrs)
// from one goroutine until stopped. Each payload's first byte is the phase
// the stream was in when the message was sent, so handlers can tell
// messages sent after a restart apart.
type streamer struct {
	b     *NATSBus
	addrs int
	phase atomic.Uint32

	ok, refused, otherErr atomic.Uint64
	okByPhase             [4]atomic.Uint64
	done                  chan struct{}
	stop                  chan struct{}
}

func startStreamer(b *NATSBus, addrs int) *streamer {
	st := &streamer{b: b, addrs: addrs, done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(st.done)
		msg := make([]byte, 64)
		for i := 0; ; i++ {
			select {
			case <-st.stop:
				return
			default:
			}
			p := st.phase.Load()
			msg[0] = byte(p)
			switch err := b.Publish(Address(i%addrs), msg); {
			case err == nil:
				st.ok.Add(1)
				st.okByPhase[p].Add(1)
			case errors.Is(err, ErrDisconnected):
				st.refused.Add(1)
			default:
				st.otherErr.Add(1)
			}
			if i%64 == 0 {
				runtime.Gosched() // let the handlers keep up
			}
		}
	}()
	return st
}

func (st *streamer) halt() {
	close(st.stop)
	<-st.done
}

// settledWithLoss is settled for a bus that may have lost messages: it
// waits until every message is accounted for (Stats.Unsettled() == 0).
func settledWithLoss(t testing.TB, b *NATSBus) Stats {
	t.Helper()
	if err := b.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	var st Stats
	waitFor(t, "messages to settle", 10*time.Second, func() bool {
		st = b.Stats()
		return st.Unsettled() == 0
	})
	return st
}

// TestNATSServerRestart stops and restarts the embedded server twice under a
// steady stream of messages: publishing during an outage fails and is
// counted lost, delivery resumes after each restart, and every message is
// accounted for exactly.
func TestNATSServerRestart(t *testing.T) {
	const (
		conns  = 4
		addrs  = 64
		cycles = 2
	)
	b := openTest(t, NATSOptions{Connections: conns})
	var handled atomic.Uint64
	var handledByPhase [4]atomic.Uint64
	for a := range Address(addrs) {
		if err := b.Register(a, func(_ Address, data []byte) {
			handled.Add(1)
			handledByPhase[data[0]].Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Phase 0: before any outage; phase 1: an outage in progress (or just
	// over); phase 2: after StartServer returned; 3: after the last one.
	st := startStreamer(b, addrs)
	stopped := false
	defer func() {
		if !stopped {
			st.halt()
		}
	}()

	waitFor(t, "delivery before the outage", 10*time.Second, func() bool { return b.Stats().Delivered >= 2000 })
	for c := range cycles {
		refusedBefore := st.refused.Load()
		st.phase.Store(1)
		if err := b.StopServer(); err != nil {
			t.Fatalf("StopServer: %v", err)
		}
		if !b.ServerStopped() || b.Server().Running() {
			t.Fatal("server not stopped after StopServer")
		}
		if err := b.StopServer(); !errors.Is(err, ErrServerStopped) {
			t.Errorf("second StopServer = %v, want ErrServerStopped", err)
		}
		if err := b.Flush(); err != nil {
			t.Errorf("Flush during the outage = %v, want nil", err)
		}
		// Keep publishing into the outage.
		waitFor(t, "publishes refused during the outage", 10*time.Second, func() bool {
			return st.refused.Load() >= refusedBefore+1000
		})
		if s := b.Stats(); s.Refused < 1000 || s.Lost < s.Refused {
			t.Errorf("during outage %d: %+v", c+1, s)
		}

		if err := b.StartServer(); err != nil {
			t.Fatalf("StartServer: %v", err)
		}
		if b.ServerStopped() || !b.Server().Running() {
			t.Fatal("server not running after StartServer")
		}
		if err := b.StartServer(); !errors.Is(err, ErrServerRunning) {
			t.Errorf("second StartServer = %v, want ErrServerRunning", err)
		}
		if s := b.Stats(); s.Reconnects < uint64(conns*(c+1)) || s.Outages != uint64(c+1) {
			t.Errorf("after restart %d: Reconnects %d, Outages %d", c+1, s.Reconnects, s.Outages)
		}
		after := uint32(2)
		if c == cycles-1 {
			after = 3
		}
		refusedAtRestart := st.refused.Load()
		st.phase.Store(after)
		// Delivery resumes.
		waitFor(t, "delivery after the restart", 10*time.Second, func() bool {
			return handledByPhase[after].Load() >= 2000
		})
		// The one publish that may have been under way when StartServer
		// returned aside, nothing is refused once it has.
		if n := st.refused.Load(); n > refusedAtRestart+1 {
			t.Errorf("%d publishes refused after StartServer returned", n-refusedAtRestart)
		}
	}
	st.halt()
	stopped = true

	s := settledWithLoss(t, b)
	t.Logf("stats %+v (lost in transit %d), disconnects %d", s, s.Lost-s.Refused, b.Disconnects())
	if s.Published+s.Refused != s.Delivered+s.Unroutable+s.Dropped+s.Lost {
		t.Errorf("Published %d + Refused %d != Delivered %d + Unroutable %d + Dropped %d + Lost %d",
			s.Published, s.Refused, s.Delivered, s.Unroutable, s.Dropped, s.Lost)
	}
	if s.Unroutable != 0 || s.Dropped != 0 {
		t.Errorf("unexpected Unroutable/Dropped: %+v", s)
	}
	if s.Lost == 0 || s.Refused == 0 || s.Lost < s.Refused {
		t.Errorf("Lost %d, Refused %d: want Lost >= Refused > 0", s.Lost, s.Refused)
	}
	if s.Outages != cycles || s.Reconnects < cycles*conns {
		t.Errorf("Outages %d (want %d), Reconnects %d (want >= %d)", s.Outages, cycles, s.Reconnects, cycles*conns)
	}
	if b.Disconnects() < cycles*conns {
		t.Errorf("Disconnects %d, want >= %d", b.Disconnects(), cycles*conns)
	}
	// The bus's counters match what the publisher and the handlers saw.
	if s.Published != st.ok.Load() || s.Refused != st.refused.Load() || s.PublishErrs != s.Refused || st.otherErr.Load() != 0 {
		t.Errorf("publisher: ok %d refused %d other %d; bus %+v", st.ok.Load(), st.refused.Load(), st.otherErr.Load(), s)
	}
	if s.Delivered != handled.Load() {
		t.Errorf("Delivered %d, handlers ran %d times", s.Delivered, handled.Load())
	}
	// Nothing sent after the last restart was lost. (Messages sent between
	// the outages may have been in transit when the second one began.)
	if got, sent := handledByPhase[3].Load(), st.okByPhase[3].Load(); got != sent {
		t.Errorf("after the last restart: %d of %d delivered", got, sent)
	}
}

// TestNATSOutageKeepsReceived: messages a connection has received before the
// outage but not yet handed to the (blocked) handler are delivered after it,
// not counted lost.
func TestNATSOutageKeepsReceived(t *testing.T) {
	const n = 100
	b := openTest(t, NATSOptions{Connections: 1})
	release := make(chan struct{})
	var got atomic.Int64
	if err := b.Register(1, func(Address, []byte) {
		<-release
		got.Add(1)
	}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := b.Publish(1, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil { // all n are now at the client
		t.Fatal(err)
	}
	if err := b.StopServer(); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(1, []byte("y")); !errors.Is(err, ErrDisconnected) {
		t.Errorf("Publish during outage = %v, want ErrDisconnected", err)
	}
	// A refused Publish does not allocate either (it runs for every
	// message of an outage).
	const extra = 50
	if allocs := testing.AllocsPerRun(extra-1, func() { _ = b.Publish(1, []byte("z")) }); allocs != 0 {
		t.Errorf("refused Publish allocates %.1f times", allocs)
	}
	close(release)
	waitFor(t, "delivery during the outage", 10*time.Second, func() bool { return got.Load() == n })
	s := settledWithLoss(t, b)
	want := Stats{Published: n, Delivered: n, PublishErrs: 1 + extra, Refused: 1 + extra, Lost: 1 + extra, Outages: 1, Transport: n}
	if s != want {
		t.Errorf("Stats = %+v, want %+v", s, want)
	}
	// Close during the outage: no flush, no error, counts kept.
	if err := b.Close(); err != nil {
		t.Errorf("Close during outage: %v", err)
	}
	if s := b.Stats(); s != want {
		t.Errorf("Stats after Close = %+v, want %+v", s, want)
	}
	if err := b.StartServer(); !errors.Is(err, ErrClosed) {
		t.Errorf("StartServer after Close = %v, want ErrClosed", err)
	}
	if err := b.StopServer(); !errors.Is(err, ErrClosed) {
		t.Errorf("StopServer after Close = %v, want ErrClosed", err)
	}
}

// TestNATSOutageLostInTransit stops the server in the middle of a burst from
// two publishers, without a Flush: messages accepted by Publish that had not
// reached the connection when the server stopped (in nats.go's write buffer
// or the server's) must show up in Lost, so that every message is accounted
// for; and the accounting carries on exactly after the restart.
func TestNATSOutageLostInTransit(t *testing.T) {
	const n = 20000
	b := openTest(t, NATSOptions{Connections: 2})
	var got atomic.Int64
	for a := range Address(2) {
		if err := b.Register(a, func(Address, []byte) { got.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	payload := make([]byte, 512)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range n / 2 {
				if err := b.Publish(Address((w+i)%2), payload); err != nil && !errors.Is(err, ErrDisconnected) {
					t.Error(err)
					return
				}
			}
		})
	}
	if err := b.StopServer(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s := settledWithLoss(t, b)
	t.Logf("stats %+v, lost in transit %d", s, s.Lost-s.Refused)
	if s.Published+s.Refused != n || s.Delivered != uint64(got.Load()) {
		t.Errorf("Stats = %+v, handlers ran %d times", s, got.Load())
	}
	if err := b.StartServer(); err != nil {
		t.Fatal(err)
	}
	// After the restart the accounting carries on from the settled state.
	for i := range 100 {
		if err := b.Publish(Address(i%2), payload); err != nil {
			t.Fatal(err)
		}
	}
	s2 := settledWithLoss(t, b)
	if s2.Lost != s.Lost || s2.Delivered != s.Delivered+100 {
		t.Errorf("after restart: %+v, before %+v", s2, s)
	}
}

// TestNATSServerRestartListen restarts a listening embedded server: it comes
// back on the same URL, and a second bus connected to it through that URL
// (an external server for that bus, which cannot stop it) reconnects.
func TestNATSServerRestartListen(t *testing.T) {
	a := openTest(t, NATSOptions{Listen: true, Connections: 2})
	ext := openTest(t, NATSOptions{URL: a.ClientURL(), Connections: 2})
	if err := ext.StopServer(); !errors.Is(err, ErrExternalServer) {
		t.Errorf("StopServer on an external-URL bus = %v, want ErrExternalServer", err)
	}
	if err := ext.StartServer(); !errors.Is(err, ErrExternalServer) {
		t.Errorf("StartServer on an external-URL bus = %v, want ErrExternalServer", err)
	}
	url := a.ClientURL()
	if err := a.StopServer(); err != nil {
		t.Fatal(err)
	}
	if err := a.StartServer(); err != nil {
		t.Fatal(err)
	}
	if a.ClientURL() != url || a.Server().ClientURL() != url {
		t.Errorf("URL after restart %q (server %q), want %q", a.ClientURL(), a.Server().ClientURL(), url)
	}
	// The external bus reconnects by TCP on its own schedule.
	waitFor(t, "external bus to reconnect", 10*time.Second, func() bool {
		return ext.Stats().Reconnects >= uint64(ext.Connections())
	})
	if err := ext.Flush(); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	if err := a.Register(3, func(Address, []byte) { got.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := ext.Publish(3, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if err := ext.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delivery from the external bus after the restart", 10*time.Second, func() bool { return got.Load() == 1 })
	if s := ext.Stats(); s.Outages != 0 || s.Lost != 0 {
		t.Errorf("external bus Stats = %+v", s)
	}
}
