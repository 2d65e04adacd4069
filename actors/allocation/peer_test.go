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

// gossips is the MsgGossip messages among out.
func gossips(out []Out) (n int) {
	for _, o := range out {
		if o.Msg.Kind == MsgGossip {
			n++
		}
	}
	return n
}

// TestPeerGossipOnChange: a machine gossips at a period only if its load
// or jobs changed since its last gossip — a change undone meanwhile
// counts — and at least every GossipRefresh-th period; k = 1 gossips at
// every period.
func TestPeerGossipOnChange(t *testing.T) {
	speeds := Grid(GridSynthetic)
	p := NewPeer(0, speeds[0], []int{1, 2}, speeds, Greedy, None, 0.1, 3)
	if p.GossipRefresh != DefaultGossipRefresh {
		t.Fatalf("GossipRefresh %d, want the default %d", p.GossipRefresh, DefaultGossipRefresh)
	}
	sent := func(at time.Duration) int {
		p.Gossip(at)
		out, _, _ := p.Ready()
		return gossips(out)
	}
	var got []int
	for k := 1; k <= 6; k++ {
		got = append(got, sent(time.Duration(k)*10*time.Second))
	}
	// Idle from the start: silent for 5 periods, the 6th a refresh.
	if want := []int{0, 0, 0, 0, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("gossips of an unchanged machine at periods 1–6: %v, want %v", got, want)
	}
	p.Step(61*time.Second, Msg{Kind: MsgAssign, Job: 1, Comp: Compositions[0], Remaining: 1e12})
	if n := sent(70 * time.Second); n != 2 {
		t.Fatalf("after a job arrived: %d gossips, want 2", n)
	}
	// A load raised and set back between two periods is still news.
	p.Exec.SetLoad(71*time.Second, 0.5)
	p.Exec.SetLoad(72*time.Second, 0)
	if n := sent(80 * time.Second); n != 2 {
		t.Fatalf("after the load changed and changed back: %d gossips, want 2", n)
	}
	if n := sent(90 * time.Second); n != 0 {
		t.Fatalf("nothing changed: %d gossips, want 0", n)
	}
	p.GossipRefresh = 1
	if n := sent(100 * time.Second); n != 2 {
		t.Fatalf("k = 1: %d gossips, want 2", n)
	}
	if p.GossipSkipped != 6 {
		t.Fatalf("%d periods skipped, want 6", p.GossipSkipped)
	}
}

// TestPeerCrash: a crashed machine's jobs stop and its completion timer
// finds nothing done; the jobs and the owner-load change arriving while
// it is down wait; on restart its jobs run on from where they stopped,
// its view of its neighbours is gone and it gossips. A job sent to the
// down machine and refused is placed again on the best of the sender and
// its other neighbours, the down machine unavailable until it gossips.
func TestPeerCrash(t *testing.T) {
	speeds := Grid(GridSynthetic)
	p := NewPeer(0, speeds[0], []int{1, 3}, speeds, Greedy, None, 0.1, 3)
	p.Step(0, Msg{Kind: MsgGossip, From: MachineAddr(1), Load: 0.5, List: []Entry{{ID: 9, Comp: Compositions[0]}}})
	// C0 alone on S0: 2·10⁵ operations a second; 10⁶ take 5 s.
	p.Step(0, Msg{Kind: MsgAssign, Job: 1, Comp: Compositions[0], Remaining: 1e6})
	p.Ready()
	p.Crash(2 * time.Second)
	p.Tick(10 * time.Second)
	p.Submit(3*time.Second, Job{ID: 2, Comp: Compositions[0]}, 1e6)
	p.SetLoad(4*time.Second, 0.5)
	if out, _, _ := p.Ready(); p.Completed != 0 || len(out) != 0 || len(p.Exec.Jobs) != 1 || p.Exec.Load != 0 || !p.Down() {
		t.Fatalf("while down: %d completed, %d messages, %d jobs, load %v", p.Completed, len(out), len(p.Exec.Jobs), p.Exec.Load)
	}
	p.Restart(100 * time.Second)
	// Machine 1's load and job 9 are forgotten; job 2 goes to machine 1,
	// idle as far as machine 0 knows now (1e5 against S0's 5e4 at λ 0.5).
	if v := p.View(); p.Down() || p.Exec.Load != 0.5 || p.Placed != 1 || v[0].Load != 0 || len(v[0].Jobs) != 1 || v[0].Jobs[0].ID != 2 || len(v[1].Jobs) != 0 {
		t.Fatalf("after restart: down %v, load %v, %d placed, view %+v", p.Down(), p.Exec.Load, p.Placed, p.View())
	}
	// Job 1 had 6·10⁵ operations left at the crash.
	if r := p.Exec.Jobs[0]; r.ID != 1 || !near(r.Remaining, 6e5) {
		t.Fatalf("job 1 after restart: %+v, want 6e5 operations left", r)
	}
	p.Gossip(110 * time.Second)
	if out, _, _ := p.Ready(); gossips(out) != 2 {
		t.Fatalf("a restarted machine's first period: %d gossips, want 2", gossips(out))
	}

	// Machine 3 (S3) is down: a C4 job (disk-heavy: S3's) refused there
	// by machine 2 goes to machine 0, the best of the rest for it
	// (cost 8.01e-4 on S0, 8.02e-4 on S2).
	q := NewPeer(2, speeds[2], []int{0, 3}, speeds, Greedy, None, 0.1, 3)
	q.Refused(0, Msg{Kind: MsgState, Job: 5, Comp: Compositions[4], Remaining: 1e5}, MachineAddr(3))
	out, _, _ := q.Ready()
	if len(out) != 1 || out[0].To != MachineAddr(0) || out[0].Msg.Kind != MsgState || out[0].Msg.Job != 5 || out[0].Msg.Remaining != 1e5 ||
		q.View()[1].Load != 1 || q.Replaced != 1 {
		t.Fatalf("refused at machine 3: sent %+v, view %+v, %d replaced", out, q.View(), q.Replaced)
	}
}
