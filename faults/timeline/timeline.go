// Package timeline is a run's fault layer: it installs the link model
// (faults/link), the slow peers' service (faults/slow) and the bus outage
// (faults/outage) on the driver's bus
// before any peer exists, sets the link up as the scenario's link section
// says, spreads the peers over regions, and applies the scenario's fault
// timeline — timed entries at their instant, triggered ones (when:) once
// their protocol event has happened often enough — recording every fault it
// applies in the metrics, the log and its list of events.
package timeline

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/faults/bandwidth"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/faults/outage"
	"github.com/gridbed/gridbed/faults/slow"
	"github.com/gridbed/gridbed/metrics"
)

// Host is what the timeline needs of the run's driver.
type Host interface {
	// Now and At are the driver's emulated time (link.Scheduler): At runs
	// fn at emulated time t in the driver's own context.
	Now() time.Duration
	At(t time.Duration, fn func())
	// WrapBus puts a decorator between the peers and the bus; called once,
	// before the first peer exists.
	WrapBus(wrap func(bus.Bus) bus.Bus)
	// DepartPicked makes the members pick chooses (given the current
	// members in increasing order) depart at once, crashing when fail is
	// set; it returns those that did.
	DepartPicked(pick func(members []core.NodeID) []core.NodeID, fail bool) []core.NodeID
	// Join adds peer id (the next id) at point, joining at once.
	Join(id core.NodeID, point can.Point) error
	// BusStats are the driver's bus counters.
	BusStats() bus.Stats
}

// IDs hands out the run's peer ids in order to everything that adds peers
// (a crash-restart here, churn elsewhere) and remembers every peer's point.
type IDs interface {
	Next(p can.Point) core.NodeID
	Point(id core.NodeID) can.Point
}

// Event is one fault the timeline applied, at its scheduled emulated time.
type Event struct {
	At     time.Duration
	Kind   string
	Detail string
}

// Timeline is a run's fault injection: the link model (link.Chain) between
// the peers and the driver's bus, the bus outage under it, the region of
// every peer, and the fault timeline.
type Timeline struct {
	sc     scenario.Scenario
	host   Host
	m      *metrics.Run
	logger *slog.Logger
	ids    IDs
	chain  *link.Chain
	outage *outage.Outage     // the bus_restart of the driver's bus
	slow   *slow.Service      // the slow peers, between the link model and the outage
	bw     *metrics.Bandwidth // the bandwidth series; nil when link.bandwidth limits nothing
	region func(bus.Address) int

	mu     sync.Mutex
	events []Event
	byKind map[string]uint64

	// triggers are the entries waiting for a protocol event (when:);
	// read and written on the run's goroutine only (Fire; on a worker
	// of a split run, FireTriggered on its command goroutine).
	triggers []*trigger
}

// trigger is a timeline entry waiting for a protocol event.
type trigger struct {
	i    int // its index for naming (after the timed entries)
	f    scenario.Fault
	done bool
}

// New installs the link model on host (before any peer exists) and sets it
// up as the scenario's link section says; m receives the fault counts and
// the drops, logger (if not nil) every fault applied.
func New(sc scenario.Scenario, host Host, m *metrics.Run, ids IDs, logger *slog.Logger) *Timeline {
	c := &Timeline{sc: sc, host: host, m: m, logger: logger, ids: ids, byKind: map[string]uint64{}}
	c.region = regionOf(sc.Seed, sc.Link.Regions)
	if m := sc.Link.Matrix; m != nil {
		c.region = weightedRegionOf(sc.Seed, m)
	}
	host.WrapBus(func(inner bus.Bus) bus.Bus {
		c.outage, inner = outage.Wrap(inner)
		c.slow = slow.New(inner, host)
		c.chain = link.NewChain(c.slow, host, sc.Seed)
		return c.chain
	})
	l := sc.Link
	c.chain.Delay.SetLatency(latency(l.Latency))
	switch {
	case l.Matrix != nil:
		c.chain.Delay.SetRegionMatrix(c.region, l.Matrix.Latencies())
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
	c.setBandwidth(l.Bandwidth.Config())
	c.chain.Corrupt.SetCorrupt(l.Corrupt)
	m.SetDrops(c.Drops)
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

// weightedRegionOf places addresses in the regions of a latency matrix
// by a seeded hash, each region taking a share of the addresses in
// proportion to its weight (link.Matrix.Pick).
func weightedRegionOf(seed uint64, m *link.Matrix) func(bus.Address) int {
	return func(a bus.Address) int {
		return m.Pick(float64(mix(seed, 0x726567696f6e, uint64(a))>>11) / (1 << 53))
	}
}

// Region is the region of address a (0 without regions).
func (c *Timeline) Region(a bus.Address) int { return c.region(a) }

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

// Drops reads the fault layer's counters (for metrics and the summary).
func (c *Timeline) Drops() metrics.Drops {
	f := c.chain.Faults()
	d := metrics.Drops{Partition: f.DroppedPartition, Loss: f.DroppedLoss, Duplicated: f.Duplicated, Corrupted: f.Corrupted}
	d.Bandwidth = c.chain.Bandwidth.Faults().DroppedTotal()
	d.BusOutage = c.outage.Dropped()
	d.BusLost = c.host.BusStats().Lost
	return d
}

// Link returns the counters of the link model's layers.
func (c *Timeline) Link() link.ChainStats { return c.chain.Faults() }

// OutageDropped is the number of messages the bus outage's switch lost
// (0 when the bus has a server of its own, which counts its own losses).
func (c *Timeline) OutageDropped() uint64 { return c.outage.Dropped() }

// Events returns the faults applied so far, in the order applied.
func (c *Timeline) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// ByKind counts the faults applied so far by kind (the scenario's kinds,
// plus restart).
func (c *Timeline) ByKind() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byKind)
}

// record notes one applied fault in the events, the metrics and the log.
// t is the fault's scheduled emulated time (the live driver applies it a
// little later; oracle samples are labelled with scheduled times too).
func (c *Timeline) record(t time.Duration, kind, detail string) {
	c.mu.Lock()
	c.events = append(c.events, Event{At: t, Kind: kind, Detail: detail})
	c.byKind[kind]++
	c.mu.Unlock()
	c.m.Fault(kind)
	if c.logger != nil {
		c.logger.Info("fault", "t", t, "kind", kind, "detail", detail)
	}
}

// Schedule hands every timed entry of the timeline to the driver and keeps
// the triggered ones for Fire.
func (c *Timeline) Schedule() {
	timed := c.sc.SortedFaults()
	for i, f := range timed {
		c.host.At(f.At, func() { c.apply(i, f) })
	}
	for j, f := range c.sc.TriggeredFaults() {
		c.triggers = append(c.triggers, &trigger{i: len(timed) + j, f: f})
	}
}

// Fire applies, at emulated time now (an oracle sample's), the triggered
// entries whose protocol event has happened often enough by then — count
// is how often an event has happened so far (checked at every sample:
// cheap, and as fine-grained as the sampling). It returns the latest end
// of the disturbances they start, and whether any fired. Call it on the
// run's goroutine.
func (c *Timeline) Fire(now time.Duration, count func(event string) uint64) (until time.Duration, fired bool) {
	for j, t := range c.triggers {
		if t.done || count(t.f.When) < t.f.Count {
			continue
		}
		t.done, fired = true, true
		f := t.f
		f.At = now
		c.host.At(now, func() { c.apply(t.i, f) })
		if fw, ok := c.host.(Forwarder); ok && Forwarded(f.Kind) {
			fw.ForwardTriggered(j, now)
		}
		until = max(until, f.At+f.RestartAfter+f.DownFor+f.Length)
	}
	return until, fired
}

// Forwarder is a Host whose peers publish through fault layers of their
// own in other processes (the coordinator of a run split across workers,
// emulator/workers): it is told of every triggered entry that changes
// the link as the entry fires — j is its index among the triggered
// entries, at the emulated time it fires — so that each process applies
// it to its own fault layer (FireTriggered).
type Forwarder interface {
	ForwardTriggered(j int, at time.Duration)
}

// Forwarded reports whether a triggered entry of kind acts on the fault
// layer of the process whose peers send (the link, the slow peers'
// service) and so must reach every worker: crashes and leaves act
// through the coordinator's driver, and bus_restart on its own bus.
func Forwarded(kind string) bool {
	switch kind {
	case scenario.FaultCrash, scenario.FaultLeave, scenario.FaultBusRestart:
		return false
	}
	return true
}

// FireTriggered applies triggered entry j (its index among the triggered
// entries) at emulated time at, once: the coordinator of a run split
// across workers decided it fired (Forwarder), and this is a worker's
// fault layer. An index out of range is ignored.
func (c *Timeline) FireTriggered(j int, at time.Duration) {
	if j < 0 || j >= len(c.triggers) || c.triggers[j].done {
		return
	}
	t := c.triggers[j]
	t.done = true
	f := t.f
	f.At = at
	c.host.At(at, func() { c.apply(t.i, f) })
}

// PartitionName is the name of partition entry i of the sorted timeline.
func PartitionName(i int, f scenario.Fault) string {
	if f.Name != "" {
		return f.Name
	}
	return fmt.Sprintf("partition-%d", i)
}

// apply carries out timeline entry i.
func (c *Timeline) apply(i int, f scenario.Fault) {
	switch f.Kind {
	case scenario.FaultPartition:
		name := PartitionName(i, f)
		if len(f.From) > 0 {
			c.chain.Partition.CutLinks(name, c.linkSets(f))
			dir := "and back"
			if f.OneWay {
				dir = "one way"
			}
			c.record(f.At, f.Kind, fmt.Sprintf("%s: the links from %d peers to %d peers cut, %s", name, len(f.From), len(f.To), dir))
			return
		}
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
	case scenario.FaultCorrupt:
		c.chain.Corrupt.SetCorrupt(f.P)
		c.record(f.At, f.Kind, fmt.Sprintf("p = %g: that share of the messages arrive with a changed byte, rejected by the frame check", f.P))
	case scenario.FaultFlap:
		c.flap(i, f)
	case scenario.FaultCrash:
		c.crash(i, f)
	case scenario.FaultLeave:
		c.crash(i, f)
	case scenario.FaultBusRestart:
		c.busRestart(f)
	case scenario.FaultSlow:
		c.setSlow(f)
	}
}

// setSlow makes a fraction of the peers slow (the slow fault): by a seeded
// hash of the address alone, so that a larger fraction later keeps the
// slow peers of a smaller one; the job client is never slow.
func (c *Timeline) setSlow(f scenario.Fault) {
	if f.Service <= 0 || f.Fraction <= 0 {
		c.slow.Set(nil, 0)
		c.record(f.At, f.Kind, "no peer is slow any more")
		return
	}
	limit := uint64(f.Fraction * (1 << 53))
	seed := c.sc.Seed
	client := bus.Address(peer.ClientAddress)
	c.slow.Set(func(a bus.Address) bool { return a != client && mix(seed, 0x736c6f77, uint64(a))>>11 < limit }, f.Service)
	c.record(f.At, f.Kind, fmt.Sprintf("%.0f%% of the peers serve each message they receive in %v", 100*f.Fraction, f.Service))
}

// Slow reads the slow peers' counters.
func (c *Timeline) Slow() slow.Stats { return c.slow.Faults() }

// side is the set of addresses a partition cuts off, and how to say so.
func (c *Timeline) side(i int, f scenario.Fault) (func(bus.Address) bool, string) {
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
func (c *Timeline) crash(i int, f scenario.Fault) {
	rng := rand.New(rand.NewPCG(c.sc.Seed, 0x6372617368+uint64(i)))
	ids := c.host.DepartPicked(func(members []core.NodeID) []core.NodeID {
		if f.Region >= 0 {
			var out []core.NodeID
			for _, id := range members {
				if c.region(bus.Address(id)) == f.Region {
					out = append(out, id)
				}
			}
			return out
		}
		k := int(f.Fraction*float64(len(members)) + 0.5)
		perm := rng.Perm(len(members))[:k]
		out := make([]core.NodeID, k)
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
		points[j] = c.ids.Point(id)
	}
	c.host.At(f.At+f.RestartAfter, func() {
		n := 0
		for _, p := range points {
			id := c.ids.Next(p)
			if err := c.host.Join(id, p); err != nil {
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
func (c *Timeline) busRestart(f scenario.Fault) {
	end, detail := c.outage.Begin(f.DownFor, c.warn)
	c.record(f.At, f.Kind, detail)
	if end != nil {
		c.host.At(f.At+f.DownFor, end)
	}
}

// warn logs a bus fault's error, unless the run has already closed the bus.
func (c *Timeline) warn(msg string, err error) {
	if err != nil && !errors.Is(err, bus.ErrClosed) && c.logger != nil {
		c.logger.Error(msg, "err", err)
	}
}

// setBandwidth sets up the access links (link.bandwidth) and, when they
// limit anything, their series.
func (c *Timeline) setBandwidth(cfg bandwidth.Config) {
	if !cfg.On() {
		return
	}
	c.chain.Bandwidth.Set(cfg)
	c.bw = metrics.NewBandwidth(c.m, func() (msgs, bytes [2]uint64) {
		st := c.chain.Bandwidth.Faults()
		return st.Dropped, st.DroppedBytes
	})
	c.chain.Bandwidth.SetObserver(func(d bandwidth.Direction, wait time.Duration) { c.bw.Observe(int(d), wait.Seconds()) })
}

// Bandwidth returns the bandwidth model's counters and its queueing-delay
// series (nil when link.bandwidth limits nothing).
func (c *Timeline) Bandwidth() (bandwidth.Stats, *metrics.Bandwidth) {
	return c.chain.Bandwidth.Faults(), c.bw
}

// BandwidthConfig is the bandwidth model in force.
func (c *Timeline) BandwidthConfig() bandwidth.Config { return c.chain.Bandwidth.Config() }

// FlapName is the name of flap entry i of the sorted timeline (its cut in
// the link model's Partition).
func FlapName(i int, f scenario.Fault) string {
	if f.Name != "" {
		return f.Name
	}
	return fmt.Sprintf("flap-%d", i)
}

// flap makes the entry's links go down and up (link.Flap, installed as a
// per-link cut) for f.Length, after which they are up for good (recorded
// as a heal).
func (c *Timeline) flap(i int, f scenario.Fault) {
	name := FlapName(i, f)
	in, what := c.flapLinks(i, f)
	up := link.Latency{Dist: f.Latency.Dist, Mean: f.Up}
	down := link.Latency{Dist: f.Latency.Dist, Mean: f.Down}
	fl := link.NewFlap(c.host, mix(c.sc.Seed, 0x666c6170, uint64(i)), in, up, down, f.OneWay)
	c.chain.Partition.CutLinks(name, fl.Drops)
	dir := "both ways together"
	if f.OneWay {
		dir = "each way on its own"
	}
	c.record(f.At, f.Kind, fmt.Sprintf("%s: %s go down and up (%s up, %s down, %s), %s, for %v", name, what, f.Up, f.Down, f.Latency.Dist, dir, f.Length))
	c.host.At(f.At+f.Length, func() {
		if c.chain.Partition.Heal(name) {
			st := fl.Faults()
			c.record(f.At+f.Length, scenario.FaultHeal, fmt.Sprintf("%s: flapping over, every link up; %d links flapped, %d down periods, %d messages lost", name, st.Links, st.Downs, st.Dropped))
		}
	})
}

// flapLinks is the set of links a flap entry takes down and up, and how to
// say so: a fraction of all links (by a seeded hash of the entry and the
// link — the pair of addresses, or the ordered pair for a one-way flap),
// every link of some peers, or the links between two sets.
func (c *Timeline) flapLinks(i int, f scenario.Fault) (func(from, to bus.Address) bool, string) {
	switch {
	case len(f.From) > 0:
		return c.linkSets(f), fmt.Sprintf("the links from %d peers to %d peers", len(f.From), len(f.To))
	case len(f.Peers) > 0:
		set := peerSet(f.Peers)
		return func(a, b bus.Address) bool { return set[a] || set[b] }, fmt.Sprintf("the links of %d peers", len(set))
	}
	limit := uint64(f.Fraction * (1 << 53))
	seed, entry, oneWay := c.sc.Seed, uint64(i), f.OneWay
	return func(a, b bus.Address) bool {
		if !oneWay && b < a {
			a, b = b, a
		}
		return mix(seed^0x6c696e6b, entry, mix(uint64(a), 0, uint64(b)))>>11 < limit
	}, fmt.Sprintf("%.0f%% of the links", 100*f.Fraction)
}

// linkSets is the per-link cut of an entry's from and to sets.
func (c *Timeline) linkSets(f scenario.Fault) func(from, to bus.Address) bool {
	from, to := peerSet(f.From), peerSet(f.To)
	return link.LinkSets(func(a bus.Address) bool { return from[a] }, func(a bus.Address) bool { return to[a] }, f.OneWay)
}

func peerSet(ids []uint64) map[bus.Address]bool {
	set := make(map[bus.Address]bool, len(ids))
	for _, id := range ids {
		set[bus.Address(id)] = true
	}
	return set
}
