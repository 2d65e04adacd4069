package wave

import (
	"math/rand/v2"

	"github.com/gridbed/gridbed/actors/can"
)

// The timezone CAN (001 §III-B, §V-A): one CAN dimension — the timezone
// axis, 24 equal stripes, one per timezone, grouped in 6 wavezones of 4 —
// plus gridbed's virtual dimension (003 §4.2), which spreads the hosts of
// one wavezone over zones of their own. 001's 1 × 24 space is this with
// the first coordinate the virtual one.

// stripe is the width of one timezone on the timezone axis.
const stripe = can.Span / Timezones

// WavezoneOf is the wavezone holding timezone tz (001 §III-B).
func WavezoneOf(tz int) int { return tz / TimezonesPerWave }

// TimezoneAt is the timezone stripe coordinate x lies in.
func TimezoneAt(x uint32) int { return min(int(uint64(x)/stripe), Timezones-1) }

// WavezoneAt is the wavezone coordinate x lies in.
func WavezoneAt(x uint32) int { return WavezoneOf(TimezoneAt(x)) }

// Region is the part of the timezone axis a label is drawn from:
// [Lo, Hi) in coordinates.
type Region struct{ Lo, Hi uint64 }

// Everywhere is the whole timezone axis (random discovery).
var Everywhere = Region{0, can.Span}

// WavezoneRegion is wavezone w's stripe of the timezone axis.
func WavezoneRegion(w int) Region {
	lo := uint64(w*TimezonesPerWave) * stripe
	hi := lo + TimezonesPerWave*stripe
	if w == Wavezones-1 {
		hi = can.Span
	}
	return Region{lo, hi}
}

// Contains reports whether coordinate x of the timezone axis is in r.
func (r Region) Contains(x uint32) bool { return uint64(x) >= r.Lo && uint64(x) < r.Hi }

// Label draws a node label (a CAN point: timezone axis, virtual) uniformly
// in region r (001 §IV, label-based discovery; §III-B, a host's join).
func Label(rng *rand.Rand, r Region) can.Point {
	x := r.Lo + rng.Uint64N(r.Hi-r.Lo)
	return can.Point{uint32(x), rng.Uint32()}
}

// JoinLabel is where a host in timezone tz joins the timezone CAN: a
// random label inside the wavezone of its timezone (001 §III-B, "Host nodes
// join the overlay").
func JoinLabel(rng *rand.Rand, tz int) can.Point {
	return Label(rng, WavezoneRegion(WavezoneOf(tz)))
}
