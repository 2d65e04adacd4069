package sim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/chord"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/rnt"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/sim"
)

// checkRNT asserts, over the live peers' states, that the Chord ring is
// exact — every successor the true one, no finger on a departed peer (gone),
// so every lookup ends at the right node — and that every peer's parent in
// the Rendezvous Node Tree is the one 003 §5.1's rule gives (actors/rnt).
// Fingers refreshed while the ring was still repairing may point to a live
// node that is not the exact one (harmless to lookups: Chord's correctness
// rests on the successors); they are counted and logged.
func checkRNT(t *testing.T, seed uint64, when string, st []peer.State, gone map[core.NodeID]bool) {
	t.Helper()
	var ids []core.NodeID
	for _, s := range st {
		if s.RNT != nil {
			ids = append(ids, s.RNT.Ring.ID)
		}
	}
	slices.SortFunc(ids, func(a, b core.NodeID) int {
		if chord.Ring(a) < chord.Ring(b) {
			return -1
		}
		return 1
	})
	succOf := func(key uint64) core.NodeID {
		i, _ := slices.BinarySearchFunc(ids, key, func(id core.NodeID, k uint64) int {
			if chord.Ring(id) < k {
				return -1
			}
			if chord.Ring(id) > k {
				return 1
			}
			return 0
		})
		return ids[i%len(ids)]
	}
	badRing, badFingers, deadFingers, badParents := 0, 0, 0, 0
	for _, s := range st {
		if s.RNT == nil {
			continue
		}
		r := s.RNT.Ring
		self := chord.Ring(r.ID)
		if !r.Joined || len(r.Succs) == 0 || r.Succs[0] != succOf(self+1) {
			badRing++
			if badRing <= 3 {
				t.Errorf("seed %d %s: peer %d: succs %v, want successor %d", seed, when, r.ID, r.Succs, succOf(self+1))
			}
		}
		for i, f := range r.Fingers {
			switch {
			case gone[f]:
				deadFingers++
			case f != succOf(self+1<<uint(i)):
				badFingers++
			}
		}
		want := core.NodeID(0)
		for key := self; key != 0; {
			key &= key - 1
			if s := succOf(key); s != r.ID {
				want = s
				break
			}
		}
		if s.RNT.Parent != want || s.RNT.Root != (want == 0) {
			badParents++
			if badParents <= 3 {
				t.Errorf("seed %d %s: peer %d: parent %d (root %v), want %d", seed, when, r.ID, s.RNT.Parent, s.RNT.Root, want)
			}
		}
	}
	t.Logf("seed %d %s: %d peers, %d of %d fingers not exact", seed, when, len(ids), badFingers, len(ids)*chord.Bits)
	if badRing+deadFingers+badParents > 0 || badFingers > len(ids)*chord.Bits/50 {
		t.Fatalf("seed %d %s: %d of %d peers with a wrong successor, %d fingers on departed peers, %d not exact, %d wrong parents", seed, when, badRing, len(ids), deadFingers, badFingers, badParents)
	}
}

// TestRNTRingUnderChurn: 200 peers with the RNT scheme join over a
// minute; their Chord ring and Rendezvous Node Tree are exact within
// minutes, and again after a fifth of them depart at once (half crashing,
// half leaving without a word to the ring).
func TestRNTRingUnderChurn(t *testing.T) {
	emutest.SkipUnderRace(t, "two 200-node Chord rings under churn")
	const n, dims = 200, 3
	period := 10 * time.Second
	for _, seed := range []uint64{1, 2} {
		nodes, err := population.Generate(population.Mixed, n, dims, seed)
		if err != nil {
			t.Fatal(err)
		}
		setup := &peer.JobSetup{
			Config: func(can.Point) jobs.Config {
				return jobs.Config{Scheme: jobs.SchemeRNT, Period: period, FailAfter: 3, Speed: 1, Cores: 1}
			},
			RNT: &peer.RNTSetup{Config: rnt.Config{Chord: chord.Config{Period: period}}, Founder: 1},
		}
		d := sim.NewDriver(sim.DriverOptions{Seed: seed, Overlay: overlay.Config{HeartbeatPeriod: period}, Latency: 50 * time.Millisecond, Jobs: setup})
		for i, nd := range nodes {
			if err := d.Spawn(core.NodeID(i+1), nd.Point, time.Duration(i)*time.Minute/n); err != nil {
				t.Fatal(err)
			}
		}
		d.Start()
		// 64 fingers, one refreshed per period: every finger is fresh
		// after 64 periods.
		settle := 70 * period
		if err := d.AdvanceTo(context.Background(), time.Minute+settle); err != nil {
			t.Fatal(err)
		}
		st, _ := d.Collect(context.Background())
		checkRNT(t, seed, "after the joins", st, nil)
		gone := map[core.NodeID]bool{}
		for i := range n / 5 {
			gone[d.Depart(i%2 == 0)] = true
		}
		if err := d.AdvanceTo(context.Background(), time.Minute+2*settle); err != nil {
			t.Fatal(err)
		}
		st, _ = d.Collect(context.Background())
		st = slices.DeleteFunc(st, func(s peer.State) bool { return s.RNT == nil || gone[s.RNT.Ring.ID] })
		if len(st) != n-n/5 || gone[0] {
			t.Fatalf("seed %d: %d peers after the departures, want %d", seed, len(st), n-n/5)
		}
		checkRNT(t, seed, "after 20% departed", st, gone)
	}
}
