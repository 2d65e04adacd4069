package emulator

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/ledger"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/staleness"
	"github.com/gridbed/gridbed/emulator/workload"
	"github.com/gridbed/gridbed/metrics"
)

// jobRun is the workload side of a run: the client's submissions, the
// ledger (the oracle's view of jobs and CENT's global view) and the job
// metrics. nil when the scenario has no workload.
type jobRun struct {
	sc     scenario.Scenario
	ledger *ledger.Ledger
	m      *metrics.Jobs
	jobs   []workload.Job
	// interarrival is the mean inter-arrival time the jobs were drawn
	// with: workload.interarrival, or the one workload.load chose.
	interarrival time.Duration
	member       func(core.NodeID) bool // set once the driver exists
	// stopped says how the run was stopped before its end — "aborted
	// (the emulator could not keep up)" or "interrupted" — or is "": every
	// job not ended then was cut short (some in messages the frozen peers
	// never read), so none counts as lost.
	stopped string
	// last is the latest tally (at the latest oracle sample).
	last ledger.Totals
	// inFlight is how long before the end of the run a job may have been
	// handed to the client without the client having submitted it yet:
	// one oracle interval on the emulator (the client is an actor with a
	// mailbox, the submission a wall-clock timer), 0 on the simulator.
	inFlight time.Duration
	// waits are every submitted job's waits at the end (ledger.Waits), for
	// Result.JobWaits; set by summary.
	waits []float64
	// lastAt is when the last job of the workload was submitted, busy and
	// live the peers holding a job and the live peers then (003 Fig 5's
	// utilization); live is 0 until then.
	lastAt     time.Duration
	busy, live int
	// stale is gridbed_aggregate_error_ratio (stale.go).
	stale *prometheus.GaugeVec
	// ceWait is gridbed_job_ce_wait_seconds and gpuJobs the GPU jobs, with
	// heterogeneous computing elements (hetce.go); nil otherwise.
	ceWait  *prometheus.HistogramVec
	gpuJobs map[uint64]bool
}

// newJobRun draws the workload; peers are the initial population (the
// templates of workload.classes: nodes).
func newJobRun(sc scenario.Scenario, m *metrics.Run, peers []population.Node) *jobRun {
	if !sc.Workload.On() {
		return nil
	}
	j := &jobRun{sc: sc, m: m.EnableJobs(jobs.EventNames()), jobs: workload.Generate(sc.Workload, sc.Overlay.Dimensions, sc.Duration, sc.Seed, peers),
		interarrival: workload.Interarrival(sc.Workload, sc.Overlay.Dimensions, sc.Seed, peers)}
	workload.Categorize(j.jobs, sc.Workload.Categorical, sc.Peers.Categorical, sc.Seed)
	if sc.CEsOn() {
		assignDominantCEs(j.jobs, sc.Workload.CEs, sc.Peers.CEs.GpuTypes, sc.Seed) // 002 §4.1.2
		j.enableCEs(m)
	}
	if t := subCAN(sc); t != nil {
		// 002 §2.4: a job is routed first into a sub-CAN it accepts.
		dims := sc.Overlay.Dimensions
		for i := range j.jobs {
			j.jobs[i].Req[dims] = t.JobCoord(j.jobs[i].CID, j.jobs[i].Req[dims])
		}
	}
	j.stale = m.EnableAggregateErrors(staleness.Names(sc.HoldsACID()))
	scheme := sc.SchemeName()
	j.ledger = ledger.New(func(id core.NodeID) bool { return j.member != nil && j.member(id) }, func(e jobs.Event, r *ledger.Record, at time.Duration, first bool) {
		j.m.Events.WithLabelValues(e.Kind.String()).Inc()
		switch e.Kind {
		case jobs.EvMigrated:
			j.migration(e.Reason, "moved")
		case jobs.EvOfferRejected, jobs.EvPullRejected:
			j.migration(e.Reason, "rejected")
		case jobs.EvMigrationReturned:
			j.migration(e.Reason, "returned")
		case jobs.EvStarted:
			j.m.Backfill.Observe(float64(e.BC))
		}
		if !first {
			return
		}
		switch e.Kind {
		case jobs.EvQueued:
			j.m.MatchTime.WithLabelValues(scheme).Observe((at - r.Submitted).Seconds())
			j.m.MatchHops.WithLabelValues(scheme).Observe(float64(e.Hops))
			j.m.QueueSeen.WithLabelValues(scheme).Observe(float64(e.Queue))
		case jobs.EvCompleted:
			j.m.Wait.WithLabelValues(scheme).Observe((r.StartedAt - r.Submitted).Seconds())
			j.observeCEWait(r)
		case jobs.EvResult:
			j.m.Turnaround.WithLabelValues(scheme).Observe((at - r.Submitted).Seconds())
		}
	})
	return j
}

// migration counts one migration outcome of a mechanism named by
// jobs.Mechanism ("internode_push" …).
func (j *jobRun) migration(mech, outcome string) {
	m, d, ok := strings.Cut(mech, "_")
	if !ok {
		return
	}
	j.m.Migrations.WithLabelValues(m, d, outcome).Inc()
}

// resources maps CAN coordinates to resource amounts through the
// population's catalog (cpu_speed, memory, disk, cores, …): the run
// nodes' capacities and the jobs' demands (000 §III-C).
type resources struct{ dims int }

func (r resources) amount(p []uint32, i int, floor float64, unspecified bool) float64 {
	if r.dims <= i || len(p) <= i || unspecified && p[i] == 0 {
		return floor
	}
	v := population.CapabilityAt(p, i)
	if i == 3 {
		v = math.Round(v)
	}
	return max(v, floor)
}

// Capacity is a node's cores (1 without a cores dimension), memory and
// disk (0 without such a dimension: not scheduled).
func (r resources) Capacity(p []uint32) jobs.Vec {
	return jobs.Vec{jobs.ResCores: r.amount(p, 3, 1, false), jobs.ResMemory: r.amount(p, 1, 0, false), jobs.ResDisk: r.amount(p, 2, 0, false)}
}

// Demand is what a job uses: its required cores (at least 1), memory and
// disk; an unspecified requirement (coordinate 0) uses none.
func (r resources) Demand(req []uint32) jobs.Vec {
	return jobs.Vec{jobs.ResCores: r.amount(req, 3, 1, true), jobs.ResMemory: r.amount(req, 1, 0, true), jobs.ResDisk: r.amount(req, 2, 0, true)}
}

// Residue is the point of a node at p with residual resources r (002
// §3.1.1): memory, disk and cores replaced by the coordinates of the
// residual amounts (the inverse of the catalog mapping, never above the
// node's own coordinate), CPU speed and the virtual coordinate kept. A
// residual amount below the weakest catalog level maps to coordinate 0,
// which reads back as that level: a Residue-node with 0.5 GiB free looks
// like one with 1 GiB. No job is misled by it: a requirement at the
// weakest level is coordinate 0 too, which demands nothing (Demand).
func (r resources) Residue(p []uint32, res jobs.Vec) []uint32 {
	q := slices.Clone(p)
	for _, d := range []struct{ dim, k int }{{1, jobs.ResMemory}, {2, jobs.ResDisk}, {3, jobs.ResCores}} {
		if d.dim < r.dims && d.dim < len(q) {
			q[d.dim] = min(q[d.dim], population.CoordAt(d.dim, res[d.k]))
		}
	}
	return q
}

// setup is what the drivers need to give peers a job core: the peers'
// setup (JobSetupFor) with the ledger as their sink and CENT's global
// view, which it tells what jobs demand and the peers' combinations.
func (j *jobRun) setup() *peer.JobSetup {
	if j == nil {
		return nil
	}
	js := JobSetupFor(j.sc)
	res := resources{dims: j.sc.Overlay.Dimensions}
	j.ledger.SetDemand(res.Demand)
	if scheme, _, _ := j.sc.JobSchemes(); j.sc.CEsOn() && scheme == jobs.SchemeCENTHet {
		j.ledger.SetCEs(ceModel{types: j.sc.Peers.CEs.GpuTypes})
	}
	j.ledger.SetCombo(comboOf(j.sc))
	js.Central, js.Sink = j.ledger, j.ledger
	return js
}

// JobSetupFor is the job setup of scenario sc's peers without a sink or
// a global view (Central and Sink nil): what a worker of a run split
// across processes (emulator/workers) gives its peers, with a sink that
// forwards their events to the coordinator's ledger.
func JobSetupFor(sc scenario.Scenario) *peer.JobSetup {
	scheme, sf, mode := sc.JobSchemes()
	dims := sc.Overlay.Dimensions
	res := resources{dims: dims}
	cfg := jobs.Config{
		Scheme: scheme, StoppingFactor: sf,
		Period: sc.Overlay.Heartbeat.Period, FailAfter: sc.Overlay.Heartbeat.FailAfter,
		StatusEvery: sc.Jobs.ClientTimeout / 3,
		Res:         res, Mode: mode, SchedPeriod: sc.Scheduling.Period, Contention: sc.Scheduling.Contention,
		PullReach:   sc.Scheduling.PullReach,
		PullTarget:  sc.Scheduling.PullTarget,
		QueueLoad:   sc.Scheduling.QueueLoad,
		Residue:     sc.Matchmaking.Residue,
		LoadView:    sc.Matchmaking.LoadView,
		StopNodes:   sc.Matchmaking.StopNodes,
		Categorical: jobs.CategoricalMode(sc.Matchmaking.Categorical),
		SubCAN:      subCAN(sc),
	}
	if sc.CEsOn() {
		cfg.CEs = ceModel{types: sc.Peers.CEs.GpuTypes} // 002 §4.1
	}
	combo := comboOf(sc)
	var rntSetup *peer.RNTSetup
	if scheme == jobs.SchemeRNT {
		rntSetup = rntSetupOf(sc)
	}
	return &peer.JobSetup{
		RNT: rntSetup,
		Config: func(p can.Point) jobs.Config {
			c := cfg
			c.Speed, c.Cores = 1, 1
			if dims > 0 {
				c.Speed = population.CapabilityAt(p, 0) // cpu_speed
			}
			c.Cores = int(res.Capacity(p)[jobs.ResCores])
			c.Combo = combo(p)
			return c
		},
	}
}

// GlobalView names what scenario sc's workload reads of the oracle's
// global view — CENT's matchmakers (003 §5.2, 000 §V-A, 002 §4.3.1),
// matchmaking.load_view oracle, Dual-CAN's Manager node (002 §3.1.2) —
// and is "" when it reads none of it. A run split across processes
// (emulator/workers) serves that view from the coordinator's ledger: its
// workers' peers consult it by request (WorkersSetup.Central).
func GlobalView(sc scenario.Scenario) string {
	if !sc.Workload.On() {
		return ""
	}
	scheme, _, _ := sc.JobSchemes()
	switch {
	case scheme == jobs.SchemeCENT || scheme == jobs.SchemeCENTQueue || scheme == jobs.SchemeCENTHet:
		return fmt.Sprintf("matchmaking scheme %s (scheduling.mode %s)", sc.SchemeName(), sc.Scheduling.Mode)
	case sc.Matchmaking.LoadView == jobs.LoadViewOracle:
		return "matchmaking.load_view oracle"
	case sc.Matchmaking.Residue == jobs.ResidueDualCAN:
		return "matchmaking.residue dual-can"
	}
	return ""
}

// comboOf is how a peer's combination of categorical values (plus one; 0:
// none) follows from its point: population.Combination under
// peers.categorical, its sub-CAN along the transform dimension under
// subcan (population.PlaceOnT put it there), none without.
func comboOf(sc scenario.Scenario) func(p can.Point) uint32 {
	pc := sc.Peers.Categorical
	if !pc.On() {
		return func(can.Point) uint32 { return 0 }
	}
	if t := subCAN(sc); t != nil {
		return func(p can.Point) uint32 { return uint32(t.CombinationAt(p[len(p)-1]) + 1) }
	}
	seed := sc.Seed
	return func(p can.Point) uint32 { return uint32(population.Combination(pc.InUse(), seed, p) + 1) }
}

// start adds the client and schedules every submission.
func (j *jobRun) start(drv Driver) error {
	if j == nil {
		return nil
	}
	j.member = drv.Member
	if drv.Name() == DriverLive {
		j.inFlight = j.sc.Oracle.Interval
	}
	if err := drv.AddClient(jobs.ClientConfig{Timeout: j.sc.Jobs.ClientTimeout, MaxAttempts: j.sc.Jobs.MaxAttempts}); err != nil {
		return err
	}
	for i, job := range j.jobs {
		spec := &wire.JobSpec{Id: job.ID, Req: job.Req, Work: int64(job.Work), Cid: job.CID}
		if i < len(j.jobs)-1 {
			drv.At(job.At, func() { drv.Submit(spec) })
			continue
		}
		// The last submission: how busy the peers are as it is made (003
		// Fig 5), before the job itself reaches any queue.
		drv.At(job.At, func() {
			j.lastAt = drv.Now()
			j.busy, j.live = j.ledger.Busy()
			drv.Submit(spec)
		})
	}
	return nil
}

// events are the job event counts so far, named job_<event> (fault
// triggers can wait for them).
func (j *jobRun) events() map[string]uint64 {
	if j == nil {
		return nil
	}
	ev := map[string]uint64{}
	for i, name := range jobs.EventNames() {
		ev["job_"+name] = j.ledger.Count(jobs.EventKind(i + 1))
	}
	return ev
}

// tally counts the jobs at time t against the peers' states, and updates
// the gauges.
func (j *jobRun) tally(t time.Duration, states []peer.State) ledger.Totals {
	held := map[uint64]bool{}
	for _, s := range states {
		if !s.Snapshot.Joined {
			continue // departed (or not yet joined): holds nothing
		}
		for _, ids := range [][]uint64{s.Jobs.Owned, s.Jobs.Held, s.Jobs.Done} {
			for _, id := range ids {
				held[id] = true
			}
		}
	}
	tot := j.ledger.Tally(t, func(id uint64) bool { return j.stopped != "" || held[id] }, j.sc.Jobs.ClientTimeout)
	st := j.m.States
	st.WithLabelValues("submitted").Set(float64(tot.Submitted))
	st.WithLabelValues("completed").Set(float64(tot.Completed))
	st.WithLabelValues("failed").Set(float64(tot.Failed))
	st.WithLabelValues("unfinished").Set(float64(tot.Unfinished))
	st.WithLabelValues("lost").Set(float64(tot.Lost))
	st.WithLabelValues("duplicated").Set(float64(tot.Duplicated))
	st.WithLabelValues("queued").Set(float64(j.ledger.Count(jobs.EvQueued)))
	q, busy := j.ledger.Live()
	j.m.QueuedTotal.Set(float64(q))
	j.m.BusyNodes.Set(float64(busy))
	j.last = tot
	return tot
}

// pending is the number of jobs of the workload that had not ended
// (completed or failed; submitted or not) at the latest tally.
func (j *jobRun) pending() int {
	if j == nil {
		return 0
	}
	return len(j.jobs) - int(j.last.Completed+j.last.Failed)
}

// draining reports whether a run whose latest sample was at t goes on
// past duration (workload.drain): some job of the workload has not ended
// and the drain limit is not reached.
func (j *jobRun) draining(t time.Duration) bool {
	return j != nil && j.sc.Workload.Drain && j.pending() > 0 && t < j.sc.Horizon()
}

// MultiCoreJobs counts the submitted jobs requiring more than one core
// and how they ended (002 §3.3: Multiple Peers fails them all).
type MultiCoreJobs struct {
	Submitted uint64 `json:"submitted"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	// FailedFraction is Failed / Submitted; null when none was submitted.
	FailedFraction *float64 `json:"failed_fraction"`
}

// multiCore counts the submitted jobs requiring more than one core
// (resources.Demand) and how they ended; nil without a cores dimension.
func (j *jobRun) multiCore() *MultiCoreJobs {
	if j.sc.Overlay.Dimensions <= 3 {
		return nil
	}
	res := resources{dims: j.sc.Overlay.Dimensions}
	multi := map[uint64]bool{}
	for _, job := range j.jobs {
		if res.Demand(job.Req)[jobs.ResCores] > 1 {
			multi[job.ID] = true
		}
	}
	m := &MultiCoreJobs{}
	recs, _ := j.ledger.Records()
	for _, r := range recs {
		if !multi[r.ID] {
			continue
		}
		m.Submitted++
		switch {
		case r.Ended && r.Failed:
			m.Failed++
		case r.Ended:
			m.Completed++
		}
	}
	if m.Submitted > 0 {
		f := float64(m.Failed) / float64(m.Submitted)
		m.FailedFraction = &f
	}
	return m
}

// JobsSummary is summary.json's jobs section (docs/RESULTS.md).
type JobsSummary struct {
	Scheme         string `json:"scheme"`
	StoppingFactor int    `json:"stopping_factor,omitempty"`
	// Mode is the dynamic scheduling mode (000 §V-B).
	Mode      string `json:"mode"`
	Submitted uint64 `json:"submitted"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	// InterarrivalSeconds is the mean inter-arrival time the jobs were
	// drawn with: workload.interarrival, or the one workload.load chose
	// from the peers' capacity.
	InterarrivalSeconds float64 `json:"interarrival_seconds"`
	// Unfinished jobs were still queued, running or in recovery at the end.
	Unfinished uint64 `json:"unfinished"`
	// UnfinishedBecause says why jobs are unfinished when the run did not
	// reach its end: "run aborted …" (emulator.aborted) or "run interrupted
	// …"; "" otherwise.
	UnfinishedBecause string            `json:"unfinished_because,omitempty"`
	Lost              uint64            `json:"lost"`
	Duplicated        uint64            `json:"duplicated"`
	FailedBy          map[string]uint64 `json:"failed_by"`
	// Recovery counts.
	Resubmitted uint64 `json:"resubmitted"`
	Rematched   uint64 `json:"rematched"`
	Adopted     uint64 `json:"adopted"`
	Returned    uint64 `json:"returned"`
	Cancelled   uint64 `json:"cancelled"`
	RouteDrops  uint64 `json:"route_drops"`
	// Pushed jobs were pushed at least once (CAN-P).
	Pushed uint64 `json:"pushed"`
	// Migrations by mechanism (000 §IV-B, §IV-C): jobs received.
	Migrations struct {
		InternodePush uint64 `json:"internode_push"`
		InternodePull uint64 `json:"internode_pull"`
		QueuePush     uint64 `json:"queue_push"`
		QueuePull     uint64 `json:"queue_pull"`
	} `json:"migrations"`
	// MultiCore are the jobs requiring several cores (002 §3.3: MP
	// cannot run them); nil without a cores dimension.
	MultiCore *MultiCoreJobs `json:"multi_core,omitempty"`
	// CEs are the jobs by dominant CE (002 §4.1), under the schemes of
	// 002 §4.3.1 with GPUs; nil otherwise.
	CEs *CEJobs `json:"ces,omitempty"`
	// PullRejects are PULL requests answered with PULL-Reject; OfferRejects
	// PUSH offers the receiver refused; MigrationsReturned transfers never
	// acknowledged (the sender took the job back).
	PullRejects uint64 `json:"pull_rejects"`
	// PullForwards are PULL requests passed on beyond a neighbor
	// (scheduling.pull_reach > 1).
	PullForwards       uint64 `json:"pull_forwards"`
	OfferRejects       uint64 `json:"offer_rejects"`
	MigrationsReturned uint64 `json:"migrations_returned"`
	// Backfilled job starts bypassed the head of their queue (000 §IV-A).
	Backfilled uint64 `json:"backfilled"`
	// Disowned jobs changed owner because their point left the owner's
	// zone (a join's split, or a zone conflict after a partition).
	Disowned uint64 `json:"disowned"`
	// Residue is matchmaking.residue; BalloonPlacements count the jobs
	// matched to a Balloon (002 §3.1.3; a job matched again counts again).
	Residue           string `json:"residue"`
	BalloonPlacements uint64 `json:"balloon_placements"`
	// ResiduePlacements count the jobs a search of Dual-CAN's Secondary
	// CAN matched to a Residue-node (002 Algorithm 1 line 7; a job matched
	// again counts again); left out of runs without matchmaking.residue
	// dual-can.
	ResiduePlacements uint64 `json:"residue_placements,omitempty"`
	// Drained: every job of the workload ended (completed or failed) by
	// the end of the run (with workload.drain, the run went on for it).
	Drained bool `json:"drained"`
	// DrainLimitSeconds is how long the run could go on past duration for
	// its jobs to end (Scenario.DrainLimit); null without workload.drain.
	DrainLimitSeconds *float64 `json:"drain_limit_seconds"`
	// WaitSeconds are over every submitted job (ledger.Waits): a job not
	// started by the end counts its wait up to the end, a failed one up to
	// its failure; WaitCensored counts those. WaitSecondsCompleted are
	// over the completed jobs only.
	WaitSeconds          Quantiles `json:"wait_seconds"`
	WaitCensored         uint64    `json:"wait_censored"`
	WaitSecondsCompleted Quantiles `json:"wait_seconds_completed"`
	// WaitSecondsSteady are WaitSeconds over the SteadyJobs submitted at
	// or after workload.warmup (003 §5.4's steady state; every job with no
	// warm-up), SteadyCensored of them censored.
	WaitSecondsSteady Quantiles `json:"wait_seconds_steady"`
	SteadyJobs        uint64    `json:"steady_jobs"`
	SteadyCensored    uint64    `json:"steady_censored"`
	WarmupSeconds     float64   `json:"warmup_seconds"`
	// UtilizationAtLastSubmission is the fraction of live peers holding a
	// job (running it, or queuing it behind a running one) when the last
	// job of the workload is submitted, at LastSubmissionSeconds (003 Fig
	// 5's "percentage of active nodes when the last job is injected");
	// null when the last job was never submitted (the run ended first).
	UtilizationAtLastSubmission *float64 `json:"utilization_at_last_submission"`
	LastSubmissionSeconds       *float64 `json:"last_submission_seconds"`
	TurnaroundSeconds           struct {
		Mean *float64 `json:"mean"`
	} `json:"turnaround_seconds"`
	Matchmaking struct {
		HopsMean    *float64 `json:"hops_mean"`
		SecondsMean *float64 `json:"seconds_mean"`
	} `json:"matchmaking"`
	QueueLengthMean *float64         `json:"queue_length_mean"`
	Anomalies       []ledger.Anomaly `json:"anomalies,omitempty"`
	// Categorical is set when the peers have categorical resources (002
	// ch. 5); absent otherwise.
	Categorical *CategoricalJobs `json:"categorical,omitempty"`
}

// CategoricalJobs is the jobs section's account of categorical resources
// (002 ch. 5).
type CategoricalJobs struct {
	// Mode is matchmaking.categorical; Combinations the number of
	// combinations of categorical values (002 §5.1.3's M), InUse those
	// the peers draw from.
	Mode         string `json:"mode"`
	Combinations int    `json:"combinations"`
	InUse        int    `json:"in_use"`
	// Exact, Range and Any count the workload's jobs by the kind of their
	// constraint: one combination, some, every one.
	Exact uint64 `json:"exact"`
	Range uint64 `json:"range"`
	Any   uint64 `json:"any"`
	// CompletedMatching and CompletedMismatched split the completed jobs
	// by whether the run node of their first completion has a
	// combination their CID accepts (the global view's record of it);
	// the jobs_categories invariant wants no mismatch.
	CompletedMatching   uint64 `json:"completed_matching"`
	CompletedMismatched uint64 `json:"completed_mismatched"`
}

// categorical is the categorical account and the jobs_categories check:
// every completed job ran on a node whose values its constraint accepts.
func (j *jobRun) categorical() (*CategoricalJobs, InvariantCheck) {
	pc := j.sc.Peers.Categorical
	c := &CategoricalJobs{Mode: j.sc.Matchmaking.Categorical, Combinations: pc.Space().Combinations(), InUse: pc.InUse()}
	cids := map[uint64]categorical.Set{}
	for _, job := range j.jobs {
		cids[job.ID] = job.CID
		switch n := job.CID.Count(); {
		case job.CID == nil || n == c.Combinations:
			c.Any++
		case n == 1:
			c.Exact++
		default:
			c.Range++
		}
	}
	recs, nodes := j.ledger.Records()
	for _, r := range recs {
		if r.Completions == 0 {
			continue
		}
		if categorical.MatchesCombo(nodes[r.RunNode].Combo, cids[r.ID]) {
			c.CompletedMatching++
		} else {
			c.CompletedMismatched++
		}
	}
	chk := InvariantCheck{Name: "jobs_categories", OK: c.CompletedMismatched == 0 && c.CompletedMatching > 0}
	chk.Detail = fmt.Sprintf("%d completed jobs ran on a node whose categorical values they accept, %d on one they do not", c.CompletedMatching, c.CompletedMismatched)
	if c.CompletedMatching+c.CompletedMismatched == 0 {
		chk.Detail = "no job completed: nothing to judge"
	}
	return c, chk
}

// Quantiles are the mean and quantiles of a figure; null without samples.
type Quantiles struct {
	Mean *float64 `json:"mean"`
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P99  *float64 `json:"p99"`
}

// quantiles of xs (sorted in place).
func quantiles(xs []float64) Quantiles {
	return Quantiles{Mean: num(ledger.Mean(xs)), P50: num(ledger.Quantile(xs, 0.5)), P90: num(ledger.Quantile(xs, 0.9)), P99: num(ledger.Quantile(xs, 0.99))}
}

func num(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// summary is the jobs section and the job checks at the end of the run
// (t, the last sample): jobs_conserved, then jobs_ran.
func (j *jobRun) summary(t time.Duration, states []peer.State) (*JobsSummary, []InvariantCheck) {
	tot := j.tally(t, states)
	s := &JobsSummary{
		Scheme: j.sc.SchemeName(), Submitted: tot.Submitted, Completed: tot.Completed, Failed: tot.Failed,
		Unfinished: tot.Unfinished, Lost: tot.Lost, Duplicated: tot.Duplicated, FailedBy: tot.FailedBy, Anomalies: tot.Anomalies,
		Resubmitted: j.ledger.Count(jobs.EvResubmitted), Rematched: j.ledger.Count(jobs.EvRematched), Adopted: j.ledger.Count(jobs.EvAdopted),
		Returned: j.ledger.Count(jobs.EvReturned), Cancelled: j.ledger.Count(jobs.EvCancelled), RouteDrops: j.ledger.Count(jobs.EvRouteDrop),
	}
	if scheme, sf, _ := j.sc.JobSchemes(); scheme == jobs.SchemeCANP || scheme == jobs.SchemeMP || scheme == jobs.SchemeCANHet || scheme == jobs.SchemeCANHom {
		s.StoppingFactor = sf
	}
	s.InterarrivalSeconds = j.interarrival.Seconds()
	f := j.ledger.Figures()
	s.Pushed = f.Pushed
	s.Mode = j.sc.Scheduling.Mode
	mig := j.ledger.Migrations()
	s.Migrations.InternodePush, s.Migrations.InternodePull = mig[jobs.MechInternodePush], mig[jobs.MechInternodePull]
	s.Migrations.QueuePush, s.Migrations.QueuePull = mig[jobs.MechQueuePush], mig[jobs.MechQueuePull]
	s.PullRejects, s.OfferRejects = j.ledger.Count(jobs.EvPullRejected), j.ledger.Count(jobs.EvOfferRejected)
	s.PullForwards = j.ledger.Count(jobs.EvPullForwarded)
	s.MigrationsReturned, s.Disowned = j.ledger.Count(jobs.EvMigrationReturned), j.ledger.Count(jobs.EvDisowned)
	s.Backfilled = j.ledger.Backfilled()
	s.Residue, s.BalloonPlacements = j.sc.Matchmaking.Residue.String(), j.ledger.Count(jobs.EvBalloon)
	s.ResiduePlacements = j.ledger.Count(jobs.EvResidue)
	s.MultiCore = j.multiCore()
	s.CEs = j.ceJobs(t)
	// A job runs at the end where a live run node holds it (and the
	// ledger saw it start there).
	type hold struct {
		node core.NodeID
		job  uint64
	}
	held := map[hold]bool{}
	for _, st := range states {
		if st.Snapshot.Joined {
			for _, id := range st.Jobs.Held {
				held[hold{st.Snapshot.ID, id}] = true
			}
		}
	}
	waits, censored := j.ledger.Waits(t, func(job uint64, node core.NodeID) bool { return held[hold{node, job}] })
	j.waits = slices.Clone(waits)
	s.WaitSeconds, s.WaitCensored = quantiles(waits), uint64(censored)
	s.WaitSecondsCompleted = quantiles(f.Wait)
	steady, sc := j.ledger.WaitsFrom(t, j.sc.Workload.Warmup, func(job uint64, node core.NodeID) bool { return held[hold{node, job}] })
	s.WaitSecondsSteady, s.SteadyJobs, s.SteadyCensored = quantiles(steady), uint64(len(steady)), uint64(sc)
	s.WarmupSeconds = j.sc.Workload.Warmup.Seconds()
	if j.live > 0 {
		s.UtilizationAtLastSubmission = num(float64(j.busy) / float64(j.live))
		s.LastSubmissionSeconds = num(j.lastAt.Seconds())
	}
	s.Drained = tot.Completed+tot.Failed == uint64(len(j.jobs))
	if j.sc.Workload.Drain {
		v := j.sc.DrainLimit().Seconds()
		s.DrainLimitSeconds = &v
	}
	s.TurnaroundSeconds.Mean = num(ledger.Mean(f.Turnaround))
	s.Matchmaking.HopsMean = num(ledger.Mean(f.Hops))
	s.Matchmaking.SecondsMean = num(ledger.Mean(f.MatchSecs))
	s.QueueLengthMean = num(ledger.Mean(f.QueueSeen))
	// No job is submitted that was not due (jobs_ran checks that every
	// due job was).
	due := 0
	for _, job := range j.jobs {
		if job.At <= t {
			due++
		}
	}
	c := InvariantCheck{Name: "jobs_conserved"}
	c.OK = tot.Lost == 0 && tot.Duplicated == 0 && int(tot.Submitted) <= due
	c.Detail = fmt.Sprintf("%d submitted of %d due: %d completed, %d failed, %d unfinished, %d lost; %d duplicated", tot.Submitted, due, tot.Completed, tot.Failed, tot.Unfinished, tot.Lost, tot.Duplicated)
	if j.stopped != "" {
		// Timers ran late before the abort: submissions due may not have
		// happened, and the jobs not ended were cut short.
		s.UnfinishedBecause = fmt.Sprintf("run %s at %v emulated: %d jobs unfinished, %d due never submitted", j.stopped, t.Round(time.Second), tot.Unfinished, max(due-int(tot.Submitted), 0))
		c.OK = tot.Lost == 0 && tot.Duplicated == 0
		c.Detail += "; " + s.UnfinishedBecause
	}
	checks := []InvariantCheck{c, j.ran(t, tot.Completed)}
	if j.sc.Peers.Categorical.On() {
		var cc InvariantCheck
		s.Categorical, cc = j.categorical()
		checks = append(checks, cc)
	}
	return s, checks
}

// ran is the jobs_ran check at the end of the run (t, the last sample):
// every job of the workload — each due by duration — was submitted by the
// client, and at least invariants.completed_jobs of them completed. It
// fails when the run stopped before their time (aborted), the client fell
// behind, or too few jobs completed (a workload of which nothing
// completed measured no wait nor turnaround); on the emulator a job due in
// the last inFlight before t may still be on its way to the client and is
// not held against the run.
func (j *jobRun) ran(t time.Duration, completed uint64) InvariantCheck {
	c := InvariantCheck{Name: "jobs_ran"}
	var missing, inFlight int
	var first *workload.Job
	for i, job := range j.jobs {
		switch {
		case j.ledger.Seen(job.ID):
		case j.stopped == "" && job.At > t-j.inFlight && job.At <= t:
			inFlight++
		default:
			missing++
			if first == nil {
				first = &j.jobs[i]
			}
		}
	}
	n := len(j.jobs)
	c.OK = missing == 0
	c.Detail = fmt.Sprintf("%d of %d jobs of the workload submitted (all due by %v)", n-missing-inFlight, n, j.sc.Duration)
	if inFlight > 0 {
		c.Detail += fmt.Sprintf("; %d due in the last %v before the end still on their way to the client", inFlight, j.inFlight)
	}
	if missing > 0 {
		why := "the client fell behind"
		if j.stopped != "" {
			why = fmt.Sprintf("the run was %s at %v", j.stopped, t.Round(time.Second))
		}
		c.Detail += fmt.Sprintf("; %d never submitted (the first, job %d, due at %v): %s", missing, first.ID, first.At.Round(time.Second), why)
	}
	if floor := j.sc.Invariants.CompletedJobs; n > 0 && completed < uint64(floor) {
		c.OK = false
		c.Detail += fmt.Sprintf("; %d completed by the end, fewer than the %d invariants.completed_jobs requires: the figures of waits and turnaround measure nothing — make duration longer than the jobs' runtime (workload.runtime %v), or see why they failed", completed, floor, j.sc.Workload.Runtime)
	}
	return c
}

// printRows writes the jobs' rows of the run's table (Summary.PrintTable):
// the counts, waits over every job and over the completed ones,
// turnaround and matchmaking.
func (s *JobsSummary) printRows(row func(k string, v any)) {
	if s == nil {
		return
	}
	ended := ""
	switch {
	case s.Drained:
		ended = "; every job ended"
	case s.DrainLimitSeconds != nil:
		ended = fmt.Sprintf("; not drained within the drain limit (%v past duration)", time.Duration(*s.DrainLimitSeconds*float64(time.Second)))
	}
	row("jobs", fmt.Sprintf("%d submitted: %d completed, %d failed, %d unfinished, %d lost, %d duplicated; %d waits censored%s",
		s.Submitted, s.Completed, s.Failed, s.Unfinished, s.Lost, s.Duplicated, s.WaitCensored, ended))
	q := func(x Quantiles) string {
		return fmt.Sprintf("mean %s, p50 %s, p90 %s, p99 %s", secs(x.Mean), secs(x.P50), secs(x.P90), secs(x.P99))
	}
	row("  wait, all jobs", q(s.WaitSeconds)+fmt.Sprintf(" (%d censored: not started by the end, or failed, counted until then)", s.WaitCensored))
	row("  wait, completed", q(s.WaitSecondsCompleted)+fmt.Sprintf(" (%d completed jobs)", s.Completed))
	if s.WarmupSeconds > 0 {
		row("  wait, steady state", q(s.WaitSecondsSteady)+fmt.Sprintf(" (%d jobs submitted from %s, %d censored)", s.SteadyJobs, time.Duration(s.WarmupSeconds*float64(time.Second)), s.SteadyCensored))
	}
	if u := s.UtilizationAtLastSubmission; u != nil {
		row("  utilization", fmt.Sprintf("%.1f%% of live peers held a job at the last submission (%s)", 100**u, secs(s.LastSubmissionSeconds)))
	}
	row("  turnaround", "mean "+secs(s.TurnaroundSeconds.Mean)+" (completed jobs)")
	row("  matchmaking", fmt.Sprintf("mean %s, %s hops", secs(s.Matchmaking.SecondsMean), fmtOpt(s.Matchmaking.HopsMean)))
}

// secs formats emulated seconds for the table ("n/a" without a value).
func secs(v *float64) string {
	switch {
	case v == nil:
		return "n/a"
	case *v >= 100:
		return fmt.Sprintf("%.0f s", *v)
	case *v >= 1:
		return fmt.Sprintf("%.1f s", *v)
	}
	return fmt.Sprintf("%.3g s", *v)
}

// fmtOpt formats an optional figure ("n/a" without a value).
func fmtOpt(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *v)
}

// subCAN is the transform dimension of a run under matchmaking.categorical
// subcan (002 §2.4: the combinations of the peers' categorical values
// along a Hilbert curve, one interval of the CAN's last dimension each),
// nil otherwise.
func subCAN(sc scenario.Scenario) *categorical.Transform {
	if sc.Matchmaking.Categorical != scenario.CategoricalSubCAN || !sc.Peers.Categorical.On() {
		return nil
	}
	t := categorical.NewTransform(sc.Peers.Categorical.Space())
	return &t
}
