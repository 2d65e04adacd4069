package bus

// Server outages: StopServer and StartServer stop the embedded nats-server
// mid-run and start a fresh one, to emulate a bus outage (the timeline's
// bus_restart, package faults/outage).

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
)

// errNoServer is what a connection's reconnect attempt gets while the
// embedded server is stopped; nats.go retries after embeddedReconnectWait.
var errNoServer = errors.New("bus: embedded NATS server stopped")

// inProcessDialer is shard s's nats.InProcessConnProvider: it connects to the
// bus's current embedded server, whichever StartServer started last, and
// refuses while the server is stopped. nats.go calls it with the
// connection's lock held, so it touches only atomics.
type inProcessDialer struct{ s *shard }

var _ nats.InProcessConnProvider = inProcessDialer{}

func (d inProcessDialer) InProcessConn() (net.Conn, error) {
	b := d.s.b
	srv := b.live.Load()
	if srv == nil {
		// StopServer increments outages before clearing live, so this is
		// the current outage. nats.go dials only from its reconnect loop,
		// after the connection's reader and flusher have exited.
		d.s.deadDial.Store(b.outages.Load())
		return nil, errNoServer
	}
	return srv.InProcessConn()
}

// StopServer shuts the embedded nats-server down, as a bus outage. It
// returns ErrExternalServer for a bus connected to an external server (the
// bus does not own it), ErrServerStopped if the server is already stopped
// and ErrClosed after Close.
//
// Every connection loses the server and keeps trying to reconnect (every
// embeddedReconnectWait, without giving up) until StartServer. Meanwhile:
//   - Publish returns ErrDisconnected at once; the message is counted in
//     Stats().PublishErrs, Refused and Lost (nothing is buffered for after
//     the restart).
//   - Messages the connections had already received keep being handed to
//     the Handlers; Register and Unregister work as usual.
//   - Flush returns nil at once.
//
// StopServer returns once every connection has noticed the loss (typically
// within a few milliseconds) and the messages it lost have been counted:
// those accepted by Publish before the outage and never received by a
// connection (still in nats.go's or the server's buffers) are added to
// Stats().Lost, and Stats().Outages is incremented. It is exact when this
// bus is the only client publishing on its Run (see Stats).
//
// StopServer, StartServer and Close are serialised; they must not be called
// from a Handler or a NATS callback. Publish may run concurrently.
func (b *NATSBus) StopServer() error {
	if !b.embedded {
		return fmt.Errorf("StopServer: %w", ErrExternalServer)
	}
	b.ctlMu.Lock()
	defer b.ctlMu.Unlock()
	if b.closed.Load() {
		return ErrClosed
	}
	if b.stopped {
		return ErrServerStopped
	}
	srv := b.live.Load()
	k := b.outages.Add(1)
	b.live.Store(nil) // reconnect attempts fail from now on
	b.stopped = true
	srv.Shutdown()
	srv.WaitForShutdown()

	// The server closed every connection's pipe. Wait until each
	// connection has tried to reconnect to the stopped server: its reader
	// has then exited (nothing more is received) and it refuses publishes.
	if !pollUntil(outageTimeout, func() bool {
		for _, s := range b.shards {
			if s.deadDial.Load() != k {
				return false
			}
		}
		return true
	}) {
		return fmt.Errorf("bus: StopServer: connections still up %s after the server stopped; messages lost in transit are not counted", outageTimeout)
	}

	// Every connection is frozen: its OutMsgs (messages accepted) and
	// InMsgs (messages received, including dropped ones) cannot change
	// until StartServer. A message for address a is published and received
	// on the same connection (a's shard), so each accepted message that was
	// not received is lost. OutMsgs-InMsgs is cumulative; count what it grew
	// by since the previous outage.
	var lost uint64
	for _, s := range b.shards {
		st := s.nc.Stats()
		gap := int64(st.OutMsgs) - int64(st.InMsgs)
		if d := gap - s.gapBase; d > 0 {
			lost += s.lostTail(uint64(d))
		}
		s.gapBase = gap
	}
	b.transitLost.Add(lost)
	b.log.Warn("nats server stopped", "outage", k, "lost_in_transit", lost)
	return nil
}

// StartServer starts a fresh embedded nats-server with the same
// configuration as OpenNATS's (a listening server gets the same port, so
// ClientURL stays valid) and waits until every connection of the bus has
// reconnected to it, re-subscribed, and the server has processed the
// subscriptions (like OpenNATS: messages published after it returns are
// delivered). Reconnecting takes up to embeddedReconnectWait after the
// server is ready, a few milliseconds in all. Other buses joined through
// ClientURL reconnect on their own schedule (externalReconnectWait plus
// jitter).
//
// It returns ErrExternalServer for a bus connected to an external server,
// ErrServerRunning if the server is running and ErrClosed after Close. If
// the server cannot start the bus stays stopped and StartServer may be
// retried. Stats().Reconnects has grown by at least Connections() when it
// returns successfully. Same calling rules as StopServer.
func (b *NATSBus) StartServer() error {
	if !b.embedded {
		return fmt.Errorf("StartServer: %w", ErrExternalServer)
	}
	b.ctlMu.Lock()
	defer b.ctlMu.Unlock()
	if b.closed.Load() {
		return ErrClosed
	}
	if !b.stopped {
		return ErrServerRunning
	}
	srv, err := startEmbeddedServer(b.listen, b.port)
	if err != nil {
		return fmt.Errorf("StartServer: %w", err)
	}
	before := make([]uint64, len(b.shards))
	for i, s := range b.shards {
		before[i] = s.reconnects.Load()
	}
	b.srv.Store(srv)
	b.live.Store(srv)
	b.stopped = false

	// The reconnect handler runs after nats.go has re-sent the
	// subscription; the flush then makes sure the server has processed it.
	if !pollUntil(outageTimeout, func() bool {
		for i, s := range b.shards {
			if s.reconnects.Load() == before[i] {
				return false
			}
		}
		return true
	}) {
		return fmt.Errorf("bus: StartServer: connections not reconnected after %s", outageTimeout)
	}
	if err := b.flushAll(); err != nil {
		return fmt.Errorf("StartServer: %w", err)
	}
	b.log.Info("nats server restarted", "outage", b.outages.Load())
	return nil
}

// OwnsServer reports whether the bus runs its own embedded nats-server,
// which StopServer and StartServer can stop and start (false for a bus
// connected to an external server). With StopServer and StartServer it is
// the outage.Server capability of package faults/outage.
func (b *NATSBus) OwnsServer() bool { return b.embedded }

// ServerStopped reports whether the embedded server is stopped (between
// StopServer and StartServer).
func (b *NATSBus) ServerStopped() bool {
	b.ctlMu.RLock()
	defer b.ctlMu.RUnlock()
	return b.stopped
}

// pollUntil checks cond every millisecond until it holds (true) or timeout
// elapses (false).
func pollUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// AwaitConnected waits (at most timeout) until every connection of the bus
// is connected to its server, then flushes them all: when it returns nil
// the server has processed every connection's subscription, so messages
// published from anywhere from then on reach this bus. A bus on an
// external server whose server restarted (a run split across processes,
// emulator/workers, whose coordinator's server had a bus_restart) calls it
// before its process says it is back. It returns ErrClosed after Close.
func (b *NATSBus) AwaitConnected(timeout time.Duration) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if !pollUntil(timeout, func() bool {
		for _, s := range b.shards {
			if !s.nc.IsConnected() {
				return false
			}
		}
		return true
	}) {
		return fmt.Errorf("bus: connections not reconnected after %s", timeout)
	}
	return b.Flush()
}
