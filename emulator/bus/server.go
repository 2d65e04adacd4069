package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

const (
	// embeddedMaxPayload is the largest message the embedded server accepts.
	embeddedMaxPayload = 8 << 20
	// embeddedMaxPending is the embedded server's per-client outbound buffer
	// limit. The server declares a client that falls this far behind a slow
	// consumer and disconnects it (losing whatever it had queued), so it is
	// set well above nats-server's 64 MB default: with one wildcard
	// subscription per connection, a single connection carries 1/Connections
	// of all traffic.
	embeddedMaxPending = 256 << 20
	// serverReadyTimeout bounds how long OpenNATS waits for the embedded
	// server to accept connections.
	serverReadyTimeout = 10 * time.Second
)

// startEmbeddedServer starts an in-process nats-server. When listen is false
// the server has no TCP listener at all and is reachable only through
// nats.InProcessServer; otherwise it also listens on 127.0.0.1 on a random
// port (see (*server.Server).ClientURL).
func startEmbeddedServer(listen bool) (*server.Server, error) {
	opts := &server.Options{
		ServerName: "gridbed",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		DontListen: !listen,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: embeddedMaxPayload,
		MaxPending: embeddedMaxPending,
		// No HTTP monitoring, clustering, JetStream: defaults leave them off.
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: create embedded nats-server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(serverReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("bus: embedded nats-server not ready after %s", serverReadyTimeout)
	}
	return srv, nil
}
