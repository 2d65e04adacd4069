package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/staleness"
	"github.com/gridbed/gridbed/metrics"
)

// topTypes is how many message types the traffic figures show by name,
// one palette color each: up to topTypes types are all named; with more,
// the topTypes-1 largest are, and the rest (two or more) are summed as
// "N other types".
const topTypes = 8

// WriteRun writes dir/report.html and the figures (dir/figures/) of one
// run's results; call it after res.WriteFiles(dir), whose files it links.
func WriteRun(dir string, res *emulator.Result) (*Page, error) {
	page := runPage(res)
	page.Links = files(dir, "summary.json", "timeseries.csv", "allocation.csv", "scenario.yaml")
	var figs []*figure
	for _, build := range []func(*emulator.Result) (*figure, Omitted){
		waitCDF, trafficFigure(false), trafficFigure(true), overlayFigure, jobsFigure, staleFigure, migrationsFigure, mechanismsFigure,
		waveDayFigure, waveZonesFigure, // the Wave scheduler (001), wave.go
		allocationFigure, // 004 allocation runs, allocation.go
	} {
		f, o := build(res)
		if f != nil {
			figs = append(figs, f)
		} else if o.Title != "" {
			page.Omitted = append(page.Omitted, o)
		}
	}
	return page, write(dir, page, figs)
}

// runPage is the page's heading and tables.
func runPage(res *emulator.Result) *Page {
	s := res.Summary
	name := s.Scenario
	if name == "" {
		name = "(unnamed scenario)"
	}
	p := &Page{
		Title: "gridbed run: " + name,
		Subtitle: fmt.Sprintf("driver %s, seed %d: %s emulated in %.1f s wall (time scale %g)",
			s.Driver, s.Seed, time.Duration(s.EmulatedSeconds*float64(time.Second)), s.WallSeconds, s.TimeScale),
	}
	kv := keyValue{t: Table{Caption: "Key numbers (summary.json)"}}
	kv.add("peers", s.PeersLine(), "peers.started, peers.joined, peers.final")
	kv.add("overlay", fmt.Sprintf("d=%d+virtual, %s heartbeats, %.2f neighbors/peer", s.Overlay.Dimensions, s.Overlay.HeartbeatMode, s.Overlay.NeighborsMean), "overlay.neighbors_mean")
	kv.add("outcome", s.OutcomeLine(), "outcome")
	w := s.Messages.Window
	if m, b := s.Messages.PerNodePerMinute, s.Bytes.PerNodePerMinute; m != nil && b != nil {
		kv.add("messages per node per minute", fmt.Sprintf("%s (heartbeat model %s; window %.0f–%.0f s)",
			fmtNum(*m), fmtNum(s.Messages.HeartbeatModelPerNodePerMinute), w.FromSeconds, w.ToSeconds), "messages.per_node_per_minute")
		kv.add("bytes per node per minute", fmtBytes(*b), "bytes.per_node_per_minute")
	} else {
		kv.add("messages per node per minute", "not measured: no steady window long enough (invariant measured)", "messages.per_node_per_minute")
	}
	kv.add("messages", fmt.Sprintf("%d (%s)", s.Messages.Total, fmtBytes(float64(s.Messages.Bytes))), "messages.total")
	kv.add("broken links", fmt.Sprintf("final %d, max %d, mean %.2f", s.Overlay.BrokenLinks.Final, s.Overlay.BrokenLinks.Max, s.Overlay.BrokenLinks.Mean), "overlay.broken_links")
	kv.add("zones", fmt.Sprintf("gaps %d, overlaps %d, extra zones %d", s.Overlay.ZoneGaps, s.Overlay.ZoneOverlaps, s.Overlay.ExtraZones), "overlay.zone_gaps")
	if c := s.Churn; c.Joins+c.Leaves+c.Failures > 0 {
		kv.add("churn", fmt.Sprintf("%d joins, %d leaves, %d failures; %d take-overs, %d repairs", c.Joins, c.Leaves, c.Failures, s.Overlay.Takeovers, s.Overlay.Repairs), "churn")
	}
	if c := s.Churn; c.Joins+c.Leaves+c.Failures > 0 || len(s.Faults.Events) > 0 {
		kv.add("reconverged after", fmtOpt(s.Overlay.ReconvergeSeconds, "s"), "overlay.reconverge_seconds")
	}
	if f := s.Faults; len(f.Events) > 0 {
		kv.add("faults", fmt.Sprintf("%s; messages lost: partition %d, loss %d, bus %d", plural(len(f.Events), "event", "events"),
			f.Dropped["partition"], f.Dropped["loss"], f.Dropped["bus_outage"]+f.Dropped["bus_lost"]), "faults.events")
	}
	if b := s.Faults.Bandwidth; b != nil {
		kv.add("access links (link.bandwidth)", b.Line(), "faults.bandwidth")
	}
	if j := s.Jobs; j != nil {
		kv.add("jobs", fmt.Sprintf("%s matchmaking, %s scheduling", j.Scheme, j.Mode), "jobs.scheme")
		kv.add("jobs submitted", fmt.Sprintf("%d: %d completed, %d failed, %d unfinished", j.Submitted, j.Completed, j.Failed, j.Unfinished), "jobs.submitted")
		kv.t.Rows = append(kv.t.Rows, []Cell{{Text: "jobs lost, duplicated"}, {Text: fmt.Sprintf("%d, %d", j.Lost, j.Duplicated), Note: "jobs.lost", Bad: j.Lost+j.Duplicated > 0}})
		kv.add("job wait, all jobs", fmt.Sprintf("mean %s, p50 %s, p90 %s, p99 %s (%d censored)", fmtOpt(j.WaitSeconds.Mean, "s"), fmtOpt(j.WaitSeconds.P50, "s"), fmtOpt(j.WaitSeconds.P90, "s"), fmtOpt(j.WaitSeconds.P99, "s"), j.WaitCensored), "jobs.wait_seconds")
		kv.add("job wait, completed", fmt.Sprintf("mean %s, p50 %s, p90 %s, p99 %s", fmtOpt(j.WaitSecondsCompleted.Mean, "s"), fmtOpt(j.WaitSecondsCompleted.P50, "s"), fmtOpt(j.WaitSecondsCompleted.P90, "s"), fmtOpt(j.WaitSecondsCompleted.P99, "s")), "jobs.wait_seconds_completed")
		kv.add("turnaround", "mean "+fmtOpt(j.TurnaroundSeconds.Mean, "s"), "jobs.turnaround_seconds.mean")
		kv.add("matchmaking", fmt.Sprintf("%s hops, %s", fmtOpt(j.Matchmaking.HopsMean, ""), fmtOpt(j.Matchmaking.SecondsMean, "s")), "jobs.matchmaking")
		m := j.Migrations
		kv.add("migrations", fmt.Sprintf("internode push %d, pull %d; queue push %d, pull %d", m.InternodePush, m.InternodePull, m.QueuePush, m.QueuePull), "jobs.migrations")
	}
	if st := s.Staleness; st != nil && st.Samples > 0 {
		kv.add("stale aggregation (error mean / p90)", fmt.Sprintf("nodes %s / %s, queue %s / %s, core utilization %s / %s over %d samples",
			fmtOpt(st.NodesError.Mean, ""), fmtOpt(st.NodesError.P90, ""), fmtOpt(st.LoadError.Mean, ""), fmtOpt(st.LoadError.P90, ""),
			fmtOpt(st.CoreUtilizationError.Mean, ""), fmtOpt(st.CoreUtilizationError.P90, ""), st.Samples), "staleness")
	}
	if a := s.Allocation; a != nil { // a 004 allocation run
		kv.add("allocation", fmt.Sprintf("%s grid, job set %d order %d, %s allocator, %s relocator: makespan %s, %d of %d jobs, %d relocations",
			a.Grid, a.Jobset, a.Order, a.Allocator, a.Relocator, fmtOpt(a.MakespanSeconds, "s"), a.Completed, a.Jobs, a.Relocations), "allocation")
	}
	kv.add("bus", fmt.Sprintf("published %d, delivered %d, lost %d", s.Bus.Published, s.Bus.Delivered, s.Bus.Lost), "bus")
	if s.Driver == emulator.DriverLive {
		kv.add("clock lag", fmt.Sprintf("p99 %.3g s, max %.3g s of wall time (emulated: p99 × time scale)", s.Clock.LagSeconds.P99, s.Clock.LagSeconds.Max), "clock.lag_seconds")
	}
	inv := Table{Caption: "Invariants", Head: []string{"check", "verdict", "detail"}}
	for _, c := range s.Invariants.Checks {
		verdict := Cell{Text: "ok", OK: true}
		if !c.OK {
			verdict = Cell{Text: "FAILED", Bad: true}
		}
		inv.Rows = append(inv.Rows, []Cell{{Text: c.Name}, verdict, {Text: c.Detail}})
	}
	p.Tables = []Table{kv.t, inv}
	if len(s.Faults.Events) > 0 {
		ft := Table{Caption: "Faults", Head: []string{"at", "kind", "what", "exact again after"}}
		for _, e := range s.Faults.Events {
			ft.Rows = append(ft.Rows, []Cell{{Text: fmt.Sprintf("%.0f s", e.TSeconds)}, {Text: e.Kind}, {Text: e.Detail}, {Text: fmtOpt(e.ExactAfterSeconds, "s"), Bad: e.ExactAfterSeconds == nil}})
		}
		p.Tables = append(p.Tables, ft)
	}
	return p
}

// fmtBytes is b in B, KiB or MiB.
func fmtBytes(b float64) string {
	unit := "B"
	for _, u := range []string{"KiB", "MiB", "GiB"} {
		if b < 1024 {
			break
		}
		b, unit = b/1024, u
	}
	if unit == "B" {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, unit)
}

// faultText is the captions' note on fault markers, if there are any.
func faultText(res *emulator.Result) string {
	if len(res.Summary.Faults.Events) == 0 {
		return ""
	}
	return " Gray vertical lines are the faults, labelled with their kind, one dash pattern per kind (table above)."
}

// decorate marks a time-series panel of the run: its faults as vertical
// lines, and the stretches when the emulator was behind its time scale or
// overloaded shaded.
func decorate(p *plot.Plot, res *emulator.Result) {
	markTimes(p, faultMarks(res.Summary))
	if e := res.Summary.Emulator; e != nil {
		behind, overloaded := -1.0, -1.0
		if e.BehindAtSeconds != nil {
			behind = *e.BehindAtSeconds / 60
		}
		if e.OverloadAtSeconds != nil {
			overloaded = *e.OverloadAtSeconds / 60
		}
		shadeOverload(p, behind, overloaded, res.Summary.EmulatedSeconds/60)
	}
}

// overloadText is the captions' note on the shaded stretches, if any.
func overloadText(res *emulator.Result) string {
	e := res.Summary.Emulator
	if e == nil || e.BehindAtSeconds == nil && e.OverloadAtSeconds == nil {
		return ""
	}
	var parts []string
	if e.BehindAtSeconds != nil {
		parts = append(parts, fmt.Sprintf("behind its time scale from %.1f min (timers later than the tolerance: emulator.behind_at_seconds)", *e.BehindAtSeconds/60))
	}
	if e.OverloadAtSeconds != nil {
		what := "overloaded"
		if e.Aborted {
			what = "overloaded and stopped"
		}
		parts = append(parts, fmt.Sprintf("%s at %.1f min (emulator.overload_at_seconds)", what, *e.OverloadAtSeconds/60))
	}
	return " Shaded: the emulator was " + strings.Join(parts, ", then ") + "; the figures there are distorted by the machine, not the protocol. A line breaks where oracle samples are missing."
}

// faultMarks are the run's fault events: time in minutes and kind.
func faultMarks(s emulator.Summary) []mark {
	var out []mark
	for _, e := range s.Faults.Events {
		out = append(out, mark{X: e.TSeconds / 60, Kind: e.Kind})
	}
	return out
}

// intervals calls fn for every oracle interval with its end time in
// minutes, length in minutes and the samples at both ends (the first
// interval starts at zero, from an empty sample).
func intervals(series []emulator.Sample, fn func(x, dt float64, prev, cur *emulator.Sample)) {
	prev := &emulator.Sample{}
	for i := range series {
		cur := &series[i]
		if dt := (cur.T - prev.T).Minutes(); dt > 0 {
			fn(cur.T.Minutes(), dt, prev, cur)
		}
		prev = cur
	}
}

// waitCDF is the distribution of the jobs' waits (000 §V, 003 §5.3),
// censored ones included.
func waitCDF(res *emulator.Result) (*figure, Omitted) {
	const title = "CDF of job wait"
	j := res.Summary.Jobs
	if j == nil {
		return nil, Omitted{title, "the scenario has no workload"}
	}
	if len(res.JobWaits) == 0 {
		return nil, Omitted{title, "no job was submitted"}
	}
	top, bottom, floor := waitPanels([]waitLine{{fmt.Sprintf("%s, %s", j.Scheme, j.Mode), 0, res.JobWaits}}, 2)
	below := 0
	for _, w := range res.JobWaits {
		if w <= floor {
			below++
		}
	}
	return &figure{Figure: Figure{Name: "wait_cdf", Title: title, Caption: fmt.Sprintf(
		"Top: fraction of the submitted jobs (y) that waited at most x emulated seconds from submission to the start of the run that completed them (or that is still going at the end); bottom: the fraction that waited longer (the tail, y on a log scale). The wait axis is logarithmic: the %s waiting at most %s s (%.0f%%, zero waits included) are drawn at %s s. %d jobs, %d of them censored — not started by the end of the run (or failed), counted up to then —, mean %s, p50 %s, p90 %s, p99 %s (jobs.wait_seconds; over the %d completed jobs only, mean %s: jobs.wait_seconds_completed).",
		plural(below, "job", "jobs"), tickLabel(floor), 100*float64(below)/float64(len(res.JobWaits)), tickLabel(floor),
		len(res.JobWaits), j.WaitCensored, fmtOpt(j.WaitSeconds.Mean, "s"), fmtOpt(j.WaitSeconds.P50, "s"), fmtOpt(j.WaitSeconds.P90, "s"), fmtOpt(j.WaitSeconds.P99, "s"), j.Completed, fmtOpt(j.WaitSecondsCompleted.Mean, "s"))},
		panels: []*plot.Plot{top, bottom}}, Omitted{}
}

// cdf is the empirical distribution function of xs as a step line; above
// 2,000 values it keeps every k-th step (the line between is straight).
func cdf(xs []float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	step := max(1, n/1000)
	out := make(plotter.XYs, 0, 2*(n/step+2))
	for i := 0; i < n; i++ {
		if i%step != 0 && i != n-1 {
			continue
		}
		out = append(out, plotter.XY{X: s[i], Y: float64(i) / float64(n)}, plotter.XY{X: s[i], Y: float64(i+1) / float64(n)})
	}
	return out
}

// trafficFigure draws messages (or bytes) per node per emulated minute
// over time, by message type (002 Fig 4.7 and 000 Fig 4 report the
// steady-state value, shown as the dashed line).
func trafficFigure(bytes bool) func(*emulator.Result) (*figure, Omitted) {
	return func(res *emulator.Result) (*figure, Omitted) {
		title, name, key, window := "Messages per node per minute", "messages_per_node", "messages.per_node_per_minute", res.Summary.Messages.PerNodePerMinute
		get := func(t metrics.TrafficSnapshot) []uint64 { return t.Count }
		if bytes {
			title, name, key, window = "Bytes per node per minute", "bytes_per_node", "bytes.per_node_per_minute", res.Summary.Bytes.PerNodePerMinute
			get = func(t metrics.TrafficSnapshot) []uint64 { return t.Bytes }
		}
		if len(res.Series) == 0 {
			return nil, Omitted{title, "no oracle sample"}
		}
		total := get(res.Series[len(res.Series)-1].Traffic)
		var types []int
		for t, v := range total {
			if v > 0 {
				types = append(types, t)
			}
		}
		if len(types) == 0 {
			return nil, Omitted{title, "no protocol message was sent"}
		}
		slices.SortStableFunc(types, func(a, b int) int { return cmp.Compare(total[b], total[a]) })
		named, other := types, false
		if len(types) > topTypes {
			named, other = types[:topTypes-1], true
		}
		colors := typeColors(res.Series[len(res.Series)-1].Traffic.Count)
		scale, unit := 1.0, "messages"
		if bytes {
			scale, unit = 1, "bytes"
			if window != nil && *window >= 10*1024 {
				scale, unit = 1.0/1024, "KiB"
			}
		}
		all := plotter.XYs{}
		byType := make([]plotter.XYs, len(named)+1) // + other
		step := res.Summary.Oracle.IntervalSeconds / 60
		intervals(res.Series, func(x, dt float64, prev, cur *emulator.Sample) {
			members := float64(prev.Oracle.Members+cur.Oracle.Members) / 2
			if members == 0 || step > 0 && dt > 1.5*step {
				return // no member, or samples missing: a break in the lines
			}
			d := get(cur.Traffic.Sub(prev.Traffic))
			per := func(v uint64) float64 { return float64(v) * scale / members / dt }
			var sum, rest uint64
			for _, v := range d {
				sum += v
			}
			rest = sum
			for i, t := range named {
				v := uint64(0)
				if t < len(d) {
					v = d[t]
				}
				rest -= v
				byType[i] = append(byType[i], plotter.XY{X: x, Y: per(v)})
			}
			byType[len(named)] = append(byType[len(named)], plotter.XY{X: x, Y: per(rest)})
			all = append(all, plotter.XY{X: x, Y: per(sum)})
		})
		if len(all) == 0 {
			return nil, Omitted{title, "no interval had a member"}
		}
		p := newTimePlot(title, unit+" per node per minute", true)
		for k, seg := range segments(all, 1.5*step) {
			l, _ := plotter.NewLine(seg)
			l.Color, l.Width = color.Black, vg.Points(2)
			p.Add(l)
			if k == 0 {
				p.Legend.Add("all", l)
			}
		}
		for i, t := range named {
			addTimeLine(p, wire.Name(wire.MsgType(t)), colors[t], byType[i], 0, step)
		}
		if other {
			for k, seg := range segments(byType[len(named)], 1.5*step) {
				ol, _ := plotter.NewLine(seg)
				ol.Color, ol.Dashes = color.Black, []vg.Length{vg.Points(1), vg.Points(2)}
				p.Add(ol)
				if k == 0 {
					p.Legend.Add(fmt.Sprintf("%d other types", len(types)-len(named)), ol)
				}
			}
		}
		w := res.Summary.Messages.Window
		summary := "not measured (no steady window long enough)"
		if window != nil && w.ToSeconds > w.FromSeconds {
			summary = fmtNum(*window * scale)
			wl, _ := plotter.NewLine(plotter.XYs{{X: w.FromSeconds / 60, Y: *window * scale}, {X: w.ToSeconds / 60, Y: *window * scale}})
			wl.Color, wl.Dashes, wl.Width = color.Black, []vg.Length{vg.Points(6), vg.Points(3)}, vg.Points(1.5)
			p.Add(wl)
			p.Legend.Add("summary (window)", wl)
		}
		decorate(p, res)
		return &figure{Figure: Figure{Name: name, Title: title, Caption: fmt.Sprintf(
			"Protocol %s sent per member per emulated minute in each oracle interval (%s s), in total and for the %s with the most; the dashed line is the run's figure over the measurement window (%s = %s).%s",
			unit, fmtNum(res.Summary.Oracle.IntervalSeconds), plural(len(named), "type", "types"), key, summary, faultText(res)+overloadText(res))},
			panels: []*plot.Plot{p}}, Omitted{}
	}
}

// typeColors gives each message type a style index (style) by its rank
// in messages sent, so a type has the same color in the messages and the
// bytes figure.
func typeColors(count []uint64) map[int]int {
	var types []int
	for t, v := range count {
		if v > 0 {
			types = append(types, t)
		}
	}
	slices.SortStableFunc(types, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
	out := map[int]int{}
	for i, t := range types {
		out[t] = i
	}
	return out
}

// overlayFigure draws the peers and the overlay's damage over time
// (002 Fig 4.6 shows broken links over time).
func overlayFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Peers and broken links over time"
	if len(res.Series) == 0 {
		return nil, Omitted{title, "no oracle sample"}
	}
	var peers, broken, stale, gaps, overlaps plotter.XYs
	for _, s := range res.Series {
		x := s.T.Minutes()
		peers = append(peers, plotter.XY{X: x, Y: float64(s.Oracle.Members)})
		broken = append(broken, plotter.XY{X: x, Y: float64(s.Oracle.BrokenLinks)})
		stale = append(stale, plotter.XY{X: x, Y: float64(s.Oracle.StaleLinks)})
		gaps = append(gaps, plotter.XY{X: x, Y: float64(s.Oracle.ZoneGaps)})
		overlaps = append(overlaps, plotter.XY{X: x, Y: float64(s.Oracle.ZoneOverlaps)})
	}
	top := newTimePlot("Peers (members of the overlay)", "peers", false)
	step := res.Summary.Oracle.IntervalSeconds / 60
	addTimeLine(top, "peers", 0, peers, 2, step)
	decorate(top, res)
	bottom := newTimePlot("Overlay damage (oracle)", "count", true)
	addTimeLine(bottom, "broken links", 1, broken, 2, step)
	addTimeLine(bottom, "stale links", 2, stale, 0, step)
	addTimeLine(bottom, "zone gaps", 3, gaps, 0, step)
	addTimeLine(bottom, "zone overlaps", 4, overlaps, 0, step)
	if bottom.Y.Max == 0 {
		bottom.Title.Text += ": none at any sample"
		bottom.Y.Max = 1 // keep the axis readable
	}
	decorate(bottom, res)
	b := res.Summary.Overlay.BrokenLinks
	return &figure{Figure: Figure{Name: "overlay", Title: title, Caption: fmt.Sprintf(
		"Top: members of the overlay at each oracle sample. Bottom: broken links (abutting zones missing from a neighbor table; final %d, max %d, mean %.2f), stale links, zone gaps and overlaps, as the oracle counts them.%s",
		b.Final, b.Max, b.Mean, faultText(res)+overloadText(res))}, panels: []*plot.Plot{top, bottom}}, Omitted{}
}

// jobsFigure draws the jobs queued or running, the busy nodes, and the
// job events per minute over time.
func jobsFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Job queues over time"
	if res.Summary.Jobs == nil || len(res.Series) == 0 || res.Series[0].JobEvents == nil {
		return nil, Omitted{title, "the scenario has no workload"}
	}
	var queue, busy plotter.XYs
	for _, s := range res.Series {
		queue = append(queue, plotter.XY{X: s.T.Minutes(), Y: float64(s.JobQueue)})
		busy = append(busy, plotter.XY{X: s.T.Minutes(), Y: float64(s.BusyNodes)})
	}
	top := newTimePlot("Jobs queued or running, busy nodes", "count", false)
	step := res.Summary.Oracle.IntervalSeconds / 60
	addTimeLine(top, "jobs queued or running", 0, queue, 2, step)
	addTimeLine(top, "busy nodes", 1, busy, 0, step)
	decorate(top, res)
	bottom := newTimePlot("Job events per minute", "jobs per minute", true)
	for i, e := range []string{"submitted", "started", "completed", "rematched", "resubmitted"} {
		xys := eventRate(res.Series, "job_"+e)
		if i >= 3 && allZero(xys) {
			continue // recovery events: only when there were some
		}
		addTimeLine(bottom, e, i, xys, 0, step*float64(rateBins(res.Series)))
	}
	decorate(bottom, res)
	return &figure{Figure: Figure{Name: "jobs", Title: title, Caption: "Top: jobs queued or running over all live nodes and the nodes with any, at each oracle sample (the global view). Bottom: job events per emulated minute " + binText(res) + "; submissions include the client's resubmissions." + faultText(res) + overloadText(res)},
		panels: []*plot.Plot{top, bottom}}, Omitted{}
}

// rateBins is how many oracle intervals the event rates are averaged
// over: about 60 bins over the run, so that the lines show the trend
// rather than the noise of a few events per interval.
func rateBins(series []emulator.Sample) int { return max(1, len(series)/60) }

// binText says what one bin of rateBins covers, for the captions.
func binText(res *emulator.Result) string {
	k := rateBins(res.Series)
	d := time.Duration(float64(k) * res.Summary.Oracle.IntervalSeconds * float64(time.Second))
	if k == 1 {
		return fmt.Sprintf("in each oracle interval (%v)", d)
	}
	return fmt.Sprintf("averaged over %d oracle intervals (%v)", k, d)
}

// eventRate is job event e per emulated minute, over bins of rateBins
// intervals.
func eventRate(series []emulator.Sample, e string) plotter.XYs {
	var out plotter.XYs
	k, n := rateBins(series), 0
	var count uint64
	var minutes float64
	intervals(series, func(x, dt float64, prev, cur *emulator.Sample) {
		count += cur.JobEvents[e] - prev.JobEvents[e]
		minutes += dt
		if n++; n == k || cur == &series[len(series)-1] {
			out = append(out, plotter.XY{X: x, Y: float64(count) / minutes})
			n, count, minutes = 0, 0, 0
		}
	})
	return out
}

func allZero(xys plotter.XYs) bool {
	for _, p := range xys {
		if p.Y != 0 {
			return false
		}
	}
	return true
}

// migrationEvents are the job events of dynamic scheduling's migrations
// (000 §IV-B, §IV-C) and their labels.
var migrationEvents = [][2]string{{"job_migrated", "migrated"}, {"job_offer_rejected", "PUSH offers rejected"}, {"job_pull_rejected", "PULL requests rejected"}, {"job_migration_returned", "returned (unacknowledged)"}}

// migrationsFigure draws job migrations per minute over time.
func migrationsFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Job migrations over time"
	j := res.Summary.Jobs
	if j == nil || len(res.Series) == 0 || res.Series[0].JobEvents == nil {
		return nil, Omitted{title, "the scenario has no workload"}
	}
	last := res.Series[len(res.Series)-1].JobEvents
	some := false
	for _, e := range migrationEvents {
		some = some || last[e[0]] > 0
	}
	if !some {
		return nil, Omitted{title, fmt.Sprintf("no job migrated or was offered (scheduling.mode %s)", j.Mode)}
	}
	p := newTimePlot(title, "per minute", true)
	for i, e := range migrationEvents {
		if last[e[0]] > 0 {
			addTimeLine(p, e[1], i, eventRate(res.Series, e[0]), 0, res.Summary.Oracle.IntervalSeconds/60*float64(rateBins(res.Series)))
		}
	}
	decorate(p, res)
	return &figure{Figure: Figure{Name: "migrations", Title: title, Caption: fmt.Sprintf(
		"Waiting jobs moved to a neighbor (%s scheduling), PUSH offers and PULL requests refused at the handshake, and transfers taken back because they were never acknowledged, per emulated minute %s.%s", j.Mode, binText(res), faultText(res)+overloadText(res))},
		panels: []*plot.Plot{p}}, Omitted{}
}

// mechanismsFigure draws the jobs received from a neighbor by mechanism
// (summary jobs.migrations).
func mechanismsFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Migrations by mechanism"
	j := res.Summary.Jobs
	if j == nil {
		return nil, Omitted{title, "the scenario has no workload"}
	}
	m := j.Migrations
	vals := []float64{float64(m.InternodePush), float64(m.InternodePull), float64(m.QueuePush), float64(m.QueuePull)}
	if m.InternodePush+m.InternodePull+m.QueuePush+m.QueuePull == 0 {
		return nil, Omitted{title, fmt.Sprintf("no job migrated (scheduling.mode %s)", j.Mode)}
	}
	p := newPlot(title, "mechanism", "jobs received")
	addBars(p, []string{"internode PUSH", "internode PULL", "queue PUSH", "queue PULL"}, nil, [][]float64{vals})
	return &figure{Figure: Figure{Name: "migrations_by_mechanism", Title: title, Caption: fmt.Sprintf(
		"Waiting jobs run nodes received from a neighbor over the run, by mechanism (000 §IV-B internode scheduling, §IV-C queue balancing; jobs.migrations), %s scheduling.", j.Mode)},
		panels: []*plot.Plot{p}}, Omitted{}
}

// staleFigure draws how wrong the aggregated load peers hold is against
// the ground truth at each oracle sample (002 §5.2.4 plots the error of
// aggregated core utilization; 003 Eq 1's number of nodes and queue
// beside it): the mean over members and dimensions, and the p90 dashed.
func staleFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Stale aggregation over time"
	st := res.Summary.Staleness
	if st == nil {
		return nil, Omitted{title, "the scenario has no workload (no aggregated load on heartbeats)"}
	}
	names := staleness.Names(res.Scenario.HoldsACID())
	means, p90s := make([]plotter.XYs, len(names)), make([]plotter.XYs, len(names))
	for _, s := range res.Series {
		for _, x := range s.Staleness {
			i := slices.Index(names, x.Name)
			if i < 0 || math.IsNaN(x.Mean) || math.IsNaN(x.P90) || math.IsInf(x.Mean, 0) || math.IsInf(x.P90, 0) {
				continue
			}
			means[i] = append(means[i], plotter.XY{X: s.T.Minutes(), Y: x.Mean})
			p90s[i] = append(p90s[i], plotter.XY{X: s.T.Minutes(), Y: x.P90})
		}
	}
	if len(means[0]) == 0 {
		return nil, Omitted{title, "no oracle sample had a member"}
	}
	p := newTimePlot(title, "error (ratio)", true)
	step := res.Summary.Oracle.IntervalSeconds / 60
	for i, n := range names {
		addTimeLine(p, n+" mean", i, means[i], 2, step)
		for k, seg := range segments(p90s[i], 1.5*step) {
			l, _ := plotter.NewLine(seg)
			l.Color, _ = style(i)
			l.Dashes, l.Width = []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1)
			p.Add(l)
			if k == 0 {
				p.Legend.Add(n+" p90", l)
			}
		}
	}
	decorate(p, res)
	f := func(e emulator.ErrorStats) string { return fmtOpt(e.Mean, "") + " (p90 " + fmtOpt(e.P90, "") + ")" }
	acid := ""
	if st.ACIDWrongFraction != nil {
		acid = fmt.Sprintf(" With categorical resources, acid is the share of members whose ACID (002 Eq 5.1) differs from the one recomputed from the snapshot (002 §5.2.4): %s wrong on average.", fmtOpt(st.ACIDWrongFraction, ""))
	}
	return &figure{Figure: Figure{Name: "stale_aggregation", Title: title, Caption: fmt.Sprintf(
		"How wrong the aggregated load peers hold is against AI_d recomputed from the oracle's global snapshot with fresh information (003 Eq 1), at each oracle sample: nodes and queue are relative errors of AI_d's number of nodes and required cores, core_utilization the absolute difference of the upper region's core utilization (002 §5.2.4); solid lines the mean over every member and dimension, dashed the p90. Averaged over the %d samples of the measurement window: nodes %s, queue %s, core utilization %s (summary staleness.*).%s%s",
		st.Samples, f(st.NodesError), f(st.LoadError), f(st.CoreUtilizationError), acid, faultText(res)+overloadText(res))},
		panels: []*plot.Plot{p}}, Omitted{}
}
