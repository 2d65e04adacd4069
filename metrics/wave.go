package metrics

import "github.com/prometheus/client_golang/prometheus"

// WaveOutcomes are the label values of gridbed_wave_jobs.
var WaveOutcomes = []string{"completed", "failed", "unfinished", "lost"}

// Wave are the Wave scheduler's series (001 §V-B; docs/WAVE.md). The
// strategy label is the run's wave.strategy: one value per run.
type Wave struct {
	Jobs       *prometheus.GaugeVec
	Slowdown   *prometheus.HistogramVec
	Migrations *prometheus.CounterVec
	Messages   *prometheus.CounterVec
	// Live series of a run whose peers are actors (wave.engine actors),
	// set at every oracle sample: the share of running hosts available in
	// their current hour and the jobs on hosts, by the hosts' wavezone
	// (0–5: a bounded label).
	Available *prometheus.GaugeVec
	OnHosts   *prometheus.GaugeVec
}

// EnableWave registers the Wave series (runs with wave.strategy set) and
// returns them.
func (r *Run) EnableWave() *Wave {
	w := &Wave{
		Jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gridbed_wave_jobs",
			Help: "Wave scheduler jobs by outcome (001 §V-B): at the end of the run; with wave.engine actors also completed and failed so far at every oracle sample."}, []string{"strategy", "outcome"}),
		Slowdown: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gridbed_wave_slowdown_ratio",
			Help:    "Turnaround over dedicated runtime of completed Wave jobs (001 §V-B, slowdown factor).",
			Buckets: []float64{1, 1.1, 1.25, 1.5, 2, 3, 4, 5, 8}}, []string{"strategy"}),
		Migrations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gridbed_wave_migrations_total",
			Help: "Migrations of completed Wave jobs (001 §V-B)."}, []string{"strategy"}),
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gridbed_wave_messages_total",
			Help: "Wave scheduler messages by type: discovery hops, probes and replies, shipping, migration, failure and completion notices."}, []string{"type"}),
	}
	r.Registry.MustRegister(w.Jobs, w.Slowdown, w.Migrations, w.Messages)
	return w
}

// EnableWaveLive registers the live Wave series (wave.engine actors) as
// well as EnableWave's and returns them all.
func (r *Run) EnableWaveLive() *Wave {
	w := r.EnableWave()
	w.Available = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gridbed_wave_hosts_available_ratio",
		Help: "Share of the running Wave hosts available in their current hour (001 §V-A), by the hosts' wavezone, at the last oracle sample."}, []string{"wavezone"})
	w.OnHosts = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gridbed_wave_jobs_on_hosts",
		Help: "Wave jobs on a host (running or suspended), by the host's wavezone, at the last oracle sample."}, []string{"wavezone"})
	r.Registry.MustRegister(w.Available, w.OnHosts)
	return w
}
