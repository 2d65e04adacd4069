package bus

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNATSPublishBatch publishes batches that span every shard: each
// message reaches its own handler with its own bytes, counted one by one,
// with one NATS message per shard of a batch (a lone message of a shard
// as Publish sends it).
func TestNATSPublishBatch(t *testing.T) {
	const (
		addrs   = 40
		batches = 50
		conns   = 4
	)
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			b := openTest(t, NATSOptions{Connections: conns, Batched: batched})
			var (
				mu  sync.Mutex
				got = map[string]int{}
			)
			for a := range Address(addrs) {
				if err := b.Register(a, func(to Address, data []byte) {
					mu.Lock()
					got[fmt.Sprintf("%d:%s", to, data)]++
					mu.Unlock()
				}); err != nil {
					t.Fatal(err)
				}
			}
			// Batch i goes to addresses i%addrs ... (i%addrs)+9 (mod addrs),
			// plus one unregistered address: 10 shards-spread messages.
			want := map[string]int{}
			var msgs int
			for i := range batches {
				var batch []Message
				for j := range 10 {
					to := Address((i + j) % addrs)
					data := fmt.Appendf(nil, "b%d-m%d", i, j)
					batch = append(batch, Message{To: to, Data: data})
					want[fmt.Sprintf("%d:%s", to, data)]++
				}
				batch = append(batch, Message{To: addrs + 1, Data: []byte("nobody")})
				msgs += len(batch)
				if err := b.PublishBatch(batch); err != nil {
					t.Fatal(err)
				}
			}
			st := settled(t, b)
			if st.Published != uint64(msgs) || st.Delivered != uint64(msgs-batches) || st.Unroutable != batches || st.Unsettled() != 0 {
				t.Errorf("Stats = %+v, want %d published, %d delivered, %d unroutable", st, msgs, msgs-batches, batches)
			}
			// Each batch touches every shard: 10 consecutive addresses and
			// addrs+1 cover all 4; with batching, one NATS message each.
			wantTransport := uint64(msgs)
			if batched {
				wantTransport = batches * conns
			}
			if st.Transport != wantTransport {
				t.Errorf("Transport = %d, want %d", st.Transport, wantTransport)
			}
			mu.Lock()
			defer mu.Unlock()
			for k, n := range want {
				if got[k] != n {
					t.Errorf("message %s delivered %d times, want %d", k, got[k], n)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d distinct messages delivered, want %d", len(got), len(want))
			}
		})
	}
}

// TestNATSBatchSlowConsumer drops frames at a blocked handler: once a
// later frame shows the gap, Dropped counts the dropped frames' messages
// one by one and the invariant holds in messages.
func TestNATSBatchSlowConsumer(t *testing.T) {
	const (
		frames   = 300
		perFrame = 5
	)
	b := openTest(t, NATSOptions{Connections: 1, PendingMsgs: 10, Batched: true})
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	var handled atomic.Uint64
	for a := range Address(perFrame) {
		if err := b.Register(a, func(Address, []byte) {
			once.Do(func() { close(entered) })
			<-release
			handled.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	batch := make([]Message, perFrame)
	for i := range batch {
		batch[i] = Message{To: Address(i), Data: make([]byte, 100)}
	}
	if err := b.PublishBatch(batch); err != nil {
		t.Fatal(err)
	}
	<-entered
	for range frames - 1 {
		if err := b.PublishBatch(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "drops", 5*time.Second, func() bool { return b.Stats().Dropped > 0 })
	close(release)
	waitFor(t, "the subscription to drain", 5*time.Second, func() bool {
		n, _, err := b.shards[0].sub.Pending()
		return err == nil && n == 0
	})
	// One more frame after the drops reveals the gap.
	if err := b.PublishBatch(batch); err != nil {
		t.Fatal(err)
	}
	st := settledWithLoss(t, b)
	total := uint64((frames + 1) * perFrame)
	if st.Published != total || st.Transport != frames+1 || st.Delivered != handled.Load() || st.Dropped%perFrame != 0 || st.Dropped == 0 {
		t.Errorf("Stats = %+v (handled %d), want %d published in %d NATS messages, drops a multiple of %d", st, handled.Load(), total, frames+1, perFrame)
	}
	t.Logf("stats %+v", st)
}

// TestNATSBatchOutageLostInTransit stops the server under a stream of
// batches: the frames lost in transit count message by message in Lost,
// the gap they leave is not counted again as Dropped, and every message is
// accounted for.
func TestNATSBatchOutageLostInTransit(t *testing.T) {
	const n = 4000
	b := openTest(t, NATSOptions{Connections: 2, Batched: true})
	var got atomic.Int64
	for a := range Address(6) {
		if err := b.Register(a, func(Address, []byte) { got.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	payload := make([]byte, 256)
	batch := make([]Message, 6)
	for i := range batch {
		batch[i] = Message{To: Address(i), Data: payload}
	}
	var wg sync.WaitGroup
	var publishErrs atomic.Uint64
	wg.Go(func() {
		for range n {
			if err := b.PublishBatch(batch); err != nil {
				if !errors.Is(err, ErrDisconnected) {
					t.Error(err)
					return
				}
				publishErrs.Add(1)
			}
		}
	})
	waitFor(t, "deliveries", 5*time.Second, func() bool { return got.Load() > 600 })
	if err := b.StopServer(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s := settledWithLoss(t, b)
	t.Logf("stats %+v, lost in transit %d", s, s.Lost-s.Refused)
	if s.Published+s.Refused != n*6 || s.Delivered != uint64(got.Load()) || s.Dropped != 0 {
		t.Errorf("Stats = %+v, handlers ran %d times", s, got.Load())
	}
	if err := b.StartServer(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := b.PublishBatch(batch); err != nil {
			t.Fatal(err)
		}
	}
	s2 := settledWithLoss(t, b)
	if s2.Lost != s.Lost || s2.Delivered != s.Delivered+60 || s2.Dropped != 0 {
		t.Errorf("after restart: %+v, before %+v", s2, s)
	}
}

// TestParseFrame: a frame reads back as written; every truncation and a
// few corruptions are rejected.
func TestParseFrame(t *testing.T) {
	msgs := []Message{{To: 7, Data: []byte("seven")}, {To: 1 << 40, Data: nil}, {To: 3, Data: []byte("x")}}
	h := frameHeader{publisher: 42, seq: 9, before: 100}
	frame := appendFrame(nil, h, msgs, []int{0, 1, 2})
	got, body, err := parseFrame(frame)
	if err != nil || got.publisher != 42 || got.seq != 9 || got.before != 100 || got.count != 3 {
		t.Fatalf("parseFrame = %+v, %v", got, err)
	}
	for i := range 3 {
		to, data, rest, ok := nextEntry(body)
		if !ok || to != msgs[i].To || !bytes.Equal(data, msgs[i].Data) {
			t.Errorf("entry %d = %d %q %v, want %d %q", i, to, data, ok, msgs[i].To, msgs[i].Data)
		}
		body = rest
	}
	for n := range len(frame) {
		if _, _, err := parseFrame(frame[:n]); err == nil {
			t.Errorf("truncated to %d bytes: accepted", n)
		}
	}
	for _, bad := range [][]byte{
		append([]byte{2}, frame[1:]...),          // version
		append(frame[:len(frame):len(frame)], 0), // trailing byte
		appendFrame(nil, h, msgs, nil),           // no entries
	} {
		if _, _, err := parseFrame(bad); err == nil {
			t.Errorf("%x: accepted", bad)
		}
	}
}

// FuzzParseFrame: parsing never panics, and whatever it accepts walks to
// the end in exactly count entries and re-encodes to the same bytes.
func FuzzParseFrame(f *testing.F) {
	f.Add(appendFrame(nil, frameHeader{publisher: 1, seq: 1}, []Message{{To: 1, Data: []byte("a")}, {To: 2, Data: []byte("bc")}}, []int{0, 1}))
	f.Add([]byte{frameVersion, 0, 0, 0, 1, 0, 0})
	f.Add([]byte{frameVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, err := parseFrame(data)
		if err != nil {
			return
		}
		var msgs []Message
		var idx []int
		for i := range h.count {
			to, d, rest, ok := nextEntry(body)
			if !ok {
				t.Fatalf("entry %d of an accepted frame unreadable", i)
			}
			msgs, idx, body = append(msgs, Message{To: to, Data: d}), append(idx, i), rest
		}
		if len(body) != 0 {
			t.Fatalf("%d bytes left after %d entries", len(body), h.count)
		}
		h.count = 0
		if re := appendFrame(nil, h, msgs, idx); !bytes.Equal(re, data) {
			// Uvarints may be written non-minimally in data; the
			// re-encoding must then at least parse to the same frame.
			h2, _, err := parseFrame(re)
			if err != nil || h2.publisher != h.publisher || h2.seq != h.seq || h2.before != h.before || h2.count != len(msgs) {
				t.Fatalf("re-encoding %x of %x parses to %+v, %v", re, data, h2, err)
			}
		}
	})
}
