package emutest

import (
	"slices"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// TestRetrySlowsAnOverloadedRun: a live run that comes out overloaded is
// run again at 1/Slower of its time scale, at most Retries times, and the
// run that kept up is the one returned, with the scenario that made it;
// under the race detector it is not run again.
func TestRetrySlowsAnOverloadedRun(t *testing.T) {
	for _, c := range []struct {
		name       string
		overloaded int // runs that come out overloaded before one keeps up
		scales     []float64
		want       string
	}{
		{"keeps up at once", 0, []float64{60}, emulator.OutcomePassed},
		{"keeps up when slower", 1, []float64{60, 30}, emulator.OutcomePassed},
		{"never keeps up", 9, []float64{60, 30, 15}, emulator.OutcomeOverloaded},
	} {
		t.Run(c.name, func(t *testing.T) {
			var scales []float64
			sc := scenario.Scenario{Seed: 1, TimeScale: 60}
			res, ran := Retry(t, sc, func(sc scenario.Scenario) *emulator.Result {
				scales = append(scales, sc.TimeScale)
				s := emulator.Summary{Seed: sc.Seed, TimeScale: sc.TimeScale, Outcome: emulator.OutcomePassed}
				if len(scales) <= c.overloaded {
					s.Outcome, s.OutcomeReasons = emulator.OutcomeOverloaded, []string{"kept_up: clock lag"}
				}
				return &emulator.Result{Summary: s}
			})
			want, outcome := c.scales, c.want
			if Race && len(want) > 1 {
				want, outcome = want[:1], emulator.OutcomeOverloaded
			}
			if !slices.Equal(scales, want) || res.Summary.Outcome != outcome || ran.TimeScale != want[len(want)-1] {
				t.Fatalf("ran at time scales %v (returned %g), outcome %s; want %v, %s", scales, ran.TimeScale, res.Summary.Outcome, want, outcome)
			}
		})
	}
}
