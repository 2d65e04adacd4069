package metrics

import "github.com/prometheus/client_golang/prometheus"

// BandwidthDirections are the label values of the bandwidth series: the
// sender's uplink and the receiver's downlink (faults/bandwidth).
var BandwidthDirections = []string{"up", "down"}

// Bandwidth are the series of the bandwidth model (link.bandwidth),
// registered only in runs that limit bandwidth.
type Bandwidth struct {
	// QueueDelay is gridbed_link_queue_delay_seconds{direction}: how long
	// each message waited in an access-link queue before its own
	// transmission started.
	QueueDelay *prometheus.HistogramVec
	// Wait keeps the same observations per direction for the summary's
	// mean and p99.
	Wait [2]*Quantiles

	dropped func() (msgs, bytes [2]uint64)
	msgs    *prometheus.Desc
	bytes   *prometheus.Desc
}

// NewBandwidth registers the bandwidth series on r; dropped reads the
// messages and bytes dropped on full queues, by direction.
func NewBandwidth(r *Run, dropped func() (msgs, bytes [2]uint64)) *Bandwidth {
	b := &Bandwidth{
		QueueDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gridbed_link_queue_delay_seconds",
			Help:    "Emulated seconds a message waited in an access-link queue (link.bandwidth) before its own transmission started, by direction (up: the sender's uplink, down: the receiver's downlink).",
			Buckets: prometheus.ExponentialBuckets(1e-4, 2, 20),
		}, []string{"direction"}),
		Wait:    [2]*Quantiles{NewQuantiles(), NewQuantiles()},
		dropped: dropped,
		msgs: prometheus.NewDesc("gridbed_link_queue_dropped_messages_total",
			"Messages dropped because an access-link queue (link.bandwidth.queue) was full, by direction.", []string{"direction"}, nil),
		bytes: prometheus.NewDesc("gridbed_link_queue_dropped_bytes_total",
			"Bytes of the messages dropped because an access-link queue was full, by direction.", []string{"direction"}, nil),
	}
	for _, d := range BandwidthDirections {
		b.QueueDelay.WithLabelValues(d)
	}
	r.Registry.MustRegister(b.QueueDelay, (*bandwidthCollector)(b))
	return b
}

// Observe records one queueing delay in direction dir (an index of
// BandwidthDirections), in emulated seconds.
func (b *Bandwidth) Observe(dir int, seconds float64) {
	b.QueueDelay.WithLabelValues(BandwidthDirections[dir]).Observe(seconds)
	b.Wait[dir].Observe(seconds)
}

type bandwidthCollector Bandwidth

func (c *bandwidthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.msgs
	ch <- c.bytes
}

func (c *bandwidthCollector) Collect(ch chan<- prometheus.Metric) {
	msgs, bytes := c.dropped()
	for i, d := range BandwidthDirections {
		ch <- prometheus.MustNewConstMetric(c.msgs, prometheus.CounterValue, float64(msgs[i]), d)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(bytes[i]), d)
	}
}
