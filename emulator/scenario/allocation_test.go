package scenario

import (
	"strings"
	"testing"

	alloc "github.com/gridbed/gridbed/actors/allocation"
)

// allocation.weights.*: 004 §3's W by default, any positive component
// otherwise, a bad one named with its file and line.
func TestAllocationWeights(t *testing.T) {
	s, err := Parse("in.yaml", []byte("allocation:\n  grid: synthetic\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Allocation.Weights.Vector() != alloc.Weights {
		t.Errorf("default weights %v, want 004's %v", s.Allocation.Weights, alloc.Weights)
	}
	s, err = Parse("in.yaml", []byte("allocation:\n  grid: synthetic\n  weights:\n    cpu: 1e-4\n    disk: 0.02\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (alloc.Vector{1e-4, 0.02, 0.1}); s.Allocation.Weights.Vector() != want {
		t.Errorf("weights %v, want %v", s.Allocation.Weights, want)
	}
	_, err = Parse("in.yaml", []byte("allocation:\n  grid: synthetic\n  weights:\n    network: 0\n"))
	if err == nil || !strings.Contains(err.Error(), "in.yaml:4:") || !strings.Contains(err.Error(), "allocation.weights.network") {
		t.Errorf("a zero weight: got %v, want an error at in.yaml:4 naming allocation.weights.network", err)
	}
}
