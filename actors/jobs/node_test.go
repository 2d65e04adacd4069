package jobs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/testnet"
	"github.com/gridbed/gridbed/actors/wire"
)

// The test space: two resource dimensions (0: CPU, 1: memory) and the
// virtual dimension (2). Zones are fractions of the span.
const (
	tQ1 = can.Span / 4
	tQ2 = can.Span / 2
	tQ3 = 3 * can.Span / 4

	tPeriod = 10 * time.Second
	// tTimeout is FailAfter (default 3) × tPeriod.
	tTimeout = 3 * tPeriod

	tClientID core.NodeID = 100
)

func tZone(lo0, hi0, lo1, hi1, lo2, hi2 uint64) can.Zone {
	return can.Zone{Lo: []uint64{lo0, lo1, lo2}, Hi: []uint64{hi0, hi1, hi2}}
}

// The layout around the matching node S = [Q1,Q2)×[Q1,Q2)×[0,Q2): an upper
// neighbor along every dimension and a lower one along each resource.
func zSelf() can.Zone { return tZone(tQ1, tQ2, tQ1, tQ2, 0, tQ2) }
func zUp0() can.Zone  { return tZone(tQ2, tQ3, tQ1, tQ2, 0, tQ2) }
func zUp1() can.Zone  { return tZone(tQ1, tQ2, tQ2, tQ3, 0, tQ2) }
func zUp2() can.Zone  { return tZone(tQ1, tQ2, tQ1, tQ2, tQ2, can.Span) }
func zLow0() can.Zone { return tZone(0, tQ1, tQ1, tQ2, 0, tQ2) }
func zLow1() can.Zone { return tZone(tQ1, tQ2, 0, tQ1, 0, tQ2) }

// The job requirement: inside S (S owns the job), a little above S's
// lower corner in both resources.
const (
	tReq0 = uint32(tQ1) + 1000
	tReq1 = uint32(tQ1) + 1000
	tReqV = uint32(12345)
)

func tReq() []uint32 { return []uint32{tReq0, tReq1, tReqV} }

// Points relative to the requirement.
func pCap(v uint32) can.Point { return can.Point{uint32(tQ3), uint32(tQ3), v} }

// pSelfNo is S's point when S cannot run the job (short in CPU).
func pSelfNo() can.Point { return can.Point{uint32(tQ1), uint32(tQ1) + 5000, 7} }

// pSelfYes is S's point when S can run the job.
func pSelfYes() can.Point { return can.Point{uint32(tQ1) + 2000, uint32(tQ1) + 2000, 7} }

func pNoCPU() can.Point { return can.Point{tReq0 - 1, math.MaxUint32, math.MaxUint32} }
func pNoMem() can.Point { return can.Point{math.MaxUint32, tReq1 - 1, math.MaxUint32} }

// fakeView is the overlay as the job core sees it.
type fakeView struct {
	id    core.NodeID
	zone  can.Zone
	point can.Point
	nbs   []*overlay.Neighbor
	// next is NextHop's answer (0: no way on); asked records the points
	// NextHop was asked about.
	next  core.NodeID
	asked []can.Point
}

func (v *fakeView) ID() core.NodeID                     { return v.id }
func (v *fakeView) Joined() bool                        { return true }
func (v *fakeView) Owns(p can.Point) bool               { return v.zone.Contains(p) }
func (v *fakeView) Zone() can.Zone                      { return v.zone }
func (v *fakeView) Point() can.Point                    { return v.point }
func (v *fakeView) nb(id core.NodeID) *overlay.Neighbor { return tFindNb(v.nbs, id) }

// Neighbors copies the table, as the overlay does: the test's entries
// stay the test's.
func (v *fakeView) Neighbors() []overlay.Neighbor {
	out := make([]overlay.Neighbor, len(v.nbs))
	for i, nb := range v.nbs {
		out[i] = *nb
	}
	return out
}

func (v *fakeView) NextHop(p can.Point, hops *uint32, best *float64, detours *uint32) core.NodeID {
	v.asked = append(v.asked, slices.Clone(p))
	if v.next != 0 {
		*hops++
	}
	return v.next
}

func tFindNb(nbs []*overlay.Neighbor, id core.NodeID) *overlay.Neighbor {
	for _, nb := range nbs {
		if nb.ID == id {
			return nb
		}
	}
	return nil
}

// tLoad is a heartbeat's load; agg lists (nodes, queue) per dimension.
func tLoad(queue, free uint32, speed float32, point can.Point, agg ...[2]float32) *wire.Load {
	l := &wire.Load{Queue: queue, Free: free, Speed: speed, Point: slices.Clone(point)}
	for _, a := range agg {
		l.Agg = append(l.Agg, &wire.AggLoad{Nodes: a[0], Queue: a[1]})
	}
	return l
}

func tNb(id core.NodeID, z can.Zone, l *wire.Load) *overlay.Neighbor {
	return &overlay.Neighbor{ID: id, Zone: z, Heard: true, Load: l}
}

type fakeCentral struct {
	pick  core.NodeID
	asked []uint64
}

func (c *fakeCentral) Pick(job *wire.JobSpec) core.NodeID {
	c.asked = append(c.asked, job.Id)
	return c.pick
}

func tRng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6a6f6273)) }

func tNew(v *fakeView, cfg Config, seed uint64, central Central) *Node {
	if cfg.Period == 0 {
		cfg.Period = tPeriod
	}
	return New(v, cfg, tRng(seed), central)
}

func tSpec(id uint64, work time.Duration) *wire.JobSpec {
	return &wire.JobSpec{Id: id, Client: uint64(tClientID), Attempt: 1, Req: tReq(), Work: int64(work)}
}

// tDrain copies what a core wants done and advances it (Ready's slices
// are reused).
func tDrain(c interface {
	Ready() Ready
	Advance()
}) Ready {
	r := c.Ready()
	d := Ready{Outbox: core.Outbox{Messages: slices.Clone(r.Messages), Timers: slices.Clone(r.Timers)}, Events: slices.Clone(r.Events), QueueChanged: r.QueueChanged, QueueLen: r.QueueLen}
	c.Advance()
	return d
}

// tAll returns the messages of type T in r, with their addressees.
func tAll[T proto.Message](r Ready) (ms []T, to []core.NodeID) {
	for _, o := range r.Messages {
		if m, ok := o.Msg.(T); ok {
			ms = append(ms, m)
			to = append(to, o.To)
		}
	}
	return ms, to
}

// tTo returns the messages of type T addressed to to.
func tTo[T proto.Message](r Ready, to core.NodeID) []T {
	var ms []T
	for _, o := range r.Messages {
		if m, ok := o.Msg.(T); ok && o.To == to {
			ms = append(ms, m)
		}
	}
	return ms
}

// tOne returns the only message of type T in r, which must go to to.
func tOne[T proto.Message](t *testing.T, r Ready, to core.NodeID) T {
	t.Helper()
	ms, tos := tAll[T](r)
	if len(ms) != 1 || tos[0] != to {
		var zero T
		t.Fatalf("want exactly one %T, to %d; got %d to %v in %s", zero, to, len(ms), tos, tMsgString(r))
	}
	return ms[0]
}

// tNone fails if r holds a message of type T.
func tNone[T proto.Message](t *testing.T, r Ready) {
	t.Helper()
	if ms, tos := tAll[T](r); len(ms) > 0 {
		var zero T
		t.Fatalf("want no %T, got %d to %v in %s", zero, len(ms), tos, tMsgString(r))
	}
}

func tMsgString(r Ready) string {
	s := "["
	for i, o := range r.Messages {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%T→%d{%v}", o.Msg, o.To, o.Msg)
	}
	return s + "]"
}

func tEvents(r Ready, k EventKind) []Event {
	var es []Event
	for _, e := range r.Events {
		if e.Kind == k {
			es = append(es, e)
		}
	}
	return es
}

// tOneEvent returns the only event of kind k in r.
func tOneEvent(t *testing.T, r Ready, k EventKind) Event {
	t.Helper()
	es := tEvents(r, k)
	if len(es) != 1 {
		t.Fatalf("want one %v event, got %d in %+v", k, len(es), r.Events)
	}
	return es[0]
}

func tTimers(r Ready, k core.TimerKind) []time.Duration {
	var at []time.Duration
	for _, tm := range r.Timers {
		if tm.Kind == k {
			at = append(at, tm.At)
		}
	}
	return at
}

func tRefs(rs []*wire.JobRef) [][2]uint64 {
	out := make([][2]uint64, len(rs))
	for i, r := range rs {
		out[i] = [2]uint64{r.Id, uint64(r.Epoch)}
	}
	return out
}

func tIDs(rs []*wire.JobRef) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Id
	}
	return out
}

// tMatcher is S with the standard neighbors: U0/U1/U2 above along each
// dimension, L0/L1 below along each resource.
const (
	idS  core.NodeID = 1
	idU0 core.NodeID = 10
	idU1 core.NodeID = 11
	idU2 core.NodeID = 12
	idL0 core.NodeID = 13
	idL1 core.NodeID = 14
)

// --- Matchmaking --------------------------------------------------------

// A free capable node wins, the fastest of them; a faster free node short
// in one resource never does; a busy fast node neither. The matching node
// counts the job in its copy of the chosen node's load at once.
func TestMatchFastestFreeCapableNode(t *testing.T) {
	for _, scheme := range []Scheme{SchemeCAN, SchemeCANP} {
		t.Run(scheme.String(), func(t *testing.T) {
			v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
			v.nbs = []*overlay.Neighbor{
				tNb(idU0, zUp0(), tLoad(0, 1, 2, pCap(1))),
				// Its virtual coordinate lies below the job's: it does not matter.
				tNb(idU1, zUp1(), tLoad(0, 1, 3, can.Point{uint32(tQ3), uint32(tQ3), 0})),
				tNb(idU2, zUp2(), tLoad(2, 0, 5, pCap(9))),
				tNb(idL0, zLow0(), tLoad(0, 1, 10, pNoCPU())),
				tNb(idL1, zLow1(), tLoad(0, 1, 8, pNoMem())),
			}
			n := tNew(v, Config{Scheme: scheme}, 1, nil)
			now := 5 * time.Second
			n.Step(now, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
			r := tDrain(n)
			a := tOne[*wire.JobAssign](t, r, idU1)
			if a.Job.GetId() != 7 || a.Owner != uint64(idS) || a.Epoch != 1 || a.Hops != 0 {
				t.Fatalf("JobAssign %v, want job 7, owner %d, epoch 1, hops 0", a, idS)
			}
			tNone[*wire.JobPush](t, r)
			if e := tOneEvent(t, r, EvOwned); e.Job != 7 || e.Peer != idS {
				t.Fatalf("owned event %+v", e)
			}
			if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Owned, []uint64{7}) {
				t.Fatalf("status to the client %v, want owned [7]", st)
			}
			if at := tTimers(r, core.TimerJobs); !slices.Equal(at, []time.Duration{now + tPeriod}) {
				t.Fatalf("job timers %v, want [%v]", at, now+tPeriod)
			}
			if l := n.loadOf(v.nb(idU1)); l.Queue != 1 || l.Free != 0 {
				t.Fatalf("U1's load after the assignment: queue %d free %d, want 1 and 0", l.Queue, l.Free)
			}
			if l := n.loadOf(v.nb(idU0)); l.Queue != 0 || l.Free != 1 {
				t.Fatalf("U0's load changed: queue %d free %d", l.Queue, l.Free)
			}
			if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) || len(s.Held) != 0 {
				t.Fatalf("snapshot %+v, want owned [7], nothing held", s)
			}

			// U1 is no longer free in our view: the next job goes to U0.
			n.Step(now, 50, &wire.JobSubmit{Job: tSpec(8, time.Second)})
			r = tDrain(n)
			if a := tOne[*wire.JobAssign](t, r, idU0); a.Job.GetId() != 8 || a.Epoch != 1 {
				t.Fatalf("second JobAssign %v", a)
			}
			if l := n.loadOf(v.nb(idU0)); l.Queue != 1 || l.Free != 0 {
				t.Fatalf("U0's load after the assignment: queue %d free %d", l.Queue, l.Free)
			}

			// Nobody free: U0 (1/2), U1 (1/3), U2 (2/5) — U1 is both the
			// least loaded fastest (CAN) and the least F(C) (CAN-P, which
			// has no upper neighbor with aggregated load to push to).
			n.Step(now, 50, &wire.JobSubmit{Job: tSpec(9, time.Second)})
			r = tDrain(n)
			tOne[*wire.JobAssign](t, r, idU1)
			if l := n.loadOf(v.nb(idU1)); l.Queue != 2 || l.Free != 0 {
				t.Fatalf("U1's load after a busy assignment: queue %d free %d, want 2 and 0", l.Queue, l.Free)
			}
			// Our estimates are ours: the overlay's table keeps what the
			// heartbeats said, and the next heartbeat replaces the estimate.
			if l := v.nb(idU1).Load; l.Queue != 0 || l.Free != 1 {
				t.Fatalf("the job core changed the overlay's entry for U1: queue %d free %d", l.Queue, l.Free)
			}
			v.nb(idU1).Load = tLoad(4, 0, 3, can.Point{uint32(tQ3), uint32(tQ3), 0})
			if l := n.loadOf(v.nb(idU1)); l.Queue != 4 || l.Free != 0 {
				t.Fatalf("U1's estimate after its next heartbeat: queue %d free %d, want 4 and 0", l.Queue, l.Free)
			}
		})
	}
}

// tCand is a node the randomized matchmaking test may pick.
type tCand struct {
	id      core.NodeID
	capable bool
	free    bool
	queue   uint32
	speed   float64
	cores   uint32 // free cores
}

// Randomized neighborhoods: the chosen run node is always capable; free
// and fastest when a capable node is free; otherwise (CAN) the least
// queue, then the fastest; (CAN-P, nothing to push to) the least
// queue/speed.
func TestMatchRandomNeighborhoods(t *testing.T) {
	speeds := []float64{0.5, 1, 1.5, 2, 3, 4}
	for _, scheme := range []Scheme{SchemeCAN, SchemeCANP} {
		for seed := uint64(1); seed <= 300; seed++ {
			rng := rand.New(rand.NewPCG(seed, 0x6d61))
			selfCapable := rng.IntN(2) == 0
			selfBusy := rng.IntN(3)
			selfSpeed := speeds[rng.IntN(len(speeds))]
			v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
			if selfCapable {
				v.point = pSelfYes()
			}
			var cands []tCand
			zones := []func() can.Zone{zUp0, zUp1, zUp2, zLow0, zLow1}
			for i := range rng.IntN(9) {
				id := core.NodeID(20 + i)
				c := tCand{id: id, capable: rng.IntN(3) > 0, free: rng.IntN(2) == 0, queue: uint32(rng.IntN(5)), speed: speeds[rng.IntN(len(speeds))]}
				p := pCap(rng.Uint32())
				if !c.capable {
					if rng.IntN(2) == 0 {
						p = pNoCPU()
					} else {
						p = pNoMem()
					}
				}
				if c.free {
					c.cores = 1 + uint32(rng.IntN(2))
				}
				v.nbs = append(v.nbs, tNb(id, zones[rng.IntN(len(zones))](), tLoad(c.queue, c.cores, float32(c.speed), p)))
				cands = append(cands, c)
			}
			n := tNew(v, Config{Scheme: scheme, Speed: selfSpeed}, seed, nil)
			// Keep S busy with selfBusy jobs of another owner.
			for j := range selfBusy {
				n.Step(0, 99, &wire.JobAssign{Job: &wire.JobSpec{Id: 1000 + uint64(j), Client: 98, Req: []uint32{0, 0, 0}, Work: int64(time.Hour)}, Owner: 99, Epoch: 1})
			}
			n.Advance()
			if selfCapable {
				cands = append(cands, tCand{id: idS, capable: true, free: selfBusy == 0, queue: uint32(selfBusy), speed: selfSpeed})
			}
			var want []core.NodeID // every acceptable choice (ties)
			var capable, free []tCand
			for _, c := range cands {
				if c.capable {
					capable = append(capable, c)
					if c.free {
						free = append(free, c)
					}
				}
			}
			switch {
			case len(free) > 0:
				best := slices.MaxFunc(free, func(a, b tCand) int { return cmpF(a.speed, b.speed) })
				for _, c := range free {
					if c.speed == best.speed {
						want = append(want, c.id)
					}
				}
			case len(capable) > 0 && scheme == SchemeCAN:
				minQ := slices.MinFunc(capable, func(a, b tCand) int { return int(a.queue) - int(b.queue) }).queue
				var least []tCand
				for _, c := range capable {
					if c.queue == minQ {
						least = append(least, c)
					}
				}
				best := slices.MaxFunc(least, func(a, b tCand) int { return cmpF(a.speed, b.speed) })
				for _, c := range least {
					if c.speed == best.speed {
						want = append(want, c.id)
					}
				}
			case len(capable) > 0:
				score := func(c tCand) float64 { return float64(c.queue) / c.speed }
				best := slices.MinFunc(capable, func(a, b tCand) int { return cmpF(score(a), score(b)) })
				for _, c := range capable {
					if score(c) == score(best) {
						want = append(want, c.id)
					}
				}
			}

			n.Step(time.Second, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
			r := tDrain(n)
			as, tos := tAll[*wire.JobAssign](r)
			queued := tEvents(r, EvQueued)
			var got core.NodeID
			switch {
			case len(as) == 1 && len(queued) == 0:
				got = tos[0]
			case len(as) == 0 && len(queued) == 1 && queued[0].Job == 7:
				got = idS // matched locally
			case len(as) == 0 && len(queued) == 0:
			default:
				t.Fatalf("%s seed %d: assignments %s, queued events %+v", scheme, seed, tMsgString(r), queued)
			}
			if len(want) == 0 {
				if got != 0 {
					t.Fatalf("%s seed %d: no capable node in sight, yet assigned to %d", scheme, seed, got)
				}
				continue
			}
			if !slices.Contains(want, got) {
				t.Fatalf("%s seed %d: assigned to %d, want one of %v (candidates %+v)", scheme, seed, got, want, cands)
			}
			if got != idS {
				l := n.loadOf(v.nb(got))
				c := cands[slices.IndexFunc(cands, func(c tCand) bool { return c.id == got })]
				wantFree := uint32(0)
				if c.cores > 0 {
					wantFree = c.cores - 1
				}
				if l.Queue != c.queue+1 || l.Free != wantFree {
					t.Fatalf("%s seed %d: chosen %d's load queue %d free %d, want %d and %d", scheme, seed, got, l.Queue, l.Free, c.queue+1, wantFree)
				}
			}
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CAN: with no free capable node, the least queue wins, then the fastest.
func TestCANLeastLoadedCapable(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
	v.nbs = []*overlay.Neighbor{
		tNb(idU0, zUp0(), tLoad(2, 0, 4, pCap(1), [2]float32{100, 0}, [2]float32{100, 0}, [2]float32{100, 0})),
		tNb(idU1, zUp1(), tLoad(1, 0, 1, pCap(2), [2]float32{100, 0}, [2]float32{100, 0}, [2]float32{100, 0})),
		tNb(idU2, zUp2(), tLoad(1, 0, 3, pCap(3), [2]float32{100, 0}, [2]float32{100, 0}, [2]float32{100, 0})),
		tNb(idL0, zLow0(), tLoad(0, 0, 9, pNoCPU())),
	}
	n := tNew(v, Config{Scheme: SchemeCAN}, 1, nil)
	n.LoadInfo() // aggregated load is known; CAN never pushes
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
	r := tDrain(n)
	tNone[*wire.JobPush](t, r)
	if a := tOne[*wire.JobAssign](t, r, idU2); a.Owner != uint64(idS) || a.Epoch != 1 {
		t.Fatalf("JobAssign %v", a)
	}
	if l := n.loadOf(v.nb(idU2)); l.Queue != 2 || l.Free != 0 {
		t.Fatalf("U2's load: queue %d free %d, want 2 and 0 (no underflow)", l.Queue, l.Free)
	}
	// Now U1 alone has the least queue.
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(8, time.Second)})
	tOne[*wire.JobAssign](t, tDrain(n), idU1)
}

// freshCentral is a global view with current queue lengths
// (FreshLoad).
type freshCentral struct {
	fakeCentral
	queue map[core.NodeID]int
}

func (c *freshCentral) NodeLoad(id core.NodeID) (int, int, bool) {
	q, ok := c.queue[id]
	return q, 1, ok
}

// TestLoadViewOracle: with LoadViewOracle matchmaking reads the current
// queue lengths of the central view, not the neighbors' last heartbeats;
// with the default it ignores them.
func TestLoadViewOracle(t *testing.T) {
	setup := func(view LoadView) *Node {
		v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
		v.nbs = []*overlay.Neighbor{
			// By their heartbeats U0 is free and fast, U1 busy.
			tNb(idU0, zUp0(), tLoad(0, 1, 4, pCap(1))),
			tNb(idU1, zUp1(), tLoad(3, 0, 1, pCap(2))),
		}
		// In truth U0 has filled up since and U1 is idle.
		c := &freshCentral{queue: map[core.NodeID]int{idU0: 5, idU1: 0}}
		return tNew(v, Config{Scheme: SchemeCAN, LoadView: view}, 1, c)
	}
	for _, tc := range []struct {
		view LoadView
		want core.NodeID
	}{{LoadViewHeartbeat, idU0}, {"", idU0}, {LoadViewOracle, idU1}} {
		n := setup(tc.view)
		n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
		tOne[*wire.JobAssign](t, tDrain(n), tc.want)
	}
}

// tPushNode is S under CAN-P with busy capable upper neighbors carrying
// aggregated load. F_d per dimension: U0 1e-6 (d=0), U1 1e-7 (d=1), U2
// 5e-7 (d=2); each also advertises F = 0 along dimensions where it is not
// S's upper neighbor, and L0 (below S) F = 0 everywhere: none may count.
// Scores F(C): U0 3/1, U1 2/4, U2 4/2.
func tPushNode(seed uint64, cfg Config) (*Node, *fakeView) {
	const big, huge = 1e6, 1e9
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
	v.nbs = []*overlay.Neighbor{
		tNb(idU0, zUp0(), tLoad(3, 0, 1, pCap(1), [2]float32{big, big}, [2]float32{huge, 0}, [2]float32{huge, 0})),
		tNb(idU1, zUp1(), tLoad(2, 0, 4, pCap(2), [2]float32{huge, 0}, [2]float32{big, 1e5}, [2]float32{huge, 0})),
		tNb(idU2, zUp2(), tLoad(4, 0, 2, pCap(3), [2]float32{huge, 0}, [2]float32{huge, 0}, [2]float32{big, 5e5})),
		tNb(idL0, zLow0(), tLoad(0, 0, 8, pNoCPU(), [2]float32{huge, 0}, [2]float32{huge, 0}, [2]float32{huge, 0})),
	}
	cfg.Scheme = SchemeCANP
	return tNew(v, cfg, seed, nil), v
}

// The heartbeat load carries our queue, free cores, speed, point and AI_d
// from the neighbors' loads (Eq 1: the upper neighbor itself plus its own
// AI, scaled by the overlap fraction — 1 here).
func TestLoadInfoAggregatesUpperNeighbors(t *testing.T) {
	n, v := tPushNode(1, Config{Speed: 2, Cores: 3})
	l := n.LoadInfo()
	if l.Queue != 0 || l.Free != 3 || l.Speed != 2 || !slices.Equal(l.Point, v.point) {
		t.Fatalf("load %v", l)
	}
	want := [][2]float32{{1e6 + 1, 1e6 + 3}, {1e6 + 1, 1e5 + 2}, {1e6 + 1, 5e5 + 4}}
	if len(l.Agg) != 3 {
		t.Fatalf("agg %v, want 3 dimensions", l.Agg)
	}
	for d, w := range want {
		if a := l.Agg[d]; math.Abs(float64(a.Nodes-w[0])) > 1 || math.Abs(float64(a.Queue-w[1])) > 1 || a.Cores != 0 {
			t.Fatalf("AI_%d = %v, want about %v and no cores (single-core peers: as many as nodes)", d, a, w)
		}
	}
	l.Point[0] = 0
	if v.point[0] == 0 {
		t.Fatal("LoadInfo's point aliases the view's")
	}
}

// Multi-core aggregation (002 §3.1.4): I(u) is a neighbor's cores and the
// cores its jobs require, AI_d adds up cores as well as nodes, and CAN-P
// pushes by required cores over cores² (Eq 3.2): a dimension with many
// 8-core nodes above wins over one that has fewer jobs per node.
func TestCANPAggregatesCores(t *testing.T) {
	const big = 1e6
	n, v := tPushNode(1, Config{})
	u1 := v.nb(idU1).Load
	u1.Cores, u1.Demand = 8, 5
	u1.Agg[1].Cores = 4 * big
	l := n.LoadInfo()
	if a := l.Agg[1]; math.Abs(float64(a.Nodes)-(big+1)) > 1 || math.Abs(float64(a.Cores)-(4*big+8)) > 4 || math.Abs(float64(a.Queue)-(1e5+5)) > 1 {
		t.Fatalf("AI_1 = %v, want %v nodes, %v cores, %v required cores", a, big+1, 4*big+8, 1e5+5)
	}
	// By nodes U1 wins (1e5/1e12 < 5e5/1e12); U2's 8-core nodes above
	// make its 5e5 required cores light: 5e5/(8e6)² < 1e5/(4e6)².
	for seed := uint64(1); seed <= 10; seed++ {
		n, v := tPushNode(seed, Config{})
		u2 := v.nb(idU2).Load
		u2.Agg[2].Cores = 8 * big
		n.LoadInfo()
		n.Step(time.Second, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
		tOne[*wire.JobPush](t, tDrain(n), idU2)
	}
}

// CAN-P: nothing free, many nodes above (stop probability ~1e-12): the
// job goes to the upper neighbor minimizing F_d over the dimensions along
// which it is an upper neighbor, carrying the best candidate by F(C).
func TestCANPPushesToUpperNeighborMinimizingFd(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		n, v := tPushNode(seed, Config{})
		n.LoadInfo() // AI from the last heartbeat
		n.Step(time.Second, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
		r := tDrain(n)
		tNone[*wire.JobAssign](t, r)
		p := tOne[*wire.JobPush](t, r, idU1)
		if p.Job.GetId() != 7 || p.Owner != uint64(idS) || p.Epoch != 1 || p.Hops != 1 {
			t.Fatalf("seed %d: JobPush %v, want job 7, owner %d, epoch 1, hops 1", seed, p, idS)
		}
		if p.Best == nil || p.Best.Id != uint64(idU1) || p.Best.Score != 0.5 {
			t.Fatalf("seed %d: best candidate carried %v, want U1 (%d) with 0.5", seed, p.Best, idU1)
		}
		if e := tOneEvent(t, r, EvPushed); e.Job != 7 || e.Hops != 1 || e.Peer != idS {
			t.Fatalf("seed %d: pushed event %+v", seed, e)
		}
		if l := n.loadOf(v.nb(idU1)); l.Queue != 2 {
			t.Fatalf("seed %d: pushing counted the job in U1's queue (%d)", seed, l.Queue)
		}
		if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) {
			t.Fatalf("seed %d: the owner dropped the pushed job: %+v", seed, s)
		}
		if got := n.Status().Pushes; got != 1 {
			t.Fatalf("seed %d: pushes %d", seed, got)
		}
	}
}

// CAN-P: with no nodes above along the target dimension (AI from the last
// heartbeat, before the neighbors' loads arrived) the push stops with
// probability 1 and the job goes to the least F(C), counting the best
// candidate carried from earlier hops (not a neighbor of ours).
func TestCANPStopsWithNothingAboveAndTakesBestScore(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		for _, carried := range []float64{0.4, 0.6} {
			n, v := tPushNode(seed, Config{})
			loads := map[core.NodeID]*wire.Load{}
			for _, nb := range v.nbs {
				loads[nb.ID], nb.Load = nb.Load, nil
			}
			n.LoadInfo() // no neighbor load yet: nothing above
			for _, nb := range v.nbs {
				nb.Load = loads[nb.ID]
			}
			n.Step(time.Second, 50, &wire.JobPush{Job: tSpec(7, time.Second), Owner: 60, Epoch: 2, Hops: 3, Best: &wire.Candidate{Id: 77, Score: carried}})
			r := tDrain(n)
			tNone[*wire.JobPush](t, r)
			want, wantQ := core.NodeID(77), uint32(2)
			if carried > 0.5 {
				want, wantQ = idU1, 3
			}
			a := tOne[*wire.JobAssign](t, r, want)
			if a.Job.GetId() != 7 || a.Owner != 60 || a.Epoch != 2 || a.Hops != 3 {
				t.Fatalf("seed %d carried %v: JobAssign %v, want owner 60, epoch 2, hops 3", seed, carried, a)
			}
			if l := n.loadOf(v.nb(idU1)); l.Queue != wantQ {
				t.Fatalf("seed %d carried %v: U1's queue %d, want %d", seed, carried, l.Queue, wantQ)
			}
			if s := n.Snapshot(); len(s.Owned) != 0 {
				t.Fatalf("seed %d: a matching node that is not the owner owns %v", seed, s.Owned)
			}
		}
	}
}

// CAN-P: a job pushed MaxPushHops times stops wherever it is; routing
// hops do not count against the limit; with no candidate seen at the
// limit the job fails with its own reason.
func TestCANPStopsAtMaxPushHops(t *testing.T) {
	n, _ := tPushNode(1, Config{MaxPushHops: 5})
	n.LoadInfo()
	n.Step(0, 50, &wire.JobPush{Job: tSpec(7, time.Second), Owner: 60, Epoch: 1, Hops: 5, Pushes: 5, Best: &wire.Candidate{Id: 77, Score: 0.1}})
	r := tDrain(n)
	tNone[*wire.JobPush](t, r)
	tOne[*wire.JobAssign](t, r, 77)

	n, _ = tPushNode(1, Config{MaxPushHops: 5})
	n.LoadInfo()
	n.Step(0, 50, &wire.JobPush{Job: tSpec(8, time.Second), Owner: 60, Epoch: 1, Hops: 40, Pushes: 1, Best: &wire.Candidate{Id: 77, Score: 0.1}})
	if p := tOne[*wire.JobPush](t, tDrain(n), idU1); p.Pushes != 2 || p.Hops != 41 {
		t.Fatalf("push after 40 routing hops: %v, want pushed on (pushes 2, hops 41)", p)
	}
}

// CENT: the oracle picks the run node; no pick fails the job.
func TestCENTUsesCentralPick(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfYes()}
	v.nbs = []*overlay.Neighbor{tNb(idU0, zUp0(), tLoad(0, 1, 9, pCap(1)))}
	c := &fakeCentral{pick: 42}
	n := tNew(v, Config{Scheme: SchemeCENT}, 1, c)
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
	r := tDrain(n)
	if a := tOne[*wire.JobAssign](t, r, 42); a.Job.GetId() != 7 || a.Owner != uint64(idS) || a.Epoch != 1 {
		t.Fatalf("JobAssign %v", a)
	}
	if !slices.Equal(c.asked, []uint64{7}) {
		t.Fatalf("central asked about %v", c.asked)
	}
	if l := n.loadOf(v.nb(idU0)); l.Queue != 0 || l.Free != 1 {
		t.Fatalf("CENT changed a neighbor's load: %v", l)
	}

	// The oracle picks us.
	c.pick = idS
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(8, time.Second)})
	r = tDrain(n)
	tNone[*wire.JobAssign](t, r)
	if e := tOneEvent(t, r, EvQueued); e.Job != 8 || e.Peer != idS || e.Other != idS {
		t.Fatalf("local queue event %+v", e)
	}

	for _, central := range []Central{&fakeCentral{pick: 0}, nil} {
		n := tNew(v, Config{Scheme: SchemeCENT}, 1, central)
		n.Step(0, 50, &wire.JobSubmit{Job: tSpec(9, time.Second)})
		r := tDrain(n)
		tNone[*wire.JobAssign](t, r)
		var failed *wire.JobStatus
		for _, st := range tTo[*wire.JobStatus](r, tClientID) {
			if len(st.Failed) > 0 {
				failed = st
			}
		}
		if failed == nil || len(failed.Failed) != 1 || failed.Failed[0].Id != 9 || failed.Failed[0].Reason != ReasonNoCapableNode {
			t.Fatalf("central %v: want a failure of job 9 (%q) to the client, got %s", central, ReasonNoCapableNode, tMsgString(r))
		}
		if s := n.Snapshot(); len(s.Owned) != 0 {
			t.Fatalf("a failed job is still owned: %+v", s)
		}
	}
}

// At the upper corner of the space with nothing capable in sight the job
// fails: no node can run it.
func TestNoCapableNodeNoUpperNeighborFails(t *testing.T) {
	req := []uint32{uint32(tQ3), uint32(tQ3), 5}
	top := func() *fakeView {
		v := &fakeView{id: idS, zone: tZone(tQ2, can.Span, tQ2, can.Span, 0, can.Span), point: can.Point{uint32(tQ2) + 1, uint32(tQ2) + 1, 9}}
		v.nbs = []*overlay.Neighbor{
			tNb(idL0, tZone(0, tQ2, tQ2, can.Span, 0, can.Span), tLoad(0, 1, 9, can.Point{uint32(tQ2) - 1, math.MaxUint32, 1})),
			tNb(idL1, tZone(tQ2, can.Span, 0, tQ2, 0, can.Span), tLoad(0, 1, 9, can.Point{math.MaxUint32, uint32(tQ2) - 1, 1})),
		}
		return v
	}
	for _, scheme := range []Scheme{SchemeCAN, SchemeCANP} {
		n := tNew(top(), Config{Scheme: scheme}, 1, nil)
		n.LoadInfo()
		spec := tSpec(7, time.Second)
		spec.Req = req
		n.Step(0, 50, &wire.JobSubmit{Job: spec})
		r := tDrain(n)
		tNone[*wire.JobAssign](t, r)
		tNone[*wire.JobPush](t, r)
		var reason string
		for _, st := range tTo[*wire.JobStatus](r, tClientID) {
			for _, f := range st.Failed {
				if f.Id == 7 {
					reason = f.Reason
				}
			}
		}
		if reason != ReasonNoCapableNode {
			t.Fatalf("%s: want job 7 failed (%q) at the client, got %s", scheme, ReasonNoCapableNode, tMsgString(r))
		}
		if s := n.Snapshot(); len(s.Owned) != 0 {
			t.Fatalf("%s: failed job still owned: %+v", scheme, s)
		}

		// A node the job was pushed to tells the client and the owner.
		n = tNew(top(), Config{Scheme: scheme}, 1, nil)
		n.Step(0, 50, &wire.JobPush{Job: spec, Owner: 60, Epoch: 1, Hops: 2})
		r = tDrain(n)
		for _, to := range []core.NodeID{tClientID, 60} {
			st := tTo[*wire.JobStatus](r, to)
			if len(st) != 1 || len(st[0].Failed) != 1 || st[0].Failed[0].Id != 7 || st[0].Failed[0].Reason != ReasonNoCapableNode {
				t.Fatalf("%s: pushed job: want a failure to %d, got %s", scheme, to, tMsgString(r))
			}
		}
	}
}

// With nothing capable in sight the job climbs to the upper neighbor along
// a dimension where we fall short of the requirement.
func TestClimbTowardsMissingResource(t *testing.T) {
	for _, c := range []struct {
		name  string
		point can.Point
		want  core.NodeID
	}{
		{"short-in-memory", can.Point{tReq0 + 5, uint32(tQ1) + 10, 7}, idU1},
		{"short-in-cpu", can.Point{uint32(tQ1) + 10, tReq1 + 5, 7}, idU0},
	} {
		for _, scheme := range []Scheme{SchemeCAN, SchemeCANP} {
			v := &fakeView{id: idS, zone: zSelf(), point: c.point}
			v.nbs = []*overlay.Neighbor{
				tNb(idL0, zLow0(), tLoad(0, 1, 1, pNoCPU())),
				tNb(idU2, zUp2(), nil),
				tNb(idU0, zUp0(), tLoad(0, 1, 1, pNoMem())),
				tNb(idU1, zUp1(), tLoad(0, 1, 1, pNoCPU())),
			}
			n := tNew(v, Config{Scheme: scheme}, 1, nil)
			n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
			r := tDrain(n)
			tNone[*wire.JobAssign](t, r)
			if p := tOne[*wire.JobPush](t, r, c.want); p.Hops != 1 || p.Owner != uint64(idS) {
				t.Fatalf("%s/%s: JobPush %v", c.name, scheme, p)
			}
		}
	}
}

// The owner drops a job still being matched when a node it was pushed to
// reports that no node can run it.
func TestOwnerDropsJobFailedDownstream(t *testing.T) {
	n, _ := tPushNode(1, Config{})
	n.LoadInfo()
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
	tOne[*wire.JobPush](t, tDrain(n), idU1)
	n.Step(time.Second, idU1, &wire.JobStatus{Failed: []*wire.JobFailure{{Id: 7, Reason: ReasonNoCapableNode}}})
	if s := n.Snapshot(); len(s.Owned) != 0 {
		t.Fatalf("owner still owns job 7: %+v", s)
	}
}

// The injection node routes a job towards its point; the owner of the
// point takes it.
func TestInjectionRoutesToOwner(t *testing.T) {
	v := &fakeView{id: 3, zone: zUp0(), point: pCap(1), next: 4}
	n := tNew(v, Config{}, 1, nil)
	n.Step(0, tClientID, &wire.JobSubmit{Job: tSpec(7, time.Second)})
	r := tDrain(n)
	rt := tOne[*wire.JobRoute](t, r, 4)
	if rt.Job.GetId() != 7 || rt.Hops != 1 {
		t.Fatalf("JobRoute %v", rt)
	}
	if len(v.asked) != 1 || !slices.Equal(v.asked[0], can.Point(tReq())) {
		t.Fatalf("NextHop asked about %v, want the job's point", v.asked)
	}
	if s := n.Snapshot(); len(s.Owned) != 0 || len(r.Events) != 0 {
		t.Fatalf("the injection node took the job: %+v %+v", s, r.Events)
	}
	// Nowhere to go: dropped, said so.
	v.next = 0
	n.Step(0, tClientID, &wire.JobSubmit{Job: tSpec(8, time.Second)})
	r = tDrain(n)
	if len(r.Messages) != 0 || tOneEvent(t, r, EvRouteDrop).Job != 8 {
		t.Fatalf("drop: %s %+v", tMsgString(r), r.Events)
	}
}

// --- Run node -----------------------------------------------------------

func tRunNode(cfg Config) (*Node, *fakeView) {
	v := &fakeView{id: 2, zone: zUp0(), point: pCap(1), next: 7}
	return tNew(v, cfg, 2, nil), v
}

func tAssign(id uint64, work time.Duration, owner core.NodeID, epoch uint32) *wire.JobAssign {
	return &wire.JobAssign{Job: tSpec(id, work), Owner: uint64(owner), Epoch: epoch, Hops: 2}
}

// FIFO on one core of speed 2: the first job runs, the second waits until
// the first is done.
func TestRunNodeFIFOSingleCore(t *testing.T) {
	n, _ := tRunNode(Config{Speed: 2})
	t0 := 100 * time.Second
	n.Step(t0, 1, tAssign(1, 10*time.Second, 1, 1))
	r := tDrain(n)
	if q := tOne[*wire.JobQueued](t, r, 1); q.Job.GetId() != 1 || q.Job.GetEpoch() != 1 || q.Queue != 0 {
		t.Fatalf("JobQueued %v", q)
	}
	if e := tOneEvent(t, r, EvQueued); e.Job != 1 || e.Queue != 0 || e.Hops != 2 || e.Other != 1 || e.Peer != 2 {
		t.Fatalf("queued event %+v", e)
	}
	tOneEvent(t, r, EvStarted)
	if at := tTimers(r, core.TimerRunDone); !slices.Equal(at, []time.Duration{t0 + 5*time.Second}) {
		t.Fatalf("run timers %v, want [%v]", at, t0+5*time.Second)
	}
	if !r.QueueChanged || r.QueueLen != 1 {
		t.Fatalf("queue change %v %d", r.QueueChanged, r.QueueLen)
	}

	n.Step(t0, 1, tAssign(2, 6*time.Second, 1, 1))
	r = tDrain(n)
	if q := tOne[*wire.JobQueued](t, r, 1); q.Job.GetId() != 2 || q.Queue != 1 {
		t.Fatalf("second JobQueued %v, want 1 job ahead", q)
	}
	if len(tEvents(r, EvStarted)) != 0 || len(tTimers(r, core.TimerRunDone)) != 0 {
		t.Fatalf("second job started on a busy core: %+v %v", r.Events, r.Timers)
	}
	if s := n.Snapshot(); !slices.Equal(s.Held, []uint64{1, 2}) || len(s.Held) != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	if l := n.LoadInfo(); l.Queue != 2 || l.Free != 0 {
		t.Fatalf("load %v, want queue 2, no free core", l)
	}

	// Not yet.
	n.Tick(t0+5*time.Second-1, core.TimerRunDone)
	if r := tDrain(n); len(r.Events) != 0 || len(r.Messages) != 0 {
		t.Fatalf("early tick did something: %+v %s", r.Events, tMsgString(r))
	}

	n.Tick(t0+5*time.Second, core.TimerRunDone)
	r = tDrain(n)
	if e := tOneEvent(t, r, EvCompleted); e.Job != 1 || e.Other != 1 {
		t.Fatalf("completed %+v", e)
	}
	if res := tOne[*wire.JobResult](t, r, tClientID); res.Id != 1 || res.Attempt != 1 || res.Run != 2 {
		t.Fatalf("JobResult %v", res)
	}
	if hb := tOne[*wire.RunHeartbeat](t, r, 1); !slices.Equal(tRefs(hb.Done), [][2]uint64{{1, 1}}) || len(hb.Held) != 0 {
		t.Fatalf("RunHeartbeat %v, want done [1/1]", hb)
	}
	if e := tOneEvent(t, r, EvStarted); e.Job != 2 {
		t.Fatalf("started %+v, want job 2", e)
	}
	if at := tTimers(r, core.TimerRunDone); !slices.Equal(at, []time.Duration{t0 + 8*time.Second}) {
		t.Fatalf("run timers %v, want [%v]", at, t0+8*time.Second)
	}
	if !r.QueueChanged || r.QueueLen != 1 {
		t.Fatalf("queue change %v %d", r.QueueChanged, r.QueueLen)
	}
	if s := n.Snapshot(); !slices.Equal(s.Held, []uint64{2}) || !slices.Equal(s.Done, []uint64{1}) {
		t.Fatalf("snapshot %+v", s)
	}
	n.Tick(t0+8*time.Second, core.TimerRunDone)
	if e := tOneEvent(t, tDrain(n), EvCompleted); e.Job != 2 {
		t.Fatalf("completed %+v", e)
	}
	if st := n.Status(); st.Queued != 2 || st.Started != 2 || st.Completed != 2 {
		t.Fatalf("status %+v", st)
	}
}

func TestRunNodeTwoCoresStartBoth(t *testing.T) {
	n, _ := tRunNode(Config{Speed: 2, Cores: 2})
	n.Step(0, 1, tAssign(1, 10*time.Second, 1, 1))
	n.Step(0, 1, tAssign(2, 6*time.Second, 1, 1))
	r := tDrain(n)
	if len(tEvents(r, EvStarted)) != 2 {
		t.Fatalf("started %+v, want both", r.Events)
	}
	if at := tTimers(r, core.TimerRunDone); !slices.Equal(at, []time.Duration{5 * time.Second, 3 * time.Second}) {
		t.Fatalf("run timers %v", at)
	}
	n.Tick(3*time.Second, core.TimerRunDone)
	r = tDrain(n)
	if e := tOneEvent(t, r, EvCompleted); e.Job != 2 {
		t.Fatalf("completed %+v, want job 2 (the shorter)", e)
	}
	if l := n.LoadInfo(); l.Queue != 1 || l.Free != 1 {
		t.Fatalf("load %v", l)
	}
}

// Random arrivals on random cores and speeds: jobs start in arrival order
// as cores free up, each runs work/speed, and the queue reported ahead of
// each is the number of jobs present at its arrival.
func TestRunNodeFIFOProperty(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0xf1f0))
		cores := 1 + rng.IntN(3)
		speed := []float64{0.5, 1, 2, 4}[rng.IntN(4)]
		n, _ := tRunNode(Config{Speed: speed, Cores: cores})
		k := 1 + rng.IntN(10)
		arrive := make([]time.Duration, k)
		work := make([]time.Duration, k)
		at := time.Duration(0)
		for i := range k {
			at += time.Duration(rng.IntN(8000)) * time.Millisecond
			arrive[i] = at
			work[i] = time.Duration(1+rng.IntN(20000)) * time.Millisecond
		}
		// The model: a FIFO queue with `cores` servers.
		wantStart := make([]time.Duration, k)
		wantEnd := make([]time.Duration, k)
		free := make([]time.Duration, cores)
		prev := time.Duration(0)
		for i := range k {
			c := slices.Index(free, slices.Min(free))
			s := max(arrive[i], free[c], prev)
			wantStart[i], wantEnd[i] = s, s+time.Duration(float64(work[i])/speed)
			free[c], prev = wantEnd[i], s
		}
		wantAhead := make([]uint32, k)
		for i := range k {
			for j := range i {
				if wantEnd[j] > arrive[i] {
					wantAhead[i]++
				}
			}
		}

		gotStart := map[uint64]time.Duration{}
		gotEnd := map[uint64]time.Duration{}
		gotAhead := map[uint64]uint32{}
		var timers []time.Duration
		var startOrder []uint64
		i := 0
		for i < k || len(timers) > 0 {
			var now time.Duration
			if len(timers) > 0 && (i >= k || slices.Min(timers) <= arrive[i]) {
				now = slices.Min(timers)
				timers = slices.DeleteFunc(timers, func(x time.Duration) bool { return x == now })
				n.Tick(now, core.TimerRunDone)
			} else {
				now = arrive[i]
				n.Step(now, 1, tAssign(uint64(i+1), work[i], 1, 1))
				i++
			}
			r := tDrain(n)
			for _, e := range r.Events {
				switch e.Kind {
				case EvStarted:
					gotStart[e.Job] = now
					startOrder = append(startOrder, e.Job)
				case EvCompleted:
					gotEnd[e.Job] = now
				}
			}
			for _, q := range tTo[*wire.JobQueued](r, 1) {
				gotAhead[q.Job.Id] = q.Queue
			}
			timers = append(timers, tTimers(r, core.TimerRunDone)...)
		}
		for i := range k {
			id := uint64(i + 1)
			if gotStart[id] != wantStart[i] || gotEnd[id] != wantEnd[i] || gotAhead[id] != wantAhead[i] {
				t.Fatalf("seed %d (cores %d, speed %v): job %d start %v end %v ahead %d, want %v %v %d", seed, cores, speed, id, gotStart[id], gotEnd[id], gotAhead[id], wantStart[i], wantEnd[i], wantAhead[i])
			}
			if startOrder[i] != id {
				t.Fatalf("seed %d: start order %v, not FIFO", seed, startOrder)
			}
		}
		if s := n.Snapshot(); len(s.Held) != 0 || len(s.Done) != k {
			t.Fatalf("seed %d: end snapshot %+v", seed, s)
		}
	}
}

// JobQueued tells the owner how many jobs are ahead; the same job assigned
// again is not queued twice.
func TestRunNodeQueuesJobOnce(t *testing.T) {
	n, _ := tRunNode(Config{})
	for id := uint64(1); id <= 3; id++ {
		n.Step(0, 1, tAssign(id, time.Hour, 1, 1))
		if q := tOne[*wire.JobQueued](t, tDrain(n), 1); q.Job.GetId() != id || q.Queue != uint32(id-1) {
			t.Fatalf("JobQueued %v, want %d ahead", q, id-1)
		}
	}
	// Job 2 matched again, by a new owner (an adoption's rematch).
	n.Step(time.Second, 5, tAssign(2, time.Hour, 5, 4))
	r := tDrain(n)
	if len(tEvents(r, EvQueued)) != 0 {
		t.Fatalf("job 2 queued twice: %+v", r.Events)
	}
	if q := tOne[*wire.JobQueued](t, r, 5); q.Job.GetId() != 2 || q.Job.GetEpoch() != 4 {
		t.Fatalf("JobQueued to the new owner %v", q)
	}
	if s := n.Snapshot(); !slices.Equal(s.Held, []uint64{1, 2, 3}) {
		t.Fatalf("snapshot %+v", s)
	}
	if st := n.Status(); st.Queued != 3 {
		t.Fatalf("queued %d, want 3", st.Queued)
	}
	// The old epoch no longer cancels it; the new one does.
	n.Step(2*time.Second, 1, &wire.JobCancel{Job: &wire.JobRef{Id: 2, Epoch: 1}})
	if s := n.Snapshot(); !slices.Contains(s.Held, 2) {
		t.Fatal("a cancel of the old epoch dropped job 2")
	}
	n.Step(2*time.Second, 5, &wire.JobCancel{Job: &wire.JobRef{Id: 2, Epoch: 4}})
	if s := n.Snapshot(); !slices.Equal(s.Held, []uint64{1, 3}) {
		t.Fatalf("held %v after the cancel, want [1 3]", s.Held)
	}
}

// --- Recovery -----------------------------------------------------------

// tOwner is S (CAN) with two free capable neighbors, U0 (speed 2) and U1
// (speed 1); job 7 submitted at 0 goes to U0.
func tOwner(t *testing.T) (*Node, *fakeView) {
	t.Helper()
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), next: 9}
	v.nbs = []*overlay.Neighbor{
		tNb(idU0, zUp0(), tLoad(0, 1, 2, pCap(1))),
		tNb(idU1, zUp1(), tLoad(0, 1, 1, pCap(2))),
	}
	n := tNew(v, Config{Scheme: SchemeCAN}, 1, nil)
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Hour)})
	tOne[*wire.JobAssign](t, tDrain(n), idU0)
	return n, v
}

// A confirmed run node silent for FailAfter periods: the job is matched
// again at the next tick.
func TestOwnerRematchesSilentRunNode(t *testing.T) {
	n, _ := tOwner(t)
	n.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	if r := tDrain(n); len(r.Messages) != 0 {
		t.Fatalf("JobQueued answered: %s", tMsgString(r))
	}
	for _, now := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 31 * time.Second} {
		n.Tick(now, core.TimerJobs)
		r := tDrain(n)
		if len(tEvents(r, EvRematched)) != 0 {
			t.Fatalf("rematched at %v, only %v after the run node's last word", now, now-time.Second)
		}
		if hb := tOne[*wire.OwnerHeartbeat](t, r, idU0); !slices.Equal(tRefs(hb.Jobs), [][2]uint64{{7, 1}}) || hb.Leaving {
			t.Fatalf("at %v: OwnerHeartbeat %v", now, hb)
		}
	}
	now := 31*time.Second + 1
	n.Tick(now, core.TimerJobs)
	r := tDrain(n)
	e := tOneEvent(t, r, EvRematched)
	if e.Job != 7 || e.Other != idU0 || e.Reason != "run node silent" || e.Peer != idS {
		t.Fatalf("rematch event %+v", e)
	}
	tNone[*wire.OwnerHeartbeat](t, r)
	// U0 counts as busy in our view since the first assignment: U1.
	if a := tOne[*wire.JobAssign](t, r, idU1); a.Epoch != 2 || a.Job.GetId() != 7 || a.Owner != uint64(idS) {
		t.Fatalf("rematch JobAssign %v, want epoch 2", a)
	}
	if at := tTimers(r, core.TimerJobs); !slices.Equal(at, []time.Duration{now + tPeriod}) {
		t.Fatalf("job timer not re-armed: %v", at)
	}
	if st := n.Status(); st.Rematches != 1 {
		t.Fatalf("rematches %d", st.Rematches)
	}
}

// A run node that keeps sending heartbeats keeps the job, and hears from
// the owner every period.
func TestOwnerKeepsRunNodeThatHeartbeats(t *testing.T) {
	n, _ := tOwner(t)
	n.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	for now := 10 * time.Second; now <= 200*time.Second; now += 10 * time.Second {
		n.Step(now-time.Second, idU0, &wire.RunHeartbeat{Held: []*wire.JobRef{{Id: 7, Epoch: 1}}})
		if r := tDrain(n); len(r.Messages) != 0 {
			t.Fatalf("RunHeartbeat answered: %s", tMsgString(r))
		}
		n.Tick(now, core.TimerJobs)
		r := tDrain(n)
		if len(tEvents(r, EvRematched)) != 0 || len(tTo[*wire.JobAssign](r, idU1)) != 0 {
			t.Fatalf("at %v: rematched a live run node: %+v", now, r.Events)
		}
		if hb := tOne[*wire.OwnerHeartbeat](t, r, idU0); !slices.Equal(tRefs(hb.Jobs), [][2]uint64{{7, 1}}) {
			t.Fatalf("at %v: OwnerHeartbeat %v", now, hb)
		}
	}
	if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) {
		t.Fatalf("snapshot %+v", s)
	}
}

// An assignment no run node confirms is matched again after the timeout.
func TestOwnerRematchesUnconfirmedAssignment(t *testing.T) {
	n, _ := tOwner(t)
	n.Tick(tTimeout, core.TimerJobs)
	if r := tDrain(n); len(tEvents(r, EvRematched)) != 0 {
		t.Fatal("rematched at exactly the timeout")
	}
	n.Tick(tTimeout+1, core.TimerJobs)
	r := tDrain(n)
	if e := tOneEvent(t, r, EvRematched); e.Reason != "matchmaking timed out" || e.Other != 0 {
		t.Fatalf("rematch %+v", e)
	}
	tOne[*wire.JobAssign](t, r, idU1)
}

// tHeld is run node R (id 2, not owning the job's point) running job 7 of
// owner 1 since time 0.
func tHeld(t *testing.T, ownsPoint bool) (*Node, *fakeView) {
	t.Helper()
	n, v := tRunNode(Config{})
	if ownsPoint {
		v.zone = zSelf()
	}
	n.Step(0, 1, tAssign(7, time.Hour, 1, 3))
	tDrain(n)
	return n, v
}

func TestRunNodeAdoptsJobOfSilentOwner(t *testing.T) {
	t.Run("routed", func(t *testing.T) {
		n, v := tHeld(t, false)
		for _, now := range []time.Duration{10 * time.Second, 20 * time.Second, tTimeout} {
			n.Tick(now, core.TimerJobs)
			r := tDrain(n)
			tNone[*wire.JobAdopt](t, r)
			if hb := tOne[*wire.RunHeartbeat](t, r, 1); !slices.Equal(tRefs(hb.Held), [][2]uint64{{7, 3}}) {
				t.Fatalf("at %v: RunHeartbeat %v", now, hb)
			}
		}
		now := tTimeout + time.Second
		n.Tick(now, core.TimerJobs)
		r := tDrain(n)
		tNone[*wire.RunHeartbeat](t, r)
		a := tOne[*wire.JobAdopt](t, r, 7)
		if a.Job.GetId() != 7 || a.Run != 2 || a.Epoch != 3 || a.Done || a.Hops != 1 {
			t.Fatalf("JobAdopt %v", a)
		}
		if !slices.Equal(v.asked[len(v.asked)-1], can.Point(tReq())) {
			t.Fatalf("NextHop asked about %v, want the job's point", v.asked)
		}
		// Not again before another timeout.
		n.Tick(now+10*time.Second, core.TimerJobs)
		tNone[*wire.JobAdopt](t, tDrain(n))
		n.Tick(now+tTimeout+time.Second, core.TimerJobs)
		tOne[*wire.JobAdopt](t, tDrain(n), 7)
	})
	t.Run("owner-heard-in-time", func(t *testing.T) {
		n, _ := tHeld(t, false)
		n.Step(25*time.Second, 1, &wire.OwnerHeartbeat{Jobs: []*wire.JobRef{{Id: 7, Epoch: 3}}})
		for now := 30 * time.Second; now <= 55*time.Second; now += 5 * time.Second {
			n.Tick(now, core.TimerJobs)
			tNone[*wire.JobAdopt](t, tDrain(n))
		}
		n.Tick(56*time.Second, core.TimerJobs)
		tOne[*wire.JobAdopt](t, tDrain(n), 7)
	})
	t.Run("owner-leaving", func(t *testing.T) {
		n, _ := tHeld(t, false)
		n.Step(5*time.Second, 1, &wire.OwnerHeartbeat{Jobs: []*wire.JobRef{{Id: 7, Epoch: 3}}, Leaving: true})
		a := tOne[*wire.JobAdopt](t, tDrain(n), 7)
		if a.Job.GetId() != 7 || a.Run != 2 || a.Epoch != 3 {
			t.Fatalf("JobAdopt %v", a)
		}
	})
	t.Run("local", func(t *testing.T) {
		n, _ := tHeld(t, true)
		n.Tick(tTimeout+time.Second, core.TimerJobs)
		r := tDrain(n)
		tNone[*wire.JobAdopt](t, r)
		if e := tOneEvent(t, r, EvAdopted); e.Job != 7 || e.Peer != 2 || e.Other != 2 {
			t.Fatalf("adopted %+v", e)
		}
		if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Owned, []uint64{7}) {
			t.Fatalf("status %v", st)
		}
		if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) || !slices.Equal(s.Held, []uint64{7}) {
			t.Fatalf("snapshot %+v", s)
		}
		// We own it now: no more heartbeats to the old owner, no second adoption.
		for now := 40 * time.Second; now <= 120*time.Second; now += 10 * time.Second {
			n.Tick(now, core.TimerJobs)
			r := tDrain(n)
			// Only the owner's periodic status to the client (StatusEvery).
			for _, st := range tTo[*wire.JobStatus](r, tClientID) {
				if !slices.Equal(st.Owned, []uint64{7}) || len(st.Done)+len(st.Failed) != 0 {
					t.Fatalf("at %v: status %v", now, st)
				}
			}
			if len(r.Messages) != len(tTo[*wire.JobStatus](r, tClientID)) || len(r.Events) != 0 {
				t.Fatalf("at %v: %s %+v", now, tMsgString(r), r.Events)
			}
		}
		n.Tick(time.Hour, core.TimerRunDone)
		r = tDrain(n)
		tOne[*wire.JobResult](t, r, tClientID)
		var done bool
		for _, st := range tTo[*wire.JobStatus](r, tClientID) {
			done = done || slices.Equal(st.Done, []uint64{7})
		}
		if !done {
			t.Fatalf("the adopting owner did not tell the client: %s", tMsgString(r))
		}
		if s := n.Snapshot(); len(s.Owned)+len(s.Held)+len(s.Done) != 0 {
			t.Fatalf("snapshot after completion %+v", s)
		}
	})
}

// The owner of the job's point adopts it from its run node.
func TestAdoptAtPointOwner(t *testing.T) {
	adopt := func(done bool) *wire.JobAdopt {
		return &wire.JobAdopt{Job: tSpec(7, time.Hour), Run: 2, Epoch: 3, Done: done, Hops: 2}
	}
	t.Run("running", func(t *testing.T) {
		v := &fakeView{id: 3, zone: zSelf(), point: pSelfNo()}
		n := tNew(v, Config{}, 1, nil)
		n.Step(40*time.Second, 8, adopt(false))
		r := tDrain(n)
		if e := tOneEvent(t, r, EvAdopted); e.Job != 7 || e.Peer != 3 || e.Other != 2 {
			t.Fatalf("adopted %+v", e)
		}
		if hb := tOne[*wire.OwnerHeartbeat](t, r, 2); !slices.Equal(tRefs(hb.Jobs), [][2]uint64{{7, 3}}) {
			t.Fatalf("OwnerHeartbeat %v", hb)
		}
		if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Owned, []uint64{7}) || len(st.Done) != 0 {
			t.Fatalf("status %v", st)
		}
		if at := tTimers(r, core.TimerJobs); !slices.Equal(at, []time.Duration{40*time.Second + tPeriod}) {
			t.Fatalf("timers %v", at)
		}
		if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) {
			t.Fatalf("snapshot %+v", s)
		}
		// The run node is watched from now on.
		n.Tick(50*time.Second, core.TimerJobs)
		if hb := tOne[*wire.OwnerHeartbeat](t, tDrain(n), 2); !slices.Equal(tRefs(hb.Jobs), [][2]uint64{{7, 3}}) {
			t.Fatalf("periodic OwnerHeartbeat %v", hb)
		}
		// Adopted again (the heartbeat was lost): no second adoption.
		n.Step(60*time.Second, 2, adopt(false))
		r = tDrain(n)
		if len(tEvents(r, EvAdopted)) != 0 {
			t.Fatalf("adopted twice: %+v", r.Events)
		}
		tOne[*wire.OwnerHeartbeat](t, r, 2)
		if st := n.Status(); st.Adoptions != 1 {
			t.Fatalf("adoptions %d", st.Adoptions)
		}
	})
	t.Run("done", func(t *testing.T) {
		v := &fakeView{id: 3, zone: zSelf(), point: pSelfNo()}
		n := tNew(v, Config{}, 1, nil)
		n.Step(40*time.Second, 8, adopt(true))
		r := tDrain(n)
		if len(tEvents(r, EvAdopted)) != 0 {
			t.Fatalf("a finished job handed over counts as adopted: %+v", r.Events)
		}
		st := tOne[*wire.JobStatus](t, r, tClientID)
		if !slices.Equal(st.Done, []uint64{7}) || len(st.Owned) != 0 {
			t.Fatalf("status %v, want done [7]", st)
		}
		if hb := tOne[*wire.OwnerHeartbeat](t, r, 2); len(hb.Jobs) != 0 {
			t.Fatalf("OwnerHeartbeat %v still lists the finished job", hb)
		}
		if s := n.Snapshot(); len(s.Owned) != 0 {
			t.Fatalf("snapshot %+v", s)
		}
	})
	t.Run("not-ours", func(t *testing.T) {
		v := &fakeView{id: 3, zone: zUp0(), point: pCap(1), next: 8}
		n := tNew(v, Config{}, 1, nil)
		n.Step(40*time.Second, 6, adopt(false))
		r := tDrain(n)
		if a := tOne[*wire.JobAdopt](t, r, 8); a.Hops != 3 || a.Run != 2 {
			t.Fatalf("forwarded JobAdopt %v", a)
		}
		if len(r.Events) != 0 || len(n.Snapshot().Owned) != 0 {
			t.Fatalf("a node not owning the point adopted: %+v", r.Events)
		}
	})
}

// A finished job whose owner went silent is adopted (Done) by the owner of
// its point, which acknowledges it with a JobCancel naming it: the run
// node drops its record and stops asking.
func TestAdoptedDoneJobIsAcknowledged(t *testing.T) {
	t.Run("routed", func(t *testing.T) {
		n, _ := tRunNode(Config{})
		n.Step(0, 1, tAssign(7, time.Second, 1, 3))
		n.Tick(time.Second, core.TimerRunDone)
		tDrain(n)
		now := tTimeout + 2*time.Second
		n.Tick(now, core.TimerJobs)
		a := tOne[*wire.JobAdopt](t, tDrain(n), 7)
		if !a.Done {
			t.Fatalf("JobAdopt %v, want done", a)
		}
		// The point's owner adopts it and answers.
		x := tNew(&fakeView{id: 3, zone: zSelf(), point: pSelfNo()}, Config{}, 1, nil)
		x.Step(now, 7, a)
		rx := tDrain(x)
		tOne[*wire.OwnerHeartbeat](t, rx, 2)
		ack := tOne[*wire.JobCancel](t, rx, 2)
		n.Step(now, 3, ack)
		tDrain(n)
		if s := n.Snapshot(); len(s.Done) != 0 {
			t.Errorf("run node still keeps the adopted finished job: done %v", s.Done)
		}
		adopts := 0
		for later := now + 10*time.Second; later <= now+200*time.Second; later += 10 * time.Second {
			n.Tick(later, core.TimerJobs)
			adopts += len(tTo[*wire.JobAdopt](tDrain(n), 7))
		}
		if adopts != 0 {
			t.Errorf("run node asked for %d more adoptions of a job already adopted and done", adopts)
		}
	})
	t.Run("local", func(t *testing.T) {
		n, v := tRunNode(Config{})
		v.zone = zSelf()
		n.Step(0, 1, tAssign(7, time.Second, 1, 3))
		n.Tick(time.Second, core.TimerRunDone)
		tDrain(n)
		n.Tick(tTimeout+2*time.Second, core.TimerJobs)
		if r := tDrain(n); len(tEvents(r, EvAdopted)) != 0 {
			t.Fatalf("a finished job handed over counts as adopted: %+v", r.Events)
		}
		if s := n.Snapshot(); len(s.Done) != 0 {
			t.Errorf("run node still keeps the finished job it adopted itself: done %v", s.Done)
		}
		adoptions := 0
		for later := 40 * time.Second; later <= 300*time.Second; later += 10 * time.Second {
			n.Tick(later, core.TimerJobs)
			adoptions += len(tEvents(tDrain(n), EvAdopted))
		}
		if adoptions != 0 {
			t.Errorf("job 7 adopted %d more times after it was adopted and done", adoptions)
		}
	})
}

// A leaving run node hands every job (and unacknowledged result) back to
// its owner.
func TestRunNodeLeaveReturnsJobs(t *testing.T) {
	n, _ := tRunNode(Config{})
	n.Step(0, 1, tAssign(10, time.Second, 1, 5))
	n.Tick(time.Second, core.TimerRunDone) // job 10 done, not yet acknowledged
	n.Step(2*time.Second, 1, tAssign(11, time.Hour, 1, 1))
	n.Step(2*time.Second, 1, tAssign(12, time.Hour, 1, 2))
	n.Step(2*time.Second, 3, tAssign(13, time.Hour, 3, 1))
	tDrain(n)
	n.Leave(5 * time.Second)
	r := tDrain(n)
	rt := tOne2(t, tTo[*wire.JobReturn](r, 1))
	if !slices.Equal(tRefs(rt.Jobs), [][2]uint64{{11, 1}, {12, 2}}) || !slices.Equal(tRefs(rt.Done), [][2]uint64{{10, 5}}) {
		t.Fatalf("JobReturn to 1: %v", rt)
	}
	if rt := tOne2(t, tTo[*wire.JobReturn](r, 3)); !slices.Equal(tRefs(rt.Jobs), [][2]uint64{{13, 1}}) || len(rt.Done) != 0 {
		t.Fatalf("JobReturn to 3: %v", rt)
	}
	if !r.QueueChanged || r.QueueLen != 0 {
		t.Fatalf("queue change %v %d", r.QueueChanged, r.QueueLen)
	}
	if s := n.Snapshot(); len(s.Held)+len(s.Done)+len(s.Owned) != 0 {
		t.Fatalf("snapshot after leaving %+v", s)
	}
	// Gone: nothing more.
	n.Step(6*time.Second, 1, tAssign(14, time.Second, 1, 1))
	n.Tick(time.Hour, core.TimerRunDone)
	n.Tick(time.Hour, core.TimerJobs)
	n.Leave(time.Hour)
	if r := tDrain(n); len(r.Messages)+len(r.Events)+len(r.Timers) != 0 {
		t.Fatalf("a departed node acted: %s %+v %v", tMsgString(r), r.Events, r.Timers)
	}
}

func tOne2[T any](t *testing.T, ms []T) T {
	t.Helper()
	if len(ms) != 1 {
		t.Fatalf("want one message, got %d: %v", len(ms), ms)
	}
	return ms[0]
}

// The owner matches a returned job again.
func TestOwnerRematchesReturnedJob(t *testing.T) {
	n, _ := tOwner(t)
	n.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	// From a node that is not its run node: ignored.
	n.Step(2*time.Second, idU2, &wire.JobReturn{Jobs: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	if r := tDrain(n); len(r.Events)+len(r.Messages) != 0 {
		t.Fatalf("return from a stranger acted on: %s %+v", tMsgString(r), r.Events)
	}
	n.Step(3*time.Second, idU0, &wire.JobReturn{Jobs: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	r := tDrain(n)
	if e := tOneEvent(t, r, EvReturned); e.Job != 7 || e.Other != idU0 {
		t.Fatalf("returned %+v", e)
	}
	if e := tOneEvent(t, r, EvRematched); e.Job != 7 || e.Reason != "run node left" {
		t.Fatalf("rematched %+v", e)
	}
	if a := tOne[*wire.JobAssign](t, r, idU1); a.Epoch != 2 {
		t.Fatalf("JobAssign %v", a)
	}
	// A result returned as done completes the job.
	n.Step(4*time.Second, idU1, &wire.JobReturn{Done: []*wire.JobRef{{Id: 7, Epoch: 2}}})
	r = tDrain(n)
	if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Done, []uint64{7}) {
		t.Fatalf("status %v", st)
	}
	if s := n.Snapshot(); len(s.Owned) != 0 {
		t.Fatalf("snapshot %+v", s)
	}
}

// A leaving owner re-routes the jobs it is still matching and has the run
// nodes of the others adopt them.
func TestOwnerLeaveReroutesMatchingJobs(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), next: 9}
	c := &fakeCentral{pick: 42}
	n := tNew(v, Config{Scheme: SchemeCENT}, 1, c)
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Hour)})
	c.pick = 43
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(8, time.Hour)})
	n.Step(time.Second, 43, &wire.JobQueued{Job: &wire.JobRef{Id: 8, Epoch: 1}})
	tDrain(n)
	n.Leave(2 * time.Second)
	r := tDrain(n)
	rt := tOne[*wire.JobRoute](t, r, 9)
	if !proto.Equal(rt.Job, tSpec(7, time.Hour)) || rt.Hops != 1 {
		t.Fatalf("JobRoute %v", rt)
	}
	if hb := tOne[*wire.OwnerHeartbeat](t, r, 43); !hb.Leaving || !slices.Equal(tRefs(hb.Jobs), [][2]uint64{{8, 1}}) {
		t.Fatalf("OwnerHeartbeat %v, want leaving with [8/1]", hb)
	}
	if s := n.Snapshot(); len(s.Owned) != 0 {
		t.Fatalf("snapshot %+v", s)
	}
}

// Matched twice: the owner keeps the first confirmed run node and cancels
// the other; the other drops the job if it is only queued there.
func TestMatchedTwiceCancelsSecondRunNode(t *testing.T) {
	o, _ := tOwner(t)
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	if r := tDrain(o); len(r.Messages) != 0 {
		t.Fatalf("the confirmed run node was answered: %s", tMsgString(r))
	}
	o.Step(2*time.Second, idU1, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 2}})
	cancel := tOne[*wire.JobCancel](t, tDrain(o), idU1)
	if cancel.Job.GetId() != 7 || cancel.Job.GetEpoch() != 2 {
		t.Fatalf("JobCancel %v", cancel)
	}
	// A job the owner does not own at all is cancelled too.
	o.Step(2*time.Second, idU2, &wire.JobQueued{Job: &wire.JobRef{Id: 99, Epoch: 1}})
	if c := tOne[*wire.JobCancel](t, tDrain(o), idU2); c.Job.GetId() != 99 {
		t.Fatalf("JobCancel %v", c)
	}

	// B (one core) runs job 5 and has job 7 (epoch 2) queued.
	b := tNew(&fakeView{id: idU1, zone: zUp1(), point: pCap(2)}, Config{}, 3, nil)
	b.Step(0, 60, &wire.JobAssign{Job: tSpec(5, time.Hour), Owner: 60, Epoch: 1})
	b.Step(time.Second, idS, &wire.JobAssign{Job: tSpec(7, time.Hour), Owner: uint64(idS), Epoch: 2})
	tDrain(b)
	b.Step(2*time.Second, idS, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	if r := tDrain(b); len(r.Events) != 0 || !slices.Contains(b.Snapshot().Held, 7) {
		t.Fatalf("a cancel of another epoch dropped the job: %+v", r.Events)
	}
	b.Step(2*time.Second, idS, cancel)
	r := tDrain(b)
	if e := tOneEvent(t, r, EvCancelled); e.Job != 7 || e.Other != idS {
		t.Fatalf("cancelled %+v", e)
	}
	if !r.QueueChanged || r.QueueLen != 1 || !slices.Equal(b.Snapshot().Held, []uint64{5}) {
		t.Fatalf("after the cancel: queue %v/%d, held %v", r.QueueChanged, r.QueueLen, b.Snapshot().Held)
	}
	// A running copy is aborted too: a job must not complete twice.
	b.Step(3*time.Second, 60, &wire.JobCancel{Job: &wire.JobRef{Id: 5, Epoch: 1}})
	if r := tDrain(b); len(tEvents(r, EvCancelled)) != 1 || len(b.Snapshot().Held) != 0 {
		t.Fatalf("a running copy was not cancelled: %+v, held %v", r.Events, b.Snapshot().Held)
	}
	if st := b.Status(); st.Cancels != 2 {
		t.Fatalf("cancels %d", st.Cancels)
	}
}

// A finished job stays in Done until its owner's heartbeat no longer
// lists it.
func TestDoneKeptUntilOwnerAcknowledges(t *testing.T) {
	n, _ := tRunNode(Config{})
	n.Step(0, 1, tAssign(7, time.Second, 1, 3))
	n.Tick(time.Second, core.TimerRunDone)
	tDrain(n)
	if s := n.Snapshot(); !slices.Equal(s.Done, []uint64{7}) {
		t.Fatalf("done %v", s.Done)
	}
	n.Tick(10*time.Second, core.TimerJobs)
	r := tDrain(n)
	if hb := tOne[*wire.RunHeartbeat](t, r, 1); !slices.Equal(tRefs(hb.Done), [][2]uint64{{7, 3}}) || len(hb.Held) != 0 {
		t.Fatalf("RunHeartbeat %v", hb)
	}
	if len(tTimers(r, core.TimerJobs)) != 1 {
		t.Fatalf("job timer not re-armed while a result awaits acknowledgement: %v", r.Timers)
	}
	n.Step(11*time.Second, 1, &wire.OwnerHeartbeat{Jobs: []*wire.JobRef{{Id: 7, Epoch: 3}}})
	n.Step(11*time.Second, 4, &wire.OwnerHeartbeat{})
	if s := n.Snapshot(); !slices.Equal(s.Done, []uint64{7}) {
		t.Fatalf("done %v dropped before its owner acknowledged it", s.Done)
	}
	n.Step(12*time.Second, 1, &wire.OwnerHeartbeat{})
	if s := n.Snapshot(); len(s.Done) != 0 {
		t.Fatalf("done %v after the acknowledgement", s.Done)
	}
	n.Tick(20*time.Second, core.TimerJobs)
	r = tDrain(n)
	if len(r.Messages)+len(r.Timers) != 0 {
		t.Fatalf("idle node still beats: %s %v", tMsgString(r), r.Timers)
	}
}

// The owner acknowledges a finished job: it tells the client and stops
// listing it to the run node.
func TestOwnerCompletesOnRunHeartbeatDone(t *testing.T) {
	o, _ := tOwner(t)
	o.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	o.Step(5*time.Second, idU0, &wire.RunHeartbeat{Done: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	r := tDrain(o)
	if st := tOne[*wire.JobStatus](t, r, tClientID); !slices.Equal(st.Done, []uint64{7}) {
		t.Fatalf("status %v", st)
	}
	if hb := tOne[*wire.OwnerHeartbeat](t, r, idU0); len(hb.Jobs) != 0 {
		t.Fatalf("OwnerHeartbeat %v still lists job 7", hb)
	}
	if s := o.Snapshot(); len(s.Owned) != 0 {
		t.Fatalf("snapshot %+v", s)
	}
	// A stale heartbeat about it later is acknowledged again, nothing else.
	o.Step(15*time.Second, idU0, &wire.RunHeartbeat{Done: []*wire.JobRef{{Id: 7, Epoch: 1}}})
	r = tDrain(o)
	tNone[*wire.JobStatus](t, r)
	tOne[*wire.OwnerHeartbeat](t, r, idU0)
}

// Malformed or empty input never panics, and bad job profiles are ignored.
func TestBadInputNeverPanics(t *testing.T) {
	setup := func() *Node {
		n, _ := tOwner(t) // owns job 7 at U0
		n.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
		n.Step(time.Second, 5, &wire.JobAssign{Job: tSpec(8, time.Hour), Owner: 5, Epoch: 1})
		tDrain(n)
		return n
	}
	try := func(name string, n *Node, m proto.Message) (r Ready) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s: panic: %v", name, p)
			}
		}()
		n.Step(2*time.Second, 99, m)
		return tDrain(n)
	}
	empty := []proto.Message{
		&wire.JobSubmit{}, &wire.JobRoute{}, &wire.JobPush{}, &wire.JobAssign{}, &wire.JobQueued{},
		&wire.RunHeartbeat{}, &wire.OwnerHeartbeat{}, &wire.JobAdopt{}, &wire.JobReturn{}, &wire.JobCancel{},
		&wire.JobStatus{}, &wire.JobResult{}, &wire.JobRef{}, &wire.JobSpec{}, &wire.Load{},
		&wire.JobCancel{Job: &wire.JobRef{}},
	}
	for _, m := range append(empty, nil) {
		n := setup()
		before := n.Snapshot()
		r := try(fmt.Sprintf("empty %T", m), n, m)
		if len(r.Messages)+len(r.Events) != 0 {
			t.Errorf("empty %T: %s %+v", m, tMsgString(r), r.Events)
		}
		if after := n.Snapshot(); !slices.Equal(before.Owned, after.Owned) || !slices.Equal(before.Held, after.Held) {
			t.Errorf("empty %T changed the state: %+v → %+v", m, before, after)
		}
	}
	bad := map[string]*wire.JobSpec{
		"id 0":         {Id: 0, Client: 100, Attempt: 1, Req: tReq()},
		"short req":    {Id: 20, Client: 100, Attempt: 1, Req: tReq()[:2]},
		"long req":     {Id: 21, Client: 100, Attempt: 1, Req: append(tReq(), 1)},
		"no req":       {Id: 22, Client: 100, Attempt: 1},
		"negative run": {Id: 23, Client: 100, Attempt: 1, Req: tReq(), Work: -1},
	}
	for name, spec := range bad {
		for _, m := range []proto.Message{
			&wire.JobSubmit{Job: spec}, &wire.JobRoute{Job: spec}, &wire.JobPush{Job: spec, Owner: 60, Epoch: 1},
			&wire.JobAssign{Job: spec, Owner: 60, Epoch: 1}, &wire.JobAdopt{Job: spec, Run: 60, Epoch: 1},
		} {
			n := setup()
			before := n.Snapshot()
			r := try(fmt.Sprintf("%s in %T", name, m), n, m)
			if len(r.Messages)+len(r.Events) != 0 {
				t.Errorf("%s in %T acted on: %s %+v", name, m, tMsgString(r), r.Events)
			}
			if after := n.Snapshot(); !slices.Equal(before.Owned, after.Owned) || !slices.Equal(before.Held, after.Held) {
				t.Errorf("%s in %T changed the state: %+v → %+v", name, m, before, after)
			}
		}
	}
	// Unknown jobs and epochs in the rest are harmless.
	n := setup()
	try("queued job 0", n, &wire.JobQueued{Job: &wire.JobRef{}})
	try("unknown cancel", n, &wire.JobCancel{Job: &wire.JobRef{Id: 12345, Epoch: 9}})
	try("unknown return", n, &wire.JobReturn{Jobs: []*wire.JobRef{{Id: 12345}}, Done: []*wire.JobRef{{Id: 54321}}})
	try("unknown status", n, &wire.JobStatus{Failed: []*wire.JobFailure{{Id: 12345}}, Done: []uint64{1}, Owned: []uint64{2}})
	if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) || !slices.Equal(s.Held, []uint64{8}) {
		t.Fatalf("state changed: %+v", s)
	}
	// Unknown timer kinds do nothing.
	n.Tick(time.Hour, core.TimerKind(200))
	if r := tDrain(n); len(r.Messages)+len(r.Events) != 0 {
		t.Fatalf("unknown timer acted: %s", tMsgString(r))
	}
}

// A nil message of a job type (a typed nil pointer, as an in-process
// caller may hand over) is ignored like an empty one, never a panic.
func TestTypedNilMessagesNeverPanic(t *testing.T) {
	for _, m := range []proto.Message{
		(*wire.JobSubmit)(nil), (*wire.JobRoute)(nil), (*wire.JobPush)(nil), (*wire.JobAssign)(nil), (*wire.JobQueued)(nil),
		(*wire.RunHeartbeat)(nil), (*wire.OwnerHeartbeat)(nil), (*wire.JobAdopt)(nil), (*wire.JobReturn)(nil), (*wire.JobCancel)(nil),
		(*wire.JobStatus)(nil), (*wire.JobResult)(nil), (*wire.BalloonAttach)(nil), (*wire.BalloonAck)(nil),
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Step(%T(nil)) panicked: %v", m, p)
				}
			}()
			n, _ := tOwner(t)
			n.Step(time.Second, 99, m)
		}()
	}
}

// --- End to end ---------------------------------------------------------

// tNet is job cores and a client on the shared test network
// (actors/testnet): messages delivered at once in the order they were sent,
// timers fired in time order. Messages to a node not on it are lost.
type tNet struct {
	*testnet.Net[core.NodeID, core.TimerKind]
	nodes  map[core.NodeID]*Node
	client *Client
	events []Event // every core's events, in order
}

func newTNet(t testing.TB) *tNet {
	net := &tNet{Net: testnet.New[core.NodeID, core.TimerKind](t), nodes: map[core.NodeID]*Node{}}
	net.Lossy = true
	return net
}

// add puts node n on the network at id.
func (net *tNet) add(id core.NodeID, n *Node) {
	net.nodes[id] = n
	net.Add(id, tEndpoint{n, &net.events})
}

// setClient puts the client on the network.
func (net *tNet) setClient(c *Client) {
	net.client = c
	net.Add(c.ID(), tEndpoint{c, &net.events})
}

// start delivers, at time now, what endpoint id was asked to do outside
// the network (a client's Submit).
func (net *tNet) start(now time.Duration, id core.NodeID) {
	net.Now = now
	net.Collect(id)
	net.Deliver()
}

// tCore is a job node or a client.
type tCore interface {
	Step(now time.Duration, from core.NodeID, m proto.Message)
	Tick(now time.Duration, kind core.TimerKind)
	Ready() Ready
	Advance()
}

// tEndpoint is a job core on the test network; its events go to events.
type tEndpoint struct {
	tCore
	events *[]Event
}

func (e tEndpoint) Flush(send func(core.NodeID, proto.Message), timer func(time.Duration, core.TimerKind)) {
	r := e.Ready()
	*e.events = append(*e.events, r.Events...)
	for _, o := range r.Messages {
		send(o.To, o.Msg)
	}
	for _, tm := range r.Timers {
		timer(tm.At, tm.Kind)
	}
	e.Advance()
}

// Client → injection node → owner → run node → client, with heartbeats
// and the acknowledgement: one result, nothing left anywhere.
func TestEndToEndJobCompletes(t *testing.T) {
	inj := tNew(&fakeView{id: 4, zone: zUp2(), point: pCap(1), next: idS}, Config{}, 4, nil)
	ov := &fakeView{id: idS, zone: zSelf(), point: pSelfNo()}
	ov.nbs = []*overlay.Neighbor{tNb(idU0, zUp0(), tLoad(0, 1, 1, pCap(5)))}
	owner := tNew(ov, Config{}, 1, nil)
	run := tNew(&fakeView{id: idU0, zone: zUp0(), point: pCap(5)}, Config{}, 10, nil)
	net := newTNet(t)
	net.add(4, inj)
	net.add(idS, owner)
	net.add(idU0, run)
	net.setClient(NewClient(tClientID, ClientConfig{Timeout: 2 * time.Minute}, func() core.NodeID { return 4 }))
	spec := &wire.JobSpec{Id: 7, Req: tReq(), Work: int64(45 * time.Second)}
	net.client.Submit(time.Second, spec)
	net.start(time.Second, tClientID)
	// Past the owner's memory of the completed job (endedKeep periods).
	net.RunUntil(10*time.Minute + (endedKeep+2)*tPeriod)

	count := map[EventKind]int{}
	for _, e := range net.events {
		count[e.Kind]++
	}
	want := map[EventKind]int{EvSubmitted: 1, EvOwned: 1, EvQueued: 1, EvStarted: 1, EvCompleted: 1, EvResult: 1}
	for k, c := range want {
		if count[k] != c {
			t.Errorf("%v events: %d, want %d (all: %v)", k, count[k], c, count)
		}
	}
	for _, k := range []EventKind{EvRematched, EvAdopted, EvResubmitted, EvDuplicateResult, EvFailed, EvPushed, EvRouteDrop} {
		if count[k] != 0 {
			t.Errorf("%v events: %d, want none", k, count[k])
		}
	}
	if net.client.Open() != 0 {
		t.Errorf("client still waits for %v", net.client.OpenIDs())
	}
	for id, n := range net.nodes {
		if s := n.Snapshot(); len(s.Owned)+len(s.Held)+len(s.Done) != 0 {
			t.Errorf("node %d still holds %+v", id, s)
		}
	}
	if tm := net.Timers(); len(tm) != 0 {
		t.Errorf("timers still armed with nothing to do: %+v", tm)
	}
}

// An owner tick that re-matches a job whose run node went silent, finds
// no capable node and fails it, and is also due to send the clients their
// status, must leave the failed job out of the status (it once looked the
// job up after it was gone and panicked: in an actor, the panic stopped
// that tick's work, the job timer included).
func TestOwnerStatusAfterRematchFailedTheJob(t *testing.T) {
	v := &fakeView{id: idS, zone: zSelf(), point: pSelfNo(), next: 9}
	v.nbs = []*overlay.Neighbor{tNb(idU0, zUp0(), tLoad(0, 1, 2, pCap(1))), tNb(idU1, zUp1(), tLoad(0, 1, 1, pCap(2)))}
	c := &fakeCentral{pick: idU0}
	n := tNew(v, Config{Scheme: SchemeCENT, StatusEvery: 10 * time.Second}, 1, c)
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(7, time.Hour)})
	c.pick = idU1
	n.Step(0, 50, &wire.JobSubmit{Job: tSpec(8, time.Hour)})
	tDrain(n)
	n.Step(time.Second, idU0, &wire.JobQueued{Job: &wire.JobRef{Id: 7, Epoch: 1}})
	n.Step(time.Second, idU1, &wire.JobQueued{Job: &wire.JobRef{Id: 8, Epoch: 1}})
	n.Step(25*time.Second, idU1, &wire.RunHeartbeat{Held: []*wire.JobRef{{Id: 8, Epoch: 1}}})
	tDrain(n)
	c.pick = 0 // nothing capable any more
	now := 31*time.Second + 1
	n.Tick(now, core.TimerJobs)
	r := tDrain(n)
	var failed, owned []uint64
	for _, st := range tTo[*wire.JobStatus](r, tClientID) {
		for _, f := range st.Failed {
			failed = append(failed, f.Id)
		}
		owned = append(owned, st.Owned...)
	}
	if !slices.Equal(failed, []uint64{7}) || !slices.Equal(owned, []uint64{8}) {
		t.Fatalf("client heard failed %v, owned %v; want 7 failed and 8 still owned: %s", failed, owned, tMsgString(r))
	}
	if at := tTimers(r, core.TimerJobs); !slices.Equal(at, []time.Duration{now + tPeriod}) {
		t.Fatalf("job timer not re-armed: %v", at)
	}
}

// TestCompletionAfterDisownReachesAdopter: a node that owns and runs a job
// hands its ownership on when the job's point leaves its zone (disown); if
// the job then finishes before the point's new owner has confirmed the
// adoption, the new owner must still learn of the completion — else it
// would find the run node silent and run the job a second time (a
// duplicate seen in TestJobsOverNATS under load). The completion goes to
// the point's owner as a finished job's adoption (JobAdopt Done), and is
// sent again each period until acknowledged.
func TestCompletionAfterDisownReachesAdopter(t *testing.T) {
	n, v := tHeld(t, true)
	n.Tick(tTimeout+time.Second, core.TimerJobs) // owner 1 silent: we adopt it
	tDrain(n)
	if s := n.Snapshot(); !slices.Equal(s.Owned, []uint64{7}) {
		t.Fatalf("not owned after adoption: %+v", s)
	}
	v.zone = zUp0() // a split took the job's point away
	now := tTimeout + 11*time.Second
	n.Tick(now, core.TimerJobs)
	r := tDrain(n)
	tOneEvent(t, r, EvDisowned)
	if a := tOne[*wire.JobAdopt](t, r, 7); a.Done {
		t.Fatalf("disown routed %v, want the running job", a)
	}
	// The job finishes before the new owner's word arrives.
	n.Tick(time.Hour+time.Minute, core.TimerRunDone)
	r = tDrain(n)
	tOneEvent(t, r, EvCompleted)
	a := tOne[*wire.JobAdopt](t, r, 7)
	if !a.Done || a.Job.GetId() != 7 || a.Run != 2 {
		t.Fatalf("after completion: JobAdopt %v, want the finished job", a)
	}
	// Not acknowledged: told again at the next period; acknowledged: no more.
	n.Tick(time.Hour+time.Minute+tPeriod, core.TimerJobs)
	if a := tOne[*wire.JobAdopt](t, tDrain(n), 7); !a.Done {
		t.Fatalf("retry %v", a)
	}
	n.Step(time.Hour+2*time.Minute, 7, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: a.Epoch, Moves: a.Moves}})
	tDrain(n)
	n.Tick(time.Hour+2*time.Minute+tPeriod, core.TimerJobs)
	tNone[*wire.JobAdopt](t, tDrain(n))
}

// TestFinishedJobAdoptedLaterReportsDone: a run node whose job finished
// while an adoption of it was on its way (its owner had disowned it) hears
// the adopter's owner heartbeat listing the job: it tells the adopter the
// job is done, and reports it there from then on — else the adopter would
// find the run node silent and run the job again (a duplicate seen in
// TestJobsOverNATS under load).
func TestFinishedJobAdoptedLaterReportsDone(t *testing.T) {
	n, _ := tHeld(t, false)
	n.Tick(time.Hour+time.Minute, core.TimerRunDone)
	r := tDrain(n)
	tOneEvent(t, r, EvCompleted)
	if hb := tOne[*wire.RunHeartbeat](t, r, 1); !slices.Equal(tIDs(hb.Done), []uint64{7}) {
		t.Fatalf("done report to the owner: %v", hb)
	}
	// Owner 9 adopted the job meanwhile and lists it.
	n.Step(time.Hour+2*time.Minute, 9, &wire.OwnerHeartbeat{Jobs: []*wire.JobRef{{Id: 7, Epoch: 3}}})
	if hb := tOne[*wire.RunHeartbeat](t, tDrain(n), 9); !slices.Equal(tIDs(hb.Done), []uint64{7}) {
		t.Fatalf("to the adopter: %v, want job 7 done", hb)
	}
	n.Tick(time.Hour+2*time.Minute+tPeriod, core.TimerJobs)
	r = tDrain(n)
	if hb := tOne[*wire.RunHeartbeat](t, r, 9); !slices.Equal(tIDs(hb.Done), []uint64{7}) {
		t.Fatalf("periodic report to the adopter: %v", hb)
	}
	if len(tTo[*wire.RunHeartbeat](r, 1)) != 0 {
		t.Fatalf("still reporting to the old owner: %s", tMsgString(r))
	}
}

// TestCANPStopNodesReadings: with nothing aggregated above this node
// (AI_TD(N) = 0) Eq 4 as written stops at once, while the target reading
// counts the many nodes above the push target and pushes on.
func TestCANPStopNodesReadings(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		for _, reading := range []StopNodes{StopNodesOwn, "", StopNodesTarget} {
			n, v := tPushNode(seed, Config{StopNodes: reading})
			loads := map[core.NodeID]*wire.Load{}
			for _, nb := range v.nbs {
				loads[nb.ID], nb.Load = nb.Load, nil
			}
			n.LoadInfo() // AI_d(N) = 0 in every dimension
			for _, nb := range v.nbs {
				nb.Load = loads[nb.ID]
			}
			n.Step(time.Second, 50, &wire.JobSubmit{Job: tSpec(7, time.Second)})
			r := tDrain(n)
			if reading == StopNodesTarget {
				tNone[*wire.JobAssign](t, r)
				tOne[*wire.JobPush](t, r, idU1)
				continue
			}
			tNone[*wire.JobPush](t, r)
			tOne[*wire.JobAssign](t, r, idU1) // the best score, U1's 2/4
		}
	}
}

// TestCancelAfterHandingAdoptionOn: a run node that adopted the job it
// runs (its point fell in its zone while the owner was silent: the owner
// it replaced is "former", whose cancels are stale) and then lost the
// point (a zone conflict after a partition's heal) hands the job on; the
// point's owner — the former owner again — cancels the copy, since it
// matched the job elsewhere meanwhile, and the copy goes. (Before, the
// cancel was taken for the former owner's stale one and the copy ran to
// the end beside the rematched one: the job completed twice.)
func TestCancelAfterHandingAdoptionOn(t *testing.T) {
	n, v := tHeld(t, true)
	now := tTimeout + time.Second
	n.Tick(now, core.TimerJobs)
	if e := tOneEvent(t, tDrain(n), EvAdopted); e.Job != 7 || e.Other != 2 {
		t.Fatalf("adopted %+v", e)
	}
	// The point leaves our zone: the job is handed on (disowned) and its
	// adoption asked of the point's owner.
	v.zone = zUp0()
	now += 10 * time.Second
	n.Tick(now, core.TimerJobs)
	r := tDrain(n)
	tOneEvent(t, r, EvDisowned)
	tOne[*wire.JobAdopt](t, r, 7)
	// The point's owner is node 1, the owner we replaced: it cancels our copy.
	n.Step(now, 1, &wire.JobCancel{Job: &wire.JobRef{Id: 7, Epoch: 3}})
	r = tDrain(n)
	if e := tOneEvent(t, r, EvCancelled); e.Job != 7 || e.Other != 1 {
		t.Fatalf("cancelled %+v", e)
	}
	if s := n.Snapshot(); len(s.Held) != 0 {
		t.Fatalf("the copy is still held after the point's owner cancelled it: %+v", s)
	}
}
