package emulator

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/staleness"
	"github.com/gridbed/gridbed/emulator/waverun"
)

// Summary is the machine-readable result of a run, written as
// summary.json. Its schema is documented in docs/RESULTS.md; keys are only
// ever added.
type Summary struct {
	// Outcome is the run's one verdict: passed, failed (an invariant
	// failed), overloaded (the machine could not keep up: the figures are
	// distorted) or interrupted (stopped before its end; the figures cover
	// the run so far) — outcome.go. OutcomeReasons are sentences naming
	// each failed invariant or condition and what to change; empty when
	// the run passed.
	Outcome         string   `json:"outcome"`
	OutcomeReasons  []string `json:"outcome_reasons"`
	Scenario        string   `json:"scenario"`
	Driver          string   `json:"driver"`
	Seed            uint64   `json:"seed"`
	TimeScale       float64  `json:"time_scale"`
	EmulatedSeconds float64  `json:"emulated_seconds"`
	WallSeconds     float64  `json:"wall_seconds"`
	Peers           struct {
		Initial int `json:"initial"`
		// Started counts every peer the run hosted (the initial ones,
		// churn joins, restarts), Joined those of them that became a
		// member at some point; Final is the members at the end (the last
		// oracle sample). Departed peers count in Started and Joined.
		Started int `json:"started"`
		Joined  int `json:"joined"`
		Final   int `json:"final"`
		// AllJoinedSeconds is the emulated time of the first oracle sample
		// at which every initial peer was a member (null: never).
		AllJoinedSeconds *float64 `json:"all_joined_seconds"`
		// Bootstrap is peers.bootstrap. With direct, HandoverSeconds is
		// the emulated time at which the overlay built in-process went
		// live (null otherwise); BootstrapWallSeconds the wall time that
		// took and BootstrapMessages the protocol messages its join phase
		// exchanged in memory (not in messages.*).
		Bootstrap            string   `json:"bootstrap"`
		HandoverSeconds      *float64 `json:"handover_seconds"`
		BootstrapWallSeconds float64  `json:"bootstrap_wall_seconds"`
		BootstrapMessages    uint64   `json:"bootstrap_messages"`
		// Clocks is the configured spread of the peers' own clocks
		// (peers.clock); absent when every peer keeps emulated time.
		Clocks *PeerClocks `json:"clocks,omitempty"`
	} `json:"peers"`
	Messages struct {
		Total        uint64               `json:"total"`
		Bytes        uint64               `json:"bytes"`
		ByType       map[string]TypeCount `json:"by_type"`
		DecodeErrors uint64               `json:"decode_errors"`
		// Rejected counts the received messages the peers threw away, by
		// reason (wire.RejectReasons: checksum — the frame check failed,
		// the bytes were corrupted on the way —, malformed, unknown_type,
		// misaddressed); they are decode_errors too. Absent when none was.
		Rejected map[string]uint64 `json:"rejected,omitempty"`
		// PerNodePerMinute is measured over Window (steady state, after
		// the initial joins); null when no window of at least
		// MinWindowPeriods heartbeat periods was measured (the invariant
		// measured then fails and says why).
		PerNodePerMinute *float64 `json:"per_node_per_minute"`
		// HeartbeatModelPerNodePerMinute is mean neighbors × 60 / period:
		// what vanilla heartbeats alone should cost.
		HeartbeatModelPerNodePerMinute float64 `json:"heartbeat_model_per_node_per_minute"`
		// PerWallSecond is the protocol message rate over Window in wall
		// time: how hard the run drove the bus (null as PerNodePerMinute).
		PerWallSecond *float64 `json:"per_wall_second"`
		Window        struct {
			FromSeconds float64 `json:"from_seconds"`
			ToSeconds   float64 `json:"to_seconds"`
			// Steady is true when the window opened once the population
			// had formed and lasted at least MinWindowPeriods heartbeat
			// periods: only then are the rates given (else they are null).
			Steady bool `json:"steady"`
		} `json:"window"`
	} `json:"messages"`
	Bytes struct {
		PerNodePerMinute *float64 `json:"per_node_per_minute"`
	} `json:"bytes"`
	// Entries counts node descriptions carried by messages (wire.Entries):
	// volume in the dissertation's unit, independent of the encoding.
	Entries struct {
		PerNodePerMinute *float64 `json:"per_node_per_minute"`
	} `json:"entries"`
	Overlay struct {
		Dimensions    int    `json:"dimensions"`
		HeartbeatMode string `json:"heartbeat_mode"`
		Split         string `json:"split"`
		// BrokenLinks counts directed pairs of abutting members where the
		// first lacks the second in its table (oracle.Report.BrokenLinks),
		// at each oracle sample: the count at the end (Final), the largest
		// (Max), the time average over the whole run (Mean) and over the
		// churn phase only (ChurnMean: from churn.start to churn.stop or
		// the end of the run; null without churn) — 002 §4.3.2 tracks the
		// number of broken links while churn goes on and compares the
		// levels reached (Fig 4.6). ChurnMeanOwn is ChurnMean without the
		// links that abut only through an extra zone (an orphan held after
		// a take-over, oracle.Report.BrokenViaExtra): the links broken
		// between members' own zones. ChurnMeanSettled is ChurnMean
		// without the links through a zone that changed since the
		// previous oracle sample (a split, take-over or hand-off no
		// heartbeat can have told yet, oracle.Report.BrokenViaChange): the
		// links a heartbeat scheme left broken between settled zones.
		BrokenLinks struct {
			Final            int      `json:"final"`
			Max              int      `json:"max"`
			Mean             float64  `json:"mean"`
			ChurnMean        *float64 `json:"churn_mean"`
			ChurnMeanOwn     *float64 `json:"churn_mean_own"`
			ChurnMeanSettled *float64 `json:"churn_mean_settled"`
		} `json:"broken_links"`
		StaleLinks int `json:"stale_links"`
		// Takeovers counts zones (or parts of zones) of departed peers
		// taken over; Repairs neighbors learned from another peer's list.
		Takeovers          uint64 `json:"takeovers"`
		Repairs            uint64 `json:"repairs"`
		FailuresDetected   uint64 `json:"failures_detected"`
		FullUpdateRequests uint64 `json:"full_update_requests"`
		// ReconvergeSeconds is the emulated time from the end of the last
		// disturbance (churn, faults) to the oracle sample from which on
		// there was no broken link, gap or overlap; null without churn or
		// faults, or if that never happened.
		ReconvergeSeconds *float64          `json:"reconverge_seconds"`
		ZoneGaps          int               `json:"zone_gaps"`
		ZoneOverlaps      int               `json:"zone_overlaps"`
		ExtraZones        int               `json:"extra_zones"`
		OrphansClaimed    uint64            `json:"orphans_claimed"`
		UncoveredFraction float64           `json:"uncovered_fraction"`
		NeighborsMean     float64           `json:"neighbors_mean"`
		Events            map[string]uint64 `json:"events"`

		// FalseSuspicions are failure detections of neighbors that were
		// alive (members at the next oracle sample): clock drift
		// (peers.clock), a partition, slow peers.
		// gridbed_false_suspicions_total.
		FalseSuspicions uint64 `json:"false_suspicions"`
	} `json:"overlay"`
	Clock struct {
		LagSeconds struct {
			P50 float64 `json:"p50"`
			P99 float64 `json:"p99"`
			Max float64 `json:"max"`
		} `json:"lag_seconds"`
		Timers uint64 `json:"timers"`
	} `json:"clock"`
	// Emulator is present for the emulator driver: whether it kept up
	// with the requested time scale (see keepup.go).
	Emulator *LiveSummary `json:"emulator,omitempty"`
	// Workers is present for a run split over worker processes
	// (--workers): what each process cost (keepup.go).
	Workers *WorkersSummary `json:"workers,omitempty"`
	// Sim is present for the deterministic driver: its event loop's speed.
	Sim        *SimSummary       `json:"sim,omitempty"`
	Churn      ChurnSummary      `json:"churn"`
	Faults     FaultSummary      `json:"faults"`
	Invariants InvariantsSummary `json:"invariants"`
	// RegionLatency is present for a run with link.latency_matrix: the
	// one-way latencies measured per pair of regions beside the matrix's
	// (regionlatency.go).
	RegionLatency *RegionLatencySummary `json:"region_latency,omitempty"`
	// Jobs is present when the run had a workload.
	Jobs *JobsSummary `json:"jobs,omitempty"`
	// Wave is the Wave scheduler's figures (001 §V-B; docs/WAVE.md),
	// only for a run with wave.strategy set.
	Wave *waverun.Result `json:"wave,omitempty"`
	// Staleness is how wrong the aggregated load peers hold was against
	// the ground truth (stale.go); present when the run had a workload.
	Staleness *StalenessSummary `json:"staleness,omitempty"`
	Bus       BusSummary        `json:"bus"`
	Oracle    struct {
		Samples         int     `json:"samples"`
		IntervalSeconds float64 `json:"interval_seconds"`
	} `json:"oracle"`
	// Accounting is where every message sent went (accounting.go).
	Accounting Accounting `json:"accounting"`
	// Allocation is present for a 004 allocation run (allocation.go).
	Allocation *AllocationSummary `json:"allocation,omitempty"`
}

// WorkersSummary is what each process of a run split over workers cost
// (summary.json "workers"; absent for a one-process run). CPU seconds are
// user + system time (getrusage) from the start of emulated time to the
// end of the run: the coordinator's up to its last sample, as
// emulator.cpu_seconds; a worker's from its start command to its answer
// to close (its quiesce and close included), or to its last heartbeat if
// it died. The setup before the start (hosting the peers, building the
// overlay in-process) is left out of both.
type WorkersSummary struct {
	// Count is the run's workers (dead ones included).
	Count       int             `json:"count"`
	Coordinator CoordinatorCost `json:"coordinator"`
	Processes   []WorkerCost    `json:"processes"`
	// CPUSecondsAll is the coordinator's and the workers' CPU seconds,
	// each process once: a worker in the coordinator's own process
	// (in_process) is not added again.
	CPUSecondsAll float64 `json:"cpu_seconds_all"`
	// Hosts are the machines the processes ran on (hostCosts): the CPU
	// bound of emulator.suggested_time_scale is the busiest one's.
	Hosts []HostCost `json:"hosts"`
}

// CoordinatorCost is the coordinator process's: its CPU seconds are
// emulator.cpu_seconds, its cores its GOMAXPROCS.
type CoordinatorCost struct {
	Host       string  `json:"host"`
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Cores      int     `json:"cores"`
}

// WorkerCost is one worker process's latest report (its heartbeat, or its
// answer to collect and close): the peers it hosted during the run
// (spawned or adopted, churn joins included), its CPU seconds and its
// GOMAXPROCS (cores). A dead worker (alive false) keeps its last report:
// its CPU seconds stop at its last heartbeat. A worker started in the
// coordinator's own process (in_process, as tests start them) reports
// that process's CPU time, the coordinator's included: it cannot be told
// apart, and cpu_seconds_all does not add it.
type WorkerCost struct {
	Worker     int     `json:"worker"`
	Host       string  `json:"host"`
	PID        int     `json:"pid"`
	Peers      int     `json:"peers"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Cores      int     `json:"cores"`
	Alive      bool    `json:"alive"`
	InProcess  bool    `json:"in_process"`
}

// HostCost is one machine of a split run: its processes (each once), the
// CPU seconds they used together and the cores they share (the most
// GOMAXPROCS any of them reported: local workers share one machine's
// cores).
type HostCost struct {
	Host       string  `json:"host"`
	Processes  int     `json:"processes"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Cores      int     `json:"cores"`
}

// TypeCount is the traffic of one message type.
type TypeCount struct {
	Count uint64 `json:"count"`
	Bytes uint64 `json:"bytes"`
}

// ChurnSummary counts the churn events carried out.
type ChurnSummary struct {
	Joins    uint64 `json:"joins"`
	Leaves   uint64 `json:"leaves"`
	Failures uint64 `json:"failures"`
	// Skipped counts planned departures that found no member (and joins
	// the driver refused).
	Skipped uint64 `json:"skipped"`
}

// FaultSummary is what the fault timeline and the link model did.
type FaultSummary struct {
	// Events lists every fault applied, in order, with its emulated time.
	Events []FaultEvent `json:"events"`
	// ByKind counts them by kind (the scenario's kinds, plus restart).
	ByKind map[string]uint64 `json:"by_kind"`
	// Dropped counts lost messages by reason: partition, loss, bus_outage
	// (deterministic driver), bus_lost (accepted by NATS, never delivered).
	Dropped map[string]uint64 `json:"dropped"`
	// Duplicated counts the extra copies the link delivered; Delayed the
	// messages (copies included) the link delayed by more than 0.
	Duplicated uint64 `json:"duplicated"`
	Delayed    uint64 `json:"delayed"`
	// Corrupted counts the messages the link delivered with a changed
	// byte (link.corrupt, the corrupt fault), every one rejected by its
	// receiver (messages.rejected.checksum) unless still in flight at the
	// end; absent when none was.
	Corrupted uint64 `json:"corrupted,omitempty"`
	// DisturbedUntilSeconds is the end of the last disturbance (churn,
	// faults) the reconvergence is measured from; null if none.
	DisturbedUntilSeconds *float64 `json:"disturbed_until_seconds"`
	// Slow is what the slow peers (the slow fault) cost; absent in runs
	// without slow peers.
	Slow *SlowSummary `json:"slow,omitempty"`
	// Bandwidth is what the access links (link.bandwidth) cost; absent in
	// runs that do not limit bandwidth.
	Bandwidth *BandwidthSummary `json:"bandwidth,omitempty"`
}

// BandwidthSummary is the effect of link.bandwidth (faults/bandwidth):
// Messages were queued on an access link (or dropped at one); the queueing
// delay — the wait before a message's own transmission started — by
// direction (up: the sender's uplink, down: the receiver's downlink), mean
// and p99 over the messages admitted to that queue; DelayMean and DelayMax
// are the whole time the model added to a delivered message (queueing and
// serialization on every stage); the dropped counts are messages (and
// bytes) a full queue refused; Pending were still queued at the end.
type BandwidthSummary struct {
	Classes          []string `json:"classes"`
	Messages         uint64   `json:"messages"`
	UpQueueMean      float64  `json:"up_queue_mean_seconds"`
	UpQueueP99       float64  `json:"up_queue_p99_seconds"`
	DownQueueMean    float64  `json:"down_queue_mean_seconds"`
	DownQueueP99     float64  `json:"down_queue_p99_seconds"`
	DelayMean        float64  `json:"delay_mean_seconds"`
	DelayMax         float64  `json:"delay_max_seconds"`
	DroppedUp        uint64   `json:"dropped_up"`
	DroppedUpBytes   uint64   `json:"dropped_up_bytes"`
	DroppedDown      uint64   `json:"dropped_down"`
	DroppedDownBytes uint64   `json:"dropped_down_bytes"`
	Pending          uint64   `json:"pending"`
}

// SlowSummary is the effect of the slow fault: Messages waited for a slow
// peer's service (queueing behind earlier ones, then the service time),
// MeanWaitSeconds and MaxWaitSeconds long.
type SlowSummary struct {
	Messages        uint64  `json:"messages"`
	MeanWaitSeconds float64 `json:"mean_wait_seconds"`
	MaxWaitSeconds  float64 `json:"max_wait_seconds"`
}

// Line is the bandwidth section in one line of the printed summary and
// the report.
func (b *BandwidthSummary) Line() string {
	return fmt.Sprintf("%s; %d messages queued, queueing up mean %.3g s p99 %.3g s, down mean %.3g s p99 %.3g s; dropped %d up (%d B), %d down (%d B)",
		strings.Join(b.Classes, ", "), b.Messages, b.UpQueueMean, b.UpQueueP99, b.DownQueueMean, b.DownQueueP99,
		b.DroppedUp, b.DroppedUpBytes, b.DroppedDown, b.DroppedDownBytes)
}

// InvariantsSummary are the checks at the end of a run (gridbed run
// --strict exits non-zero unless OK).
type InvariantsSummary struct {
	OK     bool             `json:"ok"`
	Checks []InvariantCheck `json:"checks"`
}

// fail adds a failed check name and marks the run's invariants failed.
func (v *InvariantsSummary) fail(name, detail string) {
	v.OK = false
	v.Checks = append(v.Checks, InvariantCheck{Name: name, Detail: detail})
}

// InvariantCheck is one end-of-run check.
type InvariantCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// BusSummary is the bus's own accounting.
type BusSummary struct {
	Published     uint64 `json:"published"`
	Delivered     uint64 `json:"delivered"`
	Unroutable    uint64 `json:"unroutable"`
	Dropped       uint64 `json:"dropped"`
	PublishErrors uint64 `json:"publish_errors"`
	// Refused: publishes that failed because the bus was down; Lost:
	// those plus messages an outage destroyed in flight; Outages: bus
	// (NATS server) stops; Reconnects: connections re-established.
	Refused    uint64 `json:"refused"`
	Lost       uint64 `json:"lost"`
	Outages    uint64 `json:"outages"`
	Reconnects uint64 `json:"reconnects"`
	// Discarded: accepted messages still in a NATS subscription's buffer
	// when the bus closed (bus.Stats.Discarded).
	Discarded uint64 `json:"discarded"`
	// NATSMessages: transport messages published (bus.Stats.Transport):
	// Published with bus.fanout per-receiver, one per receiving
	// connection of a batch with batched. Every other count here, and the
	// message counts per type, count logical messages.
	NATSMessages uint64 `json:"nats_messages"`
}

// WriteFiles writes summary.json, timeseries.csv, scenario.yaml (the
// effective scenario, every key), with an allocation run allocation.csv
// and with a workload jobs.csv into dir, creating it. On an error (a full disk) it returns a *WriteError naming
// the files written whole before it.
func (r *Result) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &WriteError{Dir: dir, Err: err}
	}
	steps := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"summary.json", func(w io.Writer) error {
			js, err := json.MarshalIndent(r.Summary, "", "  ")
			if err == nil {
				_, err = w.Write(append(js, '\n'))
			}
			return err
		}},
		{"scenario.yaml", func(w io.Writer) error {
			y, err := r.Scenario.YAML()
			if err == nil {
				_, err = w.Write(y)
			}
			return err
		}},
		{"timeseries.csv", r.WriteSeries},
	}
	if r.Allocation != nil {
		steps = append(steps, struct {
			name  string
			write func(io.Writer) error
		}{"allocation.csv", r.Allocation.WriteCSV})
	}
	if r.Jobs != nil {
		steps = append(steps, struct {
			name  string
			write func(io.Writer) error
		}{"jobs.csv", r.WriteJobs})
	}
	var complete []string
	for _, st := range steps {
		f, err := os.Create(filepath.Join(dir, st.name))
		if err == nil {
			err = st.write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return &WriteError{Dir: dir, Complete: complete, Failed: st.name, Err: err}
		}
		complete = append(complete, st.name)
	}
	return nil
}

// WriteError is WriteFiles's error: which files of dir were written whole
// before writing Failed went wrong (a full disk, say), so that the user
// is told what can be read.
type WriteError struct {
	Dir      string
	Complete []string
	Failed   string
	Err      error
}

func (e *WriteError) Error() string {
	if e.Failed == "" {
		return fmt.Sprintf("creating %s: %v", e.Dir, e.Err)
	}
	done := "none of the files is complete"
	if len(e.Complete) > 0 {
		done = strings.Join(e.Complete, ", ") + " complete in " + e.Dir
	}
	return fmt.Sprintf("writing %s: %v (%s)", e.Failed, e.Err, done)
}

func (e *WriteError) Unwrap() error { return e.Err }

// WriteSeries writes the time series as CSV: one row per oracle sample,
// with the traffic of the interval since the previous sample by type.
func (r *Result) WriteSeries(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"t_seconds", "peers", "broken_links", "stale_links", "zone_gaps", "zone_overlaps", "neighbors_mean", "messages", "bytes"}
	for t := 1; t < wire.NumTypes; t++ {
		n := wire.Name(wire.MsgType(t))
		head = append(head, "messages_"+n, "bytes_"+n)
	}
	head = append(head, seriesEvents...)
	head = append(head, "backlog", "lag_p99_seconds")
	jobs := len(r.Series) > 0 && r.Series[0].JobEvents != nil
	if jobs {
		// Per interval, like the other counts; the queue and busy nodes
		// are the global view at the sample.
		head = append(head, "jobs_submitted", "jobs_queued", "jobs_started", "jobs_completed", "jobs_rematched", "jobs_adopted", "jobs_resubmitted", "job_queue", "busy_nodes")
		// The errors of the aggregated load against the truth (stale.go),
		// at the sample; empty when no peer was a member.
		for _, a := range staleness.Names(r.Scenario.HoldsACID()) {
			head = append(head, "aggregate_error_"+a+"_mean", "aggregate_error_"+a+"_p90")
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	var prev *Sample
	for i := range r.Series {
		s := &r.Series[i]
		d := s.Traffic
		if prev != nil {
			d = s.Traffic.Sub(prev.Traffic)
		}
		msgs, bytes := d.Total()
		row := []string{
			ff(s.T.Seconds()), strconv.Itoa(s.Oracle.Members), strconv.Itoa(s.Oracle.BrokenLinks),
			strconv.Itoa(s.Oracle.StaleLinks), strconv.Itoa(s.Oracle.ZoneGaps), strconv.Itoa(s.Oracle.ZoneOverlaps),
			ff(s.Oracle.NeighborsMean), strconv.FormatUint(msgs, 10), strconv.FormatUint(bytes, 10),
		}
		for t := 1; t < wire.NumTypes; t++ {
			var c, b uint64
			if t < len(d.Count) {
				c, b = d.Count[t], d.Bytes[t]
			}
			row = append(row, strconv.FormatUint(c, 10), strconv.FormatUint(b, 10))
		}
		for _, e := range seriesEvents {
			v := s.Events[e]
			if prev != nil {
				v -= prev.Events[e]
			}
			row = append(row, strconv.FormatUint(v, 10))
		}
		row = append(row, strconv.FormatInt(s.Backlog, 10), ff(s.LagP99))
		if jobs {
			for _, e := range []string{"job_submitted", "job_queued", "job_started", "job_completed", "job_rematched", "job_adopted", "job_resubmitted"} {
				v := s.JobEvents[e]
				if prev != nil {
					v -= prev.JobEvents[e]
				}
				row = append(row, strconv.FormatUint(v, 10))
			}
			row = append(row, strconv.Itoa(s.JobQueue), strconv.Itoa(s.BusyNodes))
			for _, a := range staleness.Names(r.Scenario.HoldsACID()) {
				mean, p90 := "", ""
				for _, st := range s.Staleness {
					if st.Name == a {
						mean, p90 = ff(st.Mean), ff(st.P90)
					}
				}
				row = append(row, mean, p90)
			}
		}
		if err := cw.Write(row); err != nil {
			return err
		}
		prev = s
	}
	cw.Flush()
	return cw.Error()
}

// seriesEvents are the overlay events the time series shows per interval.
var seriesEvents = []string{"takeover", "link_learned", "failure_detected", "leave_seen", "full_update_request", "join_owned"}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// PeersLine says how many peers started, joined and were members at the
// end, each on its own ("500 started (500 initial), 495 joined, 490
// members at the end").
func (s Summary) PeersLine() string {
	initial := fmt.Sprintf(" (%d initial)", s.Peers.Initial)
	if s.Peers.Started == s.Peers.Initial {
		initial = ""
	}
	return fmt.Sprintf("%d started%s, %d joined, %d members at the end", s.Peers.Started, initial, s.Peers.Joined, s.Peers.Final)
}

// PrintTable writes the summary as a short human-readable table.
func (s Summary) PrintTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	name := s.Scenario
	if name == "" {
		name = "(unnamed)"
	}
	row("scenario", fmt.Sprintf("%s  driver=%s seed=%d", name, s.Driver, s.Seed))
	row("time", fmt.Sprintf("%.0f s emulated in %.1f s wall (time scale %g)", s.EmulatedSeconds, s.WallSeconds, s.TimeScale))
	if as := s.Allocation; as != nil { // a 004 allocation run has no overlay
		as.printRows(row)
		s.printAllocationMessages(row)
		tw.Flush()
		return
	}
	row("peers", s.PeersLine())
	row("overlay", fmt.Sprintf("d=%d+virtual, %s splits, %s heartbeats, %.2f neighbors/peer", s.Overlay.Dimensions, s.Overlay.Split, s.Overlay.HeartbeatMode, s.Overlay.NeighborsMean))
	row("zones", fmt.Sprintf("gaps %d, overlaps %d, extra zones held %d (%d orphans claimed)", s.Overlay.ZoneGaps, s.Overlay.ZoneOverlaps, s.Overlay.ExtraZones, s.Overlay.OrphansClaimed))
	row("broken links", fmt.Sprintf("final %d, max %d, mean %.2f", s.Overlay.BrokenLinks.Final, s.Overlay.BrokenLinks.Max, s.Overlay.BrokenLinks.Mean))
	if c := s.Churn; c.Joins+c.Leaves+c.Failures > 0 {
		rec := "never"
		if s.Overlay.ReconvergeSeconds != nil {
			rec = fmt.Sprintf("%.0f s", *s.Overlay.ReconvergeSeconds)
		}
		row("churn", fmt.Sprintf("%d joins, %d leaves, %d failures; %d take-overs, %d repairs; reconverged after churn: %s",
			c.Joins, c.Leaves, c.Failures, s.Overlay.Takeovers, s.Overlay.Repairs, rec))
	}
	s.printMessages(row)
	if m := s.Messages.PerNodePerMinute; m != nil && s.Bytes.PerNodePerMinute != nil && s.Entries.PerNodePerMinute != nil {
		row("per node per minute", fmt.Sprintf("%.2f msgs, %s, %.1f node entries (heartbeat model %.2f msgs; window %.0f–%.0f s)",
			*m, humanBytes(uint64(*s.Bytes.PerNodePerMinute)), *s.Entries.PerNodePerMinute, s.Messages.HeartbeatModelPerNodePerMinute,
			s.Messages.Window.FromSeconds, s.Messages.Window.ToSeconds))
	} else {
		row("per node per minute", fmt.Sprintf("not measured: no steady window of %d heartbeat periods (see invariant measured)", MinWindowPeriods))
	}
	if r := s.Messages.PerWallSecond; r != nil {
		row("message rate", fmt.Sprintf("%.0f msgs per wall second (window)", *r))
	}
	if s.Driver == DriverLive {
		row("clock lag", fmt.Sprintf("p50 %.3g s, p99 %.3g s, max %.3g s of wall time over %d timers", s.Clock.LagSeconds.P50, s.Clock.LagSeconds.P99, s.Clock.LagSeconds.Max, s.Clock.Timers))
	}
	if e := s.Emulator; e != nil {
		row("kept up", e.verdict(s.TimeScale))
	}
	s.Workers.printRows(row)
	if sm := s.Sim; sm != nil {
		row("event loop", fmt.Sprintf("%d protocol events in %.1f s: %.0f events/s", sm.Events, sm.LoopSeconds, sm.EventsPerSecond))
	}
	row("bus", fmt.Sprintf("published %d, delivered %d, dropped %d, unroutable %d, lost %d", s.Bus.Published, s.Bus.Delivered, s.Bus.Dropped, s.Bus.Unroutable, s.Bus.Lost))
	row("accounting", s.Accounting.line())
	if f := s.Faults; len(f.Events) > 0 || f.Dropped["loss"]+f.Dropped["partition"]+f.Duplicated > 0 {
		for _, e := range f.Events {
			healed := "not exact again before the next fault"
			switch {
			case e.InForceAtEnd:
				healed = "still in force at the end"
			case e.NotJudged:
				healed = "not judged: an earlier fault is still in force at the end"
			case e.ExactAfterSeconds != nil:
				healed = fmt.Sprintf("exact again after %.0f s", *e.ExactAfterSeconds)
			}
			row(fmt.Sprintf("fault at %.0f s", e.TSeconds), e.Kind+": "+e.Detail+"; "+healed)
		}
		row("messages lost", fmt.Sprintf("partition %d, loss %d, bus outage %d, bus (in flight) %d; duplicated %d",
			f.Dropped["partition"], f.Dropped["loss"], f.Dropped["bus_outage"], f.Dropped["bus_lost"], f.Duplicated))
	}
	if b := s.Faults.Bandwidth; b != nil {
		row("access links", b.Line())
	}
	if len(s.Messages.Rejected) > 0 || s.Faults.Corrupted > 0 {
		row("messages rejected", fmt.Sprintf("corrupted on the link %d; rejected: checksum %d, malformed %d, unknown type %d, misaddressed %d",
			s.Faults.Corrupted, s.Messages.Rejected[wire.RejectChecksum], s.Messages.Rejected[wire.RejectMalformed],
			s.Messages.Rejected[wire.RejectUnknownType], s.Messages.Rejected[wire.RejectMisaddressed]))
	}
	s.Jobs.printRows(row)
	if st := s.Staleness; st != nil {
		row("stale aggregation", st.line())
	}
	for _, c := range s.Invariants.Checks {
		verdict := "ok"
		if !c.OK {
			verdict = "FAILED"
		}
		row("invariant "+c.Name, verdict+": "+c.Detail)
	}
	tw.Flush()
}

func humanBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// PeerClocks is the distribution of the peers' own clocks (peers.clock):
// each peer's drift uniform in [-Drift, +Drift], its offset uniform in
// [0, OffsetSeconds]; the effect is Overlay.FalseSuspicions.
type PeerClocks struct {
	Dist          string  `json:"dist"`
	Drift         float64 `json:"drift"`
	OffsetSeconds float64 `json:"offset_seconds"`
}

// printMessages writes the messages row and one row per type sent, in
// name order.
func (s Summary) printMessages(row func(string, any)) {
	row("messages", fmt.Sprintf("%d (%s)", s.Messages.Total, humanBytes(s.Messages.Bytes)))
	types := make([]string, 0, len(s.Messages.ByType))
	for k, v := range s.Messages.ByType {
		if v.Count > 0 {
			types = append(types, k)
		}
	}
	slices.Sort(types)
	for _, k := range types {
		v := s.Messages.ByType[k]
		row("  "+k, fmt.Sprintf("%d (%s)", v.Count, humanBytes(v.Bytes)))
	}
}
