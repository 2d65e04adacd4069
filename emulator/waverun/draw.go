package waverun

import (
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wave"
)

// Population is what a Wave run draws from its seed before any peer
// runs: the hosts' timezones and join labels and the clients' jobs. Both
// engines (the event loop here, the peers on the bus) draw it alike.
type Population struct {
	// Timezones[i] and Points[i] are peer i+1's timezone and label.
	Timezones []int
	Points    []can.Point
	// Jobs in job-id order.
	Jobs []JobDraw
}

// JobDraw is one client's job: its client, runtime and submission
// instant after the timezone CAN is formed.
type JobDraw struct {
	Client  core.NodeID
	Runtime time.Duration
	Offset  time.Duration
}

// Draw draws cfg's population: every peer a timezone, uniformly, and a
// join label in its wavezone (001 §III-B); a random Clients fraction of
// the peers each submit one job at a random time of the submit window,
// runtime U(min, max) (001 §V-A).
func Draw(cfg Config) Population {
	rng := rand.New(rand.NewPCG(cfg.Seed^streamWave, 0))
	p := Population{Points: make([]can.Point, cfg.Peers), Timezones: make([]int, cfg.Peers)}
	for i := range p.Points {
		p.Timezones[i] = rng.IntN(wave.Timezones)
		p.Points[i] = wave.JoinLabel(rng, p.Timezones[i])
	}
	nc := max(1, int(cfg.Clients*float64(cfg.Peers)+0.5))
	perm := rng.Perm(cfg.Peers)[:nc]
	sort.Ints(perm)
	for _, i := range perm {
		rt := cfg.RuntimeMin
		if d := cfg.RuntimeMax - cfg.RuntimeMin; d > 0 {
			rt += time.Duration(rng.Int64N(int64(d)))
		}
		p.Jobs = append(p.Jobs, JobDraw{Client: core.NodeID(i + 1), Runtime: rt, Offset: time.Duration(rng.Int64N(int64(cfg.SubmitWindow)))})
	}
	return p
}

// Extra draws the timezones and labels of n peers that join later
// (churn), from a stream of their own.
func Extra(seed uint64, n int) ([]int, []can.Point) {
	rng := rand.New(rand.NewPCG(seed^streamWave, 1<<62))
	tzs, pts := make([]int, n), make([]can.Point, n)
	for i := range pts {
		tzs[i] = rng.IntN(wave.Timezones)
		pts[i] = wave.JoinLabel(rng, tzs[i])
	}
	return tzs, pts
}

// PeerRand is peer id's random stream for its Wave decisions (labels,
// linger times).
func PeerRand(seed uint64, id core.NodeID) *rand.Rand {
	return rand.New(rand.NewPCG(seed^streamWave, uint64(id)))
}
