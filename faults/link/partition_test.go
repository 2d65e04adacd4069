package link_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/faults/link"
)

// low is the side {0, 1} of peers 0..3.
func low(a bus.Address) bool { return a < 2 }

// sendAll sends one message between every ordered pair of peers 0..n-1 and
// returns the set of pairs delivered, as "from→to".
func sendAll(r *rig, b bus.Bus, n int) []string {
	r.t.Helper()
	for f := range n {
		for to := range n {
			if f != to {
				r.send(b, uint64(f), uint64(to))
			}
		}
	}
	r.run()
	var got []string
	for _, d := range r.take() {
		got = append(got, fmt.Sprintf("%d→%d", d.from, d.to))
	}
	slices.Sort(got)
	return got
}

var allPairs = []string{"0→1", "0→2", "0→3", "1→0", "1→2", "1→3", "2→0", "2→1", "2→3", "3→0", "3→1", "3→2"}

func TestPartition(t *testing.T) {
	const seed = 1
	for _, c := range []struct {
		name  string
		setup func(p *link.Partition)
		want  []string
	}{
		{"none", func(p *link.Partition) {}, allPairs},
		{"symmetric", func(p *link.Partition) { p.Cut("split", low, false) },
			[]string{"0→1", "1→0", "2→3", "3→2"}},
		{"one-way", func(p *link.Partition) { p.Cut("split", low, true) },
			[]string{"0→1", "1→0", "2→0", "2→1", "2→3", "3→0", "3→1", "3→2"}},
		{"two cuts", func(p *link.Partition) {
			p.Cut("split", low, true)
			p.Cut("isolate 3", func(a bus.Address) bool { return a == 3 }, false)
		}, []string{"0→1", "1→0", "2→0", "2→1"}},
		{"replaced", func(p *link.Partition) {
			p.Cut("split", low, false)
			p.Cut("split", low, true) // same name: replaces the symmetric cut
		}, []string{"0→1", "1→0", "2→0", "2→1", "2→3", "3→0", "3→1", "3→2"}},
		{"healed", func(p *link.Partition) {
			p.Cut("split", low, false)
			p.Cut("isolate 3", func(a bus.Address) bool { return a == 3 }, false)
			if !p.Heal("split") {
				t.Error("Heal(split) = false for an active cut")
			}
			if p.Heal("nope") {
				t.Error("Heal(nope) = true for an unknown cut")
			}
		}, []string{"0→1", "0→2", "1→0", "1→2", "2→0", "2→1"}},
		{"heal all", func(p *link.Partition) {
			p.Cut("split", low, false)
			p.Cut("isolate 3", func(a bus.Address) bool { return a == 3 }, false)
			p.HealAll()
		}, allPairs},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, seed)
			p := link.NewPartition(r.w)
			r.register(p, 4)
			c.setup(p)
			got := sendAll(r, p, 4)
			if !slices.Equal(got, c.want) {
				t.Errorf("seed %d: cuts %v: delivered %v, want %v", seed, p.Cuts(), got, c.want)
			}
			if want := uint64(len(allPairs) - len(c.want)); p.Faults().Dropped != want {
				t.Errorf("seed %d: Dropped = %d, want %d", seed, p.Faults().Dropped, want)
			}
			if s := p.Stats(); s.Published != uint64(len(c.want)) {
				t.Errorf("seed %d: inner Published = %d, want %d (only what got through)", seed, s.Published, len(c.want))
			}
		})
	}
}

// TestPartitionHealRestores runs one partition through its life: open,
// cut, healed.
func TestPartitionHealRestores(t *testing.T) {
	const seed = 2
	r := newRig(t, seed)
	p := link.NewPartition(r.w)
	r.register(p, 4)
	if got := sendAll(r, p, 4); !slices.Equal(got, allPairs) {
		t.Fatalf("seed %d: before the cut: %v", seed, got)
	}
	p.Cut("split", low, false)
	if got := sendAll(r, p, 4); len(got) != 4 {
		t.Fatalf("seed %d: during the cut: %v, want only the 4 same-side pairs", seed, got)
	}
	p.Heal("split")
	if got := sendAll(r, p, 4); !slices.Equal(got, allPairs) {
		t.Fatalf("seed %d: after healing: %v", seed, got)
	}
	if len(p.Cuts()) != 0 {
		t.Errorf("cuts after heal: %v", p.Cuts())
	}
	if f := p.Faults(); f.Dropped != 8 {
		t.Errorf("seed %d: Dropped = %d, want 8", seed, f.Dropped)
	}
}

func TestPartitionUnreadableSenderPasses(t *testing.T) {
	r := newRig(t, 3)
	p := link.NewPartition(r.w)
	var raw [][]byte
	p.Register(2, func(_ bus.Address, data []byte) { raw = append(raw, data) })
	p.Cut("everything", func(bus.Address) bool { return true }, false) // drops nothing: all on one side
	p.Cut("split", low, false)
	for _, data := range [][]byte{{0xff}, envelope(t, 0, 2, 1, 0)} {
		if err := p.Publish(2, data); err != nil {
			t.Fatal(err)
		}
	}
	r.run()
	if len(raw) != 1 || raw[0][0] != 0xff {
		t.Errorf("delivered %q, want only the unreadable message", raw)
	}
	if f := p.Faults(); f.Unreadable != 1 || f.Dropped != 1 {
		t.Errorf("Faults = %+v, want 1 unreadable, 1 dropped", f)
	}
}
