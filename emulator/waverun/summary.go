package waverun

import (
	"fmt"
	"math"
	"slices"
)

// summarize computes the figures of 001 §V-B and the job-history check.
func (r *run) summarize() {
	res := &r.res
	res.Strategy, res.Discovery = string(r.cfg.Strategy), string(r.cfg.Discovery)
	res.DayFree, res.Clients = r.cfg.DayFree, r.cfg.Clients
	var slow []float64
	var migr float64
	held := map[uint64]int{}
	for _, j := range r.jobs {
		switch j.state {
		case done:
			slow = append(slow, (j.doneAt-j.submitted).Seconds()/j.runtime.Seconds())
			migr += float64(j.migrations)
			res.Migrations += j.migrations
			if math.Abs(j.work-j.runtime.Seconds()) > 1e-3*j.runtime.Seconds() {
				r.note(fmt.Sprintf("job %d did %.0f s of work for a runtime of %.0f s", j.id, j.work, j.runtime.Seconds()))
			}
		case failed:
			res.Failed++
		default:
			res.Unfinished++
		}
		if j.state == placed {
			held[uint64(j.host)]++
		}
		if len(j.hosts) != j.migrations+min(1, len(j.hosts)) {
			r.note(fmt.Sprintf("job %d visited %d hosts with %d migrations", j.id, len(j.hosts), j.migrations))
		}
	}
	for _, h := range r.hosts {
		n := held[uint64(h.id)]
		if (h.job != nil) != (n == 1) || n > 1 {
			r.note(fmt.Sprintf("host %d holds %v but %d jobs say they are on it", h.id, h.job != nil, n))
		}
	}
	if res.Completed+res.Failed+res.Unfinished != res.Jobs {
		r.note(fmt.Sprintf("%d completed + %d failed + %d unfinished ≠ %d jobs", res.Completed, res.Failed, res.Unfinished, res.Jobs))
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
		res.MigrationsPerJob = migr / float64(len(slow))
		slices.Sort(slow)
		res.SlowdownP90 = slow[min(len(slow)-1, int(math.Ceil(0.9*float64(len(slow))))-1)]
	}
	res.ConservationNotes = r.notes
}
