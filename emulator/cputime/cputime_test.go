package cputime

import "testing"

// TestProcessGrows: the process's CPU time is positive and does not go
// back after some work.
func TestProcessGrows(t *testing.T) {
	a := Process()
	x := 0
	for i := range 20_000_000 {
		x ^= i * i
	}
	b := Process()
	if a <= 0 || b < a {
		t.Errorf("CPU time %v then %v (work %d): want positive and not decreasing", a, b, x)
	}
}
