package emulator

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/emulator/allocrun"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

// AllocationSummary is a 004 allocation run's result (summary.json
// "allocation", docs/ALLOCATION.md); present only for allocation runs.
type AllocationSummary struct {
	Grid      string `json:"grid"`
	Machines  int    `json:"machines"`
	Jobset    int    `json:"jobset"`
	Order     int    `json:"order"`
	Allocator string `json:"allocator"`
	// SocialScore is the reading of the SOCIAL score
	// (allocation.social_score); only the social allocator reads it.
	SocialScore string `json:"social_score"`
	// SocialGain is the normalization of the SOCIAL relocator's gain
	// (allocation.social_gain); only the social relocator reads it.
	SocialGain string `json:"social_gain"`
	// Relocator is the relocator that ran (allocation.relocator same:
	// the allocator's scheme).
	Relocator string  `json:"relocator"`
	Theta     float64 `json:"theta"`
	MaxMoves  int     `json:"max_moves"`
	Spikes    string  `json:"spikes"`
	// Jobs is the job set's size; Completed the jobs that completed.
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	// MakespanSeconds is the completion instant of the job that finished
	// last (004 §1); null when not every job completed.
	MakespanSeconds *float64 `json:"makespan_seconds"`
	// Relocations counts the relocations the allocator ordered, Migrated
	// the jobs' states that reached their new machine over the bus.
	Relocations int `json:"relocations"`
	Migrated    int `json:"migrated"`
	// RelocationsPerJob is Relocations over Jobs.
	RelocationsPerJob float64 `json:"relocations_per_job"`
	// RelocatedOffLoaded counts the relocations out of a machine whose
	// owner load was above 0 (004 Fig 2: jobs leaving the machine its
	// owner took).
	RelocatedOffLoaded int `json:"relocated_off_loaded"`
	// SpikeShare is the share of the allocated jobs that were on the
	// machine whose owner load rose first, when it rose (004 Fig 2: the
	// C_4 jobs on S_3 at 1500 s); null when no owner load rose.
	SpikeShare *float64 `json:"spike_share"`
	// DrainedShare is RelocatedOffLoaded over the jobs on that machine
	// when its load rose (004 Fig 2: the relocator moving jobs off it);
	// null when no owner load rose or it held no job.
	DrainedShare *float64 `json:"drained_share"`
	// Crash is present when the allocator — under placement neighbors,
	// a machine — crashed (allocation.crash_at).
	Crash *AllocationCrash `json:"crash,omitempty"`

	// Placement is allocation.placement: central, or neighbors (every
	// machine allocates from its CAN neighbours' view); under neighbors
	// GossipPeriodSeconds is allocation.gossip_period and NeighborsMean
	// the mean number of CAN neighbours of a machine.
	Placement           string   `json:"placement"`
	GossipPeriodSeconds *float64 `json:"gossip_period_seconds,omitempty"`
	NeighborsMean       *float64 `json:"neighbors_mean,omitempty"`
	// MessagesPerJob is every allocation message sent (messages.total,
	// by type in messages.by_type) over Jobs: what placing, relocating
	// and (under neighbors) gossiping cost a job.
	MessagesPerJob float64 `json:"messages_per_job"`
}

// AllocationCrash reports the crash of allocation.crash_at: what crashed
// (Crashed: "allocator" under placement central; "machine" under
// neighbors, which has no allocator — the machine holding the most jobs
// then), when, for how long, and the messages sent to it meanwhile that
// found nobody (lost with it; the accounting's unroutable term).
//
// Under neighbors Machine is the machine's index, JobsStopped the jobs it
// held (stopped while it was down, then run on), JobsReplaced the jobs
// sent to it while it was down that their sender placed elsewhere (its
// connection refused), and JobsLost the jobs on their way to it when it
// crashed, which never complete — the run fails if any was lost. Under
// central these four are absent: jobs arriving while the allocator is
// down wait at their source, and none is sent to it.
type AllocationCrash struct {
	Crashed        string  `json:"crashed"`
	Machine        *int    `json:"machine,omitempty"`
	AtSeconds      float64 `json:"at_seconds"`
	DownForSeconds float64 `json:"down_for_seconds"`
	Restarted      bool    `json:"restarted"`
	LostMessages   uint64  `json:"lost_messages"`
	JobsStopped    *int    `json:"jobs_stopped,omitempty"`
	JobsReplaced   *int    `json:"jobs_replaced,omitempty"`
	JobsLost       *int    `json:"jobs_lost,omitempty"`
}

// runAllocation runs a 004 allocation scenario (allocation.grid set) on
// the chosen driver: the machines and the allocator are endpoints on the
// bus (emulator/allocrun).
func runAllocation(ctx context.Context, sc scenario.Scenario, opts Options) (*Result, error) {
	a := sc.Allocation
	spikes, _ := alloc.Spikes(a.Spikes)
	m := opts.Metrics
	if m == nil {
		m = metrics.NewRun(metrics.RunInfo{Driver: opts.Driver})
	}
	m.Identify(sc.Name, sc.Seed)
	am := m.EnableAllocation()
	sent := m.EnableAllocationMessages(allocrun.TypeLabels())
	var mkMu sync.Mutex
	var mk float64
	cfg := allocrun.Config{
		Speeds: alloc.Reweigh(alloc.Grid(a.Grid), a.Weights.Vector()), Jobs: alloc.JobSet(a.Jobset, a.Order, allocrun.Rand(sc.Seed)), Spikes: spikes,
		Allocator: a.AllocatorScheme(), Relocator: a.RelocatorScheme(), Social: a.SocialReading(), SocialGain: a.SocialGainNorm(), Theta: a.Theta, MaxMoves: a.MaxMoves,
		Limit: sc.Duration, Sample: a.Sample, CrashAt: a.CrashAt, DownFor: a.CrashDownFor,
		Relocated: func(n int) { am.Relocations.Add(float64(n)) },
		Completed: func(at time.Duration) {
			am.Completed.Inc()
			mkMu.Lock() // under neighbors every machine reports its own
			mk = max(mk, at.Seconds())
			am.Makespan.Set(mk)
			mkMu.Unlock()
		},
		Placement: a.PlacementMode(), GossipPeriod: a.GossipPeriod, Seed: sc.Seed,
		Sent:   func(k alloc.Kind, n int) { sent.Sent(int(k)-1, n) },
		Record: opts.Record,
	}
	start := time.Now()
	var res allocrun.Result
	var err error
	switch opts.Driver {
	case DriverSim:
		res, err = allocrun.RunSim(ctx, cfg, sc.Seed)
	case DriverLive:
		res, err = allocrun.RunLive(ctx, cfg, allocrun.LiveOptions{TimeScale: sc.TimeScale, BusURL: sc.Bus.URL, Run: metrics.NewRunID(time.Now())})
	default:
		return nil, fmt.Errorf("unknown driver %q: use %s or %s", opts.Driver, DriverLive, DriverSim)
	}
	interrupted := ctx.Err() != nil
	if err != nil && !interrupted && !errors.Is(err, allocrun.ErrIncomplete) {
		return nil, err
	}
	var s Summary
	s.Scenario, s.Driver, s.Seed, s.TimeScale = sc.Name, opts.Driver, sc.Seed, sc.TimeScale
	s.WallSeconds = time.Since(start).Seconds()
	s.EmulatedSeconds = res.Makespan
	s.Peers.Initial, s.Peers.Started, s.Peers.Joined, s.Peers.Final = len(cfg.Speeds)+1, len(cfg.Speeds)+1, len(cfg.Speeds)+1, len(cfg.Speeds)+1
	s.Messages.Total = res.Messages
	s.Messages.DecodeErrors = uint64(res.DecodeErrors)
	s.Bus.Published = res.Messages
	s.Messages.ByType = map[string]TypeCount{}
	for _, k := range alloc.Kinds() {
		c := res.ByKind[k]
		s.Messages.ByType[allocrun.TypeLabel(k)] = TypeCount{Count: c.Count, Bytes: c.Bytes}
		s.Messages.Bytes += c.Bytes
	}
	as := &AllocationSummary{Grid: a.Grid, Machines: len(cfg.Speeds), Jobset: a.Jobset, Order: a.Order,
		Allocator: a.Allocator, SocialScore: a.SocialScore, SocialGain: a.SocialGain, Relocator: a.RelocatorScheme().String(), Theta: a.Theta, MaxMoves: a.MaxMoves, Spikes: a.Spikes,
		Jobs: res.Jobs, Completed: res.Completed, Relocations: res.Relocations, Migrated: res.Migrated}
	if res.Jobs > 0 {
		as.RelocationsPerJob = float64(res.Relocations) / float64(res.Jobs)
		as.MessagesPerJob = float64(res.Messages) / float64(res.Jobs)
	}
	as.Placement = a.PlacementMode().String()
	if a.PlacementMode() == alloc.Neighbors {
		g, nb := a.GossipPeriod.Seconds(), res.NeighborsMean
		as.GossipPeriodSeconds, as.NeighborsMean = &g, &nb
	}
	as.RelocatedOffLoaded = res.OffLoaded
	if res.SpikeShare >= 0 {
		sh := res.SpikeShare
		as.SpikeShare = &sh
		if res.SpikeJobs > 0 {
			d := float64(res.OffLoaded) / float64(res.SpikeJobs)
			as.DrainedShare = &d
		}
	}
	switch {
	case res.Crashed && res.CrashMachine >= 0:
		m, held, again, lost := res.CrashMachine, res.CrashJobs, res.Replaced, res.JobsLost
		as.Crash = &AllocationCrash{Crashed: "machine", Machine: &m, AtSeconds: a.CrashAt.Seconds(), DownForSeconds: a.CrashDownFor.Seconds(),
			Restarted: true, LostMessages: res.Unroutable, JobsStopped: &held, JobsReplaced: &again, JobsLost: &lost}
		s.Faults.Events = append(s.Faults.Events, FaultEvent{TSeconds: a.CrashAt.Seconds(), Kind: "machine_crash",
			Detail: fmt.Sprintf("machine %d (the most jobs: %d) crashed for %v, its jobs stopped and its view lost; %d jobs sent to it placed elsewhere, %d lost on their way to it; %d messages to it lost",
				m, held, a.CrashDownFor, again, lost, res.Unroutable)})
		s.Faults.ByKind = map[string]uint64{"machine_crash": 1}
	case res.Crashed:
		as.Crash = &AllocationCrash{Crashed: "allocator", AtSeconds: a.CrashAt.Seconds(), DownForSeconds: a.CrashDownFor.Seconds(), Restarted: true, LostMessages: res.Unroutable}
		s.Faults.Events = append(s.Faults.Events, FaultEvent{TSeconds: a.CrashAt.Seconds(), Kind: "allocator_crash",
			Detail: fmt.Sprintf("the allocator crashed for %v and rebuilt its view from the machines; %d messages to it lost", a.CrashDownFor, res.Unroutable)})
		s.Faults.ByKind = map[string]uint64{"allocator_crash": 1}
	}
	if res.Completed == res.Jobs {
		ms := res.Makespan
		as.MakespanSeconds = &ms
	}
	s.Allocation = as
	check := InvariantCheck{Name: "allocation_jobs_completed", OK: res.Completed == res.Jobs && res.Submitted == res.Jobs,
		Detail: fmt.Sprintf("%d of %d jobs allocated, %d completed by %v", res.Submitted, res.Jobs, res.Completed, sc.Duration)}
	if res.JobsLost > 0 {
		check.Detail += fmt.Sprintf(", %d lost with the crashed machine", res.JobsLost)
	}
	s.Accounting = allocationBooks(res)
	s.Bus.Delivered, s.Bus.Unroutable, s.Bus.Dropped, s.Bus.Discarded = res.Bus.Delivered, res.Bus.Unroutable, res.Bus.Dropped, res.Bus.Discarded
	books := s.Accounting.Check()
	s.Invariants = InvariantsSummary{OK: check.OK && books.OK, Checks: []InvariantCheck{check, books}}
	switch {
	case interrupted:
		s.Outcome = OutcomeInterrupted
		s.OutcomeReasons = []string{"the run was interrupted before every job completed"}
	case s.Invariants.OK:
		s.Outcome = OutcomePassed
	default:
		s.Outcome = OutcomeFailed
		switch {
		case res.JobsLost > 0:
			s.OutcomeReasons = append(s.OutcomeReasons, fmt.Sprintf("%d of %d jobs completed: %d lost with machine %d's crash (on their way to it when it crashed; nobody re-sends them)",
				res.Completed, res.Jobs, res.JobsLost, res.CrashMachine))
		case !check.OK:
			s.OutcomeReasons = append(s.OutcomeReasons, fmt.Sprintf("%d of %d jobs completed by the end of the run (duration %v) — make duration longer", res.Completed, res.Jobs, sc.Duration))
		}
		if !books.OK {
			s.OutcomeReasons = append(s.OutcomeReasons, "messages_accounted: "+books.Detail)
		}
	}
	var series *AllocationSeries
	if len(res.Series) > 0 {
		series = &AllocationSeries{Interval: a.Sample, Jobs: res.Series}
	}
	return &Result{Summary: s, Scenario: sc, Allocation: series}, nil
}

// AllocationSeries is an allocation run's jobs-per-machine series (004
// Fig 2; allocation.sample): Jobs[k][i] is the number of jobs running on
// machine i at (k+1)·Interval.
type AllocationSeries struct {
	Interval time.Duration
	Jobs     [][]int
}

// WriteCSV writes the series as allocation.csv: t_seconds, then one column
// per machine, jobs_m0 … (bounded by the grid: 4 or 70 machines).
func (as *AllocationSeries) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if len(as.Jobs) == 0 {
		return nil
	}
	head := []string{"t_seconds"}
	for i := range as.Jobs[0] {
		head = append(head, "jobs_m"+strconv.Itoa(i))
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for k, row := range as.Jobs {
		rec := []string{strconv.FormatFloat((time.Duration(k+1) * as.Interval).Seconds(), 'f', -1, 64)}
		for _, n := range row {
			rec = append(rec, strconv.Itoa(n))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// printRows writes an allocation run's rows of the summary table.
func (as *AllocationSummary) printRows(row func(string, any)) {
	row("allocation", fmt.Sprintf("%s grid (%d machines), job set %d order %d, %s allocator, %s relocator (θ %g, N %d), spikes %s",
		as.Grid, as.Machines, as.Jobset, as.Order, as.Allocator, as.Relocator, as.Theta, as.MaxMoves, as.Spikes))
	mk := "not every job completed"
	if as.MakespanSeconds != nil {
		mk = fmt.Sprintf("%.1f s", *as.MakespanSeconds)
	}
	row("makespan", mk)
	row("jobs", fmt.Sprintf("%d of %d completed; %d relocations (%d job states moved over the bus)", as.Completed, as.Jobs, as.Relocations, as.Migrated))
	if as.NeighborsMean != nil && as.GossipPeriodSeconds != nil {
		row("placement", fmt.Sprintf("neighbors: each machine allocates among itself and its %.1f CAN neighbours (mean), gossip every %g s when changed (every %d periods at least); %.1f messages a job",
			*as.NeighborsMean, *as.GossipPeriodSeconds, alloc.DefaultGossipRefresh, as.MessagesPerJob))
	}
	if c := as.Crash; c != nil && c.Machine != nil {
		row("machine crash", fmt.Sprintf("machine %d at %.0f s for %.0f s, %d jobs stopped; %d jobs sent to it placed elsewhere, %d lost; %d messages to it lost",
			*c.Machine, c.AtSeconds, c.DownForSeconds, *c.JobsStopped, *c.JobsReplaced, *c.JobsLost, c.LostMessages))
	} else if c != nil {
		row("allocator crash", fmt.Sprintf("at %.0f s for %.0f s, restarted from the machines' state; %d messages to it lost", c.AtSeconds, c.DownForSeconds, c.LostMessages))
	}
}

// printAllocationMessages writes an allocation run's message rows: the
// total, each type sent (alloc_assign, …) and the bus.
func (s Summary) printAllocationMessages(row func(string, any)) {
	s.printMessages(row)
	row("bus", fmt.Sprintf("published %d, delivered %d, unroutable %d", s.Bus.Published, s.Bus.Delivered, s.Bus.Unroutable))
}

// allocationBooks are an allocation run's message books
// (AccountingIdentity) from its bus's counters: every allocation message
// published, delivered to an endpoint, unroutable (an endpoint down: the
// allocator's crash), dropped or lost by the transport, or still on it
// at the end. Allocation runs have no link faults, so the identity's
// fault terms are 0.
func allocationBooks(res allocrun.Result) Accounting {
	b := res.Bus
	a := Accounting{
		Identity:      AccountingIdentity,
		Sent:          b.Published + b.PublishErrs,
		Delivered:     b.Delivered,
		Dropped:       AccountingDrops{SlowConsumer: b.Dropped},
		Refused:       b.Refused,
		PublishFailed: b.PublishErrs - min(b.Refused, b.PublishErrs),
		Unroutable:    b.Unroutable,
		Lost:          b.Lost - min(b.Refused, b.Lost),
	}
	a.InFlightAtEnd.Bus = b.Discarded + res.InFlight
	a.InFlightAtEnd.Total = a.InFlightAtEnd.Bus
	out := a.Delivered + a.Dropped.SlowConsumer + a.Refused + a.PublishFailed + a.Unroutable + a.Lost + a.InFlightAtEnd.Total
	a.Unaccounted = int64(a.Sent) - int64(out)
	return a
}
