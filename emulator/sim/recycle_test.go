package sim_test

import (
	"bytes"
	"fmt"
	"testing"

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
