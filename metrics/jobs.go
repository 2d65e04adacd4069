package metrics

import "github.com/prometheus/client_golang/prometheus"

// JobStates are the label values of gridbed_jobs: where the run's jobs
// are at the last oracle snapshot.
var JobStates = []string{"submitted", "queued", "completed", "failed", "unfinished", "lost", "duplicated"}

// Jobs are the job series of a run (003 §5.3's metrics; docs/JOBS.md).
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
	// Dynamic scheduling (000 §IV).
	Migrations *prometheus.CounterVec
	Backfill   prometheus.Histogram
}

// Migration label values of gridbed_job_migrations_total.
var (
	MigrationMechanisms = []string{"internode", "queue"}
	MigrationDirections = []string{"push", "pull"}
	MigrationOutcomes   = []string{"moved", "rejected", "returned"}
)

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
	j.Migrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gridbed_job_migrations_total",
		Help: "Dynamic-scheduling migrations of waiting jobs (000 §IV) by mechanism (internode, queue), direction (push, pull) and outcome: moved (a run node received the job), rejected (a PUSH offer refused, or a PULL request answered with PULL-Reject), returned (the receiver never acknowledged; the sender took the job back).",
	}, []string{"mechanism", "direction", "outcome"})
	j.Backfill = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gridbed_job_backfill_counter", Help: "Backfilling counter BC of jobs when they started: how many jobs bypassed each (000 §IV-A).",
		Buckets: []float64{0, 1, 2, 3, 5, 8, 13, 21, 34},
	})
	for _, m := range MigrationMechanisms {
		for _, d := range MigrationDirections {
			for _, o := range MigrationOutcomes {
				j.Migrations.WithLabelValues(m, d, o)
			}
		}
	}
	for _, e := range events {
		j.Events.WithLabelValues(e)
	}
	for _, s := range JobStates {
		j.States.WithLabelValues(s)
	}
	r.Registry.MustRegister(j.Wait, j.Turnaround, j.MatchTime, j.MatchHops, j.QueueSeen, j.Events, j.States, j.QueuedTotal, j.BusyNodes, j.Migrations, j.Backfill)
	return j
}
