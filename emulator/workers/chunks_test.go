package workers

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/emulator/bus"
)

// chunkConn is a client of a fresh embedded NATS server.
func chunkConn(t *testing.T) *nats.Conn {
	t.Helper()
	srv, err := bus.ServeEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func testStates(n int) []peer.State {
	out := make([]peer.State, n)
	for i := range out {
		id := core.NodeID(i + 1)
		out[i] = peer.State{Snapshot: overlay.Snapshot{ID: id, Joined: true, Point: can.Point{uint32(i) * 977, 1 << 31},
			Neighbors: []core.NodeID{id + 1, id + 2, id + 3}, NeighborVersions: []uint64{1, 2, 3}}}
	}
	return out
}

// TestChunkedStatesArriveInOrder: states far larger than a chunk go in
// many chunks, none over the limit, and come back whole and in order.
func TestChunkedStatesArriveInOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		states     int
		limit      int
		fewestSent int
	}{
		{"no state: one empty chunk", 0, 1024, 1},
		{"one chunk", 10, 1 << 20, 1},
		{"many small chunks", 3000, 4096, 50},
		{"a state larger than the limit goes alone", 5, 64, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := chunkConn(t)
			states := testStates(tc.states)
			set := newChunkSet()
			var largest int
			sub, err := nc.Subscribe("chunks", func(m *nats.Msg) {
				largest = max(largest, len(m.Data))
				set.add(m.Data)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			n, err := publishChunks(nc, "chunks", states, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			got, err := set.wait(n, 10*time.Second)
			if err != nil {
				t.Fatalf("%d chunks: %v", n, err)
			}
			if n < tc.fewestSent {
				t.Errorf("%d states in %d chunks of at most %d bytes, want at least %d chunks", tc.states, n, tc.limit, tc.fewestSent)
			}
			if tc.limit > 1024 && largest > tc.limit {
				t.Errorf("a chunk of %d bytes, over the limit of %d", largest, tc.limit)
			}
			if len(got) != len(states) {
				t.Fatalf("%d states back, want %d", len(got), len(states))
			}
			for i, s := range got {
				if s.Snapshot.ID != states[i].Snapshot.ID || s.Snapshot.Point[0] != states[i].Snapshot.Point[0] {
					t.Fatalf("state %d is peer %d at %v, want peer %d at %v", i, s.Snapshot.ID, s.Snapshot.Point, states[i].Snapshot.ID, states[i].Snapshot.Point)
				}
			}
		})
	}
}

// TestMissingChunkNamed: a chunk that never arrives fails the collect
// with an error naming it — whether a later one arrived or not.
func TestMissingChunkNamed(t *testing.T) {
	chunk := func(seq int) []byte { return encode(StateChunk{Seq: seq, States: testStates(2)}) }
	for _, tc := range []struct {
		name string
		seqs []int
		of   int
		want string
	}{
		{"a gap", []int{0, 1, 3}, 4, "chunk 3 arrived after chunk 1: chunk 2 is missing"},
		{"the last never came", []int{0, 1}, 3, "2 of 3 chunks arrived within 50ms: chunk 2 is missing"},
		{"none came", nil, 2, "0 of 2 chunks arrived within 50ms: chunk 0 is missing"},
		{"asked again: chunk 0 starts afresh", []int{0, 1, 0, 1, 2}, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newChunkSet()
			for _, s := range tc.seqs {
				set.add(chunk(s))
			}
			states, err := set.wait(tc.of, 50*time.Millisecond)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.want == "" && len(states) != 2*tc.of:
				t.Errorf("%d states, want %d", len(states), 2*tc.of)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
