package allocation

import (
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
)

// TestLayout: the machines' zones tile the space without overlap, and
// the neighbour relation is symmetric, abutting and connected.
func TestLayout(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		pts := make([]can.Point, 70)
		for i := range pts {
			pts[i] = can.Point{rng.Uint32(), rng.Uint32()}
		}
		zones, nbs, err := Layout(pts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		vol := new(big.Int)
		for i, z := range zones {
			if !z.Contains(pts[i]) {
				t.Errorf("seed %d: machine %d's zone %v lacks its point", seed, i, z)
			}
			vol.Add(vol, z.Volume())
			for k := i + 1; k < len(zones); k++ {
				if can.Overlaps(z, zones[k]) {
					t.Errorf("seed %d: zones %d and %d overlap", seed, i, k)
				}
			}
			for _, k := range nbs[i] {
				if _, _, ok := can.Abut(z, zones[k]); !ok || !slices.Contains(nbs[k], i) {
					t.Errorf("seed %d: %d lists %d as a neighbour, abutting %v, listed back %v", seed, i, k, ok, slices.Contains(nbs[k], i))
				}
			}
			if !slices.IsSorted(nbs[i]) || len(nbs[i]) == 0 {
				t.Errorf("seed %d: machine %d's neighbours %v", seed, i, nbs[i])
			}
		}
		if vol.Cmp(can.SpaceVolume(2)) != 0 {
			t.Errorf("seed %d: the zones cover %v of %v", seed, vol, can.SpaceVolume(2))
		}
		reached, queue := map[int]bool{0: true}, []int{0}
		for len(queue) > 0 {
			for _, k := range nbs[queue[0]] {
				if !reached[k] {
					reached[k] = true
					queue = append(queue, k)
				}
			}
			queue = queue[1:]
		}
		if len(reached) != len(zones) {
			t.Errorf("seed %d: %d of %d machines reachable over neighbours", seed, len(reached), len(zones))
		}
	}
	if _, _, err := Layout([]can.Point{{5, 5}, {5, 5}}); err == nil {
		t.Error("two equal points laid out")
	}
}

// TestPeerPlacesAsCentral: a peer whose neighbours are every other
// machine, its view fresh (every placement is its own), places a burst
// exactly as the central allocator does, under every scheme.
func TestPeerPlacesAsCentral(t *testing.T) {
	speeds := Grid(GridSynthetic)
	for _, s := range []Scheme{Greedy, Social, MinNum} {
		p := NewPeer(2, speeds[2], []int{0, 1, 3}, speeds, s, None, 0.1, 3)
		a := NewAllocator(s, None, 0.1, 3, speeds)
		for i := range 40 {
			j := Job{ID: uint64(i + 1), Comp: Compositions[i%5]}
			p.Submit(0, j, 1e6)
			a.Submit(0, j, 1e6)
		}
		got := make([][]uint64, len(speeds))
		out, _, _ := p.Ready()
		for _, o := range out {
			got[o.To-MachineAddr(0)] = append(got[o.To-MachineAddr(0)], o.Msg.Job)
		}
		for _, r := range p.Exec.Jobs {
			got[2] = append(got[2], r.ID)
		}
		want := make([][]uint64, len(speeds))
		for _, o := range a.Ready() {
			want[o.To-MachineAddr(0)] = append(want[o.To-MachineAddr(0)], o.Msg.Job)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: the peer placed %v, the central allocator %v", s, got, want)
		}
	}
}

// TestPeerGossipAndRelocation: gossip replaces a neighbour's entry in the
// view; an owner-load rise moves jobs out of the machine (MsgState
// straight to the neighbour), and a job's end pulls one in from a
// neighbour (MsgMigrate to it) — never anything to a central allocator.
func TestPeerGossipAndRelocation(t *testing.T) {
	speeds := Grid(GridSynthetic)
	p := NewPeer(0, speeds[0], []int{1}, speeds, Greedy, Greedy, 0.1, 3)
	g := Msg{Kind: MsgGossip, From: MachineAddr(1), Load: 0.25, List: []Entry{{ID: 7, Comp: Compositions[0]}, {ID: 8, Comp: Compositions[0]}}}
	if back, err := Decode(g.Encode(nil)); err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("gossip round trip: %+v, %v", back, err)
	}
	p.Step(0, g)
	if v := p.View()[0]; v.Load != 0.25 || len(v.Jobs) != 2 {
		t.Fatalf("view after gossip: %+v", v)
	}
	for i := range 4 {
		p.Step(0, Msg{Kind: MsgAssign, Job: uint64(100 + i), Comp: Compositions[0], Remaining: 1e7})
	}
	p.SetLoad(time.Second, 0.95)
	out, _, _ := p.Ready()
	states := 0
	for _, o := range out {
		if o.To == AllocatorAddr {
			t.Fatalf("a peer wrote to the central allocator: %+v", o)
		}
		if o.Msg.Kind == MsgState && o.To == MachineAddr(1) {
			states++
		}
	}
	if states == 0 || p.Relocations != states || len(p.Exec.Jobs) != 4-states {
		t.Fatalf("after the load rose: %d states sent, %d relocations, %d jobs left", states, p.Relocations, len(p.Exec.Jobs))
	}
	// Back to an idle owner; the remaining jobs end, and the neighbour's
	// two (as last heard, plus the ones sent over) are pulled in.
	p.SetLoad(2*time.Second, 0)
	p.Ready()
	p.Tick(1000 * time.Hour)
	out, _, _ = p.Ready()
	pulls := 0
	for _, o := range out {
		if o.Msg.Kind == MsgMigrate && o.To == MachineAddr(1) && o.Msg.To == MachineAddr(0) {
			pulls++
		}
	}
	if p.Completed == 0 || pulls == 0 {
		t.Fatalf("after the jobs ended: %d completed, %d pulled in (%+v)", p.Completed, pulls, out)
	}
}
