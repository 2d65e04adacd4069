// Package nemesis draws fault timelines from a seed and shrinks failing
// ones. A scenario's random entry (faults: - {at, random: {kinds, rate,
// max_concurrent, duration, until}}) becomes, before the run, a plain
// timeline of the existing fault kinds (Expand); gridbed chaos runs many
// seeds and, for each failing schedule, finds by delta debugging (DDMin)
// the fewest faults that still fail, and writes them as a scenario file
// that replays the failure.
package nemesis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// stream is the PCG stream of the nemesis's draws ("nem"), apart from
// every other stream of the run.
const stream = 0x6e656d

// Episode is one drawn fault: the entry that starts it and, for faults
// that last (a partition, a loss, latency or duplication setting), the
// entry that ends it. An episode is the unit DDMin removes: a partition
// without its heal would be a different fault.
type Episode struct {
	Faults []scenario.Fault
}

// Start is the episode's first entry's time.
func (e Episode) Start() time.Duration { return e.Faults[0].At }

// Generate draws the episodes of nemesis entry f (Kind random) in scenario
// sc from the run seed: the same seed, scenario and entry always give the
// same episodes. index tells entries apart (their position in the file).
//
// Faults start as a Poisson process of rate Rate per emulated minute from
// f.At until the nemesis's end, each of a kind drawn uniformly from Kinds;
// a start finding MaxConcurrent faults under way is dropped, as is one
// whose kind is still under way (two losses at once would end each
// other). Each drawn fault lasts an exponential time of mean Duration,
// between a quarter and twice it, ending by the nemesis's end; then a
// partition heals, a crash's peers restart as new peers, the bus comes
// back, slow peers are fast again, and loss, duplication and latency are
// set back to the scenario's link section. Sizes are uniform: partitions
// cut off 10–40% of the addresses, crashes 5–20% of the members, leaves
// 2–10%, loss 5–30%, duplication 5–20%, latency means 200 ms–2 s, bus
// outages 5–30 s, slow peers 10–40% with 20–500 ms per message, flapping
// links 5–30% of the links (exponential periods, up 20–120 s, down 5–30 s,
// for the episode's length), corruption 0.5–5% of the messages (then set
// back to the link section's).
func Generate(sc scenario.Scenario, f scenario.Fault, index int) []Episode {
	r := f.Random
	end := min(r.End(sc.Duration), sc.Duration-time.Second) // a crash's restart stays within the run
	rng := rand.New(rand.NewPCG(sc.Seed^stream, uint64(index)))
	var eps []Episode
	var ends []time.Duration // of the episodes under way, by kind too
	busy := map[string]time.Duration{}
	t := f.At
	for n := 0; ; n++ {
		t += time.Duration(rng.ExpFloat64() / r.Rate * float64(time.Minute))
		if t >= end {
			break
		}
		kind := r.Kinds[rng.IntN(len(r.Kinds))]
		length := time.Duration(rng.ExpFloat64() * float64(r.Duration))
		length = min(max(length, r.Duration/4), 2*r.Duration, end-t)
		x := rng.Float64() // the fault's size, drawn whatever the outcome
		ends = slices.DeleteFunc(ends, func(e time.Duration) bool { return e <= t })
		if len(ends) >= r.MaxConcurrent || busy[kind] > t || length <= 0 {
			continue
		}
		ep := episode(sc, kind, fmt.Sprintf("nemesis-%d-%d", index, n), t, length, x)
		eps = append(eps, ep)
		ends = append(ends, t+length)
		busy[kind] = t + length
	}
	return eps
}

// round keeps drawn numbers readable in a written scenario.
func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// episode is one drawn fault of kind at t lasting length; x in [0, 1)
// sizes it.
func episode(sc scenario.Scenario, kind, name string, t, length time.Duration, x float64) Episode {
	at := t.Truncate(time.Second)
	until := (t + length).Truncate(time.Second)
	if until <= at {
		until = at + time.Second
	}
	f := scenario.Fault{At: at, Kind: kind, Region: -1}
	switch kind {
	case scenario.FaultPartition:
		f.Name, f.Fraction = name, round(0.1+0.3*x, 2)
		return Episode{[]scenario.Fault{f, {At: until, Kind: scenario.FaultHeal, Region: -1, Name: name}}}
	case scenario.FaultLoss:
		f.P = round(0.05+0.25*x, 2)
		return Episode{[]scenario.Fault{f, {At: until, Kind: scenario.FaultLoss, Region: -1, P: sc.Link.Loss}}}
	case scenario.FaultDuplicate:
		f.P = round(0.05+0.15*x, 2)
		return Episode{[]scenario.Fault{f, {At: until, Kind: scenario.FaultDuplicate, Region: -1, P: sc.Link.Duplicate}}}
	case scenario.FaultLatency:
		f.Latency = scenario.Latency{Dist: "exponential", Mean: (200*time.Millisecond + time.Duration(x*1800)*time.Millisecond).Truncate(time.Millisecond)}
		return Episode{[]scenario.Fault{f, {At: until, Kind: scenario.FaultLatency, Region: -1, Latency: sc.Link.Latency}}}
	case scenario.FaultCrash:
		// A crash-restart: as many new peers join at the crashed peers'
		// points when the episode ends.
		f.Fraction, f.RestartAfter = round(0.05+0.15*x, 2), until-at
		return Episode{[]scenario.Fault{f}}
	case scenario.FaultLeave:
		f.Fraction = round(0.02+0.08*x, 2)
		return Episode{[]scenario.Fault{f}}
	case scenario.FaultBusRestart:
		f.DownFor = min(until-at, time.Duration(5+25*x)*time.Second)
		return Episode{[]scenario.Fault{f}}
	case scenario.FaultSlow:
		f.Fraction, f.Service = round(0.1+0.3*x, 2), (20*time.Millisecond + time.Duration(x*480)*time.Millisecond).Truncate(time.Millisecond)
		return Episode{[]scenario.Fault{f, {At: until, Kind: scenario.FaultSlow, Region: -1}}}
	case scenario.FaultFlap:
		// Flapping links: one entry, its duration ends it.
		f.Name, f.Fraction, f.Length = name, round(0.05+0.25*x, 2), until-at
		f.Up, f.Down = (20*time.Second + time.Duration(x*100)*time.Second).Truncate(time.Second), (5*time.Second + time.Duration(x*25)*time.Second).Truncate(time.Second)
		f.Latency.Dist = "exponential"
		return Episode{[]scenario.Fault{f}}
	case scenario.FaultCorrupt:
		f.P = round(0.005+0.045*x, 3)
		return Episode{[]scenario.Fault{f, {At: until, Kind: scenario.FaultCorrupt, Region: -1, P: sc.Link.Corrupt}}}
	}
	panic("nemesis: unknown kind " + kind)
}

// Flatten is the timeline of episodes, in time order (stable).
func Flatten(eps []Episode) []scenario.Fault {
	var out []scenario.Fault
	for _, e := range eps {
		out = append(out, e.Faults...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Expand returns sc with every random entry replaced by the timeline it
// draws (the other entries kept as written), and the drawn episodes; a
// scenario without random entries comes back as it is. The result
// validates as a plain scenario and replays the same faults.
func Expand(sc scenario.Scenario) (scenario.Scenario, []Episode) {
	var kept []scenario.Fault
	var eps []Episode
	for i, f := range sc.Faults {
		if f.Kind != scenario.FaultRandom {
			kept = append(kept, f)
			continue
		}
		eps = append(eps, Generate(sc, f, i)...)
	}
	if len(eps) == 0 && len(kept) == len(sc.Faults) {
		return sc, nil
	}
	sc.Faults = append(kept, Flatten(eps)...)
	return sc, eps
}

// HasRandom reports whether sc has a random entry.
func HasRandom(sc scenario.Scenario) bool {
	return slices.ContainsFunc(sc.Faults, func(f scenario.Fault) bool { return f.Kind == scenario.FaultRandom })
}
