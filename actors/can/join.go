package can

import "slices"

// OverlapJoin calls fn(a, b) for every a in as and b in bs whose zones
// overlap along dimension j — their intervals [Lo[j], Hi[j]) intersect —
// or for every pair when the zones have one dimension: an interval join
// that sorts both sides by their lower bound along j (ties by index, so
// the calls come in one order), sweeps, and keeps the intervals still
// open. zone(i) is the zone of index i. The oracle finds the zones that
// truly abut across a face plane with it: the candidates on either side
// of the plane, joined along another dimension.
func OverlapJoin(zone func(i int) Zone, as, bs []int, j int, fn func(a, b int)) {
	if len(as) == 0 || len(bs) == 0 {
		return
	}
	if len(zone(as[0]).Lo) == 1 {
		for _, a := range as {
			for _, b := range bs {
				fn(a, b)
			}
		}
		return
	}
	lo := func(i int) uint64 { return zone(i).Lo[j] }
	hi := func(i int) uint64 { return zone(i).Hi[j] }
	byLo := func(x, y int) int {
		switch {
		case lo(x) < lo(y):
			return -1
		case lo(x) > lo(y):
			return 1
		}
		return x - y
	}
	as, bs = slices.Clone(as), slices.Clone(bs)
	slices.SortFunc(as, byLo)
	slices.SortFunc(bs, byLo)
	prune := func(open []int, at uint64) []int {
		keep := open[:0]
		for _, i := range open {
			if hi(i) > at {
				keep = append(keep, i)
			}
		}
		return keep
	}
	var openA, openB []int
	for ia, ib := 0, 0; ia < len(as) || ib < len(bs); {
		if ib >= len(bs) || (ia < len(as) && lo(as[ia]) <= lo(bs[ib])) {
			a := as[ia]
			ia++
			openB = prune(openB, lo(a))
			for _, b := range openB {
				fn(a, b)
			}
			openA = append(openA, a)
		} else {
			b := bs[ib]
			ib++
			openA = prune(openA, lo(b))
			for _, a := range openA {
				fn(a, b)
			}
			openB = append(openB, b)
		}
	}
}
