package emulator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// The overload guard watches an emulator run while it goes on
// (docs/BENCHMARKS.md, "The machine's limits": past saturation, messages
// pile up in unbounded mailboxes and the run eats memory without reaching
// its end). Once per window of wall
// time it reads the driver's pressure (live.Pressure) and
//
//   - warns once, as soon as timers are handled later than lag_tolerance of
//     the heartbeat period (emulated) in warnWindows windows in a row;
//   - trips when timers are handled at least a whole heartbeat period late
//     (emulated) in lagWindows windows in a row and that lag grew
//     lagGrowth-fold over those windows (a runaway, not a steady delay
//     such as a slow race-detector build's),
//     or it stayed farPeriods heartbeat periods late or more all along
//     (peers that skip the beats they missed keep the lag bounded: a run
//     hopelessly behind need not get later and later),
//     or when timers are handled later than failure detection waits
//     (overlay.heartbeat.fail_after heartbeat periods, emulated) in
//     detectWindows windows in a row: neighbors that are alive are then
//     declared failed, and the protocol answers failures that did not
//     happen — take-overs, orphan claims, rejoins and the zone updates
//     that announce them — with more traffic than the run was ever meant
//     to carry: measured on examples/scheduling-nats.yaml at time scale
//     3000, its 100 peers went from ~1,300 zone updates per emulated
//     hour to 306,689 in 30 emulated seconds, 64k of them waiting in
//     mailboxes and 3.7 GB of RSS within 9 s of wall time, while the two
//     windows this rule waits took 2 s (docs/SCENARIOS.md),
//     or when the backlog — bus messages and expired timers waiting in
//     mailboxes, and overdue timers (delayed messages in flight included)
//     the timer goroutine has not handed out — is above the backlog floor
//     (backlogPerPeer messages per peer, between backlogMinFloor and
//     backlogFloor) and grew in each of growWindows windows in a row.
//
// A tripped guard's reason names what waits in the mailboxes, by message
// type, and which types piled up while it watched.
//
// With emulator.overload: abort (the default) a tripped guard stops the
// run cleanly (Run); with warn it only says so.
const (
	overloadWindow = time.Second
	warnWindows    = 2
	lagWindows     = 10
	lagGrowth      = 4
	farPeriods     = 10
	growWindows    = 10
	detectWindows  = 2
	// backlogFloor: below this many waiting messages (a few hundred MB at
	// most) a growing backlog is a burst, not a runaway. A smaller run
	// has a floor of backlogPerPeer messages per peer (a peer handles a
	// few at a time; a hundred waiting each are a queue), but at least
	// backlogMinFloor.
	backlogFloor    = 200_000
	backlogPerPeer  = 50
	backlogMinFloor = 5_000
)

// overloadGuard decides, window by window, whether the run is falling
// behind. It is pure: time and pressure come in as arguments.
type overloadGuard struct {
	scale     float64 // time scale
	tolerance float64 // emulated seconds: emulator.lag_tolerance × heartbeat period
	abortLag  float64 // emulated seconds: one heartbeat period
	// detectLag: emulated seconds after which failure detection declares
	// a silent neighbor failed (fail_after periods); 0: not watched.
	detectLag float64
	failAfter int
	floor     int64 // backlog floor (withPeers)

	lagStreak, warnStreak, growStreak, farStreak, detectStreak int
	lagFrom                                                    float64 // wall lag at the start of the streak
	growFrom, lastBacklog                                      int64
	pubFrom, lastPublished                                     uint64  // bus messages published, at the start of the growth streak
	lastLag                                                    float64 // wall seconds, previous window
	warned                                                     bool
	// What waited by type when the growth and the detection streaks
	// began, and in the previous window: the reason says what piled up.
	waitGrowFrom, waitDetectFrom, lastWaiting map[string]int64
}

func newOverloadGuard(scale float64, period time.Duration, tolerance float64) *overloadGuard {
	return &overloadGuard{scale: scale, tolerance: tolerance * period.Seconds(), abortLag: period.Seconds(), floor: backlogFloor}
}

// withFailureDetection makes the guard trip once timers are handled later
// than failAfter heartbeat periods in detectWindows windows in a row.
func (g *overloadGuard) withFailureDetection(failAfter int) *overloadGuard {
	if failAfter > 0 {
		g.failAfter, g.detectLag = failAfter, float64(failAfter)*g.abortLag
	}
	return g
}

// withPeers scales the backlog floor to a run of peers peers.
func (g *overloadGuard) withPeers(peers int) *overloadGuard {
	g.floor = min(backlogFloor, max(backlogMinFloor, backlogPerPeer*int64(peers)))
	return g
}

// overloadVerdict is what one window tells.
type overloadVerdict struct {
	// Warn is set once, on the first window that shows the run falling
	// behind; Trip when the guard concludes it cannot keep up, with the
	// reason in words.
	Warn, Trip bool
	Reason     string
	// LagEmulated is the window's lag in emulated seconds; Backlog the
	// messages and timers waiting in mailboxes and the overdue timers
	// (delayed messages included) waiting in the timer goroutine.
	LagEmulated float64
	Backlog     int64
	// Sustained is, when the guard tripped, the time scale the peers
	// actually sustained over the streak: the requested one less the rate
	// at which the lag grew, or times the share of the published messages
	// that did not pile up in the backlog (0 when unknown).
	Sustained float64
}

// lagOf is the window's lag in wall seconds: how late handled timers
// were, or how overdue the timer service is; if no timer was handled
// while expired ones wait in mailboxes, the peers are stuck and the lag
// grew by at least the window.
func lagOf(p live.Pressure, prev float64, window time.Duration) float64 {
	lag := max(p.LagP99, p.TimerServiceLag)
	if p.Timers == 0 && p.TimersQueued > 0 {
		lag = max(lag, prev+window.Seconds())
	}
	return lag
}

// observe judges one window of length window.
func (g *overloadGuard) observe(p live.Pressure, window time.Duration) overloadVerdict {
	prev := g.lastLag
	lag := lagOf(p, prev, window)
	g.lastLag = lag
	v := overloadVerdict{LagEmulated: lag * g.scale, Backlog: p.Backlog + p.TimersQueued + p.TimersOverdue}

	if v.LagEmulated > g.tolerance {
		g.warnStreak++
	} else {
		g.warnStreak = 0
	}
	if v.LagEmulated >= farPeriods*g.abortLag {
		g.farStreak++
	} else {
		g.farStreak = 0
	}
	// The lag p99 is the upper bound of a power-of-two bucket: up to twice
	// the true one. Failure detection is judged on the bucket's lower
	// bound, so that a run is stopped for it only when it is sure.
	sure := p
	sure.LagP99 /= 2
	if g.detectLag > 0 && lagOf(sure, prev, window)*g.scale > g.detectLag {
		if g.detectStreak == 0 {
			g.waitDetectFrom = g.lastWaiting
		}
		g.detectStreak++
	} else {
		g.detectStreak = 0
	}
	if v.LagEmulated >= g.abortLag {
		if g.lagStreak == 0 {
			g.lagFrom = lag
		}
		g.lagStreak++
	} else {
		g.lagStreak = 0
	}
	switch {
	case v.Backlog > g.floor && v.Backlog > g.lastBacklog && g.growStreak > 0:
		g.growStreak++
	case v.Backlog > g.floor && v.Backlog > g.lastBacklog:
		g.growStreak, g.growFrom, g.pubFrom, g.waitGrowFrom = 1, g.lastBacklog, g.lastPublished, g.lastWaiting
	default:
		g.growStreak = 0
	}
	g.lastBacklog, g.lastPublished, g.lastWaiting = v.Backlog, p.Published, p.Waiting

	if !g.warned && (g.warnStreak >= warnWindows || g.growStreak >= growWindows/2) {
		g.warned, v.Warn = true, true
	}
	var from map[string]int64 // what waited when the tripping streak began
	switch {
	case g.detectStreak >= detectWindows:
		v.Trip, from = true, g.waitDetectFrom
		v.Reason = fmt.Sprintf("timers were handled later than failure detection waits (overlay.heartbeat.fail_after %d × %.3g s = %.3g s emulated) for %.3g s of wall time in a row, now %.3g s emulated late: live neighbors are declared failed and the protocol answers failures that did not happen (take-overs, orphan claims, rejoins, zone updates)",
			g.failAfter, g.abortLag, g.detectLag, float64(g.detectStreak)*window.Seconds(), v.LagEmulated)
	case g.lagStreak >= lagWindows && lag >= lagGrowth*g.lagFrom:
		v.Trip = true
		v.Reason = fmt.Sprintf("timers were handled more than a heartbeat period (%.3g s emulated) late for %.3g s of wall time in a row, and later and later: %.3g s, now %.3g s emulated",
			g.abortLag, float64(g.lagStreak)*window.Seconds(), g.lagFrom*g.scale, v.LagEmulated)
		if grew := (lag - g.lagFrom) / (float64(g.lagStreak-1) * window.Seconds()); grew < 1 {
			v.Sustained = g.scale * (1 - grew)
		}
	case g.farStreak >= lagWindows:
		v.Trip = true
		v.Reason = fmt.Sprintf("timers were handled more than %d heartbeat periods (%.3g s emulated) late for %.3g s of wall time in a row: failure detection declares live neighbors dead; now %.3g s emulated late",
			farPeriods, farPeriods*g.abortLag, float64(g.farStreak)*window.Seconds(), v.LagEmulated)
	case g.growStreak >= growWindows:
		v.Trip, from = true, g.waitGrowFrom
		v.Reason = fmt.Sprintf("the mailboxes' backlog grew in every one of the last %d s of wall time, from %d to %d messages and timers",
			int(float64(growWindows)*window.Seconds()+0.5), g.growFrom, v.Backlog)
		// The peers kept up with the part of what was published that did
		// not pile up.
		if fed := float64(p.Published - g.pubFrom); fed > 0 {
			if kept := 1 - float64(v.Backlog-g.growFrom)/fed; kept > 0 {
				v.Sustained = g.scale * kept
			}
		}
	}
	if v.Trip {
		v.Reason += waitingWords(p) + pilingWords(from, p.Waiting)
	}
	if v.Trip && !g.warned {
		g.warned, v.Warn = true, true
	}
	return v
}

// waitingWords names what waits in the mailboxes, for a tripped guard's
// reason: the bus messages by type, most first (at most three named), and
// the timers; "" when nothing waits.
func waitingWords(p live.Pressure) string {
	type kind struct {
		name string
		n    int64
	}
	var ks []kind
	for t, n := range p.Waiting {
		ks = append(ks, kind{t, n})
	}
	slices.SortFunc(ks, func(a, b kind) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for i, k := range ks {
		if i == 3 {
			var rest int64
			for _, k := range ks[3:] {
				rest += k.n
			}
			parts = append(parts, fmt.Sprintf("%d more of %d other types", rest, len(ks)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", k.n, k.name))
	}
	if timers := p.TimersQueued + p.TimersOverdue; timers > 0 {
		parts = append(parts, fmt.Sprintf("%d timers", timers))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; waiting: " + strings.Join(parts, ", ")
}

// pilingWords names the message types whose backlog grew the most from
// (what waited when the guard's streak began) to now — at most two, with
// how many more wait than then — for a tripped guard's reason; "" when
// none grew.
func pilingWords(from, now map[string]int64) string {
	type kind struct {
		name     string
		grew, at int64
	}
	var ks []kind
	for t, n := range now {
		if d := n - from[t]; d > 0 {
			ks = append(ks, kind{t, d, n})
		}
	}
	if len(ks) == 0 {
		return ""
	}
	slices.SortFunc(ks, func(a, b kind) int {
		if c := cmp.Compare(b.grew, a.grew); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, k := range ks[:min(2, len(ks))] {
		parts = append(parts, fmt.Sprintf("%s (+%d, from %d to %d)", k.name, k.grew, k.at-k.grew, k.at))
	}
	return "; piling up: " + strings.Join(parts, ", ")
}

// overloadError is the cause of a run stopped by the guard.
type overloadError struct {
	reason string
}

func (e *overloadError) Error() string {
	return "the emulator could not keep up with the time scale: " + e.reason
}

// overloadTrip records what the guard saw, for the summary.
type overloadTrip struct {
	mu        sync.Mutex
	behindAt  *float64 // emulated seconds of the early warning
	trippedAt *float64 // emulated seconds at which the guard tripped
	reason    string
}

// record copies the guard's findings into the summary's emulator section.
func (t *overloadTrip) record(e *LiveSummary) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e.BehindAtSeconds, e.OverloadAtSeconds, e.Reason = t.behindAt, t.trippedAt, t.reason
}

// watchOverload runs the overload guard on the paced driver ld until the returned stop
// function is called (it returns what the guard saw). Under the abort
// policy a tripped guard cancels the returned context with an
// *overloadError; the warnings go to opts.Logger (stderr for the command).
//
// Each window's pressure is also stored in seen (if not nil), so that the
// memory ceiling can say what filled the memory.
func watchOverload(ctx context.Context, ld pacedDriver, sc scenario.Scenario, opts Options, pace func(now time.Duration) Pace, seen *atomic.Pointer[live.Pressure]) (context.Context, func() *overloadTrip) {
	gctx, cancel := context.WithCancelCause(ctx)
	window := opts.OverloadWindow
	if window <= 0 {
		window = overloadWindow
	}
	g := newOverloadGuard(sc.TimeScale, sc.Overlay.Heartbeat.Period, sc.Emulator.LagTolerance).
		withFailureDetection(sc.Overlay.Heartbeat.FailAfter).withPeers(sc.Peers.Count)
	abort := sc.Emulator.Overload != scenario.OverloadWarn
	trip := &overloadTrip{}
	ld.Pressure() // start the first window now
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tk := time.NewTicker(window)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-gctx.Done():
				return
			case <-tk.C:
			}
			p := ld.Pressure()
			if seen != nil {
				seen.Store(&p)
			}
			v := g.observe(p, window)
			if !v.Warn && !v.Trip {
				continue
			}
			now := ld.Now()
			at := now.Seconds()
			// The one suggestion, from the run's pace so far (the same
			// function, measurements and kept-up judgement as the
			// summary's at the end): above the scale while the run as a
			// whole still keeps up, below it once it does not.
			suggested := SuggestTimeScale(pace(now))
			policy := "the run stops if this goes on (emulator.overload: abort)"
			if !abort {
				policy = "the run goes on (emulator.overload: warn)"
			}
			trip.mu.Lock()
			if v.Warn {
				trip.behindAt = &at
				if opts.Logger != nil {
					opts.Logger.Warn("the emulator is falling behind its time scale: timers fire late, results will be distorted; "+policy,
						"emulated", now.Round(time.Second), "lag_emulated_seconds", roundDown2(v.LagEmulated), "tolerance_emulated_seconds", g.tolerance,
						"mailbox_backlog", v.Backlog, "time_scale", sc.TimeScale, "suggested_time_scale", suggested)
				}
			}
			first := v.Trip && trip.trippedAt == nil
			if first {
				trip.trippedAt, trip.reason = &at, v.Reason
			}
			trip.mu.Unlock()
			if !first {
				continue
			}
			if !abort {
				if opts.Logger != nil {
					opts.Logger.Warn("the emulator cannot keep up: "+v.Reason+"; going on because emulator.overload is warn (memory may grow without bound)",
						"emulated", now.Round(time.Second), "suggested_time_scale", suggested)
				}
				continue
			}
			if opts.Logger != nil {
				opts.Logger.Error("stopping the run: the emulator cannot keep up with its time scale: "+v.Reason+
					"; results so far are written with emulator.aborted (set emulator.overload: warn to go on regardless)",
					"emulated", now.Round(time.Second), "time_scale", sc.TimeScale, "suggested_time_scale", suggested)
			}
			cancel(&overloadError{reason: v.Reason})
			return
		}
	}()
	var once sync.Once
	return gctx, func() *overloadTrip {
		once.Do(func() { close(done) })
		<-finished
		return trip
	}
}
