package wave

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Strategy is one of 001 §IV-A's scheduling strategies (wave.strategy).
type Strategy string

// The seven strategies of 001 §IV-A and Table I.
const (
	NoMigration        Strategy = "no-migration"
	MigrationImmediate Strategy = "migration-immediate"
	MigrationLinger    Strategy = "migration-linger"
	WaveImmediate      Strategy = "wave-immediate"
	WaveLinger         Strategy = "wave-linger"
	MigrationAdaptive  Strategy = "migration-adaptive"
	WaveAdaptive       Strategy = "wave-adaptive"
)

// Strategies lists them in the paper's order.
var Strategies = []Strategy{NoMigration, MigrationImmediate, MigrationLinger, WaveImmediate, WaveLinger, MigrationAdaptive, WaveAdaptive}

// ParseStrategy reads a strategy's name.
func ParseStrategy(s string) (Strategy, error) {
	for _, v := range Strategies {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown strategy %q", s)
}

// When is when a strategy migrates (001 §IV, Table I).
type When int

// The options for when to migrate.
const (
	Never     When = iota // no-migration
	Immediate             // as soon as the host is unavailable
	Linger                // after lingering U(1,3) h, if the host is still unavailable
	Adaptive              // at once if a host is found, else linger and retry (001 §IV-A)
)

// When is s's option for when to migrate.
func (s Strategy) When() When {
	switch s {
	case MigrationImmediate, WaveImmediate:
		return Immediate
	case MigrationLinger, WaveLinger:
		return Linger
	case MigrationAdaptive, WaveAdaptive:
		return Adaptive
	}
	return Never
}

// Night reports whether s targets night-time hosts (the Wave scheduler,
// 001 §III-B) rather than random ones.
func (s Strategy) Night() bool { return s == WaveImmediate || s == WaveLinger || s == WaveAdaptive }

// Criterion is a host selection criterion (001 §IV).
type Criterion int

// The criteria of 001 §IV: Unclaimed — no foreign job on the host;
// Available — no foreign job and the host is idle.
const (
	Unclaimed Criterion = iota
	Available
)

func (c Criterion) String() string {
	if c == Available {
		return "available"
	}
	return "unclaimed"
}

// Initial is the criteria s tries, in order, to place a job at its
// submission (001 §IV-A): no-migration takes any unclaimed host (the
// SETI@home model); the strict migration strategies an available one;
// the adaptive ones an available one, else an unclaimed one where the job
// sleeps.
func (s Strategy) Initial() []Criterion {
	switch s.When() {
	case Never:
		return []Criterion{Unclaimed}
	case Adaptive:
		return []Criterion{Available, Unclaimed}
	}
	return []Criterion{Available}
}

// Region is where s looks for a host at now: the target wavezone for the
// wave strategies (001 §III-B: the client schedules, and the host
// migrates, into the current night zone), anywhere for the others.
func (s Strategy) Region(c Calendar, now time.Duration) Region {
	if s.Night() {
		return WavezoneRegion(c.TargetWavezone(now))
	}
	return Everywhere
}

// Action is what a job does next.
type Action int

// The actions a strategy decides.
const (
	Stay    Action = iota // keep the job on its host (it runs whenever the host is available)
	Migrate               // look for a new available host now
	Wait                  // linger (or sleep) on the host for Decision.For, then decide again
	Fail                  // give up: the host tells the job's client (001 §IV-A)
)

// Decision is an Action and, for Wait, how long.
type Decision struct {
	Action Action
	For    time.Duration
}

// LingerTime draws a linger (or adaptive sleep) time, U(1 h, 3 h) (001
// §V-A, migration parameters).
func LingerTime(rng *rand.Rand) time.Duration {
	return time.Hour + time.Duration(rng.Int64N(int64(2*time.Hour)))
}

// OnUnavailable is s's decision when its job's host stops being available
// (001 §IV, when to migrate): no-migration sleeps through it; immediate
// strategies migrate; linger strategies linger U(1,3) h; adaptive ones try
// to migrate at once.
func (s Strategy) OnUnavailable(rng *rand.Rand) Decision {
	switch s.When() {
	case Immediate, Adaptive:
		return Decision{Action: Migrate}
	case Linger:
		return Decision{Action: Wait, For: LingerTime(rng)}
	}
	return Decision{Action: Stay}
}

// OnWaitEnd is s's decision when a linger or sleep ends: a job whose host
// is available again continues there (001 §IV, linger migration);
// otherwise it migrates.
func (s Strategy) OnWaitEnd(hostAvailable bool) Decision {
	if hostAvailable || s.When() == Never {
		return Decision{Action: Stay}
	}
	return Decision{Action: Migrate}
}

// OnPlacedUnclaimed is the adaptive strategies' decision for a job placed
// on an unclaimed, busy host at submission: it sleeps U(1,3) h and then
// decides as at the end of a linger (001 §IV-A, migration-adaptive).
func (s Strategy) OnPlacedUnclaimed(rng *rand.Rand) Decision {
	if s.When() == Adaptive {
		return Decision{Action: Wait, For: LingerTime(rng)}
	}
	return Decision{Action: Stay}
}

// OnNoHost is s's decision when a migration finds no available host: the
// strict strategies give up and let the client know, once (001 §IV-A: "no
// backoff and retry"); the adaptive ones linger U(1,3) h and try again.
func (s Strategy) OnNoHost(rng *rand.Rand) Decision {
	if s.When() == Adaptive {
		return Decision{Action: Wait, For: LingerTime(rng)}
	}
	return Decision{Action: Fail}
}
