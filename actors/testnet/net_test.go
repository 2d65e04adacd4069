package testnet_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gridbed/gridbed/actors/testnet"
)

// echo answers every message n > 0 with n-1 to its sender, logs what it
// saw, and sets the timers a test gives it.
type echo struct {
	id     int
	log    *[]string
	out    []testnet.Msg[int]
	timers []testnet.Timer[int, string]
}

func (e *echo) Step(now time.Duration, from int, m proto.Message) {
	v := m.(*wrapperspb.Int64Value)
	*e.log = append(*e.log, fmt.Sprintf("%v %d<-%d:%d", now, e.id, from, v.Value))
	if v.Value > 0 {
		e.out = append(e.out, testnet.Msg[int]{To: from, Msg: wrapperspb.Int64(v.Value - 1)})
	}
	v.Value = -1 // the sender's copy must not change
}

func (e *echo) Tick(now time.Duration, kind string) {
	*e.log = append(*e.log, fmt.Sprintf("%v %d:%s", now, e.id, kind))
}

func (e *echo) Flush(send func(int, proto.Message), timer func(time.Duration, string)) {
	for _, m := range e.out {
		send(m.To, m.Msg)
	}
	for _, t := range e.timers {
		timer(t.At, t.Kind)
	}
	e.out, e.timers = nil, nil
}

func newNet(t testing.TB, n int) (*testnet.Net[int, string], []*echo, *[]string) {
	net := testnet.New[int, string](t)
	log := &[]string{}
	var es []*echo
	for id := 1; id <= n; id++ {
		e := &echo{id: id, log: log}
		es = append(es, e)
		net.Add(id, e)
	}
	return net, es, log
}

// TestDeliverInSendOrder: messages go out in the order they were sent,
// breadth first (what a message causes waits behind what was already
// queued), at Now, as copies.
func TestDeliverInSendOrder(t *testing.T) {
	net, _, log := newNet(t, 3)
	net.Now = time.Second
	m := wrapperspb.Int64(1)
	net.Send(1, 2, m)
	net.Send(1, 3, wrapperspb.Int64(0))
	net.Deliver()
	want := []string{"1s 2<-1:1", "1s 3<-1:0", "1s 1<-2:0"}
	if !slices.Equal(*log, want) {
		t.Fatalf("deliveries %q, want %q", *log, want)
	}
	if m.Value != 1 {
		t.Fatalf("the receiver changed the sender's message: %v", m.Value)
	}
}

// TestTimersInTimeOrder: timers fire in time order, ties in the order they
// were set, each at its own time (or at Now if set in the past); timers of
// removed endpoints are dropped; RunUntil leaves the clock at its end.
func TestTimersInTimeOrder(t *testing.T) {
	net, es, log := newNet(t, 3)
	net.Now = 2 * time.Second
	es[0].timers = []testnet.Timer[int, string]{{At: 5 * time.Second, Kind: "a"}, {At: 3 * time.Second, Kind: "b"}, {At: time.Second, Kind: "past"}}
	es[1].timers = []testnet.Timer[int, string]{{At: 3 * time.Second, Kind: "c"}, {At: 9 * time.Second, Kind: "late"}}
	es[2].timers = []testnet.Timer[int, string]{{At: 4 * time.Second, Kind: "gone"}}
	for id := 1; id <= 3; id++ {
		net.Collect(id)
	}
	net.Remove(3)
	net.RunUntil(6 * time.Second)
	want := []string{"2s 1:past", "3s 1:b", "3s 2:c", "5s 1:a"}
	if !slices.Equal(*log, want) {
		t.Fatalf("timers fired %q, want %q", *log, want)
	}
	if net.Now != 6*time.Second {
		t.Fatalf("clock at %v, want 6s", net.Now)
	}
	if left := net.Timers(); len(left) != 1 || left[0].Kind != "late" || left[0].To != 2 {
		t.Fatalf("timers left %+v, want 2's late one", left)
	}
}

// TestLostMessages: Drop loses what it selects, a Lossy network loses
// messages to unknown endpoints, and OnDeliver sees both with Lost set.
func TestLostMessages(t *testing.T) {
	net, _, log := newNet(t, 2)
	var seen []string
	net.OnDeliver = func(m testnet.Msg[int]) {
		seen = append(seen, fmt.Sprintf("%d->%d lost=%v", m.From, m.To, m.Lost))
	}
	net.Drop = func(m testnet.Msg[int]) bool { return m.From == 2 }
	net.Lossy = true
	net.Send(1, 2, wrapperspb.Int64(3))
	net.Send(1, 9, wrapperspb.Int64(0))
	net.Deliver()
	if want := []string{"1->2 lost=false", "1->9 lost=true", "2->1 lost=true"}; !slices.Equal(seen, want) {
		t.Fatalf("seen %q, want %q", seen, want)
	}
	if len(*log) != 1 {
		t.Fatalf("deliveries %q, want only 2's", *log)
	}
}

// fatal records a Fatalf and stops the test's goroutine as testing.T does.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func caught(f *fatal, do func()) (msg string) {
	defer func() {
		if r := recover(); r != nil && r != any(f) {
			panic(r)
		}
		msg = f.msg
	}()
	do()
	return ""
}

// TestFailures: a message to an unknown endpoint on a network that is not
// lossy, and messages that never settle, fail the test.
func TestFailures(t *testing.T) {
	f := &fatal{TB: t}
	net, _, _ := newNet(f, 2)
	net.Send(1, 7, wrapperspb.Int64(0))
	if msg := caught(f, net.Deliver); !strings.Contains(msg, "unknown endpoint 7") {
		t.Errorf("unknown receiver: %q", msg)
	}
	f = &fatal{TB: t}
	net, _, _ = newNet(f, 2)
	net.MaxSteps = 10
	net.Send(1, 2, wrapperspb.Int64(100))
	if msg := caught(f, net.Deliver); !strings.Contains(msg, "never settle") {
		t.Errorf("endless exchange: %q", msg)
	}
}

// TestTraceParse: steps, arguments and expected outputs are read as
// written, and a step's output is compared with the expected one.
func TestTraceParse(t *testing.T) {
	file := t.TempDir() + "/x.trace"
	text := "# a comment\ncmd 1 2 k=v\n----\nline one\nline two\n\nquiet\n\nlast d=2s\n----\n2s\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []string
	testnet.RunTrace(t, file, func(t *testing.T, s *testnet.Step) string {
		seen = append(seen, fmt.Sprintf("%s %v %v", s.Cmd, s.IDs(t), s.Keys))
		switch s.Cmd {
		case "cmd":
			return "line one\nline two"
		case "last":
			return s.Dur(t, "d", 0).String()
		}
		return ""
	})
	if want := []string{"cmd [1 2] map[k:v]", "quiet [] map[]", "last [] map[d:2s]"}; !slices.Equal(seen, want) {
		t.Fatalf("steps %q, want %q", seen, want)
	}
}

func TestDiff(t *testing.T) {
	got := testnet.Diff("a\nb\nc", "a\nx\nc\nd")
	if want := "  a\n- b\n+ x\n  c\n+ d\n"; got != want {
		t.Fatalf("diff\n%s\nwant\n%s", got, want)
	}
}
