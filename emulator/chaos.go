package emulator

import (
	"cmp"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/faults/bandwidth"
	"github.com/gridbed/gridbed/faults/link"
	"github.com/gridbed/gridbed/faults/slow"
	"github.com/gridbed/gridbed/faults/timeline"
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
	// InForceAtEnd: this fault was still in force when the run ended (a
	// partition never healed, a latency never put back); NotJudged: an
	// earlier one was, so whether the overlay healed after this one
	// cannot be told. Either leaves ExactAfterSeconds null.
	InForceAtEnd bool `json:"in_force_at_end,omitempty"`
	NotJudged    bool `json:"not_judged,omitempty"`
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

// chaos is the run's fault layer (package faults/timeline) as the run
// sees it: the triggered entries read the oracle samples, and the faults
// section of the results lists what it did.
type chaos struct {
	*timeline.Timeline
	remote remoteFaults // the workers' link layers, in a run split across processes
}

// remoteFaults is a driver whose peers publish through fault layers of
// their own, in other processes (emulator/workers): each worker applies
// the link model and the timed link faults to what its peers send, and
// reports their counters, which the run's are the sums of.
type remoteFaults interface {
	RemoteFaults() (link.ChainStats, slow.Stats, uint64)
}

// newChaos installs the fault layer on the driver (before any peer exists).
func newChaos(sc scenario.Scenario, drv Driver, m *metrics.Run, ids *idAlloc, logger *slog.Logger) *chaos {
	c := &chaos{Timeline: timeline.New(sc, drv, m, ids, logger)}
	c.remote, _ = drv.(remoteFaults)
	return c
}

// Link is the link model's counters, the workers' included.
func (c *chaos) Link() link.ChainStats {
	s := c.Timeline.Link()
	if c.remote != nil {
		r, _, _ := c.remote.RemoteFaults()
		s.DroppedPartition += r.DroppedPartition
		s.DroppedLoss += r.DroppedLoss
		s.Duplicated += r.Duplicated
		s.Delayed += r.Delayed
		s.DelayPending += r.DelayPending
	}
	return s
}

// Slow is the slow peers' counters, the workers' included.
func (c *chaos) Slow() slow.Stats {
	s := c.Timeline.Slow()
	if c.remote != nil {
		_, r, _ := c.remote.RemoteFaults()
		s.Served += r.Served
		s.Wait += r.Wait
		s.MaxWait = max(s.MaxWait, r.MaxWait)
		s.Pending += r.Pending
	}
	return s
}

// OutageDropped is the outage switch's drops, the workers' included.
func (c *chaos) OutageDropped() uint64 {
	n := c.Timeline.OutageDropped()
	if c.remote != nil {
		_, _, r := c.remote.RemoteFaults()
		n += r
	}
	return n
}

// Drops are the fault layer's drops, the workers' included.
func (c *chaos) Drops() metrics.Drops {
	d := c.Timeline.Drops()
	if c.remote != nil {
		l, _, o := c.remote.RemoteFaults()
		d.Partition += l.DroppedPartition
		d.Loss += l.DroppedLoss
		d.Duplicated += l.Duplicated
		d.BusOutage += o
	}
	return d
}

// fire applies the triggered entries whose protocol event has happened
// often enough by oracle sample s (timeline.Fire).
func (c *chaos) fire(s Sample) (until time.Duration, fired bool) {
	return c.Fire(s.T, func(event string) uint64 { return s.Events[event] + s.JobEvents[event] })
}

// summary is the faults section of the results.
func (c *chaos) summary() FaultSummary {
	d := c.Drops()
	var events []FaultEvent
	for _, e := range c.Events() {
		events = append(events, FaultEvent{TSeconds: e.At.Seconds(), Kind: e.Kind, Detail: e.Detail})
	}
	var slow *SlowSummary
	if st := c.Slow(); st.Served > 0 || c.ByKind()[scenario.FaultSlow] > 0 {
		slow = &SlowSummary{Messages: st.Served, MaxWaitSeconds: st.MaxWait.Seconds()}
		if st.Served > 0 {
			slow.MeanWaitSeconds = st.Wait.Seconds() / float64(st.Served)
		}
	}
	fs := FaultSummary{
		Slow:    slow,
		Delayed: c.Link().Delayed,
		Events:  slices.SortedStableFunc(slices.Values(events), func(a, b FaultEvent) int { return cmp.Compare(a.TSeconds, b.TSeconds) }),
		ByKind:  c.ByKind(),
		Dropped: map[string]uint64{
			"partition": d.Partition, "loss": d.Loss, "bus_outage": d.BusOutage, "bus_lost": d.BusLost,
		},
		Duplicated: d.Duplicated,
		Corrupted:  d.Corrupted,
	}
	if bw := c.bandwidthSummary(); bw != nil {
		fs.Bandwidth = bw
		fs.Dropped["bandwidth"] = d.Bandwidth
	}
	return fs
}

// idAlloc hands out peer ids in order to everything that adds peers during
// a run (churn joins, crash-restarts), so the drivers see them in sequence,
// and remembers every peer's point.
type idAlloc struct {
	mu     sync.Mutex
	last   core.NodeID
	points []can.Point // by id-1
}

// Next returns the next id, for a peer at p.
func (a *idAlloc) Next(p can.Point) core.NodeID {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last++
	a.points = append(a.points, p)
	return a.last
}

// Point is the point of peer id.
func (a *idAlloc) Point(id core.NodeID) can.Point {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.points[id-1]
}

// bandwidthSummary is the faults.bandwidth section; nil when link.bandwidth
// limits nothing.
func (c *chaos) bandwidthSummary() *BandwidthSummary {
	st, m := c.Bandwidth()
	if m == nil {
		return nil
	}
	b := &BandwidthSummary{
		Classes:          []string{},
		Messages:         st.Held,
		UpQueueMean:      m.Wait[bandwidth.Up].Mean(),
		UpQueueP99:       m.Wait[bandwidth.Up].Quantile(0.99),
		DownQueueMean:    m.Wait[bandwidth.Down].Mean(),
		DownQueueP99:     m.Wait[bandwidth.Down].Quantile(0.99),
		DelayMax:         st.MaxDelay.Seconds(),
		DroppedUp:        st.Dropped[bandwidth.Up],
		DroppedUpBytes:   st.DroppedBytes[bandwidth.Up],
		DroppedDown:      st.Dropped[bandwidth.Down],
		DroppedDownBytes: st.DroppedBytes[bandwidth.Down],
		Pending:          st.Pending,
	}
	if st.Delivered > 0 {
		b.DelayMean = st.Delay.Seconds() / float64(st.Delivered)
	}
	for _, k := range c.BandwidthConfig().Classes {
		b.Classes = append(b.Classes, k.String())
	}
	return b
}
