// Package oracle computes the ground truth of an overlay from snapshots of
// every peer taken outside the bus (docs/ARCHITECTURE.md principle 7):
// whether the zones tile the space (gaps, overlaps), which pairs of peers
// truly are CAN neighbors, and how that compares with what peers believe
// (broken links — 002 §4.2.1, Fig 4.1 — and stale entries). Nothing here
// costs a protocol message.
package oracle

import (
	"cmp"
	"math"
	"math/big"
	"slices"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
)

// Report is the ground truth of one moment.
type Report struct {
	// Members is the number of peers that own a zone.
	Members int
	// BrokenLinks counts directed pairs (a, b) whose zones abut although a's
	// neighbor table lacks b.
	BrokenLinks int
	// BrokenViaExtra counts the broken links (a, b) whose zones abut only
	// through an extra zone — one a member holds besides its own after a
	// take-over of an orphan (double failures, 002 §4.2.2) — and never
	// own zone to own zone. Separating them tells the links a heartbeat
	// scheme leaves broken between settled zones from those left while an
	// orphan waits for its next owner.
	BrokenViaExtra int
	// BrokenViaChange counts the broken links (a, b) where a's or b's zone
	// changed since the previous sample (its version differs from the one
	// CheckSince was given, or it was not a member then): links a split,
	// a take-over or a hand-off has just made, which no heartbeat scheme
	// can have learned yet. BrokenLinks - BrokenViaChange are the links
	// broken between settled zones. 0 from Check.
	BrokenViaChange int
	// StaleLinks counts neighbor-table entries naming a peer whose zone does
	// not abut (or that is no longer a member).
	StaleLinks int
	// ZoneGaps counts zone faces, not on the boundary of the space, that are
	// not completely covered by abutting zones: they border unowned space.
	ZoneGaps int
	// ZoneOverlaps counts pairs of zones sharing positive volume.
	ZoneOverlaps int
	// ExtraZones counts the zones members hold besides their own: orphans
	// claimed after double failures, not yet handed to a joiner.
	ExtraZones int
	// UncoveredFraction is the share of the space's volume no zone covers
	// (meaningful when ZoneOverlaps is 0).
	UncoveredFraction float64
	// NeighborsMean is the mean size of the members' neighbor tables;
	// TrueNeighborsMean the mean number of true neighbors.
	NeighborsMean, TrueNeighborsMean float64
}

// Exact reports whether the overlay the report describes is exact: no
// broken link, no gap, no overlap, the whole space covered.
func (r Report) Exact() bool {
	return r.BrokenLinks == 0 && r.ZoneGaps == 0 && r.ZoneOverlaps == 0 && r.UncoveredFraction == 0
}

type faceKey struct {
	dim int
	at  uint64
}

// Check computes the ground truth from snapshots of all peers. Snapshots of
// peers that are not members are ignored; dims is the number of CAN
// dimensions including the virtual one.
func Check(snaps []overlay.Snapshot, dims int) Report { return CheckSince(snaps, dims, nil) }

// CheckSince is Check that also counts the broken links through zones
// changed since the previous sample (Report.BrokenViaChange): prev holds
// each member's zone version then; nil counts none.
func CheckSince(snaps []overlay.Snapshot, dims int, prev map[core.NodeID]uint64) Report {
	var members []*overlay.Snapshot
	for i := range snaps {
		if snaps[i].Joined && snaps[i].Zone.Valid(dims) {
			members = append(members, &snaps[i])
		}
	}
	slices.SortFunc(members, func(a, b *overlay.Snapshot) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	rep := Report{Members: len(members)}
	if len(members) == 0 {
		return rep
	}
	// Every zone a member holds — its own and its extra zones — is a piece
	// of the tiling; members are neighbors when any of their pieces abut.
	var pieces []piece
	for i, m := range members {
		pieces = append(pieces, piece{i, m.Zone, false})
		for _, z := range m.Extra {
			if z.Valid(dims) {
				pieces = append(pieces, piece{i, z, true})
			}
		}
	}

	// Index pieces by their faces: lower[(k, x)] lists the pieces that
	// start at x along dimension k, upper[(k, x)] those that end there.
	// Zones can only abut across a plane they share.
	lower, upper := map[faceKey][]int{}, map[faceKey][]int{}
	for i, pc := range pieces {
		for k := 0; k < dims; k++ {
			if pc.zone.Lo[k] > 0 {
				lower[faceKey{k, pc.zone.Lo[k]}] = append(lower[faceKey{k, pc.zone.Lo[k]}], i)
			}
			if pc.zone.Hi[k] < can.Span {
				upper[faceKey{k, pc.zone.Hi[k]}] = append(upper[faceKey{k, pc.zone.Hi[k]}], i)
			}
		}
	}

	trueNbrs := make([][]core.NodeID, len(members))
	ownAbut := map[[2]int]bool{}               // member pairs whose own zones abut
	covered := make([][]*big.Int, len(pieces)) // [piece][2*dim+side] covered face area
	for i := range covered {
		covered[i] = make([]*big.Int, 2*dims)
		for j := range covered[i] {
			covered[i][j] = new(big.Int)
		}
	}
	var area, w big.Int
	for key, below := range upper {
		above := lower[key]
		k := key.dim
		can.OverlapJoin(func(i int) can.Zone { return pieces[i].zone }, below, above, (k+1)%dims, func(i, j int) {
			m, o := pieces[i].zone, pieces[j].zone
			if _, _, ok := can.Abut(m, o); !ok {
				return
			}
			if a, b := pieces[i].owner, pieces[j].owner; a != b {
				trueNbrs[a] = append(trueNbrs[a], members[b].ID)
				trueNbrs[b] = append(trueNbrs[b], members[a].ID)
				if !pieces[i].extra && !pieces[j].extra {
					ownAbut[[2]int{min(a, b), max(a, b)}] = true
				}
			}
			area.SetInt64(1)
			for x := 0; x < dims; x++ {
				if x == k {
					continue
				}
				w.SetUint64(min(m.Hi[x], o.Hi[x]) - max(m.Lo[x], o.Lo[x]))
				area.Mul(&area, &w)
			}
			covered[i][2*k+1].Add(covered[i][2*k+1], &area)
			covered[j][2*k].Add(covered[j][2*k], &area)
		})
	}

	// Faces not fully covered by abutting zones border unowned space.
	for i, pc := range pieces {
		z := pc.zone
		for k := 0; k < dims; k++ {
			area.SetInt64(1)
			for x := 0; x < dims; x++ {
				if x != k {
					w.SetUint64(z.Hi[x] - z.Lo[x])
					area.Mul(&area, &w)
				}
			}
			if z.Lo[k] > 0 && covered[i][2*k].Cmp(&area) < 0 {
				rep.ZoneGaps++
			}
			if z.Hi[k] < can.Span && covered[i][2*k+1].Cmp(&area) < 0 {
				rep.ZoneGaps++
			}
		}
	}

	// Broken and stale links: compare tables with the truth.
	known, truth := 0, 0
	index := make(map[core.NodeID]int, len(members))
	for i, m := range members {
		index[m.ID] = i
	}
	for i, m := range members {
		t := trueNbrs[i]
		slices.Sort(t)
		t = slices.Compact(t) // several pieces may abut
		truth += len(t)
		known += len(m.Neighbors)
		for _, id := range t {
			if _, ok := slices.BinarySearch(m.Neighbors, id); !ok {
				rep.BrokenLinks++
				j := index[id]
				if !ownAbut[[2]int{min(i, j), max(i, j)}] {
					rep.BrokenViaExtra++
				}
				if prev != nil && (changed(prev, m) || changed(prev, members[j])) {
					rep.BrokenViaChange++
				}
			}
		}
		for _, id := range m.Neighbors {
			if _, ok := slices.BinarySearch(t, id); !ok {
				rep.StaleLinks++
			}
		}
	}
	rep.NeighborsMean = float64(known) / float64(len(members))
	rep.TrueNeighborsMean = float64(truth) / float64(len(members))

	rep.ZoneOverlaps = countOverlaps(pieces)
	rep.ExtraZones = len(pieces) - len(members)
	sum := new(big.Int)
	for _, pc := range pieces {
		sum.Add(sum, pc.zone.Volume())
	}
	space := can.SpaceVolume(dims)
	un := new(big.Int).Sub(space, sum)
	if un.Sign() > 0 {
		f, _ := new(big.Rat).SetFrac(un, space).Float64()
		rep.UncoveredFraction = f
	}
	return rep
}

// changed reports whether m's zone is not the one prev saw: another
// version, or m was no member then.
func changed(prev map[core.NodeID]uint64, m *overlay.Snapshot) bool {
	v, ok := prev[m.ID]
	return !ok || v != m.Version
}

// piece is one zone a member holds: its own or an extra one.
type piece struct {
	owner int // index into the sorted members
	zone  can.Zone
	extra bool // held besides the owner's own zone
}

// countOverlaps sweeps the pieces along one dimension and tests each
// against the pieces still open at its start. It sweeps the dimension in
// which the pieces are narrowest in sum (the fewest open at a time): along
// a fixed one, a skewed population — whose crowd of identical peers splits
// only the virtual dimension — keeps most pieces open at once, and 100,000
// peers took minutes (docs/BENCHMARKS.md).
func countOverlaps(pieces []piece) int {
	if len(pieces) == 0 {
		return 0
	}
	k, best := 0, math.Inf(1)
	for dim := range pieces[0].zone.Lo {
		sum := 0.0
		for _, p := range pieces {
			sum += float64(p.zone.Hi[dim] - p.zone.Lo[dim])
		}
		if sum < best {
			k, best = dim, sum
		}
	}
	order := slices.Clone(pieces)
	slices.SortFunc(order, func(a, b piece) int { return cmp.Compare(a.zone.Lo[k], b.zone.Lo[k]) })
	var active []piece
	n := 0
	for _, m := range order {
		keep := active[:0]
		for _, a := range active {
			if a.zone.Hi[k] > m.zone.Lo[k] {
				keep = append(keep, a)
			}
		}
		active = keep
		for _, a := range active {
			if can.Overlaps(a.zone, m.zone) {
				n++
			}
		}
		active = append(active, m)
	}
	return n
}
