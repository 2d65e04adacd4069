package oracle

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkCheck10k measures the oracle on a converged 10,000-peer overlay
// (3 dimensions, every table exact).
func BenchmarkCheck10k(b *testing.B) {
	snaps := randomTiling(rand.New(rand.NewPCG(1, 9)), 3, 10000, 0)
	b.ResetTimer()
	for b.Loop() {
		if rep := Check(snaps, 3); rep.BrokenLinks != 0 || rep.ZoneGaps != 0 {
			b.Fatalf("%+v", rep)
		}
	}
}
