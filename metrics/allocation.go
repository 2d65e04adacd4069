package metrics

import "github.com/prometheus/client_golang/prometheus"

// Allocation are the series of a 004 allocation run (docs/ALLOCATION.md).
type Allocation struct {
	// Relocations counts the relocations the allocator ordered.
	Relocations prometheus.Counter
	// Completed counts the jobs completed.
	Completed prometheus.Counter
	// Makespan is the latest completion instant so far, emulated seconds.
	Makespan prometheus.Gauge
}

// EnableAllocation registers gridbed_allocation_relocations_total,
// gridbed_allocation_jobs_completed_total and
// gridbed_allocation_makespan_seconds.
func (r *Run) EnableAllocation() *Allocation {
	a := &Allocation{
		Relocations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gridbed_allocation_relocations_total",
			Help: "Relocations the allocator ordered: running jobs preempted and moved to another machine (004 §2.3).",
		}),
		Completed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gridbed_allocation_jobs_completed_total",
			Help: "Jobs of the allocation run completed.",
		}),
		Makespan: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gridbed_allocation_makespan_seconds",
			Help: "Emulated instant of the latest job completion so far: the makespan once every job has completed (004 §1).",
		}),
	}
	r.Registry.MustRegister(a.Relocations, a.Completed, a.Makespan)
	return a
}
