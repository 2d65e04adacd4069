package jobs

import (
	"errors"

	"github.com/gridbed/gridbed/actors/core"
)

// Scheme is a matchmaking scheme (003 §5.3): Config.Scheme.
type Scheme string

// Matchmaking schemes (003 §5.3).
const (
	// SchemeCAN is basic CAN matchmaking (003 §4.2): the owner picks the
	// least loaded capable node among itself and its neighbors.
	SchemeCAN Scheme = "can"
	// SchemeCANP pushes the job along aggregated load (003 §4.4, Eqs 1-5).
	SchemeCANP Scheme = "can-p"
	// SchemeCENT is the greedy online centralized matchmaker with the
	// oracle's global view at zero message cost (003 §5.2; 002 Fig 3.17).
	SchemeCENT Scheme = "cent"
	// SchemeCENTQueue is 000 §V-A's greedy online centralized scheduler:
	// one global queue, a job starting on a node whose residual resources
	// fit it as soon as there is one (asked again every period).
	SchemeCENTQueue Scheme = "cent-queue"
	// SchemeMP is Multiple Peers (002 §3.3, Condor's static partitioning):
	// one peer per core, each with an equal share of its node's memory
	// and disk (the population does the split), matched as CAN-P. A peer
	// runs jobs of one core only: the owner fails a job that requires
	// more (ReasonMultiCore) without searching.
	SchemeMP Scheme = "mp"
	// SchemeCANHet is 002 Algorithm 2 over heterogeneous computing
	// elements (002 §4.1): acceptable nodes first, pushes along the
	// aggregated load of the job's dominant CE type (Eq 4.3), the run node
	// by Eqs 4.1/4.2. Needs Config.CEs.
	SchemeCANHet Scheme = "can-het"
	// SchemeCANHom is 002 §4.3.1's can-hom: the multi-core CAN-P of 002
	// §3.1.4, oblivious to CEs — matched as SchemeCANP while run nodes run
	// jobs on their dominant CE.
	SchemeCANHom Scheme = "can-hom"
	// SchemeCENTHet is 002 §4.3.1's central baseline that knows CEs: a
	// greedy online pick over the global view of every node's CEs (an
	// acceptable node, free first, fastest dominant CE; else the least
	// score, Eqs 4.1/4.2), at no message cost.
	SchemeCENTHet Scheme = "cent-het"
	// SchemeRNT is the Rendezvous Node Tree over Chord (003 §5.1): the
	// owner hands matchmaking to its Searcher (actors/rnt), which
	// searches the tree from the owner's place in it.
	SchemeRNT Scheme = "rnt"
)

// Schemes lists the matchmaking schemes.
var Schemes = []Scheme{SchemeCAN, SchemeCANP, SchemeCENT, SchemeCENTQueue, SchemeMP, SchemeCANHet, SchemeCANHom, SchemeCENTHet, SchemeRNT}

// ParseScheme returns the matchmaking scheme named s.
func ParseScheme(s string) (Scheme, error) { return core.ParseEnum(s, "matchmaking scheme", Schemes) }

func (s Scheme) String() string { return string(s) }

// central reports whether the scheme is one of the centralized ones.
func (s Scheme) central() bool { return s == SchemeCENT || s == SchemeCENTQueue || s == SchemeCENTHet }

// SchedMode is a dynamic scheduling mode (000 §V-B): Config.Mode.
type SchedMode string

// Dynamic scheduling modes (000 §V-B).
const (
	// SchedVanilla: initial matchmaking only; run nodes start jobs FCFS.
	SchedVanilla SchedMode = "vanilla"
	// SchedL adds local scheduling: backfilling with the BC rule (000 §IV-A).
	SchedL SchedMode = "l"
	// SchedLIPush and SchedLIPull add internode scheduling (000 §IV-B).
	SchedLIPush SchedMode = "li-push"
	SchedLIPull SchedMode = "li-pull"
	// SchedLIQPush and SchedLIQPull add queue balancing (000 §IV-C).
	SchedLIQPush SchedMode = "liq-push"
	SchedLIQPull SchedMode = "liq-pull"
)

// SchedModes lists the scheduling modes in the paper's order.
var SchedModes = []SchedMode{SchedVanilla, SchedL, SchedLIPush, SchedLIPull, SchedLIQPush, SchedLIQPull}

// ParseSchedMode returns the scheduling mode named s.
func ParseSchedMode(s string) (SchedMode, error) {
	return core.ParseEnum(s, "scheduling mode", SchedModes)
}

func (m SchedMode) String() string { return string(m) }

// Internode reports whether the mode schedules between nodes (000 §IV-B):
// the li-* and liq-* modes.
func (m SchedMode) Internode() bool {
	switch m {
	case SchedLIPush, SchedLIPull, SchedLIQPush, SchedLIQPull:
		return true
	}
	return false
}

// Balancing reports whether the mode balances queues (000 §IV-C): the
// liq-* modes.
func (m SchedMode) Balancing() bool { return m == SchedLIQPush || m == SchedLIQPull }

// Pulls reports whether internode scheduling and queue balancing pull
// (the idle side asks) rather than push: the *-pull modes.
func (m SchedMode) Pulls() bool { return m == SchedLIPull || m == SchedLIQPull }

// ResidueModel is how a multi-core node's Residue-node is represented
// (002 §3.1): Config.Residue.
type ResidueModel string

// Residue-node representations (002 §3.1).
const (
	// ResidueNone: no Residue-node; matchmaking sees a node's residual
	// resources only on its own heartbeat, to its neighbors.
	ResidueNone ResidueModel = "none"
	// ResidueBalloon is the Balloon model (002 §3.1.3): a multi-core node
	// running jobs with a free core attaches its Residue-node to the owner
	// of the zone containing the residue's point.
	ResidueBalloon ResidueModel = "balloon"
	// ResidueDualCAN is the Dual-CAN model (002 §3.1.2): the Residue-node
	// is a member of a second CAN of its own, the Secondary CAN, which
	// matchmaking searches at the probabilistic stop (002 Algorithm 1).
	ResidueDualCAN ResidueModel = "dual-can"
)

// ResidueModels lists the Residue-node representations.
var ResidueModels = []ResidueModel{ResidueNone, ResidueBalloon, ResidueDualCAN}

// ParseResidueModel returns the Residue-node representation named s.
func ParseResidueModel(s string) (ResidueModel, error) {
	return core.ParseEnum(s, "residue representation", ResidueModels)
}

func (r ResidueModel) String() string { return string(r) }

// PullTarget is which neighbor an idle node's internode PULL request
// goes to (000 §IV-B): Config.PullTarget.
type PullTarget string

// Values of Config.PullTarget: the two readings of 000 §IV-B's "the node
// with maximum queue size among its neighbors".
const (
	// PullTargetWaiting: the neighbor with the longest waiting queue, and
	// only a neighbor whose last heartbeat showed jobs waiting — an idle
	// node whose neighbors all seem busy-but-not-waiting asks nobody.
	PullTargetWaiting PullTarget = "waiting"
	// PullTargetQueue: the neighbor with the largest queue, running jobs
	// included (Load's queue), asked whatever its heartbeat said of its
	// waiting jobs — an idle node asks every round, going through its
	// neighbors not contacted recently ("continues to look for another
	// potential sender ... among neighbors not contacted recently").
	PullTargetQueue PullTarget = "queue"
)

// PullTargets lists the PULL target readings.
var PullTargets = []PullTarget{PullTargetWaiting, PullTargetQueue}

// ParsePullTarget returns the PULL target reading named s.
func ParsePullTarget(s string) (PullTarget, error) {
	return core.ParseEnum(s, "PULL target", PullTargets)
}

func (p PullTarget) String() string { return string(p) }

// QueueLoad is which jobs 000 Eq 4's Queue_i sums for the normalized
// load L that queue balancing compares (000 §IV-C): Config.QueueLoad.
type QueueLoad string

// Values of Config.QueueLoad: the two readings of Eq 4's "Queue_i is the
// job queue for node i".
const (
	// QueueLoadWaiting: the waiting jobs only. A node whose cores are all
	// busy with nothing waiting has L = 0, although it is not free.
	QueueLoadWaiting QueueLoad = "waiting"
	// QueueLoadQueue: the whole queue, running jobs included, so that
	// L = 0 is exactly a node with no job at all — §IV-C's "zero local
	// load means a free node, internode scheduling handles that case".
	QueueLoadQueue QueueLoad = "queue"
)

// QueueLoads lists the readings of Queue_i.
var QueueLoads = []QueueLoad{QueueLoadWaiting, QueueLoadQueue}

// ParseQueueLoad returns the Queue_i reading named s.
func ParseQueueLoad(s string) (QueueLoad, error) {
	return core.ParseEnum(s, "queue load", QueueLoads)
}

func (q QueueLoad) String() string { return string(q) }

// LoadView is where CAN and CAN-P matchmaking read a neighbor's queue
// length and whether it is free: Config.LoadView.
type LoadView string

// Values of Config.LoadView.
const (
	// LoadViewHeartbeat: from the neighbor's last heartbeat (003 §4.4).
	LoadViewHeartbeat LoadView = "heartbeat"
	// LoadViewOracle: the global view's current figures (FreshLoad).
	LoadViewOracle LoadView = "oracle"
)

// LoadViews lists the load views.
var LoadViews = []LoadView{LoadViewHeartbeat, LoadViewOracle}

// ParseLoadView returns the load view named s.
func ParseLoadView(s string) (LoadView, error) { return core.ParseEnum(s, "load view", LoadViews) }

func (v LoadView) String() string { return string(v) }

// StopNodes is the node count of CAN-P's stop probability (003 Eq 4):
// Config.StopNodes.
type StopNodes string

// Values of Config.StopNodes.
const (
	// StopNodesOwn: AI_TD(N).Nodes, the stopping node's own aggregate
	// along the target dimension (Eq 4 as written; Eq 1 weighs each upper
	// neighbor by its overlap fraction, so a node with a small face
	// counts few nodes above it).
	StopNodesOwn StopNodes = "own"
	// StopNodesTarget: 1 + AI_TD(u).Nodes, the push target u and the
	// nodes above it.
	StopNodesTarget StopNodes = "target"
)

// StopNodesReadings lists the readings of CAN-P's stop count.
var StopNodesReadings = []StopNodes{StopNodesOwn, StopNodesTarget}

// ParseStopNodes returns the stop-count reading named s.
func ParseStopNodes(s string) (StopNodes, error) {
	return core.ParseEnum(s, "stop-count reading", StopNodesReadings)
}

func (r StopNodes) String() string { return string(r) }

// CategoricalMode is how matchmaking uses categorical resources (002 ch.
// 5): Config.Categorical. Either way a run node must match a job's
// categorical constraint (the capability predicate, categories.go).
type CategoricalMode string

// Values of Config.Categorical.
const (
	// CategoricalNone pushes jobs along the aggregated load alone: a job
	// may climb and be pushed into regions without a node of its
	// categorical values.
	CategoricalNone CategoricalMode = "none"
	// CategoricalCID pushes and climbs only towards neighbors whose ACID
	// holds a combination the job accepts (002 Eq 5.1, Algorithm 3).
	CategoricalCID CategoricalMode = "cid"
	// CategoricalSubCAN is 002 §2.4's sub-CANs: the CAN's last dimension
	// is the transform dimension T (Config.SubCAN), a job is routed into
	// a sub-CAN of a combination it accepts and pushed and climbs only
	// towards neighbors whose zone meets such a sub-CAN. Heartbeats carry
	// no ACID.
	CategoricalSubCAN CategoricalMode = "subcan"
)

// CategoricalModes lists the categorical matchmaking modes the job core
// implements.
var CategoricalModes = []CategoricalMode{CategoricalNone, CategoricalCID, CategoricalSubCAN}

// ParseCategoricalMode returns the categorical matchmaking mode named s.
func ParseCategoricalMode(s string) (CategoricalMode, error) {
	return core.ParseEnum(s, "categorical matchmaking", CategoricalModes)
}

func (m CategoricalMode) String() string { return string(m) }

// check reports the first field of a defaulted Config that names no value.
func (c Config) check() error {
	if _, err := ParseScheme(string(c.Scheme)); err != nil {
		return err
	}
	if _, err := ParseSchedMode(string(c.Mode)); err != nil {
		return err
	}
	if _, err := ParseResidueModel(string(c.Residue)); err != nil {
		return err
	}
	if _, err := ParseLoadView(string(c.LoadView)); err != nil {
		return err
	}
	if _, err := ParseCategoricalMode(string(c.Categorical)); err != nil {
		return err
	}
	if c.Scheme == SchemeCANHet && c.CEs == nil {
		return errors.New("jobs: scheme can-het needs Config.CEs, the CE model")
	}
	if c.Categorical == CategoricalSubCAN && c.SubCAN == nil {
		return errors.New("jobs: categorical matchmaking subcan needs Config.SubCAN, the transform dimension")
	}
	_, err := ParseStopNodes(string(c.StopNodes))
	return err
}
