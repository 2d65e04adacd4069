package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/sim"
)

// WallClockFields are the summary fields that measure the machine rather
// than the protocol: two runs of one scenario and seed on the
// deterministic driver differ in these and in nothing else.
var WallClockFields = map[string]bool{
	"wall_seconds":           true,
	"per_wall_second":        true,
	"bootstrap_wall_seconds": true,
	"loop_seconds":           true,
	"events_per_second":      true,
}

// ProtocolJSON is s as summary.json writes it, indented, without the
// WallClockFields: what two runs of one scenario and seed on the
// deterministic driver must agree on byte for byte (the golden
// summaries, CheckDeterminism).
func ProtocolJSON(s Summary) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if WallClockFields[k] {
					delete(v, k)
					continue
				}
				strip(child)
			}
		case []any:
			for _, child := range v {
				strip(child)
			}
		}
	}
	strip(tree)
	out, err := json.MarshalIndent(tree, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// keepTries is how many runs CheckDeterminism makes, at most, for the
// first run's side of a diverging block.
const keepTries = 3

// ErrNotCompared is CheckDeterminism's error when it was interrupted
// before the runs could be compared.
var ErrNotCompared = errors.New("the determinism check was interrupted before the runs could be compared")

// Divergence is where two runs of one scenario and seed on the
// deterministic driver first differ: an event of their streams, or, when
// every event agreed, a line of their summaries.
type Divergence struct {
	Seed uint64
	// Events are the two runs' event counts.
	Events [2]uint64
	// Block is the first block of sim.BlockEvents events whose chained
	// hashes differ (-1: the event streams agree); First and Second the
	// first differing events in it (nil: that run had none there).
	Block         int
	First, Second *sim.Event
	// FirstIsAnother says First comes from another run than the first,
	// none of the runs meant to give the first run's side having agreed
	// with it up to Block (Note).
	FirstIsAnother bool
	// Note says what else the check found (a third run, asked for the
	// first run's side of the block, diverged earlier from the first).
	Note string
	// Line is the first line (from 1) of the summaries' ProtocolJSON that
	// differs, 0 if none; Lines the two sides.
	Line  int
	Lines [2]string
}

// Error says where the runs diverged, both sides, and the seed.
func (d *Divergence) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: two runs of the same scenario and seed diverged", d.Seed)
	side := func(e *sim.Event) string {
		if e == nil {
			return "(no such event: the run had ended)"
		}
		return e.String()
	}
	if d.Block >= 0 {
		fmt.Fprintf(&b, " in events %d-%d (runs of %d and %d events)", d.Block*sim.BlockEvents+1, (d.Block+1)*sim.BlockEvents, d.Events[0], d.Events[1])
		label := "first run: "
		if d.FirstIsAnother {
			label = "a later run:"
		}
		if d.First != nil || d.Second != nil {
			fmt.Fprintf(&b, ":\n  %s %s\n  second run:  %s", label, side(d.First), side(d.Second))
		}
	}
	if d.Note != "" {
		fmt.Fprintf(&b, "\n  %s", d.Note)
	}
	if d.Line > 0 {
		fmt.Fprintf(&b, "\n  summaries differ at line %d:\n  first run:  %s\n  second run: %s", d.Line, strings.TrimSpace(d.Lines[0]), strings.TrimSpace(d.Lines[1]))
	}
	return b.String()
}

// CheckDeterminism runs sc on the deterministic driver twice and compares
// the two runs: every event of the world's loop (a message delivered —
// its time, receiver and bytes —, a timer expired, an action run) in
// order, and the summaries without their WallClockFields. It returns the
// first run's result, and a *Divergence at the first difference: the
// first differing event with both sides (a third run recovers the first
// run's side of that block, whose events only the second run kept; up to
// keepTries runs when those diverge too) or the first differing summary
// line. The Wave scheduler's event engine
// (wave.engine: events) has no world: its runs are compared by their
// summaries alone.
//
// opts.Metrics, if set, serves the first run, and so does opts.Tap; the
// others run with private metrics and no tap. When ctx ends (an interrupt) nothing is compared: the
// error is ErrNotCompared, with the first run's result.
func CheckDeterminism(ctx context.Context, sc scenario.Scenario, opts Options) (*Result, error) {
	if opts.Driver != DriverSim {
		return nil, fmt.Errorf("the determinism check runs on the deterministic driver (--driver %s), not %q", DriverSim, opts.Driver)
	}
	run := func(rec *sim.Recorder, first bool) (*Result, error) {
		o := opts
		o.Record = rec
		if !first {
			o.Metrics, o.Progress, o.Tap = nil, nil, nil
		}
		res, err := Run(ctx, sc, o)
		if err != nil {
			return nil, err
		}
		rec.End()
		return res, nil
	}
	// An interrupted run is not compared: it stopped where the signal
	// found it. The first run's result says interrupted.
	stopped := func() bool { return ctx.Err() != nil }
	a := sim.NewRecorder()
	first, err := run(a, true)
	if err != nil {
		return nil, err
	}
	if stopped() {
		return first, ErrNotCompared
	}
	b := sim.Compare(a.Marks())
	second, err := run(b, false)
	if err != nil {
		return first, err
	}
	if stopped() {
		return first, ErrNotCompared
	}
	d := &Divergence{Seed: sc.Seed, Events: [2]uint64{a.Events(), b.Events()}, Block: b.Diverged()}
	if d.Block >= 0 {
		// The first run kept only its marks: a run that agrees with it up
		// to the end of the diverging block gives its side. A run that
		// diverges from it there too is tried again, up to keepTries
		// runs in all; if none agrees, the last one's side is shown as
		// that run's.
		var c *sim.Recorder
		for try := 0; try < keepTries; try++ {
			c = sim.Keep(a.Marks(), d.Block)
			if _, err := run(c, false); err != nil {
				return first, err
			}
			if stopped() {
				return first, ErrNotCompared
			}
			if c.Diverged() < 0 || c.Diverged() > d.Block {
				break
			}
		}
		if c.Diverged() >= 0 && c.Diverged() <= d.Block {
			d.FirstIsAnother = true
			d.Note = fmt.Sprintf("%d more runs, each meant to give the first run's side, diverged from the first run too (the last one at events %d-%d): the order of events changes from run to run; the first side shown is the last of those runs'",
				keepTries, c.Diverged()*sim.BlockEvents+1, (c.Diverged()+1)*sim.BlockEvents)
		}
		d.First, d.Second = sim.FirstDifference(c.Kept(), b.Kept())
	}
	x, err := ProtocolJSON(first.Summary)
	if err != nil {
		return first, err
	}
	y, err := ProtocolJSON(second.Summary)
	if err != nil {
		return first, err
	}
	if !bytes.Equal(x, y) {
		var l, r string
		d.Line, l, r = FirstLineDifference(string(x), string(y))
		d.Lines = [2]string{l, r}
	}
	if d.Block < 0 && d.Line == 0 {
		return first, nil
	}
	return first, d
}

// FirstLineDifference is the first line (from 1) at which two texts
// differ, with both sides ("" past a text's end); 0 when they do not.
func FirstLineDifference(a, b string) (line int, x, y string) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		x, y = "", ""
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return i + 1, x, y
		}
	}
	return 0, "", ""
}
