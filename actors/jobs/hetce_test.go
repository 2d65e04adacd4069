package jobs

import (
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/wire"
)

// tGPUReqV marks a GPU job: its virtual coordinate (which capability
// ignores) names its dominant CE for tCEs.
const tGPUReqV = tReqV + 1

// tCEs is the test CE model: every node has a 2-core CPU at clock 1 and,
// when its CPU coordinate lies in the top quarter, one GPU whose clock is
// its virtual coordinate; a job whose virtual coordinate is tGPUReqV is a
// GPU job.
type tCEs struct{}

func (tCEs) CEs(p []uint32) []hetce.CE {
	gpu := hetce.CE{Dedicated: true}
	if uint64(p[0]) >= tQ3 {
		gpu.Units, gpu.Speed = 1, float64(p[2])
	}
	return []hetce.CE{{Units: 2, Speed: 1}, gpu}
}

func (tCEs) Dominant(req []uint32) int {
	if req[2] == tGPUReqV {
		return 1
	}
	return hetce.CPU
}

func tGPUSpec(id uint64, work time.Duration) *wire.JobSpec {
	s := tSpec(id, work)
	s.Req[2] = tGPUReqV
	return s
}

// A run node with a 2-core CPU and a GPU at clock 2 (002 §4.1.2): the GPU
// is dedicated — a second GPU job waits for it — while a CPU job behind
// that waiting GPU job starts at once (each CE has its own queue), and a
// GPU job runs its work over the GPU's clock, a CPU job over the CPU's.
func TestRunNodeQueuesPerCE(t *testing.T) {
	v := &fakeView{id: 2, zone: zUp0(), point: pCap(2), next: 7}
	n := tNew(v, Config{Scheme: SchemeCANHet, Cores: 2, Speed: 1, CEs: tCEs{}}, 2, nil)
	t0 := 100 * time.Second
	assign := func(spec *wire.JobSpec) Ready {
		n.Step(t0, 1, &wire.JobAssign{Job: spec, Owner: 1, Epoch: 1})
		return tDrain(n)
	}
	if r := assign(tGPUSpec(1, 10*time.Second)); !slices.Equal(tTimers(r, core.TimerRunDone), []time.Duration{t0 + 5*time.Second}) {
		t.Fatalf("GPU job 1: run timers %v, want [%v] (work 10 s over GPU clock 2)", tTimers(r, core.TimerRunDone), t0+5*time.Second)
	}
	if r := assign(tGPUSpec(2, 10*time.Second)); len(tEvents(r, EvStarted)) != 0 {
		t.Fatalf("GPU job 2 started on a busy dedicated GPU: %+v", r.Events)
	}
	r := assign(tSpec(3, 10*time.Second))
	if e := tOneEvent(t, r, EvStarted); e.Job != 3 {
		t.Fatalf("started %+v, want CPU job 3 past the waiting GPU job", e)
	}
	if at := tTimers(r, core.TimerRunDone); !slices.Equal(at, []time.Duration{t0 + 10*time.Second}) {
		t.Fatalf("CPU job 3: run timers %v, want [%v] (CPU clock 1)", at, t0+10*time.Second)
	}
	want := []hetce.Load{{Queue: 1, Required: 1}, {Queue: 2, Waiting: 1, Required: 2}}
	if got := n.ceLoads(); !slices.Equal(got, want) {
		t.Fatalf("CE loads %+v, want %+v", got, want)
	}
	l := n.LoadInfo()
	if len(l.Ces) != 2 || l.Ces[1].Queue != 2 || l.Ces[1].Waiting != 1 || l.Ces[1].Units != 1 || l.Ces[0].Units != 2 {
		t.Fatalf("heartbeat CE loads %v", l.Ces)
	}
	n.Tick(t0+5*time.Second, core.TimerRunDone)
	reported := slices.Clone(n.Ready().CELoads)
	r = tDrain(n)
	if e := tOneEvent(t, r, EvStarted); e.Job != 2 {
		t.Fatalf("started %+v, want GPU job 2 once job 1 freed the GPU", e)
	}
	if !slices.Equal(reported, []hetce.Load{{Queue: 1, Required: 1}, {Queue: 1, Required: 1}}) {
		t.Fatalf("reported CE loads %+v", reported)
	}
}

// tHetLoad is a heartbeat load with CEs: CPU cores free of 2, the GPU's
// jobs (queued or running) and waiting ones.
func tHetLoad(queue uint32, point can.Point, cpuFree float32, gpuQueue, gpuWaiting uint32) *wire.Load {
	l := tLoad(queue, uint32(cpuFree), 1, point)
	l.Cores, l.Residual = 2, []float32{cpuFree, 0, 0}
	gpu := float32(0)
	if uint64(point[0]) >= tQ3 {
		gpu = 1
	}
	l.Ces = []*wire.CELoad{{Queue: queue - gpuQueue, Required: float32(queue - gpuQueue), Units: 2}, {Queue: gpuQueue, Waiting: gpuWaiting, Required: float32(gpuQueue), Units: gpu}}
	return l
}

// 002 Algorithm 2 for GPU jobs among an owner's neighbors: U0 has free
// CPU cores but its GPU is busy (not acceptable for a GPU job, though
// can-hom, blind to CEs, takes it for free); U1's GPU (clock 3) is idle
// while a CPU job runs (acceptable); U2 runs nothing at all (free) with a
// GPU at clock 1. can-het sends the first job to the free node U2 (line 6:
// free before faster), the second to U1 (line 8: U2's GPU is now taken in
// our estimate), and the third — nothing acceptable, nothing to push
// towards — to the least score F = queue / clock (Eq 4.1: U1 1/3 against
// U0's 1/2 and U2's 1/1).
func TestCANHetAlgorithm2(t *testing.T) {
	nbs := func() []*overlay.Neighbor {
		return []*overlay.Neighbor{
			tNb(idU0, zUp0(), tHetLoad(1, pCap(2), 2, 1, 0)),
			tNb(idU1, zUp1(), tHetLoad(1, pCap(3), 1, 0, 0)),
			tNb(idU2, zUp2(), tHetLoad(0, pCap(1), 2, 0, 0)),
		}
	}
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), nbs: nbs()}
	n := tNew(v, Config{Scheme: SchemeCANHet, Cores: 2, CEs: tCEs{}}, 1, nil)
	for i, want := range []core.NodeID{idU2, idU1, idU1} {
		n.Step(5*time.Second, 50, &wire.JobSubmit{Job: tGPUSpec(uint64(7+i), time.Second)})
		if a := tOne[*wire.JobAssign](t, tDrain(n), want); a.Job.GetId() != uint64(7+i) {
			t.Fatalf("job %d: JobAssign %v", 7+i, a)
		}
	}
	// can-hom (002 §3.1.4's CAN-P, blind to CEs) takes U0's free cores for
	// a free node and sends the GPU job there, to wait for the busy GPU.
	v = &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), nbs: nbs()}
	h := tNew(v, Config{Scheme: SchemeCANHom, Cores: 2, CEs: tCEs{}}, 1, nil)
	h.Step(5*time.Second, 50, &wire.JobSubmit{Job: tGPUSpec(7, time.Second)})
	if a := tOne[*wire.JobAssign](t, tDrain(h), idU0); a.Job.GetId() != 7 {
		t.Fatalf("can-hom: JobAssign %v", a)
	}
}

// can-het pushes a job towards the upper neighbor whose aggregated load of
// the job's dominant CE type minimizes F_D (Eq 4.3) when no neighbor is
// acceptable and the stop (Eq 4.4) does not come: U0 has 4 GPUs above it
// with 8 jobs (F = 8/16), U1 2 GPUs with 1 job (F = 1/4). This node's own
// aggregate counts 50 nodes above it, so P = 1/51² makes stopping unlikely.
func TestCANHetPushesAlongGPULoad(t *testing.T) {
	busy := func(id core.NodeID, z can.Zone, d int, units, req float32) *overlay.Neighbor {
		l := tHetLoad(2, pCap(1), 0, 1, 1)
		agg := make([]*wire.AggLoad, 3)
		for i := range agg {
			agg[i] = &wire.AggLoad{}
		}
		agg[d] = &wire.AggLoad{Nodes: 10, Cores: units, Queue: req}
		l.Ces[1].Agg = agg
		return tNb(id, z, l)
	}
	pushes := 0
	for seed := uint64(1); seed <= 20; seed++ {
		v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), nbs: []*overlay.Neighbor{
			busy(idU0, zUp0(), 0, 4, 8), busy(idU1, zUp1(), 1, 2, 1),
		}}
		n := tNew(v, Config{Scheme: SchemeCANHet, Cores: 2, CEs: tCEs{}}, seed, nil)
		n.ai = []load.Agg{{Nodes: 50}, {Nodes: 50}, {Nodes: 50}}
		n.Step(5*time.Second, 50, &wire.JobSubmit{Job: tGPUSpec(7, time.Second)})
		r := tDrain(n)
		if as, _ := tAll[*wire.JobAssign](r); len(as) > 0 {
			continue // stopped (probability 1/2601): assigned by score
		}
		if p := tOne[*wire.JobPush](t, r, idU1); p.Job.GetId() != 7 {
			t.Fatalf("seed %d: JobPush %v", seed, p)
		}
		pushes++
	}
	if pushes < 19 {
		t.Fatalf("%d of 20 seeds pushed, want nearly all (stop probability 1/2601)", pushes)
	}
}
