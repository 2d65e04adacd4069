// Package waverun runs the Wave scheduler's experiment (001 §V) on the
// deterministic side of gridbed: the hosts join a timezone CAN built by
// the overlay core itself (sim.BuildOverlay, one timezone dimension plus
// the virtual one), then an event loop in virtual time plays the clients'
// submissions, the hosts' hourly availability, the strategies' decisions
// (actors/wave) and the discoveries over the CAN's zones and neighbor
// tables, counting every message by type. Same seed, same summary.
package waverun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator/heap"
	"github.com/gridbed/gridbed/emulator/sim"
)

// Config is one Wave run.
type Config struct {
	Seed         uint64
	Peers        int
	Strategy     wave.Strategy
	Discovery    wave.Discovery
	DayFree      float64
	Clients      float64
	RuntimeMin   time.Duration
	RuntimeMax   time.Duration
	SubmitWindow time.Duration
	// ClockStart is the UTC time of day at emulated time 0.
	ClockStart time.Duration
	// Duration is the emulated end of the run: jobs not done by then
	// count as unfinished.
	Duration       time.Duration
	MigrationBytes int
	// Overlay configures the timezone CAN's cores (Dims is set to 2).
	Overlay    overlay.Config
	JoinWindow time.Duration
}

// Message types counted in Result.Messages.
const (
	MsgRoute   = "wave_route"   // a forwarding hop of a routed discovery request
	MsgProbe   = "wave_probe"   // a discovery request reaching a host
	MsgReply   = "wave_reply"   // a host's answer
	MsgShip    = "wave_ship"    // a client ships its job to the first host (state bytes)
	MsgMigrate = "wave_migrate" // a host moves a job to the next host (state bytes)
	MsgFail    = "wave_fail"    // a host tells the job's client it gave up
	MsgDone    = "wave_done"    // a host returns the finished job to its client
	MsgAck     = "wave_ack"     // a host acknowledges a job it received (wave.engine actors only)
)

// Count is a message type's messages and bytes.
type Count struct {
	Count uint64 `json:"count"`
	Bytes uint64 `json:"bytes"`
}

// Result is a Wave run's figures (summary.json "wave").
type Result struct {
	Strategy  string  `json:"strategy"`
	Discovery string  `json:"discovery"`
	DayFree   float64 `json:"day_free"`
	Clients   float64 `json:"clients"`
	// Jobs submitted; Completed, Failed (no host met the criteria at the
	// first scheduling or at a migration, 001 §V-B) and Unfinished (still
	// going at the end of the run) add up to it.
	Jobs          int `json:"jobs"`
	Completed     int `json:"completed"`
	Failed        int `json:"failed"`
	FailedInitial int `json:"failed_initial"`
	Unfinished    int `json:"unfinished"`
	// With the peers as actors on the bus (Engine "actors"): Lost are the
	// jobs whose host crashed, or that were between hosts or still being
	// scheduled at the end (a message lost to a fault, or to a departed
	// peer) — 001 has no recovery; FailedDeparted the failed jobs whose
	// host left gracefully (it gives the job up); Withdrawn the jobs whose
	// client left before submitting them.
	Engine         string `json:"engine,omitempty"`
	Lost           int    `json:"lost,omitempty"`
	FailedDeparted int    `json:"failed_departed,omitempty"`
	Withdrawn      int    `json:"withdrawn,omitempty"`
	// Under message loss (Engine "actors"; docs/WAVE.md): discovery
	// queries that got no answer within their timeout (the next query,
	// criterion or no host followed); jobs sent again because their
	// transfer (WaveShip, WaveMigrate) or its acknowledgment was lost;
	// copies of a job that reached a host that had taken it already
	// (acknowledged, not run again); transfers given up after
	// wave.TransferSends sends, and the lost jobs among them (the rest
	// had arrived, their acknowledgments lost).
	DiscoveryTimeouts  uint64 `json:"discovery_timeouts,omitempty"`
	TransfersResent    uint64 `json:"transfers_resent,omitempty"`
	TransfersDuplicate uint64 `json:"transfers_duplicate,omitempty"`
	TransfersUnacked   uint64 `json:"transfers_unacked,omitempty"`
	LostUnacked        int    `json:"lost_unacked,omitempty"`
	// FailureRate is Failed / Jobs (001 §V-B, % of jobs that fail).
	FailureRate float64 `json:"failure_rate"`
	// SlowdownMean is the mean over completed jobs of turnaround (from
	// submission, when the job first goes to a host, to completion) over
	// runtime (001 §V-B); SlowdownP90 its 90th percentile.
	SlowdownMean float64 `json:"slowdown_mean"`
	SlowdownP90  float64 `json:"slowdown_p90"`
	// MigrationsPerJob is the mean number of migrations of completed jobs
	// (001 §V-B).
	MigrationsPerJob float64 `json:"migrations_per_job"`
	// Discoveries run and those that found a host.
	Discoveries      uint64 `json:"discoveries"`
	DiscoveriesFound uint64 `json:"discoveries_found"`
	// Messages by type (MsgRoute, …) and their total.
	Messages      map[string]Count `json:"messages"`
	MessagesTotal uint64           `json:"messages_total"`
	// JobsByWavezone[w] is the number of job-hours run (or slept) on
	// hosts of wavezone w: where the jobs went.
	JobHoursByWavezone []float64 `json:"job_hours_by_wavezone"`
	// Conservation is the job-history check: every job ended exactly once
	// (completed, failed or unfinished), no host ever held two jobs, no
	// job two hosts, and every job's work was done exactly once.
	Conservation      bool     `json:"conservation"`
	ConservationNotes []string `json:"conservation_notes,omitempty"`
	// OverlayMessages are the timezone CAN's join-phase messages (in
	// memory); HandoverSeconds the emulated time the CAN was exact.
	OverlayMessages uint64  `json:"overlay_messages"`
	HandoverSeconds float64 `json:"handover_seconds"`
	Events          uint64  `json:"events"`
	// Slowdowns are the completed jobs' slowdowns, in job order (for
	// the metrics; not in summary.json).
	Slowdowns []float64 `json:"-"`
	// Migrations is the completed jobs' migrations in all.
	Migrations int `json:"-"`
}

// streamWave sets the Wave run's random streams apart from the overlay's.
const streamWave = 0x3a7e_5c4e_d011_0001

type jobState int

const (
	pending jobState = iota
	placed
	done
	failed
)

type job struct {
	id         int
	client     core.NodeID
	host       core.NodeID
	runtime    time.Duration
	remaining  float64 // seconds of dedicated work left
	submitted  time.Duration
	accrued    time.Duration // progress accounted up to here
	state      jobState
	waiting    bool   // lingering or sleeping until a waitEnd event
	gen        uint64 // invalidates stale complete events
	waitGen    uint64 // invalidates stale waitEnd events
	migrations int
	hosts      []core.NodeID // the job's history
	work       float64       // work done, for the conservation check
	doneAt     time.Duration
}

type host struct {
	id    core.NodeID
	tz    int
	job   *job
	avail bool // the current hour's slot
	rate  float64
}

type evKind int

const (
	evSubmit evKind = iota
	evHour
	evWaitEnd
	evComplete
)

type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	job  *job
	gen  uint64
}

type run struct {
	cfg   Config
	cal   wave.Calendar
	prof  wave.Profile
	space *wave.Space
	hosts map[core.NodeID]*host
	ids   []core.NodeID
	jobs  []*job
	q     heap.Heap[event]
	seq   uint64
	now   time.Duration
	rngs  map[core.NodeID]*rand.Rand
	res   Result
	notes []string
}

// Run runs cfg to its end.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Peers < 2 {
		return nil, fmt.Errorf("waverun: %d peers — a Wave run needs at least 2", cfg.Peers)
	}
	r := &run{cfg: cfg, cal: wave.Calendar{Start: cfg.ClockStart}, prof: wave.Profile{Seed: cfg.Seed, DayFree: cfg.DayFree},
		hosts: map[core.NodeID]*host{}, rngs: map[core.NodeID]*rand.Rand{}}
	r.q.Less = func(a, b *event) bool {
		if a.at != b.at {
			return a.at < b.at
		}
		return a.seq < b.seq
	}
	pop := Draw(cfg)
	points, tzs := pop.Points, pop.Timezones
	ocfg := cfg.Overlay
	ocfg.Dims = 2
	boot, err := sim.BuildOverlay(ctx, sim.BootstrapOptions{Seed: cfg.Seed, Overlay: ocfg, Points: points, JoinWindow: cfg.JoinWindow})
	if err != nil {
		return nil, fmt.Errorf("waverun: building the timezone CAN: %w", err)
	}
	r.res.OverlayMessages = boot.Messages
	r.res.HandoverSeconds = boot.At.Seconds()
	r.space = wave.NewSpace()
	for i, m := range boot.Members {
		s := m.Node.Snapshot()
		zones := append([]can.Zone{s.Zone}, s.Extra...)
		id := core.NodeID(i + 1)
		r.space.Add(id, s.Point, zones, s.Neighbors)
		r.hosts[id] = &host{id: id, tz: tzs[i]}
		r.ids = append(r.ids, id)
		r.rngs[id] = PeerRand(cfg.Seed, id)
	}
	r.now = boot.At
	for k, d := range pop.Jobs {
		j := &job{id: k, client: d.Client, runtime: d.Runtime, remaining: d.Runtime.Seconds()}
		j.submitted = boot.At + d.Offset
		r.jobs = append(r.jobs, j)
		r.push(event{at: j.submitted, kind: evSubmit, job: j})
	}
	r.res.Jobs = len(r.jobs)
	r.res.Conservation = true
	r.res.Messages = map[string]Count{}
	r.res.JobHoursByWavezone = make([]float64, wave.Wavezones)
	for _, h := range r.hosts {
		r.slot(h)
	}
	r.push(event{at: r.cal.NextHour(r.now), kind: evHour})
	for r.q.Len() > 0 {
		if r.res.Events%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := r.q.Pop()
		if e.at > cfg.Duration {
			break
		}
		r.res.Events++
		r.now = e.at
		switch e.kind {
		case evSubmit:
			r.submit(e.job)
		case evHour:
			r.hour()
			r.push(event{at: r.cal.NextHour(r.now), kind: evHour})
		case evWaitEnd:
			if e.gen == e.job.waitGen && e.job.state == placed && e.job.waiting {
				r.accrue(e.job)
				e.job.waiting = false
				r.apply(e.job, r.cfg.Strategy.OnWaitEnd(r.hosts[e.job.host].avail))
			}
		case evComplete:
			if e.gen == e.job.gen && e.job.state == placed {
				r.accrue(e.job)
				if e.job.remaining <= 1e-6 {
					r.finish(e.job)
				} else {
					r.schedule(e.job)
				}
			}
		}
	}
	r.now = cfg.Duration
	r.summarize()
	return &r.res, nil
}

func (r *run) push(e event) {
	r.seq++
	e.seq = r.seq
	r.q.Push(e)
}

func (r *run) count(typ string, n, bytes uint64) {
	c := r.res.Messages[typ]
	c.Count += n
	c.Bytes += bytes
	r.res.Messages[typ] = c
	r.res.MessagesTotal += n
}

// slot reads h's current hourly slot (001 §V-A).
func (r *run) slot(h *host) {
	hr, day := r.cal.LocalHour(r.now, h.tz)
	s := r.prof.Slot(uint64(h.id), day, hr)
	h.avail, h.rate = s.Available, s.Rate()
}

// accrue counts j's progress on its host from j.accrued to now (the rate
// is constant within an hour: every accrue happens no later than the hour
// boundary, which accrues first).
func (r *run) accrue(j *job) {
	if j.state != placed {
		return
	}
	h := r.hosts[j.host]
	dt := r.now - j.accrued
	if dt > 0 {
		w := min(j.remaining, h.rate*dt.Seconds())
		j.remaining -= w
		j.work += w
		r.res.JobHoursByWavezone[wave.WavezoneOf(h.tz)] += dt.Hours()
	}
	j.accrued = r.now
}

// schedule queues j's completion if it comes before the next hour.
func (r *run) schedule(j *job) {
	j.gen++
	h := r.hosts[j.host]
	if h.rate <= 0 {
		return
	}
	at := r.now + time.Duration(j.remaining/h.rate*float64(time.Second))
	if at < r.now {
		at = r.now
	}
	if at <= r.cal.NextHour(r.now) {
		r.push(event{at: at, kind: evComplete, job: j, gen: j.gen})
	}
}

// hour moves every host to its next slot and lets the strategy react to
// hosts that stopped being available (001 §IV, when to migrate).
func (r *run) hour() {
	for _, j := range r.jobs {
		r.accrue(j)
	}
	for _, id := range r.ids {
		h := r.hosts[id]
		was := h.avail
		r.slot(h)
		j := h.job
		if j == nil {
			continue
		}
		if was && !h.avail && !j.waiting {
			r.apply(j, r.cfg.Strategy.OnUnavailable(r.rngs[id]))
			continue
		}
		if j.state == placed {
			r.schedule(j)
		}
	}
}

// criterion reports whether host id meets c for a job now held by holder
// (never the holder itself).
func (r *run) accept(c wave.Criterion, holder core.NodeID) func(core.NodeID) bool {
	return func(id core.NodeID) bool {
		if id == holder {
			return false
		}
		h := r.hosts[id]
		if h.job != nil {
			return false
		}
		return c == wave.Unclaimed || h.avail
	}
}

func (r *run) discover(from core.NodeID, c wave.Criterion, holder core.NodeID) wave.Found {
	region := r.cfg.Strategy.Region(r.cal, r.now)
	f := r.cfg.Discovery.Discover(r.rngs[from], r.space, from, region, r.accept(c, holder))
	r.count(MsgRoute, f.Route, 0)
	r.count(MsgProbe, f.Probe, 0)
	r.count(MsgReply, f.Reply, 0)
	r.res.Discoveries++
	if f.OK {
		r.res.DiscoveriesFound++
	}
	return f
}

// submit is a client's initial scheduling (001 §IV-A): the strategy's
// criteria in order; the first host found gets the job.
func (r *run) submit(j *job) {
	for _, c := range r.cfg.Strategy.Initial() {
		f := r.discover(j.client, c, 0)
		if !f.OK {
			continue
		}
		r.count(MsgShip, 1, uint64(r.cfg.MigrationBytes))
		r.claim(j, f.Host)
		j.state, j.accrued = placed, r.now
		if !r.hosts[f.Host].avail {
			r.apply(j, r.cfg.Strategy.OnPlacedUnclaimed(r.rngs[f.Host]))
			return
		}
		r.schedule(j)
		return
	}
	j.state = failed
	r.res.FailedInitial++
}

func (r *run) claim(j *job, id core.NodeID) {
	h := r.hosts[id]
	if h.job != nil {
		r.note(fmt.Sprintf("host %d took job %d while holding job %d", id, j.id, h.job.id))
	}
	h.job, j.host = j, id
	j.hosts = append(j.hosts, id)
}

func (r *run) release(j *job) {
	h := r.hosts[j.host]
	if h.job != j {
		r.note(fmt.Sprintf("job %d left host %d, which did not hold it", j.id, j.host))
	}
	h.job = nil
}

func (r *run) note(s string) {
	if len(r.notes) < 10 {
		r.notes = append(r.notes, s)
	}
	r.res.Conservation = false
}

// apply carries out a strategy's decision for j.
func (r *run) apply(j *job, d wave.Decision) {
	switch d.Action {
	case wave.Stay:
		r.schedule(j)
	case wave.Wait:
		j.waiting = true
		r.schedule(j) // it runs whenever the host is available meanwhile
		j.waitGen++
		r.push(event{at: r.now + d.For, kind: evWaitEnd, job: j, gen: j.waitGen})
	case wave.Migrate:
		r.migrate(j)
	case wave.Fail:
		r.count(MsgFail, 1, 0)
		r.release(j)
		j.state = failed
		j.gen++
	}
}

// migrate looks for an available host (001 §IV, where to migrate: random
// or the target wavezone) from j's host and moves j there; when none is
// found the strategy decides (OnNoHost).
func (r *run) migrate(j *job) {
	from := j.host
	f := r.discover(from, wave.Available, from)
	if !f.OK {
		d := r.cfg.Strategy.OnNoHost(r.rngs[from])
		if d.Action == wave.Wait {
			r.apply(j, d)
			return
		}
		r.apply(j, wave.Decision{Action: wave.Fail})
		return
	}
	r.count(MsgMigrate, 1, uint64(r.cfg.MigrationBytes))
	r.release(j)
	r.claim(j, f.Host)
	j.migrations++
	j.waiting = false
	j.accrued = r.now
	r.schedule(j)
}

func (r *run) finish(j *job) {
	r.count(MsgDone, 1, 0)
	r.release(j)
	j.state = done
	j.gen++
	r.res.Completed++
	j.remaining = 0
	j.doneAt = r.now
}
