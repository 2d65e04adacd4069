package emulator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/sim"
)

// fastDeterminism are the examples the fast tier checks for determinism:
// the overlay alone, a workload, and 004's allocation (its own world).
var fastDeterminism = map[string]bool{"quickstart": true, "jobs": true, "allocation-neighbors": true}

// TestExamplesAreDeterministic: every example, at the fast tier's reduced
// size (shortGolden), runs twice on the deterministic driver with the
// same event stream — every delivery, timer and action, in order, with
// the same bytes — and the same summary (emulator.CheckDeterminism). The
// fast tier checks three of them.
func TestExamplesAreDeterministic(t *testing.T) {
	emutest.SkipUnderRace(t, "single-threaded simulator runs")
	for name, file := range goldenExamples(t) {
		if testing.Short() && !fastDeterminism[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each run is one single-threaded event loop
			sc := emutest.Load(t, file, shortGolden[name]...)
			cores.Hold(t, cores.Sim)
			res, err := emulator.CheckDeterminism(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
			if err != nil {
				t.Fatalf("%s (reduced: %v): %v", file, shortGolden[name], err)
			}
			if res.Summary.Outcome == emulator.OutcomeInterrupted {
				t.Fatalf("seed %d: outcome %s", sc.Seed, res.Summary.Outcome)
			}
		})
	}
}

// TestDivergenceSaysWhere: a divergence names the seed, the block of
// events, both sides of the first differing event and the first
// differing summary line.
func TestDivergenceSaysWhere(t *testing.T) {
	a := &sim.Event{N: 1500, At: 90e9, Kind: "deliver", To: 7, Type: "HEARTBEAT", Bytes: 120, Hash: 1}
	b := &sim.Event{N: 1500, At: 90e9, Kind: "timer", To: 7, Timer: 1}
	d := &emulator.Divergence{Seed: 42, Events: [2]uint64{3000, 3001}, Block: 1, First: a, Second: b, Line: 12, Lines: [2]string{`  "count": 3`, `  "count": 4`}}
	msg := d.Error()
	for _, want := range []string{"seed 42", "events 1025-2048", "runs of 3000 and 3001 events", "first run:  event 1500 at 1m30s: HEARTBEAT to 7", "second run:  event 1500 at 1m30s: timer 1 of 7", "line 12", `"count": 3`, `"count": 4`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the divergence's message lacks %q:\n%s", want, msg)
		}
	}
	var err error = d
	var got *emulator.Divergence
	if !errors.As(err, &got) {
		t.Error("a Divergence is not found by errors.As")
	}
}

// TestDeterminismCheckNeedsTheDeterministicDriver: the check refuses the
// emulator driver, whose runs differ by design.
func TestDeterminismCheckNeedsTheDeterministicDriver(t *testing.T) {
	sc := emutest.Load(t, "../examples/quickstart.yaml")
	if _, err := emulator.CheckDeterminism(context.Background(), sc, emulator.Options{Driver: emulator.DriverLive}); err == nil || !strings.Contains(err.Error(), "deterministic driver") {
		t.Errorf("the check on the emulator driver: %v, want a refusal naming the deterministic driver", err)
	}
}

// TestFirstLineDifference: the first differing line, from 1, with both
// sides; a text that ends first has "" there; equal texts give 0.
func TestFirstLineDifference(t *testing.T) {
	for _, c := range []struct {
		a, b string
		line int
		x, y string
	}{
		{"a\nb\nc", "a\nB\nc", 2, "b", "B"},
		{"a\nb", "a\nb\nc", 3, "", "c"},
		{"a\nb", "a\nb", 0, "", ""},
	} {
		if line, x, y := emulator.FirstLineDifference(c.a, c.b); line != c.line || x != c.x || y != c.y {
			t.Errorf("FirstLineDifference(%q, %q) = %d, %q, %q; want %d, %q, %q", c.a, c.b, line, x, y, c.line, c.x, c.y)
		}
	}
}
