package bus

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNATSCutConnectionInTheBooks: the embedded server cuts a connection
// off in the middle of a stream of messages (as it does a slow consumer or
// a stale connection), nats.go reconnects, and the stream goes on. What
// the cut connection held — the server's outbound buffer for it, the
// client's unwritten buffer — is gone; once the bus is closed every
// message is accounted for: Unsettled is 0 with the loss counted in
// LostOnDisconnect, and Cuts says one connection was cut. A cut that
// happens to catch nothing in flight loses nothing, so the cut is tried
// again (on a fresh bus) until one loses messages, and the books must
// close every time.
func TestNATSCutConnectionInTheBooks(t *testing.T) {
	deadline := time.Now().Add(30 * time.Second)
	for try := 1; ; try++ {
		st := cutOnce(t)
		t.Logf("try %d: %+v", try, st)
		if t.Failed() {
			return
		}
		if st.LostOnDisconnect > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cut lost a message in %d tries: the test no longer shows the reckoning", try)
		}
	}
}

// cutOnce streams messages over a one-connection bus, has the server cut
// the connection off mid-stream, streams on after the reconnect, closes
// the bus and checks its books.
func cutOnce(t *testing.T) Stats {
	b, err := OpenNATS(NATSOptions{Run: "cut", Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var got atomic.Uint64
	if err := b.Register(7, func(Address, []byte) { got.Add(1) }); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	payload := make([]byte, 512)
	wg.Go(func() {
		for !stop.Load() {
			if err := b.Publish(7, payload); err != nil && !errors.Is(err, ErrDisconnected) {
				t.Error(err)
				return
			}
		}
	})
	waitFor(t, "a stream of deliveries", 10*time.Second, func() bool { return got.Load() > 5000 })
	s := b.shards[0]
	cid, err := s.nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	before := s.reconnects.Load()
	if err := b.Server().DisconnectClientByID(cid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reconnect", 10*time.Second, func() bool { return s.reconnects.Load() > before })
	after := got.Load()
	waitFor(t, "deliveries after the reconnect", 10*time.Second, func() bool { return got.Load() > after+1000 })
	stop.Store(true)
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st := b.Stats()
	if st.Unsettled() != 0 || st.Delivered != got.Load() || st.Cuts != 1 {
		t.Errorf("after Close: unsettled %d, delivered %d (handlers ran %d times), cuts %d; %+v", st.Unsettled(), st.Delivered, got.Load(), st.Cuts, st)
	}
	return st
}
