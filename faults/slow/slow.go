// Package slow is gridbed's slow peers (the timeline's slow fault): a
// fraction of the peers, stalled by their owners' load, take an extra
// service time for every message they receive. Service is first come,
// first served: a message reaching a slow peer waits until the peer has
// served those before it, then for the service time, and only then is
// handed on to the bus (and the peer's mailbox). The set of slow peers and
// the service time change mid-run.
package slow

import (
	"sync"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// Scheduler is the driver's emulated time (link.Scheduler's shape).
type Scheduler interface {
	Now() time.Duration
	At(t time.Duration, fn func())
}

// Stats are a Service's counters.
type Stats struct {
	Served  uint64        // messages that waited for a slow peer
	Wait    time.Duration // their total wait (queueing and service)
	MaxWait time.Duration
	Pending uint64 // held, not yet handed on: in flight at the end of a run
}

// Service is a bus decorator that holds messages to slow peers for their
// service. Register, Unregister, Stats and Close are the inner bus's. Safe
// for concurrent Publish.
type Service struct {
	bus.Bus
	sched Scheduler

	mu    sync.Mutex
	slow  func(bus.Address) bool // nil: nobody is slow
	delay time.Duration
	busy  map[bus.Address]time.Duration // when each slow peer is free again
	st    Stats
}

// New returns a Service over inner with no slow peer.
func New(inner bus.Bus, sched Scheduler) *Service {
	return &Service{Bus: inner, sched: sched, busy: map[bus.Address]time.Duration{}}
}

// Set makes the addresses for which slow is true take delay per message
// from now on (delay 0 or slow nil: nobody); messages already held keep
// their turn.
func (s *Service) Set(slow func(bus.Address) bool, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if delay <= 0 {
		slow = nil
	}
	s.slow, s.delay = slow, delay
}

// Faults reads the counters.
func (s *Service) Faults() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Publish hands data to a peer that is not slow at once; for a slow one it
// copies data and hands it on once the peer has served it.
func (s *Service) Publish(to bus.Address, data []byte) error {
	s.mu.Lock()
	if s.slow == nil || !s.slow(to) {
		s.mu.Unlock()
		return s.Bus.Publish(to, data)
	}
	h := s.hold(to, data)
	s.mu.Unlock()
	s.handOn(h)
	return nil
}

// PublishBatch (bus.Batcher, bus.fanout: batched) hands the messages to
// peers that are not slow on as one batch, in order, and holds those to
// slow peers as Publish does: the same deliveries, the same moments.
func (s *Service) PublishBatch(msgs []bus.Message) error {
	s.mu.Lock()
	if s.slow == nil {
		s.mu.Unlock()
		return bus.PublishBatch(s.Bus, msgs)
	}
	now := make([]bus.Message, 0, len(msgs))
	var holds []held
	for _, m := range msgs {
		if s.slow(m.To) {
			holds = append(holds, s.hold(m.To, m.Data))
		} else {
			now = append(now, m)
		}
	}
	s.mu.Unlock()
	for _, h := range holds {
		s.handOn(h)
	}
	return bus.PublishBatch(s.Bus, now)
}

// held is a copy of a message to a slow peer and when it is served.
type held struct {
	to   bus.Address
	data []byte
	done time.Duration
}

// hold queues a message for the slow peer to behind those before it and
// counts its wait; s.mu is held by the caller.
func (s *Service) hold(to bus.Address, data []byte) held {
	now := s.sched.Now()
	done := max(now, s.busy[to]) + s.delay
	s.busy[to] = done
	wait := done - now
	s.st.Served++
	s.st.Wait += wait
	s.st.MaxWait = max(s.st.MaxWait, wait)
	s.st.Pending++
	return held{to, append([]byte(nil), data...), done}
}

// handOn hands a held message on to the bus once its peer has served it.
func (s *Service) handOn(h held) {
	s.sched.At(h.done, func() {
		s.mu.Lock()
		s.st.Pending--
		s.mu.Unlock()
		_ = s.Bus.Publish(h.to, h.data) // the bus counts its own errors
	})
}
