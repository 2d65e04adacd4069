package bandwidth

import (
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/sim"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rate
		err  string
	}{
		{"1Mbit", Mbit, ""},
		{"8Mbit/s", 8 * Mbit, ""},
		{"512kbit", 512 * Kbit, ""},
		{"1.5Mbps", 1500 * Kbit, ""},
		{"125kB/s", Mbit, ""},
		{"10Gbit", 10 * Gbit, ""},
		{"0", 0, ""},
		{" 2Mbit ", 2 * Mbit, ""},
		{"1mbit", 0, "M is mega"},
		{"5", 0, "needs a unit"},
		{"fast", 0, "not a rate"},
		{"-1Mbit", 0, "not a rate"},
		{"0.1bit", 0, "below 1 bit/s"},
		{"2000Gbit", 0, "above 1000Gbit"},
	} {
		got, err := ParseRate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRate(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, err := ParseRate(got.String()); err != nil || back != got {
			t.Errorf("ParseRate(%q.String() = %q) = %v, %v", tc.in, got.String(), back, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		err  string
	}{
		{"64KB", 64 * KB, ""},
		{"64KiB", 64 * KiB, ""},
		{"1MB", MB, ""},
		{"1500B", 1500, ""},
		{"0", 0, ""},
		{"64", 0, "needs a unit"},
		{"64kbit", 0, "holds bytes"},
		{"lots", 0, "not a size"},
	} {
		got, err := ParseSize(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSize(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, err := ParseSize(got.String()); err != nil || back != got {
			t.Errorf("ParseSize(%q.String() = %q) = %v, %v", tc.in, got.String(), back, err)
		}
	}
}

func TestSerialize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		r    Rate
		want time.Duration
	}{
		{3200, Mbit, 25600 * time.Microsecond}, // a 3.2 KB vanilla heartbeat on a 1 Mbit/s uplink
		{125_000, Mbit, time.Second},
		{1, 3 * Bit, 2666666667}, // rounded up
		{1000, 0, 0},             // unlimited
		{0, Mbit, 0},
		{1 << 40, Gbit, 8796093022208}, // beyond the exact integer path
	} {
		if got := Serialize(tc.n, tc.r); got != tc.want {
			t.Errorf("Serialize(%d, %v) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
}

// TestQueueAdmit is the queue arithmetic: FIFO finish times, waits and the
// tail drop of a byte-limited queue.
func TestQueueAdmit(t *testing.T) {
	ms := time.Millisecond
	type step struct {
		now        time.Duration
		n          int
		wait, done time.Duration
		ok         bool
	}
	for _, tc := range []struct {
		name  string
		r     Rate
		limit Size
		steps []step
	}{
		{"idle link: no wait", 8 * Kbit, 0, []step{{0, 1000, 0, time.Second, true}, {2 * time.Second, 500, 0, 2500 * ms, true}}},
		{"back to back: each waits for those before", 8 * Kbit, 0, []step{
			{0, 1000, 0, time.Second, true}, {0, 1000, time.Second, 2 * time.Second, true}, {0, 1000, 2 * time.Second, 3 * time.Second, true}}},
		{"arrives mid-transmission", 8 * Kbit, 0, []step{{0, 1000, 0, time.Second, true}, {400 * ms, 1000, 600 * ms, 2 * time.Second, true}}},
		{"limit: the third does not fit", 8 * Kbit, 2500, []step{
			{0, 1000, 0, time.Second, true}, {0, 1000, time.Second, 2 * time.Second, true}, {0, 1000, 0, 0, false},
			{0, 500, 2 * time.Second, 2500 * ms, true}}},
		{"limit: room again once a message has left", 8 * Kbit, 2000, []step{
			{0, 1000, 0, time.Second, true}, {0, 1000, time.Second, 2 * time.Second, true}, {999 * ms, 1000, 0, 0, false},
			{time.Second, 1000, time.Second, 3 * time.Second, true}}},
		{"limit: a message larger than the queue never fits", 8 * Kbit, 999, []step{{0, 1000, 0, 0, false}, {0, 999, 0, 999 * ms, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q queue
			for i, s := range tc.steps {
				wait, done, ok := q.admit(s.now, s.n, tc.r, tc.limit)
				if ok != s.ok || ok && (wait != s.wait || done != s.done) {
					t.Fatalf("step %d: admit(%v, %d) = %v, %v, %v; want %v, %v, %v", i, s.now, s.n, wait, done, ok, s.wait, s.done, s.ok)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		err  string
	}{
		{"zero", Config{}, ""},
		{"uniform", Uniform(Mbit, 8*Mbit), ""},
		{"classes", Config{Classes: []Class{{0.5, Mbit, 8 * Mbit}, {0.5, 10 * Mbit, 0}}, Queue: 64 * KB}, ""},
		{"sum below 1", Config{Classes: []Class{{0.5, Mbit, 8 * Mbit}, {0.4, 10 * Mbit, 0}}}, "add up to 0.9"},
		{"zero fraction", Config{Classes: []Class{{0, Mbit, 0}, {1, Mbit, 0}}}, "not in (0, 1]"},
		{"negative queue", Config{Queue: -1}, "negative queue"},
	} {
		err := tc.c.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestClassOfFractions checks that classes go to about their fractions of
// a population, and the same addresses to the same classes for a seed.
func TestClassOfFractions(t *testing.T) {
	c := Config{Classes: []Class{{0.7, Mbit, 8 * Mbit}, {0.2, 10 * Mbit, 50 * Mbit}, {0.1, 100 * Mbit, 100 * Mbit}}}
	for _, seed := range []uint64{1, 2, 3} {
		var n [3]int
		for a := range 10000 {
			i := c.ClassOf(seed, bus.Address(a))
			if j := c.ClassOf(seed, bus.Address(a)); j != i {
				t.Fatalf("seed %d: address %d: class %d then %d", seed, a, i, j)
			}
			n[i]++
		}
		for i, k := range c.Classes {
			if got := float64(n[i]) / 10000; got < k.Fraction-0.02 || got > k.Fraction+0.02 {
				t.Errorf("seed %d: class %d holds %.3f of the peers, want %.2f ± 0.02", seed, i, got, k.Fraction)
			}
		}
	}
}

// arrival is one delivery: who from, to whom, when.
type arrival struct {
	from, to uint64
	at       time.Duration
}

// world is a sim.World with a Shaper over it and peers 0..n-1.
type world struct {
	t   *testing.T
	w   *sim.World
	s   *Shaper
	got []arrival
}

func newWorld(t *testing.T, seed uint64, n int, c Config) *world {
	t.Helper()
	w := &world{t: t, w: sim.New(seed, 0)}
	w.s = New(w.w, w.w, seed)
	w.s.Set(c)
	for a := range n {
		if err := w.s.Register(bus.Address(a), func(to bus.Address, data []byte) {
			from, ok := wire.PeekFrom(data)
			if !ok {
				t.Errorf("seed %d: unreadable sender", seed)
			}
			w.got = append(w.got, arrival{from, uint64(to), w.w.Now()})
		}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// msg is an envelope from → to padded to size bytes.
func msg(t *testing.T, from, to uint64, size int) []byte {
	t.Helper()
	for pad := size; pad >= 0; pad-- { // the payload's length prefix grows with it
		data, err := wire.Encode(nil, wire.Header{Type: wire.MsgType_MSG_HEARTBEAT, From: from, To: to}, make([]byte, pad))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == size {
			return data
		}
	}
	t.Fatalf("no envelope of %d bytes", size)
	return nil
}

// TestShaperFanOut: a peer sends one message to each of k neighbors at
// once; its uplink sends them one after the other, so the i-th arrives
// (i+1)·n·8/up after the send (plus the downlink's own serialization), and
// the mean queueing delay is (k-1)/2 transmissions.
func TestShaperFanOut(t *testing.T) {
	const k, size = 8, 3200
	w := newWorld(t, 1, k+1, Uniform(Mbit, 8*Mbit))
	for to := 1; to <= k; to++ {
		if err := w.s.Publish(bus.Address(to), msg(t, 0, uint64(to), size)); err != nil {
			t.Fatal(err)
		}
	}
	w.w.RunUntil(time.Minute)
	if len(w.got) != k {
		t.Fatalf("delivered %d of %d", len(w.got), k)
	}
	up, down := Serialize(size, Mbit), Serialize(size, 8*Mbit)
	for i, a := range w.got {
		if want := time.Duration(i+1)*up + down; a.at != want || a.to != uint64(i+1) {
			t.Errorf("arrival %d: to %d at %v, want to %d at %v", i, a.to, a.at, i+1, want)
		}
	}
	st := w.s.Faults()
	if want := time.Duration(k*(k-1)/2) * up; st.Wait[Up] != want || st.Queued[Up] != k {
		t.Errorf("uplink: %d queued, total wait %v; want %d, %v", st.Queued[Up], st.Wait[Up], k, want)
	}
	if st.Wait[Down] != 0 || st.Pending != 0 || st.Delivered != k {
		t.Errorf("stats %+v: want no downlink wait, nothing pending, %d delivered", st, k)
	}
}

// TestShaperDownlinkContention: k peers send to one receiver at once; their
// uplinks are fast, the receiver's downlink slow, so the messages queue at
// the downlink.
func TestShaperDownlinkContention(t *testing.T) {
	const k, size = 4, 1000
	w := newWorld(t, 1, k+1, Uniform(100*Mbit, Mbit))
	for from := 1; from <= k; from++ {
		_ = w.s.Publish(0, msg(t, uint64(from), 0, size))
	}
	w.w.RunUntil(time.Minute)
	up, down := Serialize(size, 100*Mbit), Serialize(size, Mbit)
	for i, a := range w.got {
		if want := up + time.Duration(i+1)*down; a.at != want {
			t.Errorf("arrival %d at %v, want %v", i, a.at, want)
		}
	}
	if st := w.s.Faults(); st.Wait[Down] != time.Duration(k*(k-1)/2)*down || st.Wait[Up] != 0 {
		t.Errorf("waits up %v down %v; want 0, %v", st.Wait[Up], st.Wait[Down], time.Duration(k*(k-1)/2)*down)
	}
}

// TestShaperOverflow: a 10 KB uplink queue holds three 3.2 KB heartbeats,
// so of eight sent at once five are dropped (counted, with their bytes),
// while eight 400-byte ones all pass.
func TestShaperOverflow(t *testing.T) {
	for _, tc := range []struct {
		size, delivered int
	}{{3200, 3}, {400, 8}} {
		c := Uniform(Mbit, 0)
		c.Queue = 10 * KB
		w := newWorld(t, 1, 9, c)
		for to := 1; to <= 8; to++ {
			_ = w.s.Publish(bus.Address(to), msg(t, 0, uint64(to), tc.size))
		}
		w.w.RunUntil(time.Minute)
		st := w.s.Faults()
		drops := 8 - tc.delivered
		if len(w.got) != tc.delivered || st.Dropped[Up] != uint64(drops) || st.DroppedBytes[Up] != uint64(drops*tc.size) || st.Dropped[Down] != 0 {
			t.Errorf("size %d: delivered %d, dropped %d (%d bytes); want %d, %d (%d bytes)",
				tc.size, len(w.got), st.Dropped[Up], st.DroppedBytes[Up], tc.delivered, drops, drops*tc.size)
		}
	}
}

// TestShaperLinkCap: the per-link cap slows one link without touching
// another from the same sender beyond the shared uplink.
func TestShaperLinkCap(t *testing.T) {
	c := Uniform(10*Mbit, 0)
	c.Link = Mbit
	w := newWorld(t, 1, 3, c)
	_ = w.s.Publish(1, msg(t, 0, 1, 1000))
	_ = w.s.Publish(1, msg(t, 0, 1, 1000))
	_ = w.s.Publish(2, msg(t, 0, 2, 1000))
	w.w.RunUntil(time.Minute)
	up, capped := Serialize(1000, 10*Mbit), Serialize(1000, Mbit)
	want := map[time.Duration]uint64{up + capped: 1, up + 2*capped: 1, 3*up + capped: 2}
	for _, a := range w.got {
		if want[a.at] != a.to {
			t.Errorf("arrival to %d at %v; want %v", a.to, a.at, want)
		}
		delete(want, a.at)
	}
}

// TestShaperOffPassesThrough: without a limit nothing is held.
func TestShaperOffPassesThrough(t *testing.T) {
	w := newWorld(t, 1, 2, Config{})
	_ = w.s.Publish(1, msg(t, 0, 1, 100))
	w.w.RunUntil(time.Minute)
	if len(w.got) != 1 || w.got[0].at != 0 || w.s.Faults().Held != 0 {
		t.Errorf("got %v, stats %+v; want one delivery at 0 and nothing held", w.got, w.s.Faults())
	}
}

// TestShaperBatchSameAsPublish: PublishBatch gives the deliveries Publish
// gives, at the same times (a batch costs the uplink one copy per receiver).
func TestShaperBatchSameAsPublish(t *testing.T) {
	c := Config{Classes: []Class{{0.5, Mbit, 2 * Mbit}, {0.5, 0, 8 * Mbit}}, Queue: 8 * KB}
	run := func(batched bool) []arrival {
		w := newWorld(t, 7, 10, c)
		for from := range 10 {
			var msgs []bus.Message
			for to := range 10 {
				if to != from {
					msgs = append(msgs, bus.Message{To: bus.Address(to), Data: msg(t, uint64(from), uint64(to), 1500)})
				}
			}
			if batched {
				_ = w.s.PublishBatch(msgs)
			} else {
				for _, m := range msgs {
					_ = w.s.Publish(m.To, m.Data)
				}
			}
		}
		w.w.RunUntil(time.Minute)
		return w.got
	}
	a, b := run(false), run(true)
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("seed 7: %d deliveries one by one, %d batched", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7: delivery %d: %+v one by one, %+v batched", i, a[i], b[i])
		}
	}
}
