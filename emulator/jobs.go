package emulator

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/ledger"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
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
	member func(overlay.NodeID) bool // set once the driver exists
	// aborted is set when the overload guard stopped the run: every job
	// that has not ended was cut short by the abort (some in messages the
	// frozen peers never read), so none counts as lost.
	aborted bool
	// stopped says how: "aborted (the emulator could not keep up)" or
	// "interrupted".
	stopped string
}

// newJobRun draws the workload; peers are the initial population (the
// templates of workload.classes: nodes).
func newJobRun(sc scenario.Scenario, m *metrics.Run, peers []population.Node) *jobRun {
	if !sc.Workload.On() {
		return nil
	}
	j := &jobRun{sc: sc, m: m.EnableJobs(jobs.EventNames()), jobs: workload.Generate(sc.Workload, sc.Overlay.Dimensions, sc.Duration, sc.Seed, peers)}
	scheme := sc.Matchmaking.Scheme
	j.ledger = ledger.New(func(id overlay.NodeID) bool { return j.member != nil && j.member(id) }, func(e jobs.Event, r *ledger.Record, at time.Duration, first bool) {
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

// setup is what the drivers need to give peers a job core.
func (j *jobRun) setup() *peer.JobSetup {
	if j == nil {
		return nil
	}
	scheme, sf := j.sc.Matchmaking.Resolved()
	dims := j.sc.Overlay.Dimensions
	res := resources{dims: dims}
	cfg := jobs.Config{
		Scheme: scheme, StoppingFactor: sf,
		Period: j.sc.Overlay.Heartbeat.Period, FailAfter: j.sc.Overlay.Heartbeat.FailAfter,
		StatusEvery: j.sc.Jobs.ClientTimeout / 3,
		Res:         res, Mode: j.sc.Scheduling.Mode, SchedPeriod: j.sc.Scheduling.Period, Contention: j.sc.Scheduling.Contention,
		PullReach: j.sc.Scheduling.PullReach,
		Residue:   j.sc.Matchmaking.Residue,
	}
	j.ledger.SetDemand(res.Demand)
	return &peer.JobSetup{
		Config: func(p can.Point) jobs.Config {
			c := cfg
			c.Speed, c.Cores = 1, 1
			if dims > 0 {
				c.Speed = population.CapabilityAt(p, 0) // cpu_speed
			}
			c.Cores = int(res.Capacity(p)[jobs.ResCores])
			return c
		},
		Central: j.ledger,
		Sink:    j.ledger,
	}
}

// start adds the client and schedules every submission.
func (j *jobRun) start(drv Driver) error {
	if j == nil {
		return nil
	}
	j.member = drv.Member
	if err := drv.AddClient(jobs.ClientConfig{Timeout: j.sc.Jobs.ClientTimeout, MaxAttempts: j.sc.Jobs.MaxAttempts}); err != nil {
		return err
	}
	for _, job := range j.jobs {
		spec := &wire.JobSpec{Id: job.ID, Req: job.Req, Work: int64(job.Work)}
		drv.At(job.At, func() { drv.Submit(spec) })
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
	tot := j.ledger.Tally(t, func(id uint64) bool { return j.aborted || held[id] }, j.sc.Jobs.ClientTimeout)
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
	return tot
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
	// Unfinished jobs were still queued, running or in recovery at the end.
	Unfinished uint64 `json:"unfinished"`
	// UnfinishedBecause says why jobs are unfinished when the run did not
	// reach its end: "run aborted: …" (emulator.aborted); "" otherwise.
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
	WaitSeconds       struct {
		Mean *float64 `json:"mean"`
		P50  *float64 `json:"p50"`
		P90  *float64 `json:"p90"`
		P99  *float64 `json:"p99"`
	} `json:"wait_seconds"`
	TurnaroundSeconds struct {
		Mean *float64 `json:"mean"`
	} `json:"turnaround_seconds"`
	Matchmaking struct {
		HopsMean    *float64 `json:"hops_mean"`
		SecondsMean *float64 `json:"seconds_mean"`
	} `json:"matchmaking"`
	QueueLengthMean *float64         `json:"queue_length_mean"`
	Anomalies       []ledger.Anomaly `json:"anomalies,omitempty"`
}

func num(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// summary is the jobs section and the job-conservation check at the end.
func (j *jobRun) summary(t time.Duration, states []peer.State) (*JobsSummary, InvariantCheck) {
	tot := j.tally(t, states)
	s := &JobsSummary{
		Scheme: j.sc.Matchmaking.Scheme, Submitted: tot.Submitted, Completed: tot.Completed, Failed: tot.Failed,
		Unfinished: tot.Unfinished, Lost: tot.Lost, Duplicated: tot.Duplicated, FailedBy: tot.FailedBy, Anomalies: tot.Anomalies,
		Resubmitted: j.ledger.Count(jobs.EvResubmitted), Rematched: j.ledger.Count(jobs.EvRematched), Adopted: j.ledger.Count(jobs.EvAdopted),
		Returned: j.ledger.Count(jobs.EvReturned), Cancelled: j.ledger.Count(jobs.EvCancelled), RouteDrops: j.ledger.Count(jobs.EvRouteDrop),
	}
	if scheme, sf := j.sc.Matchmaking.Resolved(); scheme == jobs.SchemeCANP {
		s.StoppingFactor = sf
	}
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
	s.Residue, s.BalloonPlacements = j.sc.Matchmaking.Residue, j.ledger.Count(jobs.EvBalloon)
	s.WaitSeconds.Mean = num(ledger.Mean(f.Wait))
	s.WaitSeconds.P50 = num(ledger.Quantile(f.Wait, 0.5))
	s.WaitSeconds.P90 = num(ledger.Quantile(f.Wait, 0.9))
	s.WaitSeconds.P99 = num(ledger.Quantile(f.Wait, 0.99))
	s.TurnaroundSeconds.Mean = num(ledger.Mean(f.Turnaround))
	s.Matchmaking.HopsMean = num(ledger.Mean(f.Hops))
	s.Matchmaking.SecondsMean = num(ledger.Mean(f.MatchSecs))
	s.QueueLengthMean = num(ledger.Mean(f.QueueSeen))
	// Every job of the workload due before the last oracle interval must
	// have reached the ledger (the ones due in the last interval may be
	// on their way in the emulator).
	due, early := 0, 0
	for _, job := range j.jobs {
		if job.At <= t {
			due++
			if job.At <= t-j.sc.Oracle.Interval {
				early++
			}
		}
	}
	c := InvariantCheck{Name: "jobs_conserved"}
	c.OK = tot.Lost == 0 && tot.Duplicated == 0 && int(tot.Submitted) >= early && int(tot.Submitted) <= due
	c.Detail = fmt.Sprintf("%d submitted of %d due: %d completed, %d failed, %d unfinished, %d lost; %d duplicated", tot.Submitted, due, tot.Completed, tot.Failed, tot.Unfinished, tot.Lost, tot.Duplicated)
	if j.aborted {
		// Timers ran late before the abort: submissions due may not have
		// happened, and the jobs not ended were cut short.
		s.UnfinishedBecause = fmt.Sprintf("run %s at %v emulated: %d jobs unfinished, %d due never submitted", j.stopped, t.Round(time.Second), tot.Unfinished, max(due-int(tot.Submitted), 0))
		c.OK = tot.Lost == 0 && tot.Duplicated == 0
		c.Detail += "; " + s.UnfinishedBecause
	}
	return s, c
}
