package allocrun

import (
	"context"
	"fmt"
	"testing"
	"time"

	alloc "github.com/gridbed/gridbed/actors/allocation"
)

func cfgFor(grid string, set, order int, a, rl alloc.Scheme, spikes string, seed uint64) Config {
	sp, _ := alloc.Spikes(spikes)
	return Config{Speeds: alloc.Grid(grid), Jobs: alloc.JobSet(set, order, Rand(seed)), Spikes: sp,
		Allocator: a, Relocator: rl, Theta: 0.1, MaxMoves: 3, Limit: 100 * time.Hour}
}

func TestShapeExplore(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	schemes := []alloc.Scheme{alloc.Greedy, alloc.Social, alloc.MinNum}
	for _, spikes := range []string{"none", "fig4"} {
		for _, order := range []int{1, 5, 10, 20, 24} {
			line := fmt.Sprintf("%s order %2d:", spikes, order)
			for _, s := range schemes {
				for _, rl := range []alloc.Scheme{alloc.None, s} {
					start := time.Now()
					res, err := RunSim(context.Background(), cfgFor("aeolus", 2, order, s, rl, spikes, 1), 1)
					if err != nil {
						t.Fatal(err)
					}
					line += fmt.Sprintf(" %v/%v=%.0f(%d,%.1fs)", s, rl, res.Makespan, res.Relocations, time.Since(start).Seconds())
				}
			}
			t.Log(line)
		}
	}
}
