package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// waveScenario is examples/papers/001-fig10 at 200 peers.
func waveScenario(t *testing.T, strategy string) scenario.Scenario {
	t.Helper()
	return emutest.Load(t, "../examples/papers/001-fig10.yaml", "peers.count=200", "wave.strategy="+strategy)
}

// TestWaveDeterministic runs a Wave scenario twice on the deterministic
// driver: the summaries are identical but for wall time.
func TestWaveDeterministic(t *testing.T) {
	var out [2]string
	for i := range out {
		sc := waveScenario(t, "wave-adaptive")
		res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
		if err != nil {
			t.Fatalf("seed %d: %v", sc.Seed, err)
		}
		s := res.Summary
		s.WallSeconds = 0
		b, _ := json.Marshal(s)
		out[i] = string(b)
		if s.Outcome != emulator.OutcomePassed || s.Wave == nil || !s.Wave.Conservation || s.Wave.Jobs != 40 {
			t.Fatalf("seed %d: outcome %s %v, wave %+v", sc.Seed, s.Outcome, s.OutcomeReasons, s.Wave)
		}
		if s.Messages.ByType["wave_migrate"].Count == 0 || s.Messages.ByType["wave_probe"].Count == 0 {
			t.Fatalf("seed %d: messages %v", sc.Seed, s.Messages.ByType)
		}
	}
	if out[0] != out[1] {
		t.Fatalf("seed 1: two runs differ:\n%s\n%s", out[0], out[1])
	}
}

// TestWaveEventsNeedsSim: the event loop does not run on the live
// driver, and says so.
func TestWaveEventsNeedsSim(t *testing.T) {
	sc := waveScenario(t, "no-migration")
	if err := sc.SetAll("wave.engine=events"); err != nil {
		t.Fatal(err)
	}
	_, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverLive})
	if err == nil || !strings.Contains(err.Error(), "--driver sim") {
		t.Fatalf("err = %v", err)
	}
}

// waveActors is waveScenario with the peers as actors on the bus, at
// peers peers, heartbeats every 10 emulated minutes and an oracle sample
// every hour (a Wave run's time is hours and days).
func waveActors(t *testing.T, strategy string, peers int, extra ...string) scenario.Scenario {
	t.Helper()
	sc := waveScenario(t, strategy)
	emutest.Set(t, &sc, append([]string{"wave.engine=actors", fmt.Sprintf("peers.count=%d", peers), "overlay.heartbeat.period=10m", "oracle.interval=1h", "duration=120h"}, extra...)...)
	return sc
}

func checkWave(t *testing.T, sc scenario.Scenario, s emulator.Summary) {
	t.Helper()
	if s.Wave == nil {
		t.Fatalf("seed %d: no wave summary", sc.Seed)
	}
	w := s.Wave
	if !w.Conservation {
		t.Fatalf("seed %d: the job-history check failed: %v", sc.Seed, w.ConservationNotes)
	}
	if w.Completed+w.Failed+w.Unfinished+w.Lost+w.Withdrawn != w.Jobs || w.Completed == 0 {
		t.Fatalf("seed %d: jobs %d = %d completed + %d failed + %d unfinished + %d lost + %d withdrawn", sc.Seed, w.Jobs, w.Completed, w.Failed, w.Unfinished, w.Lost, w.Withdrawn)
	}
	if s.Messages.ByType["wave_route"].Count == 0 || s.Messages.ByType["wave_ship"].Count == 0 {
		t.Fatalf("seed %d: messages %v", sc.Seed, s.Messages.ByType)
	}
	if b := s.Messages.ByType["wave_ship"].Bytes; b < uint64(sc.Wave.MigrationBytes)*s.Messages.ByType["wave_ship"].Count {
		t.Fatalf("seed %d: %d wave_ship bytes: the job state (%d bytes) was not on the wire", sc.Seed, b, sc.Wave.MigrationBytes)
	}
}

// TestWaveActorsSim runs the Wave peers as actors on the deterministic
// driver's bus: discovery, shipping and migration are messages, the
// timezone CAN is the overlay cores' own; the job-history check holds,
// and the same seed gives the same summary.
func TestWaveActorsSim(t *testing.T) {
	emutest.SkipUnderRace(t, "two Wave runs of 200 hosts over 120 emulated hours")
	var out [2]string
	for i := range out {
		sc := waveActors(t, "wave-adaptive", 200)
		res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
		if err != nil {
			t.Fatalf("seed %d: %v", sc.Seed, err)
		}
		s := res.Summary
		if s.Outcome != emulator.OutcomePassed || s.Wave.Jobs != 40 || s.Wave.Engine != "actors" {
			t.Fatalf("seed %d: outcome %s %v, wave %+v", sc.Seed, s.Outcome, s.OutcomeReasons, s.Wave)
		}
		checkWave(t, sc, s)
		if s.Wave.Lost != 0 || s.Wave.Discoveries == 0 || s.Wave.Migrations == 0 {
			t.Fatalf("seed %d: %d lost, %d discoveries, %d migrations without churn", sc.Seed, s.Wave.Lost, s.Wave.Discoveries, s.Wave.Migrations)
		}
		last := res.Series[len(res.Series)-1].Wave
		if last == nil || last.Completed != s.Wave.Completed {
			t.Fatalf("seed %d: last sample %+v", sc.Seed, last)
		}
		s.WallSeconds, s.Sim, s.Messages.PerWallSecond, s.Peers.BootstrapWallSeconds = 0, nil, nil, 0
		b, _ := json.Marshal(s)
		out[i] = string(b)
	}
	if out[0] != out[1] {
		t.Fatalf("seed 1: two runs differ:\n%s\n%s", out[0], out[1])
	}
}

// TestWaveActorsChurn: hosts crash and leave while they hold jobs. 001
// has no recovery: a host that leaves gives its job up (failed, host
// departed), a crashed host's job is lost; every job still ends once.
func TestWaveActorsChurn(t *testing.T) {
	emutest.SkipUnderRace(t, "a Wave run of 120 hosts under churn")
	sc := waveActors(t, "wave-adaptive", 120, "churn.interval=20m", "churn.start=12h", "churn.stop=60h", "churn.fail_fraction=0.5")
	res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	s := res.Summary
	checkWave(t, sc, s)
	if s.Churn.Leaves+s.Churn.Failures == 0 || s.Wave.Lost == 0 || s.Wave.FailedDeparted == 0 {
		t.Fatalf("seed %d: churn %+v touched no job: %+v", sc.Seed, s.Churn, s.Wave)
	}
	t.Logf("seed %d: churn %+v: %d jobs, %d completed, %d failed (%d host departed), %d lost, %d withdrawn", sc.Seed, s.Churn, s.Wave.Jobs, s.Wave.Completed, s.Wave.Failed, s.Wave.FailedDeparted, s.Wave.Lost, s.Wave.Withdrawn)
}

// TestWaveActorsLive runs the Wave peers on the emulator driver: actors
// over NATS at a day in 9 wall seconds (lag judged against 5% of the
// 30-minute heartbeat period: 90 emulated seconds); the job-history check holds and
// the figures are near the deterministic driver's for the same seed.
func TestWaveActorsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("long tier: a 35-s live run over NATS")
	}
	t.Parallel() // a live run that mostly waits on wall time: it overlaps the others (at most -parallel at once)
	sc := waveActors(t, "wave-adaptive", 60, "time_scale=10000", "duration=96h", "overlay.heartbeat.period=30m", "emulator.lag_tolerance=0.05")
	live := emutest.Run(t, sc, emulator.DriverLive)
	cores.Hold(t, cores.Sim)
	sim, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	checkWave(t, sc, live.Summary)
	checkWave(t, sc, sim.Summary)
	l, m := live.Summary.Wave, sim.Summary.Wave
	t.Logf("seed %d: live %d/%d completed, slowdown %.3f, %.2f migrations; sim %d/%d, %.3f, %.2f; lag p99 %v s", sc.Seed,
		l.Completed, l.Jobs, l.SlowdownMean, l.MigrationsPerJob, m.Completed, m.Jobs, m.SlowdownMean, m.MigrationsPerJob, live.Summary.Clock.LagSeconds.P99)
	if l.Jobs != m.Jobs || l.Completed < m.Completed*8/10 || l.SlowdownMean > 1.25*m.SlowdownMean || m.SlowdownMean > 1.25*l.SlowdownMean {
		t.Fatalf("seed %d: the drivers disagree: live %+v, sim %+v", sc.Seed, l, m)
	}
}
