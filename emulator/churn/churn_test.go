package churn

import (
	"math"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

func TestPlanIsPoissonWithEqualJoinsAndDepartures(t *testing.T) {
	seed := uint64(4)
	c := scenario.Churn{Interval: 10 * time.Second, Start: time.Minute, FailFraction: 0.3}
	plan := Plan(c, 10*time.Hour+time.Minute, seed)
	n := float64(len(plan))
	if math.Abs(n-3600) > 4*math.Sqrt(3600) { // 10 h at one event per 10 s
		t.Fatalf("seed %d: %v events, want about 3600", seed, n)
	}
	var joins, leaves, fails float64
	for i, e := range plan {
		if e.At < c.Start || (i > 0 && e.At < plan[i-1].At) {
			t.Fatalf("seed %d: event %d at %v out of order or before start", seed, i, e.At)
		}
		switch e.Kind {
		case Join:
			joins++
		case Leave:
			leaves++
		case Fail:
			fails++
		}
	}
	if math.Abs(joins/n-0.5) > 0.03 {
		t.Errorf("seed %d: join share %.3f, want 0.5", seed, joins/n)
	}
	if f := fails / (fails + leaves); math.Abs(f-0.3) > 0.04 {
		t.Errorf("seed %d: failure share of departures %.3f, want 0.3", seed, f)
	}
	if int(joins) != Joins(plan) {
		t.Error("Joins miscounts")
	}
}

func TestPlanWindowAndDeterminism(t *testing.T) {
	if Plan(scenario.Churn{}, time.Hour, 1) != nil {
		t.Fatal("no interval must mean no churn")
	}
	c := scenario.Churn{Interval: time.Second, Start: time.Minute, Stop: 2 * time.Minute}
	a, b := Plan(c, time.Hour, 7), Plan(c, time.Hour, 7)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("plans %d and %d events", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different plans")
		}
		if a[i].At < c.Start || a[i].At >= c.Stop {
			t.Fatalf("event at %v outside [start, stop)", a[i].At)
		}
	}
}
