package sweep

import (
	"math"
	"strings"
)

// Column describes a tabulated summary.json path for the figures and the
// table: what it measures, in words (a figure's title and y axis), and its
// unit ("" for a count or a ratio without one). docs/RESULTS.md defines
// each path in full.
type Column struct {
	Title, Unit string
}

// Label is the column's axis label: the title with its unit, e.g.
// "Mean wait (s)".
func (c Column) Label() string {
	if c.Unit == "" {
		return c.Title
	}
	return c.Title + " (" + c.Unit + ")"
}

// columns are the descriptions of the summary paths gridbed sweep
// tabulates by default and of their near relatives.
var columns = map[string]Column{
	"outcome":                      {"Outcome", ""},
	"peers.initial":                {"Initial peers", "peers"},
	"peers.final":                  {"Members at the end", "peers"},
	"peers.all_joined_seconds":     {"Time until every initial peer joined", "s"},
	"messages.total":               {"Protocol messages sent", "messages"},
	"messages.bytes":               {"Protocol bytes sent", "bytes"},
	"messages.per_node_per_minute": {"Messages per node per minute", "messages / node / min"},
	"messages.per_wall_second":     {"Messages per wall second", "messages / s"},
	"messages.heartbeat_model_per_node_per_minute": {"Vanilla heartbeat model per node per minute", "messages / node / min"},
	"bytes.per_node_per_minute":                    {"Bytes per node per minute", "bytes / node / min"},
	"entries.per_node_per_minute":                  {"Node descriptions carried per node per minute", "entries / node / min"},
	"overlay.neighbors_mean":                       {"Mean neighbor-table size at the end", "neighbors"},
	"overlay.broken_links.mean":                    {"Broken links, time average", "links"},
	"overlay.broken_links.final":                   {"Broken links at the end", "links"},
	"overlay.broken_links.max":                     {"Broken links, maximum", "links"},
	"overlay.broken_links.churn_mean":              {"Broken links, average during churn", "links"},
	"overlay.broken_links.churn_mean_own":          {"Broken links between own zones, average during churn", "links"},
	"overlay.broken_links.churn_mean_settled":      {"Broken links between settled zones, average during churn", "links"},
	"overlay.stale_links":                          {"Stale links at the end", "links"},
	"overlay.zone_gaps":                            {"Zone gaps at the end", "faces"},
	"overlay.zone_overlaps":                        {"Zone overlaps at the end", "pairs"},
	"overlay.takeovers":                            {"Zone take-overs", "zones"},
	"overlay.repairs":                              {"Neighbors repaired from others' lists", "neighbors"},
	"overlay.failures_detected":                    {"Neighbor failures detected", "failures"},
	"overlay.full_update_requests":                 {"FULL-UPDATE requests", "requests"},
	"overlay.reconverge_seconds":                   {"Time to reconverge after the last disturbance", "s"},
	"overlay.uncovered_fraction":                   {"Share of the space no zone covers", ""},
	"clock.lag_seconds.p99":                        {"Timer lag, 99th percentile", "s"},
	"jobs.submitted":                               {"Jobs submitted", "jobs"},
	"jobs.completed":                               {"Jobs completed", "jobs"},
	"jobs.failed":                                  {"Jobs failed", "jobs"},
	"jobs.unfinished":                              {"Jobs unfinished at the end", "jobs"},
	"jobs.lost":                                    {"Jobs lost", "jobs"},
	"jobs.duplicated":                              {"Jobs duplicated", "jobs"},
	"jobs.pushed":                                  {"Jobs pushed to a neighbor in matchmaking", "jobs"},
	"jobs.wait_seconds.mean":                       {"Mean job wait", "s"},
	"jobs.wait_seconds.p50":                        {"Median job wait", "s"},
	"jobs.wait_seconds.p90":                        {"Job wait, 90th percentile", "s"},
	"jobs.wait_seconds.p99":                        {"Job wait, 99th percentile", "s"},
	"jobs.wait_seconds_steady.mean":                {"Mean job wait in the steady state", "s"},
	"jobs.wait_seconds_completed.mean":             {"Mean wait of completed jobs", "s"},
	"jobs.wait_censored":                           {"Censored job waits", "jobs"},
	"jobs.turnaround_seconds.mean":                 {"Mean job turnaround", "s"},
	"jobs.matchmaking.hops_mean":                   {"Matchmaking hops per job", "hops"},
	"jobs.matchmaking.seconds_mean":                {"Matchmaking time per job", "s"},
	"jobs.queue_length_mean":                       {"Queue length seen at assignment", "jobs"},
	"staleness.load_error.mean":                    {"Relative error of aggregated load, mean", ""},
	"staleness.nodes_error.mean":                   {"Relative error of aggregated node counts, mean", ""},
	"staleness.core_utilization_error.mean":        {"Core utilization error, mean", ""},
}

// Describe is the description of a summary.json path: the registered one,
// or one read from the path's words ("overlay.events.route_forward" →
// "Overlay events route forward"), its unit from its words (_seconds: s,
// bytes: bytes).
func Describe(path string) Column {
	if c, ok := columns[path]; ok {
		return c
	}
	words := strings.NewReplacer(".", " ", "_", " ").Replace(path)
	c := Column{Title: strings.ToUpper(words[:1]) + words[1:]}
	switch {
	case strings.Contains(path, "_seconds"):
		c.Title = strings.Replace(c.Title, " seconds", "", 1)
		c.Unit = "s"
	case strings.Contains(path, "bytes"):
		c.Unit = "bytes"
	}
	return c
}

// Domain is the range the quantity at a summary.json path can take, for
// the figures' error bars: every tabulated figure is a count, a rate, a
// time, a size or an error magnitude — never negative —, and a share
// (a path with "fraction", "ratio" or "share") is at most 1. A 95%
// interval reaching past the domain is drawn cut at its edge.
func Domain(path string) (lo, hi float64) {
	for _, w := range []string{"fraction", "ratio", "share"} {
		if strings.Contains(path, w) {
			return 0, 1
		}
	}
	return 0, math.Inf(1)
}

// keys are words for the scenario keys a sweep varies most (an axis of
// its figures); DescribeKey reads the others from their words.
var keys = map[string]Column{
	"overlay.dimensions":          {"Resource dimensions", ""},
	"overlay.heartbeat.mode":      {"Heartbeat scheme", ""},
	"overlay.heartbeat.period":    {"Heartbeat period", "s"},
	"overlay.split":               {"Zone split rule", ""},
	"peers.count":                 {"Initial peers", "peers"},
	"peers.population":            {"Peer population", ""},
	"churn.interval":              {"Mean time between churn events", "s"},
	"churn.fail_fraction":         {"Share of departures that crash", ""},
	"link.loss":                   {"Message loss probability", ""},
	"link.latency.mean":           {"Mean link latency", "s"},
	"link.bandwidth.up":           {"Upload capacity", ""},
	"workload.jobs":               {"Jobs submitted", "jobs"},
	"workload.interarrival":       {"Mean job inter-arrival time", "s"},
	"workload.load":               {"Offered load", ""},
	"workload.constraint_ratio":   {"Share of resources a job constrains", ""},
	"matchmaking.scheme":          {"Matchmaking scheme", ""},
	"matchmaking.stopping_factor": {"CAN-P stopping factor", ""},
	"scheduling.mode":             {"Scheduling mode", ""},
	"time_scale":                  {"Time scale", "emulated s / wall s"},
	"seed":                        {"Seed", ""},
}

// DescribeKey is a scenario key (a sweep's axis) in words, with the unit
// its values are drawn in: the registered words, or the key's own
// ("faults.cut.fraction" → "Faults cut fraction"). durations says that
// the axis's values are durations, drawn in seconds.
func DescribeKey(key string, durations bool) Column {
	c, ok := keys[key]
	if !ok {
		words := strings.NewReplacer(".", " ", "_", " ").Replace(key)
		c = Column{Title: strings.ToUpper(words[:1]) + words[1:]}
	}
	if durations {
		c.Unit = "s"
	}
	return c
}

// DefaultColumns are the summary figures gridbed sweep tabulates unless
// --columns says otherwise: the overlay's (002 §4.3).
var DefaultColumns = []string{
	"peers.final", "messages.per_node_per_minute", "bytes.per_node_per_minute", "entries.per_node_per_minute",
	"overlay.neighbors_mean", "overlay.broken_links.mean", "overlay.broken_links.final",
	"overlay.zone_gaps", "overlay.takeovers", "overlay.repairs", "overlay.reconverge_seconds",
}

// JobColumns are the default columns of a sweep over a scenario with a
// workload (003 §5.3's metrics).
var JobColumns = []string{
	"jobs.completed", "jobs.failed", "jobs.unfinished", "jobs.lost", "jobs.duplicated",
	"jobs.wait_seconds.mean", "jobs.wait_seconds.p90", "jobs.wait_censored", "jobs.turnaround_seconds.mean",
	"jobs.matchmaking.hops_mean", "jobs.matchmaking.seconds_mean", "jobs.queue_length_mean", "jobs.pushed",
	"messages.per_node_per_minute", "bytes.per_node_per_minute",
}

// Described lists the registered paths, sorted.
func Described() []string { return sortedKeys(columns) }
