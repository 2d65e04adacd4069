// Package scenario defines gridbed's scenario files: the YAML document that
// describes one emulation run, its defaults, strict loading with file:line
// errors, and `--set key=value` overrides addressed by dotted key.
//
// Every key is declared once, in the schema table in schema.go. That one
// descriptor drives YAML loading (Parse), overrides (Set), validation
// (Validate), the effective-scenario dump (YAML) and the key listing (Keys).
//
// An empty file (or one holding only comments) is a valid scenario: every
// key takes its default. A section written with no keys (`peers:`) likewise
// keeps all of its defaults. A leaf key written with no value (`seed:`) is an
// error: leave the key out to get its default.
package scenario

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/faults/link"
)

// Scenario is one emulation run, as described by a scenario file.
type Scenario struct {
	Name      string        // free-form label
	Seed      uint64        // seed of every random choice
	TimeScale float64       // emulated seconds per wall-clock second
	Duration  time.Duration // emulated length of the run
	Peers     Peers
	Overlay   Overlay
	Churn     Churn
	Link      Link
	// Workload is the jobs the client submits (none by default).
	Workload Workload
	// Matchmaking chooses how a job finds its run node.
	Matchmaking Matchmaking
	// Jobs configures the client's job lifecycle: resubmission, giving up.
	Jobs Jobs
	// Scheduling chooses the run nodes' dynamic scheduling (000 §IV).
	Scheduling Scheduling
	Bus        Bus
	// Emulator configures the emulator driver itself (not the protocol).
	Emulator Emulator
	Oracle   Oracle
	// Faults is the fault timeline (faults.go): what goes wrong and when.
	Faults []Fault
	// Departures adds evenly spaced departures to the fault timeline
	// (SortedFaults), a key so that a parameter grid can vary it.
	Departures Departures
	// Invariants are the end-of-run checks (--strict fails the run on them).
	Invariants Invariants
	// Allocation is a run of 004's resource-driven allocation
	// (allocation.go); off by default.
	Allocation Allocation
	// Experiment is the optional experiment block (experiment.go): the
	// published experiment this scenario reproduces. Runs ignore it.
	Experiment *Experiment
	// Wave is the Wave scheduler's experiment (001; wave.go), Clock the
	// emulated calendar it reads.
	Wave  Wave
	Clock Clock

	// Source is the file the scenario came from, "" for Default().
	// It is not a scenario key.
	Source string
}

// Peers describes the initial peer population.
type Peers struct {
	Count      int           // number of peers
	Population string        // PopulationClustered, PopulationMixed or PopulationUniform
	JoinWindow time.Duration // emulated time over which the peers join one after another
	// Bootstrap is how the initial population joins: BootstrapJoins over
	// the bus, or BootstrapDirect in-process before the run goes live.
	Bootstrap string
	// Categorical are the peers' categorical resources (002 §2.4, §5.1).
	Categorical PeersCategorical
	// Clock spreads the peers' own clocks (peers.clock).
	Clock PeersClock
	// CEs are the peers' heterogeneous computing elements (002 §4.1).
	CEs PeersCEs
}

// PeersClock spreads the peers' own clocks: each peer's clock runs at
// 1 + d, d uniform in [-Drift, +Drift], and reads ahead of emulated time
// by an offset uniform in [0, Offset].
type PeersClock struct {
	Drift  float64
	Offset time.Duration
}

// PeersCategorical describes the peers' categorical resources (002 §2.4,
// ch. 5): Types types of Values values each; every peer — initial or
// joining — draws one of the first Combinations combinations (0: all of
// them) uniformly. 002 §5.2.1 has 4 types of 2 values (16 combinations,
// equally many nodes in each); §5.2.4 4 combinations in use.
type PeersCategorical struct {
	Types, Values, Combinations int
}

// On reports whether the peers have categorical resources.
func (c PeersCategorical) On() bool { return c.Types > 0 }

// Space is the categorical types and values as package categorical
// describes them (zero without categorical resources).
func (c PeersCategorical) Space() categorical.Space {
	if c.Types <= 0 {
		return categorical.Space{}
	}
	v := make([]int, c.Types)
	for i := range v {
		v[i] = c.Values
	}
	return categorical.Space{Values: v}
}

// InUse is the number of combinations peers draw from: Combinations, or
// every one when it is 0.
func (c PeersCategorical) InUse() int {
	if c.Combinations > 0 {
		return c.Combinations
	}
	return c.Space().Combinations()
}

// Values of Peers.Bootstrap.
const (
	BootstrapJoins  = "joins"  // the initial peers join one after another over the bus
	BootstrapDirect = "direct" // the join phase runs in-process (deterministic driver); peers start as members
)

// Overlay configures the overlay protocol.
type Overlay struct {
	Dimensions int               // resource dimensions, not counting the virtual dimension
	Split      overlay.SplitRule // how an owner divides its zone at a join
	Heartbeat  Heartbeat
	// OrphanNotice: an orphan's claimant tells the departed node's other
	// neighbors of its claim (gridbed's extension; overlay.Config).
	OrphanNotice bool
	// JoinRetry is overlay.join_retry: a joiner's first wait for its
	// JOIN-ACCEPT (overlay.Config.JoinRetry); 0 is JoinRetryAuto.
	JoinRetry time.Duration
}

// Heartbeat configures neighbor liveness checking.
type Heartbeat struct {
	Period    time.Duration // emulated time between heartbeats
	Mode      overlay.HeartbeatMode
	FailAfter int // consecutive missed heartbeats before a neighbor is declared failed
	// Repairs beyond 002 §4.2, each on by default (overlay.Config):
	AnnounceRepairs bool // a node that learns a neighbor from a relayed list introduces itself at once
	ZoneQueries     bool // a compact heartbeat from a node not known at its zone version asks it for a full update
	TakeoverRequest bool // an adaptive take-over node asks its new neighborhood for full updates at once
}

// Bus configures the message bus the emulated peers talk over.
type Bus struct {
	URL         string // "" for an embedded NATS server, else nats://host:port
	Connections int    // connections shared by the emulated peers
	// Fanout is how a step's messages travel: FanoutPerReceiver (one
	// transport message each) or FanoutBatched (one per receiving
	// connection).
	Fanout string
}

// Values of Bus.Fanout.
const (
	FanoutPerReceiver = "per-receiver" // one NATS message per message and receiver
	FanoutBatched     = "batched"      // one NATS message per receiving connection, carrying the receivers' messages
)

// Emulator configures the emulator driver.
type Emulator struct {
	// Overload is what the emulator does when it falls behind its time
	// scale during the run: OverloadAbort or OverloadWarn.
	Overload string
	// LagTolerance is how late timers may fire, as a fraction of the
	// heartbeat period (emulated), for the run to have kept up.
	LagTolerance float64
}

// Values of Emulator.Overload.
const (
	OverloadAbort = "abort" // stop the run cleanly and write its results so far
	OverloadWarn  = "warn"  // warn and go on
)

// Churn configures peers joining and departing during the run (002
// §4.3.2): events arrive as a Poisson process, each a join or a departure
// with equal probability; a departure is a failure (silent crash) with
// probability FailFraction, else a graceful leave.
type Churn struct {
	Interval     time.Duration // mean emulated time between churn events; 0 = no churn
	Start        time.Duration // emulated time of the first possible event
	Stop         time.Duration // emulated time after which no event happens; 0 = the end of the run
	FailFraction float64       // share of departures that are failures
	// Lifetime is the session model: every peer departs after a lifetime
	// drawn from a distribution and a new peer takes its place at once.
	Lifetime Lifetime
}

// Lifetime is a session-time distribution (churn.lifetime).
type Lifetime struct {
	Dist  string        // LifetimeNone, or one of exponential, pareto, weibull
	Mean  time.Duration // mean lifetime
	Shape float64       // pareto: α > 1 (heavier tail as it nears 1); weibull: k > 0 (k < 1: many short sessions, few long)
}

// LifetimeNone turns the session model off.
const LifetimeNone = "none"

// LifetimeDists are the values of churn.lifetime.dist.
var LifetimeDists = []string{LifetimeNone, "exponential", "pareto", "weibull"}

// On reports whether the scenario has churn of either kind.
func (c Churn) On() bool { return c.Interval > 0 || c.Lifetime.Dist != LifetimeNone }

// Link is the link model every message passes (package faults/link): a delay
// drawn from a distribution, loss, duplication, and regions with an extra
// delay between them. The fault timeline changes it mid-run.
type Link struct {
	Latency     Latency
	Loss        float64 // probability that a message is lost
	Duplicate   float64 // probability that a message is delivered twice
	Corrupt     float64 // probability that a message arrives with one byte changed (rejected by its receiver)
	Regions     int     // peers are spread over this many regions (by a hash of the seed and their id)
	InterRegion Latency // extra delay of a message between two regions
	// RegionLatency, if set, is a regions × regions matrix of mean extra
	// delays from region i to region j (the diagonal included), drawn from
	// InterRegion's distribution and jitter; it replaces InterRegion.Mean.
	RegionLatency [][]time.Duration
	// LatencyMatrix is link.latency_matrix: the path of a CSV file of
	// measured one-way delays between named regions (link.ParseMatrix),
	// as written; Matrix is what it holds, read when the scenario is
	// validated (latencymatrix.go). It sets Regions.
	LatencyMatrix string
	Matrix        *link.Matrix
	// Bandwidth is link.bandwidth: the peers' access links (bandwidth.go).
	Bandwidth Bandwidth
}

// Latency is a delay distribution.
type Latency struct {
	Dist   string        // one of link.Dists (the link model's delay distributions)
	Mean   time.Duration // mean delay
	Jitter time.Duration // plus a uniform offset in [-Jitter, +Jitter] (reorders messages)
}

// Workload configures the jobs the client submits (003 §5.3): Poisson
// arrivals with mean Interarrival from Start; each resource
// dimension is constrained independently with probability ConstraintRatio
// (003's lightly-constrained workload has 1.3 constraints of 3 on average,
// 0.43 each), an unconstrained one is 0 ("don't care"); requirements are
// mixed (random) or clustered (a few equivalence classes of identical
// requirements); a job's work is its running time on a canonical node
// (speed 1.0), drawn around Runtime. Package workload draws the jobs.
type Workload struct {
	Jobs            int           // number of jobs the client submits; 0 = no workload
	Interarrival    time.Duration // mean emulated time between submissions (Poisson)
	Load            float64       // above 0: replaces Interarrival, submitting Load × the peers' Σ cores × CPU speed in work per second (workload.Interarrival)
	Start           time.Duration // emulated time of the first possible submission
	ConstraintRatio float64       // probability that each resource is constrained
	Kind            string        // WorkloadMixed or WorkloadClustered
	Classes         string        // ClassesIndependent or ClassesNodes: how requirements relate to the peers
	Runtime         time.Duration // T: mean running time on a canonical node (speed 1.0)
	RuntimeDist     string        // RuntimeUniform, RuntimeNormal or RuntimeExponential
	// Drain lets the run go on after Duration (no job submitted then)
	// until every job of the workload has ended, for at most DrainLimit
	// more (0: Scenario.DrainLimit's default).
	Drain      bool
	DrainLimit time.Duration
	// Categorical are the jobs' categorical constraints (002 §5.1.2).
	Categorical WorkloadCategorical
	// CEs is which CE jobs name as dominant (002 §4.1.2).
	CEs WorkloadCEs
	// Warmup is the steady-state window's start: jobs submitted before it
	// are left out of the steady-state waits (003 §5.4 measures the steady
	// state, "to avoid the transient effects of earlier jobs that see a
	// largely empty system"). 0: every job counts.
	Warmup time.Duration
}

// On reports whether the scenario submits any job.
func (w Workload) On() bool { return w.Jobs > 0 }

// WorkloadCategorical is how jobs constrain the peers' categorical
// resources (002 §5.1.2, §5.2): a share Exact of the jobs accept exactly
// one combination (drawn uniformly among those the peers use), a share
// Range constrain each type to a range of values — or, with probability
// DontCare per type, not at all — and the rest do not care about any type.
// 002 §5.2.1: 62.5% exact, the rest don't care; §5.2.3: every job exact.
type WorkloadCategorical struct {
	Exact, Range, DontCare float64
}

// On reports whether some jobs have a categorical constraint.
func (c WorkloadCategorical) On() bool { return c.Exact > 0 || c.Range > 0 }

// DrainLimit is how long past duration a draining run may go on:
// workload.drain_limit, or when that is 0 the longer of four mean running
// times — a job submitted at the end of the run, matched to a slow node
// (cpu_speed 0.5) behind a queue, still finishes — and two client
// timeouts (a job whose owner and run node were lost is resubmitted once).
func (s Scenario) DrainLimit() time.Duration {
	if s.Workload.DrainLimit > 0 {
		return s.Workload.DrainLimit
	}
	return max(4*s.Workload.Runtime, 2*s.Jobs.ClientTimeout)
}

// Horizon is the latest emulated time the run may reach: duration, plus
// DrainLimit when the workload drains.
func (s Scenario) Horizon() time.Duration {
	if s.Workload.On() && s.Workload.Drain {
		return s.Duration + s.DrainLimit()
	}
	return s.Duration
}

// Values of Workload.Kind: the population kinds, for jobs.
const (
	WorkloadClustered = PopulationClustered // a few classes of identical requirements
	WorkloadMixed     = PopulationMixed     // independent random requirements
)

// Values of Workload.Classes.
const (
	ClassesIndependent = "independent" // requirements drawn like capabilities, independently of the peers
	ClassesNodes       = "nodes"       // requirements cut from randomly chosen peers (each job has a capable peer)
)

// Values of Workload.RuntimeDist, for a mean running time T.
const (
	RuntimeUniform     = "uniform"     // uniform in [0.5T, 1.5T] (003 §5.3)
	RuntimeNormal      = "normal"      // mean T, standard deviation T/4, at least 0.05T
	RuntimeExponential = "exponential" // mean T
)

// RuntimeDists are the values of workload.runtime_dist.
var RuntimeDists = []string{RuntimeUniform, RuntimeNormal, RuntimeExponential}

// Matchmaking chooses the matchmaking scheme (003 §4; docs/JOBS.md).
type Matchmaking struct {
	Scheme         string            // a jobs.Scheme's name, or can-p1, can-p2 or can-p3 (Schemes)
	StoppingFactor int               // SF of CAN-P's probabilistic stop, PS = 1/(1+n)^SF (003 Eq 4)
	Residue        jobs.ResidueModel // 002 §3.1
	// LoadView is where CAN and CAN-P read their neighbors' load:
	// jobs.LoadViewHeartbeat (003 §4.4) or jobs.LoadViewOracle (an
	// experiment switch: the global view's current queue lengths).
	LoadView jobs.LoadView
	// StopNodes is the node count of CAN-P's stop probability (003 Eq
	// 4): jobs.StopNodesOwn or jobs.StopNodesTarget.
	StopNodes jobs.StopNodes
	// Categorical is how matchmaking uses categorical resources: one of
	// CategoricalModes (002 ch. 5).
	Categorical string
	// RntCandidates is the RNT's extended search's k (003 §5.1).
	RntCandidates int
}

// CategoricalSubCAN is matchmaking.categorical's value for 002 §2.4's
// sub-CANs.
var CategoricalSubCAN = jobs.CategoricalSubCAN.String()

// CategoricalModes are the values of matchmaking.categorical.
var CategoricalModes = names(jobs.CategoricalModes)

// Schemes are the values of matchmaking.scheme: can-p1, can-p2 and can-p3
// are the papers' names for CAN-P with stopping factor 1, 2 or 3 (they
// override matchmaking.stopping_factor), handy in a sweep.
var Schemes = []string{jobs.SchemeCAN.String(), jobs.SchemeCANP.String(), "can-p1", "can-p2", "can-p3", jobs.SchemeCENT.String(), jobs.SchemeCENTQueue.String(),
	jobs.SchemeMP.String(), jobs.SchemeCANHet.String(), jobs.SchemeCANHom.String(), jobs.SchemeCENTHet.String(), jobs.SchemeRNT.String()}

// MP reports whether the run is 002 §3.3's Multiple Peers: one peer per
// core of every node (population.PerCore), peers.count counting nodes.
func (s Scenario) MP() bool { return s.Matchmaking.Scheme == jobs.SchemeMP.String() }

// Resolved returns the scheme without its stopping-factor suffix and the
// stopping factor CAN-P uses. It panics on a scheme Validate refuses.
func (m Matchmaking) Resolved() (scheme jobs.Scheme, stoppingFactor int) {
	switch m.Scheme {
	case "can-p1", "can-p2", "can-p3":
		return jobs.SchemeCANP, int(m.Scheme[len(m.Scheme)-1] - '0')
	}
	return must(jobs.ParseScheme(m.Scheme)), m.StoppingFactor
}

// Scheduling chooses the dynamic scheduling mode (000 §IV; docs/JOBS.md).
type Scheduling struct {
	Mode       string          // a jobs.SchedMode's name, SchedCENT or SchedCENTGreedy
	Period     time.Duration   // between internode-scheduling / queue-balancing rounds
	Contention bool            // slow shared nodes down by α (002 Eq 3.5)
	PullReach  int             // overlay hops an internode PULL request may travel (1: neighbors, 000 §IV-B)
	PullTarget jobs.PullTarget // which neighbor an internode PULL request asks (000 §IV-B)
	QueueLoad  jobs.QueueLoad  // which jobs queue balancing's L sums (000 Eq 4's Queue_i)
}

// Values of Scheduling.Mode (000 §V-B) besides the run nodes' own
// (jobs.SchedModes).
const (
	// SchedCENT is 000 §V-B's CENT as a scheduling mode, so that one
	// sweep axis covers all seven of Fig 3's configurations: the
	// single-queue centralized scheduler (matchmaking.scheme cent-queue,
	// whatever the file says) with vanilla run nodes.
	SchedCENT = "cent"
	// SchedCENTGreedy is the other reading of 000 §V-A's "greedy online
	// centralized scheduler": each job placed at its arrival by the
	// global view (matchmaking.scheme cent) into a node's FIFO queue,
	// with vanilla run nodes.
	SchedCENTGreedy = "cent-greedy"
)

// SchedModes are the values of scheduling.mode.
var SchedModes = append(names(jobs.SchedModes), SchedCENT, SchedCENTGreedy)

// JobSchemes returns the matchmaking scheme, CAN-P's stopping factor and the run
// nodes' scheduling mode a run uses: matchmaking.Resolved and
// scheduling.mode, except that scheduling.mode cent is the cent-queue
// scheme and cent-greedy the cent scheme, both with vanilla run nodes.
// It panics on a scheme or mode Validate refuses.
func (s Scenario) JobSchemes() (scheme jobs.Scheme, stoppingFactor int, mode jobs.SchedMode) {
	switch s.Scheduling.Mode {
	case SchedCENT:
		return jobs.SchemeCENTQueue, s.Matchmaking.StoppingFactor, jobs.SchedVanilla
	case SchedCENTGreedy:
		return jobs.SchemeCENT, s.Matchmaking.StoppingFactor, jobs.SchedVanilla
	}
	scheme, stoppingFactor = s.Matchmaking.Resolved()
	return scheme, stoppingFactor, must(jobs.ParseSchedMode(s.Scheduling.Mode))
}

// must returns v, panicking on err: for values Validate has checked.
func must[T any](v T, err error) T {
	if err != nil {
		panic("scenario: " + err.Error())
	}
	return v
}

// names returns the names of a core's enum values, in order.
func names[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}

// HoldsACID reports whether the run's peers aggregate and carry ACIDs (002
// Eq 5.1): they have categorical resources and match without sub-CANs (a
// sub-CAN's heartbeats carry no ACID, 002 §2.4). Only then is the share
// of wrong ACIDs measured.
func (s Scenario) HoldsACID() bool {
	return s.Peers.Categorical.On() && s.Matchmaking.Categorical != CategoricalSubCAN
}

// SchemeName is matchmaking.scheme as the results name it: cent-queue
// under scheduling.mode cent, cent under cent-greedy.
func (s Scenario) SchemeName() string {
	switch s.Scheduling.Mode {
	case SchedCENT:
		return jobs.SchemeCENTQueue.String()
	case SchedCENTGreedy:
		return jobs.SchemeCENT.String()
	}
	return s.Matchmaking.Scheme
}

// Jobs configures how the client follows its jobs.
type Jobs struct {
	ClientTimeout time.Duration // the client resubmits a job it has heard nothing about for this long
	MaxAttempts   int           // submissions of one job before the client records it failed
}

// Invariants configure the checks at the end of a run.
type Invariants struct {
	// ReconvergePeriods: the overlay must be exact (no broken link, gap or
	// overlap) within this many heartbeat periods after the last disturbance
	// (the end of churn, the last fault, the end of a bus outage).
	ReconvergePeriods int
	// Survivors: at least this many peers are overlay members at the end
	// (population_survived); 0 turns the check off.
	Survivors int
	// CompletedJobs: with a workload, at least this many jobs complete by
	// the end (jobs_ran); 0 turns the check off.
	CompletedJobs int
}

// Oracle configures the ground-truth observer.
type Oracle struct {
	Interval time.Duration // emulated time between ground-truth snapshots
}

// Values of Peers.Population.
const (
	PopulationClustered = "clustered"
	PopulationMixed     = "mixed"
	PopulationUniform   = "uniform"
)

// KeyDoc documents one scenario key, for a `gridbed scenario keys` listing.
type KeyDoc struct {
	Key     string // dotted key, e.g. "peers.count"
	Default string // default value as written in YAML, e.g. "500", "10m", `""`
	Doc     string // one or two sentences, including the valid values
}

// Default returns the scenario every file starts from: the defaults used in
// the papers. Its Source is "".
func Default() Scenario {
	var s Scenario
	for i := range schema {
		schema[i].reset(&s)
	}
	return s
}

// Load reads the scenario file at path and parses it with Parse. The path is
// used as the Source in the scenario and in error messages.
func Load(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("reading scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a scenario file strictly: unknown keys, duplicate keys,
// values of the wrong type and impossible values are all errors. source names
// the file in messages. On failure the error is an Errors holding every
// problem found, each with its line and column, and the Scenario is zero.
func Parse(source string, data []byte) (Scenario, error) {
	p := newParser(source)
	s := Default()
	s.Source = source
	if root := p.document(data); root != nil {
		p.section(&s, "", root)
	}
	if p.tree {
		p.validate(&s)
	}
	if len(p.errs) == 0 {
		p.checkExperiment(&s)
	}
	if len(p.errs) > 0 {
		p.errs.sort()
		return Scenario{}, p.errs
	}
	return s, nil
}

// Validate checks every key's value and the rules between keys. The error,
// if any, is an Errors with one entry per problem (without file positions).
func (s Scenario) Validate() error {
	p := newParser("")
	p.validate(&s)
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs
}

// Set applies one "key=value" override and validates the result; on error
// s is unchanged.
func (s *Scenario) Set(assignment string) error { return s.SetAll(assignment) }

// SetAll applies several "key=value" overrides and then validates the
// result once, so that overrides that only make sense together (a shorter
// duration and an earlier churn.stop) can be given in any order. On error s
// is unchanged.
func (s *Scenario) SetAll(assignments ...string) error {
	next := *s
	for _, assignment := range assignments {
		rawKey, text, found := strings.Cut(assignment, "=")
		key := strings.TrimSpace(rawKey)
		fail := func(msg string) error {
			return Errors{{Source: s.Source, Key: key, Msg: msg, Set: assignment}}
		}
		if strings.TrimSpace(assignment) == "" {
			return Errors{{Source: s.Source, Msg: `the assignment is empty — write key=value, e.g. --set peers.count=2000`, Set: `""`}}
		}
		if !found {
			return fail(`missing "=" — write key=value, e.g. --set peers.count=2000`)
		}
		if isFaultKey(key) {
			if msg := next.setFault(key, text); msg != "" {
				return fail(msg)
			}
			continue
		}
		f := leaves[key]
		if f == nil {
			return fail(unknownSetKey(key))
		}
		n, msg := setNode(f, text)
		if msg != "" {
			return fail(msg)
		}
		if msg := assign(f, &next, n, setExample(f)); msg != "" {
			return fail(msg)
		}
	}
	p := newParser("")
	p.validate(&next)
	if len(p.errs) > 0 {
		for _, e := range p.errs {
			e.Source, e.Set = s.Source, strings.Join(assignments, " --set ")
		}
		return p.errs
	}
	*s = next
	return nil
}

// Keys lists every scenario key in schema order with its default and doc.
func Keys() []KeyDoc {
	d := Default()
	out := make([]KeyDoc, 0, len(schema))
	for i := range schema {
		f := &schema[i]
		out = append(out, KeyDoc{Key: f.key, Default: scalarText(f.encode(&d)), Doc: f.doc})
	}
	out = append(out, KeyDoc{Key: "link.region_latency", Default: "[]", Doc: regionLatencyDoc})
	out = append(out, KeyDoc{Key: bandwidthClassesKey, Default: "[]", Doc: bandwidthClassesDoc})
	out = append(out, KeyDoc{Key: "faults", Default: "[]", Doc: faultsDoc + " Events for when: " + strings.Join(TriggerEvents, ", ") + "."})
	return append(out, KeyDoc{Key: "experiment", Default: "none", Doc: experimentDoc})
}

// experimentDoc documents the experiment block for `gridbed keys`.
const experimentDoc = "The published experiment the file reproduces, read by `gridbed reproduce` and ignored by `gridbed run`: paper, section, figure, title; vary (the sweep's axes, each {key, values}); scale (key: exponent — `--scale F` multiplies the key's value by F^exponent); smoke (scale and findings of the test suite's reduced run); findings (id, claim, kind ratio|order|exponent, metric — a summary.json path —, of/over/where points, axis, order chain, paper value, tolerance, at_least/at_most, direction). docs/FIDELITY.md."

// Value is key's value in s as a scenario file writes it (e.g. "11s",
// "300"); false when key is not a scenario key.
func (s Scenario) Value(key string) (string, bool) {
	f := leaves[key]
	if f == nil {
		return "", false
	}
	return scalarText(f.encode(&s)), true
}

// YAML renders the effective scenario — every key, defaults filled in — as
// a YAML document that Parse reads back to the same Scenario, so a run can
// record exactly what it ran. It does not validate.
func (s Scenario) YAML() ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	sections := map[string]*yaml.Node{"": root}
	var sectionNode func(path string) *yaml.Node
	sectionNode = func(path string) *yaml.Node {
		if n := sections[path]; n != nil {
			return n
		}
		parent, name := splitKey(path)
		n := &yaml.Node{Kind: yaml.MappingNode}
		pn := sectionNode(parent)
		pn.Content = append(pn.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, n)
		sections[path] = n
		return n
	}
	for i := range schema {
		f := &schema[i]
		parent, name := splitKey(f.key)
		pn := sectionNode(parent)
		pn.Content = append(pn.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, f.encode(&s))
	}
	ln := sectionNode("link")
	ln.Content = append(ln.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "region_latency"}, matrixNode(s.Link.RegionLatency))
	bn := sectionNode("link.bandwidth")
	bn.Content = append(bn.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "classes"}, bandwidthClassesNode(s.Link.Bandwidth.Classes))
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "faults"}, faultsNode(s.Faults))
	comment := "gridbed scenario: effective values, defaults filled in"
	if s.Source != "" {
		comment += "\nsource: " + s.Source
	}
	return encodeDocument(comment, root)
}

// encodeDocument writes root as a YAML document headed by comment, indented
// by two spaces (the scenario files' style).
func encodeDocument(comment string, root *yaml.Node) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: comment, Content: []*yaml.Node{root}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// splitKey splits "a.b.c" into "a.b" and "c"; a top-level key has parent "".
func splitKey(key string) (parent, name string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// joinKey joins a section path and a key name.
func joinKey(section, name string) string {
	if section == "" {
		return name
	}
	return section + "." + name
}

// Departures is a share of the initial population that departs during
// the run, without replacement: Events entries evenly spaced from Start
// to Stop, alternately crashes and graceful leaves, each removing
// Fraction/Events of the initial population (003 §5.5's dynamic
// workloads: 10% to 30% of the nodes leave, gracefully or by failure).
type Departures struct {
	Fraction    float64
	Start, Stop time.Duration // Stop 0: half the run
	Events      int
}

// On reports whether any peer departs.
func (d Departures) On() bool { return d.Fraction > 0 }

// faults are the departures' timeline entries.
func (d Departures) faults(duration time.Duration) []Fault {
	if !d.On() || d.Events <= 0 {
		return nil
	}
	stop := d.Stop
	if stop <= 0 {
		stop = duration / 2
	}
	per := d.Fraction / float64(d.Events)
	out := make([]Fault, d.Events)
	for k := range out {
		at := d.Start
		if d.Events > 1 {
			at += time.Duration(float64(stop-d.Start) * float64(k) / float64(d.Events-1))
		}
		kind := FaultCrash
		if k%2 == 1 {
			kind = FaultLeave
		}
		// A crash or leave takes a fraction of the current members: of
		// what is left after the k entries before, per of the initial
		// population.
		out[k] = Fault{At: at, Kind: kind, Fraction: per / (1 - float64(k)*per), Region: -1}
	}
	return out
}

// JoinRetryAuto is a joiner's first wait for its JOIN-ACCEPT when
// overlay.join_retry is not set: four times the longest a join should
// take on the scenario's links — a JOIN's greedy route across the space
// (each of the d dimensions crossed halfway on average, N^(1/d) zones
// along each, plus two hops) and the JOIN-ACCEPT back, each hop at three
// times its mean delay plus its jitter (and the largest inter-region
// delay, or link.latency_matrix's largest median plus jitter) — and at
// least a second, or on the emulator the emulated time
// of 20 ms of wall time (the bus and the mailboxes take some); at most
// the join timeout (two heartbeat periods). A lost JOIN or JOIN-ACCEPT
// then holds the sequential join phase for about this long instead of
// the join timeout.
func (s *Scenario) JoinRetryAuto(emulator bool) time.Duration {
	d := max(s.Overlay.Dimensions, 1)
	hops := float64(d)/2*math.Pow(float64(max(s.Peers.Count, 1)), 1/float64(d)) + 3
	hop := 3*(s.Link.Latency.Mean+s.Link.Latency.Jitter) + 3*(s.Link.InterRegion.Mean+s.Link.InterRegion.Jitter)
	for _, row := range s.Link.RegionLatency {
		for _, x := range row {
			hop = max(hop, 3*(s.Link.Latency.Mean+s.Link.Latency.Jitter+x+s.Link.InterRegion.Jitter))
		}
	}
	if m := s.Link.Matrix; m != nil {
		for i := range m.Median {
			for j := range m.Median[i] {
				hop = max(hop, 3*(s.Link.Latency.Mean+s.Link.Latency.Jitter)+m.Median[i][j]+m.Jitter[i][j])
			}
		}
	}
	w := max(time.Duration(4*hops*float64(hop)), time.Second)
	if emulator {
		w = max(w, time.Duration(0.02*s.TimeScale*float64(time.Second)))
	}
	return min(w, 2*s.Overlay.Heartbeat.Period)
}
