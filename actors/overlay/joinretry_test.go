package overlay

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// tRetryConfig waits a second for a JOIN-ACCEPT first.
var tRetryConfig = Config{HeartbeatPeriod: tPeriod, JoinRetry: time.Second}

// tRetryTimer returns the join retry timer r asks for.
func tRetryTimer(t *testing.T, r Ready) time.Duration {
	t.Helper()
	for _, tm := range r.Timers {
		if tm.Kind == core.TimerJoinRetry {
			return tm.At
		}
	}
	t.Fatalf("no join retry timer in %+v", r)
	return 0
}

// TestJoinRetryWaitsDouble: a joiner waits JoinRetry for its first
// JOIN-ACCEPT, then twice as long at each retry, up to JoinTimeout; a
// retry asks the driver for a new contact.
func TestJoinRetryWaitsDouble(t *testing.T) {
	b := New(2, can.Point{tQ3, tQ1}, tRetryConfig, tRand(2))
	now := time.Duration(0)
	b.Bootstrap(now, 1)
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 2 * tPeriod, 2 * tPeriod}
	for i, w := range want {
		at := tRetryTimer(t, tDrain(b))
		if at-now != w {
			t.Fatalf("attempt %d: waits %v for its JOIN-ACCEPT, want %v", i+1, at-now, w)
		}
		now = at
		b.Tick(now, core.TimerJoinRetry)
		if r := tDrain(b); !r.NeedBootstrap {
			t.Fatalf("attempt %d: no new contact asked for after the wait: %+v", i+1, r)
		}
		b.Bootstrap(now, 1)
	}
	if st := b.Status(); st.JoinRetries != uint64(len(want)) {
		t.Fatalf("%d retries counted, want %d", st.JoinRetries, len(want))
	}
}

// TestLostJoinAcceptSentAgain: the owner's JOIN-ACCEPT is lost; the
// joiner's retry, routed back towards the zone it was given, makes the
// owner send the JOIN-ACCEPT again — whether the retry reaches the owner
// itself or a node that learned of the joiner from the owner's zone
// update (which hands the JOIN to the owner instead of to the joiner).
// The joiner joins with the zone it was given; the owner forgets the
// accept once the joiner speaks.
func TestLostJoinAcceptSentAgain(t *testing.T) {
	for _, via := range []bool{false, true} {
		name := "retry through the owner"
		if via {
			name = "retry through a neighbor of the owner"
		}
		t.Run(name, func(t *testing.T) {
			a := New(1, can.Point{tQ1, tQ1}, tRetryConfig, tRand(1))
			a.Bootstrap(0, 0)
			tDrain(a)
			// c takes the upper half from a.
			c := New(3, can.Point{tQ1, tQ3}, tRetryConfig, tRand(3))
			c.Bootstrap(0, 1)
			a.Step(0, 3, tOnly[*wire.Join](t, tDrain(c), 1))
			c.Step(0, 1, tOnly[*wire.JoinAccept](t, tDrain(a), 3))
			tDrain(c)
			if !c.Joined() || !a.Zone().Equal(tZone2(0, tFull, 0, tHalf)) {
				t.Fatalf("setup: c joined %v, a's zone %v", c.Joined(), a.Zone())
			}

			// b joins through a; a's JOIN-ACCEPT is lost, its zone
			// update reaches c.
			b := New(2, can.Point{tQ3, tQ1}, tRetryConfig, tRand(2))
			now := time.Second
			b.Bootstrap(now, 1)
			rb := tDrain(b)
			a.Step(now, 2, tOnly[*wire.Join](t, rb, 1))
			r := tDrain(a)
			lost := tTo[*wire.JoinAccept](t, r, 2)
			c.Step(now, 1, tTo[*wire.ZoneUpdate](t, r, 3))
			tDrain(c)
			given, _ := zoneFromWire(lost.Zone, 2)

			// b's retry.
			now = tRetryTimer(t, rb)
			b.Tick(now, core.TimerJoinRetry)
			tDrain(b)
			contact := core.NodeID(1)
			if via {
				contact = 3
			}
			b.Bootstrap(now, contact)
			retry := tOnly[*wire.Join](t, tDrain(b), contact)
			if via {
				c.Step(now, 2, retry)
				retry = tOnly[*wire.Join](t, tDrain(c), 1) // to the owner, not to b
				a.Step(now, 3, retry)
			} else {
				a.Step(now, 2, retry)
			}
			again := tOnly[*wire.JoinAccept](t, tDrain(a), 2)
			if st := a.Status(); st.AcceptsResent != 1 || st.JoinsOwned != 2 {
				t.Fatalf("owner: %d accepts sent again, %d joins owned; want 1 and 2 (no second split)", st.AcceptsResent, st.JoinsOwned)
			}
			b.Step(now, 1, again)
			tDrain(b)
			if !b.Joined() || !b.Zone().Equal(given) {
				t.Fatalf("b joined %v with zone %v, want the zone a gave it, %v", b.Joined(), b.Zone(), given)
			}
			tCheckExact(t, []*Node{a, b, c}, 2, "after the retry")

			// b speaks: a forgets the accept (a retry now would be
			// forwarded to b, which ignores its own JOIN).
			b.Step(now, 1, &wire.Heartbeat{Self: a.info()})
			tDrain(b)
			a.Step(now, 2, &wire.Heartbeat{Self: b.info()})
			tDrain(a)
			if _, ok := a.accepted[2]; ok {
				t.Fatal("a still keeps its accept for b after hearing from b")
			}
		})
	}
}

// tAccepted founds the overlay with node 1 and has node 2 join through
// it at time 0; the JOIN-ACCEPT is drained (lost). It returns the owner
// and node 2's JOIN.
func tAccepted(t *testing.T) (a *Node, join *wire.Join) {
	t.Helper()
	a = New(1, can.Point{tQ1, tQ1}, tRetryConfig, tRand(1))
	a.Bootstrap(0, 0)
	tDrain(a)
	b := New(2, can.Point{tQ3, tQ1}, tRetryConfig, tRand(2))
	b.Bootstrap(0, 1)
	join = tOnly[*wire.Join](t, tDrain(b), 1)
	a.Step(0, 2, join)
	tDrain(a)
	return a, join
}

// TestKeptAcceptsForgotten: an owner keeps a JOIN-ACCEPT whose joiner
// never speaks for two join timeouts, then drops it at a heartbeat.
func TestKeptAcceptsForgotten(t *testing.T) {
	a, _ := tAccepted(t)
	if len(a.accepted) != 1 {
		t.Fatalf("a keeps %d accepts after a join, want 1", len(a.accepted))
	}
	a.Tick(4*tPeriod, core.TimerHeartbeat)
	tDrain(a)
	if len(a.accepted) != 1 {
		t.Fatal("a forgot the accept within two join timeouts")
	}
	a.Tick(4*tPeriod+time.Second, core.TimerHeartbeat)
	tDrain(a)
	if len(a.accepted) != 0 {
		t.Fatal("a keeps the accept of a joiner silent for over two join timeouts")
	}
}

// TestAcceptSentAgainAtMostMaxResends: an owner answers a joiner's
// retries with its JOIN-ACCEPT at most maxResends times; afterwards the
// JOIN is routed as any other (to the joiner's zone), so a joiner that
// cannot keep the zone it was given is not answered for ever.
func TestAcceptSentAgainAtMostMaxResends(t *testing.T) {
	a, join := tAccepted(t)
	for i := 0; i < maxResends; i++ {
		a.Step(time.Duration(i+1)*time.Second, 2, &wire.Join{Joiner: 2, Point: join.Point})
		tOnly[*wire.JoinAccept](t, tDrain(a), 2)
	}
	a.Step(time.Minute, 2, &wire.Join{Joiner: 2, Point: join.Point})
	if m := tOnly[*wire.Join](t, tDrain(a), 2); m.Joiner != 2 {
		t.Fatalf("after %d resends: %v", maxResends, m)
	}
	if st := a.Status(); st.AcceptsResent != maxResends || len(a.accepted) != 0 {
		t.Fatalf("%d accepts sent again, %d kept; want %d and none", st.AcceptsResent, len(a.accepted), maxResends)
	}
}
