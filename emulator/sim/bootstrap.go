package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/emulator/oracle"
	"github.com/gridbed/gridbed/metrics"
)

// BootstrapOptions describe the initial population whose overlay
// BuildOverlay builds.
type BootstrapOptions struct {
	Seed    uint64
	Overlay overlay.Config
	// Points are the peers' points, peer id i+1 at Points[i].
	Points []can.Point
	// JoinWindow spreads the sequential joins as peers.join_window does.
	JoinWindow time.Duration
	// MaxSettle bounds how long after the join window the overlay may
	// take to become exact; 0 means 100 heartbeat periods.
	MaxSettle time.Duration
}

// Bootstrapped is an overlay built by BuildOverlay.
type Bootstrapped struct {
	// At is the emulated time of the handover: the run goes on from there.
	At time.Duration
	// Members are the peers in id order (Members[i] is peer i+1).
	Members []driver.Member
	// Messages and Bytes count the protocol messages the join phase
	// exchanged in memory (never on the run's bus); Events the
	// simulator's events.
	Messages, Bytes, Events uint64
	// Oracle is the ground truth at the handover: exact.
	Oracle oracle.Report
}

// BuildOverlay runs the join phase of a run (peers.bootstrap: direct) in
// this package's deterministic driver — the very join sequence and
// heartbeats `--driver sim` runs for the same seed, with no latency and no
// faults — until every peer has joined and the overlay is exact (no broken
// or stale link, gap or overlap, checked every heartbeat period from the
// end of the join window), and hands over the peers' overlay cores. The
// emulator then starts them over its bus already members, at emulated
// time At. Nothing here is re-implemented: the cores join and split by
// their own rules.
//
// It stops with ctx's error when ctx ends (an interrupted command): it
// looks at ctx every emulated second.
func BuildOverlay(ctx context.Context, opts BootstrapOptions) (*Bootstrapped, error) {
	n := len(opts.Points)
	if n == 0 {
		return nil, fmt.Errorf("sim: no peers to bootstrap")
	}
	cfg := opts.Overlay
	period := cfg.HeartbeatPeriod
	if period <= 0 {
		period = 30 * time.Second
	}
	settle := opts.MaxSettle
	if settle <= 0 {
		settle = 100 * period
	}
	traffic := metrics.NewTraffic()
	d := NewDriver(DriverOptions{Seed: opts.Seed, Overlay: cfg, Traffic: traffic})
	for i, p := range opts.Points {
		slot := time.Duration(0)
		if n > 1 {
			slot = time.Duration(int64(opts.JoinWindow) * int64(i) / int64(n))
		}
		if err := d.Spawn(core.NodeID(i+1), p, slot); err != nil {
			return nil, err
		}
	}
	d.Start()
	dims := len(opts.Points[0])
	limit := opts.JoinWindow + settle
	var rep oracle.Report
	for t := opts.JoinWindow; ; t += period {
		// In steps of an emulated second, to notice ctx ending; the
		// events and their order do not depend on the steps.
		for s := d.w.now + time.Second; ; s += time.Second {
			if err := d.AdvanceTo(ctx, min(s, t)); err != nil {
				return nil, fmt.Errorf("sim: bootstrapping %d peers interrupted at emulated %v: %w", n, d.w.now, err)
			}
			if s >= t {
				break
			}
		}
		if d.Members() == n {
			st, _ := d.Collect(ctx)
			snaps := make([]overlay.Snapshot, len(st))
			for i := range st {
				snaps[i] = st[i].Snapshot
			}
			rep = oracle.Check(snaps, dims)
			if rep.Members == n && rep.StaleLinks == 0 && rep.Exact() {
				break
			}
		}
		if t >= limit {
			return nil, fmt.Errorf("sim: bootstrapping %d peers: %d joined and the overlay was not exact (%+v) %v after the join window; raise peers.join_window or use peers.bootstrap: joins", n, d.Members(), rep, settle)
		}
	}
	b := &Bootstrapped{At: d.w.now, Members: make([]driver.Member, n), Events: d.w.Events(), Oracle: rep}
	b.Messages, b.Bytes = traffic.Snapshot().Total()
	timers, inFlight := d.w.pendingTimers()
	if inFlight > 0 {
		return nil, fmt.Errorf("sim: bootstrap handover with %d messages in flight", inFlight) // cannot happen without latency
	}
	for i, p := range d.Peers() {
		b.Members[i] = driver.Member{Node: p.Overlay(), Timers: timers[p.ID()]}
	}
	return b, nil
}

// pendingTimers lists the timers not yet fired, by address, and counts
// the messages not yet delivered.
func (w *World) pendingTimers() (map[core.NodeID][]core.Timer, int) {
	out := map[core.NodeID][]core.Timer{}
	inFlight := 0
	w.queue.Each(func(e *event) {
		switch e.kind {
		case evTimer:
			id := core.NodeID(e.to)
			out[id] = append(out[id], core.Timer{Kind: e.tk, At: e.at})
		case evDeliver:
			inFlight++
		}
	})
	return out, inFlight
}
