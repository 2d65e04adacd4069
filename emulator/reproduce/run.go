package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

// Report is an experiment as reproduced: what ran and every finding
// judged. It is reproduce.json.
type Report struct {
	Experiment string `json:"experiment"`
	File       string `json:"file"`
	Paper      string `json:"paper"`
	Section    string `json:"section,omitempty"`
	Figure     string `json:"figure,omitempty"`
	Title      string `json:"title,omitempty"`
	// Seeds are the replicates' seeds; JudgingSeeds the experiment's own
	// (its seeds:, fixed before the run), which Seeds differ from in a
	// variant (--seed/--seeds); TunedOn the seeds its readings were
	// chosen on, never judged on.
	Seeds        []uint64 `json:"seeds"`
	JudgingSeeds []uint64 `json:"judging_seeds"`
	TunedOn      []uint64 `json:"tuned_on,omitempty"`
	Scale        float64  `json:"scale"`
	// Driver is the driver every run ran on: sim (the default: virtual
	// time, one goroutine a run) or emulator (actors over NATS at each
	// run's time scale).
	Driver string `json:"driver"`
	// Set are the overrides every run had (--set): a variant of the
	// experiment, not the experiment itself.
	Set []string `json:"set,omitempty"`
	// Axes are the sweep's axes (values as written in the experiment).
	Axes []scenario.ExperimentAxis `json:"axes"`
	// Metrics are the summary.json paths every run recorded: the
	// findings' and the experiment's figures.
	Metrics  []string  `json:"metrics"`
	Findings []Finding `json:"findings"`
	// Verdict is the worst of the findings' verdicts.
	Verdict string `json:"verdict"`
	// Runs are every run's figures; RunsPlanned how many the plan had
	// (fewer ran when the reproduction was interrupted).
	Runs        []Measurement  `json:"runs"`
	RunsPlanned int            `json:"runs_planned"`
	Outcomes    map[string]int `json:"outcomes"`
	Interrupted bool           `json:"interrupted"`
	// Date is when the reproduction started (UTC, RFC 3339).
	Date        string  `json:"date,omitempty"`
	WallSeconds float64 `json:"wall_seconds"`
}

// SeedsVariant reports whether the replicates ran on other seeds than the
// experiment's judging seeds (--seed/--seeds, --smoke).
func (r *Report) SeedsVariant() bool {
	return len(r.JudgingSeeds) > 0 && !slices.Equal(r.Seeds, r.JudgingSeeds)
}

// Config is how Execute runs an experiment.
type Config struct {
	Options
	// Parallel runs this many runs at once (each is one goroutine of the
	// deterministic driver); at least 1.
	Parallel int
	// Driver runs every run: emulator.DriverSim ("" too) or
	// emulator.DriverLive.
	Driver string
	// Dir receives each run's results under runs/<run name>/; "" writes
	// none.
	Dir string
	// Progress, if set, is told when a run starts (i of n).
	Progress func(i, n int, r Run)
}

// Execute plans base's experiment, runs every run on cfg.Driver (the
// deterministic driver unless it says otherwise) and judges the findings. A cancelled ctx stops it: the runs under
// way end as interrupted, no new one starts, and the report judges what
// was measured (Interrupted set).
func Execute(ctx context.Context, name string, base scenario.Scenario, cfg Config) (*Report, error) {
	start := time.Now()
	if cfg.Driver == "" {
		cfg.Driver = emulator.DriverSim
	}
	runs, err := Plan(base, cfg.Options)
	if err != nil {
		return nil, err
	}
	e := base.Experiment
	rep := &Report{Experiment: name, File: base.Source, Paper: e.Paper, Section: e.Section, Figure: e.Figure, Title: e.Title,
		Seeds: cfg.Seeds, JudgingSeeds: e.JudgingSeeds(), TunedOn: e.TunedOn, Date: start.UTC().Format(time.RFC3339),
		Scale: cfg.Scale, Driver: cfg.Driver, Set: cfg.Set, Axes: e.Vary, Metrics: e.Metrics(), RunsPlanned: len(runs), Outcomes: map[string]int{}}
	metricsUsed := e.Metrics()
	results := make([]*Measurement, len(runs))
	errs := make([]error, len(runs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(1, cfg.Parallel); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = runOne(ctx, e, runs[i], metricsUsed, cfg.Dir, cfg.Driver)
			}
		}()
	}
	for i, r := range runs {
		if ctx.Err() != nil {
			break
		}
		if cfg.Progress != nil {
			cfg.Progress(i+1, len(runs), r)
		}
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	for i, m := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s: %w", runs[i].Name(e.Vary), errs[i])
		}
		if m == nil {
			rep.Interrupted = true
			continue
		}
		if m.Outcome == emulator.OutcomeInterrupted {
			rep.Interrupted = true
			continue // a run cut short measured something else
		}
		rep.Runs = append(rep.Runs, *m)
		rep.Outcomes[m.Outcome]++
	}
	rep.Findings = Judge(e, rep.Runs, rep.Seeds)
	rep.Verdict = Worst(rep.Findings)
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

// runOne runs r on driver and reads the findings' metrics from its
// summary.
func runOne(ctx context.Context, e *scenario.Experiment, r Run, metricsUsed []string, dir, driver string) (*Measurement, error) {
	sc := r.Scenario
	m := metrics.NewRun(metrics.RunInfo{Driver: driver, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population, Scenario: sc.Name, Seed: sc.Seed})
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: driver, Metrics: m})
	if err != nil {
		return nil, err
	}
	out := &Measurement{Point: r.Point, Seed: r.Seed, Outcome: res.Summary.Outcome, Values: map[string]*float64{}}
	if dir != "" {
		out.Dir = filepath.Join("runs", r.Name(e.Vary))
		if err := res.WriteFiles(filepath.Join(dir, out.Dir)); err != nil {
			return nil, fmt.Errorf("writing results: %w", err)
		}
	}
	doc, err := asJSON(res.Summary)
	if err != nil {
		return nil, err
	}
	for _, path := range metricsUsed {
		out.Values[path] = lookup(doc, path)
	}
	return out, nil
}

func asJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc any
	return doc, json.Unmarshal(b, &doc)
}

// lookup is the number at a dotted path of a decoded JSON document (a
// boolean counts 0 or 1); nil when absent, null or not a number.
func lookup(doc any, path string) *float64 {
	cur := doc
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[k]; !ok {
			return nil
		}
	}
	switch v := cur.(type) {
	case float64:
		return &v
	case bool:
		x := 0.0
		if v {
			x = 1
		}
		return &x
	}
	return nil
}
