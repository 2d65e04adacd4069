package slow

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
)

// arrivals returns when each message to to reached the inner bus.
func arrivals(in *bustest.Bus, to bus.Address) []time.Duration {
	var at []time.Duration
	for _, m := range in.SentTo(to) {
		at = append(at, m.At)
	}
	return at
}

func TestServiceQueuesMessagesToSlowPeers(t *testing.T) {
	c := bustest.NewClock()
	in := bustest.NewBus(bustest.WithClock(c))
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
	c.Run()
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	for i, at := range want {
		if arrivals(in, 2)[i] != at {
			t.Fatalf("slow peer served at %v, want %v", arrivals(in, 2), want)
		}
	}
	if got := arrivals(in, 1); len(got) != 1 || got[0] != 0 {
		t.Fatalf("fast peer got %v, want once at 0", got)
	}
	st := s.Faults()
	if st.Pending != 0 || st.Wait != 600*time.Millisecond || st.MaxWait != 300*time.Millisecond {
		t.Fatalf("after serving: %+v", st)
	}
	// Mid-run: nobody slow any more.
	s.Set(nil, 0)
	_ = s.Publish(2, buf)
	if got := arrivals(in, 2); len(got) != 4 || got[3] != c.Now() {
		t.Fatalf("after Set(nil, 0) the peer is still slow: %v", got)
	}
}

// TestServiceCopiesHeldMessages: a held message reaches the inner bus with
// the bytes it was published with, though the publisher reused its buffer
// meanwhile (TestServiceQueuesMessagesToSlowPeers reuses it too, but only
// looks at the times).
func TestServiceCopiesHeldMessages(t *testing.T) {
	c := bustest.NewClock()
	in := bustest.NewBus(bustest.WithClock(c))
	s := New(in, c)
	s.Set(func(a bus.Address) bool { return a == 2 }, 100*time.Millisecond)
	buf := []byte("hello")
	if err := s.Publish(2, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	c.Run()
	if got := in.SentTo(2); len(got) != 1 || string(got[0].Data) != "hello" || got[0].At != 100*time.Millisecond {
		t.Fatalf("inner bus got %+v, want \"hello\" once at 100ms", got)
	}
}

// TestServicePassesBatchesOn: with bus.fanout batched the messages to
// peers that are not slow go on as one batch at once, those to slow peers
// are held as Publish holds them; with nobody slow the whole batch passes.
func TestServicePassesBatchesOn(t *testing.T) {
	c := bustest.NewClock()
	in := bustest.NewBatchBus(bustest.WithClock(c))
	s := New(in, c)
	msgs := []bus.Message{{To: 1, Data: []byte("a")}, {To: 2, Data: []byte("b")}, {To: 3, Data: []byte("c")}}
	if err := s.PublishBatch(msgs); err != nil || len(in.Batches()) != 1 || in.Batches()[0] != 3 {
		t.Fatalf("nobody slow: batches %v, %v", in.Batches(), err)
	}
	s.Set(func(a bus.Address) bool { return a == 2 }, time.Second)
	if err := s.PublishBatch(msgs); err != nil || len(in.Batches()) != 2 || in.Batches()[1] != 2 {
		t.Fatalf("peer 2 slow: batches %v, %v", in.Batches(), err)
	}
	if st := s.Faults(); st.Pending != 1 || st.Served != 1 {
		t.Fatalf("held: %+v", st)
	}
	c.Run()
	if got := arrivals(in.Bus, 2); len(got) != 2 || got[1] != time.Second {
		t.Fatalf("slow peer got %v, want at 0 and after its service at 1s", got)
	}
}
