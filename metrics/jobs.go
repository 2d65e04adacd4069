package metrics

import "github.com/prometheus/client_golang/prometheus"

// JobStates are the label values of gridbed_jobs: where the run's jobs
// are at the last oracle snapshot.
var JobStates = []string{"submitted", "queued", "completed", "failed", "unfinished", "lost", "duplicated"}

// Jobs are the job series of a run (PROTOCOLS.md §3; 003 §5.3's metrics).
// The scheme label is the run's matchmaking scheme: one value per run,
// so comparing schemes in one Prometheus means one run per scheme.
type Jobs struct {
	Wait        *prometheus.HistogramVec
	Turnaround  *prometheus.HistogramVec
	MatchTime   *prometheus.HistogramVec
	MatchHops   *prometheus.HistogramVec
	QueueSeen   *prometheus.HistogramVec
	Events      *prometheus.CounterVec
	States      *prometheus.GaugeVec
	QueuedTotal prometheus.Gauge
	BusyNodes   prometheus.Gauge
}

// EnableJobs registers the job series (runs with a workload) and returns
// them; events are the label values of gridbed_job_events_total (the job
// cores' event names), each a series from the start.
func (r *Run) EnableJobs(events []string) *Jobs {
	secs := prometheus.ExponentialBuckets(1, 2, 18) // 1 s … 36 h
	j := &Jobs{
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gridbed_job_wait_seconds", Help: "Emulated time from a job's submission to the start of the run that completed it, by matchmaking scheme.", Buckets: secs,
		}, []string{"scheme"}),
		Turnaround: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gridbed_job_turnaround_seconds", Help: "Emulated time from a job's submission until its client had the result, by matchmaking scheme.", Buckets: secs,
		}, []string{"scheme"}),
		MatchTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gridbed_job_matchmaking_seconds", Help: "Emulated time from a job's submission to its first assignment to a run node, by matchmaking scheme.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"scheme"}),
		MatchHops: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gridbed_job_matchmaking_hops", Help: "Overlay hops of a job from its injection node to its first run node (routing and pushing), by matchmaking scheme.", Buckets: prometheus.LinearBuckets(0, 2, 16),
		}, []string{"scheme"}),
		QueueSeen: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gridbed_job_queue_length_at_assignment", Help: "Jobs queued or running at a run node when a job was assigned to it, by matchmaking scheme.", Buckets: prometheus.LinearBuckets(0, 1, 16),
		}, []string{"scheme"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gridbed_job_events_total", Help: "Job events (submitted, owned, pushed, queued, started, completed, rematched, adopted, …), by event.",
		}, []string{"event"}),
		States: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gridbed_jobs", Help: "Jobs by state at the last oracle snapshot (submitted, queued = assignments to run nodes so far, completed, failed, unfinished, lost, duplicated).",
		}, []string{"state"}),
		QueuedTotal: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_job_queue_jobs", Help: "Jobs queued or running over all live run nodes (the oracle's global view).",
		}),
		BusyNodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_job_busy_nodes", Help: "Live run nodes with at least one job queued or running.",
		}),
	}
	for _, e := range events {
		j.Events.WithLabelValues(e)
	}
	for _, s := range JobStates {
		j.States.WithLabelValues(s)
	}
	r.Registry.MustRegister(j.Wait, j.Turnaround, j.MatchTime, j.MatchHops, j.QueueSeen, j.Events, j.States, j.QueuedTotal, j.BusyNodes)
	return j
}
