package emulator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/emulator/staleness"
)

// Stale aggregation: at every oracle sample of a run whose heartbeats
// carry aggregated load (every run with a workload: jobs.Node computes
// AI_d at each heartbeat, whatever the scheme), the oracle recomputes
// every member's AI_d from the global snapshot (emulator/staleness) and
// measures how wrong what the members hold is. Nothing is sent: the
// snapshot is the oracle's (docs/ARCHITECTURE.md principle 7).

// measureStaleness computes the errors of the aggregates members hold in
// states and sets the gauges g; nil when no peer is a member. acid says
// whether the members hold ACIDs (scenario.HoldsACID): only then are
// their combinations given to the oracle, which then measures the ACIDs.
func measureStaleness(states []peer.State, dims int, acid bool, g *prometheus.GaugeVec) []staleness.Stat {
	ms := make([]staleness.Member, 0, len(states))
	for i := range states {
		s := &states[i]
		if !s.Snapshot.Joined {
			continue
		}
		m := staleness.Member{
			ID: s.Snapshot.ID, Zone: s.Snapshot.Zone, Extra: s.Snapshot.Extra,
			Cores: s.Jobs.Cores, Queue: s.Jobs.Demand, Held: s.Jobs.AI,
		}
		if acid {
			m.Combo, m.HeldACID = s.Jobs.Combo, s.Jobs.ACID
		}
		ms = append(ms, m)
	}
	stats := staleness.Truth(ms, dims).Measure()
	for _, st := range stats {
		g.WithLabelValues(st.Name, "mean").Set(st.Mean)
		g.WithLabelValues(st.Name, "p90").Set(st.P90)
	}
	return stats
}

// StalenessSummary is summary.json's staleness block: each aggregate's
// per-sample mean and p90 error (over members and dimensions), averaged
// over the Samples oracle samples of the measurement window (the window
// of the per-node figures, messages.window; every sample with a member if
// no window opened). Present only for runs with a workload.
type StalenessSummary struct {
	Samples int `json:"samples"`
	// NodesError is the relative error of AI_d's number of nodes (003 Eq
	// 1), LoadError of its queue — the cores the jobs above require (002
	// §3.1.4; jobs queued with single-core nodes) —, and
	// CoreUtilizationError the absolute difference of the upper region's
	// core utilization, required cores over cores (002 §5.2.4).
	NodesError           ErrorStats `json:"nodes_error"`
	LoadError            ErrorStats `json:"load_error"`
	CoreUtilizationError ErrorStats `json:"core_utilization_error"`
	// ACIDWrongFraction is the share of members whose ACID (002 Eq 5.1)
	// is not the true one, averaged over the samples (002 §5.2.4 reports
	// the share right); only with categorical resources
	// (peers.categorical), null without a sample.
	ACIDWrongFraction *float64 `json:"acid_wrong_fraction,omitempty"`
}

// ErrorStats are an error's mean and p90 over members and dimensions,
// averaged over samples; null without a sample.
type ErrorStats struct {
	Mean *float64 `json:"mean"`
	P90  *float64 `json:"p90"`
}

// staleness is the summary's staleness block (nil without a workload).
func (r *recorder) staleness() *StalenessSummary {
	if !r.sc.Workload.On() {
		return nil
	}
	inWindow := func(s *Sample) bool { return r.windowStart == nil || s.T >= r.windowFrom }
	sums := map[string]*[2]float64{}
	out := &StalenessSummary{}
	for i := range r.series {
		s := &r.series[i]
		if s.Staleness == nil || !inWindow(s) {
			continue
		}
		out.Samples++
		for _, st := range s.Staleness {
			if sums[st.Name] == nil {
				sums[st.Name] = &[2]float64{}
			}
			sums[st.Name][0] += st.Mean
			sums[st.Name][1] += st.P90
		}
	}
	avg := func(name string) ErrorStats {
		v := sums[name]
		if out.Samples == 0 || v == nil {
			return ErrorStats{}
		}
		return ErrorStats{Mean: ptr(v[0] / float64(out.Samples)), P90: ptr(v[1] / float64(out.Samples))}
	}
	out.NodesError, out.LoadError, out.CoreUtilizationError = avg("nodes"), avg("queue"), avg("core_utilization")
	if r.sc.HoldsACID() {
		out.ACIDWrongFraction = avg("acid").Mean
	}
	return out
}

// line is the summary table's row: each error's mean and p90.
func (s *StalenessSummary) line() string {
	if s.Samples == 0 {
		return "not measured: no oracle sample with a member"
	}
	f := func(e ErrorStats) string { return fmt.Sprintf("mean %.3g, p90 %.3g", *e.Mean, *e.P90) }
	acid := ""
	if s.ACIDWrongFraction != nil {
		acid = fmt.Sprintf("; ACIDs wrong %.3g", *s.ACIDWrongFraction)
	}
	return fmt.Sprintf("error against the truth over %d samples: nodes %s; queue %s; core utilization %s%s",
		s.Samples, f(s.NodesError), f(s.LoadError), f(s.CoreUtilizationError), acid)
}
