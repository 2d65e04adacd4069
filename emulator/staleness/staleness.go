// Package staleness measures how wrong the aggregated information peers
// hold is, against the ground truth of one global snapshot (002 §5.2.4
// measures the accuracy of aggregated core utilization this way, at
// periodic snapshots). The truth is 003 Eq 1 / 002 §3.1.4 evaluated with
// fresh information: every member's AI_d recomputed from its true upper
// neighbors, their current I(u) and their own true AI_d — what a peer
// would hold if every heartbeat arrived at once. Nothing here costs a
// protocol message (docs/ARCHITECTURE.md principle 7).
//
// The package is the oracle's, kept apart from emulator/oracle: that one
// reads only the overlay (zones and neighbor tables), this one also the
// job cores' load; it needs actors/load, which the overlay's truth does
// not.
package staleness

import (
	"math"
	"slices"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/categorical"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/load"
	"github.com/gridbed/gridbed/emulator/ledger"
)

// Member is what the oracle reads of one overlay member for aggregation.
type Member struct {
	ID core.NodeID
	// Zone is its own zone; Extra the zones it holds besides (orphans
	// claimed after a take-over, as the oracle counts them).
	Zone  can.Zone
	Extra []can.Zone
	// Cores and Queue are its own I(u) now (003 Eq 1, 002 §3.1.4): its
	// cores — TNC(u) of 002 Eq 3.1, as jobs.Node reports it on its
	// heartbeat — and the cores its queued and running jobs require.
	Cores, Queue float64
	// Held is the AI_d it holds (its last heartbeat's computation; nil or
	// short: the missing dimensions count as zero).
	Held []load.Agg
	// Combo is its combination of categorical values plus one (0: none,
	// 002 §5.1.1) and HeldACID the ACID (002 Eq 5.1) it holds, computed at
	// its last heartbeat (nil before its first).
	Combo    uint32
	HeldACID categorical.Set
}

// Edge is one upper neighbor of a piece along a dimension: the piece
// above and OF_d (003 Eq 2) between them.
type Edge struct {
	Piece int
	OF    float64
}

// Piece is one zone a member holds: its own, or an extra one.
type Piece struct {
	Owner int // index into World.Members
	Zone  can.Zone
	Extra bool
}

// World is the global snapshot with the upper-neighbor relation and the
// true aggregated load of every piece.
type World struct {
	Members []Member
	Dims    int
	Pieces  []Piece
	// Own[i] is the piece of member i's own zone.
	Own []int
	// Up[p][d] are piece p's true upper neighbors along dimension d: the
	// pieces that abut its upper face there (load.OverlapFraction > 0).
	Up [][][]Edge
	// AI[p] is piece p's true AI_d for every dimension.
	AI [][]load.Agg
	// Categorical reports whether some member has categorical resources
	// (a Combo); only then is ACID computed and the aggregates marked
	// Categorical measured.
	Categorical bool
	// ACID[p] is piece p's true ACID (acid.go); nil unless Categorical.
	ACID []categorical.Set
}

// Truth builds the world of members (invalid zones are skipped: not
// members) and computes every piece's true AI_d (003 Eq 1 with 002
// §3.1.4's cores) from fresh information: per dimension d, the pieces in
// descending order of their lower bound Lo[d], so that every upper
// neighbor's AI_d is known before it is needed (an upper neighbor along d
// starts where the piece ends: Lo[d] is strictly larger).
//
// Own zones are aggregated by load.Aggregate over their upper neighbors'
// own zones, each with its member's current I(u) and true AI_d. An extra
// zone counts as space, not as a node: its holder is counted once, at its
// own zone, so an extra zone contributes no I(u) of its own; it passes on
// AI_d × OF_d of what lies above it, so that the nodes above an orphan
// are not lost to the truth (they are to the protocol, whose heartbeats
// aggregate over own zones only — an error churn causes, which the
// measure should show).
func Truth(members []Member, dims int) *World {
	w := &World{Dims: dims}
	for _, m := range members {
		if !m.Zone.Valid(dims) {
			continue
		}
		i := len(w.Members)
		w.Members = append(w.Members, m)
		w.Categorical = w.Categorical || m.Combo != 0
		w.Own = append(w.Own, len(w.Pieces))
		w.Pieces = append(w.Pieces, Piece{Owner: i, Zone: m.Zone})
		for _, z := range m.Extra {
			if z.Valid(dims) {
				w.Pieces = append(w.Pieces, Piece{Owner: i, Zone: z, Extra: true})
			}
		}
	}
	w.uppers()
	w.AI = make([][]load.Agg, len(w.Pieces))
	for p := range w.AI {
		w.AI[p] = make([]load.Agg, dims)
	}
	order := make([]int, len(w.Pieces))
	for d := 0; d < dims; d++ {
		for p := range order {
			order[p] = p
		}
		slices.SortFunc(order, func(a, b int) int {
			za, zb := w.Pieces[a].Zone.Lo[d], w.Pieces[b].Zone.Lo[d]
			switch {
			case za > zb:
				return -1
			case za < zb:
				return 1
			}
			return a - b
		})
		for _, p := range order {
			w.AI[p][d] = w.aggregate(p, d)
		}
	}
	if w.Categorical {
		w.trueACIDs()
	}
	return w
}

// aggregate is piece p's true AI_d from its upper neighbors along d,
// whose AI_d is already known.
func (w *World) aggregate(p, d int) load.Agg {
	var ups []load.Upper
	var through load.Agg
	for _, e := range w.Up[p][d] {
		q := w.Pieces[e.Piece]
		if q.Extra {
			a := w.AI[e.Piece][d]
			through.Nodes += a.Nodes * e.OF
			through.Cores += a.Cores * e.OF
			through.Queue += a.Queue * e.OF
			continue
		}
		m := w.Members[q.Owner]
		ups = append(ups, load.Upper{Zone: q.Zone, Cores: m.Cores, Queue: m.Queue, AI: w.AI[e.Piece]})
	}
	a := load.Aggregate(w.Pieces[p].Zone, ups)[d]
	a.Nodes += through.Nodes
	a.Cores += through.Cores
	a.Queue += through.Queue
	return a
}

// uppers fills Up: for every piece and dimension d the pieces whose lower
// face along d lies on its upper face with a positive overlap fraction.
// Pieces are indexed by the planes of their faces, and on each plane the
// pieces ending there are joined with those starting there by a sweep
// along another dimension (as the oracle finds neighbor pairs), so a
// plane many zones share costs what overlaps on it, not every pair.
func (w *World) uppers() {
	type face struct {
		d  int
		at uint64
	}
	starts, ends := map[face][]int{}, map[face][]int{}
	for p, pc := range w.Pieces {
		for d := 0; d < w.Dims; d++ {
			if lo := pc.Zone.Lo[d]; lo > 0 {
				starts[face{d, lo}] = append(starts[face{d, lo}], p)
			}
			if hi := pc.Zone.Hi[d]; hi < can.Span {
				ends[face{d, hi}] = append(ends[face{d, hi}], p)
			}
		}
	}
	w.Up = make([][][]Edge, len(w.Pieces))
	for p := range w.Pieces {
		w.Up[p] = make([][]Edge, w.Dims)
	}
	// Planes in a fixed order: the edges' order decides the order of the
	// sums (floating point), which must not change from run to run.
	keys := make([]face, 0, len(ends))
	for f := range ends {
		keys = append(keys, f)
	}
	slices.SortFunc(keys, func(a, b face) int {
		if a.d != b.d {
			return a.d - b.d
		}
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	for _, f := range keys {
		above := starts[f]
		if len(above) == 0 {
			continue
		}
		can.OverlapJoin(func(i int) can.Zone { return w.Pieces[i].Zone }, ends[f], above, (f.d+1)%w.Dims, func(p, q int) {
			if of := load.OverlapFraction(w.Pieces[p].Zone, w.Pieces[q].Zone, f.d); of > 0 {
				w.Up[p][f.d] = append(w.Up[p][f.d], Edge{q, of})
			}
		})
	}
	for p := range w.Up {
		for d := range w.Up[p] {
			slices.SortFunc(w.Up[p][d], func(a, b Edge) int { return a.Piece - b.Piece })
		}
	}
}

// TrueAI is member i's true AI_d (of its own zone).
func (w *World) TrueAI(i, d int) load.Agg { return w.AI[w.Own[i]][d] }

// HeldAI is the AI_d member i holds (zero for a dimension it has none of).
func (w *World) HeldAI(i, d int) load.Agg {
	if h := w.Members[i].Held; d < len(h) {
		return h[d]
	}
	return load.Agg{}
}

// Aggregate is one kind of aggregated information compared with the
// truth. Error is how wrong member i's value along dimension d is; with
// PerMember the information is one value per member (not per dimension)
// and Error is called with d = 0 only. A Categorical aggregate exists only
// in runs whose peers have categorical resources (World.Categorical).
type Aggregate struct {
	Name        string // label value of gridbed_aggregate_error_ratio
	PerMember   bool
	Categorical bool
	Error       func(w *World, i, d int) float64
}

// loadAggregate compares one figure of AI_d: value reads it from an Agg,
// held from what member i holds and truth from the world's truth; err
// measures the difference.
func loadAggregate(name string, value func(load.Agg) float64, err func(held, truth float64) float64) Aggregate {
	return Aggregate{Name: name, Error: func(w *World, i, d int) float64 {
		return err(value(w.HeldAI(i, d)), value(w.TrueAI(i, d)))
	}}
}

// Aggregates are the aggregated figures measured: 003 Eq 1's number of
// nodes and queue (with multi-core nodes the required cores, 002 §3.1.4)
// as relative errors, 002 §5.2.4's core utilization as an absolute
// difference and, with categorical resources, 002 §5.2.4's share of wrong
// ACIDs (each member's error 1 when the ACID it holds is not the true one,
// 0 when it is: the mean is the fraction wrong).
var Aggregates = []Aggregate{
	loadAggregate("nodes", func(a load.Agg) float64 { return a.Nodes }, RelativeError),
	loadAggregate("queue", func(a load.Agg) float64 { return a.Queue }, RelativeError),
	loadAggregate("core_utilization", CoreUtilization, AbsoluteError),
	{Name: "acid", PerMember: true, Categorical: true, Error: ACIDError},
}

// RelativeError is |held − truth| / truth; when the truth is 0 it is 0 if
// held is 0 too and 1 otherwise (a value where there is none is wholly
// wrong, as a 0 where there is one: |0 − t| / t = 1).
func RelativeError(held, truth float64) float64 {
	if truth == 0 {
		if held == 0 {
			return 0
		}
		return 1
	}
	return math.Abs(held-truth) / truth
}

// AbsoluteError is |held − truth|: 002 §5.2.4's "Core Utilization Error",
// "the absolute difference between the correct core utilization and the
// actual core utilization in each node" — core utilization is already a
// ratio.
func AbsoluteError(held, truth float64) float64 { return math.Abs(held - truth) }

// CoreUtilization is the core utilization of the upper region an AI_d
// describes (002 §5.2.4): "the number of used (and required) cores of
// running (and waiting) job(s) divided by the number of cores in the
// nodes in the upper region" — AI_d's required cores over its cores; 0
// when no core lies above (nothing to use).
func CoreUtilization(a load.Agg) float64 {
	if a.Cores <= 0 {
		return 0
	}
	return a.Queue / a.Cores
}

// Stat is one aggregate's errors at one snapshot: their mean and 90th
// percentile over every (member, dimension), and how many there were.
type Stat struct {
	Name      string
	Mean, P90 float64
	N         int
}

// Measure computes, for every aggregate of Aggregates, the errors of
// every member (along every dimension) and their mean and p90 (nearest
// rank). It returns nil when there is no member.
func (w *World) Measure() []Stat {
	if len(w.Members) == 0 {
		return nil
	}
	out := make([]Stat, 0, len(Aggregates))
	var errs []float64
	for _, a := range Aggregates {
		if a.Categorical && !w.Categorical {
			continue
		}
		errs = errs[:0]
		for i := range w.Members {
			dims := w.Dims
			if a.PerMember {
				dims = 1
			}
			for d := 0; d < dims; d++ {
				errs = append(errs, a.Error(w, i, d))
			}
		}
		out = append(out, Stat{Name: a.Name, Mean: ledger.Mean(errs), P90: ledger.Quantile(errs, 0.9), N: len(errs)})
	}
	return out
}

// Names are the names of the aggregates measured in a run, in the order
// Measure reports them: with categorical resources (peers.categorical)
// every aggregate, without them those not marked Categorical.
func Names(cat bool) []string {
	out := make([]string, 0, len(Aggregates))
	for _, a := range Aggregates {
		if cat || !a.Categorical {
			out = append(out, a.Name)
		}
	}
	return out
}
