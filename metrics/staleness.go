package metrics

import "github.com/prometheus/client_golang/prometheus"

// AggregateErrorStats are the label values of the stat label of
// gridbed_aggregate_error_ratio.
var AggregateErrorStats = []string{"mean", "p90"}

// EnableAggregateErrors registers gridbed_aggregate_error_ratio (runs
// whose heartbeats carry aggregated load) and returns it: at each oracle
// snapshot, how wrong the aggregated information peers hold is against
// the ground truth, by aggregate (aggregates: its label values, e.g.
// nodes, queue, core_utilization, acid) and stat (mean or p90 over every member
// and dimension). Every series exists from the start, at 0.
func (r *Run) EnableAggregateErrors(aggregates []string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gridbed_aggregate_error_ratio",
		Help: "Error of the aggregated load peers hold against the oracle's ground truth at the last snapshot, by aggregate (nodes and queue: relative error of 003 Eq 1's AI_d; core_utilization: absolute difference of the upper region's core utilization, 002 §5.2.4; acid, with categorical resources: share of members whose ACID, 002 Eq 5.1, is wrong) and stat (mean or p90 over members and dimensions).",
	}, []string{"aggregate", "stat"})
	for _, a := range aggregates {
		for _, s := range AggregateErrorStats {
			g.WithLabelValues(a, s)
		}
	}
	r.Registry.MustRegister(g)
	return g
}
