package metrics

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gridbed/gridbed/actors/wire"
)

// Run holds the Prometheus series of one run on a private registry.
type Run struct {
	Registry *prometheus.Registry
	Traffic  *Traffic

	EmulatedSeconds prometheus.Gauge
	Peers           prometheus.Gauge
	BrokenLinks     prometheus.Gauge
	ZoneGaps        prometheus.Gauge
	ZoneOverlaps    prometheus.Gauge
	ExtraZones      prometheus.Gauge
	NeighborsMean   prometheus.Gauge
	MailboxBacklog  prometheus.Gauge
	ClockLag        prometheus.Histogram
	churn           *prometheus.CounterVec
	faults          *prometheus.CounterVec
	// FalseSuspicions counts failure detections of peers that were alive
	// (peers.clock's effect, or a partition's).
	FalseSuspicions prometheus.Counter
	// Lag keeps the same observations for the summary's quantiles.
	Lag *Quantiles

	mu          sync.Mutex
	events      map[string]float64
	bus         func() BusStats
	drops       func() Drops
	waiting     func() map[string]int64
	waitingDesc *prometheus.Desc
	eventsDesc  *prometheus.Desc
	dropsDesc   *prometheus.Desc
	dupDesc     *prometheus.Desc
	busDescs    [4]*prometheus.Desc
	msgDesc     *prometheus.Desc
	bytesDesc   *prometheus.Desc
	entriesDesc *prometheus.Desc
	decodeDesc  *prometheus.Desc
	runInfoDesc *prometheus.Desc
	info        RunInfo
	identified  bool // gridbed_run_info is exported

	// Rejected messages by reason, and the link's corrupted ones.
	rejectedDesc, corruptDesc *prometheus.Desc
	elsewhere                 bool // PeersElsewhere: the traffic series are the workers'

	// allocMsgs are an allocation run's messages by type
	// (EnableAllocationMessages), exported with msgDesc and bytesDesc.
	allocMsgs *AllocationMessages
}

// PeersElsewhere says that the run's peers live in other processes (the
// workers of a run split across processes, emulator/workers), which
// export their own traffic and fault-layer series: this registry leaves
// its copies (Traffic, which sums theirs for the results, and the drops)
// out of /metrics, so that dashboards summing over instances count every
// message once.
func (r *Run) PeersElsewhere() {
	r.mu.Lock()
	r.elsewhere = true
	r.mu.Unlock()
}

// BusStats are the bus counters the registry exports.
type BusStats struct {
	Published, Dropped, Unroutable uint64
	// NATSMessages counts transport messages (bus.Stats.Transport).
	NATSMessages uint64
}

// Drops are the messages the fault layer removed or added, by reason.
type Drops struct {
	Partition  uint64 // sent across an active partition
	Loss       uint64 // lost by the link's loss probability
	BusOutage  uint64 // sent while the bus was down (deterministic driver)
	BusLost    uint64 // accepted by the NATS bus but never delivered (outage, in flight)
	Duplicated uint64 // extra copies delivered by the link's duplication
	Bandwidth  uint64 // dropped on a full access-link queue (link.bandwidth.queue)
	Corrupted  uint64 // messages the link delivered with a changed byte (link.corrupt; their receivers reject them)
}

// DropReasons are the label values of gridbed_messages_dropped_total.
var DropReasons = []string{"partition", "loss", "bus_outage", "bus_lost", "bandwidth"}

// FaultKinds are the label values of gridbed_faults_total (the scenario's
// fault kinds).
var FaultKinds = []string{"partition", "heal", "latency", "loss", "duplicate", "crash", "leave", "restart", "bus_restart", "slow", "flap", "corrupt"}

// RunInfo labels the run in gridbed_run_info (one series per run, value 1),
// so dashboards can tell runs apart and group by driver or heartbeat mode
// without per-series labels: a panel keeps a run's series with
// `and on(instance, job) gridbed_run_info{run_id=~"$run"}` (the info-metric
// join; every series of one process shares its instance and job).
type RunInfo struct {
	Driver, Mode, Population string
	// Scenario is the scenario's name and Seed its seed. When Scenario is
	// empty, gridbed_run_info is withheld until Identify names the run, so
	// a run never shows as two series.
	Scenario string
	Seed     uint64
	// RunID tells apart runs of the same scenario and seed; NewRun draws
	// one (UTC start time and a random suffix, sorting by time) when empty.
	RunID string
}

// NewRunID returns a run id: the UTC time to the second and six random
// hex digits, e.g. 20261126T080609Z-3f2a9c.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// NewRun creates the run's registry with gridbed's series, the Go runtime
// and process collectors.
func NewRun(info RunInfo) *Run {
	r := &Run{
		Registry: prometheus.NewRegistry(),
		Traffic:  NewTraffic(),
		EmulatedSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_emulated_time_seconds", Help: "Emulated time since the start of the run.",
		}),
		Peers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_peers", Help: "Peers that are members of the overlay (own a zone), at the last oracle snapshot.",
		}),
		BrokenLinks: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_overlay_broken_links", Help: "Directed neighbor links missing from a peer's table although the zones abut (oracle ground truth).",
		}),
		ZoneGaps: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_overlay_zone_gaps", Help: "Zone faces (not on the space boundary) that border space no peer owns (oracle ground truth).",
		}),
		ZoneOverlaps: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_overlay_zone_overlaps", Help: "Pairs of zones that overlap (oracle ground truth).",
		}),
		ExtraZones: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_overlay_extra_zones", Help: "Zones peers hold besides their own: orphans claimed after double failures (oracle ground truth).",
		}),
		NeighborsMean: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_overlay_neighbors_mean", Help: "Mean size of the peers' neighbor tables.",
		}),
		MailboxBacklog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_mailbox_backlog_messages", Help: "Messages received from the bus but not yet processed by a peer actor.",
		}),
		ClockLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gridbed_clock_lag_seconds",
			Help:    "How late (wall seconds) peers handled their timers relative to the scaled clock.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 12),
		}),
		Lag:    NewQuantiles(),
		events: map[string]float64{},
		churn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gridbed_churn_events_total", Help: "Churn events carried out by the emulator, by kind (join, leave, fail).",
		}, []string{"kind"}),
	}
	for _, k := range []string{"join", "leave", "fail"} {
		r.churn.WithLabelValues(k) // every kind is a series from the start
	}
	r.faults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gridbed_faults_total", Help: "Faults the scenario's timeline applied, by kind (restart: peers rejoining after a crash-restart).",
	}, []string{"kind"})
	for _, k := range FaultKinds {
		r.faults.WithLabelValues(k)
	}
	r.FalseSuspicions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gridbed_false_suspicions_total", Help: "Neighbors declared failed (002 §4.2's failure detection) that were alive, found at the oracle's samples.",
	})
	r.dropsDesc = prometheus.NewDesc("gridbed_messages_dropped_total", "Messages the fault layer or the bus lost, by reason (partition, loss, bus_outage, bus_lost, bandwidth: a full access-link queue).", []string{"reason"}, nil)
	r.dupDesc = prometheus.NewDesc("gridbed_messages_duplicated_total", "Extra message copies the link's duplication delivered.", nil, nil)
	r.corruptDesc = prometheus.NewDesc("gridbed_messages_corrupted_total", "Messages the link delivered with a changed byte (link.corrupt); their receivers reject them (gridbed_messages_rejected_total{reason=\"checksum\"}).", nil, nil)
	r.msgDesc = prometheus.NewDesc("gridbed_messages_total", "Protocol messages sent over the bus, by message type.", []string{"type"}, nil)
	r.bytesDesc = prometheus.NewDesc("gridbed_message_bytes_total", "Bytes of protocol messages (encoded envelopes, without the 5-byte frame check) sent over the bus, by message type.", []string{"type"}, nil)
	r.entriesDesc = prometheus.NewDesc("gridbed_message_node_entries_total", "Node descriptions (id, zone, version) carried by protocol messages, by message type: the dissertation's unit of heartbeat volume.", []string{"type"}, nil)
	r.decodeDesc = prometheus.NewDesc("gridbed_decode_errors_total", "Received messages that could not be decoded.", nil, nil)
	r.rejectedDesc = prometheus.NewDesc("gridbed_messages_rejected_total", "Received messages a peer threw away, by reason (checksum: the frame check failed, the bytes were corrupted on the way; malformed; unknown_type; misaddressed).", []string{"reason"}, nil)
	r.eventsDesc = prometheus.NewDesc("gridbed_overlay_events_total", "Overlay protocol events summed over peers at the last oracle snapshot, by event.", []string{"event"}, nil)
	r.busDescs = [4]*prometheus.Desc{
		prometheus.NewDesc("gridbed_bus_published_messages_total", "Messages published on the bus.", nil, nil),
		prometheus.NewDesc("gridbed_bus_dropped_messages_total", "Messages the bus transport dropped (e.g. NATS slow consumer).", nil, nil),
		prometheus.NewDesc("gridbed_bus_unroutable_messages_total", "Messages that arrived for an address with no peer.", nil, nil),
		prometheus.NewDesc("gridbed_bus_nats_messages_total", "Transport (NATS) messages published: one per message with bus.fanout per-receiver, one per receiving connection of a batch with batched; the other bus counters count logical messages.", nil, nil),
	}
	r.waitingDesc = prometheus.NewDesc("gridbed_mailbox_waiting_messages", "Bus messages waiting in the peer actors' mailboxes now, by message type (read when scraped; a type with none waiting has no series): which messages pile up when the peers fall behind.", []string{"type"}, nil)
	r.runInfoDesc = prometheus.NewDesc("gridbed_run_info", "Constant 1, labelled with the run's scenario, seed, driver, run id, heartbeat mode and population.",
		[]string{"scenario", "seed", "driver", "run_id", "mode", "population"}, nil)
	if info.RunID == "" {
		info.RunID = NewRunID(time.Now())
	}
	r.info, r.identified = info, info.Scenario != ""
	r.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.EmulatedSeconds, r.Peers, r.BrokenLinks, r.ZoneGaps, r.ZoneOverlaps, r.ExtraZones, r.NeighborsMean,
		r.MailboxBacklog, r.ClockLag, r.churn, r.faults, r.FalseSuspicions, (*runCollector)(r),
	)
	return r
}

// ObserveLag records one timer's lateness in wall seconds.
func (r *Run) ObserveLag(seconds float64) {
	if seconds < 0 {
		seconds = 0
	}
	r.ClockLag.Observe(seconds)
	r.Lag.Observe(seconds)
}

// Identify names the run in gridbed_run_info when NewRun was not given a
// scenario; otherwise it does nothing, so the series never changes within
// a run. emulator.Run calls it with the scenario it runs.
func (r *Run) Identify(scenario string, seed uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.identified {
		return
	}
	r.info.Scenario, r.info.Seed, r.identified = scenario, seed, true
}

// Info returns the run's labels in gridbed_run_info (RunID included).
func (r *Run) Info() RunInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.info
}

// Churn counts one churn event of the given kind (join, leave, fail).
func (r *Run) Churn(kind string) { r.churn.WithLabelValues(kind).Inc() }

// SetEvents replaces the overlay event totals (summed over peers).
func (r *Run) SetEvents(ev map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range ev {
		r.events[k] = float64(v)
	}
}

// Fault counts one fault of the given kind (FaultKinds).
func (r *Run) Fault(kind string) { r.faults.WithLabelValues(kind).Inc() }

// SetDrops installs the function that reads the fault layer's counters.
func (r *Run) SetDrops(f func() Drops) {
	r.mu.Lock()
	r.drops = f
	r.mu.Unlock()
}

// SetWaiting installs the function that reads the messages waiting in the
// peers' mailboxes by message type (the emulator driver's; the labels
// are message type names, a bounded set).
func (r *Run) SetWaiting(f func() map[string]int64) {
	r.mu.Lock()
	r.waiting = f
	r.mu.Unlock()
}

// SetBus installs the function that reads the bus counters.
func (r *Run) SetBus(f func() BusStats) {
	r.mu.Lock()
	r.bus = f
	r.mu.Unlock()
}

// runCollector exports the counters that live outside Prometheus types.
type runCollector Run

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.msgDesc
	ch <- c.bytesDesc
	ch <- c.entriesDesc
	ch <- c.decodeDesc
	ch <- c.rejectedDesc
	ch <- c.eventsDesc
	ch <- c.dropsDesc
	ch <- c.dupDesc
	ch <- c.corruptDesc
	for _, d := range c.busDescs {
		ch <- d
	}
	ch <- c.runInfoDesc
	ch <- c.waitingDesc
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	elsewhere := c.elsewhere
	c.mu.Unlock()
	s := c.Traffic.Snapshot()
	if elsewhere {
		s = TrafficSnapshot{}
	}
	for t := 1; t < len(s.Count); t++ {
		name := wire.Name(wire.MsgType(t))
		ch <- prometheus.MustNewConstMetric(c.msgDesc, prometheus.CounterValue, float64(s.Count[t]), name)
		ch <- prometheus.MustNewConstMetric(c.bytesDesc, prometheus.CounterValue, float64(s.Bytes[t]), name)
		ch <- prometheus.MustNewConstMetric(c.entriesDesc, prometheus.CounterValue, float64(s.Entries[t]), name)
	}
	c.mu.Lock()
	am := c.allocMsgs
	c.mu.Unlock()
	if am != nil {
		for i, typ := range am.types {
			ch <- prometheus.MustNewConstMetric(c.msgDesc, prometheus.CounterValue, float64(am.msgs[i].Load()), typ)
			ch <- prometheus.MustNewConstMetric(c.bytesDesc, prometheus.CounterValue, float64(am.bs[i].Load()), typ)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.decodeDesc, prometheus.CounterValue, float64(s.DecodeErrors))
	for i, reason := range wire.RejectReasons {
		ch <- prometheus.MustNewConstMetric(c.rejectedDesc, prometheus.CounterValue, float64(s.Rejected[i]), reason)
	}
	c.mu.Lock()
	for k, v := range c.events {
		ch <- prometheus.MustNewConstMetric(c.eventsDesc, prometheus.CounterValue, v, k)
	}
	bus, drops, waiting := c.bus, c.drops, c.waiting
	c.mu.Unlock()
	if waiting != nil && !elsewhere {
		for t, n := range waiting() {
			ch <- prometheus.MustNewConstMetric(c.waitingDesc, prometheus.GaugeValue, float64(n), t)
		}
	}
	var d Drops
	if drops != nil && !elsewhere {
		d = drops()
	}
	for i, v := range []uint64{d.Partition, d.Loss, d.BusOutage, d.BusLost, d.Bandwidth} {
		ch <- prometheus.MustNewConstMetric(c.dropsDesc, prometheus.CounterValue, float64(v), DropReasons[i])
	}
	ch <- prometheus.MustNewConstMetric(c.dupDesc, prometheus.CounterValue, float64(d.Duplicated))
	ch <- prometheus.MustNewConstMetric(c.corruptDesc, prometheus.CounterValue, float64(d.Corrupted))
	var b BusStats
	if bus != nil {
		b = bus()
	}
	for i, v := range []uint64{b.Published, b.Dropped, b.Unroutable, b.NATSMessages} {
		ch <- prometheus.MustNewConstMetric(c.busDescs[i], prometheus.CounterValue, float64(v))
	}
	c.mu.Lock()
	info, ok := c.info, c.identified
	c.mu.Unlock()
	if ok {
		ch <- prometheus.MustNewConstMetric(c.runInfoDesc, prometheus.GaugeValue, 1,
			info.Scenario, strconv.FormatUint(info.Seed, 10), info.Driver, info.RunID, info.Mode, info.Population)
	}
}
