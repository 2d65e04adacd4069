package emulator_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/driver"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/waverun"
)

// waveFaults is examples/papers/001-fig10 with the peers as actors on the
// bus (peers peers, heartbeats every 10 emulated minutes, an oracle
// sample every hour), the link model link and the fault timeline faults
// appended (YAML), and the extra settings.
func waveFaults(t *testing.T, seed uint64, peers int, link, faults string, extra ...string) scenario.Scenario {
	t.Helper()
	b, err := os.ReadFile("../examples/papers/001-fig10.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if link != "" {
		doc += fmt.Sprintf("\nlink: {%s}\n", link)
	}
	if faults != "" {
		doc += "\nfaults:\n" + faults
	}
	sc := emutest.Parse(t, "001-fig10-faults.yaml", doc)
	emutest.Set(t, &sc, append([]string{fmt.Sprintf("seed=%d", seed), "wave.engine=actors", fmt.Sprintf("peers.count=%d", peers),
		"overlay.heartbeat.period=10m", "oracle.interval=1h", "duration=120h"}, extra...)...)
	return sc
}

// waveChaos is the fault load of the Wave chaos tests: 5% of the messages
// lost and 2% duplicated for the whole run, a third of the peers cut off
// for 2 emulated hours while clients submit (ships cross the cut) and
// again for 2 hours while jobs migrate.
const (
	waveChaosLink   = "loss: 0.05, duplicate: 0.02"
	waveChaosFaults = `  - {at: 8h, partition: {name: early, fraction: 0.3}}
  - {at: 10h, heal: {name: early}}
  - {at: 40h, partition: {name: late, fraction: 0.3}}
  - {at: 42h, heal: {name: late}}
`
)

// checkWaveChaos asserts what must hold of a Wave run under message loss,
// duplication and partitions: every job ends exactly once (the job-history
// check: completed, failed with a reason, unfinished on a live host, or
// lost — and a job is lost only with a transfer its sender gave up, never
// silently), no job ran twice or on two hosts, and the faults did strike
// the Wave protocol: discovery queries timed out and were retried, job
// transfers were resent, duplicated copies were acknowledged and not run.
func checkWaveChaos(t *testing.T, sc scenario.Scenario, s emulator.Summary) {
	t.Helper()
	checkWave(t, sc, s)
	w := s.Wave
	if s.Faults.Dropped["loss"] == 0 || s.Faults.Dropped["partition"] == 0 || s.Faults.Duplicated == 0 {
		t.Fatalf("seed %d: the faults did not strike: dropped %v, duplicated %d", sc.Seed, s.Faults.Dropped, s.Faults.Duplicated)
	}
	if w.Lost != w.LostUnacked {
		t.Fatalf("seed %d: %d jobs lost, %d of them with a transfer given up: a job lost silently", sc.Seed, w.Lost, w.LostUnacked)
	}
	if w.DiscoveryTimeouts == 0 || w.TransfersResent == 0 {
		t.Fatalf("seed %d: %d discovery timeouts, %d transfers resent under 5%% loss and two partitions", sc.Seed, w.DiscoveryTimeouts, w.TransfersResent)
	}
	if w.Messages["wave_ack"].Count == 0 {
		t.Fatalf("seed %d: no acknowledgment on the bus: %v", sc.Seed, w.Messages)
	}
	if c := s.Invariants.Check("messages_accounted"); c == nil || !c.OK {
		t.Fatalf("seed %d: %+v", sc.Seed, c)
	}
}

// TestWaveActorsChaosSim runs the Wave peers on the deterministic driver
// under 5% loss, 2% duplication and two 2-hour partitions of a third of
// the peers: no job is lost (every transfer cut by a 2-hour partition is
// resent after it heals, within wave.TransferSends), none runs twice, the
// retries are counted, and the same seed gives the same summary.
func TestWaveActorsChaosSim(t *testing.T) {
	emutest.SkipUnderRace(t, "two Wave runs under a fault timeline")
	const seed = 4
	var out [2]string
	for i := range out {
		sc := waveFaults(t, seed, 120, waveChaosLink, waveChaosFaults)
		s := emutest.Run(t, sc, emulator.DriverSim).Summary
		checkWaveChaos(t, sc, s)
		w := s.Wave
		if w.Lost != 0 || w.TransfersDuplicate == 0 {
			t.Fatalf("seed %d: %d jobs lost (%d transfers given up), %d duplicate copies", seed, w.Lost, w.TransfersUnacked, w.TransfersDuplicate)
		}
		if i == 0 {
			t.Logf("seed %d: %d jobs: %d completed, %d failed, %d unfinished, %d lost; %d discovery timeouts, %d resent, %d duplicates, %d given up; dropped %v, outcome %s %v",
				seed, w.Jobs, w.Completed, w.Failed, w.Unfinished, w.Lost, w.DiscoveryTimeouts, w.TransfersResent, w.TransfersDuplicate, w.TransfersUnacked, s.Faults.Dropped, s.Outcome, s.OutcomeReasons)
		}
		s.WallSeconds, s.Sim, s.Messages.PerWallSecond, s.Peers.BootstrapWallSeconds = 0, nil, nil, 0
		b, _ := json.Marshal(s)
		out[i] = string(b)
	}
	if out[0] != out[1] {
		t.Fatalf("seed %d: two runs differ", seed)
	}
}

// TestWaveActorsLongCutSim: links cut for longer than a transfer's
// resends (wave.TransferSends, about 5 emulated hours) strand the jobs
// sent over them. Half of the links flap one way at a time, down for 6
// emulated hours on average, so a host's yes can reach a client whose
// WaveShip then cannot reach the host, and a job can arrive whose
// acknowledgments cannot return. The senders give those transfers up and
// say so; the job-history check finds each such job on its receiver or
// counts it lost with its reason — never silently, never run twice.
func TestWaveActorsLongCutSim(t *testing.T) {
	emutest.SkipUnderRace(t, "a Wave run of 72 emulated hours")
	const seed = 2
	sc := waveFaults(t, seed, 60, "", "  - {at: 6h, flap: {name: long, fraction: 0.5, up: 2h, down: 6h, oneway: true, duration: 40h}}\n", "duration=72h")
	s := emutest.Run(t, sc, emulator.DriverSim).Summary
	checkWave(t, sc, s)
	w := s.Wave
	if w.TransfersUnacked == 0 || w.Lost != w.LostUnacked {
		t.Fatalf("seed %d: %d transfers given up, %d lost (%d of them unacknowledged)", seed, w.TransfersUnacked, w.Lost, w.LostUnacked)
	}
	t.Logf("seed %d: %d jobs: %d completed, %d failed, %d unfinished, %d lost (%d unacknowledged); %d discovery timeouts, %d resent, %d duplicates, %d given up; dropped %v",
		seed, w.Jobs, w.Completed, w.Failed, w.Unfinished, w.Lost, w.LostUnacked, w.DiscoveryTimeouts, w.TransfersResent, w.TransfersDuplicate, w.TransfersUnacked, s.Faults.Dropped)
}

// TestWaveActorsChaosLive: the same faults on the emulator driver, actors
// over NATS at a day in 9 wall seconds (60 peers, 96 emulated hours): the
// job-history check holds and no job is lost without a transfer given up.
func TestWaveActorsChaosLive(t *testing.T) {
	if testing.Short() {
		t.Skip("a 25 s emulator run")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	const seed = 4
	sc := waveFaults(t, seed, 60, waveChaosLink, waveChaosFaults, "time_scale=10000", "duration=96h", "overlay.heartbeat.period=30m",
		"emulator.lag_tolerance=0.05") // 90 s late of 30-min heartbeats: at a day in 6 s, 1% would be 1.25 ms of wall time, the machine's timer jitter
	s := emutest.Run(t, sc, emulator.DriverLive).Summary
	checkWaveChaos(t, sc, s)
	w := s.Wave
	t.Logf("seed %d: %d jobs: %d completed, %d failed, %d unfinished, %d lost (%d unacknowledged); %d discovery timeouts, %d resent, %d duplicates, %d given up; lag p99 %v s, outcome %s %v",
		seed, w.Jobs, w.Completed, w.Failed, w.Unfinished, w.Lost, w.LostUnacked, w.DiscoveryTimeouts, w.TransfersResent, w.TransfersDuplicate, w.TransfersUnacked, s.Clock.LagSeconds.P99, s.Outcome, s.OutcomeReasons)
}

// TestWaveActorsClockSkew: a Wave host's notion of the time of day
// follows its own clock (peers.clock), not emulated time. With no
// daytime free time a host is available exactly while its clock reads a
// local night hour (001 §V-A); at every hourly sample the running hosts
// available are those whose own clock (emulator/clock.Skew, drawn as
// the drivers draw it) says night — not those whose emulated time does,
// which differ once the clocks are offset. The job-history check keeps
// emulated time (the events are converted, as the job core's are) and
// holds.
func TestWaveActorsClockSkew(t *testing.T) {
	const seed, peers = 6, 96
	for _, c := range []struct {
		name   string
		spread driver.ClockSpread
	}{
		{"no skew", driver.ClockSpread{}},
		{"offsets up to 3h", driver.ClockSpread{Offset: 3 * time.Hour}},
		{"drift 5%, offsets up to 1h", driver.ClockSpread{Drift: 0.05, Offset: time.Hour}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := waveFaults(t, seed, peers, "", "", "peers.bootstrap=joins", "wave.day_free=0", "clock.start=30m", "duration=30h",
				fmt.Sprintf("peers.clock.drift=%g", c.spread.Drift), fmt.Sprintf("peers.clock.offset=%s", c.spread.Offset))
			res := emutest.Run(t, sc, emulator.DriverSim)
			if w := res.Summary.Wave; w == nil || !w.Conservation {
				t.Fatalf("seed %d: wave %+v", seed, w)
			}
			cal := wave.Calendar{Start: sc.Clock.Start}
			pop := waverun.Draw(waverun.Config{Seed: seed, Peers: peers, Clients: sc.Wave.Clients, RuntimeMin: sc.Wave.RuntimeMin, RuntimeMax: sc.Wave.RuntimeMax, SubmitWindow: sc.Wave.SubmitWindow})
			night := func(tt time.Duration, own bool) (n int) {
				for i, tz := range pop.Timezones {
					local := tt
					if own {
						local = c.spread.Skew(seed, core.NodeID(i+1), 0, false).Local(tt)
					}
					if h, _ := cal.LocalHour(local, tz); wave.Night(h) {
						n++
					}
				}
				return n
			}
			samples, differ := 0, 0
			for _, s := range res.Series {
				if s.Wave == nil || s.T < 2*time.Hour {
					continue
				}
				got, hosts := 0, 0
				for z := range wave.Wavezones {
					got += s.Wave.Available[z]
					hosts += s.Wave.Hosts[z]
				}
				if hosts != peers {
					t.Fatalf("seed %d: %d hosts running at %v", seed, hosts, s.T)
				}
				own, emulated := night(s.T, true), night(s.T, false)
				if got != own {
					t.Fatalf("seed %d: at %v %d hosts available, %d by their own clocks (%d by emulated time)", seed, s.T, got, own, emulated)
				}
				samples++
				if own != emulated {
					differ++
				}
			}
			if samples < 20 {
				t.Fatalf("seed %d: %d samples", seed, samples)
			}
			if skewed := c.spread != (driver.ClockSpread{}); skewed != (differ > 0) {
				t.Fatalf("seed %d: %d of %d samples where the hosts' clocks and emulated time disagree", seed, differ, samples)
			}
			t.Logf("seed %d: %d samples, %d where own clocks and emulated time disagree on the hosts at night; slowdown %.3f", seed, samples, differ, res.Summary.Wave.SlowdownMean)
		})
	}
}
