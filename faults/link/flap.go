package link

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// minFlapPeriod is the shortest up or down period a Flap draws (a sample
// of 0 would toggle a link without time passing).
const minFlapPeriod = time.Millisecond

// Flap is a set of links that go down and up: from its start, every link
// of the set is up for a sample of Up, then down for a sample of Down,
// then up again, and so on, each link on a schedule of its own drawn from
// its own PCG stream seeded by the run seed, the flap's seed and the link
// (its two addresses) — so a link's schedule is a function of the link and
// of time alone, the same whatever order messages arrive in, under both
// drivers. A symmetric Flap (oneWay false) takes a link both ways down
// together (one schedule per pair of addresses); a one-way Flap gives each
// direction its own schedule, and only the directions in its set flap.
// Install it with Partition.CutLinks(name, f.Drops); healing the cut (or
// the end of the flap's duration) brings every link up for good. The
// decision is taken at send time, like every link decision: a message
// sent while its link is down is lost.
type Flap struct {
	sched    interface{ Now() time.Duration }
	in       func(from, to bus.Address) bool
	up, down Latency
	oneWay   bool
	seed     uint64
	start    time.Duration

	mu      sync.Mutex
	links   map[[2]bus.Address]*flapLink
	downs   uint64
	dropped uint64
}

// flapLink is one link's schedule so far: state down since since, until
// until (the next toggle).
type flapLink struct {
	rng          *rand.Rand
	down         bool
	since, until time.Duration
}

// FlapStats are the counters of a Flap.
type FlapStats struct {
	Links   int    // links of the set that carried a message while the flap was on
	Downs   uint64 // down periods of those links begun so far
	Dropped uint64 // messages dropped because their link was down
}

// NewFlap returns a flap of the links in (from, to) for which in is true,
// starting now (sched.Now()), with up and down periods drawn from up and
// down. It panics if up or down is invalid or has a mean of 0.
func NewFlap(sched interface{ Now() time.Duration }, seed uint64, in func(from, to bus.Address) bool, up, down Latency, oneWay bool) *Flap {
	for _, l := range []Latency{up, down} {
		if err := l.Validate(); err != nil {
			panic("faults: NewFlap: " + err.Error())
		}
		if l.Mean <= 0 {
			panic(fmt.Sprintf("faults: NewFlap: period mean %v is not positive", l.Mean))
		}
	}
	return &Flap{sched: sched, in: in, up: up, down: down, oneWay: oneWay, seed: seed, start: sched.Now(),
		links: map[[2]bus.Address]*flapLink{}}
}

// Drops reports whether a message from → to is lost because its link is
// down now (the Partition's per-link cut function).
func (f *Flap) Drops(from, to bus.Address) bool {
	if !f.in(from, to) {
		return false
	}
	key := [2]bus.Address{from, to}
	if !f.oneWay && to < from {
		key = [2]bus.Address{to, from}
	}
	now := f.sched.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[key]
	if l == nil {
		l = &flapLink{rng: rand.New(rand.NewPCG(f.seed^streamFlap^(uint64(key[0])*0x9e3779b97f4a7c15), uint64(key[1])))}
		l.since, l.until = f.start, f.start+f.period(l.rng, f.up)
		f.links[key] = l
	}
	for now >= l.until {
		l.down = !l.down
		if l.down {
			f.downs++
		}
		next := f.up
		if l.down {
			next = f.down
		}
		l.since, l.until = l.until, l.until+f.period(l.rng, next)
	}
	down := l.down
	if now < l.since {
		// The live driver's goroutines may ask a little out of time
		// order: before the current period, the link was in the other
		// state.
		down = !down
	}
	if down {
		f.dropped++
	}
	return down
}

func (f *Flap) period(r *rand.Rand, l Latency) time.Duration {
	return max(l.Sample(r), minFlapPeriod)
}

// Faults returns the Flap's counters.
func (f *Flap) Faults() FlapStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return FlapStats{Links: len(f.links), Downs: f.downs, Dropped: f.dropped}
}
