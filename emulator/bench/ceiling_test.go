package bench

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestCeilingsReportTheMedianTrial: several measurements of the ceiling
// give their median as the baseline, with every trial's rate and their
// range beside it (the rates themselves are the machine's, not asserted).
func TestCeilingsReportTheMedianTrial(t *testing.T) {
	c, err := Ceilings(context.Background(), CeilingOptions{Actors: 50, InFlight: 64, Size: 100, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond, Trials: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Trials) != 3 {
		t.Fatalf("trials %v, want 3", c.Trials)
	}
	sorted := slices.Sorted(slices.Values(c.Trials))
	if c.MessagesPerSecond != sorted[1] || c.Min != sorted[0] || c.Max != sorted[2] || c.Min <= 0 {
		t.Errorf("ceiling %.0f (min %.0f, max %.0f), want the median of %v", c.MessagesPerSecond, c.Min, c.Max, c.Trials)
	}
	if c.Delivered == 0 || c.Seconds <= 0 {
		t.Errorf("the median trial's delivered %d in %.3f s", c.Delivered, c.Seconds)
	}
}
