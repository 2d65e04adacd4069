package allocation

import (
	"fmt"

	"github.com/gridbed/gridbed/actors/can"
)

// LayoutDims is the dimension d of the CAN the machines are laid out in
// under allocation.placement neighbors: 2, the smallest space in which a
// zone has neighbours on more than two sides — about 4–6 on average for
// the KD-tree of can.Split, against 2 on a line — so that a machine
// chooses among a handful of machines, not a pair. The coordinates mean
// nothing about the machines: they only decide who neighbours whom.
const LayoutDims = 2

// Layout lays out the machines in a CAN (003 §4.2; 002 §4.2.2): machine 0
// owns the whole d-dimensional space, and each following machine i joins
// at its point points[i], splitting the zone that contains it with its
// owner (can.Split, the distributed KD-tree). It returns every machine's
// zone and its neighbours — the machines whose zones abut its own
// (can.Abut), ascending. The points are the caller's seeded choice; two
// equal points cannot be separated and are an error.
func Layout(points []can.Point) (zones []can.Zone, neighbors [][]int, err error) {
	if len(points) == 0 {
		return nil, nil, nil
	}
	d := len(points[0])
	zones = []can.Zone{can.Whole(d)}
	for i := 1; i < len(points); i++ {
		owner := -1
		for k := range zones {
			if zones[k].Contains(points[i]) {
				owner = k
				break
			}
		}
		if owner < 0 {
			return nil, nil, fmt.Errorf("machine %d's point %v lies in no zone", i, points[i])
		}
		keep, give, _, _, ok := can.Split(zones[owner], points[owner], points[i])
		if !ok {
			return nil, nil, fmt.Errorf("machine %d's point %v cannot be separated from machine %d's", i, points[i], owner)
		}
		zones[owner] = keep
		zones = append(zones, give)
	}
	neighbors = make([][]int, len(zones))
	for i := range zones {
		for k := range zones {
			if _, _, ok := can.Abut(zones[i], zones[k]); ok && i != k {
				neighbors[i] = append(neighbors[i], k)
			}
		}
	}
	return zones, neighbors, nil
}
