package emulator

import (
	"math"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// RegionLatencySummary is what a run with a measured latency matrix
// (link.latency_matrix) measured: the regions, their weights and how many
// of the initial peers each got, and per ordered pair of regions the
// matrix's median and jitter beside the one-way latency of the messages
// delivered between them — from the sending time in each envelope to the
// delivery (on the emulator the bus and the mailbox add their wall time,
// times the time scale).
type RegionLatencySummary struct {
	Source  string              `json:"source"`
	Regions []RegionShare       `json:"regions"`
	Pairs   []RegionPairLatency `json:"pairs"`
}

// RegionShare is one region of the matrix.
type RegionShare struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Peers  int     `json:"peers"`
}

// RegionPairLatency is one ordered pair of regions: the matrix's one-way
// delay and what the delivered messages took. The figures are null when
// no message went from From to To.
type RegionPairLatency struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	MedianMs float64  `json:"median_ms"`
	JitterMs float64  `json:"jitter_ms"`
	Messages uint64   `json:"messages"`
	MeanMs   *float64 `json:"mean_ms"`
	MinMs    *float64 `json:"min_ms"`
	MaxMs    *float64 `json:"max_ms"`
}

// regionMeter measures the one-way latency of every delivered message by
// pair of regions (a delivery tap; safe for concurrent use).
type regionMeter struct {
	region func(bus.Address) int
	n      int

	mu    sync.Mutex
	count []uint64
	sum   []float64 // seconds
	min   []float64
	max   []float64
}

func newRegionMeter(n int, region func(bus.Address) int) *regionMeter {
	m := &regionMeter{region: region, n: n, count: make([]uint64, n*n), sum: make([]float64, n*n), min: make([]float64, n*n), max: make([]float64, n*n)}
	for i := range m.min {
		m.min[i] = math.Inf(1)
	}
	return m
}

// Delivered records one message delivered at at (emulated time).
func (m *regionMeter) Delivered(at time.Duration, to bus.Address, data []byte) {
	h, ok := wire.PeekHeader(data)
	if !ok || h.SentAt < 0 || time.Duration(h.SentAt) > at {
		return
	}
	rf, rt := m.region(bus.Address(h.From)), m.region(to)
	if rf < 0 || rf >= m.n || rt < 0 || rt >= m.n {
		return
	}
	d := (at - time.Duration(h.SentAt)).Seconds()
	k := rf*m.n + rt
	m.mu.Lock()
	m.count[k]++
	m.sum[k] += d
	m.min[k] = min(m.min[k], d)
	m.max[k] = max(m.max[k], d)
	m.mu.Unlock()
}

// summary is the section for sc's matrix, its regions counting the
// initial population (ids 1..peers.count).
func (m *regionMeter) summary(sc scenario.Scenario) *RegionLatencySummary {
	mx := sc.Link.Matrix
	s := &RegionLatencySummary{Source: sc.Link.LatencyMatrix}
	for i, name := range mx.Regions {
		s.Regions = append(s.Regions, RegionShare{Name: name, Weight: mx.Weights[i]})
	}
	for id := 1; id <= sc.Peers.Count; id++ {
		if r := m.region(bus.Address(id)); r >= 0 && r < len(s.Regions) {
			s.Regions[r].Peers++
		}
	}
	ms := func(x float64) *float64 { v := x * 1000; return &v }
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, from := range mx.Regions {
		for j, to := range mx.Regions {
			k := i*m.n + j
			p := RegionPairLatency{From: from, To: to, MedianMs: float64(mx.Median[i][j]) / float64(time.Millisecond),
				JitterMs: float64(mx.Jitter[i][j]) / float64(time.Millisecond), Messages: m.count[k]}
			if m.count[k] > 0 {
				p.MeanMs, p.MinMs, p.MaxMs = ms(m.sum[k]/float64(m.count[k])), ms(m.min[k]), ms(m.max[k])
			}
			s.Pairs = append(s.Pairs, p)
		}
	}
	return s
}
