package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
	"github.com/gridbed/gridbed/emulator/emutest/cores"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/trace"
)

// event is one trace event, as the trace-event format defines its fields.
type event struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   *float64        `json:"ts"`
	Dur  *float64        `json:"dur"`
	Pid  *int            `json:"pid"`
	Tid  *uint64         `json:"tid"`
	ID   *uint64         `json:"id"`
	BP   string          `json:"bp"`
	S    string          `json:"s"`
	Args json.RawMessage `json:"args"`
}

// file is a trace file in the format's JSON object form.
type file struct {
	TraceEvents     []event        `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
}

// checkFormat parses a trace by the trace-event format's rules: every
// event has a phase, a process and a thread, and a timestamp unless it is
// metadata; complete events (X) a duration; instant events a scope; flow
// events an id, each flow ending (f, bound to the enclosing slice) after
// the one start (s) of its id, on a thread with a slice at that instant;
// every thread of the peers' process that carries events is named. It
// returns the parsed file.
func checkFormat(t *testing.T, seed uint64, data []byte) file {
	t.Helper()
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("seed %d: the trace is not the format's JSON object: %v", seed, err)
	}
	if len(f.TraceEvents) == 0 || f.DisplayTimeUnit == "" {
		t.Fatalf("seed %d: %d events, displayTimeUnit %q", seed, len(f.TraceEvents), f.DisplayTimeUnit)
	}
	type slot struct {
		pid int
		tid uint64
		ts  float64
	}
	slices := map[slot]bool{}
	starts := map[uint64]event{}
	named := map[uint64]bool{}
	used := map[uint64]bool{}
	for i, e := range f.TraceEvents {
		if e.Ph == "" || e.Pid == nil || e.Tid == nil || e.Name == "" {
			t.Fatalf("seed %d: event %d lacks a phase, pid, tid or name: %+v", seed, i, e)
		}
		if e.Ph == "M" {
			if e.Name == "thread_name" && *e.Pid == 1 {
				named[*e.Tid] = true
			}
			continue
		}
		if e.Ts == nil || *e.Ts < 0 {
			t.Fatalf("seed %d: event %d (%s) has no timestamp", seed, i, e.Name)
		}
		if *e.Pid == 1 {
			used[*e.Tid] = true
		}
		switch e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur <= 0 {
				t.Fatalf("seed %d: complete event %d (%s) without a duration", seed, i, e.Name)
			}
			slices[slot{*e.Pid, *e.Tid, *e.Ts}] = true
		case "i":
			if e.S != "t" && e.S != "p" && e.S != "g" {
				t.Fatalf("seed %d: instant event %d (%s) with scope %q", seed, i, e.Name, e.S)
			}
		case "C":
			if len(e.Args) == 0 {
				t.Fatalf("seed %d: counter %d (%s) without values", seed, i, e.Name)
			}
		case "s":
			if e.ID == nil {
				t.Fatalf("seed %d: flow start %d without an id", seed, i)
			}
			if _, dup := starts[*e.ID]; dup {
				t.Fatalf("seed %d: two flow starts with id %d", seed, *e.ID)
			}
			if !slices[slot{*e.Pid, *e.Tid, *e.Ts}] {
				t.Fatalf("seed %d: flow start %d has no slice to bind to at %v on thread %d", seed, *e.ID, *e.Ts, *e.Tid)
			}
			starts[*e.ID] = e
		case "f":
			if e.ID == nil || e.BP != "e" {
				t.Fatalf("seed %d: flow end %d without an id or not bound to its slice (bp %q)", seed, i, e.BP)
			}
			s, ok := starts[*e.ID]
			if !ok || s.Name != e.Name || s.Cat != e.Cat || *s.Ts > *e.Ts {
				t.Fatalf("seed %d: flow end %d (%s at %v) has no earlier start of its id, name and category", seed, *e.ID, e.Name, *e.Ts)
			}
			if !slices[slot{*e.Pid, *e.Tid, *e.Ts}] {
				t.Fatalf("seed %d: flow end %d has no slice to bind to", seed, *e.ID)
			}
			delete(starts, *e.ID)
			starts[*e.ID] = event{Name: "\x00ended"} // an id ends once
		default:
			t.Fatalf("seed %d: event %d has phase %q, which a gridbed trace does not write", seed, i, e.Ph)
		}
	}
	for tid := range used {
		if !named[tid] {
			t.Errorf("seed %d: peer track %d carries events but has no thread_name", seed, tid)
		}
	}
	return f
}

// traced runs sc on driver with a trace filtered by flt and returns the
// result and the trace file's bytes.
func traced(t *testing.T, sc scenario.Scenario, driver string, flt trace.Filter) (*emulator.Result, []byte) {
	t.Helper()
	share := cores.Sim
	if driver == emulator.DriverLive {
		share = cores.Live
	}
	cores.Hold(t, share)
	var buf bytes.Buffer
	w := trace.New(&buf, flt)
	ctx, cancel := context.WithTimeout(context.Background(), emutest.LiveTimeout(sc))
	defer cancel()
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: driver, Tap: w})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	if err := w.Finish(res); err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	return res, buf.Bytes()
}

// TestTraceOfAChaosRun: the chaos example's trace, on the deterministic
// driver, keeps the peers asked for (0-9: the job client and peers 1-9),
// loads under the trace-event format's rules with a flow from each send
// to its delivery, marks the messages the partition and the crash kept
// from their receivers, holds the faults and the oracle's samples, and
// leaves the run's summary as it is without a trace.
func TestTraceOfAChaosRun(t *testing.T) {
	sc := emutest.Load(t, "../../examples/chaos.yaml", "peers.count=100")
	res, data := traced(t, sc, emulator.DriverSim, trace.Filter{Peers: mustPeers(t, "0-9")})
	f := checkFormat(t, sc.Seed, data)
	var sends, recvs, lost, faults, oracle int
	for _, e := range f.TraceEvents {
		switch {
		case e.Ph == "X" && strings.HasPrefix(e.Name, "send "):
			sends++
			var a struct{ To uint64 }
			if err := json.Unmarshal(e.Args, &a); err != nil || (*e.Tid > 9 && a.To > 9) {
				t.Fatalf("seed %d: a send from %d to %d kept by a filter of peers 0-9", sc.Seed, *e.Tid, a.To)
			}
		case e.Ph == "X" && strings.HasPrefix(e.Name, "recv "):
			recvs++
		case strings.HasPrefix(e.Name, "not delivered"):
			lost++
		case e.Cat == "fault":
			faults++
		case e.Cat == "oracle":
			oracle++
		}
	}
	if sends == 0 || recvs == 0 || lost == 0 || faults == 0 || oracle == 0 {
		t.Errorf("seed %d: %d sends, %d deliveries, %d not delivered, %d faults, %d oracle samples: want each", sc.Seed, sends, recvs, lost, faults, oracle)
	}
	if n := len(res.Summary.Faults.Events); faults != n {
		t.Errorf("seed %d: %d faults in the trace, %d in the summary", sc.Seed, faults, n)
	}
	plain := emutest.Run(t, sc, emulator.DriverSim)
	a, err := emulator.ProtocolJSON(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	b, err := emulator.ProtocolJSON(plain.Summary)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("seed %d: the summary with a trace differs from the one without", sc.Seed)
	}
}

// TestTraceOfALiveRun: a run on the emulator driver (actors over NATS)
// writes a trace of the same form, its deliveries matched to their sends.
func TestTraceOfALiveRun(t *testing.T) {
	emutest.SkipUnderRace(t, "a live run's trace is the deterministic driver's form; the race tier has its own live runs")
	sc := emutest.Load(t, "../../examples/quickstart.yaml", "peers.count=40", "duration=3m", "time_scale=60")
	_, data := traced(t, sc, emulator.DriverLive, trace.Filter{Types: mustTypes(t, "heartbeat,join,join_accept")})
	f := checkFormat(t, sc.Seed, data)
	if d, _ := f.OtherData["delivered"].(float64); d == 0 {
		t.Errorf("seed %d: no delivery matched to its send: %v", sc.Seed, f.OtherData)
	}
	for _, e := range f.TraceEvents {
		if e.Cat == "message" && e.Ph == "X" && !strings.Contains(e.Name, "heartbeat") && !strings.Contains(e.Name, "join") {
			t.Fatalf("seed %d: %q kept by a filter of heartbeat and join messages", sc.Seed, e.Name)
		}
	}
}

// TestTraceWindow: a window keeps only what happens inside it.
func TestTraceWindow(t *testing.T) {
	sc := emutest.Load(t, "../../examples/quickstart.yaml", "peers.count=40", "duration=6m")
	from, to := 2*time.Minute, 3*time.Minute
	_, data := traced(t, sc, emulator.DriverSim, trace.Filter{From: from, To: to})
	f := checkFormat(t, sc.Seed, data)
	for _, e := range f.TraceEvents {
		if e.Ph != "M" && (*e.Ts < float64(from.Microseconds()) || *e.Ts > float64(to.Microseconds())) {
			t.Fatalf("seed %d: %s at %v µs, outside the window [%v, %v]", sc.Seed, e.Name, *e.Ts, from, to)
		}
	}
}

// TestParseFilters: peers and types are read as the flags write them, and
// bad values say what to write.
func TestParseFilters(t *testing.T) {
	p, err := trace.ParsePeers("0-3, 7")
	if err != nil || len(p) != 5 || !p[0] || !p[3] || !p[7] || p[4] {
		t.Errorf("ParsePeers(0-3, 7) = %v, %v", p, err)
	}
	for _, bad := range []string{"", "x", "5-2", "1-"} {
		if _, err := trace.ParsePeers(bad); err == nil || !strings.Contains(err.Error(), "e.g.") {
			t.Errorf("ParsePeers(%q): %v, want an error saying what to write", bad, err)
		}
	}
	ty, err := trace.ParseTypes("heartbeat, JOIN")
	if err != nil || len(ty) != 2 || !ty[wire.MsgType_MSG_HEARTBEAT] || !ty[wire.MsgType_MSG_JOIN] {
		t.Errorf("ParseTypes(heartbeat, JOIN) = %v, %v", ty, err)
	}
	if _, err := trace.ParseTypes("hearbeat"); err == nil || !strings.Contains(err.Error(), "heartbeat") {
		t.Errorf("ParseTypes(hearbeat): %v, want the names to choose from", err)
	}
}

func mustPeers(t *testing.T, s string) map[core.NodeID]bool {
	t.Helper()
	p, err := trace.ParsePeers(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustTypes(t *testing.T, s string) map[wire.MsgType]bool {
	t.Helper()
	p, err := trace.ParseTypes(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTimeline: a chaos run's trace drawn over a window with a fault in
// it, for the busiest peer and its correspondents: a well-formed page whose SVG has an arrow per
// message drawn, a band per fault, and what it left out counted; too many
// messages are refused with what to narrow.
func TestTimeline(t *testing.T) {
	sc := emutest.Load(t, "../../examples/chaos.yaml", "peers.count=60")
	res, data := traced(t, sc, emulator.DriverSim, trace.Filter{})
	var at time.Duration
	for _, e := range res.Summary.Faults.Events {
		if e.Kind == "crash" || e.Kind == "partition" {
			at = time.Duration(e.TSeconds * 1e9)
			break
		}
	}
	if at == 0 {
		t.Fatalf("seed %d: no crash or partition in the chaos example's faults: %+v", sc.Seed, res.Summary.Faults.Events)
	}
	var page bytes.Buffer
	st, err := trace.Timeline(bytes.NewReader(data), &page, trace.TimelineOptions{From: at - time.Minute, To: at + time.Minute})
	if err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	if len(st.Columns) != trace.DefaultColumns || st.Arrows == 0 || st.Faults == 0 {
		t.Errorf("seed %d: timeline %+v: want %d columns (the busiest peer and its correspondents), arrows and the fault", sc.Seed, st, trace.DefaultColumns)
	}
	svg := page.String()
	i, j := strings.Index(svg, "<svg"), strings.Index(svg, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("seed %d: no SVG in the page", sc.Seed)
	}
	dec := xml.NewDecoder(strings.NewReader(svg[i : j+len("</svg>")]))
	lines, rects := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("seed %d: the SVG is not well-formed XML: %v", sc.Seed, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "line":
				for _, a := range se.Attr {
					if a.Name.Local == "marker-end" || (a.Name.Local == "class" && a.Value == "lost") {
						lines++
					}
				}
			case "rect":
				rects++
			}
		}
	}
	if lines < st.Arrows+st.Lost-1 { // a message to itself is a path
		t.Errorf("seed %d: %d message lines in the SVG for %d arrows and %d lost", sc.Seed, lines, st.Arrows, st.Lost)
	}
	if rects < st.Faults {
		t.Errorf("seed %d: %d rects for %d faults", sc.Seed, rects, st.Faults)
	}
	if _, err := trace.Timeline(bytes.NewReader(data), io.Discard, trace.TimelineOptions{MaxArrows: 10}); err == nil || !strings.Contains(err.Error(), "fewer peers") {
		t.Errorf("a timeline of more than MaxArrows messages: %v, want a refusal saying what to narrow", err)
	}
	if _, err := trace.Timeline(strings.NewReader(`{"traceEvents":[]}`), io.Discard, trace.TimelineOptions{}); err == nil || !strings.Contains(err.Error(), "gridbed run --trace") {
		t.Errorf("a trace gridbed did not write: %v", err)
	}
}

// TestTimelineInChromium: the timeline page renders in headless Chromium:
// its screenshot shows the messages' colour (the first type's, #1f77b4)
// and the fault band's red.
func TestTimelineInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser checks run in the long tier")
	}
	bin := emutest.ChromiumBinary(t)
	sc := emutest.Load(t, "../../examples/chaos.yaml", "peers.count=60")
	res, data := traced(t, sc, emulator.DriverSim, trace.Filter{})
	at := time.Duration(res.Summary.Faults.Events[0].TSeconds * 1e9)
	dir := t.TempDir()
	page := filepath.Join(dir, "timeline.html")
	var b bytes.Buffer
	if _, err := trace.Timeline(bytes.NewReader(data), &b, trace.TimelineOptions{From: max(at-time.Minute, 0), To: at + time.Minute}); err != nil {
		t.Fatalf("seed %d: %v", sc.Seed, err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	emutest.Chromium(t, bin, page, "--window-size=1100,1400", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	blue, red := 0, 0
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case r < 0x40 && g > 0x60 && g < 0x90 && bl > 0x98 && bl < 0xd0:
				blue++
			case r > 0xd0 && g < 0xa0 && bl < 0xa0:
				red++
			}
		}
	}
	if blue < 200 || red < 200 {
		t.Errorf("seed %d: the rendered timeline has %d pixels of the messages' blue and %d of the fault's red; want both drawn", sc.Seed, blue, red)
	}
}
