package cores

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlotsAreShared: what one taker holds another cannot take until it is
// given back, in this process and in another one, and a waiter gets the
// slots as soon as they are.
func TestSlotsAreShared(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(DirEnv, dir)
	t.Setenv(CoresEnv, "1") // 4 slots
	if n := Slots(); n != 4 {
		t.Fatalf("Slots() = %d with %s=1, want 4", n, CoresEnv)
	}

	first, err := take(3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := take(2, 100*time.Millisecond); err == nil {
		t.Fatal("took 2 slots while 3 of 4 were held")
	}
	one, err := take(1, time.Second)
	if err != nil {
		t.Fatalf("the fourth slot: %v", err)
	}
	// Another process sees them held: flock(1) on every slot fails at once.
	if _, err := exec.LookPath("flock"); err == nil {
		for i := range 4 {
			if exec.Command("flock", "-n", filepath.Join(dir, "slot-"+strconv.Itoa(i)), "true").Run() == nil {
				t.Errorf("another process locked slot %d while this one held it", i)
			}
		}
	}
	// A waiter gets the slots once they are given back.
	done := make(chan error, 1)
	go func() { done <- Do(4, func() {}) }()
	select {
	case err := <-done:
		t.Fatalf("took all 4 slots while they were held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	for _, f := range append(first, one...) {
		f.Close()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the slots given back within 10 s")
	}
}

// TestHoldLastsTheTest: a test holds its slots until it ends; its subtests
// take none again (they would wait for what their own test holds); a test
// that holds fewer than it asks for takes more.
func TestHoldLastsTheTest(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv(CoresEnv, "1") // 4 slots
	t.Run("holder", func(t *testing.T) {
		Hold(t, 1)
		Hold(t, 3) // more: it gives back 1 and takes 3
		if _, err := take(2, 100*time.Millisecond); err == nil {
			t.Fatal("took 2 slots while the test held 3 of 4")
		}
		t.Run("sub", func(t *testing.T) {
			ok := make(chan struct{})
			go func() { Hold(t, 2); close(ok) }()
			select {
			case <-ok:
			case <-time.After(5 * time.Second):
				t.Fatal("a subtest waited for the slots its own test holds")
			}
		})
	})
	// The holder ended: every slot is free.
	all, err := take(4, time.Second)
	if err != nil {
		t.Fatalf("slots not given back when the test ended: %v", err)
	}
	for _, f := range all {
		f.Close()
	}
}

// TestOneCollectorAtATime: two waiters for shares of different sizes never
// each hold part of what the other waits for (a deadlock seen once with a
// gate per size): the second waits its turn holding nothing, and both get
// their shares as slots are given back.
func TestOneCollectorAtATime(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv(CoresEnv, "1") // 4 slots
	one, err := take(1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	all := make(chan []*os.File, 1)
	go func() {
		got, err := take(4, 10*time.Second) // collects the 3 free slots, waits for the 4th
		if err != nil {
			t.Error(err)
		}
		all <- got
	}()
	// The first waiter holds the gate (collecting): poll until it does.
	for deadline := time.Now().Add(10 * time.Second); ; {
		g, err := lock(filepath.Join(Dir(), "gate"))
		if err != nil {
			break
		}
		g.Close()
		if time.Now().After(deadline) {
			t.Fatal("the whole-core waiter never took the gate")
		}
	}
	half := make(chan []*os.File, 1)
	go func() {
		got, err := take(2, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		half <- got
	}()
	for _, f := range one {
		f.Close()
	}
	select {
	case got := <-all:
		for _, f := range got {
			f.Close()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the whole-core waiter did not get its share")
	}
	select {
	case got := <-half:
		for _, f := range got {
			f.Close()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second waiter did not get its share")
	}
}

// TestNoShareAboveOneCore: a request for the whole machine gets one core
// (Most) and leaves the other cores' slots to other tests — a waiter for
// every slot held the gate until the longest test then running ended, and
// most of the machine stood idle behind it.
func TestNoShareAboveOneCore(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv(CoresEnv, "2") // 8 slots
	all, err := take(Slots(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, f := range all {
			f.Close()
		}
	}()
	if len(all) != Most {
		t.Fatalf("take(%d) held %d slots, want %d (one core)", Slots(), len(all), Most)
	}
	other, err := take(Most, time.Second)
	if err != nil {
		t.Fatalf("the other core's slots were not free beside a whole-machine request: %v", err)
	}
	for _, f := range other {
		f.Close()
	}
}

// TestOneSlotWaitsForACollector: while a waiter collects a whole core, a
// slot given back is the collector's; a one-slot run that asks at the same
// time waits for its turn (one-slot runs that took each freed slot kept
// the collector, and every waiter behind it, out for minutes); with nobody
// collecting, a one-slot run takes a free slot at once.
func TestOneSlotWaitsForACollector(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv(CoresEnv, "1") // 4 slots
	held, err := take(2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	whole := make(chan []*os.File, 1)
	go func() {
		got, err := take(4, 10*time.Second) // collects the 2 free slots, waits for 2 more
		if err != nil {
			t.Error(err)
		}
		whole <- got
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		g, err := lock(filepath.Join(Dir(), "gate"))
		if err != nil {
			break // the collector holds the gate
		}
		g.Close()
		if time.Now().After(deadline) {
			t.Fatal("the whole-core waiter never took the gate")
		}
	}
	held[0].Close()
	if one, err := take(1, 300*time.Millisecond); err == nil {
		one[0].Close()
		t.Fatal("a one-slot run took a slot given back while a whole-core waiter collected")
	}
	held[1].Close()
	select {
	case got := <-whole:
		if len(got) != 4 {
			t.Fatalf("the collector got %d slots, want 4", len(got))
		}
		for _, f := range got {
			f.Close()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the whole-core waiter did not get its share")
	}
	one, err := take(1, time.Second)
	if err != nil {
		t.Fatalf("a one-slot run with nobody collecting: %v", err)
	}
	one[0].Close()
}

// fatalTB records a Fatalf and stops the call there (a panic the test
// recovers), as testing.T's stops its goroutine.
type fatalTB struct {
	testing.TB
	msg string
}

type stopped struct{}

func (f *fatalTB) Helper()      {}
func (f *fatalTB) Name() string { return "TestInTheBackground" }
func (f *fatalTB) Cleanup(func()) {
}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// holdIn runs Hold(tb, n) and reports what it stopped the test with ("":
// it did not).
func holdIn(tb *fatalTB, n int) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
			msg = tb.msg
		}
	}()
	Hold(tb, n)
	return ""
}

// TestBackgroundTakesNoLiveShare: a test run in the background (niced,
// .ci/long-tier's background list) that takes a live run's share stops,
// naming the list; a deterministic run's share (a core) is taken from the
// background's own slots.
func TestBackgroundTakesNoLiveShare(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv(CoresEnv, "2")
	t.Setenv(BackgroundEnv, "1")
	for _, n := range []int{1, Process} {
		if msg := holdIn(&fatalTB{TB: t}, n); !strings.Contains(msg, "background list") {
			t.Errorf("Hold(%d) in the background: stopped with %q, want a word on .ci/long-tier's background list", n, msg)
		}
	}
	tb := &fatalTB{TB: t}
	if msg := holdIn(tb, Sim); msg != "" {
		t.Fatalf("Hold(Sim) in the background stopped: %s", msg)
	}
	mu.Lock()
	got := len(held[tb.Name()].files)
	for _, f := range held[tb.Name()].files {
		f.Close()
	}
	delete(held, tb.Name())
	mu.Unlock()
	if got != Sim {
		t.Errorf("Hold(Sim) in the background holds %d slots, want %d", got, Sim)
	}
}
