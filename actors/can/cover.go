package can

// The geometry below serves the overlay's failure handling (002 §4.2):
// which split plane lies between two zones (take-over, 002 §4.2), the
// distance of greedy routing, and whether the zones known around a node
// cover its border (the adaptive border check, 002 §4.2.3; hole repair).

// PlaneBetween reports whether the split plane at coordinate at of
// dimension dim separates zone a (the node whose split it is, on the upper
// side when upper) from zone b.
func PlaneBetween(a, b Zone, dim int, at uint64, upper bool) bool {
	k := dim
	if k >= len(a.Lo) || k >= len(b.Lo) {
		return false
	}
	if upper {
		return a.Lo[k] == at && b.Hi[k] == at
	}
	return a.Hi[k] == at && b.Lo[k] == at
}

// Dist2 is the squared distance from p to the nearest of a node's zones,
// its own z and its extra zones x (greedy routing towards p, Zone.Dist2).
func Dist2(z Zone, x []Zone, p Point) float64 {
	d := z.Dist2(p)
	for _, e := range x {
		d = min(d, e.Dist2(p))
	}
	return d
}

// Mirror is the one of the zones zs whose face q lies just outside of,
// reflected across that face (clipped to the space).
func Mirror(zs []Zone, q Point) Zone {
	for _, z := range zs {
		for k := range q {
			m := z.Clone()
			w := z.Hi[k] - z.Lo[k]
			switch {
			case uint64(q[k]) == z.Hi[k]:
				m.Lo[k], m.Hi[k] = z.Hi[k], min(z.Hi[k]+w, Span)
			case uint64(q[k])+1 == z.Lo[k]:
				m.Lo[k], m.Hi[k] = z.Lo[k]-min(w, z.Lo[k]), z.Lo[k]
			default:
				continue
			}
			if m.Contains(q) {
				return m
			}
		}
	}
	return Zone{Lo: make([]uint64, len(q)), Hi: make([]uint64, len(q))} // not reached
}

// BoundingBox is the smallest box containing a and b.
func BoundingBox(a, b Zone) Zone {
	out := a.Clone()
	for k := range out.Lo {
		out.Lo[k], out.Hi[k] = min(a.Lo[k], b.Lo[k]), max(a.Hi[k], b.Hi[k])
	}
	return out
}

// FaceHasHole reports whether a face of zone z, not on the space boundary,
// is not completely covered by the zones in cover that abut it there.
func FaceHasHole(z Zone, cover []Zone) bool {
	d := len(z.Lo)
	for k := 0; k < d; k++ {
		for _, upper := range []bool{false, true} {
			if (!upper && z.Lo[k] == 0) || (upper && z.Hi[k] == Span) {
				continue
			}
			face := 1.0
			for j := 0; j < d; j++ {
				if j != k {
					face *= float64(z.Hi[j] - z.Lo[j])
				}
			}
			covered := 0.0
			for _, w := range cover {
				dim, up, ok := Abut(z, w)
				if !ok || dim != k || up != upper {
					continue
				}
				a := 1.0
				for j := 0; j < d; j++ {
					if j != k {
						a *= float64(min(z.Hi[j], w.Hi[j]) - max(z.Lo[j], w.Lo[j]))
					}
				}
				covered += a
			}
			if covered < face*(1-1e-9) {
				return true
			}
		}
	}
	return false
}
