package ledger

import (
	"testing"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/wire"
)

// tCEModel: a node's point is (cores, GPU clock, virtual); a job whose
// second coordinate is above 0 is a GPU job (and requires a GPU).
type tCEModel struct{}

func (tCEModel) CEs(p []uint32) []hetce.CE {
	gpu := hetce.CE{Dedicated: true}
	if p[1] > 0 {
		gpu.Units, gpu.Speed = 1, float64(p[1])
	}
	return []hetce.CE{{Units: float64(p[0]), Speed: 1}, gpu}
}

func (tCEModel) Dominant(req []uint32) int {
	if req[1] > 0 {
		return 1
	}
	return hetce.CPU
}

// cent-het, the central baseline that knows CEs: a GPU job goes to an
// idle GPU, a free node first, the fastest GPU first; with every GPU taken
// (as its own picks count them at once) to the least Eq 4.1 score; a CPU
// job never to a node only because its GPU is idle.
func TestCentHetPick(t *testing.T) {
	l := New(nil, nil)
	l.SetCEs(tCEModel{})
	l.SetDemand(func(req []uint32) jobs.Vec { return jobs.Vec{jobs.ResCores: 1} })
	// Node 1: 2 cores, GPU clock 3, running a CPU job (acceptable, not
	// free). Node 2: 2 cores, GPU clock 1, idle (free). Node 3: no GPU.
	for id, p := range map[core.NodeID]can.Point{1: {2, 3, 0}, 2: {2, 1, 0}, 3: {4, 0, 0}} {
		l.NodeJoined(id, p, 1, int(p[0]))
		l.Residual(id, jobs.Vec{jobs.ResCores: float64(p[0])})
	}
	l.QueueLen(1, 1)
	l.Residual(1, jobs.Vec{jobs.ResCores: 1})
	l.CELoad(1, []hetce.Load{{Queue: 1, Required: 1}, {}})
	gpuJob := func(id uint64) *wire.JobSpec { return &wire.JobSpec{Id: id, Req: []uint32{0, 1, 0}} }
	for i, want := range []core.NodeID{2, 1, 1, 1, 1, 2} {
		// 2 (free, though slower), then 1 (acceptable); then none is
		// acceptable and Eq 4.1 decides: node 1 (clock 3) scores 1/3
		// against node 2's 1/1, then 2/3, then 3/3 (a tie: the faster),
		// then 4/3 — node 2.
		if got := l.Pick(gpuJob(uint64(i + 1))); got != want {
			t.Fatalf("GPU job %d: picked node %d, want %d", i+1, got, want)
		}
	}
	// A CPU job: node 3 is free (a GPU busy elsewhere does not matter).
	if got := l.Pick(&wire.JobSpec{Id: 9, Req: []uint32{0, 0, 0}}); got != 3 {
		t.Fatalf("CPU job: picked node %d, want 3", got)
	}
}
