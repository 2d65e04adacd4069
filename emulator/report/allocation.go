package report

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/gridbed/gridbed/emulator"
)

// maxAllocationLines is the most machines the jobs-per-machine figure
// draws one line each for: the synthetic grid's 4, not AEOLUS's 70.
const maxAllocationLines = 8

// allocationFigure draws a 004 allocation run's jobs per machine over
// time (004 Fig 2; allocation.sample), one line per machine, the
// owner-load spikes marked.
func allocationFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Jobs per machine over time"
	a := res.Summary.Allocation
	if a == nil {
		return nil, Omitted{} // not an allocation run: nothing to say
	}
	s := res.Allocation
	if s == nil || len(s.Jobs) == 0 {
		return nil, Omitted{title, "no jobs-per-machine series: set allocation.sample (e.g. 100s)"}
	}
	if n := len(s.Jobs[0]); n > maxAllocationLines {
		return nil, Omitted{title, fmt.Sprintf("%d machines are too many lines for one figure: the series is in allocation.csv", n)}
	}
	p := newPlot(title, "emulated time (s)", "jobs on the machine")
	p.X.Min, p.Y.Min = 0, 0
	for i := range s.Jobs[0] {
		xys := make(plotter.XYs, len(s.Jobs))
		for k, row := range s.Jobs {
			xys[k] = plotter.XY{X: (time.Duration(k+1) * s.Interval).Seconds(), Y: float64(row[i])}
		}
		addLine(p, fmt.Sprintf("machine %d", i), i, xys, 0)
	}
	return &figure{Figure: Figure{Name: "allocation_jobs", Title: title, Caption: fmt.Sprintf(
		"The jobs running on each machine of the %s grid every %v (allocation.csv), under the %s allocator and the %s relocator, owner-load spikes %s (004 Fig 2 draws S_0, S_1 and S_3 with S_3's owner load rising to 0.95 at 1500 s).",
		a.Grid, s.Interval, a.Allocator, a.Relocator, a.Spikes)}, panels: []*plot.Plot{p}}, Omitted{}
}
