// Package churn plans the churn of a run (002 §4.3.2):
// after the initial population, events arrive as a Poisson process with
// mean inter-arrival time churn.interval; each is a join or a departure with
// equal probability, so the population hovers around its initial size; a
// departure is a failure (a silent crash, noticed only through missed
// heartbeats) with probability churn.fail_fraction, else a graceful leave.
// The plan is drawn from the run seed before the run starts, so both
// drivers replay the same churn.
package churn

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// Kind is what a churn event does.
type Kind uint8

// Kinds of churn event.
const (
	Join  Kind = iota + 1 // a new peer joins
	Leave                 // a random member leaves gracefully
	Fail                  // a random member crashes
)

// String names the kind (also a metric label value).
func (k Kind) String() string {
	switch k {
	case Join:
		return "join"
	case Leave:
		return "leave"
	case Fail:
		return "fail"
	}
	return "unknown"
}

// Event is one planned churn event.
type Event struct {
	At   time.Duration
	Kind Kind
}

// Plan draws the churn events of a run in time order: none when
// c.Interval is 0; otherwise from c.Start until c.Stop (or the end of the
// run when c.Stop is 0).
func Plan(c scenario.Churn, duration time.Duration, seed uint64) []Event {
	if c.Interval <= 0 {
		return nil
	}
	end := c.Stop
	if end <= 0 || end > duration {
		end = duration
	}
	r := rand.New(rand.NewPCG(seed, 0x636875726e)) // "churn"
	var out []Event
	for t := c.Start; ; {
		t += time.Duration(r.ExpFloat64() * float64(c.Interval))
		if t >= end {
			return out
		}
		k := Join
		if r.Float64() < 0.5 {
			k = Leave
			if r.Float64() < c.FailFraction {
				k = Fail
			}
		}
		out = append(out, Event{At: t, Kind: k})
	}
}

// Joins counts the join events of a plan.
func Joins(plan []Event) int {
	n := 0
	for _, e := range plan {
		if e.Kind == Join {
			n++
		}
	}
	return n
}

// Turnover is one event of the session model: at At the peer holding
// session slot Slot departs — crashing if Fail, else leaving gracefully —
// and a new peer joins into the slot at once.
type Turnover struct {
	At   time.Duration
	Slot int
	Fail bool
}

// Lifetimes plans the session model (churn.lifetime): each of count slots
// holds one peer at a time; from c.Start every holder lives a lifetime
// drawn from the distribution, then departs and is replaced, until c.Stop
// (or the end of the run). Nil when the model is off. The events are in
// time order (slot order breaks ties).
func Lifetimes(c scenario.Churn, count int, duration time.Duration, seed uint64) []Turnover {
	l := c.Lifetime
	if l.Dist == scenario.LifetimeNone || l.Dist == "" || count <= 0 {
		return nil
	}
	end := c.Stop
	if end <= 0 || end > duration {
		end = duration
	}
	r := rand.New(rand.NewPCG(seed, 0x6c69666574696d65)) // "lifetime"
	var out []Turnover
	for slot := 0; slot < count; slot++ {
		for t := c.Start; ; {
			t += SampleLifetime(l, r)
			if t >= end {
				break
			}
			out = append(out, Turnover{At: t, Slot: slot, Fail: r.Float64() < c.FailFraction})
		}
	}
	slices.SortStableFunc(out, func(a, b Turnover) int { return cmp.Compare(a.At, b.At) })
	return out
}

// SampleLifetime draws one lifetime with mean l.Mean: exponential;
// pareto with shape α (scale mean·(α−1)/α); weibull with shape k (scale
// mean/Γ(1+1/k)). Never below a microsecond.
func SampleLifetime(l scenario.Lifetime, r *rand.Rand) time.Duration {
	mean := float64(l.Mean)
	var v float64
	switch l.Dist {
	case "pareto":
		a := l.Shape
		xm := mean * (a - 1) / a
		v = xm / math.Pow(1-r.Float64(), 1/a)
	case "weibull":
		k := l.Shape
		lambda := mean / math.Gamma(1+1/k)
		v = lambda * math.Pow(-math.Log(1-r.Float64()), 1/k)
	default: // exponential
		v = r.ExpFloat64() * mean
	}
	if v > float64(math.MaxInt64/2) {
		v = float64(math.MaxInt64 / 2)
	}
	return max(time.Duration(v), time.Microsecond)
}
