package metrics

import "github.com/prometheus/client_golang/prometheus"

// WaveOutcomes are the label values of gridbed_wave_jobs.
var WaveOutcomes = []string{"completed", "failed", "unfinished"}

// Wave are the Wave scheduler's series (001 §V-B; docs/WAVE.md). The
// strategy label is the run's wave.strategy: one value per run.
type Wave struct {
	Jobs       *prometheus.GaugeVec
	Slowdown   *prometheus.HistogramVec
	Migrations *prometheus.CounterVec
	Messages   *prometheus.CounterVec
}

// EnableWave registers the Wave series (runs with wave.strategy set) and
// returns them.
func (r *Run) EnableWave() *Wave {
	w := &Wave{
		Jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gridbed_wave_jobs",
			Help: "Wave scheduler jobs by outcome at the end of the run (001 §V-B)."}, []string{"strategy", "outcome"}),
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
