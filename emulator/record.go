package emulator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/oracle"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/staleness"
	"github.com/gridbed/gridbed/faults/timeline"
	"github.com/gridbed/gridbed/metrics"
)

// Sample is one oracle snapshot of the run: the ground truth and the
// cumulative traffic at emulated time T.
type Sample struct {
	T       time.Duration
	Oracle  oracle.Report
	Traffic metrics.TrafficSnapshot // cumulative since the start
	Backlog int64                   // bus messages waiting in mailboxes (emulator)
	Events  map[string]uint64       // overlay events summed over peers, cumulative
	// JobEvents are the job events so far, by job_<event> (nil without a
	// workload); JobQueue and BusyNodes are the jobs queued or running
	// over all live nodes and the nodes with any (the global view).
	JobEvents           map[string]uint64
	JobQueue, BusyNodes int
	LagP99              float64       // clock lag p99 so far, wall seconds
	Duration            time.Duration // the run's emulated length, for progress displays
	// Staleness are the errors of the aggregated load members hold against
	// the ground truth (emulator/staleness), one per aggregate; nil without
	// a workload or a member.
	Staleness []staleness.Stat
	// Wave is what the oracle saw of the Wave peers (wave.engine actors;
	// nil otherwise).
	Wave *WaveSample
}

// recorder turns samples into the time series, the metrics and the summary.
type recorder struct {
	sc     scenario.Scenario
	driver string
	// paced is set for a driver that runs against scaled wall time
	// (pacedDriver): it feeds the bus metrics itself, and can fall behind.
	paced  bool
	m      *metrics.Run
	series []Sample

	windowFrom  time.Duration // start of the steady-state measurement window
	windowStart *metrics.TrafficSnapshot
	windowWall  time.Time // wall instant the window opened
	allJoinedAt time.Duration
	// formedBy is when population_formed is judged: the end of the join
	// window plus one heartbeat period; formed is that judgement (nil until
	// a sample at or after formedBy was taken).
	formedBy time.Duration
	formed   *formation
	lastWall time.Time
	// until is the end of the last disturbance (churn, faults), -1 if
	// none; cleanSince the first sample from until on after which every
	// sample was exact, -1 if none (yet).
	until       time.Duration
	cleanSince  time.Duration
	peerMinutes float64 // ∫ members dt over the window, in peer-minutes
	brokenArea  float64 // ∫ broken links dt over the whole run
	brokenMax   int
	// churnArea is ∫ broken links dt over the churn phase (churnFrom to
	// churnTo), churnMinutes its length: 002 §4.3.2 tracks broken links
	// while churn goes on (Fig 4.6).
	churnArea, churnMinutes float64
	// churnOwnArea is the same integral over the links broken between
	// members' own zones (oracle.Report.BrokenViaExtra excluded).
	churnOwnArea float64
	// churnSettledArea is the same integral over the links broken between
	// zones unchanged since the previous sample (oracle BrokenViaChange);
	// versions are the members' zone versions at the previous sample.
	churnSettledArea   float64
	versions           map[core.NodeID]uint64
	churnFrom, churnTo time.Duration
	lastT              time.Duration
	// member says whether a peer is a current member (the driver's);
	// suspected holds the suspicions seen so far (a peer's suspect at its
	// time), falseSuspicions those of peers that were alive.
	member          func(core.NodeID) bool
	suspected       map[suspicion]bool
	falseSuspicions uint64
}

// suspicion is peer By declaring neighbor Of failed at At (By's clock).
type suspicion struct {
	By, Of core.NodeID
	At     time.Duration
}

func newRecorder(sc scenario.Scenario, driver string, paced bool, m *metrics.Run) *recorder {
	// The steady-state window opens at the first sample taken at least one
	// heartbeat period after the join window, once every initial peer has
	// joined. If that never happens the rates cover the whole run and the
	// summary says they are not steady-state figures.
	r := &recorder{sc: sc, driver: driver, paced: paced, m: m, allJoinedAt: -1, until: disturbedUntil(sc), cleanSince: -1}
	r.windowFrom = sc.Peers.JoinWindow + sc.Overlay.Heartbeat.Period
	r.formedBy = r.windowFrom
	r.churnFrom, r.churnTo = -1, -1
	if sc.Churn.On() {
		r.churnFrom, r.churnTo = sc.Churn.Start, sc.Churn.Stop
		if r.churnTo <= 0 || r.churnTo > sc.Duration {
			r.churnTo = sc.Duration
		}
	}
	return r
}

// FormedShare is the share of the peers that should be alive (spawned and
// not departed) that must be members for the population to count as
// formed (invariant population_formed).
const FormedShare = 0.99

// MinWindowPeriods is the shortest measurement window, in heartbeat
// periods, whose per-node rates are reported (invariant measured): with
// fewer, a rate is dominated by where the window's ends fall in the
// heartbeat cycle.
const MinWindowPeriods = 3

// formation is the population_formed judgement: at emulated time At,
// Members of Alive peers (spawned, not departed) were overlay members.
type formation struct {
	At             time.Duration
	Members, Alive int
}

// ok reports whether the population had formed.
func (f formation) ok() bool {
	return float64(f.Members) >= FormedShare*float64(f.Alive) && f.Members > 0
}

// sample records the oracle's snapshot at t; alive is the number of peers
// the driver runs that should be members (spawned, not departed).
func (r *recorder) sample(t time.Duration, states []peer.State, bs bus.Stats, backlog int64, alive int) Sample {
	snaps := make([]overlay.Snapshot, len(states))
	ev := map[string]uint64{}
	for i := range states {
		snaps[i] = states[i].Snapshot
		addStatus(ev, states[i].Status)
		r.suspicions(states[i].Snapshot)
	}
	rep := oracle.CheckSince(snaps, r.sc.Overlay.Dimensions+1, r.versions)
	if r.versions == nil {
		r.versions = make(map[core.NodeID]uint64, len(snaps))
	}
	clear(r.versions) // the next sample's previous versions: this one's
	for i := range snaps {
		if snaps[i].Joined {
			r.versions[snaps[i].ID] = snaps[i].Version
		}
	}
	s := Sample{T: t, Oracle: rep, Traffic: r.m.Traffic.Snapshot(), Backlog: backlog, Events: ev, LagP99: r.m.Lag.Quantile(0.99), Duration: r.sc.Duration}
	if rep.Exact() {
		if r.cleanSince < 0 && t >= r.until {
			r.cleanSince = t
		}
	} else {
		r.cleanSince = -1
	}

	dt := (t - r.lastT).Minutes()
	if r.allJoinedAt < 0 && rep.Members >= r.sc.Peers.Count {
		r.allJoinedAt = t
	}
	here := formation{At: t, Members: rep.Members, Alive: alive}
	if r.formed == nil && t >= r.formedBy {
		r.formed = &here
	}
	if r.windowStart != nil {
		r.peerMinutes += float64(rep.Members) * dt
	} else if t >= r.windowFrom && here.ok() {
		// The window opens at the first sample from windowFrom on at
		// which the population has formed.
		ws := s.Traffic
		r.windowStart, r.windowFrom, r.windowWall = &ws, t, time.Now()
	}
	r.brokenArea += float64(rep.BrokenLinks) * dt
	r.brokenMax = max(r.brokenMax, rep.BrokenLinks)
	if r.churnFrom >= 0 && r.lastT >= r.churnFrom && t <= r.churnTo {
		r.churnArea += float64(rep.BrokenLinks) * dt
		r.churnOwnArea += float64(rep.BrokenLinks-rep.BrokenViaExtra) * dt
		r.churnSettledArea += float64(rep.BrokenLinks-rep.BrokenViaChange) * dt
		r.churnMinutes += dt
	}
	r.lastT, r.lastWall = t, time.Now()
	r.series = append(r.series, s)

	r.m.EmulatedSeconds.Set(t.Seconds())
	r.m.Peers.Set(float64(rep.Members))
	r.m.BrokenLinks.Set(float64(rep.BrokenLinks))
	r.m.ZoneGaps.Set(float64(rep.ZoneGaps))
	r.m.ZoneOverlaps.Set(float64(rep.ZoneOverlaps))
	r.m.ExtraZones.Set(float64(rep.ExtraZones))
	r.m.NeighborsMean.Set(rep.NeighborsMean)
	r.m.MailboxBacklog.Set(float64(backlog))
	r.m.SetEvents(ev)
	if !r.paced {
		// The deterministic driver's counters are read here, between two
		// stretches of its event loop, never while it runs.
		mb := metrics.BusStats{Published: bs.Published, Dropped: bs.Dropped, Unroutable: bs.Unroutable, NATSMessages: bs.Transport}
		r.m.SetBus(func() metrics.BusStats { return mb })
	}
	return s
}

// suspicions counts peer s's new suspicions of neighbors still members:
// false suspicions. A suspected peer that departs before the next sample
// is not counted (a departed peer never comes back: restarts are new
// peers); suspects are kept for 24 heartbeat periods, far longer than an
// oracle interval, so none is missed.
func (r *recorder) suspicions(s overlay.Snapshot) {
	if r.member == nil {
		return
	}
	for _, x := range s.Suspects {
		k := suspicion{By: s.ID, Of: x.ID, At: x.At}
		if r.suspected[k] {
			continue
		}
		if r.suspected == nil {
			r.suspected = map[suspicion]bool{}
		}
		r.suspected[k] = true
		if r.member(x.ID) {
			r.falseSuspicions++
			r.m.FalseSuspicions.Inc()
		}
	}
}

// extend moves the end of the last disturbance to until if that is later
// (a fault triggered by a protocol event during the run).
func (r *recorder) extend(until time.Duration) {
	if until > r.until {
		r.until = until
		if r.cleanSince >= 0 && r.cleanSince < until {
			r.cleanSince = -1
		}
	}
}

// disturbedUntil is the end of the last disturbance of the scenario — the
// end of churn, the last fault, a crash's restart, the end of a bus outage
// — or -1 if there is none. A partition never healed lasts to the end.
func disturbedUntil(sc scenario.Scenario) time.Duration {
	until := time.Duration(-1)
	if sc.Churn.On() {
		until = sc.Churn.Stop
		if until <= 0 {
			until = sc.Duration
		}
	}
	open := map[string]bool{}
	for i, f := range sc.SortedFaults() {
		end := f.At
		switch f.Kind {
		case scenario.FaultPartition:
			open[timeline.PartitionName(i, f)] = true
		case scenario.FaultHeal:
			if f.Name == "" {
				clear(open)
			}
			delete(open, f.Name)
		case scenario.FaultCrash:
			end += f.RestartAfter
		case scenario.FaultBusRestart:
			end += f.DownFor
		case scenario.FaultFlap:
			end += f.Length
		}
		until = max(until, end)
	}
	if len(open) > 0 {
		until = sc.Duration
	}
	return until
}

// inForce is a fault still in force at the end of a run: when it began
// (At; -1 for a triggered one) and what it is.
type inForce struct {
	At   time.Duration
	Kind string
	What string
}

// inForceAtEnd lists the faults of the scenario still in force at its end:
// a partition never healed, a flap, a crash's restart or a bus outage that
// outlasts the run, a link fault (latency, loss, duplicate, corrupt) whose
// last entry did not put the link back as the scenario's link section
// has it, slow peers not made fast again. Such a run has no quiet end:
// reconvergence cannot be judged on it.
func inForceAtEnd(sc scenario.Scenario) []inForce {
	var out []inForce
	type opened struct {
		at   time.Duration
		name string
	}
	var open []opened
	last := map[string]scenario.Fault{}
	for i, f := range sc.SortedFaults() {
		switch f.Kind {
		case scenario.FaultPartition:
			open = append(open, opened{f.At, timeline.PartitionName(i, f)})
		case scenario.FaultHeal:
			open = slices.DeleteFunc(open, func(o opened) bool { return f.Name == "" || o.name == f.Name })
		case scenario.FaultCrash:
			if f.RestartAfter > 0 && f.At+f.RestartAfter > sc.Duration {
				out = append(out, inForce{f.At, f.Kind, fmt.Sprintf("the crash at %v restarts its peers at %v, after the end", f.At, f.At+f.RestartAfter)})
			}
		case scenario.FaultBusRestart:
			if f.At+f.DownFor > sc.Duration {
				out = append(out, inForce{f.At, f.Kind, fmt.Sprintf("the bus, down from %v for %v, is back only after the end", f.At, f.DownFor)})
			}
		case scenario.FaultFlap:
			if f.At+f.Length > sc.Duration {
				out = append(out, inForce{f.At, f.Kind, fmt.Sprintf("the flap from %v lasts %v, past the end", f.At, f.Length)})
			}
		case scenario.FaultLatency, scenario.FaultLoss, scenario.FaultDuplicate, scenario.FaultCorrupt, scenario.FaultSlow:
			last[f.Kind] = f
		}
	}
	for _, o := range open {
		out = append(out, inForce{o.at, scenario.FaultPartition, fmt.Sprintf("the partition %s from %v is never healed", o.name, o.at)})
	}
	for _, f := range sc.TriggeredFaults() {
		if f.Kind != scenario.FaultPartition {
			continue
		}
		if !slices.ContainsFunc(sc.Faults, func(h scenario.Fault) bool {
			return h.Kind == scenario.FaultHeal && (h.Name == "" || h.Name == f.Name)
		}) {
			out = append(out, inForce{-1, f.Kind, fmt.Sprintf("the partition on %s is never healed", f.When)})
		}
	}
	l := sc.Link
	for _, kind := range []string{scenario.FaultLatency, scenario.FaultLoss, scenario.FaultDuplicate, scenario.FaultCorrupt, scenario.FaultSlow} {
		f, ok := last[kind]
		if !ok {
			continue
		}
		var back bool
		var base string
		switch kind {
		case scenario.FaultLatency:
			back, base = f.Latency == l.Latency, fmt.Sprintf("link.latency (mean %v)", l.Latency.Mean)
		case scenario.FaultLoss:
			back, base = f.P == l.Loss, fmt.Sprintf("link.loss %g", l.Loss)
		case scenario.FaultDuplicate:
			back, base = f.P == l.Duplicate, fmt.Sprintf("link.duplicate %g", l.Duplicate)
		case scenario.FaultCorrupt:
			back, base = f.P == l.Corrupt, fmt.Sprintf("link.corrupt %g", l.Corrupt)
		case scenario.FaultSlow:
			back, base = f.Service == 0, "service 0s"
		}
		if !back {
			out = append(out, inForce{f.At, kind, fmt.Sprintf("the %s set at %v is never put back to %s", kind, f.At, base)})
		}
	}
	slices.SortStableFunc(out, func(a, b inForce) int { return cmp.Compare(a.At, b.At) })
	return out
}

// markInForce says, on the fault events, which faults are still in force
// at the end: such an event, and every later one, has no "exact again"
// (an overlay cut in two may look whole on each side).
func markInForce(events []FaultEvent, faults []inForce) {
	if len(faults) == 0 {
		return
	}
	from := faults[0].At
	for i := range events {
		e := &events[i]
		t := time.Duration(e.TSeconds * float64(time.Second))
		for _, f := range faults {
			if f.Kind == e.Kind && (f.At < 0 || f.At.Round(time.Second) == t.Round(time.Second)) {
				e.InForceAtEnd = true
			}
		}
		if e.InForceAtEnd || from >= 0 && t >= from {
			e.ExactAfterSeconds = nil
			e.NotJudged = !e.InForceAtEnd
		}
	}
}

// invariants are the end-of-run checks the recorder can judge: the
// population formed, a window was measured, the overlay reconverged in
// time after the last disturbance; the workload's checks (jobChecks)
// follow; inForce are the faults still in force at the end
// (inForceAtEnd), which leave reconvergence not judged. None passes
// because nothing happened.
func (r *recorder) invariants(jobChecks []InvariantCheck, inForce []inForce) InvariantsSummary {
	v := InvariantsSummary{OK: true}
	if len(r.series) == 0 {
		v.add(InvariantCheck{Name: "population_formed", Detail: "no oracle sample was taken: the run ended before its first sample"})
		return v
	}
	v.add(r.populationFormed())
	v.add(r.measured())
	last := r.series[len(r.series)-1]
	if floor := r.sc.Invariants.Survivors; floor > 0 {
		c := InvariantCheck{Name: "population_survived", OK: last.Oracle.Members >= floor}
		c.Detail = fmt.Sprintf("%d overlay members at the end (at least %d required, invariants.survivors)", last.Oracle.Members, floor)
		if !c.OK {
			c.Detail += ": the population died out, so the overlay's checks judged nobody — make the crashes or leaves smaller, give them restart_after, or lower invariants.survivors"
		}
		v.add(c)
	}
	period := r.sc.Overlay.Heartbeat.Period
	limit := time.Duration(r.sc.Invariants.ReconvergePeriods) * period
	c := InvariantCheck{Name: "overlay_reconverged"}
	switch {
	case len(inForce) > 0:
		what := make([]string, len(inForce))
		for i, f := range inForce {
			what[i] = f.What
		}
		c.Detail = fmt.Sprintf("not judged: a fault is still in force at the end (%s), and reconvergence needs a quiet end — end it (a heal, or the link put back) before the end, or make duration longer", strings.Join(what, "; "))
	case r.until < 0:
		c.OK = last.Oracle.Exact()
		c.Detail = "no churn or fault; the overlay is exact at the end"
		if !c.OK {
			c.Detail = fmt.Sprintf("no churn or fault, yet at the end: %s", damage(last.Oracle))
		}
	case last.T < r.until:
		c.Detail = fmt.Sprintf("not judged: the run ended at %v, before the last disturbance ended at %v", last.T.Round(time.Second), r.until)
	case r.cleanSince < 0:
		c.Detail = fmt.Sprintf("not exact at the end (%v after the last disturbance at %v): %s", (last.T - r.until).Round(time.Second), r.until, damage(last.Oracle))
	default:
		took := r.cleanSince - r.until
		c.OK = took <= limit
		c.Detail = fmt.Sprintf("exact %v after the last disturbance at %v and from then on; the limit is %v (%d heartbeat periods)", took, r.until, limit, r.sc.Invariants.ReconvergePeriods)
	}
	v.add(c)
	if len(jobChecks) == 0 {
		jobChecks = []InvariantCheck{{Name: "jobs_conserved", OK: true, Detail: "no jobs in this run"}}
	}
	for _, j := range jobChecks {
		v.add(j)
	}
	return v
}

// populationFormed judges the invariant population_formed: by the end of
// the join window (plus one heartbeat period for the last joiners'
// heartbeats) at least FormedShare of the peers that should be alive —
// spawned and not departed, so crashes and leaves are accounted — were
// overlay members.
func (r *recorder) populationFormed() InvariantCheck {
	c := InvariantCheck{Name: "population_formed"}
	jw := r.sc.Peers.JoinWindow
	if r.formed == nil {
		last := r.series[len(r.series)-1]
		c.Detail = fmt.Sprintf("not judged: the run ended at %v, before the end of the join window plus one heartbeat period (%v); %d of %d peers had joined — make duration longer than %v",
			last.T.Round(time.Second), r.formedBy, last.Oracle.Members, r.sc.Peers.Count, r.formedBy+MinWindowPeriods*r.sc.Overlay.Heartbeat.Period)
		return c
	}
	f := *r.formed
	c.OK = f.ok()
	pct := 0.0
	if f.Alive > 0 {
		pct = 100 * float64(f.Members) / float64(f.Alive)
	}
	c.Detail = fmt.Sprintf("%d of %d peers that should be alive (%.1f%%) were members at %v (join window %v plus one heartbeat period; %.0f%% required)",
		f.Members, f.Alive, pct, f.At, jw, 100*FormedShare)
	if !c.OK {
		c.Detail += ": the overlay did not form in time — joins are sequential, so make peers.join_window longer"
		if lat := r.sc.Link.Latency.Mean; lat > 0 {
			c.Detail += fmt.Sprintf(" (each join takes a few message delays of link.latency.mean %v) or lower the latency", lat)
		}
		if r.paced {
			c.Detail += "; on the emulator, check kept_up: peers that fall behind their time scale join late"
		}
		if f.Members <= 1 {
			c.Detail += "; with at most one member no peer could join at all"
		}
	}
	return c
}

// measured judges the invariant measured: the measurement window of the
// per-node figures holds at least MinWindowPeriods heartbeat periods.
func (r *recorder) measured() InvariantCheck {
	c := InvariantCheck{Name: "measured"}
	period := r.sc.Overlay.Heartbeat.Period
	need := MinWindowPeriods * period
	// The window opens at a sample: the first multiple of the oracle
	// interval from the join window plus one period on.
	interval := r.sc.Oracle.Interval
	opens := (r.sc.Peers.JoinWindow + period + interval - 1) / interval * interval
	minDuration := opens + need
	last := r.series[len(r.series)-1]
	switch {
	case r.windowStart == nil && last.T >= r.windowFrom:
		c.Detail = fmt.Sprintf("no measurement window opened: it opens at the first sample from %v on (join window plus one heartbeat period) once %.0f%% of the peers that should be alive are members, which never happened (see population_formed); the per-node figures are null",
			r.windowFrom, 100*FormedShare)
	case r.windowStart == nil:
		c.Detail = fmt.Sprintf("no measurement window opened: it opens at the first sample from %v on (join window plus one heartbeat period), and the run ended at %v; the per-node figures are null — make duration at least %v",
			r.windowFrom, last.T.Round(time.Second), minDuration)
	case last.T-r.windowFrom < need:
		c.Detail = fmt.Sprintf("the measurement window %v–%v holds %v, less than %d heartbeat periods (%v); the per-node figures are null — make duration at least %v",
			r.windowFrom, last.T.Round(time.Second), (last.T - r.windowFrom).Round(time.Second), MinWindowPeriods, need, max(minDuration, r.windowFrom+need))
	default:
		c.OK = true
		c.Detail = fmt.Sprintf("per-node figures measured over %v–%v (%.1f heartbeat periods)", r.windowFrom, last.T.Round(time.Second), float64(last.T-r.windowFrom)/float64(period))
	}
	return c
}

// steady reports whether the measurement window is long enough for the
// per-node figures (invariant measured).
func (r *recorder) steady() bool {
	if r.windowStart == nil || len(r.series) == 0 {
		return false
	}
	return r.series[len(r.series)-1].T-r.windowFrom >= MinWindowPeriods*r.sc.Overlay.Heartbeat.Period
}

// damage says what is wrong with the overlay.
func damage(rep oracle.Report) string {
	return fmt.Sprintf("%d broken links, %d gap faces, %d overlaps, %.3g%% of the space unowned", rep.BrokenLinks, rep.ZoneGaps, rep.ZoneOverlaps, 100*rep.UncoveredFraction)
}

// addStatus sums one peer's overlay counters into ev, by event name (the
// label values of gridbed_overlay_events_total).
func addStatus(ev map[string]uint64, st overlay.Status) {
	ev["join_owned"] += st.JoinsOwned
	ev["join_rejected"] += st.JoinsRejected
	ev["join_retry"] += st.JoinRetries
	ev["join_duplicate_accept"] += st.DuplicateAccepts
	ev["join_accept_resent"] += st.AcceptsResent
	ev["route_forward"] += st.RouteForwards
	ev["route_no_progress"] += st.RouteNoProgress
	ev["route_detour"] += st.RouteDetours
	ev["route_drop"] += st.RouteDrops
	ev["link_learned"] += st.LinksLearned
	ev["not_neighbor_note"] += st.NotNeighborNotes
	ev["bad_message"] += st.BadMessages
	ev["takeover"] += st.Takeovers
	ev["leave_seen"] += st.LeavesSeen
	ev["failure_detected"] += st.FailuresDetected
	ev["broken_link_detected"] += st.BrokenDetected
	ev["full_update_request"] += st.FullUpdateReqs
	ev["full_update"] += st.FullUpdatesSent
	ev["zone_query"] += st.ZoneQueries
	ev["orphan_claimed"] += st.OrphansClaimed
	ev["extra_yielded"] += st.ExtrasYielded
	ev["extra_handed"] += st.ExtrasHanded
	ev["probe"] += st.Probes
	ev["zone_conflict"] += st.Conflicts
	ev["rejoin"] += st.Rejoins
	ev["hole_claimed"] += st.HolesClaimed
}

// ptr returns a pointer to v (nullable summary figures).
func ptr(v float64) *float64 { return &v }

func (r *recorder) summary(wall time.Duration, final metrics.TrafficSnapshot, bs bus.Stats) Summary {
	last := r.series[len(r.series)-1]
	s := Summary{
		Scenario:        r.sc.Name,
		Driver:          r.driver,
		Seed:            r.sc.Seed,
		TimeScale:       r.sc.TimeScale,
		EmulatedSeconds: last.T.Seconds(),
		WallSeconds:     wall.Seconds(),
	}
	s.Peers.Initial = r.sc.Peers.Count
	if c := r.sc.Peers.Clock; c.Drift != 0 || c.Offset != 0 {
		s.Peers.Clocks = &PeerClocks{Dist: "uniform", Drift: c.Drift, OffsetSeconds: c.Offset.Seconds()}
	}
	s.Peers.Final = last.Oracle.Members
	if r.allJoinedAt >= 0 {
		v := r.allJoinedAt.Seconds()
		s.Peers.AllJoinedSeconds = &v
	}

	// Totals count every message sent until the peers stopped.
	tot := final
	s.Messages.Total, s.Messages.Bytes = tot.Total()
	s.Messages.ByType = map[string]TypeCount{}
	for t := 1; t < len(tot.Count); t++ {
		if wire.IsWave(wire.MsgType(t)) && tot.Count[t] == 0 {
			continue // a run without the Wave scheduler keeps its summary as it was
		}
		s.Messages.ByType[wire.Name(wire.MsgType(t))] = TypeCount{Count: tot.Count[t], Bytes: tot.Bytes[t]}
	}
	s.Messages.DecodeErrors = tot.DecodeErrors
	for i, reason := range wire.RejectReasons {
		if n := tot.Rejected[i]; n > 0 {
			if s.Messages.Rejected == nil {
				s.Messages.Rejected = map[string]uint64{}
			}
			s.Messages.Rejected[reason] = n
		}
	}
	// Rates: over the steady-state window (up to the last sample), and
	// only when that window is long enough (invariant measured); null
	// otherwise — a rate over the join phase or a sliver of a heartbeat
	// period is not the figure a reader takes it for.
	if r.windowStart != nil {
		s.Messages.Window.FromSeconds = r.windowFrom.Seconds()
	}
	s.Messages.Window.ToSeconds = last.T.Seconds()
	s.Messages.Window.Steady = r.steady()
	if s.Messages.Window.Steady && r.peerMinutes > 0 {
		d := last.Traffic.Sub(*r.windowStart)
		msgs, bytes := d.Total()
		s.Messages.PerNodePerMinute = ptr(float64(msgs) / r.peerMinutes)
		s.Bytes.PerNodePerMinute = ptr(float64(bytes) / r.peerMinutes)
		s.Entries.PerNodePerMinute = ptr(float64(d.TotalEntries()) / r.peerMinutes)
		if w := r.lastWall.Sub(r.windowWall).Seconds(); w > 0 {
			s.Messages.PerWallSecond = ptr(float64(msgs) / w)
		}
	}
	s.Messages.HeartbeatModelPerNodePerMinute = last.Oracle.NeighborsMean * 60 / r.sc.Overlay.Heartbeat.Period.Seconds()

	o := &s.Overlay
	o.Dimensions = r.sc.Overlay.Dimensions
	o.HeartbeatMode = r.sc.Overlay.Heartbeat.Mode.String()
	o.Split = r.sc.Overlay.Split.String()
	o.BrokenLinks.Final = last.Oracle.BrokenLinks
	o.BrokenLinks.Max = r.brokenMax
	if last.T > 0 {
		o.BrokenLinks.Mean = r.brokenArea / last.T.Minutes()
	}
	if r.churnMinutes > 0 {
		o.BrokenLinks.ChurnMean = ptr(r.churnArea / r.churnMinutes)
		o.BrokenLinks.ChurnMeanOwn = ptr(r.churnOwnArea / r.churnMinutes)
		o.BrokenLinks.ChurnMeanSettled = ptr(r.churnSettledArea / r.churnMinutes)
	}
	o.StaleLinks = last.Oracle.StaleLinks
	o.ZoneGaps = last.Oracle.ZoneGaps
	o.ZoneOverlaps = last.Oracle.ZoneOverlaps
	o.ExtraZones = last.Oracle.ExtraZones
	o.OrphansClaimed = last.Events["orphan_claimed"]
	o.UncoveredFraction = last.Oracle.UncoveredFraction
	o.NeighborsMean = last.Oracle.NeighborsMean
	o.Events = last.Events
	o.Takeovers = last.Events["takeover"]
	o.Repairs = last.Events["link_learned"]
	o.FailuresDetected = last.Events["failure_detected"]
	o.FalseSuspicions = r.falseSuspicions
	o.FullUpdateRequests = last.Events["full_update_request"]
	if r.until >= 0 && r.cleanSince >= 0 {
		v := (r.cleanSince - r.until).Seconds()
		o.ReconvergeSeconds = &v
	}

	s.Clock.LagSeconds.P50 = r.m.Lag.Quantile(0.50)
	s.Clock.LagSeconds.P99 = r.m.Lag.Quantile(0.99)
	s.Clock.LagSeconds.Max = r.m.Lag.Max()
	s.Clock.Timers = r.m.Lag.Count()

	s.Bus = BusSummary{Published: bs.Published, Delivered: bs.Delivered, Unroutable: bs.Unroutable, Dropped: bs.Dropped, PublishErrors: bs.PublishErrs,
		Refused: bs.Refused, Lost: bs.Lost, Outages: bs.Outages, Reconnects: bs.Reconnects}
	s.Bus.Discarded = bs.Discarded // in flight at the end (accounting.go)
	s.Bus.NATSMessages = bs.Transport
	s.Oracle.Samples = len(r.series)
	s.Oracle.IntervalSeconds = r.sc.Oracle.Interval.Seconds()
	return s
}
