package emulator

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/emulator/live"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// Memory admission and the hard memory ceiling. A run that cannot fit in
// memory is refused before it spawns anything, with the estimate and the
// largest population that fits; a run that grows past the ceiling anyway
// is stopped as overloaded with its results, instead of growing past the
// machine (docs/SCENARIOS.md "Memory").

// The per-peer model is measured, not derived (docs/BENCHMARKS.md, "Memory
// admission"): the peak live heap per peer of the deterministic driver at
// 2,000 mixed peers with vanilla heartbeats, building the overlay in
// process and running 4 emulated minutes, at d = 2, 4, 8 and 14 resource
// dimensions; between and beyond those points it is interpolated on a log
// scale (the cost grows faster than the square of the neighbor count: at
// d = 14 the join phase's neighbor lists dominate).
var peakPerPeer = []struct {
	dims  int
	bytes float64
}{{2, 10.0e3}, {4, 22.5e3}, {8, 163.5e3}, {14, 5.9e6}}

const (
	// peerCountExponent: per-peer memory grows as (peers/2000)^0.23
	// (measured at d = 4: 22.5 KB at 2,000 peers, 38.3 KB at 20,000: more
	// peers, more neighbors per peer).
	peerCountExponent = 0.23
	// compactFactor: compact heartbeats keep no neighbor lists (measured
	// at d = 8: 130 KB against vanilla's 163.5 KB, the join phase's lists
	// being the same).
	compactFactor = 0.8
	// emulatorFactor: the emulator driver's actors, mailboxes, bus
	// registrations and timers on top (measured at d = 4, 5,000 peers:
	// 41.2 KB against the simulator's ~27 KB).
	emulatorFactor = 1.5
	// runtimeBytes: the process without peers (NATS server, buffers).
	runtimeBytes = 150 << 20
	// gcHeadroom: the heap the collector needs beyond the live heap to
	// run without thrashing (live × gcHeadroom must fit the limit).
	gcHeadroom = 1.25
)

// MemoryEstimate is what a run is expected to hold in memory.
type MemoryEstimate struct {
	// Bytes is the memory the run needs: runtime plus peers, with the
	// collector's headroom; PerPeer the peak live heap per peer.
	Bytes   int64
	PerPeer float64
}

// EstimateMemory estimates the peak memory of scenario sc on driver from
// its peers, dimensions, heartbeat mode and driver.
func EstimateMemory(sc scenario.Scenario, driver string) MemoryEstimate {
	return estimateFor(sc, driver, sc.Peers.Count)
}

// perPeerAt2000 interpolates peakPerPeer at d dimensions on a log scale.
func perPeerAt2000(d int) float64 {
	pts := peakPerPeer
	i := 1
	for i < len(pts)-1 && d > pts[i].dims {
		i++
	}
	lo, hi := pts[i-1], pts[i]
	slope := (math.Log(hi.bytes) - math.Log(lo.bytes)) / float64(hi.dims-lo.dims)
	return math.Exp(math.Log(lo.bytes) + slope*float64(d-lo.dims))
}

func estimateFor(sc scenario.Scenario, driver string, peers int) MemoryEstimate {
	per := perPeerAt2000(max(sc.Overlay.Dimensions, 1))
	per *= math.Pow(max(float64(peers), 1)/2000, peerCountExponent)
	if sc.Overlay.Heartbeat.Mode == overlay.HeartbeatCompact {
		per *= compactFactor
	}
	if driver != DriverSim {
		per *= emulatorFactor
	}
	return MemoryEstimate{Bytes: int64(runtimeBytes + gcHeadroom*per*float64(peers)), PerPeer: per}
}

// Admit refuses a run whose estimated memory exceeds limit (bytes; 0 or
// less admits everything), saying the estimate and the largest peer count
// that fits.
func Admit(sc scenario.Scenario, driver string, limit int64) error {
	if limit <= 0 || limit == math.MaxInt64 {
		return nil
	}
	e := EstimateMemory(sc, driver)
	if e.Bytes <= limit {
		return nil
	}
	fits := 0
	for lo, hi := 0, sc.Peers.Count; lo <= hi; {
		mid := (lo + hi) / 2
		if mid == 0 || estimateFor(sc, driver, mid).Bytes <= limit {
			fits, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return fmt.Errorf("this run needs about %s of memory (%d peers × %s at their peak — d=%d, %s heartbeats, %s driver — with the collector's headroom), more than the memory limit of %s: "+
		"lower peers.count to %d or fewer, or use fewer dimensions, or raise the limit with GOMEMLIMIT (the machine's memory permitting)",
		gib(e.Bytes), sc.Peers.Count, kib(e.PerPeer), sc.Overlay.Dimensions, sc.Overlay.Heartbeat.Mode, driver, gib(limit), fits)
}

// MemoryCeiling is the hard ceiling for a process whose soft memory limit
// (GOMEMLIMIT, or half the machine's memory as the command sets it) is
// limit: the soft limit makes the collector work harder as the heap nears
// it; a quarter above it, the collector can no longer keep up and the run
// is stopped. 0 for no limit.
func MemoryCeiling(limit int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return 0
	}
	return limit + limit/4
}

// goMemory is the memory the Go runtime holds from the system (heap,
// stacks, runtime structures), less what it has returned.
func goMemory() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 || s[1].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// memoryWindow is how often watchMemory looks.
const memoryWindow = 250 * time.Millisecond

// watchMemory cancels the returned context with an *overloadError once
// the Go runtime holds more than ceiling bytes (read every memoryWindow
// of wall time) — in the join phase built in-process too. stop ends it.
// The reason names what waited in the mailboxes at the overload guard's
// last window (seen, stored by watchOverload), if it looked.
func watchMemory(ctx context.Context, ceiling int64, logger *slog.Logger, seen *atomic.Pointer[live.Pressure]) (context.Context, func()) {
	mctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		tk := time.NewTicker(memoryWindow)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-mctx.Done():
				return
			case <-tk.C:
			}
			if used := goMemory(); used > ceiling {
				reason := fmt.Sprintf("memory: the process held %s, above the hard ceiling of %s (a quarter above the soft memory limit): the run would grow past the machine — lower peers.count or set GOMEMLIMIT higher if the machine has the memory", gib(used), gib(ceiling))
				if p := seen.Load(); p != nil && p.Backlog+p.TimersQueued+p.TimersOverdue > 0 {
					reason += fmt.Sprintf("; %d messages in mailboxes%s", p.Backlog, waitingWords(*p))
				}
				if logger != nil {
					logger.Error("stopping the run: " + reason)
				}
				cancel(&overloadError{reason: reason})
				return
			}
		}
	}()
	return mctx, func() {
		select {
		case <-done:
		default:
			close(done)
		}
	}
}

func gib(b int64) string   { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/(1<<10)) }

// TuneGC sets the process's garbage collector for runs: emulated peers
// allocate many short-lived messages, and a heap target of 5× the live
// heap (GOGC=400) trades memory, plentiful here, for about a third less GC
// CPU on the deterministic driver. That target would ask a 100,000-peer
// run for far more than the machine has, so a soft memory limit of half
// the physical memory makes the GC work harder instead as the heap nears
// it. GOGC and GOMEMLIMIT in the environment still win (set GOMEMLIMIT
// lower to fit a large run in less memory, e.g. GOMEMLIMIT=5GiB). The
// command calls it first thing; test binaries that run scenarios call it
// from TestMain, so that they run as the command does.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := PhysicalMemory(); total > 0 {
			debug.SetMemoryLimit(total / 2)
		}
	}
}

// PhysicalMemory is the machine's memory in bytes (MemTotal), 0 if unknown.
func PhysicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return v << 10
				}
			}
		}
	}
	return 0
}
