package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gridbed/gridbed/emulator"
)

// progressBar draws a run's emulated progress on one line of a terminal,
// redrawn in place at every oracle sample: the share done, emulated time,
// peers, broken links, the clock lag (wall), the wall time so far and an
// estimate of the wall time left. Each frame clears the line before it is
// drawn (a shorter frame leaves nothing of a longer one), and what else is
// written to the terminal meanwhile — log lines, notices — goes through
// writer(), which clears the bar, writes the text above it and draws the
// bar again below.
type progressBar struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	started time.Time
	now     func() time.Time
	frame   string // the last frame drawn ("" none)
}

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// newProgressBar draws on w when mode is on, or auto and w is a terminal.
func newProgressBar(w io.Writer, mode string) *progressBar {
	on := mode == "on"
	if mode == "auto" {
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				on = true
			}
		}
	}
	return &progressBar{w: w, on: on, started: time.Now(), now: time.Now}
}

// update draws the frame of sample s.
func (p *progressBar) update(s emulator.Sample) {
	if !p.on || s.Duration <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frame = p.render(s, p.now().Sub(p.started))
	fmt.Fprint(p.w, clearLine+p.frame)
}

// render is the frame of sample s after wall time of running.
func (p *progressBar) render(s emulator.Sample, wall time.Duration) string {
	const width = 24
	frac := min(max(float64(s.T)/float64(s.Duration), 0), 1)
	n := int(frac * width)
	bar := strings.Repeat("█", n) + strings.Repeat("░", width-n)
	return fmt.Sprintf("%s %5.1f%%  %v / %v emulated  peers %d  broken links %d  lag p99 %s wall  %s wall, %s",
		bar, 100*frac, s.T.Round(time.Second), s.Duration, s.Oracle.Members, s.Oracle.BrokenLinks,
		time.Duration(s.LagP99*float64(time.Second)).Round(time.Microsecond), wall.Round(100*time.Millisecond), eta(frac, wall))
}

// eta estimates the wall time left when frac of the run took wall: the
// rest at the pace so far.
func eta(frac float64, wall time.Duration) string {
	switch {
	case frac >= 1:
		return "ETA 0s"
	case frac <= 0 || wall <= 0:
		return "ETA …"
	}
	left := time.Duration(float64(wall) * (1 - frac) / frac)
	if left >= time.Minute {
		left = left.Round(time.Second)
	} else {
		left = left.Round(100 * time.Millisecond)
	}
	return "ETA " + left.String()
}

// writer is where the run's other output goes while the bar is drawn:
// above the bar, or straight to the terminal without one.
func (p *progressBar) writer() io.Writer {
	if !p.on {
		return p.w
	}
	return barWriter{p}
}

// barWriter writes text above the bar.
type barWriter struct{ p *progressBar }

// Write clears the bar's line, writes b (a whole line, or it is ended
// with one) and draws the bar again below it.
func (b barWriter) Write(data []byte) (int, error) {
	p := b.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frame != "" {
		fmt.Fprint(p.w, clearLine)
	}
	if _, err := p.w.Write(data); err != nil {
		return 0, err
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(p.w)
	}
	if p.frame != "" {
		fmt.Fprint(p.w, p.frame)
	}
	return len(data), nil
}

// done ends the bar's line: what follows starts on a line of its own.
func (p *progressBar) done() {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frame != "" {
		fmt.Fprintln(p.w)
		p.frame = ""
	}
}
