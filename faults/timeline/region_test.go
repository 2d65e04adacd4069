package timeline

import (
	"testing"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/faults/link"
)

// TestWeightedRegions: a latency matrix's regions take the addresses in
// proportion to their weights (3:1 here), the same region for the same
// address and seed every time.
func TestWeightedRegions(t *testing.T) {
	m, err := link.ParseMatrix([]byte("from,to,median_ms,jitter_ms,weight\na,a,1,0,3\na,b,2,0,\nb,a,2,0,\nb,b,1,0,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8000
	region := weightedRegionOf(7, m)
	first := 0
	for a := bus.Address(1); a <= n; a++ {
		r := region(a)
		if r != region(a) || r < 0 || r > 1 {
			t.Fatalf("address %d: region %d, then %d", a, r, region(a))
		}
		if r == 0 {
			first++
		}
	}
	if share := float64(first) / n; share < 0.73 || share > 0.77 {
		t.Errorf("region a holds %.3f of the addresses, want 0.75 (weights 3:1)", share)
	}
}
