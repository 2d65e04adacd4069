package report

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"github.com/gridbed/gridbed/emulator/reproduce"
)

// maxCDFLines is the most distributions one CDF figure draws; a group
// with more is omitted (the lines could not be told apart).
const maxCDFLines = 8

// jobDists are one run's per-job distributions, read from its jobs.csv:
// the completed jobs' waits and every matched job's matchmaking hops.
type jobDists struct {
	waits, hops []float64
}

// readJobDists reads the wait_seconds of the completed jobs and the hops
// of the matched ones from a run's jobs.csv (docs/RESULTS.md).
func readJobDists(path string) (jobDists, error) {
	f, err := os.Open(path)
	if err != nil {
		return jobDists{}, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return jobDists{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return jobDists{}, fmt.Errorf("%s: empty", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	wi, okW := col["wait_seconds"]
	hi, okH := col["hops"]
	oi, okO := col["outcome"]
	if !okW || !okH || !okO {
		return jobDists{}, fmt.Errorf("%s: no wait_seconds, hops or outcome column", path)
	}
	var d jobDists
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			continue
		}
		if v, err := strconv.ParseFloat(r[hi], 64); err == nil {
			d.hops = append(d.hops, v)
		}
		if r[oi] != "completed" {
			continue
		}
		if v, err := strconv.ParseFloat(r[wi], 64); err == nil {
			d.waits = append(d.waits, v)
		}
	}
	return d, nil
}

// cdfGroup is the runs drawn on one pair of CDF figures: the grid points
// sharing the value of the experiment's numeric axis (all of them
// without one), first replicate only.
type cdfGroup struct {
	label string // "workload.constraint_ratio=0.4", or "" for all points
	names []string
	dists []jobDists
}

// jobCDFFigures draws, per value of the experiment's numeric axis, the
// CDF of job wait (completed jobs; 000 §V, 002 Figs 5.3, 5.4) and the CDF
// of matchmaking hops (002 Fig 5.5), one line per grid point, from the
// first replicate's jobs.csv under dir. Experiments without a workload,
// and runs without a results directory, draw nothing; a jobs.csv that
// cannot be read, or a group of too many points, is returned as an
// Omitted.
func jobCDFFigures(dir string, rep *reproduce.Report) ([]*figure, []Omitted) {
	const what = "CDFs of job wait and matchmaking hops by grid point"
	if len(rep.Seeds) == 0 || len(rep.Runs) == 0 {
		return nil, nil
	}
	xAxis := -1
	for i, a := range rep.Axes {
		if len(a.Values) > 1 && numericAxis(a.Values) {
			xAxis = i
		}
	}
	var groups []*cdfGroup
	byLabel := map[string]*cdfGroup{}
	for _, m := range rep.Runs {
		if m.Seed != rep.Seeds[0] || m.Dir == "" {
			continue
		}
		d, err := readJobDists(filepath.Join(dir, m.Dir, "jobs.csv"))
		if err != nil {
			if os.IsNotExist(err) {
				continue // a run without a workload, or its files elsewhere
			}
			return nil, []Omitted{{what, err.Error()}}
		}
		label := ""
		var rest []string
		for i, v := range m.Point {
			if i == xAxis {
				label = rep.Axes[i].Key + "=" + v
				continue
			}
			rest = append(rest, v)
		}
		g := byLabel[label]
		if g == nil {
			g = &cdfGroup{label: label}
			byLabel[label] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, strings.Join(rest, ", "))
		g.dists = append(g.dists, d)
	}
	if len(groups) == 0 {
		return nil, nil // no workload, or no results directories
	}
	var figs []*figure
	var omitted []Omitted
	for k, g := range groups {
		at := ""
		if g.label != "" {
			at = " at " + g.label
		}
		if len(g.names) > maxCDFLines {
			omitted = append(omitted, Omitted{what + at, fmt.Sprintf("%d grid points, more than %d lines", len(g.names), maxCDFLines)})
			continue
		}
		var lines []waitLine
		hops := newPlot("CDF: fraction of matched jobs with at most x hops", "matchmaking hops", "fraction of matched jobs")
		for i, name := range g.names {
			lines = append(lines, waitLine{name: name, i: i, waits: g.dists[i].waits})
			if len(g.dists[i].hops) > 0 {
				addLine(hops, name, i, cdf(g.dists[i].hops), 0)
			}
		}
		hops.Y.Min, hops.Y.Max = 0, 1
		top, bottom, _ := waitPanels(lines, 0)
		top.Y.Label.Text = "fraction of completed jobs" // waitPanels counts submitted ones
		seed := rep.Seeds[0]
		figs = append(figs,
			&figure{Figure: Figure{Name: fmt.Sprintf("wait-cdf-%d", k+1), Title: "CDF of job wait by grid point" + at,
				Caption: fmt.Sprintf("Completed jobs' waits (jobs.csv wait_seconds), one line per grid point, seed %d; the tail below on a log scale.", seed)},
				panels: []*plot.Plot{top, bottom}},
			&figure{Figure: Figure{Name: fmt.Sprintf("hops-cdf-%d", k+1), Title: "CDF of matchmaking hops by grid point" + at,
				Caption: fmt.Sprintf("Hops from submission to the run node of every matched job (jobs.csv hops; 002 Fig 5.5), one line per grid point, seed %d.", seed)},
				panels: []*plot.Plot{hops}})
	}
	return figs, omitted
}
