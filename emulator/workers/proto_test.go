package workers

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
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

// TestClientShardBelongsToItsWorker: the job client's address travels on
// a shard only ClientWorker subscribes, so its messages reach it.
func TestClientShardBelongsToItsWorker(t *testing.T) {
	for _, tc := range []struct{ perWorker, workers int }{{8, 1}, {4, 2}, {3, 3}, {1, 5}, {2, 7}} {
		conns := Connections(tc.perWorker, tc.workers)
		shard := int(uint64(peer.ClientAddress) % uint64(conns))
		for w := range tc.workers {
			if OwnsShard(shard, w, tc.workers) != (w == ClientWorker(tc.workers)) {
				t.Errorf("%+v: client shard %d: worker %d subscribes %v, ClientWorker %d", tc, shard, w, OwnsShard(shard, w, tc.workers), ClientWorker(tc.workers))
			}
		}
	}
}

// TestJobBatchRoundTrip: a batch of job events and a submission cross
// the control connection whole.
func TestJobBatchRoundTrip(t *testing.T) {
	in := JobBatch{Index: 1, Seq: 3, Through: 7 * time.Second, Final: true, Items: []JobItem{
		{Key: time.Second, Kind: itemEvent, At: time.Second, Event: jobs.Event{Kind: jobs.EvMigrated, Job: 9, Peer: 4, Other: 2, Reason: "queue_push", Hops: 3}},
		{Key: 2 * time.Second, Kind: itemNodeJoined, Node: 5, Point: can.Point{1, 2, 3}, Speed: 1.5, N: 4},
		{Key: 2 * time.Second, Kind: itemResidual, Node: 5, Vec: jobs.Vec{1, 2, 3}},
	}}
	var out JobBatch
	if err := decode(encode(in), &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
	spec := &wire.JobSpec{Id: 4, Req: []uint32{1, 0, 9}, Work: 77, Cid: []uint64{5}}
	var c Cmd
	if err := decode(encode(Cmd{Op: opSubmit, Job: jobOf(spec)}), &c); err != nil {
		t.Fatal(err)
	}
	if got := c.Job.spec(); got.Id != spec.Id || !slices.Equal(got.Req, spec.Req) || got.Work != spec.Work || !slices.Equal(got.Cid, spec.Cid) {
		t.Errorf("submission %+v, want %+v", got, spec)
	}
}
