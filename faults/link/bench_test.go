package link_test

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
	"github.com/gridbed/gridbed/faults/link"
)

// BenchmarkChainPublish compares a Publish on the raw inner bus (a no-op
// counting bus) with the same Publish through a Chain: all faults off, loss
// and delay on (the scheduler runs the delayed publish at once, so the copy
// and the closure are included), and every fault on; serially and from
// GOMAXPROCS goroutines.
func BenchmarkChainPublish(b *testing.B) {
	msg := envelope(b, 3, 4, 1, 0)
	for _, c := range []struct {
		name  string
		setup func(inner bus.Bus) bus.Bus
	}{
		{"raw", func(inner bus.Bus) bus.Bus { return inner }},
		{"off", func(inner bus.Bus) bus.Bus { return link.NewChain(inner, bustest.NewImmediateClock(), 1) }},
		{"loss+delay", func(inner bus.Bus) bus.Bus {
			c := link.NewChain(inner, bustest.NewImmediateClock(), 1)
			c.Loss.SetLoss(0.1)
			c.Delay.SetLatency(link.DefaultLatency())
			return c
		}},
		{"all", func(inner bus.Bus) bus.Bus {
			c := link.NewChain(inner, bustest.NewImmediateClock(), 1)
			c.Partition.Cut("split", func(a bus.Address) bool { return a < 2 }, false)
			c.Loss.SetLoss(0.1)
			c.Duplicate.SetDuplicate(0.05)
			c.Delay.SetLatency(link.Latency{Dist: link.DistExponential, Mean: 50 * time.Millisecond, Jitter: 5 * time.Millisecond})
			c.Delay.SetRegions(func(a bus.Address) int { return int(a % 4) }, link.DefaultLatency())
			return c
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bb := c.setup(bustest.NewBus(bustest.CountOnly()))
			b.ReportAllocs()
			for b.Loop() {
				bb.Publish(4, msg)
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			bb := c.setup(bustest.NewBus(bustest.CountOnly()))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bb.Publish(4, msg)
				}
			})
		})
	}
}
