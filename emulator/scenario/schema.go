package scenario

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/faults/link"
)

// schema is the single list of scenario keys. Each entry is built by one of
// the typed constructors below (intField, durationField, enumField, ...) and
// carries everything about its key: where the value lives in Scenario, its
// default, its doc sentence, how to read it from YAML, how to write it back,
// and how to check it. Sections ("peers", "overlay.heartbeat") are implied
// by the dotted keys. A check that reads other keys names them in deps;
// deps must appear earlier in the table.
// minTimeScale is the slowest time scale: one emulated second every 11.6
// days of wall-clock time. Slower ones only ever measure a clock that
// cannot move (and below about 1e-300 the arithmetic saturates).
const minTimeScale = 1e-6

// maxWall is the longest wall-clock length of a run: what a time.Duration
// holds, less a margin.
const maxWall = 290 * 365 * 24 * time.Hour

var schema = append([]field{
	stringField("name", func(s *Scenario) *string { return &s.Name }, "",
		"Free-form label for the run, recorded with its results.",
		"any text", nil),
	uintField("seed", func(s *Scenario) *uint64 { return &s.Seed }, 1, "a valid seed",
		"Seed of every random choice; the same scenario and seed replay the same run. Any whole number from 0 to 18446744073709551615."),
	floatField("time_scale", func(s *Scenario) *float64 { return &s.TimeScale }, 60, func(v float64) bool { return v >= minTimeScale && v <= 1e6 },
		"a valid time scale", "a number of emulated seconds per wall-clock second, from 0.000001 to 1000000, e.g. 60",
		"Emulated seconds per wall-clock second; 60 runs one emulated minute each second, 0.5 one emulated second every two. From 0.000001 to 1000000."),
	durationField("duration", func(s *Scenario) *time.Duration { return &s.Duration }, 10*time.Minute,
		"Emulated length of the run; a positive duration, whose wall-clock length (duration / time_scale) is below 290 years.",
		func(s *Scenario, d time.Duration) string {
			if msg := positive("run length", 10*time.Minute)(s, d); msg != "" {
				return msg
			}
			if wall := d.Seconds() / s.TimeScale; wall >= maxWall.Seconds() {
				return fmt.Sprintf("%s at time_scale %s would last %.3g years of wall-clock time, beyond what a clock can count — write a larger time_scale or a shorter duration", fmtDuration(d), fmtFloat(s.TimeScale), wall/(365.25*86400))
			}
			return ""
		}, "time_scale"),

	intField("peers.count", func(s *Scenario) *int { return &s.Peers.Count }, 500, 1, 1_000_000,
		"a valid peer count",
		"Number of peers in the initial population, 1 to 1000000."),
	enumField("peers.population", func(s *Scenario) *string { return &s.Peers.Population }, PopulationMixed,
		[]string{PopulationClustered, PopulationMixed, PopulationUniform}, "a population kind",
		"How peers' resources are drawn: clustered (a few classes of identical peers) or mixed (independent random capabilities) — in both most peers are weak and few strong —, or uniform (every coordinate uniform over the space: equal-sized zones, the regime of CAN's cost analysis; a control, not a realistic grid)."),
	durationField("peers.join_window", func(s *Scenario) *time.Duration { return &s.Peers.JoinWindow }, time.Minute,
		"Emulated time over which the initial peers join: peer k+1 joins at its slot in this window or once peer k has joined, whichever is later (the papers join nodes sequentially); 0s joins them back to back. Shorter than duration.",
		shorterThanRun("join window", "make join_window shorter than the run", time.Minute, true), "duration"),
	enumField("peers.bootstrap", func(s *Scenario) *string { return &s.Peers.Bootstrap }, BootstrapJoins,
		[]string{BootstrapJoins, BootstrapDirect}, "a bootstrap mode",
		"How the initial population joins: joins (one after another over the bus, as the papers do) or direct (the same join sequence and heartbeats run in-process by the deterministic driver until every peer has joined and the overlay is exact; the peers then start over the bus already members, with their zones, split histories and neighbor tables, at that emulated time, and the run goes on from there; its messages are not counted). Churn joins still go over the bus."),
	intField("peers.categorical.types", func(s *Scenario) *int { return &s.Peers.Categorical.Types }, 0, 0, 12,
		"a valid number of categorical types",
		"Number of categorical resource types every peer has a value of (an operating system, a CPU architecture: 002 §2.4), 0 to 12; 0: none. 002 §5.2.1 uses 4 types of 2 values (16 combinations). Categorical resources are no CAN dimension: a peer's combination rides on its heartbeats as a CID (002 §5.1)."),
	also(intField("peers.categorical.values", func(s *Scenario) *int { return &s.Peers.Categorical.Values }, 2, 2, 64,
		"a valid number of values per categorical type",
		"Number of values of each categorical type, 2 to 64; the combinations (values to the power of types) may number at most 4096, each one bit of the CID on every heartbeat (002 §5.1.3)."),
		func(s *Scenario) string {
			if c := s.Peers.Categorical; c.On() {
				if err := c.Space().Check(); err != nil {
					return fmt.Sprintf("%d types of %d values make %s — write fewer types or values (at most %d combinations)", c.Types, c.Values, err, categorical.MaxCombinations)
				}
			}
			return ""
		}, "peers.categorical.types"),
	also(intField("peers.categorical.combinations", func(s *Scenario) *int { return &s.Peers.Categorical.Combinations }, 0, 0, categorical.MaxCombinations,
		"a valid number of combinations in use",
		"How many combinations of categorical values the peers draw from, uniformly — the first ones by index (type 0 varying fastest); 0: every combination. 002 §5.2.4 uses 4. Exact-match jobs draw from the same combinations."),
		func(s *Scenario) string {
			c := s.Peers.Categorical
			if c.On() && c.Space().Check() == nil && c.Combinations > c.Space().Combinations() {
				return fmt.Sprintf("%d combinations in use, but %d types of %d values make only %d — write at most %d, or 0 for all", c.Combinations, c.Types, c.Values, c.Space().Combinations(), c.Space().Combinations())
			}
			return ""
		}, "peers.categorical.types", "peers.categorical.values"),

	floatField("peers.clock.drift", func(s *Scenario) *float64 { return &s.Peers.Clock.Drift }, 0,
		func(v float64) bool { return v >= 0 && v <= 0.5 }, "a valid clock drift", "a number from 0 to 0.5 (0.01: clocks up to 1% fast or slow)",
		"Spread of the peers' clock rates: each peer's own clock runs at 1 + d, with d drawn uniformly in [-drift, +drift] from the seed and the peer id, 0 to 0.5; 0: every peer keeps emulated time. A peer's heartbeat period and failure-detection limit are measured on its own clock, so peers disagree about them as machines whose clocks drift do; the results count the false failure suspicions (overlay.false_suspicions). Both drivers."),
	durationField("peers.clock.offset", func(s *Scenario) *time.Duration { return &s.Peers.Clock.Offset }, 0,
		"Spread of the peers' clock offsets: each peer's clock reads ahead of emulated time by an offset drawn uniformly in [0, offset] (0s or a positive duration). The protocols never compare clocks across peers, so an offset changes no protocol decision — it shifts the peer's own timestamps; peers of an overlay built in-process (peers.bootstrap: direct) start with offset 0 at the handover.",
		nonNegative("clock offset", 2*time.Second)),

	intField("overlay.dimensions", func(s *Scenario) *int { return &s.Overlay.Dimensions }, 2, 1, 16,
		"a valid number of dimensions",
		"Number of resource dimensions, 1 to 16; the overlay's virtual dimension comes on top."),
	enumField("overlay.split", func(s *Scenario) *overlay.SplitRule { return &s.Overlay.Split }, overlay.SplitKD,
		overlay.SplitRules, "a split rule",
		"How the owner divides its zone when a peer joins: kd cuts between the two peers' fixed points when the midpoint does not separate them (002 §4.2.2, a distributed KD-tree); halve always halves the zone like the original CAN, moving the joiner's virtual coordinate when only the virtual dimension separates them — regular zones, whose mean neighbor count does not grow with the peer count, but much longer routes on skewed populations (docs/OVERLAY.md)."),
	durationField("overlay.heartbeat.period", func(s *Scenario) *time.Duration { return &s.Overlay.Heartbeat.Period }, 30*time.Second,
		"Emulated time between heartbeats to each neighbor; positive and shorter than duration.",
		shorterThanRun("heartbeat period", "make the heartbeat period shorter than the run", 30*time.Second, false), "duration"),
	enumField("overlay.heartbeat.mode", func(s *Scenario) *overlay.HeartbeatMode { return &s.Overlay.Heartbeat.Mode }, overlay.HeartbeatVanilla,
		overlay.HeartbeatModes, "a heartbeat mode",
		"Heartbeat protocol variant: vanilla, compact or adaptive."),
	intField("overlay.heartbeat.fail_after", func(s *Scenario) *int { return &s.Overlay.Heartbeat.FailAfter }, 3, 1, 100,
		"a valid missed-heartbeat limit",
		"Consecutive missed heartbeats after which a neighbor is declared failed, 1 to 100."),
	boolField("overlay.heartbeat.announce_repairs", func(s *Scenario) *bool { return &s.Overlay.Heartbeat.AnnounceRepairs }, true,
		"A peer that learns a neighbor from another peer's list (a repaired broken link, 002 Fig 4.1) introduces itself to it at once; false: the neighbor learns it from the peer's next heartbeat (002 §4.2 leaves this open)."),
	boolField("overlay.heartbeat.zone_queries", func(s *Scenario) *bool { return &s.Overlay.Heartbeat.ZoneQueries }, true,
		"Compact and adaptive modes: a compact heartbeat from a peer not known at its zone version makes the receiver ask it for a full update; false: it only counts as a sign of life (002 §4.2.2: non-take-over neighbors get only load information)."),
	boolField("overlay.heartbeat.takeover_request", func(s *Scenario) *bool { return &s.Overlay.Heartbeat.TakeoverRequest }, true,
		"Adaptive mode: a peer that takes over a zone asks its new neighborhood for full updates at once; false: only when its border check finds a broken link (002 §4.2.3's rule)."),

	boolField("overlay.orphan_notice", func(s *Scenario) *bool { return &s.Overlay.OrphanNotice }, false,
		"gridbed's extension (docs/OVERLAY.md, healing after faults): every peer keeps its neighbors' last full lists, and a peer that claims part of a departed neighbor's zone as an orphan tells the departed peer's other neighbors at once, so that rival claimants on opposite sides of the orphan meet; vanilla heartbeats carry the lists (in compact and adaptive mode only take-over nodes have them). false: claimants learn of each other only through common neighbors."),

	durationField("overlay.join_retry", func(s *Scenario) *time.Duration { return &s.Overlay.JoinRetry }, 0,
		"A joiner's first wait for its JOIN-ACCEPT before it tries again through a new contact; each retry doubles the wait, up to the join timeout (two heartbeat periods). An owner keeps its JOIN-ACCEPT until the joiner speaks and sends it again for a retry, so a lost JOIN or JOIN-ACCEPT holds the sequential join phase about this long (gridbed's reading: 003 §4.1 does not say how a lost join is retried). 0s: four times the longest a join should take on the scenario's links, at least 1s (on the emulator, at least 20 ms of wall time), at most the join timeout (docs/FAULTS.md).",
		nonNegative("join retry", time.Second)),

	durationField("churn.interval", func(s *Scenario) *time.Duration { return &s.Churn.Interval }, 0,
		"Mean emulated time between churn events (Poisson); each is a join or a departure with equal probability. 0s: no churn.",
		nonNegative("churn interval", 10*time.Second)),
	durationField("churn.start", func(s *Scenario) *time.Duration { return &s.Churn.Start }, 2*time.Minute,
		"Emulated time from which churn events happen; shorter than duration when churn is on.",
		churnStart, "duration", "churn.interval"),
	durationField("churn.stop", func(s *Scenario) *time.Duration { return &s.Churn.Stop }, 0,
		"Emulated time after which no churn event happens (the reconvergence time is measured from here); 0s: the end of the run.",
		churnStop, "duration", "churn.interval", "churn.start"),
	fractionField("churn.fail_fraction", func(s *Scenario) *float64 { return &s.Churn.FailFraction }, 0.5,
		"a valid failure fraction",
		"Share of departures that are failures (silent crashes, detected by missed heartbeats) rather than graceful leaves, 0 to 1."),

	enumField("link.latency.dist", func(s *Scenario) *string { return &s.Link.Latency.Dist }, "constant", link.Dists, "a delay distribution",
		"Distribution of every message's delay: constant, uniform (over [0, 2·mean]), exponential (the papers' choice, mean 50ms), normal (standard deviation mean/4) or pareto (shape 2)."),
	durationField("link.latency.mean", func(s *Scenario) *time.Duration { return &s.Link.Latency.Mean }, 0,
		"Mean delay of a message on top of the bus's own; 0s adds none. The papers use 50ms (exponential).",
		nonNegative("mean delay", 50*time.Millisecond)),
	durationField("link.latency.jitter", func(s *Scenario) *time.Duration { return &s.Link.Latency.Jitter }, 0,
		"A uniform offset in [-jitter, +jitter] added to every delay (clamped at 0): messages overtake each other.",
		nonNegative("jitter", 10*time.Millisecond)),
	fractionField("link.loss", func(s *Scenario) *float64 { return &s.Link.Loss }, 0, "a valid loss probability",
		"Probability that a message is lost, 0 to 1."),
	fractionField("link.duplicate", func(s *Scenario) *float64 { return &s.Link.Duplicate }, 0, "a valid duplication probability",
		"Probability that a message is delivered twice, 0 to 1."),
	fractionField("link.corrupt", func(s *Scenario) *float64 { return &s.Link.Corrupt }, 0, "a valid corruption probability",
		"Probability that a message arrives with one byte changed, 0 to 1: its receiver's frame check (CRC-32C, docs/WIRE.md) rejects it, counted in messages.rejected.checksum."),
	intField("link.regions", func(s *Scenario) *int { return &s.Link.Regions }, 1, 1, 64, "a valid region count",
		"Number of regions peers are spread over (evenly, by a hash of the seed and the peer's id), 1 to 64; faults can partition or crash a region."),
	stringField("link.latency_matrix", func(s *Scenario) *string { return &s.Link.LatencyMatrix }, "",
		"A CSV file of measured one-way delays between named regions (from,to,median_ms,jitter_ms[,weight]; docs/FAULTS.md, latency from measured data), relative to the scenario file: peers are placed in its regions by weight and a message from region i to j is delayed by that pair's median ± its jitter, on top of link.latency; it sets link.regions and replaces link.inter_region and link.region_latency. E.g. ibm-cloud-regions.csv (beside examples/regions.yaml). Empty: no matrix.",
		"the path of a CSV latency matrix, e.g. ibm-cloud-regions.csv", nil),
	enumField("link.inter_region.dist", func(s *Scenario) *string { return &s.Link.InterRegion.Dist }, "constant", link.Dists, "a delay distribution",
		"Distribution of the extra delay of a message between two different regions (values as link.latency.dist)."),
	durationField("link.inter_region.mean", func(s *Scenario) *time.Duration { return &s.Link.InterRegion.Mean }, 0,
		"Mean extra delay of a message between two different regions; 0s adds none.",
		nonNegative("mean delay", 100*time.Millisecond)),
	durationField("link.inter_region.jitter", func(s *Scenario) *time.Duration { return &s.Link.InterRegion.Jitter }, 0,
		"Jitter of the extra delay between regions (as link.latency.jitter).",
		nonNegative("jitter", 10*time.Millisecond)),

	enumField("churn.lifetime.dist", func(s *Scenario) *string { return &s.Churn.Lifetime.Dist }, LifetimeNone, LifetimeDists, "a lifetime distribution",
		"Session model of churn: none, or every peer departs after a lifetime drawn from exponential, pareto or weibull (crashing with probability churn.fail_fraction) and a new peer joins in its place at once, from churn.start to churn.stop. Works alone or with churn.interval."),
	durationField("churn.lifetime.mean", func(s *Scenario) *time.Duration { return &s.Churn.Lifetime.Mean }, 30*time.Minute,
		"Mean peer lifetime of the session model; a positive duration.",
		positive("mean lifetime", 30*time.Minute)),
	floatField("churn.lifetime.shape", func(s *Scenario) *float64 { return &s.Churn.Lifetime.Shape }, 2,
		func(v float64) bool { return v > 0 && v <= 100 }, "a valid shape", "a number above 0 and at most 100 (above 1 for pareto), e.g. 2",
		"Shape of the lifetime distribution: pareto α (above 1; the tail grows heavier towards 1), weibull k (below 1: many short sessions and a few long ones). Ignored by exponential."),

	intField("workload.jobs", func(s *Scenario) *int { return &s.Workload.Jobs }, 0, 0, 10_000_000,
		"a valid job count",
		"Number of jobs the client submits, 0 to 10000000; 0: no workload (the overlay alone)."),
	durationField("workload.interarrival", func(s *Scenario) *time.Duration { return &s.Workload.Interarrival }, 15*time.Second,
		"Mean emulated time between job submissions (Poisson arrivals); a positive duration. 003 §5.4 uses 15s to 20s for lightly-constrained workloads.",
		positive("mean inter-arrival time", 15*time.Second)),
	floatField("workload.load", func(s *Scenario) *float64 { return &s.Workload.Load }, 0,
		func(v float64) bool { return v >= 0 && v <= 10 }, "a valid offered load", "a number from 0 to 10, e.g. 0.9",
		"Offered load, 0 to 10; above 0 it replaces workload.interarrival: the mean inter-arrival time is chosen, per run, so that the work submitted per second (each job's cores times its running time on a canonical node, averaged over the workload's jobs) is this fraction of the initial peers' capacity (the sum of cores × cpu_speed). 0: use workload.interarrival. Keeps the load per core when the population's draw (a clustered population's classes) or size changes; 1 is saturation before contention and packing losses."),
	durationField("workload.start", func(s *Scenario) *time.Duration { return &s.Workload.Start }, 2*time.Minute,
		"Emulated time from which jobs are submitted (the first arrives one inter-arrival time later on average); jobs due after the end of the run are not submitted. When workload.jobs is above 0: at least peers.join_window and shorter than duration.",
		workloadStart, "duration", "peers.join_window", "workload.jobs"),
	floatField("workload.constraint_ratio", func(s *Scenario) *float64 { return &s.Workload.ConstraintRatio }, 0.43,
		func(v float64) bool { return v >= 0 && v <= 1 }, "a valid constraint ratio",
		"a probability from 0 to 1, e.g. 0.43 (1.3 constrained resources of 3 on average)",
		"Probability that a job constrains each resource (a minimum requirement; otherwise 0, don't care), 0 to 1. 0.43 is 003's lightly-constrained workload (1.3 constraints of 3 on average), 0.8 its heavily-constrained one (2.4 of 3)."),
	enumField("workload.kind", func(s *Scenario) *string { return &s.Workload.Kind }, WorkloadMixed,
		[]string{WorkloadClustered, WorkloadMixed}, "a workload kind",
		"How job requirements are drawn: clustered (a few classes of jobs with identical requirements) or mixed (independent random requirements); in both most requirements are modest, as most peers are weak."),
	enumField("workload.classes", func(s *Scenario) *string { return &s.Workload.Classes }, ClassesIndependent,
		[]string{ClassesIndependent, ClassesNodes}, "a way to draw requirements",
		"How requirements relate to the peers: independent (drawn like capabilities, so a clustered workload's classes may fit few or no peer classes) or nodes (each job, or each clustered class, is cut from a randomly chosen peer — at most its capability per constrained resource — and clustered classes are submitted in proportion to the peers capable of them: demand follows supply, as in 000 §V's clustered nodes and jobs)."),
	durationField("workload.runtime", func(s *Scenario) *time.Duration { return &s.Workload.Runtime }, time.Hour,
		"T, the mean running time of a job on a canonical node (cpu_speed 1.0); a node runs it in T divided by its cpu_speed. A positive duration.",
		positive("mean running time", time.Hour)),
	enumField("workload.runtime_dist", func(s *Scenario) *string { return &s.Workload.RuntimeDist }, RuntimeUniform,
		RuntimeDists, "a running-time distribution",
		"Distribution of a job's running time on a canonical node around workload.runtime T: uniform (in [0.5T, 1.5T], the papers'), normal (mean T, standard deviation T/4, at least 0.05T) or exponential (mean T)."),
	boolField("workload.drain", func(s *Scenario) *bool { return &s.Workload.Drain }, false,
		"false: the run ends at duration, jobs not ended then are unfinished (their waits censored). true: no job is submitted after duration, but the run goes on, one oracle interval at a time, until every job of the workload has ended (completed or failed), at most workload.drain_limit past duration; churn and the fault timeline stay as scheduled (nothing happens after duration). summary.json jobs.drained says whether every job ended, emulated_seconds how long the run went."),
	durationField("workload.drain_limit", func(s *Scenario) *time.Duration { return &s.Workload.DrainLimit }, 0,
		"With workload.drain, the longest the run may go on after duration; 0s: the longer of 4 × workload.runtime and 2 × jobs.client_timeout (2h40m for 40-minute jobs). 0s or a positive duration.",
		nonNegative("drain limit", 4*time.Hour)),

	durationField("workload.warmup", func(s *Scenario) *time.Duration { return &s.Workload.Warmup }, 0,
		"Start of the steady-state window: jobs submitted before this emulated time are left out of summary.json's jobs.wait_seconds_steady (003 §5.4 reports the steady state, not the transient of the first jobs meeting an empty system). 0s: every job counts. 0s or a positive duration, below duration.",
		warmup, "duration"),
	fractionField("workload.categorical.exact", func(s *Scenario) *float64 { return &s.Workload.Categorical.Exact }, 0,
		"a valid share of exact-match jobs",
		"Share of the jobs that accept exactly one combination of categorical values (drawn uniformly among those the peers use), 0 to 1. 002 §5.2.1: 0.625 (the rest don't care); §5.2.3: 1. Needs peers.categorical.types."),
	also(fractionField("workload.categorical.range", func(s *Scenario) *float64 { return &s.Workload.Categorical.Range }, 0,
		"a valid share of range jobs",
		"Share of the jobs that constrain each categorical type to a range of values (two values drawn uniformly, the range between them) — or, with probability workload.categorical.dont_care per type, not at all — 0 to 1. With workload.categorical.exact at most 1; the remaining jobs do not care about any categorical type. Needs peers.categorical.types."),
		func(s *Scenario) string {
			c := s.Workload.Categorical
			switch {
			case c.Exact+c.Range > 1+1e-9:
				return fmt.Sprintf("%g exact and %g range jobs make more than all of them — write at most %.4g", c.Exact, c.Range, max(1-c.Exact, 0))
			case c.On() && !s.Peers.Categorical.On():
				return "jobs with categorical constraints need peers with categorical resources — set peers.categorical.types (e.g. 4), or write 0 for workload.categorical.exact and .range"
			}
			return ""
		}, "peers.categorical.types", "workload.categorical.exact"),
	fractionField("workload.categorical.dont_care", func(s *Scenario) *float64 { return &s.Workload.Categorical.DontCare }, 0.5,
		"a valid don't-care probability",
		"For range jobs, the probability that each categorical type is left unconstrained (\"don't care\"), 0 to 1."),

	floatField("departures.fraction", func(s *Scenario) *float64 { return &s.Departures.Fraction }, 0,
		func(v float64) bool { return v >= 0 && v < 1 }, "a valid departure fraction", "a number from 0 to below 1, e.g. 0.2",
		"Share of the initial population that departs during the run, never replaced: departures.events entries added to the fault timeline, evenly spaced from departures.start to departures.stop, alternately crash and leave (003 §5.5: 10% to 30% of the nodes leave, gracefully or by failure). 0: none. Unlike faults, settable with --set and in a parameter grid."),
	durationField("departures.start", func(s *Scenario) *time.Duration { return &s.Departures.Start }, time.Hour,
		"Emulated time of the first departure entry; within the run.",
		nonNegative("departures start", time.Hour)),
	durationField("departures.stop", func(s *Scenario) *time.Duration { return &s.Departures.Stop }, 0,
		"Emulated time of the last departure entry; 0s: half the run. Not before departures.start.",
		departuresWindow, "duration", "departures.fraction", "departures.start"),
	intField("departures.events", func(s *Scenario) *int { return &s.Departures.Events }, 4, 1, 1000,
		"a valid number of departure entries",
		"How many timeline entries the departures are split into, 1 to 1000: crashes and graceful leaves alternate, a crash first."),

	also(enumField("matchmaking.scheme", func(s *Scenario) *string { return &s.Matchmaking.Scheme }, jobs.SchemeCANP.String(),
		Schemes, "a matchmaking scheme",
		"How a job finds its run node: can (the owner node hands the job to its least-loaded capable neighbor, no pushing), can-p (pushing along the aggregated load, 003 Eqs 1–5) cent (a greedy central matchmaker with the global view at no message cost: fastest CPU with the least load, over-provisioning capped at 1.1), cent-queue (000's centralized scheduler: one global queue, each job placed on a node that can start it at once as soon as one can, with the same preferences; the comparison for scheduling.mode) or mp (002 §3.3's Multiple Peers, Condor's static partitioning: every node of peers.count becomes one peer per core, each with an equal share of its memory and disk, matched as can-p; a job requiring several cores fails at once — needs overlay.dimensions 4 or more) or rnt (003 §5.1's Rendezvous Node Tree over a Chord ring: the owner searches its subtree, then its ancestors', pruned by the maximum of each resource aggregated up and down the tree, until matchmaking.rnt_candidates capable nodes are found, and picks the empty one with the fastest CPU, else the least queue/speed; no categorical resources)."),
		func(s *Scenario) string {
			if s.MP() && s.Overlay.Dimensions < 4 {
				return fmt.Sprintf("mp splits nodes by their cores, but overlay.dimensions %d has no cores dimension — write overlay.dimensions: 4 or more", s.Overlay.Dimensions)
			}
			if s.Matchmaking.Scheme == jobs.SchemeRNT.String() && s.Peers.Categorical.On() {
				return "rnt aggregates numeric resources only — write peers.categorical.types: 0, or another scheme"
			}
			return ""
		}, "overlay.dimensions", "peers.categorical.types"),
	intField("matchmaking.stopping_factor", func(s *Scenario) *int { return &s.Matchmaking.StoppingFactor }, 2, 1, 3,
		"a valid stopping factor",
		"CAN-P's stopping factor SF, 1 to 3: a push stops with probability 1/(1+n)^SF, n the number of nodes aggregated in the direction chosen (003 Eq 4); a higher SF pushes jobs farther. Used by can-p only."),
	enumField("matchmaking.residue", func(s *Scenario) *jobs.ResidueModel { return &s.Matchmaking.Residue }, jobs.ResidueNone,
		jobs.ResidueModels, "a residue representation",
		"How a multi-core node's Residue-node — the cores, memory and disk it could start a job on now — takes part in matchmaking (002 §3.1): none (only its neighbors see it, on its heartbeat) or balloon (the Balloon model, 002 §3.1.3: a node running jobs with a free core attaches a Balloon at the residue's point to the owner of the zone containing it, beating to it every heartbeat period; matchmaking prefers a capable Balloon attached to the stopping node or its neighbors, and aggregation counts a Balloon's cores discounted by β = 1/(1+Ω), 002 Eqs 3.1 and 3.6) or dual-can (the Dual-CAN model, 002 §3.1.2: the Residue-node joins a second CAN of its own, the Secondary CAN, at the residue's point, leaves it and joins again when the residue changes, and keeps it up with its own heartbeats, counted as dual_* messages; where a push stops, matchmaking searches the Secondary CAN for a capable Residue-node and falls back to the best candidate of the first CAN, 002 Algorithm 1). Needs the cores dimension (overlay.dimensions 4 or more) to have any effect; used by can and can-p."),

	enumField("matchmaking.load_view", func(s *Scenario) *jobs.LoadView { return &s.Matchmaking.LoadView }, jobs.LoadViewHeartbeat,
		jobs.LoadViews, "a load view",
		"Where can and can-p read a neighbor's queue length and whether it is free: heartbeat (its last heartbeat, up to a period old — 003 §4.4's periodic neighbor state) or oracle (an experiment switch, not a protocol: the global view's current queue lengths, as cent sees them, to measure what the heartbeats' staleness costs). The aggregated load (Eq 1) always rides on heartbeats."),

	enumField("matchmaking.stop_nodes", func(s *Scenario) *jobs.StopNodes { return &s.Matchmaking.StopNodes }, jobs.StopNodesOwn,
		jobs.StopNodesReadings, "a stop-count reading",
		"Which node count n CAN-P's stop probability 1/(1+n)^SF uses (003 Eq 4): own (AI_TD(N).NumberOfNodes as Eq 4 writes it: the stopping node's aggregate along the target dimension, which Eq 1 weighs by overlap fractions, so a node with a small face — the crowded low corner of the space — counts few nodes above it) or target (1 + AI_TD(u).NumberOfNodes of the push target u: the nodes the push would reach, 003 §4.4's \"number of nodes above node N in the target dimension\"). Used by can-p only."),
	intField("matchmaking.rnt_candidates", func(s *Scenario) *int { return &s.Matchmaking.RntCandidates }, 4, 1, 64,
		"a valid candidate count",
		"The RNT's extended search (003 §5.1): how many capable nodes a job's search finds before it chooses among them, 1 to 64 (003 gives no value; 4 by default). Used by rnt only."),
	also(enumField("matchmaking.categorical", func(s *Scenario) *string { return &s.Matchmaking.Categorical }, jobs.CategoricalNone.String(),
		CategoricalModes, "a categorical matchmaking mode",
		"How can and can-p use categorical resources (002 ch. 5): none (a run node must still match a job's categorical constraint, but pushes and climbs follow the aggregated load alone, so a job may wander where no node of its values is and fail) or cid (each heartbeat carries the sender's ACID, the combinations present in the region above it, 002 Eq 5.1; a job is pushed or climbs only towards neighbors whose ACID holds a combination it accepts, 002 Algorithm 3) or subcan (002 §2.4's sub-CANs: the last CAN dimension becomes the transform dimension, one interval per combination ordered by a Hilbert curve, each peer in its combination's interval; a job is routed into a sub-CAN it accepts and pushed and climbs only towards neighbors whose zone meets one; heartbeats carry no ACID). cent always respects categories."),
		func(s *Scenario) string {
			switch m := s.Matchmaking.Categorical; {
			case (m == jobs.CategoricalCID.String() || m == CategoricalSubCAN) && !s.Peers.Categorical.On():
				return m + " needs peers with categorical resources — set peers.categorical.types (e.g. 4), or write none"
			}
			return ""
		}, "peers.categorical.types"),

	enumField("scheduling.mode", func(s *Scenario) *string { return &s.Scheduling.Mode }, jobs.SchedVanilla.String(),
		SchedModes, "a scheduling mode",
		"Dynamic scheduling at the run nodes (000 §IV-V): vanilla (initial matchmaking only, FCFS queues), l (local backfilling with backfilling counters), li-push / li-pull (plus internode scheduling: waiting jobs move to a neighbor's residual resources, pushed after a confirming handshake or pulled by the idle node), liq-push / liq-pull (plus queue balancing by normalized load). cent is 000 §V-B's CENT: matchmaking.scheme cent-queue (whatever the file says) with vanilla run nodes, so that one sweep axis covers Fig 3's seven configurations; cent-greedy the other reading of CENT, matchmaking.scheme cent (each job placed at its arrival) with vanilla run nodes."),
	durationField("scheduling.period", func(s *Scenario) *time.Duration { return &s.Scheduling.Period }, 10*time.Second,
		"Emulated time between a node's internode-scheduling and queue-balancing rounds (each node's rounds start at a random offset); a positive duration. Used by the li-* and liq-* modes.",
		positive("scheduling period", 10*time.Second)),
	boolField("scheduling.contention", func(s *Scenario) *bool { return &s.Scheduling.Contention }, true,
		"Jobs sharing a multi-core node run longer by the contention factor α = max(1+p, max_i 1 + n·SDR·(C_i/R_i)^4) over memory and disk, p = 0.1, SDR = 0.175 (002 Eq 3.5); false: no slow-down."),

	intField("scheduling.pull_reach", func(s *Scenario) *int { return &s.Scheduling.PullReach }, 1, 1, 16,
		"a valid PULL reach",
		"Overlay hops an internode PULL request may travel, 1 to 16. 1 is 000 §IV-B: an idle node asks its neighbors only. More is a gridbed extension: a neighbor without a job that fits passes the request on towards the longest waiting queue it knows of (heartbeats carry each node's longest neighbor queue), and the job moves straight to the idle node."),

	enumField("scheduling.pull_target", func(s *Scenario) *jobs.PullTarget { return &s.Scheduling.PullTarget }, jobs.PullTargetWaiting,
		jobs.PullTargets, "a PULL target",
		"Which neighbor an idle node's internode PULL request asks (000 §IV-B, \"the node with maximum queue size among its neighbors\"): waiting (the neighbor whose last heartbeat showed the longest waiting queue, and only one that showed jobs waiting) or queue (the neighbor with the largest queue, running jobs included, whatever its heartbeat said of waiting jobs: an idle node asks every round, going on to the next neighbor not contacted within a heartbeat period after each PULL-Reject). Used by li-pull and liq-pull."),

	enumField("scheduling.queue_load", func(s *Scenario) *jobs.QueueLoad { return &s.Scheduling.QueueLoad }, jobs.QueueLoadWaiting,
		jobs.QueueLoads, "a queue load reading",
		"Which jobs the normalized load L of queue balancing sums (000 Eq 4, \"Queue_i is the job queue for node i\"): waiting (the waiting jobs: a node whose cores are all busy with nothing waiting has L = 0) or queue (running jobs too: L = 0 only for a node with no job, 000 §IV-C's \"zero local load means a free node\"). Used by liq-push and liq-pull."),

	durationField("jobs.client_timeout", func(s *Scenario) *time.Duration { return &s.Jobs.ClientTimeout }, 10*time.Minute,
		"The client resubmits a job it has heard nothing about for this long; a positive duration, and when workload.jobs is above 0 at least 1.5 × (overlay.heartbeat.fail_after + 2) heartbeat periods (3m45s at the defaults), so that a job is not resubmitted while its owner's failure is still being repaired.",
		clientTimeout, "overlay.heartbeat.period", "overlay.heartbeat.fail_after", "workload.jobs"),
	intField("jobs.max_attempts", func(s *Scenario) *int { return &s.Jobs.MaxAttempts }, 5, 1, 100,
		"a valid number of attempts",
		"Submissions of one job (the first included) before the client gives up and records it failed, 1 to 100."),

	stringField("bus.url", func(s *Scenario) *string { return &s.Bus.URL }, "",
		`NATS server to use, as nats://host:port (schemes nats, tls, ws or wss); "" starts an embedded server.`,
		`nats://host:port, or "" for the embedded server`, checkBusURL),
	intField("bus.connections", func(s *Scenario) *int { return &s.Bus.Connections }, 8, 1, 256,
		"a valid connection count",
		"Bus connections shared by the emulated peers, 1 to 256."),
	enumField("bus.fanout", func(s *Scenario) *string { return &s.Bus.Fanout }, FanoutPerReceiver,
		[]string{FanoutPerReceiver, FanoutBatched}, "a fan-out mode",
		"How the messages a peer sends in one step (a heartbeat to every neighbor, above all) travel: per-receiver (one NATS message per message and receiver) or batched (one NATS message per receiving bus connection, carrying its receivers' messages, each delivered to its receiver's mailbox). Either way every message keeps its own envelope, its own link faults (partition, loss, duplication, delay, decided per sender and receiver with the same seeded draws) and its own count: messages and bytes count logical messages, summary bus.nats_messages and gridbed_bus_nats_messages_total the NATS ones. The sim driver gives identical runs in both modes. A delayed message (link.latency) is published alone when due."),

	enumField("emulator.overload", func(s *Scenario) *string { return &s.Emulator.Overload }, OverloadAbort,
		[]string{OverloadAbort, OverloadWarn}, "an overload policy",
		"What the emulator driver does when, during the run, it cannot keep up with time_scale (timers handled more than a heartbeat period late, or mailboxes growing steadily): abort (stop the run cleanly and write its results so far, summary.json emulator.aborted with the reason and a suggested time scale) or warn (warn on stderr and go on; memory may grow without bound). Either way a warning comes as soon as timers are late by more than 1% of the heartbeat period. The sim driver never falls behind."),

	floatField("emulator.lag_tolerance", func(s *Scenario) *float64 { return &s.Emulator.LagTolerance }, 0.01,
		func(v float64) bool { return v > 0 && v <= 1 }, "a valid lag tolerance", "a fraction of the heartbeat period above 0 and at most 1, e.g. 0.05",
		"How late timers may be handled, as a fraction of the heartbeat period in emulated time, for an emulator run to count as having kept up with time_scale (invariant kept_up; the overload guard's early warning). 0.01 shifts the protocol's periodic work by at most 1%; a run whose figures do not depend on second-level timing (hour-long jobs at time scale 600) may accept more, e.g. 0.05. Above 0, at most 1."),

	durationField("oracle.interval", func(s *Scenario) *time.Duration { return &s.Oracle.Interval }, 30*time.Second,
		"Emulated time between ground-truth snapshots (with a workload each also measures the staleness of the aggregated load; 002 §5.2.4 snapshots every 5m); a positive duration.",
		positive("snapshot interval", 30*time.Second)),

	intField("invariants.reconverge_periods", func(s *Scenario) *int { return &s.Invariants.ReconvergePeriods }, 20, 1, 10000,
		"a valid number of heartbeat periods",
		"The overlay must have no broken link, gap or overlap within this many heartbeat periods after the last disturbance (end of churn, last fault, end of a bus outage) and stay so; checked at the end of a run (gridbed run --strict fails on it). 1 to 10000."),
	intField("invariants.survivors", func(s *Scenario) *int { return &s.Invariants.Survivors }, 1, 0, 1_000_000,
		"a valid number of peers",
		"The fewest peers that must be overlay members at the end (invariant population_survived): a run whose population died out measured nothing of the overlay. 0 turns the check off; 0 to 1000000."),
	intField("invariants.completed_jobs", func(s *Scenario) *int { return &s.Invariants.CompletedJobs }, 1, 0, 100_000_000,
		"a valid number of jobs",
		"With a workload, the fewest jobs that must complete by the end (checked in jobs_ran): a workload of which nothing completed measured no wait, turnaround or matchmaking. 0 turns the check off; 0 to 100000000."),
}, slices.Concat(
	allocationFields, // 004 resource-driven allocation (allocation.go)
	waveFields,       // the Wave scheduler (001, wave.go)
	bandwidthFields,  // link.bandwidth (bandwidth.go)
	ceFields,         // heterogeneous computing elements (002 §4.1, hetce.go)
)...)

// field describes one leaf key. Build it with a constructor, not by hand.
type field struct {
	key     string   // dotted key
	doc     string   // for Keys()
	want    string   // how to write a valid value; completes "— write ..."
	literal bool     // free text: --set takes the raw text when it is not a YAML scalar
	deps    []string // other keys check reads

	reset  func(*Scenario)                    // store the default
	decode func(*Scenario, *yaml.Node) string // store a non-null scalar; "" or the problem
	encode func(*Scenario) *yaml.Node         // the current value as a scalar node
	check  func(*Scenario) string             // "" or the problem with the current value
}

const (
	strTag   = "!!str"
	intTag   = "!!int"
	floatTag = "!!float"
	nullTag  = "!!null"
	boolTag  = "!!bool"
)

// leadingZero matches YAML 1.1 octal spellings such as 0500, which yaml.v3
// would silently read as 320.
var leadingZero = regexp.MustCompile(`^[-+]?0[0-9_]`)

// wholeNumber reports whether n is written as a YAML integer.
func wholeNumber(n *yaml.Node) bool {
	return n.ShortTag() == intTag && !leadingZero.MatchString(n.Value)
}

// octalHint explains a rejected leading zero.
func octalHint(n *yaml.Node) string {
	if n.ShortTag() == intTag && leadingZero.MatchString(n.Value) {
		return " without leading zeros (YAML would read " + n.Value + " as an octal number)"
	}
	return ""
}

func intField(key string, p func(*Scenario) *int, def, lo, hi int, noun, doc string) field {
	want := fmt.Sprintf("a whole number from %d to %d", lo, hi)
	bad := func(v string) string { return fmt.Sprintf("%s is not %s — write %s", v, noun, want) }
	return field{
		key: key, doc: doc, want: want,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			var v int64
			if !wholeNumber(n) || n.Decode(&v) != nil || v < math.MinInt || v > math.MaxInt {
				return bad(show(n)) + octalHint(n)
			}
			*p(s) = int(v)
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return plainNode(strconv.Itoa(*p(s))) },
		check: func(s *Scenario) string {
			if v := *p(s); v < lo || v > hi {
				return bad(strconv.Itoa(v))
			}
			return ""
		},
	}
}

func uintField(key string, p func(*Scenario) *uint64, def uint64, noun, doc string) field {
	want := "a whole number from 0 to 18446744073709551615"
	return field{
		key: key, doc: doc, want: want,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			var v uint64
			if !wholeNumber(n) || n.Decode(&v) != nil {
				return fmt.Sprintf("%s is not %s — write %s", show(n), noun, want) + octalHint(n)
			}
			*p(s) = v
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return plainNode(strconv.FormatUint(*p(s), 10)) },
		check:  func(*Scenario) string { return "" },
	}
}

// floatField is a number for which ok holds (ok must reject NaN).
func floatField(key string, p func(*Scenario) *float64, def float64, ok func(float64) bool, noun, want, doc string) field {
	bad := func(v string) string { return fmt.Sprintf("%s is not %s — write %s", v, noun, want) }
	return field{
		key: key, doc: doc, want: want,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			var v float64
			if t := n.ShortTag(); t != intTag && t != floatTag || n.Decode(&v) != nil {
				if _, err := strconv.ParseFloat(n.Value, 64); errors.Is(err, strconv.ErrRange) && n.Style == 0 {
					return fmt.Sprintf("%s is not %s (it is beyond the range of 64-bit numbers) — write %s", n.Value, noun, want)
				}
				return bad(show(n))
			}
			*p(s) = v
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return plainNode(fmtFloat(*p(s))) },
		check: func(s *Scenario) string {
			if v := *p(s); !ok(v) {
				return bad(fmtFloat(v))
			}
			return ""
		},
	}
}

// durationField is a Go duration; check (which may read deps) adds the range.
func durationField(key string, p func(*Scenario) *time.Duration, def time.Duration, doc string,
	check func(*Scenario, time.Duration) string, deps ...string) field {
	want := "Go duration syntax such as 10m, 90s or 1h30m"
	return field{
		key: key, doc: doc, want: want, deps: deps,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			d, err := time.ParseDuration(n.Value)
			if err != nil {
				msg := fmt.Sprintf("%s is not a duration — write %s", show(n), want)
				if n.ShortTag() == intTag || n.ShortTag() == floatTag {
					msg += fmt.Sprintf(" (a number needs a unit, e.g. %ss)", n.Value)
				}
				return msg
			}
			*p(s) = d
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return strNode(fmtDuration(*p(s))) },
		check:  func(s *Scenario) string { return check(s, *p(s)) },
	}
}

// positive checks a duration that must be above zero.
func nonNegative(noun string, example time.Duration) func(*Scenario, time.Duration) string {
	return func(_ *Scenario, d time.Duration) string {
		if d < 0 {
			return fmt.Sprintf("%s is not a valid %s — write 0s or a positive duration such as %s", fmtDuration(d), noun, fmtDuration(example))
		}
		return ""
	}
}

// departuresWindow checks departures.start and departures.stop: within
// the run, stop not before start.
func departuresWindow(s *Scenario, _ time.Duration) string {
	d := s.Departures
	if !d.On() {
		return ""
	}
	stop := d.Stop
	if stop <= 0 {
		stop = s.Duration / 2
	}
	if d.Start < 0 || d.Start >= s.Duration || stop >= s.Duration || stop < d.Start {
		return fmt.Sprintf("departures from %s to %s are not within the run (duration %s) in order — write a start and a stop below duration, the stop not before the start", fmtDuration(d.Start), fmtDuration(stop), fmtDuration(s.Duration))
	}
	return ""
}

// warmup checks workload.warmup: not negative, and before the end of the
// run (else no job would be in the steady-state window).
func warmup(s *Scenario, d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%s is not a valid warm-up — write 0s or a positive duration such as 2h", fmtDuration(d))
	}
	if d > 0 && d >= s.Duration {
		return fmt.Sprintf("%s is not before the end of the run (duration %s): no job would be in the steady state — write a shorter warm-up, e.g. %s", fmtDuration(d), fmtDuration(s.Duration), fmtDuration(s.Duration/4))
	}
	return ""
}

// churnStart checks churn.start: within the run, when churn is on.
func churnStart(s *Scenario, d time.Duration) string {
	if !s.Churn.On() && d >= 0 {
		return ""
	}
	return shorterThanRun("churn start", "start churn before the run ends", 2*time.Minute, true)(s, d)
}

// churnStop checks churn.stop: 0s, or after churn.start and within the run.
func churnStop(s *Scenario, d time.Duration) string {
	switch {
	case d < 0:
		return fmt.Sprintf("%s is not a valid churn stop — write 0s (the end of the run) or a time after churn.start", fmtDuration(d))
	case d == 0 || !s.Churn.On():
		return ""
	case d <= s.Churn.Start:
		return fmt.Sprintf("%s is not after churn.start %s — write a later time, or 0s for the end of the run", fmtDuration(d), fmtDuration(s.Churn.Start))
	case d > s.Duration:
		return fmt.Sprintf("%s is after the end of the run (duration %s) — write at most %s, or 0s", fmtDuration(d), fmtDuration(s.Duration), fmtDuration(s.Duration))
	}
	return ""
}

// workloadStart checks workload.start: never negative; when the workload is
// on, after the initial peers have joined and before the run ends.
func workloadStart(s *Scenario, d time.Duration) string {
	switch {
	case d < 0:
		return fmt.Sprintf("%s is not a valid workload start — write 0s or a positive duration such as 2m", fmtDuration(d))
	case !s.Workload.On():
		return ""
	case d < s.Peers.JoinWindow:
		return fmt.Sprintf("%s is before the initial peers have joined (peers.join_window %s) — write at least %s, or shorten peers.join_window",
			fmtDuration(d), fmtDuration(s.Peers.JoinWindow), fmtDuration(s.Peers.JoinWindow))
	case d >= s.Duration:
		return fmt.Sprintf("%s is not shorter than duration %s — make workload.start shorter than the run, e.g. %s",
			fmtDuration(d), fmtDuration(s.Duration), fmtDuration(s.Peers.JoinWindow))
	}
	return ""
}

// clientTimeout checks jobs.client_timeout: positive; when the workload is
// on, at least two heartbeat periods, so that a job is not resubmitted
// while news of it is merely a heartbeat away.
func clientTimeout(s *Scenario, d time.Duration) string {
	// An owner's crash is noticed by its run nodes after fail_after
	// periods, checked at their own period ticks, and the adoption may
	// wait for the zone's take-over: the client must wait longer than that.
	k := time.Duration(3 * (s.Overlay.Heartbeat.FailAfter + 2))
	least := k * s.Overlay.Heartbeat.Period / 2
	switch {
	case d <= 0:
		return fmt.Sprintf("%s is not a valid client timeout — write a positive duration such as 10m", fmtDuration(d))
	case s.Workload.On() && d < least:
		return fmt.Sprintf("%s is shorter than 1.5 × (overlay.heartbeat.fail_after + 2) heartbeat periods (%s), the time an owner's failure takes to be repaired — write at least %s for jobs.client_timeout, or make overlay.heartbeat.period at most %s",
			fmtDuration(d), fmtDuration(least), fmtDuration(least), fmtDuration((d * 2 / k).Truncate(time.Second)))
	}
	return ""
}

// fractionField is a number from 0 to 1.
func fractionField(key string, p func(*Scenario) *float64, def float64, noun, doc string) field {
	return floatField(key, p, def, func(v float64) bool { return v >= 0 && v <= 1 }, noun, "a number from 0 to 1, e.g. 0.5", doc)
}

func positive(noun string, example time.Duration) func(*Scenario, time.Duration) string {
	return func(_ *Scenario, d time.Duration) string {
		if d <= 0 {
			return fmt.Sprintf("%s is not a valid %s — write a positive duration such as %s", fmtDuration(d), noun, fmtDuration(example))
		}
		return ""
	}
}

// shorterThanRun checks a duration that must be below the run's duration;
// zero is allowed only if allowZero.
func shorterThanRun(noun, fix string, example time.Duration, allowZero bool) func(*Scenario, time.Duration) string {
	return func(s *Scenario, d time.Duration) string {
		switch {
		case d < 0 && allowZero:
			return fmt.Sprintf("%s is not a valid %s — write 0s or a positive duration such as %s", fmtDuration(d), noun, fmtDuration(example))
		case d <= 0 && !allowZero:
			return fmt.Sprintf("%s is not a valid %s — write a positive duration such as %s", fmtDuration(d), noun, fmtDuration(example))
		case d >= s.Duration:
			e := example
			if e >= s.Duration {
				e = s.Duration / 10
			}
			return fmt.Sprintf("%s is not shorter than duration %s — %s, e.g. %s", fmtDuration(d), fmtDuration(s.Duration), fix, fmtDuration(e))
		}
		return ""
	}
}

// boolField is true or false.
func boolField(key string, p func(*Scenario) *bool, def bool, doc string) field {
	want := "true or false"
	return field{
		key: key, doc: doc, want: want,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			var v bool
			if n.ShortTag() != boolTag || n.Decode(&v) != nil {
				return fmt.Sprintf("%s is not a boolean — write %s", show(n), want)
			}
			*p(s) = v
			return ""
		},
		encode: func(s *Scenario) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: boolTag, Value: strconv.FormatBool(*p(s))}
		},
		check: func(*Scenario) string { return "" },
	}
}

// also adds check (which may read deps) to f's own.
func also(f field, check func(*Scenario) string, deps ...string) field {
	own := f.check
	f.deps = append(f.deps, deps...)
	f.check = func(s *Scenario) string {
		if msg := own(s); msg != "" {
			return msg
		}
		return check(s)
	}
	return f
}

// enumField is one of values: a scenario-level list of names or a core's
// typed enum (overlay.HeartbeatMode, jobs.LoadView, ...).
func enumField[T ~string](key string, p func(*Scenario) *T, def T, typed []T, noun, doc string) field {
	values := make([]string, len(typed))
	for i, v := range typed {
		values[i] = string(v)
	}
	want := "one of " + strings.Join(values, ", ")
	bad := func(shown, v string) string {
		msg := fmt.Sprintf("%s is not %s — write %s", shown, noun, want)
		if m := closest(v, values); m != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", m)
		}
		return msg
	}
	valid := func(v string) bool {
		for _, x := range values {
			if v == x {
				return true
			}
		}
		return false
	}
	return field{
		key: key, doc: doc, want: want,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			if n.ShortTag() != strTag || !valid(n.Value) {
				return bad(show(n), n.Value)
			}
			*p(s) = T(n.Value)
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return strNode(string(*p(s))) },
		check: func(s *Scenario) string {
			if v := string(*p(s)); !valid(v) {
				return bad(strconv.Quote(v), v)
			}
			return ""
		},
	}
}

// stringField is free text: any YAML scalar is taken as its text. check may
// be nil.
func stringField(key string, p func(*Scenario) *string, def, doc, want string, check func(string) string) field {
	return field{
		key: key, doc: doc, want: want, literal: true,
		reset: func(s *Scenario) { *p(s) = def },
		decode: func(s *Scenario, n *yaml.Node) string {
			*p(s) = n.Value
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return strNode(*p(s)) },
		check: func(s *Scenario) string {
			switch v := *p(s); {
			case !utf8.ValidString(v):
				return fmt.Sprintf("%q is not valid UTF-8 — write %s", v, want)
			case check != nil:
				return check(v)
			}
			return ""
		},
	}
}

func checkBusURL(v string) string {
	if v == "" {
		return ""
	}
	bad := fmt.Sprintf("%q is not a NATS server URL — write nats://host:port (or tls://, ws://, wss://), or \"\" for the embedded server", v)
	u, err := url.Parse(v)
	if err != nil {
		return bad
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		if !strings.Contains(v, "://") {
			return bad + fmt.Sprintf(" (did you mean \"nats://%s\"?)", v)
		}
		return bad
	}
	if u.Host == "" || u.Hostname() == "" {
		return bad
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad
		}
	}
	return ""
}

// plainNode is an untagged scalar: YAML resolves it (numbers).
func plainNode(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// strNode is a string scalar; the encoder quotes it when YAML would
// otherwise read it as something else. Text with line breaks, other
// control or non-printing characters, or surrounding spaces is written
// double-quoted with escapes: yaml.v3's block styles lose line breaks of
// text that is only line breaks ("\n\n" reads back as "\n").
func strNode(v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: v}
	if strings.TrimSpace(v) != v || strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// scalarText is how a scalar node reads in YAML, for docs and examples.
func scalarText(n *yaml.Node) string {
	if n.Tag == strTag && n.Value == "" {
		return `""`
	}
	return n.Value
}

// show renders a value found in the file for a message: strings quoted,
// numbers and the like bare.
func show(n *yaml.Node) string {
	switch {
	case n.ShortTag() == strTag:
		return strconv.Quote(n.Value)
	case n.Style&yaml.TaggedStyle != 0: // !!float 4
		return n.ShortTag() + " " + n.Value
	}
	return n.Value
}

// fmtDuration writes a duration the short way: 10m rather than 10m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Lookup tables derived from schema.
var (
	leaves   = map[string]*field{}   // dotted key → field
	sections = map[string][]string{} // section path ("" = top) → child names in order
)

func init() {
	for i := range schema {
		f := &schema[i]
		if f.key == "" || f.doc == "" || f.want == "" || f.reset == nil || f.decode == nil || f.encode == nil || f.check == nil {
			panic("scenario: incomplete schema entry " + strconv.Quote(f.key))
		}
		if leaves[f.key] != nil {
			panic("scenario: duplicate schema key " + f.key)
		}
		for _, d := range f.deps {
			if leaves[d] == nil {
				panic("scenario: " + f.key + " depends on " + d + ", which must come earlier in the schema")
			}
		}
		leaves[f.key] = f
		child := f.key
		for child != "" {
			parent, name := splitKey(child)
			if _, isSection := sections[parent]; !isSection || !slices.Contains(sections[parent], name) {
				sections[parent] = append(sections[parent], name)
			}
			child = parent
		}
	}
	sections[""] = append(sections[""], "faults", "experiment")
	sections["link"] = append(sections["link"], "region_latency")
	sections["link.bandwidth"] = append(sections["link.bandwidth"], "classes")
	for path := range sections {
		if leaves[path] != nil {
			panic("scenario: " + path + " is both a key and a section")
		}
	}
	if err := Default().Validate(); err != nil {
		panic("scenario: defaults are invalid: " + err.Error())
	}
}
