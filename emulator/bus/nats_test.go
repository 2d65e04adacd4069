package bus

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// waitFor polls cond until it holds or d elapses.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", d, what)
		case <-tick.C:
		}
	}
}

func openTest(t testing.TB, opts NATSOptions) *NATSBus {
	t.Helper()
	if opts.Run == "" {
		opts.Run = "test"
	}
	b, err := OpenNATS(opts)
	if err != nil {
		t.Fatalf("OpenNATS: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// settled waits until every published message has been delivered, found
// unroutable or dropped.
func settled(t testing.TB, b *NATSBus) Stats {
	t.Helper()
	if err := b.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	var st Stats
	waitFor(t, "published messages to settle", 5*time.Second, func() bool {
		st = b.Stats()
		return st.Delivered+st.Unroutable+st.Dropped == st.Published
	})
	return st
}

func TestNATSRoundTripManyAddresses(t *testing.T) {
	const (
		addrs   = 1000
		perAddr = 3
	)
	b := openTest(t, NATSOptions{Connections: 4})
	if b.Server() == nil || !b.Server().Running() {
		t.Fatal("embedded server not running")
	}
	if b.ClientURL() != "" {
		t.Errorf("ClientURL() = %q without Listen, want empty", b.ClientURL())
	}
	// got[a][i] counts deliveries of message i to address a.
	var mu sync.Mutex
	got := make(map[Address][perAddr]int)
	var wrong atomic.Int64
	for a := range Address(addrs) {
		err := b.Register(a, func(to Address, data []byte) {
			want := fmt.Sprintf("to=%d i=", a)
			if to != a || !bytes.HasPrefix(data, []byte(want)) {
				wrong.Add(1)
				return
			}
			i, err := strconv.Atoi(string(data[len(want):]))
			if err != nil || i < 0 || i >= perAddr {
				wrong.Add(1)
				return
			}
			mu.Lock()
			c := got[a]
			c[i]++
			got[a] = c
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range perAddr {
		for a := range Address(addrs) {
			if err := b.Publish(a, fmt.Appendf(nil, "to=%d i=%d", a, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := settled(t, b)
	want := Stats{Published: addrs * perAddr, Delivered: addrs * perAddr, Transport: addrs * perAddr}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d messages went to the wrong handler or had wrong bytes", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != addrs {
		t.Errorf("%d addresses received messages, want %d", len(got), addrs)
	}
	for a, c := range got {
		for i, n := range c {
			if n != 1 {
				t.Errorf("address %d message %d delivered %d times", a, i, n)
			}
		}
	}
	if s := b.Subject(1003); s != "gb.test.3.1003" {
		t.Errorf("Subject(1003) = %q", s)
	}
}

func TestNATSUnroutableUnregisterReplace(t *testing.T) {
	b := openTest(t, NATSOptions{Connections: 2})
	var gotA, gotB atomic.Int64
	if err := b.Register(1, func(Address, []byte) { gotA.Add(1) }); err != nil {
		t.Fatal(err)
	}

	// Nobody at 2 (same shard as... nothing) and 3 (same shard as 1).
	for _, to := range []Address{2, 3} {
		if err := b.Publish(to, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	st := settled(t, b)
	if st.Unroutable != 2 || st.Delivered != 0 || gotA.Load() != 0 {
		t.Fatalf("after publishing to unregistered addresses: %+v, A got %d", st, gotA.Load())
	}

	if err := b.Publish(1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	st = settled(t, b)
	if st.Delivered != 1 || gotA.Load() != 1 {
		t.Fatalf("after publishing to 1: %+v, A got %d", st, gotA.Load())
	}

	// Re-register replaces.
	if err := b.Register(1, func(Address, []byte) { gotB.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	st = settled(t, b)
	if st.Delivered != 2 || gotA.Load() != 1 || gotB.Load() != 1 {
		t.Fatalf("after re-register: %+v, A got %d, B got %d", st, gotA.Load(), gotB.Load())
	}

	// Unregister stops delivery.
	b.Unregister(1)
	b.Unregister(1) // twice is fine
	if err := b.Publish(1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	st = settled(t, b)
	want := Stats{Published: 5, Delivered: 2, Unroutable: 3, Transport: 5}
	if st != want || gotA.Load() != 1 || gotB.Load() != 1 {
		t.Fatalf("after unregister: %+v (want %+v), A got %d, B got %d", st, want, gotA.Load(), gotB.Load())
	}

	if err := b.Register(7, nil); err == nil {
		t.Error("Register with nil handler succeeded")
	}
}

func TestNATSConcurrentRegisterPublish(t *testing.T) {
	const (
		workers = 6
		addrs   = 200 // per worker
		rounds  = 300
	)
	b := openTest(t, NATSOptions{Connections: 3})
	var wrongAddr atomic.Int64
	handler := func(want Address) Handler {
		return func(to Address, data []byte) {
			if to != want || len(data) != 8 || Address(uint64(data[0])|uint64(data[1])<<8) != want&0xffff {
				wrongAddr.Add(1)
			}
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			base := Address(w * addrs)
			msg := make([]byte, 8)
			for range rounds {
				a := base + Address(rng.IntN(addrs))
				switch rng.IntN(3) {
				case 0:
					if err := b.Register(a, handler(a)); err != nil {
						t.Error(err)
						return
					}
				case 1:
					b.Unregister(a)
				}
				// Publish to any worker's address, registered or not.
				for range 5 {
					to := Address(rng.IntN(workers * addrs))
					msg[0], msg[1] = byte(to), byte(to>>8)
					if err := b.Publish(to, msg); err != nil {
						t.Error(err)
						return
					}
				}
				if rng.IntN(50) == 0 {
					_ = b.Stats()
				}
			}
		})
	}
	wg.Wait()
	st := settled(t, b)
	if st.Published != workers*rounds*5 || st.Dropped != 0 || st.PublishErrs != 0 {
		t.Errorf("Stats = %+v", st)
	}
	if st.Delivered == 0 || st.Unroutable == 0 {
		t.Errorf("expected both deliveries and unroutables, got %+v", st)
	}
	if n := wrongAddr.Load(); n != 0 {
		t.Errorf("%d messages delivered to the wrong handler", n)
	}
}

func TestNATSClose(t *testing.T) {
	b, err := OpenNATS(NATSOptions{Run: "close", Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv := b.Server()

	// Keep deliveries in flight while closing: no handler may run after
	// Close returns.
	var closed atomic.Bool
	var late, delivered atomic.Int64
	for a := range Address(16) {
		if err := b.Register(a, func(Address, []byte) {
			if closed.Load() {
				late.Add(1)
			}
			for range 20 { // slow delivery down so Close finds a backlog
				runtime.Gosched()
			}
			delivered.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20000 {
		if err := b.Publish(Address(i%16), []byte("payload")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	closed.Store(true)
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := late.Load(); n != 0 {
		t.Errorf("%d handler calls after Close returned", n)
	}

	if err := b.Publish(1, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	if err := b.Register(1, func(Address, []byte) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Register after Close = %v, want ErrClosed", err)
	}
	b.Unregister(1) // no panic
	if err := b.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v, want ErrClosed", err)
	}
	if srv.Running() {
		t.Error("embedded server still running after Close")
	}
	if n := srv.NumClients(); n != 0 {
		t.Errorf("embedded server has %d clients after Close", n)
	}
	st := b.Stats()
	if st.Published != 20000 || st.PublishErrs != 1 || st.Delivered != uint64(delivered.Load()) {
		t.Errorf("Stats after Close = %+v (handlers ran %d times)", st, delivered.Load())
	}
	// What the subscriptions still held when Close stopped delivery is
	// counted, one by one, as discarded: the books close.
	if st.Discarded == 0 || st.Delivered+st.Discarded != 20000 || st.Unsettled() != 0 {
		t.Errorf("Stats after Close = %+v: want delivered + discarded = 20000 published, some discarded, Unsettled 0 (got %d)", st, st.Unsettled())
	}
	t.Logf("delivered %d of 20000 before Close, %d discarded", st.Delivered, st.Discarded)
}

// TestNATSCloseWaitsForHandler: Close returns only after a handler call in
// progress has returned.
func TestNATSCloseWaitsForHandler(t *testing.T) {
	b, err := OpenNATS(NATSOptions{Run: "closewait", Connections: 2})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var handlerDone atomic.Bool
	if err := b.Register(1, func(Address, []byte) {
		close(entered)
		<-release
		handlerDone.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(1, nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	closeDone := make(chan bool)
	go func() {
		_ = b.Close()
		closeDone <- handlerDone.Load()
	}()
	waitFor(t, "Close to start", 5*time.Second, b.closed.Load)
	close(release)
	if !<-closeDone {
		t.Error("Close returned while a handler was running")
	}
}

// startServer starts a standalone nats-server listening on 127.0.0.1.
func startServer(t testing.TB) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

func TestNATSExternalURL(t *testing.T) {
	srv := startServer(t)
	b := openTest(t, NATSOptions{URL: srv.ClientURL(), Connections: 4})
	if b.Server() != nil {
		t.Error("Server() non-nil for an external URL")
	}
	if b.ClientURL() != srv.ClientURL() {
		t.Errorf("ClientURL() = %q, want %q", b.ClientURL(), srv.ClientURL())
	}
	var sum atomic.Int64
	for a := range Address(100) {
		if err := b.Register(a, func(to Address, data []byte) {
			if string(data) == strconv.FormatUint(uint64(to), 10) {
				sum.Add(int64(to))
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for a := range Address(100) {
		if err := b.Publish(a, strconv.AppendUint(nil, uint64(a), 10)); err != nil {
			t.Fatal(err)
		}
	}
	st := settled(t, b)
	if st != (Stats{Published: 100, Delivered: 100, Transport: 100}) || sum.Load() != 99*100/2 {
		t.Errorf("Stats = %+v, sum = %d", st, sum.Load())
	}
	if got := srv.NumClients(); got != 4 {
		t.Errorf("server has %d clients, want 4", got)
	}
}

// TestNATSListenTwoBuses joins a second bus to a listening embedded server.
// Both buses of a run subscribe to all its shards, so the one without a
// handler counts the message as unroutable.
func TestNATSListenTwoBuses(t *testing.T) {
	a := openTest(t, NATSOptions{Listen: true, Connections: 4})
	if a.ClientURL() == "" {
		t.Fatal("ClientURL() empty with Listen")
	}
	// Different Connections: delivery uses the address's home shard.
	b := openTest(t, NATSOptions{URL: a.ClientURL(), Connections: 3})
	var got atomic.Int64
	for addr := range Address(12) {
		if err := a.Register(addr, func(Address, []byte) { got.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	for addr := range Address(12) {
		if err := b.Publish(addr, []byte("hi")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	// b publishes on shards addr%3, which a subscribes to only for the
	// shard numbers it has (0..3): all 12 arrive at a.
	waitFor(t, "delivery at a", 5*time.Second, func() bool { return a.Stats().Delivered == 12 })
	waitFor(t, "unroutable at b", 5*time.Second, func() bool { return b.Stats().Unroutable == 12 })
	if got.Load() != 12 {
		t.Errorf("handlers ran %d times, want 12", got.Load())
	}
}

func TestNATSSlowConsumer(t *testing.T) {
	const n = 2000
	b := openTest(t, NATSOptions{Connections: 1, PendingMsgs: 10})
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	if err := b.Register(0, func(Address, []byte) {
		once.Do(func() { close(entered) })
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	<-entered // the handler is now blocked
	for range n - 1 {
		if err := b.Publish(0, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	// Flush: every message has reached the client, so drops are final.
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Dropped > 0", 5*time.Second, func() bool { return b.Stats().Dropped > 0 })
	waitFor(t, "slow consumer event", 5*time.Second, func() bool { return b.SlowConsumerEvents() > 0 })
	close(release)
	st := settled(t, b)
	if st.Published != n || st.Dropped < n-20 || st.Delivered < 1 || st.Unroutable != 0 {
		t.Errorf("Stats = %+v", st)
	}
	t.Logf("stats %+v, slow consumer events %d", st, b.SlowConsumerEvents())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if after := b.Stats(); after.Dropped != st.Dropped {
		t.Errorf("Dropped after Close = %d, want %d", after.Dropped, st.Dropped)
	}
}

func TestNATSOptionsValidation(t *testing.T) {
	for _, o := range []NATSOptions{
		{},
		{Run: "a.b"},
		{Run: "a*"},
		{Run: "a b"},
		{Run: "x123456789012345678901234567890123"},
		{Run: "ok", Connections: -1},
		{Run: "ok", Connections: MaxConnections + 1},
		{Run: "ok", URL: "nats://127.0.0.1:1", Listen: true},
	} {
		if b, err := OpenNATS(o); err == nil {
			b.Close()
			t.Errorf("OpenNATS(%+v) succeeded", o)
		}
	}
	b := openTest(t, NATSOptions{Run: "Ok_run-1"})
	if b.Connections() != DefaultConnections {
		t.Errorf("Connections() = %d, want %d", b.Connections(), DefaultConnections)
	}
}

func TestParseAddr(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"007", 7, true},
		{"1234567890123456789", 1234567890123456789, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"123456789012345678901", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"12a", 0, false},
		{"*", 0, false},
	} {
		got, ok := parseAddr(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseAddr(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestNATSForeignSubject checks dispatch of messages published by a plain
// NATS client: a malformed address token is unroutable, not a crash.
func TestNATSForeignSubject(t *testing.T) {
	b := openTest(t, NATSOptions{Listen: true, Connections: 2})
	var got atomic.Int64
	if err := b.Register(5, func(to Address, data []byte) {
		if to == 5 && string(data) == "ok" {
			got.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(b.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, subj := range []string{b.Subject(5), "gb.test.1.x5", "gb.test.0.5", "gb.test.1.99999999999999999999"} {
		if err := nc.Publish(subj, []byte("ok")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "foreign messages", 5*time.Second, func() bool {
		st := b.Stats()
		return st.Delivered == 2 && st.Unroutable == 2
	})
	if got.Load() != 2 {
		t.Errorf("handler ran %d times, want 2", got.Load())
	}
}

// BenchmarkNATSBusPublishDeliver publishes b.N 100-byte messages from one
// goroutine round-robin to 1000 addresses over 8 connections and waits until
// all are delivered.
func BenchmarkNATSBusPublishDeliver(b *testing.B) {
	const addrs = 1000
	bus, err := OpenNATS(NATSOptions{Run: "bench", Connections: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	var delivered atomic.Int64
	for a := range Address(addrs) {
		if err := bus.Register(a, func(Address, []byte) { delivered.Add(1) }); err != nil {
			b.Fatal(err)
		}
	}
	payload := make([]byte, 100)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := bus.Publish(Address(i%addrs), payload); err != nil {
			b.Fatal(err)
		}
	}
	want := int64(b.N)
	waitFor(b, "all delivered", time.Minute, func() bool {
		return delivered.Load()+int64(bus.Stats().Dropped) >= want
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if st := bus.Stats(); st.Dropped != 0 || st.Delivered != uint64(b.N) {
		b.Fatalf("Stats = %+v", st)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

// BenchmarkNATSBusPublish measures the publish path alone (nats.go buffers;
// delivery runs concurrently and is not waited for).
func BenchmarkNATSBusPublish(b *testing.B) {
	bus, err := OpenNATS(NATSOptions{Run: "bench", Connections: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	payload := make([]byte, 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := bus.Publish(Address(i%1000), payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatch measures the per-message cost of the bus's own dispatch
// (subject parsing, handler lookup, delivery gate) without NATS.
func BenchmarkDispatch(b *testing.B) {
	bus := &NATSBus{n: 8}
	for k := range 8 {
		bus.shards = append(bus.shards, &shard{b: bus, idx: k, prefix: "gb.bench." + strconv.Itoa(k) + ".", handlers: map[Address]Handler{}})
	}
	msgs := make([]*nats.Msg, 1000)
	for a := range Address(1000) {
		s := bus.shards[uint64(a)%8]
		s.handlers[a] = func(Address, []byte) {}
		msgs[a] = &nats.Msg{Subject: bus.Subject(a), Data: []byte("x")}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m := msgs[i%1000]
		bus.shards[uint64(i%1000)%8].onMsg(m)
	}
}

// TestNATSSubscribeOwnShards: two buses of one run, each subscribed only
// to its own shards (NATSOptions.Subscribe, as a run's workers are), get
// every message once — none counted unroutable at the other — whoever
// publishes it.
func TestNATSSubscribeOwnShards(t *testing.T) {
	srv := startServer(t)
	const conns = 4
	own := func(w int) func(int) bool { return func(k int) bool { return k%2 == w } }
	buses := []*NATSBus{
		openTest(t, NATSOptions{URL: srv.ClientURL(), Connections: conns, Subscribe: own(0)}),
		openTest(t, NATSOptions{URL: srv.ClientURL(), Connections: conns, Subscribe: own(1)}),
	}
	var got [2]atomic.Int64
	for addr := range Address(20) {
		w := int(addr%conns) % 2
		if err := buses[w].Register(addr, func(Address, []byte) { got[w].Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range buses { // each publishes to every address
		for addr := range Address(20) {
			if err := b.Publish(addr, []byte("hi")); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "40 deliveries", 5*time.Second, func() bool { return buses[0].Stats().Delivered+buses[1].Stats().Delivered == 40 })
	for w, b := range buses {
		if st := b.Stats(); st.Unroutable != 0 || st.Delivered != 20 || got[w].Load() != 20 {
			t.Errorf("bus %d: %+v, handlers ran %d times; want 20 delivered, 0 unroutable", w, st, got[w].Load())
		}
	}
	for w, b := range buses {
		for k, s := range b.shards {
			if (s.sub != nil) != own(w)(k) {
				t.Errorf("bus %d shard %d: subscribed %v, want %v", w, k, s.sub != nil, own(w)(k))
			}
		}
	}
}
