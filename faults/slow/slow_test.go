package slow

import (
	"sort"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// clock is a tiny event loop: a Scheduler whose At runs in time order.
type clock struct {
	now time.Duration
	due []item
}

type item struct {
	at time.Duration
	fn func()
}

func (c *clock) Now() time.Duration { return c.now }
func (c *clock) At(t time.Duration, fn func()) {
	c.due = append(c.due, item{t, fn})
	sort.SliceStable(c.due, func(i, j int) bool { return c.due[i].at < c.due[j].at })
}
func (c *clock) run() {
	for len(c.due) > 0 {
		it := c.due[0]
		c.due = c.due[1:]
		c.now = it.at
		it.fn()
	}
}

// sink records when each message reached the inner bus.
type sink struct {
	bus.Bus
	c   *clock
	got map[bus.Address][]time.Duration
}

func (s *sink) Publish(to bus.Address, _ []byte) error {
	s.got[to] = append(s.got[to], s.c.now)
	return nil
}

func TestServiceQueuesMessagesToSlowPeers(t *testing.T) {
	c := &clock{}
	in := &sink{c: c, got: map[bus.Address][]time.Duration{}}
	s := New(in, c)
	s.Set(func(a bus.Address) bool { return a == 2 }, 100*time.Millisecond)
	buf := []byte("hello")
	for range 3 { // three messages to the slow peer at once, one to a fast one
		if err := s.Publish(2, buf); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Publish(1, buf)
	buf[0] = 'X' // the publisher reuses its buffer: held copies must not change
	if st := s.Faults(); st.Pending != 3 || st.Served != 3 {
		t.Fatalf("before serving: %+v", st)
	}
	c.run()
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	for i, at := range want {
		if in.got[2][i] != at {
			t.Fatalf("slow peer served at %v, want %v", in.got[2], want)
		}
	}
	if len(in.got[1]) != 1 || in.got[1][0] != 0 {
		t.Fatalf("fast peer got %v, want once at 0", in.got[1])
	}
	st := s.Faults()
	if st.Pending != 0 || st.Wait != 600*time.Millisecond || st.MaxWait != 300*time.Millisecond {
		t.Fatalf("after serving: %+v", st)
	}
	// Mid-run: nobody slow any more.
	s.Set(nil, 0)
	_ = s.Publish(2, buf)
	if got := in.got[2]; len(got) != 4 || got[3] != c.now {
		t.Fatalf("after Set(nil, 0) the peer is still slow: %v", got)
	}
}

// batchSink is a sink that also takes batches, recording their sizes.
type batchSink struct {
	sink
	batches []int
}

func (s *batchSink) PublishBatch(msgs []bus.Message) error {
	s.batches = append(s.batches, len(msgs))
	for _, m := range msgs {
		_ = s.Publish(m.To, m.Data)
	}
	return nil
}

// TestServicePassesBatchesOn: with bus.fanout batched the messages to
// peers that are not slow go on as one batch at once, those to slow peers
// are held as Publish holds them; with nobody slow the whole batch passes.
func TestServicePassesBatchesOn(t *testing.T) {
	c := &clock{}
	in := &batchSink{sink: sink{c: c, got: map[bus.Address][]time.Duration{}}}
	s := New(in, c)
	msgs := []bus.Message{{To: 1, Data: []byte("a")}, {To: 2, Data: []byte("b")}, {To: 3, Data: []byte("c")}}
	if err := s.PublishBatch(msgs); err != nil || len(in.batches) != 1 || in.batches[0] != 3 {
		t.Fatalf("nobody slow: batches %v, %v", in.batches, err)
	}
	s.Set(func(a bus.Address) bool { return a == 2 }, time.Second)
	if err := s.PublishBatch(msgs); err != nil || len(in.batches) != 2 || in.batches[1] != 2 {
		t.Fatalf("peer 2 slow: batches %v, %v", in.batches, err)
	}
	if st := s.Faults(); st.Pending != 1 || st.Served != 1 {
		t.Fatalf("held: %+v", st)
	}
	c.run()
	if got := in.got[2]; len(got) != 2 || got[1] != time.Second {
		t.Fatalf("slow peer got %v, want at 0 and after its service at 1s", got)
	}
}
