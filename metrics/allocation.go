package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

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

// AllocationMessages counts an allocation run's messages and their
// encoded bytes by type, exported as gridbed_messages_total and
// gridbed_message_bytes_total with the overlay's message types (the
// allocation messages have a codec of their own, not wire.MsgType). Safe
// for concurrent use.
type AllocationMessages struct {
	types    []string
	msgs, bs []atomic.Uint64
}

// EnableAllocationMessages adds the allocation message types — a fixed,
// bounded list of labels such as "alloc_assign" — to
// gridbed_messages_total and gridbed_message_bytes_total, every one a
// series from the start.
func (r *Run) EnableAllocationMessages(types []string) *AllocationMessages {
	m := &AllocationMessages{types: types, msgs: make([]atomic.Uint64, len(types)), bs: make([]atomic.Uint64, len(types))}
	r.mu.Lock()
	r.allocMsgs = m
	r.mu.Unlock()
	return m
}

// Sent counts one message of types[i] of n bytes.
func (m *AllocationMessages) Sent(i, n int) {
	if i < 0 || i >= len(m.types) {
		return
	}
	m.msgs[i].Add(1)
	m.bs[i].Add(uint64(n))
}
