// Package cores shares this machine's cores among the end-to-end tests
// that run at the same time, in one test process or in several (go test
// runs each package's tests in a process of its own, several packages at
// once, and .ci/run splits the longest packages over more processes).
//
// A test takes a share of the machine before a run and gives it back
// after: a run on the deterministic driver is CPU-bound and takes a whole
// core; a live-driver run mostly waits on its scaled clock, but it must
// find a core free whenever its timers fire, or it falls behind its time
// scale and says nothing about the code — it takes half a core (a whole
// one under the race detector, whose instrumented actors cost several
// times more). So two deterministic runs, or one and two live runs, or
// four live runs share the two cores of the project machine, and a live
// run never finds both cores taken by simulations.
//
// The shares are file locks (flock) on the slots of a directory under
// the temporary directory, one slot a quarter of a core, so every test
// process on the machine sees the same ones, and a process that dies
// gives its slots back with its file descriptors. Waiters for more than
// one slot take turns behind a gate; the one holding it keeps the slots it
// collects until it has its share, so a run that needs a whole core is not
// starved by runs that need a quarter, and only one waiter at a time holds
// part of a share (two could each hold what the other waits for). A run
// that needs one slot takes its turn too: without one it either kept a
// collector out or was kept out by a stream of them.
//
// No share is larger than one core (Most). A waiter for the whole machine
// held the gate, and the slots it had collected, until the longest test
// then running ended — the papers' smoke takes eight minutes — while
// every other multi-slot waiter queued behind it: most of the machine
// stood idle (the long tier ran at half its cores). A test that runs
// more than one core's work at once (reproduce's parallel runs, a run
// that falls behind on purpose) holds one core and says so.
package cores

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PerCore is the number of slots a core has: a share is taken in
// quarters of a core.
const PerCore = 4

// DirEnv names the variable that sets the directory of the slots (by
// default gridbed-test-cores-UID under the temporary directory); CoresEnv
// the number of cores they stand for (by default the machine's). .ci/run
// runs the papers' smoke beside the long tier holding one core's slots.
const (
	DirEnv   = "GRIDBED_TEST_CORES_DIR"
	CoresEnv = "GRIDBED_TEST_CORES"
)

// BackgroundEnv names the variable .ci/long-tier sets for the tests it
// runs in the background: CPU-bound tests of deterministic runs only,
// niced below every other test and taking their shares from slots of
// their own (DirEnv), so that they use what the other tests leave idle
// and a live run's timers preempt them. A background test that takes a
// share smaller than a core's (a live run's) stops: a live run there
// would fall behind whenever the foreground is busy.
const BackgroundEnv = "GRIDBED_TEST_BACKGROUND"

// Shares of a core that runs take.
const (
	// Sim is a run on the deterministic driver: CPU-bound, one core.
	Sim = PerCore
	// Most is the largest share a test takes: one core (see the package
	// comment). A larger request is cut to it.
	Most = PerCore
	// Process is a live run split over worker processes (in this one or
	// in processes of their own): half a core, as a live run takes on its
	// own under the race detector.
	Process = PerCore / 2
)

// poll is how often the waiter holding the gate looks for freed slots.
const poll = 20 * time.Millisecond

// Wait is how long Take waits for its slots before it stops the test:
// far longer than any one end-to-end test takes.
const Wait = 30 * time.Minute

var (
	mu   sync.Mutex
	held = map[string]*holding{} // by the name of the test that took them
)

// holding is a test's slots.
type holding struct {
	files []*os.File
}

// Hold gives t at least n slots (PerCore to a core) until t ends, waiting
// while other tests hold them. A test holds its slots to its end, not one
// run's: a test of many short runs would otherwise wait its turn again
// before each. A test that holds fewer takes more (it gives back what it
// holds and waits for the larger share); a subtest of a test that holds
// enough takes none. n larger than Most (one core), or than the
// machine's slots, is cut to it.
//
// The kit's run helpers (emutest.Run, RunWith, Retry's runs) hold a run's
// share; a test that runs CPU-bound work without them says so at its
// start with cores.Hold(t, cores.Sim).
func Hold(t testing.TB, n int) {
	t.Helper()
	n = min(max(n, 1), Most, Slots())
	if os.Getenv(BackgroundEnv) != "" && n < Sim {
		t.Fatalf("%s takes %d of a core's %d slots, a live run's share, but runs in the background (%s=%s: niced below the other tests, where a live run falls behind whenever they are busy): take it off .ci/long-tier's background list",
			t.Name(), n, PerCore, BackgroundEnv, os.Getenv(BackgroundEnv))
	}
	name := t.Name()
	mu.Lock()
	for h, x := range held {
		if h == name || strings.HasPrefix(name, h+"/") {
			// Enough, or being taken by another goroutine of the test.
			if len(x.files) >= n || x.files == nil {
				mu.Unlock()
				return
			}
			// More than it holds: give it back and take the larger share.
			for _, f := range x.files {
				f.Close()
			}
			x.files = nil
			name = h
			break
		}
	}
	x := held[name]
	fresh := x == nil
	if fresh {
		x = &holding{}
		held[name] = x
	}
	mu.Unlock()
	files, err := take(n, Wait)
	if err != nil {
		t.Fatalf("taking %d slots of the machine's cores: %v", n, err)
	}
	mu.Lock()
	x.files = files
	mu.Unlock()
	if fresh {
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			for _, f := range x.files {
				f.Close() // closing the descriptor drops its lock
			}
			delete(held, name)
		})
	}
}

// Do runs f holding n slots, outside any test (a compile in a test
// binary's TestMain or in a sync.Once).
func Do(n int, f func()) error {
	files, err := take(n, Wait)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	f()
	return nil
}

// Slots is the number of slots the machine has.
func Slots() int {
	c := runtime.NumCPU()
	if v, err := strconv.Atoi(os.Getenv(CoresEnv)); err == nil && v > 0 {
		c = v
	}
	return c * PerCore
}

// Dir is the directory of the slots.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gridbed-test-cores-%d", os.Getuid()))
}

// take locks n free slot files, waiting at most wait.
func take(n int, wait time.Duration) ([]*os.File, error) {
	slots := Slots()
	n = min(max(n, 1), Most, slots)
	dir := Dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Waiters take turns behind the gate, whatever their share: each
	// tries for it every poll until its deadline, so no kind of waiter is
	// passed over as a rule, and two collecting at once cannot each hold
	// part of what the other waits for. (One-slot runs that took each freed
	// slot without a turn kept a whole-core waiter out, holding its partial
	// share idle, for minutes; one-slot runs that waited until no collector
	// was queued waited twelve minutes behind a stream of deterministic
	// runs.)
	deadline := time.Now().Add(wait)
	var gate *os.File
	for {
		var err error
		if gate, err = lock(filepath.Join(dir, "gate")); err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no turn to take %d slots after %s (other test processes are taking theirs: %s)", n, wait, dir)
		}
		time.Sleep(poll)
	}
	defer gate.Close()
	var got []*os.File
	for {
		got = takeFree(dir, slots, n, got)
		if len(got) == n {
			return got, nil
		}
		// Keep what is taken (nobody else can take slots while the gate
		// is held) and wait for the rest.
		if time.Now().After(deadline) {
			for _, f := range got {
				f.Close()
			}
			return nil, fmt.Errorf("only %d of %d slots free after %s (held by other test processes: %s)", len(got), n, wait, dir)
		}
		time.Sleep(poll)
	}
}

// takeFree adds free slots of dir to got until it holds n.
func takeFree(dir string, slots, n int, got []*os.File) []*os.File {
	for i := 0; i < slots && len(got) < n; i++ {
		if f, err := lock(filepath.Join(dir, "slot-"+strconv.Itoa(i))); err == nil {
			got = append(got, f)
		}
	}
	return got
}

// lock opens path and locks it exclusively, failing at once
// (syscall.EWOULDBLOCK) if another descriptor holds it.
func lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
