package metrics

import "github.com/prometheus/client_golang/prometheus"

// CEClasses are the label values of gridbed_job_ce_wait_seconds: a job's
// dominant CE (002 §4.1.2), the CPU or a GPU of any type.
var CEClasses = []string{"cpu", "gpu"}

// EnableCEWait registers gridbed_job_ce_wait_seconds (runs with
// heterogeneous computing elements, 002 §4.1) and returns it.
func (r *Run) EnableCEWait() *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gridbed_job_ce_wait_seconds",
		Help:    "Emulated time from a job's submission to the start of the run that completed it, by the job's dominant CE (cpu, gpu; 002 §4.1.2).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 18),
	}, []string{"ce"})
	for _, c := range CEClasses {
		h.WithLabelValues(c)
	}
	r.Registry.MustRegister(h)
	return h
}
