package driver

import (
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/metrics"
)

// fakeHost records what the base asks of it; its handle on a peer is the
// peer's id.
type fakeHost struct {
	now     time.Duration
	started []string
	halted  []string
	clients int
}

func (h *fakeHost) Now() time.Duration                                   { return h.now }
func (h *fakeHost) Publish(core.NodeID, []byte)                          {}
func (h *fakeHost) SetTimer(core.NodeID, core.TimerKind, time.Duration)  {}
func (h *fakeHost) IO(core.NodeID, clock.Skew) peer.IO                   { return h }
func (h *fakeHost) AddPeer(p *peer.Peer, _ peer.IO) (core.NodeID, error) { return p.ID(), nil }
func (h *fakeHost) AddClient(*peer.Client, peer.IO) error                { h.clients++; return nil }
func (h *fakeHost) StartAt(id core.NodeID, at time.Duration) {
	h.started = append(h.started, fmtStart(id, at))
}
func (h *fakeHost) StartNow(id core.NodeID) { h.started = append(h.started, fmtStart(id, -1)) }
func (h *fakeHost) StartMember(id core.NodeID, _ []core.Timer, at time.Duration) {
	h.started = append(h.started, fmtStart(id, at))
}
func (h *fakeHost) Halt(id core.NodeID, ep core.NodeID, graceful bool) {
	if id != ep {
		panic("halt: handle is not the peer's")
	}
	kind := "crash"
	if graceful {
		kind = "leave"
	}
	h.halted = append(h.halted, kind+" "+time.Duration(id).String())
}

func fmtStart(id core.NodeID, at time.Duration) string {
	return time.Duration(id).String() + "@" + at.String()
}

func newBase(t *testing.T, seed uint64, n int) (*Base[core.NodeID], *fakeHost) {
	t.Helper()
	h := &fakeHost{}
	b := &Base[core.NodeID]{}
	b.Init("fake", h, Options{Seed: seed, Overlay: overlay.Config{HeartbeatPeriod: 30 * time.Second}, Traffic: metrics.NewTraffic()})
	for i := 1; i <= n; i++ {
		if err := b.Spawn(core.NodeID(i), can.Point{1 << 31, 1 << 31}, time.Duration(i)*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return b, h
}

// The initial population joins in order: the head at its slot, each next
// peer once the previous one has joined (at its slot if that is later).
func TestBaseJoinOrder(t *testing.T) {
	b, h := newBase(t, 1, 3)
	if err := b.Spawn(5, can.Point{1, 1}, 0); err == nil {
		t.Fatal("peer 5 spawned after peer 3")
	}
	b.Start()
	e := env[core.NodeID]{IO: h, b: b}
	h.now = 10 * time.Second
	e.Joined(2) // not the awaited peer: no start
	e.Joined(1)
	h.now = 11 * time.Second
	e.Joined(2)
	want := []string{fmtStart(1, time.Second), fmtStart(2, 10*time.Second), fmtStart(3, 11*time.Second)}
	if !slices.Equal(h.started, want) {
		t.Fatalf("starts %v, want %v", h.started, want)
	}
	if b.Members() != 2 || !b.Member(1) || b.Alive() != 3 {
		t.Fatalf("members %d, alive %d", b.Members(), b.Alive())
	}
	e.Joined(2) // reported twice: still one peer joined
	if b.Started() != 3 || b.JoinedEver() != 2 {
		t.Fatalf("started %d, joined %d; want 3 and 2", b.Started(), b.JoinedEver())
	}
}

// A crashed peer is no member, however late its join is reported, and the
// oracle sees it as not joined although its own state says it is.
func TestBaseCrashedPeer(t *testing.T) {
	b, h := newBase(t, 2, 2)
	e := env[core.NodeID]{IO: h, b: b}
	e.Joined(1)
	e.Joined(2)
	gone := b.DepartPicked(func(m []core.NodeID) []core.NodeID { return m[1:] }, true)
	if !slices.Equal(gone, []core.NodeID{2}) || !slices.Equal(h.halted, []string{"crash " + time.Duration(2).String()}) {
		t.Fatalf("departed %v, halted %v", gone, h.halted)
	}
	e.Joined(2)
	if b.Member(2) || b.Alive() != 1 {
		t.Fatalf("crashed peer back as a member (alive %d)", b.Alive())
	}
	if b.Started() != 2 || b.JoinedEver() != 2 || b.Members() != 1 {
		t.Fatalf("started %d, joined %d, members %d: a departed peer still counts as started and joined", b.Started(), b.JoinedEver(), b.Members())
	}
	var s peer.State
	s.Snapshot.ID, s.Snapshot.Joined = 2, true
	if b.Observed(s).Snapshot.Joined {
		t.Fatal("the oracle sees the crashed peer as joined")
	}
	s.Snapshot.ID = 1
	if !b.Observed(s).Snapshot.Joined {
		t.Fatal("the oracle sees a live member as not joined")
	}
	if b.Depart(false) != 1 || b.Depart(false) != 0 {
		t.Fatal("the last member did not depart, or a departure came from an empty set")
	}
}

// The same seed gives the same departures: the boot stream is the base's.
func TestBaseDeparturesFollowTheSeed(t *testing.T) {
	order := func(seed uint64) []core.NodeID {
		b, h := newBase(t, seed, 20)
		e := env[core.NodeID]{IO: h, b: b}
		for i := 1; i <= 20; i++ {
			e.Joined(core.NodeID(i))
		}
		var out []core.NodeID
		for id := b.Depart(true); id != 0; id = b.Depart(true) {
			out = append(out, id)
		}
		return out
	}
	a, again, other := order(7), order(7), order(8)
	if len(a) != 20 || !slices.Equal(a, again) {
		t.Fatalf("seed 7 departed %v, then %v", a, again)
	}
	if slices.Equal(a, other) {
		t.Fatalf("seeds 7 and 8 departed in the same order %v", a)
	}
}

// One job client per run.
func TestBaseOneClient(t *testing.T) {
	b, h := newBase(t, 3, 1)
	if err := b.AddClient(jobs.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddClient(jobs.ClientConfig{}); err == nil || h.clients != 1 {
		t.Fatalf("second client: err %v, %d hosted", err, h.clients)
	}
}

type waveEvents []wave.Event

func (w *waveEvents) WaveEvent(e wave.Event) { *w = append(*w, e) }

// A skewed peer's Wave events reach the job-history check at emulated
// time: the instant its clock read the event's time (clock.Skew.Emulated).
func TestSkewedWaveSink(t *testing.T) {
	for _, sk := range []clock.Skew{
		{Offset: time.Hour},
		{Drift: 0.05, Offset: 10 * time.Minute, Anchor: 2 * time.Hour},
		{Drift: -0.3, Anchor: time.Hour},
	} {
		var got waveEvents
		s := skewedWaveSink{&got, sk}
		local := 7*time.Hour + 13*time.Second
		s.WaveEvent(wave.Event{Kind: wave.Placed, Job: 3, At: local})
		if len(got) != 1 || got[0].Job != 3 || got[0].At != sk.Emulated(local) || sk.Local(got[0].At) < local || got[0].At == local {
			t.Fatalf("%+v: event at local %v reached the sink as %+v, want emulated %v", sk, local, got, sk.Emulated(local))
		}
	}
}
