package emulator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// waveScenario is examples/papers/001-fig10 at 200 peers.
func waveScenario(t *testing.T, strategy string) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load("../examples/papers/001-fig10.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.SetAll("peers.count=200", "wave.strategy="+strategy); err != nil {
		t.Fatal(err)
	}
	return sc
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

// TestWaveNeedsSim: the live driver does not run the Wave scheduler yet,
// and says so.
func TestWaveNeedsSim(t *testing.T) {
	_, err := emulator.Run(context.Background(), waveScenario(t, "no-migration"), emulator.Options{Driver: emulator.DriverLive})
	if err == nil || !strings.Contains(err.Error(), "--driver sim") {
		t.Fatalf("err = %v", err)
	}
}

// TestWaveActorsSim runs the Wave peers as actors on the deterministic
// driver's bus: discovery, shipping and migration are messages, the
// timezone CAN is the overlay cores' own; the job-history check holds.
func TestWaveActorsSim(t *testing.T) {
	sc := waveScenario(t, "wave-adaptive")
	if err := sc.SetAll("wave.engine=actors"); err != nil {
		t.Fatal(err)
	}
	res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	s := res.Summary
	b, _ := json.MarshalIndent(s.Wave, "", " ")
	t.Logf("seed %d: %s\n%v", sc.Seed, b, s.OutcomeReasons)
	if s.Outcome != emulator.OutcomePassed || s.Wave == nil || !s.Wave.Conservation || s.Wave.Jobs != 40 {
		t.Fatalf("seed %d: outcome %s %v, wave %+v", sc.Seed, s.Outcome, s.OutcomeReasons, s.Wave)
	}
}
