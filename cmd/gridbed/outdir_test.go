package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// simRun is a quick run on the deterministic driver into dir.
func simRun(t *testing.T, dir string) (code int, stdout, stderr string) {
	t.Helper()
	return gridbed(t, "run", "../../examples/quickstart.yaml", "--driver", "sim", "--metrics-addr", "off", "--report=false", "--out", dir,
		"--set", "peers.count=40", "--set", "duration=3m")
}

// writeFiles writes each name (relative to dir) with its own contents.
func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("the user's "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// filesKept fails unless every name still holds what writeFiles wrote.
func filesKept(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(b) != "the user's "+n {
			t.Errorf("%s: %q, %v: the user's file was not kept", n, b, err)
		}
	}
}

// TestOutKeepsTheUsersFiles: a directory is replaced only when gridbed's
// marker lists everything in it. A summary.json (or sweep.md) among the
// user's files does not make it a results directory; a file the user put
// into a results directory gridbed wrote is not deleted either. Both are
// refused with exit 2, naming the file, and nothing is touched.
func TestOutKeepsTheUsersFiles(t *testing.T) {
	for _, names := range [][]string{
		{"summary.json", "thesis.tex", "src/main.go"},
		{"sweep.md", "notes.txt"},
		{".gridbed-results", "data.csv"}, // a marker that is not gridbed's
	} {
		dir := t.TempDir()
		writeFiles(t, dir, names...)
		code, _, stderr := simRun(t, dir)
		if code != 2 || !strings.Contains(stderr, "choose a new directory") {
			t.Errorf("%v: exit %d, %q; want 2 and what to do", names, code, stderr)
		}
		filesKept(t, dir, names...)
	}

	dir := filepath.Join(t.TempDir(), "res")
	if code, _, stderr := simRun(t, dir); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	writeFiles(t, dir, "my-notes.txt")
	code, _, stderr := simRun(t, dir)
	if code != 2 || !strings.Contains(stderr, "my-notes.txt") {
		t.Errorf("a results directory with the user's file in it: exit %d, %q; want 2 naming my-notes.txt", code, stderr)
	}
	filesKept(t, dir, "my-notes.txt")
	if err := os.Remove(filepath.Join(dir, "my-notes.txt")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := simRun(t, dir); code != 0 {
		t.Fatalf("a results directory holding only gridbed's files: exit %d: %s", code, stderr)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("beside the results: %v; want only them (no lock, no temporary)", entries)
	}
}

// TestOutOneRunAtATime: while a run holds a results directory, a second
// run into it exits 2 at once naming the first; once the first lets go,
// the second may. Two runs started together into one directory: exactly
// one writes it, the other is refused.
func TestOutOneRunAtATime(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "res")
	od, err := prepareOut("--out", dir, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := simRun(t, dir)
	if code != 2 || !strings.Contains(stderr, "another gridbed run is writing there") || !strings.Contains(stderr, "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("into a held directory: exit %d, %q; want 2 naming the other run", code, stderr)
	}
	od.Discard()
	if code, _, stderr := simRun(t, dir); code != 0 {
		t.Fatalf("after the first let go: exit %d: %s", code, stderr)
	}

	dir = filepath.Join(parent, "together")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = simRun(t, dir)
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for i, c := range codes {
		switch {
		case c == 0:
			ok++
		case c == 2 && strings.Contains(errs[i], "another gridbed run"):
			refused++
		default:
			t.Errorf("run %d: exit %d: %s", i, c, errs[i])
		}
	}
	// Both may succeed one after the other (the first done before the
	// second looked); never both at once, never neither.
	if ok == 0 || ok+refused != 2 {
		t.Errorf("two runs together: %d wrote, %d refused", ok, refused)
	}
}

// TestDeadRunsTempsRemoved: the temporary directories of runs no longer
// alive (a SIGKILL leaves one) are removed by the next run into the same
// parent, which says so; a temp whose run still holds its lock, and a
// directory of that name pattern gridbed did not mark, are left.
func TestDeadRunsTempsRemoved(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{".res.tmp-111", ".other.tmp-222", ".live.tmp-333"} {
		writeFiles(t, filepath.Join(parent, d), tempMarker, "summary.json")
	}
	writeFiles(t, filepath.Join(parent, ".mine.tmp-444"), "thesis.tex")
	live, _, err := lockName(parent, "live")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockFile(live)
	code, _, stderr := simRun(t, filepath.Join(parent, "res"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, d := range []string{".res.tmp-111", ".other.tmp-222"} {
		if _, err := os.Stat(filepath.Join(parent, d)); err == nil {
			t.Errorf("%s is still there", d)
		}
		if !strings.Contains(stderr, "removed "+filepath.Join(parent, d)) {
			t.Errorf("the removal of %s is not said: %s", d, stderr)
		}
	}
	for _, d := range []string{".live.tmp-333", ".mine.tmp-444"} {
		if _, err := os.Stat(filepath.Join(parent, d)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	filesKept(t, filepath.Join(parent, ".mine.tmp-444"), "thesis.tex")
}

// TestSecondSignalWithinASecondIsTheSame: GNU timeout -s INT delivers one
// interrupt twice (to the process and to its group): a second signal
// within a second of the first stops the run as the first did, and only a
// later one exits at once — after removing the temporary directories of
// results being written.
func TestSecondSignalWithinASecondIsTheSame(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	exited := make(chan time.Time, 2)
	same := make(chan struct{}, 2)
	defer func(old func(int), oldSame func()) { exitNow, onSameSignal = old, oldSame }(exitNow, onSameSignal)
	exitNow = func(code int) {
		if code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
		exited <- now()
	}
	onSameSignal = func() { same <- struct{}{} }
	od, err := prepareOut("--out", filepath.Join(t.TempDir(), "res"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer od.Discard()
	stderr := newWatchBuffer("")
	ctx, stop := interruptContextAt(stderr, now)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the first SIGINT did not cancel the run")
	}
	mu.Lock()
	clock = clock.Add(500 * time.Millisecond)
	mu.Unlock()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-same:
	case at := <-exited:
		t.Fatalf("a signal 0.5 s after the first exited (at %v)", at)
	case <-time.After(time.Minute):
		t.Fatal("the second SIGINT was not seen")
	}
	mu.Lock()
	clock = time.Unix(1002, 0)
	mu.Unlock()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-exited:
		if !at.Equal(time.Unix(1002, 0)) {
			t.Errorf("exited at %v: the signal 0.5 s after the first counted as a second one", at)
		}
	case <-time.After(time.Minute):
		t.Fatalf("a signal 2 s after the first did not exit:\n%s", stderr.String())
	}
	if _, err := os.Stat(od.Dir()); err == nil {
		t.Errorf("the temporary directory %s is still there after the exit at once", od.Dir())
	}
	if !strings.Contains(stderr.String(), "removed "+od.Dir()) {
		t.Errorf("the removal is not said:\n%s", stderr.String())
	}
}
