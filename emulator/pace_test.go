package emulator

import (
	"testing"
	"time"
)

// TestSuggestTimeScaleOneWay: the suggested time scale is one function of
// the run's pace: what keepUp stores is SuggestTimeScale of the pace it
// keeps, a run that did not keep up is planned from what its peers
// sustained (the overload guard's warnings, measured so far, and the
// summary's, over the whole run, alike), and a run that kept up is not.
func TestSuggestTimeScaleOneWay(t *testing.T) {
	e := keepUp(60, 30*time.Second, LagTolerance, 0.001, 0.004, 5000, 12*time.Second, 600, 0, nil)
	if e.SuggestedTimeScale != SuggestTimeScale(e.pace) || e.pace.Scale != 60 || e.pace.Tolerance != 0.3 {
		t.Fatalf("keepUp suggests %g, SuggestTimeScale of its pace %+v gives %g", e.SuggestedTimeScale, e.pace, SuggestTimeScale(e.pace))
	}
	// 1,000 peers × 10 neighbors / 30 s need 333 messages per emulated
	// second; 10,000 handled per wall second sustain × 30, planned at
	// 0.6 of it: 18, whichever moment measured it.
	behind := Pace{Scale: 100, LagP99: 0.5, Tolerance: 0.3, CPUPerEmulated: 0.001, Cores: 2,
		Handled: 100_000, Wall: 10 * time.Second, Need: 1000 * 10 / 30.0}
	if got := SuggestTimeScale(behind); got != 18 {
		t.Errorf("a run behind: %g, want 18 (what it sustained)", got)
	}
	mid := behind
	mid.Handled, mid.Wall = 50_000, 5*time.Second // half-way, the same pace
	if SuggestTimeScale(mid) != SuggestTimeScale(behind) {
		t.Errorf("the same pace measured half-way suggests %g, at the end %g", SuggestTimeScale(mid), SuggestTimeScale(behind))
	}
	kept := behind
	kept.KeptUp, kept.LagP99 = true, 0.001
	// Kept up: the lag bound 0.3 / 0.001 = 300 and the CPU bound 1200,
	// not what was handled (a run that keeps up handles what it needs).
	if got := SuggestTimeScale(kept); got != 300 {
		t.Errorf("a run that kept up: %g, want 300", got)
	}
	if got := SuggestTimeScale(Pace{Scale: 60, KeptUp: true}); got != 60 {
		t.Errorf("nothing measured: %g, want the requested 60", got)
	}
	if neededRate(verdictScenario(t, 1000, 10*time.Minute), 0) <= 0 {
		t.Error("no neighbor mean: no need")
	}
}
