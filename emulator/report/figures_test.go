package report

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/sweep"
)

// TestSweepWhiskersWithinDomain: a count whose replicates spread so wide
// that Student's t interval reaches below zero is drawn with its whisker
// cut at zero, the y axis from zero, the caption saying so with n; the bars
// lie inside the frame and the axes are in words.
func TestSweepWhiskersWithinDomain(t *testing.T) {
	axis := sweep.Axis{Key: "overlay.heartbeat.mode", Values: []string{"vanilla", "compact"}}
	col := "overlay.broken_links.mean"
	s := &Sweep{Axes: []sweep.Axis{axis}, Columns: []string{col}, Seeds: []uint64{1, 2, 3}}
	for i, v := range axis.Values {
		st := sweep.Aggregate([]any{0.0, 0.1 + float64(i), 2.2})
		if st.Lo >= 0 {
			t.Fatalf("the test needs an interval below zero: %+v", st)
		}
		s.points = append(s.points, point{values: []string{v}, stats: []sweep.Stat{st}, driver: "sim"})
	}
	f, o := s.columnFigure(0, col)
	if f == nil {
		t.Fatalf("not drawn: %+v", o)
	}
	p := f.panels[0]
	if p.Y.Min != 0 {
		t.Errorf("the y axis starts at %g, want 0 (no whisker below zero)", p.Y.Min)
	}
	if p.X.Min > -0.5 || p.X.Max < float64(len(axis.Values))-0.5 {
		t.Errorf("x axis %g…%g: the bars at 0 and %d do not fit", p.X.Min, p.X.Max, len(axis.Values)-1)
	}
	for _, want := range []string{"n = 3", "cut at 0 where it reaches below: the quantity cannot be negative"} {
		if !strings.Contains(f.Caption, want) {
			t.Errorf("caption %q lacks %q", f.Caption, want)
		}
	}
	if p.X.Label.Text != "Heartbeat scheme" || p.Y.Label.Text != "Broken links, time average (links)" {
		t.Errorf("axes %q, %q: want words with units", p.X.Label.Text, p.Y.Label.Text)
	}
	// A share is cut to [0, 1]; a duration axis is drawn in seconds.
	s2 := &Sweep{Axes: []sweep.Axis{{Key: "churn.interval", Values: []string{"5s", "10s"}}}, Columns: []string{"overlay.uncovered_fraction"}, Seeds: []uint64{1, 2, 3}}
	for _, v := range []string{"5s", "10s"} {
		s2.points = append(s2.points, point{values: []string{v}, stats: []sweep.Stat{sweep.Aggregate([]any{0.0, 0.9, 1.0})}, driver: "sim"})
	}
	f2, _ := s2.columnFigure(0, "overlay.uncovered_fraction")
	if f2 == nil || !strings.Contains(f2.Caption, "cut to [0, 1]") || f2.panels[0].X.Label.Text != "Mean time between churn events (s)" {
		t.Fatalf("a share along a duration axis: %+v", f2)
	}
	if f2.panels[0].Y.Max > 1.06 {
		t.Errorf("a share's axis runs to %g", f2.panels[0].Y.Max)
	}
}

// TestLongYLabelBroken: a y label longer than the panel is high is drawn
// on two lines.
func TestLongYLabelBroken(t *testing.T) {
	p := newPlot("t", "x", "Node descriptions carried per node per minute (entries / node / min)")
	fitAxes(p)
	if !strings.Contains(p.Y.Label.Text, "\n") {
		t.Fatalf("label %q not broken", p.Y.Label.Text)
	}
	if p.Y.Label.TextStyle.Width(strings.Split(p.Y.Label.Text, "\n")[0]) > PanelHeight {
		t.Fatalf("first line of %q still longer than the panel", p.Y.Label.Text)
	}
	short := newPlot("t", "x", "peers")
	fitAxes(short)
	if short.Y.Label.Text != "peers" {
		t.Fatalf("a short label changed: %q", short.Y.Label.Text)
	}
}

func TestSegments(t *testing.T) {
	xys := plotter.XYs{{X: 0.5}, {X: 1}, {X: 1.5}, {X: 90}, {X: 90.5}, {X: 200}}
	got := segments(xys, 0.75)
	if len(got) != 3 || len(got[0]) != 3 || len(got[1]) != 2 || len(got[2]) != 1 {
		t.Fatalf("segments %v", got)
	}
	if n := len(segments(xys, 0)); n != 1 {
		t.Fatalf("gap 0 split into %d", n)
	}
	if n := len(segments(nil, 1)); n != 0 {
		t.Fatalf("no samples: %d segments", n)
	}
}

// TestRunFiguresBreakAndShade: a run whose oracle samples stop for a long
// stretch (as when an overloaded emulator cannot sample) draws its lines
// broken there, not straight across, and shades the stretches the
// emulator was behind and overloaded, saying so in the captions.
func TestRunFiguresBreakAndShade(t *testing.T) {
	res := simRun(t, `
name: gap
seed: 1
duration: 30m
peers: {count: 30, join_window: 1m}
oracle: {interval: 30s}
`)
	// Drop the samples from minute 5 to 25: a 20-minute hole.
	var kept []emulator.Sample
	for _, s := range res.Series {
		if m := s.T.Minutes(); m <= 5 || m > 25 {
			kept = append(kept, s)
		}
	}
	res.Series = kept
	behind, over := 240.0, 300.0
	res.Summary.Emulator = &emulator.LiveSummary{BehindAtSeconds: &behind, OverloadAtSeconds: &over, Aborted: true}
	dir := t.TempDir()
	page := writeReport(t, dir, res)
	var overlay *Figure
	for i := range page.Figures {
		if page.Figures[i].Name == "overlay" {
			overlay = &page.Figures[i]
		}
	}
	if overlay == nil {
		t.Fatal("no overlay figure")
	}
	if !strings.Contains(overlay.Caption, "Shaded: the emulator was behind its time scale from 4.0 min") || !strings.Contains(overlay.Caption, "overloaded and stopped at 5.0 min") {
		t.Errorf("caption: %s", overlay.Caption)
	}
	b, err := os.ReadFile(filepath.Join(dir, "figures", "overlay.svg"))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	// The peers line (the first color) is two paths: before and after
	// the hole.
	peers := regexp.MustCompile(`<path d="M[^"]*L[^"]*L[^"]*"\s+style="fill:none;stroke:#0072B2`).FindAllString(svg, -1)
	if len(peers) < 2 {
		t.Errorf("the peers line is %d path(s), want it broken at the missing samples", len(peers))
	}
	for _, want := range []string{"behind its time scale", "overloaded", "fill-opacity"} {
		if !strings.Contains(svg, want) {
			t.Errorf("overlay.svg lacks %q (the shading and its legend)", want)
		}
	}
	// No segment of the peers line spans the hole (20 of 30 minutes,
	// some 300 pt): consecutive points are a sample apart.
	for _, d := range peers {
		pts := regexp.MustCompile(`[ML]([\d.]+),`).FindAllStringSubmatch(d, -1)
		for i := 1; i < len(pts); i++ {
			a, _ := strconv.ParseFloat(pts[i-1][1], 64)
			c, _ := strconv.ParseFloat(pts[i][1], 64)
			if math.Abs(c-a) > 100 {
				t.Fatalf("the peers line steps %g pt across: drawn over the missing samples", c-a)
			}
		}
	}
}
