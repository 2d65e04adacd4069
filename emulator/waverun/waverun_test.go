package waverun

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wave"
)

func config(seed uint64, s wave.Strategy, free float64) Config {
	return Config{Seed: seed, Peers: 300, Strategy: s, Discovery: wave.DiscoveryRing, DayFree: free, Clients: 0.2,
		RuntimeMin: 12 * time.Hour, RuntimeMax: 24 * time.Hour, SubmitWindow: 24 * time.Hour, Duration: 240 * time.Hour,
		MigrationBytes: 1 << 20, Overlay: overlay.Config{HeartbeatPeriod: 30 * time.Second}, JoinWindow: time.Minute}
}

func TestDeterministic(t *testing.T) {
	for _, s := range []wave.Strategy{wave.WaveAdaptive, wave.MigrationLinger} {
		var out [2][]byte
		for i := range out {
			res, err := Run(context.Background(), config(3, s, 0.15))
			if err != nil {
				t.Fatal(err)
			}
			out[i], _ = json.Marshal(res)
		}
		if string(out[0]) != string(out[1]) {
			t.Fatalf("seed 3, %s: two runs differ:\n%s\n%s", s, out[0], out[1])
		}
	}
}

func TestStrategies(t *testing.T) {
	got := map[wave.Strategy]*Result{}
	for _, s := range wave.Strategies {
		res, err := Run(context.Background(), config(1, s, 0.15))
		if err != nil {
			t.Fatal(err)
		}
		got[s] = res
		t.Logf("%-20s fail %.3f slowdown %.2f migrations %.2f unfinished %d messages %d", s, res.FailureRate, res.SlowdownMean, res.MigrationsPerJob, res.Unfinished, res.MessagesTotal)
		if !res.Conservation {
			t.Errorf("seed 1, %s: conservation: %v", s, res.ConservationNotes)
		}
		if res.Completed+res.Failed+res.Unfinished != res.Jobs || res.Jobs != 60 {
			t.Errorf("seed 1, %s: %d jobs: %d + %d + %d", s, res.Jobs, res.Completed, res.Failed, res.Unfinished)
		}
	}
	for _, s := range wave.Strategies[1:] {
		if got[s].Completed > 0 && got[s].SlowdownMean >= got[wave.NoMigration].SlowdownMean {
			t.Errorf("seed 1: %s slowdown %.2f not below no-migration's %.2f", s, got[s].SlowdownMean, got[wave.NoMigration].SlowdownMean)
		}
	}
	if got[wave.NoMigration].MigrationsPerJob != 0 {
		t.Error("no-migration migrated")
	}
	if got[wave.MigrationImmediate].FailureRate <= got[wave.MigrationAdaptive].FailureRate {
		t.Errorf("seed 1: migration-immediate fails %.3f, not more than migration-adaptive %.3f", got[wave.MigrationImmediate].FailureRate, got[wave.MigrationAdaptive].FailureRate)
	}
}
