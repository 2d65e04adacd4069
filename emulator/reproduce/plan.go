// Package reproduce runs a published experiment — a scenario file with an
// experiment block (scenario.Experiment) — as a sweep of replicated runs on
// the deterministic driver, and judges each of the paper's findings
// against what gridbed measured: the paper's value beside gridbed's mean
// and 95% confidence interval over the replicates, and a verdict
// (reproduced, consistent, ordering, not-reproduced, not-measurable,
// not-judged). docs/FIDELITY.md.
package reproduce

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// Options choose the replicates and the size of an experiment's runs.
type Options struct {
	// Seeds are the replicates' seeds, in order (at least one, each
	// once): the experiment's judging seeds unless the user chose others.
	Seeds []uint64
	// Scale multiplies the experiment's scaled keys (Experiment.Scale) by
	// Scale^exponent; 1 is the experiment's own size.
	Scale float64
	// Set are the overrides the base scenario was given (--set), recorded
	// in the report; Plan does not apply them.
	Set []string
}

// Run is one run of the plan: a point of the grid (one value per axis, as
// written in the experiment) and a replicate's seed.
type Run struct {
	Point []string
	Seed  uint64
	// Set are the overrides applied to the file's scenario, in order.
	Set      []string
	Scenario scenario.Scenario
}

// Name is a file-system friendly name of the run, e.g.
// "matchmaking.scheme=cent_workload.interarrival=15s_seed-1".
func (r Run) Name(axes []scenario.ExperimentAxis) string {
	var parts []string
	for i, a := range axes {
		parts = append(parts, a.Key+"="+r.Point[i])
	}
	parts = append(parts, fmt.Sprintf("seed-%d", r.Seed))
	return strings.Map(func(c rune) rune {
		if c == '/' || c == ' ' || c == ':' {
			return '-'
		}
		return c
	}, strings.Join(parts, "_"))
}

// Plan expands base's experiment into its runs: every point of the grid
// (first axis slowest) for every replicate, scaled by opts.Scale. Each
// run's scenario is validated; the first invalid one is the error.
func Plan(base scenario.Scenario, opts Options) ([]Run, error) {
	e := base.Experiment
	if e == nil {
		return nil, fmt.Errorf("%s has no experiment block — `gridbed reproduce` runs the files of examples/papers/", base.Source)
	}
	if len(opts.Seeds) == 0 {
		return nil, fmt.Errorf("no seed to run: give the replicates' seeds (the experiment's seeds: %v)", e.JudgingSeeds())
	}
	for i, s := range opts.Seeds {
		if slices.Contains(opts.Seeds[:i], s) {
			return nil, fmt.Errorf("seed %d is given twice — give each replicate's seed once", s)
		}
	}
	if !(opts.Scale > 0) || math.IsInf(opts.Scale, 0) {
		return nil, fmt.Errorf("--scale %v: write a factor above 0, e.g. 0.1 for a tenth of the peers and jobs", opts.Scale)
	}
	points := [][]string{{}}
	for _, a := range e.Vary {
		var next [][]string
		for _, p := range points {
			for _, v := range a.Values {
				next = append(next, append(append([]string(nil), p...), v))
			}
		}
		points = next
	}
	var runs []Run
	for _, p := range points {
		for _, seed := range opts.Seeds {
			set := []string{"seed=" + strconv.FormatUint(seed, 10)}
			values := map[string]string{}
			for i, a := range e.Vary {
				values[a.Key] = p[i]
			}
			for _, r := range e.Scale {
				if _, ok := values[r.Key]; !ok {
					v, _ := base.Value(r.Key)
					values[r.Key] = v
				}
			}
			scaled := map[string]bool{}
			for _, r := range e.Scale {
				if opts.Scale == 1 {
					break
				}
				v, err := ScaleValue(values[r.Key], math.Pow(opts.Scale, r.Exponent))
				if err != nil {
					return nil, fmt.Errorf("%s: scaling %s: %v", base.Source, r.Key, err)
				}
				values[r.Key], scaled[r.Key] = v, true
			}
			for _, a := range e.Vary {
				set = append(set, a.Key+"="+values[a.Key])
			}
			for _, r := range e.Scale {
				if scaled[r.Key] && e.Axis(r.Key) == nil {
					set = append(set, r.Key+"="+values[r.Key])
				}
			}
			sc := base
			if err := sc.SetAll(set...); err != nil {
				return nil, fmt.Errorf("the point %s at scale %v: %w", strings.Join(p, ", "), opts.Scale, err)
			}
			runs = append(runs, Run{Point: p, Seed: seed, Set: set, Scenario: sc})
		}
	}
	return runs, nil
}

// ScaleValue multiplies a scenario value written as text by f: whole
// numbers stay whole (rounded, at least 1), durations are rounded to the
// millisecond (at least 1 ms), other numbers are multiplied.
func ScaleValue(text string, f float64) (string, error) {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return strconv.FormatInt(max(1, int64(math.Round(float64(n)*f))), 10), nil
	}
	if x, err := strconv.ParseFloat(text, 64); err == nil {
		return strconv.FormatFloat(x*f, 'g', -1, 64), nil
	}
	if d, err := time.ParseDuration(text); err == nil {
		return max(time.Millisecond, time.Duration(float64(d)*f).Round(time.Millisecond)).String(), nil
	}
	return "", fmt.Errorf("%q is neither a number nor a duration, so it cannot be scaled — drop it from the experiment's scale", text)
}
