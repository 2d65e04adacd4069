package bus

// NATS implementation of Bus.
//
// Subject scheme: a message for address a in run r travels on the subject
//
//	gb.<r>.<a % Connections>.<a>
//
// e.g. "gb.run7.3.1003" with 8 connections. The third token is the shard;
// connection k (of Connections) holds exactly one subscription, the wildcard
// "gb.<r>.<k>.*", and dispatches every message itself by the address in the
// last token. A publish for address a also goes out on connection a %
// Connections, which spreads publishing over the connections and means that
// a message from this bus to an address registered on this bus is published
// and received on the same connection (so Flush orders it, see Flush).
//
// Why one wildcard subscription per connection: measured on the 2-core dev
// machine with 10k actors, one wildcard per connection on 8 connections with
// own dispatch sustained ~400k msgs/s end to end; one NATS subscription per
// actor ~250-300k/s; one connection per actor ~170k/s and 1.4 GB.
//
// Server outages (StopServer, StartServer): every connection reconnects
// forever (nats.MaxReconnects(-1)) and nats.go re-sends its subscription on
// reconnect. While a connection is down, nats.go's reconnect buffer is
// disabled (nats.ReconnectBufSize(-1)), so Publish fails at once with
// ErrDisconnected instead of queueing the message for after the reconnect:
// an outage loses the messages sent during it, as a real network outage
// would, and each one is visible (Stats().Refused, PublishErrs, Lost). A
// reconnect buffer would instead deliver the first megabytes of the outage's
// traffic late, in a burst after the restart, turning part of the outage
// into extra latency whose extent depends on the buffer size, and fail only
// the rest. Messages accepted before the outage that the server had not yet
// delivered to a connection are lost with the server; StopServer counts them
// (accepted minus received per connection, see Stats).

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

const (
	// DefaultConnections is the number of client connections (and thus
	// shards) OpenNATS uses when NATSOptions.Connections is 0.
	DefaultConnections = 8
	// MaxConnections bounds NATSOptions.Connections.
	MaxConnections = 1024
	// MaxRunLen bounds the length of NATSOptions.Run.
	MaxRunLen = 32

	// subjectPrefix is the first token of every subject the bus uses.
	subjectPrefix = "gb"
	// subjBufLen fits "gb." + run (MaxRunLen) + "." + shard (4 digits) + "."
	// + address (20 digits), so Publish builds subjects on the stack.
	subjBufLen = 64
	// flushTimeout bounds each connection's round trip in Flush and Close.
	flushTimeout = 10 * time.Second

	// embeddedReconnectWait is how long a connection to the embedded server
	// waits between reconnect attempts (no jitter). An attempt while the
	// server is stopped costs one failed function call, so it is short: a
	// connection is back at most this long after StartServer's server is
	// ready.
	embeddedReconnectWait = 5 * time.Millisecond
	// externalReconnectWait is the same for an external server over TCP
	// (nats.go adds up to 100 ms of jitter).
	externalReconnectWait = 100 * time.Millisecond
	// outageTimeout bounds how long StopServer waits for every connection
	// to notice the server is gone, and StartServer for every connection to
	// be back.
	outageTimeout = 10 * time.Second
)

var (
	// ErrClosed is returned by operations on a bus after Close.
	ErrClosed = errors.New("bus: closed")
	// ErrDisconnected is returned by Publish when the connection to the NATS
	// server is down (the embedded server is stopped, or the server cut the
	// connection and it is reconnecting). The message is not sent and not
	// queued: it is lost and counted in Stats().Refused and Lost.
	ErrDisconnected = errors.New("bus: not connected to the NATS server, message lost")
	// ErrExternalServer is returned by StopServer and StartServer on a bus
	// connected to an external NATS server (NATSOptions.URL): only the
	// embedded server started by OpenNATS can be stopped and started.
	ErrExternalServer = errors.New("bus: the bus uses an external NATS server (NATSOptions.URL); only an embedded server can be stopped and started")
	// ErrServerStopped is returned by StopServer when the embedded server
	// is already stopped.
	ErrServerStopped = errors.New("bus: embedded NATS server already stopped")
	// ErrServerRunning is returned by StartServer when the embedded server
	// is running.
	ErrServerRunning = errors.New("bus: embedded NATS server already running")
)

// NATSOptions configure OpenNATS.
type NATSOptions struct {
	// URL of an external NATS server (or cluster, comma separated). Empty
	// starts an embedded nats-server in this process, reached without TCP.
	URL string
	// Run is the run id, the second token of every subject, so several runs
	// can share one NATS server. Required: 1 to MaxRunLen characters of
	// [a-zA-Z0-9_-].
	Run string
	// Connections is the number of client connections, which is also the
	// number of shards (subscriptions). 0 means DefaultConnections. Buses
	// exchanging messages through a shared server should use the same value,
	// although delivery also works if they differ (see NATSBus).
	Connections int
	// PendingMsgs and PendingBytes are the per-subscription (i.e. per
	// connection) limits on messages received but not yet handed to a
	// Handler; beyond them nats.go drops messages and counts them in
	// Stats().Dropped. 0 keeps the nats.go defaults (500k messages, 64 MB);
	// a negative value means unlimited.
	PendingMsgs  int
	PendingBytes int
	// Listen makes the embedded server also listen on 127.0.0.1 on a random
	// port (see ClientURL), so other processes can join. Only valid when URL
	// is empty. False: the embedded server has no listener at all.
	Listen bool
	// Logger receives connection events (disconnects, reconnects, async
	// errors). Nil discards them.
	Logger *slog.Logger
	// Batched makes PublishBatch send one NATS message (a batch frame,
	// frame.go) per connection of its receivers (bus.fanout: batched).
	// Publishing then keeps, per connection, the bookkeeping that counts
	// a frame lost in an outage or dropped by a slow consumer message by
	// message (see Stats). Without it PublishBatch publishes message by
	// message.
	Batched bool
	// Subscribe, if set, says which shards this bus subscribes to: a run
	// split across processes (emulator/workers) gives every process the
	// shards of the addresses it hosts, so that each message reaches the
	// one process that delivers it. The bus still publishes on every
	// connection. Nil subscribes to all.
	Subscribe func(shard int) bool
}

// NATSBus is the NATS implementation of Bus. It is safe for concurrent use.
//
// A message for address a travels on the subject gb.<Run>.<a %
// Connections>.<a>. Connection k holds one subscription, gb.<Run>.<k>.*, and
// publishes the messages for the addresses of its shard k.
//
// Messages are dispatched by the address in the subject, looked up in the
// handler table of the address's own shard (address % Connections), not of
// the subscription that received it; so a message published by a bus with a
// different Connections value is still delivered.
//
// Every bus sharing a server and a Run subscribes to all of that run's
// subjects unless NATSOptions.Subscribe gives it only some shards: a
// message is delivered by the bus that registered its address and counted
// as Unroutable by every other subscribed one. A run split across
// processes (emulator/workers) gives each process the shards it hosts.
//
// The embedded server can be stopped and started again mid-run (StopServer,
// StartServer) to emulate a bus outage; see the comment at the top of nats.go
// and Stats for what happens to the messages.
type NATSBus struct {
	run      string
	n        uint64 // len(shards)
	shards   []*shard
	embedded bool   // the bus started its own server (URL empty)
	listen   bool   // the embedded server listens on TCP (NATSOptions.Listen)
	port     int    // its port, reused by StartServer; 0 without listener
	url      string // URL other processes can connect to, or ""
	log      *slog.Logger

	// srv is the embedded server, the stopped one during an outage; nil
	// for an external URL. live is the running embedded server, nil while
	// stopped; the connections' in-process dialer (inProcessDialer) uses
	// it.
	srv  atomic.Pointer[server.Server]
	live atomic.Pointer[server.Server]

	closed atomic.Bool
	// ctlMu serialises Close, StopServer and StartServer; Flush holds it
	// for reading.
	ctlMu   sync.RWMutex
	stopped bool // guarded by ctlMu: StopServer succeeded, StartServer not yet

	batched bool // NATSOptions.Batched

	outages            atomic.Uint64 // StopServer calls that stopped the server
	transitLost        atomic.Uint64 // accepted messages the stopped servers lost
	closedPublishErrs  atomic.Uint64
	slowConsumerEvents atomic.Uint64
	disconnects        atomic.Uint64
	// lostOnDisconnect and cuts are settled by Close (settleCuts): the
	// messages the connections the server cut off mid-run took with
	// them, and how many connections were cut.
	lostOnDisconnect atomic.Uint64
	cuts             atomic.Uint64
}

var _ Bus = (*NATSBus)(nil)

// shard is one client connection with its wildcard subscription, the
// handlers of the addresses a with a % Connections == the shard's index, and
// its counters.
type shard struct {
	b      *NATSBus
	idx    int
	prefix string // "gb.<run>.<idx>."
	nc     *nats.Conn
	sub    *nats.Subscription // set once in OpenNATS, never changed; nil when publishOnly
	// publishOnly: the bus does not subscribe to this shard
	// (NATSOptions.Subscribe), it only publishes on its connection.
	publishOnly bool

	// Handler table. Registration is rare compared with delivery, the
	// critical section is one map lookup, and there are Connections tables,
	// so an RWMutex per shard is cheap: ~16 ns per lookup uncontended
	// (sync.Map: ~19 ns; under a continuously writing registrar the RWMutex
	// lookup degrades to ~70 ns vs ~32 ns, both negligible against the
	// ~2.5 µs per message NATS costs).
	mu       sync.RWMutex
	handlers map[Address]Handler

	// deliverMu is held while onMsg runs (a Handler included). The
	// shard's subscription delivers on a single nats.go goroutine, so it
	// is uncontended except when Close takes it to wait out the handler in
	// progress and set stopped: after Close returns no Handler runs.
	deliverMu sync.Mutex
	stopped   bool // guarded by deliverMu
	// abandoned: Close counted what the subscription still held as
	// discarded at once (teardown); later callbacks count nothing.
	abandoned bool // guarded by deliverMu

	// Counters written by publishers (any goroutine) ...
	published   atomic.Uint64
	publishErrs atomic.Uint64
	refused     atomic.Uint64 // publishErrs because the connection was down
	_           [64]byte      // keep the delivery-side counters on another cache line
	// ... and by this shard's delivery goroutine.
	delivered   atomic.Uint64
	unroutable  atomic.Uint64
	discarded   atomic.Uint64 // received after Close stopped delivery
	lastDropped atomic.Uint64 // highest sub.Dropped() seen, survives Close
	_           [64]byte

	// Outage bookkeeping. deadDial is the outage number (NATSBus.outages)
	// during which the connection last tried to reconnect to a stopped
	// server: nats.go dials only after the connection's reader has exited,
	// so from then on until StartServer nothing arrives on it and Publish
	// refuses. reconnects counts ReconnectHandler calls. gapBase is
	// OutMsgs-InMsgs of the connection when the last outage was settled
	// (guarded by NATSBus.ctlMu).
	deadDial   atomic.Uint64
	reconnects atomic.Uint64
	gapBase    int64
	// disconnects counts the connection's disconnections other than by
	// Close, a server stop's included (onDisconnect).
	disconnects atomic.Uint64

	batchState
}

// OpenNATS connects a bus to NATS (starting an embedded server if opts.URL is
// empty), opens opts.Connections connections and subscribes each to its
// shard. When it returns the subscriptions are active on the server.
func OpenNATS(opts NATSOptions) (*NATSBus, error) {
	if err := validRun(opts.Run); err != nil {
		return nil, err
	}
	conns := opts.Connections
	if conns == 0 {
		conns = DefaultConnections
	}
	if conns < 0 || conns > MaxConnections {
		return nil, fmt.Errorf("bus: Connections %d out of range [0, %d]", opts.Connections, MaxConnections)
	}
	if opts.URL != "" && opts.Listen {
		return nil, errors.New("bus: Listen applies only to the embedded server (URL empty)")
	}
	pendMsgs, pendBytes := opts.PendingMsgs, opts.PendingBytes
	if pendMsgs == 0 {
		pendMsgs = nats.DefaultSubPendingMsgsLimit
	}
	if pendBytes == 0 {
		pendBytes = nats.DefaultSubPendingBytesLimit
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	b := &NATSBus{
		run:      opts.Run,
		n:        uint64(conns),
		shards:   make([]*shard, 0, conns),
		embedded: opts.URL == "",
		listen:   opts.Listen,
		log:      log.With("component", "bus", "run", opts.Run),
		batched:  opts.Batched,
	}
	if b.embedded {
		srv, err := startEmbeddedServer(opts.Listen, 0)
		if err != nil {
			return nil, err
		}
		b.srv.Store(srv)
		b.live.Store(srv)
		if opts.Listen {
			b.url = srv.ClientURL()
			b.port = listenPort(srv)
		}
	} else {
		b.url = opts.URL
	}

	// All shards exist before the first subscription can deliver: onMsg
	// looks up handlers in the address's home shard.
	for k := range conns {
		b.shards = append(b.shards, &shard{
			b:        b,
			idx:      k,
			prefix:   subjectPrefix + "." + b.run + "." + strconv.Itoa(k) + ".",
			handlers: make(map[Address]Handler),
		})
		if b.batched {
			b.shards[k].initBatch()
		}
	}
	for _, s := range b.shards {
		s.publishOnly = opts.Subscribe != nil && !opts.Subscribe(s.idx)
		if err := s.connect(opts.URL, pendMsgs, pendBytes); err != nil {
			b.closed.Store(true)
			b.teardown()
			return nil, err
		}
	}
	// Make sure the server has processed every SUB before anyone publishes
	// from elsewhere.
	if err := b.flushAll(); err != nil {
		b.closed.Store(true)
		b.teardown()
		return nil, err
	}
	b.log.Debug("bus open", "connections", conns, "embedded", b.embedded, "url", b.url)
	return b, nil
}

// UnreachableError: no NATS server answered at an external bus URL
// (bus.url) when the bus opened — a mistyped address or a server not
// started: the user's input, not gridbed's failure.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("bus.url %s: no NATS server answers there (%v) — start one there (nats-server -a HOST -p PORT), fix the address, or drop bus.url to run on the embedded server", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// validRun reports whether run can be used as a subject token.
func validRun(run string) error {
	if run == "" || len(run) > MaxRunLen {
		return fmt.Errorf("bus: Run %q must be 1 to %d characters", run, MaxRunLen)
	}
	for i := range len(run) {
		c := run[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("bus: Run %q: only [a-zA-Z0-9_-] allowed", run)
		}
	}
	return nil
}

// connect opens shard s's connection and subscribes it to the shard.
func (s *shard) connect(url string, pendMsgs, pendBytes int) error {
	b, k := s.b, s.idx
	copts := []nats.Option{
		nats.Name("gridbed-" + b.run + "-" + strconv.Itoa(k)),
		nats.ErrorHandler(b.onAsyncError),
		nats.DisconnectErrHandler(s.onDisconnect),
		nats.ReconnectHandler(s.onReconnect),
		// Subjects are built by this package from a validated run id and
		// digits; skip nats.go's per-publish whitespace scan.
		nats.SkipSubjectValidation(),
		// Never give up reconnecting, and refuse publishes while
		// disconnected instead of buffering them (see the top of this file).
		nats.MaxReconnects(-1),
		nats.ReconnectBufSize(-1),
	}
	if b.embedded {
		// In-process: a net.Pipe to the server, no TCP. The URL is only
		// used for the connection's server pool bookkeeping. The dialer
		// follows the bus's current server across StopServer/StartServer.
		copts = append(copts,
			nats.InProcessServer(inProcessDialer{s}),
			nats.ReconnectWait(embeddedReconnectWait),
			nats.ReconnectJitter(0, 0),
		)
		url = nats.DefaultURL
	} else {
		copts = append(copts, nats.ReconnectWait(externalReconnectWait))
	}
	nc, err := nats.Connect(url, copts...)
	if err != nil && !b.embedded && errors.Is(err, nats.ErrNoServers) {
		return &UnreachableError{URL: url, Err: err}
	}
	if err != nil {
		return fmt.Errorf("bus: connect %d: %w", k, err)
	}
	if s.publishOnly {
		s.nc = nc
		return nil
	}
	sub, err := nc.Subscribe(s.prefix+"*", s.onMsg)
	if err != nil {
		nc.Close()
		return fmt.Errorf("bus: subscribe %s*: %w", s.prefix, err)
	}
	if err := sub.SetPendingLimits(pendMsgs, pendBytes); err != nil {
		nc.Close()
		return fmt.Errorf("bus: pending limits (%d msgs, %d bytes): %w", pendMsgs, pendBytes, err)
	}
	s.nc, s.sub = nc, sub
	return nil
}

// Publish sends data to the peer registered at to. It returns once nats.go
// has buffered the message; data may be reused after it returns. While the
// connection to the server is down (StopServer, or the server cut it off) it
// returns ErrDisconnected at once: the message is lost, and counted in
// Stats().PublishErrs, Refused and Lost. After Close it returns ErrClosed.
func (b *NATSBus) Publish(to Address, data []byte) error {
	if b.closed.Load() {
		b.closedPublishErrs.Add(1)
		return ErrClosed
	}
	s := b.shards[uint64(to)%b.n]
	// Build the subject on the stack and pass it to nats.go as a string
	// aliasing the buffer: (*nats.Conn).Publish copies the subject into its
	// write buffer and does not retain it, so the alias never outlives buf.
	// This keeps Publish free of allocations (no fmt, no string(buf)).
	var buf [subjBufLen]byte
	subj := append(buf[:0], s.prefix...)
	subj = strconv.AppendUint(subj, uint64(to), 10)
	subjs := unsafe.String(unsafe.SliceData(subj), len(subj))
	var err error
	if b.batched {
		err = s.publishCounted(subjs, data, 1, false)
	} else {
		err = s.nc.Publish(subjs, data)
	}
	return s.settlePublish(err, 1, to)
}

// settlePublish counts the outcome of publishing n messages (to is the
// receiver of the first, for the error) and returns Publish's error.
func (s *shard) settlePublish(err error, n uint64, to Address) error {
	if err != nil {
		s.publishErrs.Add(n)
		switch {
		case err == nats.ErrConnectionClosed && s.b.closed.Load():
			return ErrClosed
		case err == nats.ErrMaxPayload || err == nats.ErrBadSubject:
			// The message's fault, not the transport's.
			return fmt.Errorf("bus: publish to %d: %w", to, err)
		}
		// The connection is down: ErrReconnectBufExceeded (no reconnect
		// buffer, see connect) or a write error on a connection that has
		// just broken. Return a sentinel: this runs for every message of
		// an outage, so it must not allocate.
		s.refused.Add(n)
		return ErrDisconnected
	}
	s.published.Add(n)
	return nil
}

// Register makes h receive every message published to addr until
// Unregister(addr); registering again replaces the handler. It fails after
// Close or for a nil h.
func (b *NATSBus) Register(addr Address, h Handler) error {
	if h == nil {
		return fmt.Errorf("bus: Register(%d): nil handler", addr)
	}
	if b.closed.Load() {
		return ErrClosed
	}
	s := b.shards[uint64(addr)%b.n]
	s.mu.Lock()
	s.handlers[addr] = h
	s.mu.Unlock()
	return nil
}

// Unregister stops delivery to addr. Messages to addr that arrive afterwards
// count as Unroutable. A handler call already in progress is not waited for.
func (b *NATSBus) Unregister(addr Address) {
	s := b.shards[uint64(addr)%b.n]
	s.mu.Lock()
	delete(s.handlers, addr)
	s.mu.Unlock()
}

// onMsg is shard s's subscription callback; nats.go calls it on one
// goroutine per subscription, in arrival order. Once Close has stopped
// delivery it only counts the message as Discarded.
func (s *shard) onMsg(m *nats.Msg) {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	if s.stopped {
		if !s.abandoned {
			s.discarded.Add(frameMessages(m))
		}
		return
	}
	subj := m.Subject
	var (
		a  uint64
		ok bool
	)
	// The wildcard guarantees subj is s.prefix plus one token; take the
	// last token anyway so a foreign shard number cannot confuse us.
	for i := len(subj) - 1; i >= 0; i-- {
		if subj[i] == '.' {
			if tok := subj[i+1:]; tok == frameToken {
				s.onFrame(m.Data)
				return
			}
			a, ok = parseAddr(subj[i+1:])
			break
		}
	}
	if !ok {
		s.unroutable.Add(1)
		return
	}
	s.deliver(Address(a), m.Data)
}

// deliver hands one message to the handler of its address, looked up in
// the address's home shard, or counts it as Unroutable.
func (s *shard) deliver(to Address, data []byte) {
	a := uint64(to)
	home := s.b.shards[a%s.b.n]
	home.mu.RLock()
	h := home.handlers[to]
	home.mu.RUnlock()
	if h == nil {
		s.unroutable.Add(1)
		return
	}
	// m.Data is a private copy nats.go made for this message (it copies
	// out of its read buffer in processMsg), so it — or a frame's entry,
	// a slice of it — is handed over without another copy; Handler's
	// contract still says not to retain it.
	h(to, data)
	s.delivered.Add(1) // before Unlock: Stats after Close sees every call
}

// parseAddr parses a decimal address token. Faster than strconv.ParseUint
// (no base/underscore handling); it is on the delivery hot path. Parsing the
// token into a uint64 and looking it up in a map[Address]Handler beats a
// map[string]Handler keyed by the token: hashing 8 bytes is cheaper than
// hashing the string, and the table needs no per-address string.
func parseAddr(tok string) (uint64, bool) {
	n := len(tok)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 20 { // may overflow uint64: let strconv check
		v, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			return 0, false
		}
		return v, true
	}
	var v uint64
	for i := range n {
		c := tok[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	return v, true
}

// Subject returns the subject messages to addr travel on, for external
// publishers and debugging.
func (b *NATSBus) Subject(addr Address) string {
	s := b.shards[uint64(addr)%b.n]
	return s.prefix + strconv.FormatUint(uint64(addr), 10)
}

// Stats reports the bus's counters. Dropped is the sum of the nats.go
// subscriptions' dropped counts (client-side slow consumer: pending limits
// exceeded); its last value is kept across Close.
//
// Lost is Refused (publishes refused while a connection was down) plus the
// accepted messages each StopServer found lost in transit: for every
// connection, the messages it had published minus those it had received,
// counted once the connection was cut off from the stopped server and could
// no longer receive anything. Both parts are known exactly when they are
// counted, so Lost never includes messages merely in flight and never
// decreases. The in-transit count relies on every message a connection
// publishes coming back on that same connection (it subscribes to its own
// shard), so it is exact when this bus is the only client publishing on its
// Run; if other clients publish on it (through a listening server), their
// messages make the count too low. Messages lost when the server cuts off a
// slow connection without StopServer (see Disconnects) are not in Lost:
// Close counts them, by the same reckoning, in LostOnDisconnect (see
// settleCuts); until then Stats.Unsettled shows them once the bus is
// quiescent. Discarded counts, one by one, the messages the subscriptions
// still held when Close stopped delivery.
func (b *NATSBus) Stats() Stats {
	st := Stats{
		PublishErrs: b.closedPublishErrs.Load(),
		Lost:        b.transitLost.Load(),
		Outages:     b.outages.Load(),
	}
	for _, s := range b.shards {
		st.Published += s.published.Load()
		st.PublishErrs += s.publishErrs.Load()
		st.Refused += s.refused.Load()
		st.Delivered += s.delivered.Load()
		st.Unroutable += s.unroutable.Load()
		st.Dropped += s.droppedMessages()
		st.Reconnects += s.reconnects.Load()
		st.Discarded += s.discarded.Load()
		st.Transport += s.transport.Load()
	}
	st.LostOnDisconnect, st.Cuts = b.lostOnDisconnect.Load(), b.cuts.Load()
	if !b.batched {
		st.Transport = st.Published // one NATS message each
	}
	st.Lost += st.Refused
	return st
}

// dropped returns the subscription's dropped count, remembering the highest
// value seen so it survives the subscription being closed.
func (s *shard) dropped() uint64 {
	if s.sub == nil {
		return s.lastDropped.Load()
	}
	n, err := s.sub.Dropped()
	if err != nil || n < 0 { // subscription closed: use the last value
		return s.lastDropped.Load()
	}
	v := uint64(n)
	for {
		old := s.lastDropped.Load()
		if v <= old {
			return old
		}
		if s.lastDropped.CompareAndSwap(old, v) {
			return v
		}
	}
}

// SlowConsumerEvents counts nats.ErrSlowConsumer notifications. nats.go
// reports a subscription once when it starts dropping and again only after
// it recovered, so this counts episodes, not messages (see Stats().Dropped).
func (b *NATSBus) SlowConsumerEvents() uint64 { return b.slowConsumerEvents.Load() }

// Disconnects counts disconnections of the bus's connections other than by
// Close: those caused by StopServer (one per connection), and unexpected ones
// (e.g. the server cut a connection off as a server-side slow consumer, which
// loses the messages it had queued for it without counting them in
// Stats().Dropped or Lost). nats.go reconnects automatically.
func (b *NATSBus) Disconnects() uint64 { return b.disconnects.Load() }

// Server returns the embedded nats-server (the stopped one while StopServer
// is in effect), or nil when connected to an external URL.
func (b *NATSBus) Server() *server.Server { return b.srv.Load() }

// ClientURL returns a URL other processes can connect to: the embedded
// server's when it listens (NATSOptions.Listen), opts.URL for an external
// server, and "" for an embedded server without listener.
func (b *NATSBus) ClientURL() string { return b.url }

// Connections returns the number of connections (shards) of the bus.
func (b *NATSBus) Connections() int { return int(b.n) }

// Flush makes a round trip to the server on every connection. When it
// returns, the server has processed every message published through this bus
// before the call; those addressed to this bus's own handlers have been
// received and are delivered, dropped or queued for delivery (Stats().
// Delivered may still be catching up). While the embedded server is stopped
// it returns nil at once: StopServer has already counted every message
// accepted before it in Stats().Lost or as received. It waits for a
// StopServer or StartServer in progress.
func (b *NATSBus) Flush() error {
	b.ctlMu.RLock()
	defer b.ctlMu.RUnlock()
	if b.closed.Load() {
		return ErrClosed
	}
	if b.stopped {
		return nil
	}
	return b.flushAll()
}

// flushAll flushes all connections concurrently.
func (b *NATSBus) flushAll() error {
	errs := make([]error, len(b.shards))
	var wg sync.WaitGroup
	for i, s := range b.shards {
		wg.Go(func() {
			if err := s.nc.FlushTimeout(flushTimeout); err != nil {
				errs[i] = fmt.Errorf("bus: flush connection %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close flushes the connections (so messages already published reach the
// server), stops delivery (waiting for a Handler call in progress to
// return), counts the messages still waiting in the subscriptions' pending
// buffers as Stats().Discarded, unsubscribes, closes the connections and
// stops the embedded server. Flush and wait for Stats to settle first if
// those messages matter. After Close returns no Handler is called, Publish,
// Register and Flush return ErrClosed, Stats still works and
// Stats().Unsettled() is 0 unless a loss went unseen (see Stats). Close is
// idempotent; it must not be called from a Handler. Closing while the
// embedded server is stopped skips the flush (there is nothing to flush).
func (b *NATSBus) Close() error {
	b.ctlMu.Lock()
	defer b.ctlMu.Unlock()
	if b.closed.Swap(true) {
		return nil
	}
	var err error
	if !b.stopped {
		err = b.flushAll()
	}
	b.teardown()
	b.log.Debug("bus closed", "stats", b.Stats())
	return err
}

// teardown stops delivery, lets the subscriptions count what they still
// hold as discarded, unsubscribes, closes the connections and shuts the
// embedded server down. b.closed must already be set.
func (b *NATSBus) teardown() {
	// From here on the callbacks hand nothing to a Handler; taking
	// deliverMu waits out a Handler call in progress.
	for _, s := range b.shards {
		s.deliverMu.Lock()
		s.stopped = true
		s.deliverMu.Unlock()
	}
	// Let every subscription run through its pending buffer, each message
	// counted as discarded: the messages in flight at the end are then
	// known one by one. nats.go's Pending includes the message in the
	// callback until the callback has returned.
	if !pollUntil(flushTimeout, func() bool {
		for _, s := range b.shards {
			if s.sub == nil {
				continue
			}
			if n, _, err := s.sub.Pending(); err == nil && n > 0 {
				return false
			}
		}
		return true
	}) {
		// A process too busy to run the callbacks through in time (one
		// thrashing under memory pressure): what the subscriptions still
		// hold is counted at once, and the callbacks still to come count
		// nothing (abandoned). With batched fan-out a pending NATS message
		// may be a frame of many, which only its callback can count.
		left := 0
		for _, s := range b.shards {
			if s.sub == nil {
				continue
			}
			s.deliverMu.Lock()
			if n, _, err := s.sub.Pending(); err == nil && n > 0 && !b.batched {
				s.discarded.Add(uint64(n))
				s.abandoned = true
			} else if err == nil && n > 0 {
				left += n
			}
			s.deliverMu.Unlock()
		}
		if left > 0 {
			b.log.Warn("bus close: subscriptions still held batch frames after the wait; their messages are not counted as discarded", "wait", flushTimeout, "frames", left)
		}
	}
	for _, s := range b.shards {
		if s.sub != nil {
			s.dropped()             // remember the final count before the sub goes away
			_ = s.sub.Unsubscribe() // fails only if the connection is already closed
		}
	}
	for _, s := range b.shards {
		if s.nc != nil {
			s.nc.Close()
		}
	}
	b.settleCuts()
	b.live.Store(nil)
	if srv := b.srv.Load(); srv != nil {
		srv.Shutdown() // no-op if StopServer already did
		srv.WaitForShutdown()
	}
}

func (b *NATSBus) onAsyncError(nc *nats.Conn, sub *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrSlowConsumer) {
		b.slowConsumerEvents.Add(1)
		subj := ""
		if sub != nil {
			subj = sub.Subject
		}
		b.log.Warn("nats slow consumer, dropping messages", "conn", nc.Opts.Name, "subject", subj)
		return
	}
	b.log.Warn("nats async error", "conn", nc.Opts.Name, "err", err)
}

func (s *shard) onDisconnect(nc *nats.Conn, err error) {
	if s.b.closed.Load() {
		return // our own Close
	}
	s.b.disconnects.Add(1)
	s.disconnects.Add(1)
	args := []any{"conn", nc.Opts.Name, "err", err}
	if srv := s.b.live.Load(); srv != nil {
		// The server is up: it cut the connection off. Its counters say
		// why (a slow consumer: its outbound buffer for the connection
		// overflowed or a write to it timed out; a stale connection: the
		// client did not answer its pings).
		args = append(args, "server_slow_consumers", srv.NumSlowConsumersClients(), "server_stale_connections", srv.NumStaleConnectionsClients())
	}
	s.b.log.Warn("nats disconnected", args...)
}

// settleCuts counts, once the connections are closed, what connections
// the server cut off mid-run took with them. A message for address a is
// published and received on connection a % Connections, so every message
// a connection accepted (nats.go's OutMsgs) comes back on it (InMsgs,
// dropped ones included) unless the transport destroyed it; StopServer
// has counted the gap each outage left (gapBase). What remains is either
// lost with a connection the server cut off other than by StopServer —
// the server's outbound buffer for it and the client's unwritten buffer
// (LostOnDisconnect) — or, on a connection never cut off, still on its
// way when Close's flush gave up (Discarded: in flight at the end). The
// reckoning needs this bus to be the only publisher on its subjects: it
// is skipped for an external or listening server, a bus subscribing to
// some shards only, and batched fan-out (whose frames a cut loses are
// counted when the numbering shows them missing, see batch.go). Called
// by teardown after the connections closed.
func (b *NATSBus) settleCuts() {
	if !b.embedded || b.listen || b.batched {
		return
	}
	for _, s := range b.shards {
		if s.publishOnly || s.nc == nil {
			return
		}
	}
	outages := b.outages.Load()
	for _, s := range b.shards {
		st := s.nc.Stats()
		gap := int64(st.OutMsgs) - int64(st.InMsgs) - s.gapBase
		cut := s.disconnects.Load() > outages // disconnected other than by the outages
		if cut {
			b.cuts.Add(s.disconnects.Load() - outages)
		}
		if gap <= 0 {
			continue
		}
		if cut {
			b.lostOnDisconnect.Add(uint64(gap))
			b.log.Warn("nats: messages lost with a connection the server cut off", "conn", s.nc.Opts.Name, "lost", gap)
			continue
		}
		s.discarded.Add(uint64(gap))
		b.log.Warn("bus close: messages still in the transport when the flush gave up, counted as discarded", "conn", s.nc.Opts.Name, "discarded", gap)
	}
}

func (s *shard) onReconnect(nc *nats.Conn) {
	s.reconnects.Add(1)
	s.b.log.Info("nats reconnected", "conn", nc.Opts.Name, "url", nc.ConnectedUrlRedacted())
}
