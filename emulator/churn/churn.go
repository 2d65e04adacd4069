// Package churn plans the churn of a run (002 §4.3.2; PROTOCOLS.md §1):
// after the initial population, events arrive as a Poisson process with
// mean inter-arrival time churn.interval; each is a join or a departure with
// equal probability, so the population hovers around its initial size; a
// departure is a failure (a silent crash, noticed only through missed
// heartbeats) with probability churn.fail_fraction, else a graceful leave.
// The plan is drawn from the run seed before the run starts, so both
// drivers replay the same churn.
package churn

import (
	"math/rand/v2"
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
