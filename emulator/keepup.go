package emulator

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// LagTolerance is the default clock lag (emulator.lag_tolerance), as a
// fraction of the heartbeat period in emulated time, up to which a run
// counts as having kept up with its time scale: a timer handled that late
// shifts the protocol's periodic work by at most 1% of its period.
const LagTolerance = 0.01

// cpuBudget is the share of the machine's cores the suggested time scale
// plans to use: below it, queueing in the mailboxes stays short; close to
// all cores, lag grows without bound (overload collapses:
// docs/BENCHMARKS.md, "The machine's limits").
const cpuBudget = 0.6

// minLagTimers is the fewest timer observations whose p99 keepUp judges.
const minLagTimers = 100

// LiveSummary says whether the emulator kept up with the requested
// time scale (summary.json "emulator").
type LiveSummary struct {
	// KeptUp is false when the clock lag p99, in emulated time, exceeded
	// LagTolerance of the heartbeat period, or the bus dropped messages.
	KeptUp bool `json:"kept_up"`
	// LagP99EmulatedSeconds is clock.lag_seconds.p99 × time_scale;
	// LagToleranceSeconds the emulated lag up to which the run kept up.
	LagP99EmulatedSeconds float64 `json:"lag_p99_emulated_seconds"`
	LagToleranceSeconds   float64 `json:"lag_tolerance_seconds"`
	// LagJudged is the lag quantile KeptUp compared with the tolerance:
	// "p99", or the median when fewer than minLagTimers timers fired.
	LagJudged string `json:"lag_judged"`
	// judged is that lag, in emulated seconds; tolerance the fraction of
	// the heartbeat period allowed (emulator.lag_tolerance).
	judged, tolerance float64
	timers            uint64
	// pace is what SuggestedTimeScale was computed from.
	pace Pace
	// CPUSeconds is the process's CPU time (user + system) from the start
	// of emulated time to the end of the run; CPUPerEmulatedSecond that
	// divided by the emulated seconds; Cores the CPUs the process may use.
	// In a run split over workers these are the coordinator process's
	// only: every process's figures are in the summary's workers block.
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUPerEmulatedSecond float64 `json:"cpu_per_emulated_second"`
	Cores                int     `json:"cores"`
	// SuggestedTimeScale estimates the largest time scale that would have
	// kept up (SuggestTimeScale); when the run kept up it may exceed
	// the requested one (headroom). In a split run its CPU bound is the
	// busiest machine's (workers.hosts), not the coordinator's.
	SuggestedTimeScale float64 `json:"suggested_time_scale"`
	// Overload is the scenario's emulator.overload policy (abort or warn).
	// BehindAtSeconds is the emulated time at which the overload guard
	// first saw timers fire later than the tolerance (null: never);
	// OverloadAtSeconds when it concluded that the run could not keep up
	// (null: never), for the Reason given. Aborted says the run was stopped
	// there (policy abort): its figures cover the run up to that point and
	// its unfinished jobs were cut short by the abort.
	Overload          string   `json:"overload"`
	BehindAtSeconds   *float64 `json:"behind_at_seconds"`
	OverloadAtSeconds *float64 `json:"overload_at_seconds"`
	Reason            string   `json:"reason,omitempty"`
	Aborted           bool     `json:"aborted"`
	// PeerPanics counts messages whose handling panicked in a peer or the
	// client: a protocol bug (the invariant no_peer_panics fails). The
	// actor goes on with its next message; that message's work is lost.
	PeerPanics int64 `json:"peer_panics"`
}

// SimSummary is the deterministic driver's speed (summary.json "sim").
type SimSummary struct {
	// Events are the protocol events processed (message deliveries, timer
	// expiries, scheduled actions); LoopSeconds the wall time spent in the
	// event loop (the oracle's snapshots excluded).
	Events          uint64  `json:"events"`
	LoopSeconds     float64 `json:"loop_seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
}

// keepUp judges a finished emulator run: lagP99 is the clock lag p99 in
// wall seconds, cpu the CPU time used over emulated seconds of run, drops
// the messages the bus dropped.
//
// The lag judged is the p99 — or, over fewer than minLagTimers timers,
// where a p99 is a single timer (one hiccup while the peers spawn), the
// median (LagJudged says which).
//
// In a run split over workers, hosts are its machines (hostCosts; nil
// for one process): the CPU bound of the suggested time scale is then the
// busiest machine's, not the coordinator process's alone.
func keepUp(scale float64, period time.Duration, tolerance, lagP50, lagP99 float64, timers uint64, cpu time.Duration, emulated float64, drops uint64, hosts []HostCost) *LiveSummary {
	e := &LiveSummary{
		LagP99EmulatedSeconds: lagP99 * scale,
		LagToleranceSeconds:   tolerance * period.Seconds(),
		tolerance:             tolerance,
		CPUSeconds:            cpu.Seconds(),
		Cores:                 runtime.GOMAXPROCS(0),
		LagJudged:             "p99",
	}
	if emulated > 0 {
		e.CPUPerEmulatedSecond = cpu.Seconds() / emulated
	}
	judged := e.LagP99EmulatedSeconds
	if timers < minLagTimers {
		judged, e.LagJudged = lagP50*scale, fmt.Sprintf("p50 (%d timers: too few for a p99)", timers)
	}
	e.judged, e.timers = judged, timers
	// No timer handled at all is no evidence of keeping up: the peers'
	// timers never came round (the run was over, or they were stuck).
	e.KeptUp = judged <= e.LagToleranceSeconds && drops == 0 && timers > 0
	e.pace = Pace{Scale: scale, KeptUp: e.KeptUp, LagP99: lagP99, Tolerance: e.LagToleranceSeconds, CPUPerEmulated: e.CPUPerEmulatedSecond, Cores: e.Cores}
	if h, ok := busiestHost(hosts); ok && emulated > 0 {
		e.pace.CPUPerEmulated, e.pace.Cores = h.CPUSeconds/emulated, h.Cores
	}
	e.SuggestedTimeScale = SuggestTimeScale(e.pace)
	return e
}

// splitCosts is the summary's workers block of a split run: the
// coordinator's own process (cpu, this process's CPU time over the run,
// emulator.cpu_seconds) and the workers' latest reports.
func splitCosts(procs []WorkerCost, cpu time.Duration) *WorkersSummary {
	host, _ := os.Hostname()
	w := &WorkersSummary{
		Count:       len(procs),
		Coordinator: CoordinatorCost{Host: host, PID: os.Getpid(), CPUSeconds: cpu.Seconds(), Cores: runtime.GOMAXPROCS(0)},
		Processes:   procs,
	}
	w.Hosts = hostCosts(w.Coordinator, procs)
	for _, h := range w.Hosts {
		w.CPUSecondsAll += h.CPUSeconds
	}
	return w
}

// hostCosts groups a split run's processes by machine (host name), the
// coordinator's first, then in the order the workers are listed. A
// process (host and pid) counts once, by the first figure listed for it:
// a worker in the coordinator's own process reports that process's CPU
// time, which the coordinator's figure already holds. A machine's CPU
// seconds are its processes' sum, and its cores the most GOMAXPROCS any
// of them reported — local workers share one machine's cores, so their
// CPU adds up against those cores, not against each process's.
func hostCosts(coord CoordinatorCost, procs []WorkerCost) []HostCost {
	type proc struct {
		host string
		pid  int
	}
	seen := map[proc]bool{{coord.Host, coord.PID}: true}
	hosts := []HostCost{{Host: coord.Host, Processes: 1, CPUSeconds: coord.CPUSeconds, Cores: coord.Cores}}
	at := map[string]int{coord.Host: 0}
	for _, p := range procs {
		if seen[proc{p.Host, p.PID}] {
			continue
		}
		seen[proc{p.Host, p.PID}] = true
		i, ok := at[p.Host]
		if !ok {
			i = len(hosts)
			at[p.Host] = i
			hosts = append(hosts, HostCost{Host: p.Host})
		}
		h := &hosts[i]
		h.Processes++
		h.CPUSeconds += p.CPUSeconds
		h.Cores = max(h.Cores, p.Cores)
	}
	return hosts
}

// busiestHost is the machine with the most CPU seconds per core (the
// first of equals); false without one that reported its cores.
func busiestHost(hosts []HostCost) (HostCost, bool) {
	var best HostCost
	found := false
	for _, h := range hosts {
		if h.Cores <= 0 {
			continue
		}
		if !found || h.CPUSeconds/float64(h.Cores) > best.CPUSeconds/float64(best.Cores) {
			best, found = h, true
		}
	}
	return best, found
}

// printRows writes the summary table's rows of a split run's processes
// (nothing for one process).
func (w *WorkersSummary) printRows(row func(string, any)) {
	if w == nil {
		return
	}
	c := w.Coordinator
	row("coordinator", fmt.Sprintf("%.1f s CPU, %d cores (pid %d on %s)", c.CPUSeconds, c.Cores, c.PID, c.Host))
	for _, p := range w.Processes {
		state := ""
		switch {
		case !p.Alive:
			state = ", DEAD: CPU up to its last heartbeat"
		case p.InProcess:
			state = ", in the coordinator's process: its CPU is that process's, not separable"
		}
		row(fmt.Sprintf("worker %d", p.Worker), fmt.Sprintf("%d peers, %.1f s CPU, %d cores (pid %d on %s)%s", p.Peers, p.CPUSeconds, p.Cores, p.PID, p.Host, state))
	}
	row("CPU, all processes", fmt.Sprintf("%.1f s (each process once)", w.CPUSecondsAll))
}

// Pace is what an emulator run measured of its own speed from the start
// of emulated time to a moment: the inputs of SuggestTimeScale, the one
// suggested time scale every output of a run prints — the overload
// guard's warnings while it goes (measured so far), and at its end the
// summary (emulator.suggested_time_scale), the kept_up line and invariant,
// run_completed's detail and the closing warning (measured over the whole
// run).
type Pace struct {
	Scale float64 // the run's time_scale
	// KeptUp: the clock lag stayed within Tolerance and the bus dropped
	// nothing (so far). A run that did not gets a suggestion below Scale.
	KeptUp bool
	// LagP99 is the clock lag's p99 since the start, in wall seconds (0:
	// no timer yet); Tolerance the emulated lag that still keeps up.
	LagP99, Tolerance float64
	// CPUPerEmulated is the CPU seconds the run used per emulated second
	// (0: unknown) on Cores cores (the busiest machine's, split over
	// workers).
	CPUPerEmulated float64
	Cores          int
	// Handled are the bus messages the peers handled (delivered, less
	// those still in mailboxes) in Wall; Need the messages per emulated
	// second the scenario needs (neededRate).
	Handled float64
	Wall    time.Duration
	Need    float64
}

// SuggestTimeScale estimates the largest time scale at which the run
// would keep up, as the smaller of
//
//   - the CPU bound: the work the run needed per emulated second must fit
//     in cpuBudget of the cores per wall second, so scale ≤ cpuBudget ×
//     cores / CPUPerEmulated;
//   - for a run that did not keep up, what the peers sustained: the
//     messages they handled per wall second over what the scenario needs
//     per emulated second, planned at cpuBudget of it (a runaway lag says
//     nothing of the lag at a gentler scale; a whole run's throughput
//     does) — and below 0.9 × the requested scale;
//   - otherwise the lag bound: if timers stay as late in wall time as they
//     were (bursts such as GC or the oracle's snapshots take fixed wall
//     time), the emulated tolerance allows scale ≤ Tolerance / LagP99.
//
// A kept-up run's suggestion may exceed its scale (headroom). The result
// has two significant digits, rounded down; with nothing measured it is
// the requested scale.
func SuggestTimeScale(p Pace) float64 {
	s := math.Inf(1)
	if p.CPUPerEmulated > 0 {
		s = cpuBudget * float64(max(p.Cores, 1)) / p.CPUPerEmulated
	}
	sustained := 0.0
	if !p.KeptUp && p.Handled > 0 && p.Wall > 0 && p.Need > 0 {
		sustained = p.Handled / p.Wall.Seconds() / p.Need
	}
	switch {
	case sustained > 0:
		s = min(s, cpuBudget*sustained)
	case p.LagP99 > 0:
		s = min(s, p.Tolerance/p.LagP99)
	}
	if !p.KeptUp {
		s = min(s, 0.9*p.Scale)
	}
	if math.IsInf(s, 1) {
		return p.Scale
	}
	return roundDown2(s)
}

// neededRate is the bus messages per emulated second scenario sc needs:
// vanilla-heartbeat traffic of its population, peers.count × neighbors /
// period, neighbors being the mean neighbor-table size the oracle last
// saw (2(d+1) when it saw none).
func neededRate(sc scenario.Scenario, neighbors float64) float64 {
	if neighbors <= 0 {
		neighbors = float64(2 * (sc.Overlay.Dimensions + 1))
	}
	return float64(sc.Peers.Count) * neighbors / sc.Overlay.Heartbeat.Period.Seconds()
}

// roundDown2 rounds v > 0 down to two significant digits.
func roundDown2(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-1)
	// Through the decimal form: 24 × 0.1 is 2.4000000000000004 in binary.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Floor(v/p*(1+1e-9))*p, 'g', 2, 64), 64)
	return r
}

// verdict is the summary table's line for e.
func (e *LiveSummary) verdict(scale float64) string {
	if e.Aborted {
		return fmt.Sprintf("NO, ABORTED: at %.0f s emulated the guard found %s; time scale %g was too fast, try %g", *e.OverloadAtSeconds, e.Reason, scale, e.SuggestedTimeScale)
	}
	if e.KeptUp {
		return fmt.Sprintf("yes: lag %s %.3g s emulated ≤ %.3g s (%g%% of the heartbeat period); estimated headroom to time scale %g", e.LagJudged, e.judged, e.LagToleranceSeconds, 100*e.tolerance, e.SuggestedTimeScale)
	}
	return fmt.Sprintf("NO: lag %s %.3g s emulated > %.3g s (%g%% of the heartbeat period) or bus drops; time scale %g was too fast, try %g", e.LagJudged, e.judged, e.LagToleranceSeconds, 100*e.tolerance, scale, e.SuggestedTimeScale)
}

// clampTo keeps the guard's instants within the run's figures: the
// emulator's clock runs on while the oracle waits for late peers, so the
// guard may trip at an emulated time past the run's last sample (or its
// duration). Every report of an aborted run then names the same instant.
func (e *LiveSummary) clampTo(end float64) {
	for _, p := range []**float64{&e.BehindAtSeconds, &e.OverloadAtSeconds} {
		if *p != nil && **p > end {
			v := end
			*p = &v
		}
	}
}

// check is the invariant kept_up: the clock lag p99 stayed within the
// tolerance, the bus dropped nothing and the guard did not stop the run.
func (e *LiveSummary) check(scale float64, drops uint64) InvariantCheck {
	c := InvariantCheck{Name: "kept_up", OK: e.KeptUp && !e.Aborted}
	if c.OK {
		c.Detail = fmt.Sprintf("clock lag %s %.3g s emulated ≤ %.3g s (%g%% of the heartbeat period), no bus drops", e.LagJudged, e.judged, e.LagToleranceSeconds, 100*e.tolerance)
		return c
	}
	var what []string
	if e.timers == 0 {
		what = append(what, "no peer handled a timer: nothing shows the clock was kept")
	}
	if e.judged > e.LagToleranceSeconds {
		what = append(what, fmt.Sprintf("clock lag %s %.3g s emulated > %.3g s (%g%% of the heartbeat period, emulator.lag_tolerance)", e.LagJudged, e.judged, e.LagToleranceSeconds, 100*e.tolerance))
	}
	if drops > 0 {
		what = append(what, fmt.Sprintf("the bus dropped %d messages (slow consumers)", drops))
	}
	if e.Aborted {
		what = append(what, "the run was stopped before its end (see run_completed)")
	}
	c.Detail = fmt.Sprintf("%s: the machine could not keep up with time scale %g and the figures are distorted — try --set time_scale=%g",
		strings.Join(what, "; "), scale, e.SuggestedTimeScale)
	return c
}

// suggestTimeScale is SuggestTimeScale of a pace measured by its lag and
// CPU alone (nothing handled counted): the form keepUp's tests state
// their cases in.
func suggestTimeScale(scale float64, keptUp bool, lagP99, tolerance, cpuPerEmulated float64, cores int) float64 {
	return SuggestTimeScale(Pace{Scale: scale, KeptUp: keptUp, LagP99: lagP99, Tolerance: tolerance, CPUPerEmulated: cpuPerEmulated, Cores: cores})
}

// sustainedTimeScale is SuggestTimeScale of a run that did not keep up,
// from what its peers handled (handled bus messages in wall) against what
// scenario sc needs, the summary's own estimate when nothing was handled.
func sustainedTimeScale(sc scenario.Scenario, s Summary, wall time.Duration, handled float64) float64 {
	if handled <= 0 || wall <= 0 {
		return s.Emulator.SuggestedTimeScale
	}
	return SuggestTimeScale(Pace{Scale: sc.TimeScale, Handled: handled, Wall: wall, Need: neededRate(sc, s.Overlay.NeighborsMean)})
}
