package peer

import (
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/metrics"
)

// ClientAddress is the bus address of a run's job client: far above any
// peer id, so the two never meet.
const ClientAddress core.NodeID = 1 << 40

// Client is the driver-independent adapter of a job client: like Peer, it
// decodes, steps its core, and encodes and publishes what the core wants
// sent. Not safe for concurrent use.
type Client struct {
	core    *jobs.Client
	io      IO
	sink    JobSink
	traffic *metrics.Traffic
	seq     uint64
}

// NewClient creates the client at ClientAddress.
func NewClient(cfg jobs.ClientConfig, inject jobs.Injector, io IO, sink JobSink, traffic *metrics.Traffic) *Client {
	return &Client{core: jobs.NewClient(ClientAddress, cfg, inject), io: io, sink: sink, traffic: traffic}
}

// Submit hands a new job to the overlay.
func (c *Client) Submit(spec *wire.JobSpec) {
	c.core.Submit(c.io.Now(), spec)
	c.flush()
}

// Deliver handles the bytes of one message received from the bus (counted
// as received, like Peer.Deliver).
func (c *Client) Deliver(data []byte) {
	c.traffic.Received()
	h, m, err := wire.Decode(data)
	if reason := rejectReason(h, err, uint64(ClientAddress)); reason != "" {
		c.traffic.Reject(reason)
		return
	}
	c.core.Step(c.io.Now(), core.NodeID(h.From), m)
	c.flush()
}

// Fire handles the expiry of a timer set for emulated time at.
func (c *Client) Fire(kind core.TimerKind, at time.Duration) {
	c.core.Tick(max(c.io.Now(), at), kind)
	c.flush()
}

func (c *Client) flush() {
	r := c.core.Ready()
	// Events before messages, as Peer.flush: the ledger hears of a
	// submission before any peer can act on it.
	report(c.sink, c.io.Now(), ClientAddress, r)
	publish(c.io, c.traffic, ClientAddress, &c.seq, r.Messages, r.Timers)
	c.core.Advance()
}
