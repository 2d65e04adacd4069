package sim_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/sim"
)

// TestRecycleCopiesAndReuses: with Recycle the world delivers what was
// published even when the publisher overwrites its buffer at once, and it
// reuses a delivered message's buffer for a later message of its size.
func TestRecycleCopiesAndReuses(t *testing.T) {
	w := sim.New(1, 0)
	w.Recycle()
	if !w.Copies() {
		t.Fatal("Copies() = false after Recycle")
	}
	var got []string
	var seen [][]byte
	w.Register(1, func(_ bus.Address, data []byte) {
		got = append(got, string(data))
		seen = append(seen, data[:0:cap(data)])
	})
	buf := make([]byte, 0, 256)
	for round := range 3 {
		for i := range 4 {
			buf = fmt.Appendf(buf[:0], "round %d message %d %s", round, i, bytes.Repeat([]byte{'x'}, 100*i))
			if err := w.Publish(1, buf); err != nil {
				t.Fatal(err)
			}
			copy(buf, "overwritten by the publisher")
		}
		w.RunUntil(w.Now() + 1)
	}
	for round := range 3 {
		for i := range 4 {
			want := fmt.Sprintf("round %d message %d %s", round, i, bytes.Repeat([]byte{'x'}, 100*i))
			if !containsString(got, want) {
				t.Errorf("message %q not delivered intact; got %q", want, got)
			}
		}
	}
	// Four size classes per round, reused in the later rounds: the 12
	// deliveries used only 4 distinct buffers.
	distinct := map[*byte]bool{}
	for _, b := range seen {
		distinct[&b[:1][0]] = true
	}
	if len(distinct) != 4 {
		t.Errorf("%d distinct buffers for 12 messages of 4 sizes, want 4 (reused)", len(distinct))
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestWorldInFlight: messages published on the world's bus and not yet
// due are counted in flight until delivered (or found unroutable):
// Published = Delivered + Unroutable + InFlight at every instant.
func TestWorldInFlight(t *testing.T) {
	const seed = 5
	w := sim.New(seed, time.Second)
	got := 0
	if err := w.Register(1, func(bus.Address, []byte) { got++ }); err != nil {
		t.Fatal(err)
	}
	w.At(0, func() {
		for _, to := range []bus.Address{1, 1, 2} { // nobody is at 2
			if err := w.Publish(to, []byte("m")); err != nil {
				t.Fatal(err)
			}
		}
	})
	w.SetTimer(1, 1, 2*time.Second) // timers are not messages
	for _, c := range []struct {
		at                         time.Duration
		inFlight, delivered, unrtb uint64
	}{{0, 3, 0, 0}, {500 * time.Millisecond, 3, 0, 0}, {time.Second, 0, 2, 1}} {
		w.RunUntil(c.at)
		st := w.Stats()
		if w.InFlight() != c.inFlight || st.Delivered != c.delivered || st.Unroutable != c.unrtb || st.Published != st.Delivered+st.Unroutable+w.InFlight() {
			t.Errorf("seed %d at %v: in flight %d, stats %+v; want %d in flight, %d delivered, %d unroutable", seed, c.at, w.InFlight(), st, c.inFlight, c.delivered, c.unrtb)
		}
	}
	if got != 2 {
		t.Errorf("seed %d: handler called %d times, want 2", seed, got)
	}
}
