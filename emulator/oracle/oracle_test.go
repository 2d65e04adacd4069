package oracle

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
)

const (
	full    = can.Span
	half    = can.Span / 2
	quarter = can.Span / 4
)

func zone2(x0, x1, y0, y1 uint64) can.Zone {
	return can.Zone{Lo: []uint64{x0, y0}, Hi: []uint64{x1, y1}}
}

func snap(id core.NodeID, z can.Zone, nbrs ...core.NodeID) overlay.Snapshot {
	nbrs = slices.Clone(nbrs)
	slices.Sort(nbrs)
	return overlay.Snapshot{ID: id, Joined: true, Zone: z, Version: 1, Neighbors: nbrs, NeighborVersions: make([]uint64, len(nbrs))}
}

// tiling4 is a correct 2-D tiling with exact tables: 1 owns the left half,
// 2 = [½,1)×[0,¼), 3 = [½,1)×[¼,½), 4 = [½,1)×[½,1). True neighbors:
// 1–2, 1–3, 1–4, 2–3, 3–4 (2 and 4 do not touch).
func tiling4() []overlay.Snapshot {
	return []overlay.Snapshot{
		snap(1, zone2(0, half, 0, full), 2, 3, 4),
		snap(2, zone2(half, full, 0, quarter), 1, 3),
		snap(3, zone2(half, full, quarter, half), 1, 2, 4),
		snap(4, zone2(half, full, half, full), 1, 3),
	}
}

// quadrants is the regular 4-zone tiling, each zone with its two neighbors.
func quadrants() []overlay.Snapshot {
	return []overlay.Snapshot{
		snap(1, zone2(0, half, 0, half), 2, 3),
		snap(2, zone2(half, full, 0, half), 1, 4),
		snap(3, zone2(0, half, half, full), 1, 4),
		snap(4, zone2(half, full, half, full), 2, 3),
	}
}

func without(s overlay.Snapshot, id core.NodeID) overlay.Snapshot {
	i, ok := slices.BinarySearch(s.Neighbors, id)
	if !ok {
		panic("not a neighbor")
	}
	s.Neighbors = slices.Delete(slices.Clone(s.Neighbors), i, i+1)
	s.NeighborVersions = s.NeighborVersions[:len(s.Neighbors)]
	return s
}

func with(s overlay.Snapshot, id core.NodeID) overlay.Snapshot {
	s.Neighbors = append(slices.Clone(s.Neighbors), id)
	slices.Sort(s.Neighbors)
	s.NeighborVersions = make([]uint64, len(s.Neighbors))
	return s
}

func TestCorrectTilings(t *testing.T) {
	for name, c := range map[string]struct {
		snaps []overlay.Snapshot
		mean  float64
	}{
		"uneven":    {tiling4(), 10.0 / 4},
		"quadrants": {quadrants(), 2},
	} {
		rep := Check(c.snaps, 2)
		want := Report{Members: 4, NeighborsMean: c.mean, TrueNeighborsMean: c.mean}
		if rep != want {
			t.Errorf("%s: %+v, want %+v", name, rep, want)
		}
	}
}

func TestMissingEntryIsOneBrokenLink(t *testing.T) {
	s := tiling4()
	s[0] = without(s[0], 2) // 1 lacks 2; 2 still lists 1
	rep := Check(s, 2)
	if rep.BrokenLinks != 1 || rep.StaleLinks != 0 || rep.ZoneGaps != 0 || rep.ZoneOverlaps != 0 {
		t.Fatalf("%+v", rep)
	}
	if rep.NeighborsMean != 9.0/4 || rep.TrueNeighborsMean != 10.0/4 {
		t.Fatalf("means %v %v", rep.NeighborsMean, rep.TrueNeighborsMean)
	}
	// Both directions missing: two directed broken links.
	s[1] = without(s[1], 1)
	if rep := Check(s, 2); rep.BrokenLinks != 2 || rep.StaleLinks != 0 {
		t.Fatalf("both directions: %+v", rep)
	}
}

func TestWrongEntryIsOneStaleLink(t *testing.T) {
	s := tiling4()
	s[1] = with(s[1], 4) // 2 and 4 do not abut
	rep := Check(s, 2)
	if rep.StaleLinks != 1 || rep.BrokenLinks != 0 {
		t.Fatalf("%+v", rep)
	}
	if rep.NeighborsMean != 11.0/4 || rep.TrueNeighborsMean != 10.0/4 {
		t.Fatalf("means %v %v", rep.NeighborsMean, rep.TrueNeighborsMean)
	}
	// An entry naming a peer that is not a member is stale too.
	s = tiling4()
	s[2] = with(s[2], 99)
	if rep := Check(s, 2); rep.StaleLinks != 1 || rep.BrokenLinks != 0 {
		t.Fatalf("non-member entry: %+v", rep)
	}
}

func TestRemovedZoneLeavesGap(t *testing.T) {
	cases := []struct {
		name     string
		snaps    []overlay.Snapshot
		remove   int
		gaps     int
		fraction float64
		stale    int
	}{
		// Without 4: 1's right face is half uncovered, 3's upper face bare.
		{"uneven-4", tiling4(), 3, 2, 0.25, 2},
		// Without 3: 1's right face, 2's upper and 4's lower faces.
		{"uneven-3", tiling4(), 2, 3, 0.125, 3},
		{"quadrant-1", quadrants(), 0, 2, 0.25, 2},
	}
	for _, c := range cases {
		s := slices.Delete(c.snaps, c.remove, c.remove+1)
		rep := Check(s, 2)
		if rep.Members != 3 || rep.ZoneGaps != c.gaps || rep.UncoveredFraction != c.fraction || rep.ZoneOverlaps != 0 ||
			rep.StaleLinks != c.stale || rep.BrokenLinks != 0 {
			t.Errorf("%s: %+v, want %d gaps, %v uncovered, %d stale", c.name, rep, c.gaps, c.fraction, c.stale)
		}
	}
}

func TestOverlappingZones(t *testing.T) {
	s := append(tiling4(), snap(5, zone2(0, quarter, 0, quarter)))
	if rep := Check(s, 2); rep.ZoneOverlaps != 1 || rep.Members != 5 {
		t.Fatalf("zone inside another: %+v", rep)
	}
	// Straddling the boundary of 1 and 2: overlaps both.
	s = append(tiling4(), snap(5, zone2(quarter, 3*quarter, 0, quarter)))
	if rep := Check(s, 2); rep.ZoneOverlaps != 2 {
		t.Fatalf("zone across two: %+v", rep)
	}
	// The same zone twice.
	s = append(tiling4(), snap(5, zone2(half, full, half, full)))
	if rep := Check(s, 2); rep.ZoneOverlaps != 1 {
		t.Fatalf("duplicate zone: %+v", rep)
	}
	// Touching is not overlapping.
	if rep := Check(tiling4(), 2); rep.ZoneOverlaps != 0 {
		t.Fatalf("tiling: %+v", rep)
	}
}

func TestNonMembersIgnored(t *testing.T) {
	s := tiling4()
	out := snap(7, can.Whole(2), 1, 2, 3, 4)
	out.Joined = false
	wrongDims := snap(8, can.Whole(3), 1)
	invalid := snap(9, zone2(half, half, 0, full), 1)
	rep := Check(append(s, out, wrongDims, invalid), 2)
	if want := Check(tiling4(), 2); rep != want {
		t.Fatalf("non-members changed the report: %+v, want %+v", rep, want)
	}
	if rep := Check([]overlay.Snapshot{out}, 2); rep != (Report{}) {
		t.Fatalf("no members: %+v", rep)
	}
	if rep := Check(nil, 2); rep != (Report{}) || math.IsNaN(rep.NeighborsMean) {
		t.Fatalf("nil: %+v", rep)
	}
	if rep := Check([]overlay.Snapshot{snap(1, can.Whole(3))}, 3); rep != (Report{Members: 1}) {
		t.Fatalf("founder alone: %+v", rep)
	}
}

func TestSnapshotOrderDoesNotMatter(t *testing.T) {
	s := tiling4()
	s[0] = without(s[0], 3)
	want := Check(s, 2)
	slices.Reverse(s)
	if rep := Check(s, 2); rep != want {
		t.Fatalf("reversed: %+v, want %+v", rep, want)
	}
}

// randomTiling splits the space n-1 times at random points (levels > 0
// quantizes the resource coordinates, as populations do) and gives every
// zone its complete, true neighbor table.
func randomTiling(r *rand.Rand, d, n, levels int) []overlay.Snapshot {
	point := func() can.Point {
		p := make(can.Point, d)
		for i := range p {
			if levels > 0 && i < d-1 {
				p[i] = uint32(uint64(r.IntN(levels)) * can.Span / uint64(levels))
			} else {
				p[i] = r.Uint32()
			}
		}
		return p
	}
	zones := []can.Zone{can.Whole(d)}
	points := []can.Point{point()}
	for len(zones) < n {
		p := point()
		for i, z := range zones {
			if !z.Contains(p) {
				continue
			}
			if keep, give, _, _, ok := can.Split(z, points[i], p); ok {
				zones[i] = keep
				zones = append(zones, give)
				points = append(points, p)
			}
			break
		}
	}
	snaps := make([]overlay.Snapshot, n)
	for i := range zones {
		var nbrs []core.NodeID
		for j := range zones {
			if _, _, ok := can.Abut(zones[i], zones[j]); ok {
				nbrs = append(nbrs, core.NodeID(j+1))
			}
		}
		snaps[i] = snap(core.NodeID(i+1), zones[i], nbrs...)
		snaps[i].Point = points[i]
	}
	return snaps
}

// TestRandomTilings uses fixed seeds and one fresh seed per run (printed
// in failures, and logged with -v).
func TestRandomTilings(t *testing.T) {
	fresh := rand.Uint64()
	t.Logf("fresh seed %d", fresh)
	for _, seed := range []uint64{1, 2, 3, fresh} {
		randomTilings(t, seed)
	}
}

func randomTilings(t *testing.T, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 99))
	for _, c := range []struct{ d, n, levels int }{{2, 150, 0}, {3, 150, 0}, {3, 150, 4}, {4, 100, 3}} {
		for trial := 0; trial < 3; trial++ {
			s := randomTiling(r, c.d, c.n, c.levels)
			links := 0
			for _, x := range s {
				links += len(x.Neighbors)
			}
			rep := Check(s, c.d)
			mean := float64(links) / float64(c.n)
			want := Report{Members: c.n, NeighborsMean: mean, TrueNeighborsMean: mean}
			if rep != want {
				t.Fatalf("seed %d %+v trial %d: %+v, want %+v", seed, c, trial, rep, want)
			}

			// Delete one random entry: exactly one broken link.
			victim := r.IntN(c.n)
			for len(s[victim].Neighbors) == 0 {
				victim = r.IntN(c.n)
			}
			broken := slices.Clone(s)
			nb := s[victim].Neighbors[r.IntN(len(s[victim].Neighbors))]
			broken[victim] = without(broken[victim], nb)
			if rep := Check(broken, c.d); rep.BrokenLinks != 1 || rep.StaleLinks != 0 || rep.ZoneGaps != 0 {
				t.Fatalf("seed %d %+v trial %d: removed %d from %d's table: %+v", seed, c, trial, nb, victim+1, rep)
			}

			// Add an entry for a zone that does not abut: exactly one stale link.
			for {
				a, b := r.IntN(c.n), r.IntN(c.n)
				if a == b {
					continue
				}
				if _, ok := slices.BinarySearch(s[a].Neighbors, core.NodeID(b+1)); ok {
					continue
				}
				stale := slices.Clone(s)
				stale[a] = with(stale[a], core.NodeID(b+1))
				if rep := Check(stale, c.d); rep.StaleLinks != 1 || rep.BrokenLinks != 0 {
					t.Fatalf("seed %d %+v trial %d: added %d to %d's table: %+v", seed, c, trial, b+1, a+1, rep)
				}
				break
			}

			// Remove a zone: its volume share is uncovered and its
			// neighbors' faces border the gap.
			gone := r.IntN(c.n)
			rest := slices.Delete(slices.Clone(s), gone, gone+1)
			rep = Check(rest, c.d)
			share, _ := new(big.Rat).SetFrac(s[gone].Zone.Volume(), can.SpaceVolume(c.d)).Float64()
			if rep.ZoneGaps == 0 || rep.UncoveredFraction != share || rep.ZoneOverlaps != 0 || rep.Members != c.n-1 {
				t.Fatalf("seed %d %+v trial %d: removed zone %d (share %v): %+v", seed, c, trial, gone+1, share, rep)
			}
			if rep.StaleLinks != len(s[gone].Neighbors) {
				t.Fatalf("seed %d %+v trial %d: stale %d, want %d entries naming the removed peer", seed, c, trial, rep.StaleLinks, len(s[gone].Neighbors))
			}
		}
	}
}

// TestExtraZones: a member's extra zone is part of the tiling — it closes
// the gap its owner's departure left — and makes its holder a neighbor of
// every member it abuts; an extra zone overlapping another member's zone
// counts as an overlap.
func TestExtraZones(t *testing.T) {
	// 3 of tiling4 has departed; 4 holds its zone as an extra zone, which
	// abuts 1 and 2 (and 4's own zone).
	s := tiling4()
	s = []overlay.Snapshot{without(s[0], 3), without(s[1], 3), without(s[3], 3)}
	rep := Check(s, 2)
	if rep.ZoneGaps == 0 || rep.UncoveredFraction != 0.125 {
		t.Fatalf("departed zone not reported as a gap: %+v", rep)
	}
	s[2].Extra = []can.Zone{zone2(half, full, quarter, half)}
	rep = Check(s, 2)
	if rep.ZoneGaps != 0 || rep.UncoveredFraction != 0 || rep.ExtraZones != 1 || rep.ZoneOverlaps != 0 {
		t.Fatalf("extra zone should close the gap: %+v", rep)
	}
	if rep.BrokenLinks != 2 { // 1 and 4 knew each other already; 2 and 4 did not
		t.Fatalf("broken links %d, want 2 (2 and 4 now abut through 4's extra zone, unknown both ways)", rep.BrokenLinks)
	}
	if rep.BrokenViaExtra != 2 {
		t.Fatalf("%d broken links via extra zones, want both", rep.BrokenViaExtra)
	}
	// 1 forgetting 4 is broken between own zones (1's and 4's abut), even
	// though 4's extra zone also touches 1.
	s[0] = without(s[0], 4)
	if rep = Check(s, 2); rep.BrokenLinks != 3 || rep.BrokenViaExtra != 2 {
		t.Fatalf("own-zone link counted as via extra: %+v", rep)
	}
	s[0] = with(s[0], 4)
	s[1] = snap(2, zone2(half, full, 0, quarter), 1, 4)
	s[2] = snap(4, zone2(half, full, half, full), 1, 2)
	s[2].Extra = []can.Zone{zone2(half, full, quarter, half)}
	if rep = Check(s, 2); rep.BrokenLinks != 0 || rep.StaleLinks != 0 || rep.TrueNeighborsMean != 2 {
		t.Fatalf("exact tables reported wrong: %+v", rep)
	}
	s[2].Extra = append(s[2].Extra, zone2(half, full, 0, quarter/2)) // inside 2's zone
	if rep = Check(s, 2); rep.ZoneOverlaps != 1 {
		t.Fatalf("extra zone overlapping a member's zone: %d overlaps, want 1", rep.ZoneOverlaps)
	}
}

// TestBrokenViaChange: a broken link counts as through a changed zone
// when either end's zone version moved since the previous sample, or an
// end was no member then; Check (no previous sample) counts none.
func TestBrokenViaChange(t *testing.T) {
	s := tiling4()
	s[0] = without(s[0], 2) // 1 lacks 2
	s[2] = without(s[2], 4) // 3 lacks 4
	same := map[core.NodeID]uint64{1: 1, 2: 1, 3: 1, 4: 1}
	for _, tc := range []struct {
		name string
		prev map[core.NodeID]uint64
		want int
	}{
		{"no previous sample", nil, 0},
		{"nothing changed", same, 0},
		{"2 changed", map[core.NodeID]uint64{1: 1, 2: 0, 3: 1, 4: 1}, 1},
		{"1 changed: its own missing entry", map[core.NodeID]uint64{1: 0, 2: 1, 3: 1, 4: 1}, 1},
		{"4 was no member", map[core.NodeID]uint64{1: 1, 2: 1, 3: 1}, 1},
		{"2 and 4 changed", map[core.NodeID]uint64{1: 1, 3: 1}, 2},
	} {
		rep := CheckSince(s, 2, tc.prev)
		if rep.BrokenLinks != 2 || rep.BrokenViaChange != tc.want {
			t.Errorf("%s: broken %d, via change %d, want 2 and %d", tc.name, rep.BrokenLinks, rep.BrokenViaChange, tc.want)
		}
	}
}
