package workers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gridbed/gridbed/metrics"
)

// fakeWorker joins a coordinator at url by the control protocol (hello,
// ready) and then sends no beat: a process starved of CPU looks like
// this one while its connection stays open.
func fakeWorker(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	h := Hello{Host: "fake", PID: 1}
	h.CID, _ = nc.GetClientID()
	msg, err := nc.Request(helloSubject, encode(h), requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var st Setup
	if err := decode(msg.Data, &st); err != nil || st.Err != "" {
		t.Fatalf("hello: %v %s", err, st.Err)
	}
	if _, err := nc.Request(readySubject(st.Run), encode(Ready{Index: st.Index}), requestTimeout); err != nil {
		t.Fatal(err)
	}
	return nc
}

// awaitLost polls until the coordinator has declared a worker dead, or
// fails after limit; it returns how long that took and the reason.
func awaitLost(t *testing.T, c *Coordinator, limit time.Duration) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	poll := time.NewTicker(BeatInterval / 4)
	defer poll.Stop()
	for range poll.C {
		if _, lost := c.Failures(); len(lost) > 0 {
			return time.Since(start), lost[0]
		}
		if time.Since(start) > limit {
			break
		}
	}
	t.Fatalf("no worker declared dead within %v", limit)
	return 0, ""
}

// openWith starts a coordinator for one fake worker.
func openWith(t *testing.T, opts Options) (*Coordinator, *nats.Conn) {
	t.Helper()
	conn := make(chan *nats.Conn, 1)
	opts.Workers = 1
	opts.OnListen = func(url string) error {
		go func() { conn <- fakeWorker(t, url) }()
		return nil
	}
	c, err := Open(context.Background(), opts, Setup{Run: "watch"}, metrics.NewRun(metrics.RunInfo{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.stop)
		c.wg.Wait()
		c.shutdown()
	})
	return c, <-conn
}

// TestSilentConnectedWorkerIsHung: a worker that stops beating but keeps
// its connection (starved, or hung) is declared dead only after the hung
// deadline, named as hung — the short deadline alone killed busy workers
// on an overloaded machine and lost their books.
func TestSilentConnectedWorkerIsHung(t *testing.T) {
	c, nc := openWith(t, Options{Deadline: 200 * time.Millisecond, HungDeadline: 2 * time.Second})
	defer nc.Close()
	took, why := awaitLost(t, c, 30*time.Second)
	if took < 2*time.Second-c.opts.Deadline || !strings.Contains(why, "still connected (hung)") {
		t.Errorf("declared dead after %v (%s), want after the hung deadline 2s, as hung", took, why)
	}
}

// TestDisconnectedWorkerIsDeadSoon: a worker whose connection closes (its
// process died) is declared dead after the short deadline.
func TestDisconnectedWorkerIsDeadSoon(t *testing.T) {
	c, nc := openWith(t, Options{Deadline: 200 * time.Millisecond, HungDeadline: time.Minute})
	nc.Close()
	// Well before the hung deadline (a minute), for the closed connection.
	took, why := awaitLost(t, c, 20*time.Second)
	if !strings.Contains(why, "connection closed") {
		t.Errorf("declared dead after %v (%s), want for its closed connection", took, why)
	}
}
