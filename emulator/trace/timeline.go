package trace

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/core"
)

// TimelineOptions choose what a timeline draws.
type TimelineOptions struct {
	// Peers are the columns (ids; 0 is the job client); nil: the peer
	// with the most messages in the window and those it exchanged the
	// most with, DefaultColumns in all.
	Peers map[core.NodeID]bool
	// From and To bound the emulated time drawn (To 0: the trace's end).
	From, To time.Duration
	// MaxArrows refuses a timeline with more messages than this (0:
	// DefaultMaxArrows): narrow the peers or the window.
	MaxArrows int
}

// DefaultColumns is how many peers a timeline draws when none are named;
// DefaultMaxArrows how many messages it draws at most.
const (
	DefaultColumns   = 8
	DefaultMaxArrows = 3000
)

// TimelineStats say what a timeline drew.
type TimelineStats struct {
	Columns []core.NodeID
	// Arrows are the messages drawn from sender to receiver; Lost the
	// messages sent and never delivered; Outside the messages between a
	// drawn peer and one not drawn (counted, not drawn); Faults and Steps
	// the faults and job steps marked.
	Arrows, Lost, Outside, Faults, Steps int
	From, To                             time.Duration
}

// send is a message as the timeline reads it from its flow start (or its
// "not delivered" mark); arrow the message with its delivery.
type send struct {
	tid  uint64
	ts   float64
	name string
	to   uint64
}

type arrow struct {
	send
	rts  float64
	rtid uint64
	lost bool
}

// busiest are the columns of a timeline for which no peers were named:
// the peer with the most messages in the window (sent or received), and
// the peers it exchanged the most with, DefaultColumns in all.
func busiest(arrows []arrow, in func(float64) bool) map[core.NodeID]bool {
	count := map[uint64]int{}
	pair := map[[2]uint64]int{}
	for _, a := range arrows {
		if !in(a.ts) {
			continue
		}
		to := a.rtid
		if a.lost {
			to = a.to
		}
		count[a.tid]++
		count[to]++
		pair[[2]uint64{a.tid, to}]++
		pair[[2]uint64{to, a.tid}]++
	}
	var top uint64
	best := -1
	for id, n := range count {
		if n > best || (n == best && id < top) {
			top, best = id, n
		}
	}
	cols := map[core.NodeID]bool{}
	if best < 0 {
		return cols
	}
	var others []uint64
	for p := range pair {
		if p[0] == top && p[1] != top {
			others = append(others, p[1])
		}
	}
	slices.SortFunc(others, func(a, b uint64) int {
		if d := pair[[2]uint64{top, b}] - pair[[2]uint64{top, a}]; d != 0 {
			return d
		}
		return int(a) - int(b)
	})
	cols[core.NodeID(top)] = true
	for _, id := range others[:min(len(others), DefaultColumns-1)] {
		cols[core.NodeID(id)] = true
	}
	return cols
}

// rawEvent is what the timeline reads of a trace event.
type rawEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Pid  int             `json:"pid"`
	Tid  uint64          `json:"tid"`
	ID   uint64          `json:"id"`
	Args json.RawMessage `json:"args"`
}

// Timeline draws a trace written by a Writer as a Lamport-style diagram —
// time downwards, one column per peer, an arrow per message from its
// sending to its delivery, messages never delivered as arrows that stop
// short with a cross, faults as bands across the columns, job steps as
// dots — in a standalone HTML page with an inline SVG (each arrow's
// tooltip says what it is). It reads the whole trace: filter a large
// run's trace when it is written (--trace-peers, --trace-from).
func Timeline(r io.Reader, w io.Writer, o TimelineOptions) (TimelineStats, error) {
	var f struct {
		TraceEvents []rawEvent     `json:"traceEvents"`
		OtherData   map[string]any `json:"otherData"`
	}
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return TimelineStats{}, fmt.Errorf("not a trace in the trace-event format's JSON object form: %w", err)
	}
	if g, _ := f.OtherData["generator"].(string); !strings.HasPrefix(g, "gridbed") {
		return TimelineStats{}, fmt.Errorf("not a trace gridbed wrote (its otherData.generator is %q): write one with gridbed run --trace", g)
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	end := o.To
	if end == 0 {
		for _, e := range f.TraceEvents {
			if e.Ph != "M" {
				end = max(end, time.Duration(e.Ts*1e3))
			}
		}
	}
	in := func(ts float64) bool { return ts >= us(o.From) && ts <= us(end) }
	// The messages: flow starts and ends, with their send slices' args.
	starts := map[uint64]send{}
	var arrows []arrow
	var faults, steps []rawEvent
	for _, e := range f.TraceEvents {
		switch {
		case e.Ph == "s" && e.Cat == "message":
			starts[e.ID] = send{tid: e.Tid, ts: e.Ts, name: e.Name}
		case e.Ph == "f" && e.Cat == "message":
			if s, ok := starts[e.ID]; ok {
				arrows = append(arrows, arrow{send: s, rts: e.Ts, rtid: e.Tid})
				delete(starts, e.ID)
			}
		case e.Ph == "i" && e.Cat == "message" && strings.HasPrefix(e.Name, "not delivered: "):
			var to uint64
			name, rest, _ := strings.Cut(strings.TrimPrefix(e.Name, "not delivered: "), " to ")
			fmt.Sscan(rest, &to)
			arrows = append(arrows, arrow{send: send{tid: e.Tid, ts: e.Ts, name: name, to: track(to)}, lost: true})
		case e.Cat == "fault" && in(e.Ts):
			faults = append(faults, e)
		case e.Cat == "job" && in(e.Ts):
			steps = append(steps, e)
		}
	}
	// The columns.
	cols := o.Peers
	if cols == nil {
		cols = busiest(arrows, in)
	}
	st := TimelineStats{From: o.From, To: end}
	for id := range cols {
		st.Columns = append(st.Columns, id)
	}
	slices.Sort(st.Columns)
	if len(st.Columns) == 0 {
		return st, fmt.Errorf("no peer's messages in the window %v–%v: widen it, or name peers the trace kept", o.From, end)
	}
	x := map[uint64]float64{}
	const left, colW, top = 110.0, 120.0, 70.0
	for i, id := range st.Columns {
		x[uint64(id)] = left + colW*float64(i) + colW/2
	}
	var drawn []arrow
	for _, a := range arrows {
		if !in(a.ts) {
			continue
		}
		_, from := x[a.tid]
		to := a.rtid
		if a.lost {
			to = a.to
		}
		_, toIn := x[to]
		switch {
		case from && toIn:
			a.rtid = to
			drawn = append(drawn, a)
			if a.lost {
				st.Lost++
			} else {
				st.Arrows++
			}
		case from || toIn:
			st.Outside++
		}
	}
	maxArrows := o.MaxArrows
	if maxArrows == 0 {
		maxArrows = DefaultMaxArrows
	}
	if len(drawn) > maxArrows {
		return st, fmt.Errorf("%d messages between the %d peers in %v–%v, more than the %d a timeline draws: name fewer peers (--peers) or a shorter window (--from, --to)",
			len(drawn), len(st.Columns), o.From, end, maxArrows)
	}
	// Time runs down: a message's length is at least a few pixels, and
	// the page about 14 px per message, within bounds.
	height := math.Min(math.Max(float64(len(drawn))*14, 500), 20000)
	span := math.Max(us(end)-us(o.From), 1)
	y := func(ts float64) float64 { return top + (ts-us(o.From))/span*height }
	width := left + colW*float64(len(st.Columns)) + 40

	var b strings.Builder
	title := fmt.Sprintf("%v", f.OtherData["scenario"])
	if s, ok := f.OtherData["seed"].(float64); ok {
		title += fmt.Sprintf(", seed %d", int64(s))
	}
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gridbed timeline: %s</title>\n", html.EscapeString(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:12px}svg text{font-size:11px;font-family:sans-serif}.lost{stroke-dasharray:4 3}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1 style=\"font-size:16px\">%s: %d peers from %v to %v emulated</h1>\n", html.EscapeString(title), len(st.Columns), o.From, end)
	fmt.Fprintf(&b, "<p>Messages: %d delivered, %d sent and not delivered (dashed, ending in a cross), %d between these peers and others (not drawn). Faults: %d. Job steps: %d. Time runs down; hover an arrow for the message.</p>\n",
		st.Arrows, st.Lost, st.Outside, len(faults), len(steps))
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n", width, height+top+40, width, height+top+40)
	b.WriteString("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"context-stroke\"/></marker></defs>\n")
	// Time ticks.
	for i := 0; i <= 10; i++ {
		ts := us(o.From) + span*float64(i)/10
		fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"4\" y=\"%.1f\">%v</text>\n",
			left-20, y(ts), width-20, y(ts), y(ts)+4, time.Duration(ts*1e3).Round(time.Millisecond))
	}
	// Columns.
	for _, id := range st.Columns {
		name := fmt.Sprintf("peer %d", id)
		if id == 0 {
			name = "job client"
		}
		cx := x[uint64(id)]
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">%s</text><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-width=\"1.5\"/>\n",
			cx, top-12, name, cx, top, cx, top+height)
	}
	// Faults: bands across the columns.
	for _, e := range faults {
		var a struct{ Detail string }
		_ = json.Unmarshal(e.Args, &a)
		fy := y(e.Ts)
		fmt.Fprintf(&b, "<g><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"4\" fill=\"#d62728\" fill-opacity=\"0.5\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\">%s</text></g>\n",
			html.EscapeString(e.Name+": "+a.Detail), left-20, fy-2, width-left, width-200, fy-5, html.EscapeString(e.Name))
		st.Faults++
	}
	// Messages, coloured by type.
	palette := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79"}
	colour := map[string]string{}
	var types []string
	for _, a := range drawn {
		if _, ok := colour[a.name]; !ok {
			colour[a.name] = palette[len(colour)%len(palette)]
			types = append(types, a.name)
		}
		x1, y1 := x[a.tid], y(a.ts)
		if a.lost {
			// Halfway to the receiver, at a message's usual slope.
			x2 := x1 + (x[a.rtid]-x1)/2
			y2 := y1 + 10
			fmt.Fprintf(&b, "<g><title>%s from %d to %d at %v: not delivered</title><line class=\"lost\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\"/><path d=\"M %.1f %.1f l 6 6 m -6 0 l 6 -6\" stroke=\"#d62728\" stroke-width=\"2\"/></g>\n",
				a.name, a.tid, a.rtid, time.Duration(a.ts*1e3), x1, y1, x2, y2, colour[a.name], x2-3, y2-3)
			continue
		}
		x2, y2 := x[a.rtid], y(a.rts)
		if x1 == x2 { // to itself: a small loop
			fmt.Fprintf(&b, "<g><title>%s from %d to itself at %v</title><path d=\"M %.1f %.1f c 25 0 25 %.1f 0 %.1f\" fill=\"none\" stroke=\"%s\" marker-end=\"url(#arrow)\"/></g>\n",
				a.name, a.tid, time.Duration(a.ts*1e3), x1, y1, y2-y1, y2-y1, colour[a.name])
			continue
		}
		fmt.Fprintf(&b, "<g><title>%s from %d to %d, sent at %v, delivered %v later</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" marker-end=\"url(#arrow)\"/></g>\n",
			a.name, a.tid, a.rtid, time.Duration(a.ts*1e3), time.Duration((a.rts-a.ts)*1e3), x1, y1, x2, math.Max(y2, y1+2), colour[a.name])
	}
	// Job steps: dots on their peers' columns.
	for _, e := range steps {
		if cx, ok := x[e.Tid]; ok {
			fmt.Fprintf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#2ca02c\"><title>%s</title></circle>\n", cx, y(e.Ts), html.EscapeString(e.Name))
			st.Steps++
		}
	}
	// Legend.
	for i, t := range types {
		fmt.Fprintf(&b, "<rect x=\"%.1f\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" y=\"18\">%s</text>\n", left+float64(i)*120, colour[t], left+float64(i)*120+16, t)
	}
	b.WriteString("</svg>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return st, err
}
