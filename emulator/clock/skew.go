package clock

import (
	"math"
	"time"
)

// Skew is one peer's own clock (peers.clock in a scenario): it runs at
// rate 1+Drift from Anchor, the emulated time the peer was created, and
// reads Offset ahead of emulated time there. A peer's cores see only its
// own clock: they measure heartbeat periods and failure-detection limits
// with it, so two peers with different drifts disagree about how long a
// period is, as machines whose clocks drift do. The zero Skew is emulated
// time itself.
type Skew struct {
	Drift  float64       // the clock's rate is 1+Drift (|Drift| < 1)
	Offset time.Duration // what the clock reads ahead of emulated time at Anchor
	Anchor time.Duration // emulated time from which the clock drifts
}

// Zero reports whether the clock is emulated time itself.
func (s Skew) Zero() bool { return s.Drift == 0 && s.Offset == 0 }

// Local is what the peer's clock reads at emulated time t.
func (s Skew) Local(t time.Duration) time.Duration {
	if s.Zero() {
		return t
	}
	return s.Anchor + s.Offset + time.Duration(math.Floor(float64(t-s.Anchor)*(1+s.Drift)))
}

// Emulated is the earliest emulated time at which the peer's clock reads
// at least local: a timer the peer sets for local fires then, and the peer
// sees Local of it, never less than local.
func (s Skew) Emulated(local time.Duration) time.Duration {
	if s.Zero() {
		return local
	}
	t := s.Anchor + time.Duration(math.Ceil(float64(local-s.Anchor-s.Offset)/(1+s.Drift)))
	for s.Local(t) < local {
		t++
	}
	for t > s.Anchor && s.Local(t-1) >= local {
		t--
	}
	return max(t, s.Anchor)
}
