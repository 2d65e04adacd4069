package link_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/faults/bandwidth"
	"github.com/gridbed/gridbed/faults/link"
)

// TestChainPublishBatchSameDecisions sends the same fan-outs through two
// chains with the same seed, one message by one (Publish) and in batches
// (PublishBatch), under every fault at once: the deliveries — who, when,
// in which order — and the fault counters must be identical, and the batch
// chain must have passed its undelayed messages on as batches.
func TestChainPublishBatchSameDecisions(t *testing.T) {
	cases := []struct {
		name  string
		setup func(c *link.Chain, s link.Scheduler)
	}{
		{"none", func(*link.Chain, link.Scheduler) {}},
		{"loss+dup+cut", func(c *link.Chain, s link.Scheduler) {
			c.Partition.Cut("half", func(a bus.Address) bool { return a < 8 }, false)
			c.Loss.SetLoss(0.2)
			c.Duplicate.SetDuplicate(0.3)
		}},
		{"everything", func(c *link.Chain, s link.Scheduler) {
			c.Partition.Cut("half", func(a bus.Address) bool { return a < 8 }, true)
			c.Loss.SetLoss(0.2)
			c.Duplicate.SetDuplicate(0.1)
			c.Delay.SetLatency(link.Latency{Dist: link.DistExponential, Mean: 30 * time.Millisecond})
		}},
		{"corrupt+flap+links", func(c *link.Chain, s link.Scheduler) {
			c.Duplicate.SetDuplicate(0.2)
			c.Corrupt.SetCorrupt(0.1)
			c.Partition.CutLinks("one-way", link.LinkSets(func(a bus.Address) bool { return a == 3 }, func(a bus.Address) bool { return a < 8 }, true))
			c.Partition.CutLinks("flap", link.NewFlap(s, 7, func(a, b bus.Address) bool { return a%3 == 0 },
				link.Latency{Dist: link.DistExponential, Mean: 40 * time.Millisecond}, link.Latency{Dist: link.DistExponential, Mean: 20 * time.Millisecond}, false).Drops)
			c.Delay.SetLatency(link.Latency{Dist: link.DistExponential, Mean: 5 * time.Millisecond})
		}},
		{"regions only", func(c *link.Chain, s link.Scheduler) {
			// No base latency: messages within a region leave at once,
			// across regions they are delayed — mixed in every fan-out.
			c.Duplicate.SetDuplicate(0.2)
			c.Delay.SetRegions(func(a bus.Address) int { return int(a % 2) }, link.DefaultLatency())
		}},
		{"bandwidth", func(c *link.Chain, _ link.Scheduler) {
			// Half the peers behind thin, queue-limited access links, half
			// unlimited: some messages queue (and some drop), the rest
			// leave in batches.
			c.Duplicate.SetDuplicate(0.1)
			c.Bandwidth.Set(bandwidth.Config{Classes: []bandwidth.Class{{Fraction: 0.5, Up: bandwidth.Mbit, Down: 8 * bandwidth.Mbit}, {Fraction: 0.5}}, Queue: 100})
			c.Delay.SetLatency(link.Latency{Dist: link.DistExponential, Mean: 30 * time.Millisecond})
		}},
	}
	const peers = 16
	for _, tc := range cases {
		for seed := uint64(1); seed <= 3; seed++ {
			var (
				got   [2]string
				stats [2]link.ChainStats
				bw    [2]bandwidth.Stats
				inner [2]bus.Stats
			)
			for mode := range 2 {
				r, c := newChainRig(t, seed, peers)
				r.corrupt = true
				tc.setup(c, r.w)
				for i := range 400 {
					from := uint64(i % peers)
					r.w.At(time.Duration(i)*time.Millisecond, func() {
						var batch []bus.Message
						for k := uint64(1); k < peers; k++ {
							to := (from + k) % peers
							r.seq++
							batch = append(batch, bus.Message{To: bus.Address(to), Data: envelope(t, from, to, r.seq, r.w.Now())})
						}
						if mode == 0 {
							for _, m := range batch {
								if err := c.Publish(m.To, m.Data); err != nil {
									t.Fatal(err)
								}
							}
						} else if err := c.PublishBatch(batch); err != nil {
							t.Fatal(err)
						}
					})
				}
				r.run()
				got[mode], stats[mode], inner[mode], bw[mode] = fmt.Sprint(r.take()), c.Faults(), c.Stats(), c.Bandwidth.Faults()
			}
			if got[0] != got[1] || stats[0] != stats[1] || bw[0] != bw[1] {
				t.Errorf("%s, seed %d: batches changed the run: faults %+v vs %+v, bandwidth %+v vs %+v", tc.name, seed, stats[0], stats[1], bw[0], bw[1])
			}
			if tc.name == "bandwidth" && (bw[0].Held == 0 || bw[0].DroppedTotal() == 0 || bw[0].Held == inner[0].Published) {
				t.Errorf("seed %d: bandwidth %+v, %d published: want some messages held, some dropped, some not held", seed, bw[0], inner[0].Published)
			}
			tr := inner[1].Transport
			if inner[0].Published != inner[1].Published || inner[0].Transport != inner[0].Published {
				t.Errorf("%s, seed %d: inner stats %+v vs %+v", tc.name, seed, inner[0], inner[1])
			}
			if stats[1].Delayed < inner[1].Published && tr >= inner[1].Published {
				t.Errorf("%s, seed %d: %d transport messages for %d messages, %d delayed: nothing batched", tc.name, seed, tr, inner[1].Published, stats[1].Delayed)
			}
		}
	}
}
