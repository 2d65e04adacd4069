// Package outage is gridbed's bus outage (the timeline's bus_restart): for a
// while the transport itself is down and the messages sent meanwhile are
// lost. How depends on the bus:
//
//   - a bus with a server of its own that it can stop and start (the
//     Server capability: emulator/bus.NATSBus with an embedded nats-server)
//     really stops it; the bus counts what the outage destroyed
//     (bus.Stats.Refused and Lost);
//   - a bus on a server gridbed does not control (NATS at an external URL)
//     has no outage;
//   - any other bus (the deterministic driver's in-memory bus) gets a Switch
//     under the link model that drops, and counts, every message published
//     while it is down.
//
// Wrap installs the right one; Outage.Begin starts an outage.
package outage

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// Server is the capability of a bus whose transport runs on a server that
// can be stopped and started again mid-run. The NATS bus has it (its
// StopServer and StartServer say what an outage does to messages in flight).
type Server interface {
	// OwnsServer reports whether the bus started its server itself (an
	// embedded server), so that StopServer and StartServer can act on it.
	OwnsServer() bool
	StopServer() error
	StartServer() error
}

var _ Server = (*bus.NATSBus)(nil)

// Switch is the outage of a bus without a server: while down, every message
// published through it (or coming due after a link delay) is lost and
// counted. Register, Unregister, Stats and Close are the inner bus's.
type Switch struct {
	bus.Bus
	down    atomic.Bool
	dropped atomic.Uint64
}

// NewSwitch returns a Switch over inner, up.
func NewSwitch(inner bus.Bus) *Switch { return &Switch{Bus: inner} }

// SetDown takes the bus down (true) or brings it back up (false).
func (s *Switch) SetDown(down bool) { s.down.Store(down) }

// Dropped is the number of messages lost while the bus was down.
func (s *Switch) Dropped() uint64 { return s.dropped.Load() }

// Publish drops data while the bus is down and publishes it otherwise. A
// dropped message is not an error.
func (s *Switch) Publish(to bus.Address, data []byte) error {
	if s.down.Load() {
		s.dropped.Add(1)
		return nil
	}
	return s.Bus.Publish(to, data)
}

// PublishBatch drops every message of msgs while the switch is down, as
// Publish would one by one, and hands them to the inner bus as a batch
// otherwise (bus.PublishBatch).
func (s *Switch) PublishBatch(msgs []bus.Message) error {
	if s.down.Load() {
		s.dropped.Add(uint64(len(msgs)))
		return nil
	}
	return bus.PublishBatch(s.Bus, msgs)
}

// Outage is how a run's bus goes down: through its Switch, its own server,
// or not at all.
type Outage struct {
	sw  *Switch // a bus without a server
	srv Server  // a bus with a server of its own
}

// Wrap prepares the outages of inner and returns the bus to use in its
// place: inner itself when it is a Server, else a Switch over it.
func Wrap(inner bus.Bus) (*Outage, bus.Bus) {
	o := &Outage{}
	if s, ok := inner.(Server); ok {
		if s.OwnsServer() {
			o.srv = s
		}
		return o, inner
	}
	o.sw = NewSwitch(inner)
	return o, o.sw
}

// Dropped is the number of messages the Switch lost (0 for a Server, whose
// bus counts its own losses).
func (o *Outage) Dropped() uint64 {
	if o.sw == nil {
		return 0
	}
	return o.sw.Dropped()
}

// Begin starts an outage meant to last downFor and says what it did. The
// caller ends it by calling end downFor later; end is nil when the bus has
// no outage. A server is stopped, and later started, on goroutines of their
// own (both take wall time); warn receives what fails there.
func (o *Outage) Begin(downFor time.Duration, warn func(msg string, err error)) (end func(), detail string) {
	switch {
	case o.sw != nil:
		o.sw.SetDown(true)
		return func() { o.sw.SetDown(false) },
			fmt.Sprintf("bus down for %v: messages sent meanwhile are lost", downFor)
	case o.srv != nil:
		stopped := make(chan error, 1)
		go func() { stopped <- o.srv.StopServer() }()
		return func() {
				go func() {
					if err := <-stopped; err != nil {
						warn("NATS server stop failed", err)
						return
					}
					if err := o.srv.StartServer(); err != nil {
						warn("NATS server restart failed", err)
					}
				}()
			},
			fmt.Sprintf("embedded NATS server stopped for %v", downFor)
	}
	return nil, "not applied: the bus is an external NATS server, which gridbed does not control"
}
