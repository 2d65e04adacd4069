package report

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator"
)

func waveSeries(res *emulator.Result) bool {
	return len(res.Series) > 0 && res.Series[len(res.Series)-1].Wave != nil
}

const waveOff = "the Wave run's event loop takes no oracle samples: run it with wave.engine actors"

// waveDayFigure draws the hosts' availability over the day (001 §V-A):
// for each UTC hour of the emulated calendar, the share of running hosts
// available in their current hour, by wavezone, averaged over the run's
// samples at that hour.
func waveDayFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Host availability over the day"
	if !res.Scenario.Wave.On() {
		return nil, Omitted{} // not a Wave run: nothing to say
	}
	if !waveSeries(res) {
		return nil, Omitted{title, waveOff}
	}
	start := res.Scenario.Clock.Start
	var avail, hosts [24][wave.Wavezones]float64
	for _, s := range res.Series {
		if s.Wave == nil {
			continue
		}
		h := int(((start + s.T) % (24 * time.Hour)) / time.Hour)
		for z := range wave.Wavezones {
			avail[h][z] += float64(s.Wave.Available[z])
			hosts[h][z] += float64(s.Wave.Hosts[z])
		}
	}
	p := newPlot("Hosts available in their current hour", "UTC hour of day", "share of running hosts")
	for z := range wave.Wavezones {
		var xys plotter.XYs
		for h := range 24 {
			if hosts[h][z] > 0 {
				xys = append(xys, plotter.XY{X: float64(h), Y: avail[h][z] / hosts[h][z]})
			}
		}
		addLine(p, fmt.Sprintf("wavezone %d (UTC+%d…%d h)", z, z*wave.TimezonesPerWave, z*wave.TimezonesPerWave+wave.TimezonesPerWave-1), z, xys, 0)
	}
	p.Y.Min, p.Y.Max = 0, 1
	return &figure{Figure: Figure{Name: "wave_availability", Title: title, Caption: fmt.Sprintf(
		"For each UTC hour of the emulated calendar (clock.start %v), the share of running hosts whose current hourly slot is available (001 §V-A: local night 0–6 h always, each daytime hour with probability wave.day_free %.2f), by wavezone, averaged over the oracle samples at that hour: the night moving westwards round the world.",
		start, res.Scenario.Wave.DayFree)}, panels: []*plot.Plot{p}}, Omitted{}
}

// waveZonesFigure draws the jobs on hosts by the hosts' wavezone over
// time: where the strategy moved them (001 §III-B).
func waveZonesFigure(res *emulator.Result) (*figure, Omitted) {
	const title = "Jobs by wavezone over time"
	if !res.Scenario.Wave.On() {
		return nil, Omitted{} // not a Wave run: nothing to say
	}
	if !waveSeries(res) {
		return nil, Omitted{title, waveOff}
	}
	p := newPlot("Jobs on hosts by the hosts' wavezone", "emulated time (h)", "jobs")
	for z := range wave.Wavezones {
		var xys plotter.XYs
		for _, s := range res.Series {
			if s.Wave != nil {
				xys = append(xys, plotter.XY{X: s.T.Hours(), Y: float64(s.Wave.Jobs[z])})
			}
		}
		addLine(p, fmt.Sprintf("wavezone %d", z), z, xys, 0)
	}
	var done, failed plotter.XYs
	for _, s := range res.Series {
		if s.Wave != nil {
			done = append(done, plotter.XY{X: s.T.Hours(), Y: float64(s.Wave.Completed)})
			failed = append(failed, plotter.XY{X: s.T.Hours(), Y: float64(s.Wave.Failed)})
		}
	}
	q := newPlot("Jobs completed and failed so far", "emulated time (h)", "jobs")
	addLine(q, "completed", 0, done, 2)
	addLine(q, "failed", 1, failed, 0)
	return &figure{Figure: Figure{Name: "wave_wavezones", Title: title, Caption: fmt.Sprintf(
		"Top: Wave jobs on a host, running or suspended, by the host's wavezone at each oracle sample (strategy %s). Bottom: jobs completed and failed so far (001 §V-B).",
		res.Scenario.Wave.Strategy)}, panels: []*plot.Plot{p, q}}, Omitted{}
}
