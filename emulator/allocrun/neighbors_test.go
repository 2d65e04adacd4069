package allocrun

import (
	"context"
	"testing"

	alloc "github.com/gridbed/gridbed/actors/allocation"
)

func TestNeighborsExplore(t *testing.T) {
	for _, s := range []alloc.Scheme{alloc.Greedy, alloc.Social, alloc.MinNum} {
		for _, pl := range []alloc.Placement{alloc.Central, alloc.Neighbors} {
			cfg := cfgFor(alloc.GridAeolus, 2, 3, s, s, alloc.SpikesNone, 1)
			cfg.Placement, cfg.Seed = pl, 1
			res, err := RunSim(context.Background(), cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v %v: makespan %.0f relocs %d msgs %d nb %.1f bykind %v", s, pl, res.Makespan, res.Relocations, res.Messages, res.NeighborsMean, res.ByKind)
		}
	}
}
