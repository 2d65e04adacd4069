package emulator

import (
	"math/rand/v2"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/hetce"
	"github.com/gridbed/gridbed/emulator/ledger"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/workload"
	"github.com/gridbed/gridbed/metrics"
)

// Heterogeneous computing elements (002 §4.1) in a run: the CEs a peer's
// point gives (ceModel, the jobs.CEModel every job core and cent-het read),
// the GPUs the population holds (placeCEs) and the dominant CE each job
// names (assignDominantCEs). GPU type k takes the CAN dimensions
// scenario.GPUDim(k) … +2 — clock speed, memory, cores — whatever the
// catalog names them: every GPU type reads the catalog's gpu_speed,
// gpu_memory and gpu_cores levels.

// gpuCatalog is the catalog dimension of a GPU type's clock speed; memory
// and cores follow it.
const gpuCatalog = 4

// ceModel is jobs.CEModel over the population's coordinates: the CPU
// (cores dimension 3, clock cpu_speed) and types GPU types.
type ceModel struct{ types int }

// CEs is a node's CPU, not dedicated, then each GPU type, dedicated: one
// unit at its clock speed when the node has one, none when its clock
// coordinate lies in the catalog's lowest band (speed 0).
func (m ceModel) CEs(p []uint32) []hetce.CE {
	ces := []hetce.CE{{Units: resources{dims: len(p) - 1}.Capacity(p)[0], Speed: population.CapabilityAt(p, 0)}}
	for k := 1; k <= m.types; k++ {
		ce := hetce.CE{Dedicated: true}
		if d := scenario.GPUDim(k); d < len(p)-1 {
			if s := gpuSpeedAt(p[d]); s > 0 {
				ce.Units, ce.Speed = 1, s
			}
		}
		ces = append(ces, ce)
	}
	return ces
}

// Dominant is the GPU type whose clock coordinate a job requires (the
// first, should it require several), else the CPU.
func (m ceModel) Dominant(req []uint32) int {
	for k := 1; k <= m.types; k++ {
		if d := scenario.GPUDim(k); d < len(req)-1 && req[d] > 0 {
			return k
		}
	}
	return hetce.CPU
}

// gpuSpeedAt reads a GPU clock speed from its coordinate through the
// catalog's gpu_speed levels: 0 in the lowest band (no GPU).
func gpuSpeedAt(c uint32) float64 {
	n := len(population.Catalog[gpuCatalog].Levels)
	x := float64(c) / float64(can.Span) * float64(n)
	if x < 1 {
		return 0
	}
	lv := make([]float64, gpuCatalog+1)
	lv[gpuCatalog] = x
	return population.Node{Levels: lv}.Capability(gpuCatalog)
}

// placeCEs gives each node a GPU of each type with probability
// c.GpuFraction, from a stream of its own: clock speed, memory and cores
// at levels above the catalog's lowest (no GPU), mostly weak as the
// population's other resources, fractional in a mixed population; a node
// without one has coordinate 0 in its three dimensions.
func placeCEs(nodes []population.Node, c scenario.PeersCEs, kind string, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x636573)) // "ces"
	for i := range nodes {
		nd := &nodes[i]
		for k := 1; k <= c.GpuTypes; k++ {
			has := r.Float64() < c.GpuFraction
			for j := 0; j < 3; j++ {
				d := scenario.GPUDim(k) + j
				n := len(population.Catalog[gpuCatalog+j].Levels)
				x := 0.0
				if has {
					x = 1 + float64(population.Pick(r, population.Geometric(n-1)))
					if kind == population.Mixed && int(x) < n-1 {
						x += r.Float64()
					}
				}
				if d < len(nd.Levels) {
					nd.Levels[d] = x
				}
				nd.Point[d] = population.Coord(x, n)
			}
		}
	}
}

// assignDominantCEs makes a share w.GpuFraction of the jobs GPU jobs, of
// a type drawn uniformly, from a stream of its own: a GPU job requires a
// GPU of its type (its clock coordinate at the catalog's first GPU level,
// any speed) and no more than one CPU core (its driving thread); every
// other job requires no GPU.
func assignDominantCEs(jobs []workload.Job, w scenario.WorkloadCEs, types int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x6365736a)) // "cesj"
	n := len(population.Catalog[gpuCatalog].Levels)
	for i := range jobs {
		req := jobs[i].Req
		for k := 1; k <= types; k++ {
			for j := 0; j < 3; j++ {
				req[scenario.GPUDim(k)+j] = 0
			}
		}
		if r.Float64() >= w.GpuFraction {
			continue
		}
		k := 1 + r.IntN(types)
		req[scenario.GPUDim(k)] = population.Coord(1, n)
		req[3] = 0 // one CPU thread drives the GPU (002 §4.1.2)
	}
}

// CEJobs is summary.json's jobs.ces: the jobs by dominant CE (002 §4.1).
type CEJobs struct {
	// GPUTypes is peers.ces.gpu_types.
	GPUTypes int `json:"gpu_types"`
	// CPU and GPU are the jobs whose dominant CE is the CPU, a GPU (of
	// any type).
	CPU CEJobClass `json:"cpu"`
	GPU CEJobClass `json:"gpu"`
}

// CEJobClass counts the jobs of one dominant CE class and their wait.
type CEJobClass struct {
	Submitted uint64 `json:"submitted"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	// WaitSecondsMean is the mean wait (first submission to start) of
	// those that completed; null when none did.
	WaitSecondsMean *float64 `json:"wait_seconds_mean"`
}

// ceJobs is jobs.ces at the end of the run (t): nil unless the run
// models CEs.
func (j *jobRun) ceJobs(t time.Duration) *CEJobs {
	if !j.sc.CEsOn() {
		return nil
	}
	m := ceModel{types: j.sc.Peers.CEs.GpuTypes}
	gpu := map[uint64]bool{}
	for _, job := range j.jobs {
		if m.Dominant(job.Req) != hetce.CPU {
			gpu[job.ID] = true
		}
	}
	out := &CEJobs{GPUTypes: m.types}
	var sums [2]float64
	var started [2]int
	recs, _ := j.ledger.Records()
	for _, r := range recs {
		k, c := 0, &out.CPU
		if gpu[r.ID] {
			k, c = 1, &out.GPU
		}
		c.Submitted++
		switch {
		case r.Ended && r.Failed:
			c.Failed++
		case r.Ended:
			c.Completed++
		}
		if r.Completions > 0 && r.StartedAt <= t {
			sums[k] += (r.StartedAt - r.Submitted).Seconds()
			started[k]++
		}
	}
	for k, c := range []*CEJobClass{&out.CPU, &out.GPU} {
		if started[k] > 0 {
			v := sums[k] / float64(started[k])
			c.WaitSecondsMean = &v
		}
	}
	return out
}

// enableCEs notes the GPU jobs and registers gridbed_job_ce_wait_seconds.
func (j *jobRun) enableCEs(m *metrics.Run) {
	model := ceModel{types: j.sc.Peers.CEs.GpuTypes}
	j.gpuJobs = map[uint64]bool{}
	for _, job := range j.jobs {
		if model.Dominant(job.Req) != hetce.CPU {
			j.gpuJobs[job.ID] = true
		}
	}
	j.ceWait = m.EnableCEWait()
}

// observeCEWait records a completed job's wait by its dominant CE.
func (j *jobRun) observeCEWait(r *ledger.Record) {
	if j.ceWait == nil {
		return
	}
	ce := metrics.CEClasses[0]
	if j.gpuJobs[r.ID] {
		ce = metrics.CEClasses[1]
	}
	j.ceWait.WithLabelValues(ce).Observe((r.StartedAt - r.Submitted).Seconds())
}
