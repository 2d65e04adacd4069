package peer

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/metrics"
)

// batchIO is an IO with bus.fanout batched that keeps nothing.
type batchIO struct{ envs int }

func (*batchIO) Now() time.Duration                                  { return time.Second }
func (*batchIO) Publish(core.NodeID, []byte)                         {}
func (*batchIO) SetTimer(core.NodeID, core.TimerKind, time.Duration) {}
func (*batchIO) Batched() bool                                       { return true }
func (b *batchIO) PublishBatch(envs []Envelope)                      { b.envs += len(envs) }

// vanillaHeartbeat is a heartbeat carrying n neighbors' zones in d
// dimensions, to every one of them: a vanilla heartbeat's fan-out (002
// §4.2), about 100 bytes per neighbor entry.
func vanillaHeartbeat(n, d int) []core.Out {
	zone := func(i int) *wire.Zone {
		z := &wire.Zone{}
		for k := range d {
			z.Lo = append(z.Lo, uint64(i*1000+k)<<40)
			z.Hi = append(z.Hi, uint64(i*1000+k+1)<<40)
		}
		return z
	}
	hb := &wire.Heartbeat{Self: &wire.NodeInfo{Id: 1, Zone: zone(0), Version: 3}}
	for i := 1; i <= n; i++ {
		hb.Neighbors = append(hb.Neighbors, &wire.NodeInfo{Id: uint64(i + 1), Zone: zone(i), Version: 7})
	}
	out := make([]core.Out, n)
	for i := range out {
		out[i] = core.Out{To: core.NodeID(i + 2), Msg: hb}
	}
	return out
}

// BenchmarkPublishBatchedHeartbeat: one peer's vanilla heartbeat to its
// 32 neighbors (d = 4 plus the virtual dimension) encoded as one batch
// for bus.fanout batched.
func BenchmarkPublishBatchedHeartbeat(b *testing.B) {
	msgs := vanillaHeartbeat(32, 5)
	io, tr := &batchIO{}, metrics.NewTraffic()
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		publishAs(io, tr, 1, &seq, msgs, nil, false)
	}
	if io.envs == 0 {
		b.Fatal("nothing published")
	}
}
