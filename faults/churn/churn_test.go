package churn

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// TestLifetimeMeans: every lifetime distribution has the configured mean
// (within 5% over 100,000 draws), and the shapes differ as they should:
// pareto and weibull with k < 1 have far more short sessions than the
// exponential.
func TestLifetimeMeans(t *testing.T) {
	const n = 100_000
	for _, l := range []scenario.Lifetime{
		{Dist: "exponential", Mean: 30 * time.Minute},
		{Dist: "pareto", Mean: 30 * time.Minute, Shape: 3},
		{Dist: "weibull", Mean: 30 * time.Minute, Shape: 0.5},
		{Dist: "weibull", Mean: 30 * time.Minute, Shape: 2},
	} {
		r := rand.New(rand.NewPCG(11, 12))
		var sum float64
		short := 0
		for i := 0; i < n; i++ {
			v := SampleLifetime(l, r)
			sum += float64(v)
			if v < 3*time.Minute {
				short++
			}
		}
		mean := time.Duration(sum / n)
		if d := math.Abs(float64(mean-l.Mean)) / float64(l.Mean); d > 0.05 {
			t.Errorf("%s shape %g: mean %v, want %v ±5%% (seed 11)", l.Dist, l.Shape, mean, l.Mean)
		}
		// Share below a tenth of the mean: exponential 9.5%, weibull
		// k=0.5 about 36%, weibull k=2 under 1%, pareto α=3 none (its
		// minimum is two thirds of the mean).
		want := map[string][2]float64{"exponential": {0.08, 0.11}, "pareto": {0, 0}, "weibull0.5": {0.3, 0.42}, "weibull2": {0, 0.02}}
		key := l.Dist
		if l.Dist == "weibull" {
			key += fmt.Sprint(l.Shape)
		}
		if f := float64(short) / n; f < want[key][0] || f > want[key][1] {
			t.Errorf("%s shape %g: %.3f of lifetimes under a tenth of the mean, want %v", l.Dist, l.Shape, f, want[key])
		}
	}
}

// TestLifetimesPlan: the session model replaces each slot's peer after its
// lifetime, in time order, only between start and stop, and crashes about
// fail_fraction of the departures.
func TestLifetimesPlan(t *testing.T) {
	c := scenario.Churn{Start: 5 * time.Minute, Stop: 65 * time.Minute, FailFraction: 0.25,
		Lifetime: scenario.Lifetime{Dist: "exponential", Mean: 10 * time.Minute}}
	plan := Lifetimes(c, 200, 2*time.Hour, 3)
	// 200 slots × 60 min / 10 min ≈ 1,200 turnovers.
	if len(plan) < 1000 || len(plan) > 1400 {
		t.Fatalf("%d turnovers, want about 1,200 (seed 3)", len(plan))
	}
	fails := 0
	for i, e := range plan {
		if e.At < c.Start || e.At >= c.Stop || e.Slot < 0 || e.Slot >= 200 || (i > 0 && e.At < plan[i-1].At) {
			t.Fatalf("turnover %d %+v out of place (seed 3)", i, e)
		}
		if e.Fail {
			fails++
		}
	}
	if f := float64(fails) / float64(len(plan)); f < 0.2 || f > 0.3 {
		t.Errorf("%.2f of departures crash, want about 0.25 (seed 3)", f)
	}
	c.Lifetime.Dist = scenario.LifetimeNone
	if Lifetimes(c, 200, 2*time.Hour, 3) != nil {
		t.Error("a plan without the session model")
	}
}
