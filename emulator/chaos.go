package emulator

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/faults/outage"
	"github.com/gridbed/gridbed/metrics"
)

// FaultEvent is one fault the timeline applied, as the results list it
// (Grafana draws them as annotations).
type FaultEvent struct {
	TSeconds float64 `json:"t_seconds"`
	Kind     string  `json:"kind"`
	Detail   string  `json:"detail"`
	// ExactAfterSeconds is how long after this fault the overlay was
	// exact (no broken link, gap or overlap) at an oracle sample and stayed
	// so until the next fault or the end; null if it never was.
	ExactAfterSeconds *float64 `json:"exact_after_seconds"`
}

// annotateRecovery fills in ExactAfterSeconds from the oracle series.
func annotateRecovery(events []FaultEvent, series []Sample) {
	for i := range events {
		from := events[i].TSeconds
		to := math.Inf(1)
		if i+1 < len(events) {
			to = events[i+1].TSeconds
		}
		clean := -1.0
		for _, s := range series {
			t := s.T.Seconds()
			if t < from || t >= to { // a sample at the next fault's instant shows that fault
				continue
			}
			if !s.Oracle.Exact() {
				clean = -1
			} else if clean < 0 {
				clean = t
			}
		}
		if clean >= 0 {
			v := clean - from
			events[i].ExactAfterSeconds = &v
		}
	}
}

// chaos is a run's fault injection: the link model (link.Chain) between
// the peers and the driver's bus, a bus-outage switch under it for the
// deterministic driver, the region of every peer, and the fault timeline.
type chaos struct {
	sc     scenario.Scenario
	drv    Driver
	m      *metrics.Run
	logger *slog.Logger
	ids    *idAlloc
	chain  *link.Chain
	outage *outage.Outage // the bus_restart of the driver's bus
	region func(bus.Address) int

	mu     sync.Mutex
	events []FaultEvent
	byKind map[string]uint64

	// triggers are the entries waiting for a protocol event (when:);
	// read and written on the run's goroutine only (fire).
	triggers []*trigger
}

// trigger is a timeline entry waiting for a protocol event.
type trigger struct {
	i    int // its index for naming (after the timed entries)
	f    scenario.Fault
	done bool
}

// newChaos installs the link model on the driver (before any peer exists)
// and sets it up as the scenario's link section says.
func newChaos(sc scenario.Scenario, drv Driver, m *metrics.Run, ids *idAlloc, logger *slog.Logger) *chaos {
	c := &chaos{sc: sc, drv: drv, m: m, logger: logger, ids: ids, byKind: map[string]uint64{}}
	c.region = regionOf(sc.Seed, sc.Link.Regions)
	drv.WrapBus(func(inner bus.Bus) bus.Bus {
		c.outage, inner = outage.Wrap(inner)
		c.chain = link.NewChain(inner, drv, sc.Seed)
		return c.chain
	})
	l := sc.Link
	c.chain.Delay.SetLatency(latency(l.Latency))
	switch {
	case len(l.RegionLatency) > 0:
		m := make([][]link.Latency, len(l.RegionLatency))
		for i, row := range l.RegionLatency {
			for _, mean := range row {
				m[i] = append(m[i], link.Latency{Dist: l.InterRegion.Dist, Mean: mean, Jitter: l.InterRegion.Jitter})
			}
		}
		c.chain.Delay.SetRegionMatrix(c.region, m)
	case l.Regions > 1:
		c.chain.Delay.SetRegions(c.region, latency(l.InterRegion))
	}
	c.chain.Loss.SetLoss(l.Loss)
	c.chain.Duplicate.SetDuplicate(l.Duplicate)
	m.SetDrops(c.drops)
	return c
}

func latency(l scenario.Latency) link.Latency {
	return link.Latency{Dist: l.Dist, Mean: l.Mean, Jitter: l.Jitter}
}

// regionOf spreads addresses evenly over regions by a seeded hash.
func regionOf(seed uint64, regions int) func(bus.Address) int {
	if regions <= 1 {
		return func(bus.Address) int { return 0 }
	}
	return func(a bus.Address) int { return int(mix(seed, 0x726567696f6e, uint64(a)) % uint64(regions)) }
}

// mix is a seeded 64-bit hash of (a, b) (splitmix64 finalizers): the same
// inputs give the same value in every run and on every machine.
func mix(seed, a, b uint64) uint64 {
	z := seed
	for _, v := range []uint64{a, b} {
		z += v + 0x9e3779b97f4a7c15
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
	}
	return z
}

// drops reads the fault layer's counters (for metrics and the summary).
func (c *chaos) drops() metrics.Drops {
	f := c.chain.Faults()
	d := metrics.Drops{Partition: f.DroppedPartition, Loss: f.DroppedLoss, Duplicated: f.Duplicated}
	d.BusOutage = c.outage.Dropped()
	d.BusLost = c.drv.BusStats().Lost
	return d
}

// record notes one applied fault in the results, the metrics and the log.
// t is the fault's scheduled emulated time (the emulator driver applies it
// a little later; oracle samples are labelled with scheduled times too).
func (c *chaos) record(t time.Duration, kind, detail string) {
	c.mu.Lock()
	c.events = append(c.events, FaultEvent{TSeconds: t.Seconds(), Kind: kind, Detail: detail})
	c.byKind[kind]++
	c.mu.Unlock()
	c.m.Fault(kind)
	if c.logger != nil {
		c.logger.Info("fault", "t", t, "kind", kind, "detail", detail)
	}
}

// schedule hands every timed entry of the timeline to the driver and
// keeps the triggered ones for fire.
func (c *chaos) schedule() {
	timed := c.sc.SortedFaults()
	for i, f := range timed {
		c.drv.At(f.At, func() { c.apply(i, f) })
	}
	for j, f := range c.sc.TriggeredFaults() {
		c.triggers = append(c.triggers, &trigger{i: len(timed) + j, f: f})
	}
}

// fire applies, at the time of oracle sample s, the triggered entries
// whose protocol event has happened often enough by then (checked at every
// sample: cheap, and as fine-grained as oracle.interval). It returns the
// latest end of the disturbances they start, and whether any fired.
func (c *chaos) fire(s Sample) (until time.Duration, fired bool) {
	for _, t := range c.triggers {
		if t.done || s.Events[t.f.When]+s.JobEvents[t.f.When] < t.f.Count {
			continue
		}
		t.done, fired = true, true
		f := t.f
		f.At = s.T
		c.drv.At(s.T, func() { c.apply(t.i, f) })
		until = max(until, f.At+f.RestartAfter+f.DownFor)
	}
	return until, fired
}

// apply carries out timeline entry i.
func (c *chaos) apply(i int, f scenario.Fault) {
	switch f.Kind {
	case scenario.FaultPartition:
		name := partitionName(i, f)
		side, what := c.side(i, f)
		c.chain.Partition.Cut(name, side, f.OneWay)
		dir := "both ways"
		if f.OneWay {
			dir = "one way: its messages to the rest are lost"
		}
		c.record(f.At, f.Kind, fmt.Sprintf("%s: %s cut off from the rest, %s", name, what, dir))
	case scenario.FaultHeal:
		if f.Name != "" {
			c.chain.Partition.Heal(f.Name)
			c.record(f.At, f.Kind, f.Name)
		} else {
			c.chain.Partition.HealAll()
			c.record(f.At, f.Kind, "every partition")
		}
	case scenario.FaultLatency:
		c.chain.Delay.SetLatency(latency(f.Latency))
		c.record(f.At, f.Kind, fmt.Sprintf("%s, mean %v, jitter %v", f.Latency.Dist, f.Latency.Mean, f.Latency.Jitter))
	case scenario.FaultLoss:
		c.chain.Loss.SetLoss(f.P)
		c.record(f.At, f.Kind, fmt.Sprintf("p = %g", f.P))
	case scenario.FaultDuplicate:
		c.chain.Duplicate.SetDuplicate(f.P)
		c.record(f.At, f.Kind, fmt.Sprintf("p = %g", f.P))
	case scenario.FaultCrash:
		c.crash(i, f)
	case scenario.FaultLeave:
		c.crash(i, f)
	case scenario.FaultBusRestart:
		c.busRestart(f)
	}
}

// side is the set of addresses a partition cuts off, and how to say so.
func (c *chaos) side(i int, f scenario.Fault) (func(bus.Address) bool, string) {
	switch {
	case f.Region >= 0:
		r := f.Region
		return func(a bus.Address) bool { return c.region(a) == r }, fmt.Sprintf("region %d", r)
	case len(f.Peers) > 0:
		set := map[bus.Address]bool{}
		for _, id := range f.Peers {
			set[bus.Address(id)] = true
		}
		return func(a bus.Address) bool { return set[a] }, fmt.Sprintf("%d peers", len(set))
	}
	// A fraction of all addresses, present and future, by a seeded hash.
	limit := uint64(f.Fraction * (1 << 53))
	seed, entry := c.sc.Seed, uint64(i)
	return func(a bus.Address) bool { return mix(seed, entry, uint64(a))>>11 < limit },
		fmt.Sprintf("%.0f%% of the peers", 100*f.Fraction)
}

// crash makes a fraction of the members, or a region's members, crash at
// once (leave: depart gracefully); with restart_after as many new peers
// join later at their points.
func (c *chaos) crash(i int, f scenario.Fault) {
	rng := rand.New(rand.NewPCG(c.sc.Seed, 0x6372617368+uint64(i)))
	ids := c.drv.DepartPicked(func(members []overlay.NodeID) []overlay.NodeID {
		if f.Region >= 0 {
			var out []overlay.NodeID
			for _, id := range members {
				if c.region(bus.Address(id)) == f.Region {
					out = append(out, id)
				}
			}
			return out
		}
		k := int(f.Fraction*float64(len(members)) + 0.5)
		perm := rng.Perm(len(members))[:k]
		out := make([]overlay.NodeID, k)
		for j, p := range perm {
			out[j] = members[p]
		}
		slices.Sort(out)
		return out
	}, f.Kind == scenario.FaultCrash)
	what := fmt.Sprintf("%d peers (%.0f%% of the members)", len(ids), 100*f.Fraction)
	if f.Region >= 0 {
		what = fmt.Sprintf("%d peers of region %d", len(ids), f.Region)
	}
	if f.RestartAfter <= 0 {
		c.record(f.At, f.Kind, what)
		return
	}
	c.record(f.At, f.Kind, what+fmt.Sprintf("; they restart as new peers after %v", f.RestartAfter))
	points := make([]can.Point, len(ids))
	for j, id := range ids {
		points[j] = c.ids.point(id)
	}
	c.drv.At(f.At+f.RestartAfter, func() {
		n := 0
		for _, p := range points {
			id := c.ids.next(p)
			if err := c.drv.Join(id, p); err != nil {
				if c.logger != nil {
					c.logger.Warn("restart join failed", "peer", id, "err", err)
				}
				continue
			}
			n++
		}
		c.record(f.At+f.RestartAfter, "restart", fmt.Sprintf("%d crashed peers rejoined as new peers, state lost", n))
	})
}

// busRestart stops the bus for f.DownFor: the embedded NATS server stops
// and starts again (clients reconnect; what was in flight is lost and the
// bus counts it), or, in the deterministic driver, every message sent
// meanwhile is lost.
func (c *chaos) busRestart(f scenario.Fault) {
	end, detail := c.outage.Begin(f.DownFor, c.warn)
	c.record(f.At, f.Kind, detail)
	if end != nil {
		c.drv.At(f.At+f.DownFor, end)
	}
}

// warn logs a bus fault's error, unless the run has already closed the bus.
func (c *chaos) warn(msg string, err error) {
	if err != nil && !errors.Is(err, bus.ErrClosed) && c.logger != nil {
		c.logger.Error(msg, "err", err)
	}
}

// summary is the faults section of the results.
func (c *chaos) summary() FaultSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.drops()
	return FaultSummary{
		Delayed: c.chain.Faults().Delayed,
		Events:  slices.SortedStableFunc(slices.Values(c.events), func(a, b FaultEvent) int { return cmp.Compare(a.TSeconds, b.TSeconds) }),
		ByKind:  maps.Clone(c.byKind),
		Dropped: map[string]uint64{
			"partition": d.Partition, "loss": d.Loss, "bus_outage": d.BusOutage, "bus_lost": d.BusLost,
		},
		Duplicated: d.Duplicated,
	}
}

// idAlloc hands out peer ids in order to everything that adds peers during
// a run (churn joins, crash-restarts), so the drivers see them in sequence,
// and remembers every peer's point.
type idAlloc struct {
	mu     sync.Mutex
	last   overlay.NodeID
	points []can.Point // by id-1
}

func (a *idAlloc) next(p can.Point) overlay.NodeID {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last++
	a.points = append(a.points, p)
	return a.last
}

func (a *idAlloc) point(id overlay.NodeID) can.Point {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.points[id-1]
}
