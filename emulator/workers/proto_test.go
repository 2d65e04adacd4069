package workers

import (
	"testing"

	"github.com/gridbed/gridbed/actors/core"
)

// TestShardsBelongToOneWorker: with the run's connection count a
// multiple of the workers, every address's shard is subscribed by
// exactly the worker that hosts it.
func TestShardsBelongToOneWorker(t *testing.T) {
	for _, tc := range []struct{ perWorker, workers int }{{8, 1}, {4, 2}, {3, 3}, {1, 5}, {2, 7}} {
		conns := Connections(tc.perWorker, tc.workers)
		if conns%tc.workers != 0 {
			t.Fatalf("%+v: %d connections, not a multiple of the workers", tc, conns)
		}
		for id := core.NodeID(1); id <= 200; id++ {
			shard := int(uint64(id) % uint64(conns))
			owners := 0
			for w := range tc.workers {
				if OwnsShard(shard, w, tc.workers) {
					owners++
					if w != Owner(id, tc.workers) {
						t.Errorf("%+v: peer %d on shard %d is subscribed by worker %d, hosted by %d", tc, id, shard, w, Owner(id, tc.workers))
					}
				}
			}
			if owners != 1 {
				t.Errorf("%+v: shard %d of peer %d has %d subscribers, want 1", tc, shard, id, owners)
			}
		}
	}
}
