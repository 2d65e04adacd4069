package waverun

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wave"
)

// Ledger is the job-history check of a Wave run whose peers are actors
// on the bus (the oracle's view, outside the bus): it folds every Wave
// core's events into one history per job and checks it as it goes — a
// job is placed only when it is being scheduled or in transit, leaves and
// ends only from the host that holds it, no host holds two jobs. Safe for
// concurrent use (the emulator's peers report from their own actors).
type Ledger struct {
	mu    sync.Mutex
	jobs  []*ljob
	hosts map[core.NodeID]uint32 // host → job id + 1
	notes []string
	bad   bool
	res   Result
}

type lstate uint8

const (
	lUnsubmitted lstate = iota
	lScheduling         // submitted, looking for its first host
	lOnHost
	lTransit // left its host, on its way to the next
	lDone
	lFailed
)

type ljob struct {
	state      lstate
	host       core.NodeID
	wavezone   int
	since      time.Duration
	submitted  time.Duration
	runtime    time.Duration
	doneAt     time.Duration
	work       float64
	migrations int
	hosts      int
	reason     string
	unacked    bool // its last transfer was given up unacknowledged
}

// NewLedger returns the ledger of a run with jobs (in job-id order).
func NewLedger(jobs int) *Ledger {
	l := &Ledger{hosts: map[core.NodeID]uint32{}}
	for range jobs {
		l.jobs = append(l.jobs, &ljob{})
	}
	l.res.JobHoursByWavezone = make([]float64, wave.Wavezones)
	return l
}

func (l *Ledger) note(s string) {
	l.bad = true
	if len(l.notes) < 10 {
		l.notes = append(l.notes, s)
	}
}

// WaveEvent folds one event into its job's history (peer.WaveSink).
func (l *Ledger) WaveEvent(e wave.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(e.Job) >= len(l.jobs) {
		l.note(fmt.Sprintf("an event of job %d, which nobody submitted", e.Job))
		return
	}
	j := l.jobs[e.Job]
	switch e.Kind {
	case wave.Searched:
		l.res.Discoveries++
		if e.Found {
			l.res.DiscoveriesFound++
		}
	case wave.TimedOut:
		l.res.DiscoveryTimeouts++
	case wave.Resent:
		l.res.TransfersResent++
	case wave.Duplicate:
		l.res.TransfersDuplicate++
	case wave.Unacked:
		// The job is wherever the transfer left it: on its receiver (the
		// acknowledgments were lost) or nowhere (Finish: lost).
		l.res.TransfersUnacked++
		j.unacked = true
	case wave.Submitted:
		if j.state != lUnsubmitted {
			l.note(fmt.Sprintf("job %d submitted twice", e.Job))
			return
		}
		j.state, j.submitted, j.runtime = lScheduling, e.At, e.Runtime
	case wave.Placed:
		want := lScheduling
		if e.Migration {
			want = lTransit
		}
		if j.state != want {
			l.note(fmt.Sprintf("job %d placed on host %d in state %d (on host %d): a duplicate", e.Job, e.Host, j.state, j.host))
			return
		}
		if o, ok := l.hosts[e.Host]; ok {
			l.note(fmt.Sprintf("host %d took job %d while holding job %d", e.Host, e.Job, o-1))
		}
		l.hosts[e.Host] = e.Job + 1
		j.state, j.host, j.wavezone, j.since = lOnHost, e.Host, e.Wavezone, e.At
		j.hosts++
		if e.Migration {
			j.migrations++
		}
	case wave.Left, wave.Completed:
		if j.state != lOnHost || j.host != e.Host {
			l.note(fmt.Sprintf("job %d left host %d, which did not hold it", e.Job, e.Host))
			return
		}
		l.off(j, e)
		if e.Kind == wave.Left {
			j.state = lTransit
		} else {
			j.state, j.doneAt = lDone, e.At
		}
	case wave.Failed:
		switch {
		case e.Reason == wave.ReasonInitial && j.state == lScheduling:
			l.res.FailedInitial++
		case e.Reason == wave.ReasonBusy && (j.state == lScheduling || j.state == lTransit):
		case j.state == lOnHost && j.host == e.Host:
			l.off(j, e)
		default:
			l.note(fmt.Sprintf("job %d failed (%s) at host %d in state %d", e.Job, e.Reason, e.Host, j.state))
			return
		}
		j.state, j.reason = lFailed, e.Reason
	}
}

// off takes job j off its host at event e, with the work done there.
func (l *Ledger) off(j *ljob, e wave.Event) {
	delete(l.hosts, j.host)
	j.work += e.Work
	l.res.JobHoursByWavezone[j.wavezone] += (e.At - j.since).Hours()
}

// Finish closes the histories at the end of the run (end) against the
// Wave state of every peer still running (live): a job on a live host
// that holds it is unfinished; one whose host is gone (crashed: 001 has
// no recovery) or that was between hosts or still looking for its first
// one is lost. It returns the run's figures (001 §V-B); departures says
// whether peers left or faults struck, the only causes of a lost job.
func (l *Ledger) Finish(end time.Duration, live map[core.NodeID]wave.Snapshot, departures bool) *Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := &l.res
	res.Jobs = len(l.jobs)
	holders := map[uint32]core.NodeID{}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		s := live[id]
		if !s.Holding {
			continue
		}
		if o, ok := holders[s.Job]; ok {
			l.note(fmt.Sprintf("job %d is on hosts %d and %d", s.Job, o, id))
		}
		holders[s.Job] = id
		if int(s.Job) >= len(l.jobs) || l.jobs[s.Job].state != lOnHost || l.jobs[s.Job].host != id {
			l.note(fmt.Sprintf("host %d holds job %d, which the histories put elsewhere", id, s.Job))
		}
	}
	var slow []float64
	for k, j := range l.jobs {
		switch j.state {
		case lDone:
			res.Completed++
			slow = append(slow, (j.doneAt-j.submitted).Seconds()/j.runtime.Seconds())
			res.Migrations += j.migrations
			if math.Abs(j.work-j.runtime.Seconds()) > 1e-3*j.runtime.Seconds() {
				l.note(fmt.Sprintf("job %d did %.0f s of work for a runtime of %.0f s", k, j.work, j.runtime.Seconds()))
			}
		case lFailed:
			res.Failed++
			if j.reason == wave.ReasonDeparted {
				res.FailedDeparted++
			}
		case lOnHost:
			res.JobHoursByWavezone[j.wavezone] += (end - j.since).Hours()
			if h, ok := holders[uint32(k)]; ok && h == j.host {
				res.Unfinished++
			} else {
				res.Lost++
			}
		case lTransit, lScheduling:
			res.Lost++
			if j.unacked {
				res.LostUnacked++
			}
		case lUnsubmitted:
			res.Withdrawn++
		}
		if j.state != lUnsubmitted && j.hosts != j.migrations+min(1, j.hosts) {
			l.note(fmt.Sprintf("job %d visited %d hosts with %d migrations", k, j.hosts, j.migrations))
		}
	}
	if res.Lost > 0 && !departures {
		l.note(fmt.Sprintf("%d jobs lost without a departure or a fault to lose them", res.Lost))
	}
	if n := res.Completed + res.Failed + res.Unfinished + res.Lost + res.Withdrawn; n != res.Jobs {
		l.note(fmt.Sprintf("%d ended ≠ %d jobs", n, res.Jobs))
	}
	if res.Jobs > 0 {
		res.FailureRate = float64(res.Failed) / float64(res.Jobs)
	}
	res.Slowdowns = slices.Clone(slow)
	if len(slow) > 0 {
		var s float64
		for _, v := range slow {
			s += v
		}
		res.SlowdownMean = s / float64(len(slow))
		res.MigrationsPerJob = float64(res.Migrations) / float64(len(slow))
		slices.Sort(slow)
		res.SlowdownP90 = slow[min(len(slow)-1, int(math.Ceil(0.9*float64(len(slow))))-1)]
	}
	res.Conservation = !l.bad
	res.ConservationNotes = l.notes
	return res
}

// Live is the ledger's current account: jobs running or sleeping on a
// host by the host's wavezone, and the jobs done, failed and lost so far.
func (l *Ledger) Live() (byWavezone []int, completed, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byWavezone = make([]int, wave.Wavezones)
	for _, j := range l.jobs {
		switch j.state {
		case lOnHost:
			byWavezone[j.wavezone]++
		case lDone:
			completed++
		case lFailed:
			failed++
		}
	}
	return byWavezone, completed, failed
}
