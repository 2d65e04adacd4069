package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator"
)

// TestProgressBar: every frame clears its line before it is drawn (a
// shorter frame leaves nothing of a longer one), says what its lag and
// times are (wall or emulated) and how much wall time is left; a log line
// written meanwhile goes above the bar, which is drawn again below it.
func TestProgressBar(t *testing.T) {
	var out bytes.Buffer
	p := newProgressBar(&out, "on")
	wall := 10 * time.Second
	p.now = func() time.Time { return p.started.Add(wall) }
	sample := func(at time.Duration, members, broken int) emulator.Sample {
		var s emulator.Sample
		s.T, s.Duration, s.LagP99 = at, 10*time.Minute, 0.0012
		s.Oracle.Members, s.Oracle.BrokenLinks = members, broken
		return s
	}
	p.update(sample(5*time.Minute, 100000, 12345))
	long := out.String()
	if !strings.HasPrefix(long, clearLine) {
		t.Fatalf("the frame does not clear its line first: %q", long)
	}
	for _, want := range []string{" 50.0%", "5m0s / 10m0s emulated", "lag p99 1.2ms wall", "10s wall", "ETA 10s"} {
		if !strings.Contains(long, want) {
			t.Errorf("frame %q lacks %q", long, want)
		}
	}
	out.Reset()
	wall = 18 * time.Second
	p.update(sample(9*time.Minute, 3, 0))
	if short := out.String(); !strings.HasPrefix(short, clearLine) || !strings.Contains(short, "ETA 2s") || len(short) >= len(long) {
		t.Errorf("the shorter frame %q (after %q)", short, long)
	}
	// A log line: the bar cleared, the line, the bar again.
	out.Reset()
	frame := p.frame
	slog.New(slog.NewTextHandler(p.writer(), nil)).Warn("the emulator is falling behind", "lag_emulated_seconds", 0.5)
	got := out.String()
	if !strings.HasPrefix(got, clearLine) || !strings.Contains(got, "msg=\"the emulator is falling behind\"") || !strings.HasSuffix(got, "\n"+frame) {
		t.Errorf("a log line while the bar is drawn: %q", got)
	}
	out.Reset()
	p.done()
	if out.String() != "\n" {
		t.Errorf("done: %q", out.String())
	}
	// Off: nothing drawn, text written as it is.
	out.Reset()
	q := newProgressBar(&out, "off")
	q.update(sample(time.Minute, 1, 0))
	q.writer().Write([]byte("note\n"))
	q.done()
	if out.String() != "note\n" {
		t.Errorf("bar off: %q", out.String())
	}
	if eta(0, time.Second) != "ETA …" || eta(1, time.Second) != "ETA 0s" || eta(0.25, 3*time.Minute) != "ETA 9m0s" {
		t.Errorf("eta: %q %q %q", eta(0, time.Second), eta(1, time.Second), eta(0.25, 3*time.Minute))
	}
}
