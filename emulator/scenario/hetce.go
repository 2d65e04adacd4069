package scenario

import (
	"fmt"

	"github.com/gridbed/gridbed/actors/jobs"
)

// PeersCEs are the peers' heterogeneous computing elements (002 §4.1):
// besides its CPU every peer may hold a GPU of each of GpuTypes types,
// with probability GpuFraction each. GPU type k (from 1) takes CAN
// dimensions GPUDim(k) … GPUDim(k)+2: its clock speed, memory and cores
// (002 §4.1.1's 11-dimensional CAN for two GPU types).
type PeersCEs struct {
	GpuTypes    int
	GpuFraction float64
}

// On reports whether the peers have GPUs.
func (c PeersCEs) On() bool { return c.GpuTypes > 0 }

// GPUDim is the first CAN dimension of GPU type k (1, 2): its clock speed.
func GPUDim(k int) int { return 4 + 3*(k-1) }

// WorkloadCEs is which CE jobs name as dominant (002 §4.1.2): a share
// GpuFraction of the jobs a GPU (of a type drawn uniformly), the rest the
// CPU.
type WorkloadCEs struct {
	GpuFraction float64
}

// CEsOn reports whether the run models CEs: a scheme of 002 §4.3.1 with
// GPU types.
func (s Scenario) CEsOn() bool { return s.HetScheme() && s.Peers.CEs.On() }

// HetScheme reports whether matchmaking.scheme is one of 002 §4.3.1's
// (can-het, can-hom, cent-het), which need peers with CEs.
func (s Scenario) HetScheme() bool {
	switch s.Matchmaking.Scheme {
	case jobs.SchemeCANHet.String(), jobs.SchemeCANHom.String(), jobs.SchemeCENTHet.String():
		return true
	}
	return false
}

// ceFields are the keys of heterogeneous computing elements (002 §4.1).
var ceFields = []field{
	also(intField("peers.ces.gpu_types", func(s *Scenario) *int { return &s.Peers.CEs.GpuTypes }, 0, 0, 2,
		"a valid number of GPU types",
		"Heterogeneous computing elements (002 §4.1): how many GPU types a peer may hold besides its CPU, 0 to 2; 0: CPUs only. GPU type k takes three CAN dimensions from 4+3(k-1) — clock speed, memory, cores — so 1 type needs overlay.dimensions 7, 2 types 10 (002 §4.3.1's 11-dimensional CAN with the virtual one). A GPU is a dedicated CE (one job at a time), the CPU's cores are shared. Used by the schemes can-het, can-hom and cent-het (which need it, scheduling.mode vanilla and matchmaking.residue none); other schemes ignore the peers.ces and workload.ces keys."),
		func(s *Scenario) string {
			c := s.Peers.CEs
			switch {
			case !s.HetScheme():
				return ""
			case !c.On():
				return fmt.Sprintf("matchmaking.scheme %s matches over GPUs — write peers.ces.gpu_types: 1 or 2", s.Matchmaking.Scheme)
			case s.Overlay.Dimensions < GPUDim(c.GpuTypes)+3:
				return fmt.Sprintf("%d GPU types need their clock, memory and cores dimensions — write overlay.dimensions: %d or more", c.GpuTypes, GPUDim(c.GpuTypes)+3)
			case s.Scheduling.Mode != jobs.SchedVanilla.String():
				return fmt.Sprintf("run nodes with GPUs queue jobs per CE, without dynamic scheduling — write scheduling.mode: vanilla for matchmaking.scheme %s", s.Matchmaking.Scheme)
			case s.Matchmaking.Residue != jobs.ResidueNone:
				return fmt.Sprintf("peers with GPUs have no Residue-node model — write matchmaking.residue: none for matchmaking.scheme %s", s.Matchmaking.Scheme)
			}
			return ""
		}, "overlay.dimensions", "scheduling.mode", "matchmaking.residue", "matchmaking.scheme"),
	fractionField("peers.ces.gpu_fraction", func(s *Scenario) *float64 { return &s.Peers.CEs.GpuFraction }, 0.5,
		"a valid share of peers with a GPU",
		"Share of the peers holding a GPU of each type, drawn independently per type, 0 to 1 (002 §4.3.1: each node \"may include up to two different types of GPU\"; the dissertation gives no share, 0.5 is gridbed's choice). A GPU's clock speed is 0.5, 1 or 2 × nominal, mostly slow."),
	fractionField("workload.ces.gpu_fraction", func(s *Scenario) *float64 { return &s.Workload.CEs.GpuFraction }, 0.3,
		"a valid share of GPU jobs",
		"Share of the jobs whose dominant CE is a GPU (002 §4.1.2), of a type drawn uniformly among peers.ces.gpu_types, 0 to 1 (002 gives none: 0.3 is gridbed's choice); the rest are CPU jobs. A GPU job requires a GPU of its type, waits only for it (its driving thread shares a CPU core: it takes none of the node's cores, memory or disk) and runs its work divided by the GPU's clock speed. Used with peers.ces.gpu_types."),
}
