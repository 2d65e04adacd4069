// Package bandwidth is gridbed's bandwidth model (link.bandwidth): every
// peer sits behind an access link of limited upload and download capacity,
// drawn from classes of links over the peers, and messages queue behind one
// another by their size.
//
// The model is serialization delay. A message of n bytes from peer s to
// peer r passes up to three first-come-first-served stages, each a queue
// with a finish time (store and forward):
//
//  1. s's uplink, rate up(s): it starts once the uplink has sent everything
//     queued before it and takes n·8/up(s);
//  2. the (s, r) link, if link.bandwidth.link caps it: likewise at the cap;
//  3. r's downlink, rate down(r), entered when the message leaves stage 2,
//     behind whatever reached r's downlink before it.
//
// Then it goes on to the rest of the link model (the latency) and the bus.
// An unlimited stage (rate 0) takes no time and holds nothing. An access
// queue may hold at most Config.Queue bytes — the messages not yet fully
// sent, the one in transmission included; a message that would exceed it is
// dropped (a tail drop, counted by direction). Queueing delay — the wait
// before a message's own transmission starts — is observed per stage.
//
// There is no multicast: a message to k receivers (a heartbeat to every
// neighbor; bus.fanout: batched too) costs the sender's uplink k copies.
//
// Everything is deterministic given the order of Publish calls and the
// Scheduler's time, so the deterministic driver (emulator/sim) gives the
// same queues for the same seed. A peer's class is a seeded hash of its
// address (Config.ClassOf).
package bandwidth

import (
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
)

// Scheduler is the driver's emulated time (link.Scheduler's shape).
type Scheduler interface {
	Now() time.Duration
	At(t time.Duration, fn func())
}

// Direction is the access link a queue belongs to.
type Direction int

// The directions.
const (
	Up   Direction = iota // the sender's uplink
	Down                  // the receiver's downlink
)

// Directions are the label values of the bandwidth metrics.
var Directions = []string{"up", "down"}

func (d Direction) String() string { return Directions[d] }

// Stats are a Shaper's counters.
type Stats struct {
	// Held counts the messages that passed at least one limited stage (or
	// were dropped at one).
	Held uint64
	// Delivered counts the held messages handed on; Delay is the total time
	// the model added to them (queueing and serialization), MaxDelay the
	// longest.
	Delivered uint64
	Delay     time.Duration
	MaxDelay  time.Duration
	// Queued and Wait are, per Direction, the messages admitted to an
	// access queue and their total queueing delay (before their own
	// transmission started).
	Queued [2]uint64
	Wait   [2]time.Duration
	// Dropped and DroppedBytes are, per Direction, the messages (and their
	// bytes) dropped because the queue was full.
	Dropped      [2]uint64
	DroppedBytes [2]uint64
	// Pending counts the held messages neither handed on nor dropped: in
	// flight at the end of a run.
	Pending uint64
}

// DroppedTotal is the messages dropped in either direction.
func (s Stats) DroppedTotal() uint64 { return s.Dropped[Up] + s.Dropped[Down] }

// Shaper is the bandwidth model as a bus decorator. Register, Unregister,
// Stats and Close are the inner bus's. Safe for concurrent Publish.
type Shaper struct {
	bus.Bus
	sched Scheduler
	seed  uint64

	mu      sync.Mutex
	cfg     Config
	on      bool
	up      map[bus.Address]*queue
	down    map[bus.Address]*queue
	links   map[[2]bus.Address]time.Duration // when each capped link is free
	observe func(Direction, time.Duration)
	st      Stats
}

// New returns a Shaper over inner that limits nothing until Set; classes
// are drawn from seed.
func New(inner bus.Bus, sched Scheduler, seed uint64) *Shaper {
	if sched == nil {
		panic("bandwidth: New: nil Scheduler")
	}
	return &Shaper{Bus: inner, sched: sched, seed: seed,
		up: map[bus.Address]*queue{}, down: map[bus.Address]*queue{}, links: map[[2]bus.Address]time.Duration{}}
}

// Set applies c to the messages published afterwards; messages already
// queued keep their place and their rates. It panics if c is invalid.
func (s *Shaper) Set(c Config) {
	if err := c.Validate(); err != nil {
		panic(err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.on = c, c.On()
}

// Config returns the current configuration.
func (s *Shaper) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// SetObserver makes the Shaper report every queueing delay (called with its
// lock held: observe must not call the Shaper).
func (s *Shaper) SetObserver(observe func(Direction, time.Duration)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observe = observe
}

// Class returns the access link of address a (Config.ClassOf), and false
// when there are no classes.
func (s *Shaper) Class(a bus.Address) (Class, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.cfg.ClassOf(s.seed, a)
	if i < 0 {
		return Class{}, false
	}
	return s.cfg.Classes[i], true
}

// Faults reads the counters.
func (s *Shaper) Faults() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Publish hands data on at once when no stage limits it, and otherwise
// queues a copy (or drops it on a full uplink queue).
func (s *Shaper) Publish(to bus.Address, data []byte) error {
	if s.Hold(to, data) {
		return nil
	}
	return s.Bus.Publish(to, data)
}

// PublishBatch (bus.Batcher) holds each message as Publish would and hands
// the ones no stage limits on as one batch.
func (s *Shaper) PublishBatch(msgs []bus.Message) error {
	now := make([]bus.Message, 0, len(msgs))
	for _, m := range msgs {
		if !s.Hold(m.To, m.Data) {
			now = append(now, m)
		}
	}
	return bus.PublishBatch(s.Bus, now)
}

// Hold takes the message into the model unless no stage limits it (false:
// the caller hands it on at once). A held message is copied, queued and
// later published to the inner bus, or dropped on a full queue.
func (s *Shaper) Hold(to bus.Address, data []byte) bool {
	s.mu.Lock()
	if !s.on {
		s.mu.Unlock()
		return false
	}
	from, known := wire.PeekFrom(data)
	var upR, downR Rate
	if i := s.cfg.ClassOf(s.seed, bus.Address(from)); known && i >= 0 {
		upR = s.cfg.Classes[i].Up
	}
	if i := s.cfg.ClassOf(s.seed, to); i >= 0 {
		downR = s.cfg.Classes[i].Down
	}
	capR := s.cfg.Link
	if !known {
		capR = 0 // a message whose sender cannot be read passes the per-link cap
	}
	if upR == 0 && downR == 0 && capR == 0 {
		s.mu.Unlock()
		return false
	}
	now := s.sched.Now()
	n := len(data)
	s.st.Held++
	t := now
	if upR > 0 {
		wait, done, ok := s.queueOf(s.up, bus.Address(from)).admit(now, n, upR, s.cfg.Queue)
		if !ok {
			s.drop(Up, n)
			s.mu.Unlock()
			return true
		}
		s.queued(Up, wait)
		t = done
	}
	if capR > 0 {
		k := [2]bus.Address{bus.Address(from), to}
		t = max(t, s.links[k]) + Serialize(n, capR)
		s.links[k] = t
	}
	s.st.Pending++
	limit := s.cfg.Queue
	s.mu.Unlock()
	cp := append([]byte(nil), data...)
	if downR > 0 {
		if t == now {
			s.downlink(now, to, cp, downR, limit)
		} else {
			s.sched.At(t, func() { s.downlink(now, to, cp, downR, limit) })
		}
		return true
	}
	s.handOn(now, t, to, cp)
	return true
}

// downlink queues a message that reached to's downlink (rate r) and hands it
// on once it has been received whole.
func (s *Shaper) downlink(sent time.Duration, to bus.Address, data []byte, r Rate, limit Size) {
	s.mu.Lock()
	now := s.sched.Now()
	wait, done, ok := s.queueOf(s.down, to).admit(now, len(data), r, limit)
	if !ok {
		s.drop(Down, len(data))
		s.st.Pending--
		s.mu.Unlock()
		return
	}
	s.queued(Down, wait)
	s.mu.Unlock()
	s.handOn(sent, done, to, data)
}

// handOn publishes data to the inner bus at at (> sent).
func (s *Shaper) handOn(sent, at time.Duration, to bus.Address, data []byte) {
	s.sched.At(at, func() {
		s.mu.Lock()
		d := at - sent
		s.st.Pending--
		s.st.Delivered++
		s.st.Delay += d
		s.st.MaxDelay = max(s.st.MaxDelay, d)
		s.mu.Unlock()
		_ = s.Bus.Publish(to, data) // the bus counts its own errors
	})
}

func (s *Shaper) drop(d Direction, n int) {
	s.st.Dropped[d]++
	s.st.DroppedBytes[d] += uint64(n)
}

func (s *Shaper) queued(d Direction, wait time.Duration) {
	s.st.Queued[d]++
	s.st.Wait[d] += wait
	if s.observe != nil {
		s.observe(d, wait)
	}
}

func (s *Shaper) queueOf(m map[bus.Address]*queue, a bus.Address) *queue {
	q := m[a]
	if q == nil {
		q = &queue{}
		m[a] = q
	}
	return q
}

// queue is one access link's FIFO: when it is free again, and (with a byte
// limit) the messages not yet fully sent.
type queue struct {
	free  time.Duration
	items []sending
	bytes int64
}

// sending is a message in an access queue: when its last bit leaves, and
// its size.
type sending struct {
	done time.Duration
	n    int64
}

// admit queues n bytes at now on a link of rate r whose queue holds at most
// limit bytes (0: no limit): the message waits until the messages before it
// have been sent, then takes Serialize(n, r). It returns the wait, when the
// message has been sent, and false (changing nothing) when the queue's
// bytes not yet sent — the one in transmission included — plus n would
// exceed limit.
func (q *queue) admit(now time.Duration, n int, r Rate, limit Size) (wait, done time.Duration, ok bool) {
	i := 0
	for i < len(q.items) && q.items[i].done <= now {
		q.bytes -= q.items[i].n
		i++
	}
	if i > 0 {
		q.items = append(q.items[:0], q.items[i:]...)
	}
	if limit > 0 && q.bytes+int64(n) > int64(limit) {
		return 0, 0, false
	}
	start := max(now, q.free)
	done = start + Serialize(n, r)
	q.free = done
	if limit > 0 {
		q.items = append(q.items, sending{done, int64(n)})
		q.bytes += int64(n)
	}
	return start - now, done, true
}

var (
	_ bus.Bus     = (*Shaper)(nil)
	_ bus.Batcher = (*Shaper)(nil)
)
