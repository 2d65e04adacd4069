// Package link is gridbed's link model: what goes wrong between peers on
// the bus. Each fault is a decorator of the bus interface (emulator/bus.Bus)
// that wraps another bus.Bus, so faults stack and the peer code never knows
// they are there:
//
//   - Partition drops the messages that cross one of its named cuts;
//   - Loss drops each message with a probability;
//   - Duplicate publishes a message twice with a probability;
//   - Corrupt changes one byte of a message with a probability (its
//     receiver's frame check rejects it: actors/wire);
//   - Delay holds each message back by a sample of a latency distribution
//     (plus an inter-region latency across regions) using the driver's
//     Scheduler.
//
// NewChain stacks them in the order Partition → Loss → Duplicate → Corrupt →
// Bandwidth (faults/bandwidth: access links and their queues) → Delay →
// inner bus. A Partition also carries per-link cuts (CutLinks):
// one-way cuts between peer sets, and flapping links (Flap). Every decorator draws from its own seeded *rand.Rand (math/rand/v2,
// PCG), so under the deterministic driver (emulator/sim) the same seed gives
// the same faults. Every decorator is safe for concurrent Publish calls (the
// live driver publishes from many goroutines); its setters may be called at
// any time and apply to the messages published afterwards. Register,
// Unregister, Stats and Close delegate to the inner bus: Stats is the inner
// bus's counters (so its Published counts only messages that got through the
// faults above it), and each decorator's own counters are returned by its
// Faults method.
//
// # Messages in flight
//
// Every decision is taken when a message is published, never when it
// arrives; Chain.PublishBatch takes the same decisions, message by message,
// as Publish would (bus.fanout: batched). A partition or loss decision is final at send time: a message that
// was already sent (and is being delayed) when a partition starts is still
// delivered, and a message sent while a partition is active is lost even if
// the partition heals before it would have arrived. Likewise a message keeps
// the delay it drew when it was sent even if the latency changes while it is
// in flight. Messages in flight to a peer that unregisters are dropped by the
// inner bus (bus.Stats.Unroutable).
//
// # Ordering
//
// A constant latency without jitter keeps the order of the messages of a
// link sent at different instants. Jitter (and any non-constant
// distribution, since every message draws its own delay) reorders them.
// Messages due at the same instant are ordered by the scheduler; sim.World
// draws that order from its seed.
package link

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// inner is the bus a decorator wraps. Each decorator embeds it, so its
// Register, Unregister, Stats and Close are the inner bus's (Stats counts
// only the messages that got through the decorators above it) and only
// Publish is its own; the field stays unexported.
type inner = bus.Bus

// Scheduler is the driver's emulated time. Now is the current emulated time;
// At runs fn at emulated time t. sim.World satisfies it; the live driver
// passes its scaled timer wheel. Under the live driver At and Now are called
// from many goroutines and must be safe for that.
type Scheduler interface {
	Now() time.Duration
	At(t time.Duration, fn func())
}

// Latency distributions.
const (
	DistConstant    = "constant"    // exactly Mean
	DistUniform     = "uniform"     // uniform in [0, 2·Mean]
	DistExponential = "exponential" // exponential with mean Mean
	DistNormal      = "normal"      // normal with mean Mean, stddev Mean/4 (clamped at 0)
	DistPareto      = "pareto"      // Pareto with shape 2 and scale Mean/2 (mean Mean, infinite variance)
)

// Dists lists the latency distributions Validate accepts.
var Dists = []string{DistConstant, DistUniform, DistExponential, DistNormal, DistPareto}

// Latency is a delay distribution. The zero value is no delay (an empty Dist
// means constant).
type Latency struct {
	Dist   string        // one of Dists ("" = constant)
	Mean   time.Duration // mean delay
	Jitter time.Duration // plus a uniform offset in [-Jitter, +Jitter]; the result is clamped at 0. Jitter reorders messages.
}

// DefaultLatency is the latency of the papers' experiments: exponential with
// a mean of 50 ms, no jitter.
func DefaultLatency() Latency {
	return Latency{Dist: DistExponential, Mean: 50 * time.Millisecond}
}

// IsZero reports whether every sample of l is 0.
func (l Latency) IsZero() bool { return l.Mean <= 0 && l.Jitter <= 0 }

// String is a short human form, e.g. "exponential(50ms±5ms)".
func (l Latency) String() string {
	d := l.Dist
	if d == "" {
		d = DistConstant
	}
	if l.Jitter > 0 {
		return fmt.Sprintf("%s(%v±%v)", d, l.Mean, l.Jitter)
	}
	return fmt.Sprintf("%s(%v)", d, l.Mean)
}

// Validate reports an unknown distribution or a negative mean or jitter.
func (l Latency) Validate() error {
	switch l.Dist {
	case "", DistConstant, DistUniform, DistExponential, DistNormal, DistPareto:
	default:
		return fmt.Errorf("faults: unknown latency distribution %q (want one of constant, uniform, exponential, normal, pareto)", l.Dist)
	}
	if l.Mean < 0 {
		return fmt.Errorf("faults: latency mean %v is negative (want a duration >= 0, e.g. 50ms)", l.Mean)
	}
	if l.Jitter < 0 {
		return fmt.Errorf("faults: latency jitter %v is negative (want a duration >= 0; 0 means no jitter)", l.Jitter)
	}
	return nil
}

// Sample draws one delay from l using r. It never returns a negative delay.
// An invalid l (see Validate) samples as a constant, with negative values
// clamped at 0.
func (l Latency) Sample(r *rand.Rand) time.Duration {
	mean := float64(max(l.Mean, 0))
	var d float64
	if mean > 0 {
		switch l.Dist {
		case DistUniform:
			d = r.Float64() * 2 * mean
		case DistExponential:
			d = r.ExpFloat64() * mean
		case DistNormal:
			d = mean + r.NormFloat64()*mean/4
		case DistPareto:
			// Inverse CDF: scale / U^(1/shape), U in (0, 1], shape 2.
			d = (mean / 2) / math.Sqrt(1-r.Float64())
		default:
			d = mean
		}
	}
	if l.Jitter > 0 {
		d += float64(r.Int64N(2*int64(l.Jitter)+1) - int64(l.Jitter))
	}
	return toDuration(d)
}

// toDuration converts nanoseconds to a Duration clamped at [0, max].
func toDuration(ns float64) time.Duration {
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// ValidateProbability reports a probability outside [0, 1] (or NaN). The
// setters of Loss and Duplicate panic on such a value.
func ValidateProbability(p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("faults: probability %v is outside [0, 1]", p)
	}
	return nil
}

func mustProbability(what string, p float64) {
	if err := ValidateProbability(p); err != nil {
		panic(what + ": " + err.Error())
	}
}

// PCG stream constants: each decorator kind draws from its own stream, so one
// seed gives independent decisions to the layers of a Chain.
const (
	streamLoss      = 0x6c6f7373   // "loss"
	streamDuplicate = 0x6475706c   // "dupl"
	streamDelay     = 0x64656c6179 // "delay"
	streamCorrupt   = 0x636f7272   // "corr"
	streamFlap      = 0x666c6170   // "flap"
)

func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// cloneBytes copies data (the caller of Publish may reuse it).
func cloneBytes(data []byte) []byte {
	return append([]byte(nil), data...)
}

var (
	_ bus.Bus = (*Partition)(nil)
	_ bus.Bus = (*Loss)(nil)
	_ bus.Bus = (*Duplicate)(nil)
	_ bus.Bus = (*Delay)(nil)
	_ bus.Bus = (*Chain)(nil)
	_ bus.Bus = (*Corrupt)(nil)

	_ bus.Batcher = (*Chain)(nil)
)
