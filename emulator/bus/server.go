package bus

import (
	"fmt"
	"net"
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
// nats.InProcessServer; otherwise it also listens on 127.0.0.1, on port if it
// is not 0 (a restart keeps the port, so ClientURL stays valid) and on a
// random port if it is (see (*server.Server).ClientURL).
func startEmbeddedServer(listen bool, port int) (*server.Server, error) {
	return startServerOn("127.0.0.1", listen, port)
}

// startServerOn is startEmbeddedServer listening on host.
func startServerOn(host string, listen bool, port int) (*server.Server, error) {
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName: "gridbed",
		Host:       host,
		Port:       port,
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

// listenPort returns the TCP port srv listens on for clients, or 0 if it has
// no listener.
func listenPort(srv *server.Server) int {
	if a, ok := srv.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// ServeEmbedded starts an in-process nats-server listening on host (
// "127.0.0.1" for local processes, "0.0.0.0" for other machines) on port,
// or a random one when port is 0, that other processes reach over TCP at
// its ClientURL: the coordinator of a run split across processes
// (emulator/workers) serves its workers' buses with it. Shut it down with
// Shutdown and WaitForShutdown.
func ServeEmbedded(host string, port int) (*server.Server, error) {
	return startServerOn(host, true, port)
}
