package scenario

import (
	"fmt"
	"time"

	"github.com/gridbed/gridbed/actors/wave"
)

// Wave configures the Wave scheduler's experiment (001 §V): hosts with an
// hourly availability profile in 24 timezones on a timezone CAN, clients
// that each submit one long job, and a scheduling strategy. With Strategy
// WaveOff (the default) a run has no Wave scheduler.
type Wave struct {
	Strategy  string  // WaveOff or one of wave.Strategies
	Discovery string  // wave.DiscoveryRandom or wave.DiscoveryRing
	DayFree   float64 // probability that a daytime hour is available
	Clients   float64 // fraction of peers that submit a job
	// RuntimeMin and RuntimeMax bound the jobs' runtimes on a dedicated
	// machine (uniform; 001 §V-A: 12 to 24 h).
	RuntimeMin, RuntimeMax time.Duration
	// SubmitWindow is the emulated time over which the clients submit
	// (uniform; 001 §V-A: "at a random point during the day").
	SubmitWindow time.Duration
	// MigrationBytes is the size of the job state a migration (and the
	// first shipping) moves, in bytes.
	MigrationBytes int
	// Engine is how the run hosts the Wave peers: WaveEngineAuto,
	// WaveEngineEvents or WaveEngineActors.
	Engine string
}

// The values of wave.engine.
const (
	// WaveEngineAuto: the event loop on the deterministic driver, the
	// actors on the emulator driver.
	WaveEngineAuto = "auto"
	// WaveEngineEvents: the event loop around the pure functions
	// (emulator/waverun), messages counted; deterministic driver only.
	WaveEngineEvents = "events"
	// WaveEngineActors: every host a peer on the bus running the Wave core
	// (actors/wave.Node) over the overlay core's timezone CAN; either
	// driver.
	WaveEngineActors = "actors"
)

// Actors reports whether a Wave run on driver (sim or live) hosts its
// peers as actors on the bus.
func (w Wave) Actors(driver string) bool {
	return w.Engine == WaveEngineActors || (w.Engine == WaveEngineAuto && driver != "sim")
}

// On reports whether the run is a Wave scheduler run.
func (w Wave) On() bool { return w.Strategy != WaveOff }

// WaveOff is wave.strategy's default: no Wave scheduler.
const WaveOff = "off"

// Clock configures the emulated calendar.
type Clock struct {
	// Start is the UTC time of day at emulated time 0, in [0, 24h).
	Start time.Duration
}

func waveStrategies() []string {
	out := []string{WaveOff}
	for _, s := range wave.Strategies {
		out = append(out, string(s))
	}
	return out
}

// waveFields are the keys of the Wave scheduler (001) and the calendar,
// appended to schema.
var waveFields = []field{
	durationField("clock.start", func(s *Scenario) *time.Duration { return &s.Clock.Start }, 0,
		"UTC time of day at emulated time 0 (the emulated calendar: a peer in timezone k has local time UTC + k h); from 0s up to but not including 24h, e.g. 22h. Only the Wave scheduler (wave.*) reads it.",
		func(_ *Scenario, d time.Duration) string {
			if d < 0 || d >= 24*time.Hour {
				return fmt.Sprintf("%v is not a time of day — write a duration from 0s to 23h59m59s, e.g. 22h", d)
			}
			return ""
		}),
	enumField("wave.strategy", func(s *Scenario) *string { return &s.Wave.Strategy }, WaveOff,
		waveStrategies(), "a Wave scheduling strategy",
		"The Wave scheduler's experiment (001 §IV-A, §V; docs/WAVE.md): off (no Wave run), or the scheduling strategy of every job — no-migration (any unclaimed host, never moves), migration-immediate, migration-linger, wave-immediate, wave-linger, migration-adaptive or wave-adaptive (wave-*: migrate to the wavezone whose earliest timezone just entered night; linger: U(1,3) h before migrating; adaptive: retry after U(1,3) h instead of failing). A Wave run takes peers.count, seed, duration and the wave.* keys; it runs on --driver sim."),
	enumField("wave.discovery", func(s *Scenario) *string { return &s.Wave.Discovery }, string(wave.DiscoveryRing),
		[]string{string(wave.DiscoveryRandom), string(wave.DiscoveryRing)}, "a host discovery",
		"How a client or host looks for a host (001 §IV): random (label-based random, at most 5 queries) or ring (expanding ring from a random label, at most 2 hops)."),
	floatField("wave.day_free", func(s *Scenario) *float64 { return &s.Wave.DayFree }, 0.5,
		func(v float64) bool { return v >= 0 && v <= 1 }, "a valid daytime availability", "a number from 0 to 1, e.g. 0.15",
		"Probability that a host is available in a daytime hour (local 6–24 h), with an owner load U(0, 0.3); night hours (0–6 h) are always available with a load U(0, 0.1) (001 §V-A sweeps 0.05 to 0.95)."),
	floatField("wave.clients", func(s *Scenario) *float64 { return &s.Wave.Clients }, 0.2,
		func(v float64) bool { return v > 0 && v <= 1 }, "a valid client fraction", "a number above 0 and at most 1, e.g. 0.2",
		"Fraction of the peers that are clients, each submitting one job (001 §V-A: 0.1 to 0.9)."),
	durationField("wave.runtime_min", func(s *Scenario) *time.Duration { return &s.Wave.RuntimeMin }, 12*time.Hour,
		"Shortest job runtime on a dedicated machine; runtimes are uniform between wave.runtime_min and wave.runtime_max (001 §V-A: 12 h to 24 h).",
		positive("runtime", 12*time.Hour)),
	also(durationField("wave.runtime_max", func(s *Scenario) *time.Duration { return &s.Wave.RuntimeMax }, 24*time.Hour,
		"Longest job runtime on a dedicated machine, at least wave.runtime_min.",
		positive("runtime", 24*time.Hour)),
		func(s *Scenario) string {
			if s.Wave.RuntimeMax < s.Wave.RuntimeMin {
				return fmt.Sprintf("%v is shorter than wave.runtime_min %v — write at least %v", s.Wave.RuntimeMax, s.Wave.RuntimeMin, s.Wave.RuntimeMin)
			}
			return ""
		}, "wave.runtime_min"),
	also(durationField("wave.submit_window", func(s *Scenario) *time.Duration { return &s.Wave.SubmitWindow }, 24*time.Hour,
		"Emulated time, from the start of the Wave run, over which the clients submit their jobs, uniformly (001 §V-A: at a random time of day, 24h). Shorter than duration.",
		positive("submit window", 24*time.Hour), "duration"),
		func(s *Scenario) string {
			if s.Wave.On() && s.Wave.SubmitWindow >= s.Duration {
				return fmt.Sprintf("the clients would submit until %v, after the run ends at %v — make duration longer (a Wave run needs days: e.g. 240h) or the window shorter", s.Wave.SubmitWindow, s.Duration)
			}
			return ""
		}, "wave.strategy"),
	enumField("wave.engine", func(s *Scenario) *string { return &s.Wave.Engine }, WaveEngineAuto,
		[]string{WaveEngineAuto, WaveEngineEvents, WaveEngineActors}, "a Wave engine",
		"How a Wave run hosts its peers (docs/WAVE.md): events (an event loop around the pure strategy and discovery functions, its messages counted, not sent; --driver sim only), actors (every host a peer on the bus running the Wave core over the overlay core's timezone CAN, with its heartbeats, take-over, churn and faults; either driver) or auto (events on --driver sim, actors on --driver live)."),
	intField("wave.migration_bytes", func(s *Scenario) *int { return &s.Wave.MigrationBytes }, 1<<20, 0, 1<<30,
		"a valid state size",
		"Bytes of job state a migration (and the job's first shipping) moves, counted in wave.messages (001 §V-C.1(c) discusses 1 MB to 20 MB); 0 to 1073741824."),
}
