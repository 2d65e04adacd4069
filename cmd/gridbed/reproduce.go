package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/report"
	"github.com/gridbed/gridbed/emulator/reproduce"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/examples/papers"
)

// reproduceFlags are gridbed reproduce's flags.
type reproduceFlags struct {
	list, smoke, strict, withReport bool
	judgeDir, out, driver, fidelity string
	seeds, parallel                 int
	seed                            uint64
	scale                           float64
	sets, record                    []string
}

func newReproduceCmd(stdout, stderr io.Writer) *cobra.Command {
	var f reproduceFlags
	c := &cobra.Command{
		Use:   "reproduce NAME…|all|FILE…",
		Short: "run a published experiment of examples/papers/ and judge the paper's findings",
		Long: `Runs a published experiment of examples/papers/ (embedded: works from any
directory) on the deterministic driver (--driver emulator: actors over
NATS at each run's time scale, one run at a time unless --parallel says
otherwise), one replicate per judging seed the file fixes (its
experiment.seeds; --seed/--seeds run others: a variant), and judges each of
the paper's findings against gridbed's mean and 95% interval (Student's t)
over the replicates:

  reproduced      the ordering holds over the whole interval and, for a
                  published number, the whole interval lies inside the
                  paper's value ± tolerance (30% unless the file says
                  otherwise); for a bound alone, the whole interval lies
                  past it
  consistent      the mean does, the interval not yet: more seeds needed
                  (the verdict's why says about how many)
  ordering        only the ordering holds
  not-reproduced  the mean is against the claim
  not-measurable  the quantity is undefined (a ratio over 0, a null metric)
  not-judged      fewer than 3 replicates, or one on a seed the file's
                  readings were chosen on (experiment.tuned_on)

Writes reproduce.md, reproduce.json, figures with the paper's values
beside gridbed's, and every run's results under runs/. --record DIR
--fidelity docs/FIDELITY.md keeps the reproductions in DIR in
docs/fidelity/record.json and renders docs/FIDELITY.md's tables from it.
docs/FIDELITY.md.

` + exitStatuses,
		Example: `  gridbed reproduce --list
  gridbed reproduce 003-fig6                   # on the file's judging seeds
  gridbed reproduce all --scale 0.1 --seeds 1  # a quick look: not judged
  gridbed reproduce 004-fig2 --driver emulator
  gridbed reproduce --judge results/reproduce-003-fig6
  gridbed reproduce all --out results/record && gridbed reproduce --record results/record --fidelity docs/FIDELITY.md`,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return append(papers.Names(), "all"), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return status(cmdReproduce(c, f, args, stdout, stderr))
		},
	}
	fs := c.Flags()
	fs.BoolVar(&f.list, "list", false, "name the experiments, with their paper, figure and title")
	fs.StringVar(&f.judgeDir, "judge", "", "judge again the runs an earlier reproduction recorded in DIR/reproduce.json against the experiment's findings as they are now, without running anything; rewrites DIR's reproduce.md, reproduce.json and figures")
	fs.IntVar(&f.seeds, "seeds", 0, "`N` replicates: the file's judging seeds cut or extended to N, or with --seed S the seeds S, S+1, …, S+N-1 (default: the file's seeds; other seeds are a variant)")
	fs.Uint64Var(&f.seed, "seed", 1, "the first seed `S` of the replicates instead of the file's judging seeds (a variant)")
	fs.StringSliceVar(&f.record, "record", nil, "keep the reproductions in `DIR` (a `gridbed reproduce` results directory, one experiment's or all's; repeatable) in the record beside the --fidelity page (fidelity/record.json) and render the page's tables from it; only reproductions on the judging seeds at the experiment's own size")
	fs.StringVar(&f.fidelity, "fidelity", "", "rewrite the generated section of `PAGE` (docs/FIDELITY.md) from its record (fidelity/record.json beside it), with --record's reproductions added first")
	fs.Float64Var(&f.scale, "scale", 1, "shrink the experiment: each scaled key (peers, jobs, and inter-arrival times to keep the load) × F^exponent (1: the experiment's size)")
	fs.BoolVar(&f.smoke, "smoke", false, "each experiment's reduced version (its smoke scale, one seed): seconds, for a quick look; --scale/--seeds still win")
	addSetFlag(fs, &f.sets, "`key=value`: override a scenario key in every run (not a vary key); repeatable — how the explaining experiments change one thing at a time")
	fs.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "runs at once (default: the number of CPUs; 1 with --driver emulator, whose runs keep wall time)")
	addChoiceFlag(c, &f.driver, "driver", emulator.DriverSim, []string{emulator.DriverSim, emulator.DriverLive},
		"sim: deterministic, virtual time; emulator: actors over embedded NATS at each run's time scale")
	fs.StringVar(&f.out, "out", "", "the results `DIR` (default results/reproduce-NAME)")
	fs.BoolVar(&f.strict, "strict", false, "exit 3 when a finding's verdict is anything but reproduced; with --smoke, when a run did not pass or a finding the experiment's smoke names does not hold (the smoke's one seed judges nothing)")
	fs.BoolVar(&f.withReport, "report", true, "write the figures and report.html (--report=false skips them)")
	return c
}

func cmdReproduce(c *cobra.Command, f reproduceFlags, pos []string, stdout, stderr io.Writer) int {
	fs := c.Flags()
	if f.list {
		return listExperiments(stdout, stderr)
	}
	if f.judgeDir != "" {
		return judgeAgain(f.judgeDir, pos, f.withReport, stdout, stderr)
	}
	if f.fidelity != "" || len(f.record) > 0 {
		return recordFidelity(f.fidelity, f.record, pos, stdout, stderr)
	}
	if len(pos) == 0 || len(pos) > 1 && slices.Contains(pos, "all") {
		fmt.Fprint(stderr, "gridbed reproduce: name experiments, all, or scenario files with an experiment block, e.g.\n  gridbed reproduce 003-fig6 --seeds 3\n  gridbed reproduce 001-fig10 002-fig4 --scale 0.1\n  gridbed reproduce all --scale 0.1 --seeds 1\n  gridbed reproduce --list\n")
		return 2
	}
	if flagGiven(fs, "seeds") && f.seeds < 1 || f.parallel < 1 || !(f.scale > 0) {
		fmt.Fprintln(stderr, "gridbed reproduce: --seeds and --parallel take 1 or more, --scale a factor above 0 (e.g. --scale 0.1)")
		return 2
	}
	type experiment struct {
		name string
		sc   scenario.Scenario
	}
	var exps []experiment
	seen := map[string]bool{}
	for _, name := range pos {
		switch {
		case name == "all":
			for _, n := range papers.Names() {
				sc, err := papers.Load(n)
				if err != nil {
					fmt.Fprintln(stderr, err)
					return 2
				}
				exps = append(exps, experiment{n, sc})
			}
		case strings.HasSuffix(name, ".yaml") || strings.ContainsRune(name, os.PathSeparator):
			sc, err := scenario.Load(name)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return 2
			}
			exps = append(exps, experiment{strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)), sc})
		default:
			sc, err := papers.Load(name)
			if err != nil {
				fmt.Fprintf(stderr, "gridbed reproduce: %v\n", err)
				return 2
			}
			exps = append(exps, experiment{name, sc})
		}
		if name != "all" {
			x := exps[len(exps)-1].name
			if seen[x] {
				fmt.Fprintf(stderr, "gridbed reproduce: %s is named twice — name each experiment once\n", x)
				return 2
			}
			seen[x] = true
		}
	}
	// Plan every experiment before running any: a bad file or scale is
	// refused at once.
	cfgs := make([]reproduce.Config, len(exps))
	for i, x := range exps {
		if x.sc.Experiment == nil {
			fmt.Fprintf(stderr, "gridbed reproduce: %s has no experiment block — see examples/papers/ and docs/FIDELITY.md for how to write one\n", x.sc.Source)
			return 2
		}
		for _, kv := range f.sets {
			key, _, _ := strings.Cut(kv, "=")
			if strings.TrimSpace(key) == "seed" {
				fmt.Fprintf(stderr, "gridbed reproduce: --set %s: the replicates' seeds come from --seed S and --seeds N — write --seed instead\n", kv)
				return 2
			}
			if x.sc.Experiment.Axis(strings.TrimSpace(key)) != nil {
				fmt.Fprintf(stderr, "gridbed reproduce: --set %s: %s is an axis of %s — its values are the experiment's; set another key, or write your own experiment file\n", kv, key, x.name)
				return 2
			}
		}
		if err := x.sc.SetAll(f.sets...); err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce: %s: %v\n", x.name, err)
			return 2
		}
		exps[i].sc = x.sc
		opts := reproduce.Options{Seeds: replicateSeeds(x.sc.Experiment, f, flagGiven(fs, "seed"), flagGiven(fs, "seeds")), Scale: f.scale, Set: f.sets}
		if f.smoke && !flagGiven(fs, "scale") {
			opts.Scale = x.sc.Experiment.Smoke.Scale
		}
		runs, err := reproduce.Plan(x.sc, opts)
		if err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce: %v\n", err)
			return 2
		}
		for _, r := range runs {
			if err := emulator.Admit(r.Scenario, f.driver, memoryLimit()); err != nil {
				fmt.Fprintf(stderr, "gridbed reproduce: %s %s: %v\n", x.name, r.Name(x.sc.Experiment.Vary), err)
				return 2
			}
		}
		parallel := f.parallel
		if f.driver == emulator.DriverLive && !flagGiven(fs, "parallel") {
			parallel = 1 // runs in wall time would share the machine's cores and fall behind together
		}
		cfgs[i] = reproduce.Config{Options: opts, Parallel: parallel, Driver: f.driver}
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join("results", "reproduce-"+pos[0])
		if len(pos) > 1 {
			dir += fmt.Sprintf("+%d", len(pos)-1)
		}
		if len(exps) == 1 {
			dir = filepath.Join("results", "reproduce-"+exps[0].name)
		}
	}
	od, err := prepareOut("--out", dir, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce: %v\n", err)
		return 2
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	var reps []*reproduce.Report
	notReproduced, smokeProblems, interrupted := 0, 0, false
	for i, x := range exps {
		sub := od.Dir()
		if len(exps) > 1 || pos[0] == "all" {
			sub = filepath.Join(od.Dir(), x.name)
		}
		cfg := cfgs[i]
		cfg.Dir = sub
		cfg.Progress = func(k, n int, r reproduce.Run) {
			fmt.Fprintf(stderr, "[%s %d/%d] %s\n", x.name, k, n, r.Name(x.sc.Experiment.Vary))
		}
		rep, err := reproduce.Execute(ctx, x.name, x.sc, cfg)
		if err != nil {
			od.Discard()
			fmt.Fprintf(stderr, "gridbed reproduce: %s: %v\n", x.name, err)
			return 1
		}
		if err := writeReproduction(sub, rep, f.withReport && !rep.Interrupted, stderr); err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce: %s: writing results: %v\n", x.name, err)
			return 1
		}
		reps = append(reps, rep)
		printFindings(stdout, rep)
		for _, f := range rep.Findings {
			if f.Verdict != reproduce.Reproduced {
				notReproduced++
			}
		}
		if f.smoke && f.strict && !rep.Interrupted {
			for _, p := range rep.SmokeProblems(x.sc.Experiment) {
				fmt.Fprintf(stdout, "smoke check failed: %s\n", p)
				smokeProblems++
			}
		}
		if rep.Interrupted {
			interrupted = true
			break
		}
	}
	if len(exps) > 1 || pos[0] == "all" {
		if err := writeIndex(od.Dir(), reps); err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce: writing the index: %v\n", err)
			return 1
		}
	}
	if err := od.Commit(); err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(od.final, "reproduce.md"))
	counts := map[string]int{}
	total := 0
	for _, r := range reps {
		for _, f := range r.Findings {
			counts[f.Verdict]++
			total++
		}
	}
	var tally []string
	for _, v := range reproduce.Verdicts {
		tally = append(tally, fmt.Sprintf("%d %s", counts[v], v))
	}
	line := fmt.Sprintf("%d findings of %d experiment(s): %s", total, len(reps), strings.Join(tally, ", "))
	switch {
	case interrupted:
		fmt.Fprintf(stdout, "outcome: INTERRUPTED — %s so far\n", line)
		return emulator.ExitInterrupted
	case f.strict && f.smoke && smokeProblems > 0:
		fmt.Fprintf(stdout, "outcome: FAILED — %d smoke check(s) failed; %s\n", smokeProblems, line)
		return emulator.ExitFailed
	case f.strict && f.smoke:
		fmt.Fprintf(stdout, "outcome: smoke passed — every run passed and every smoke finding held; %s\n", line)
		return 0
	case f.strict && notReproduced > 0:
		fmt.Fprintf(stdout, "outcome: %s\n", line)
		return emulator.ExitFailed
	}
	fmt.Fprintf(stdout, "outcome: %s\n", line)
	return 0
}

// writeReproduction writes one experiment's reproduce.json, reproduce.md
// and (withFigures) its figures and report.html into dir.
func writeReproduction(dir string, rep *reproduce.Report, withFigures bool, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "reproduce.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := rep.Markdown()
	if withFigures {
		// The figures are not worth the measurements: a drawing
		// failure is reported and the results are kept.
		if figs, err := report.WriteReproduce(dir, rep); err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce: %s: %v (the results are kept without figures)\n", rep.Experiment, err)
			md += fmt.Sprintf("\n## Figures\n\nNot drawn: %v.\n", err)
		} else {
			md += "\n## Figures\n\n"
			for _, f := range figs {
				md += fmt.Sprintf("![%s](%s)\n\n", f.Title, f.SVG())
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, "reproduce.md"), []byte(md), 0o644)
}

// writeIndex writes the top-level reproduce.md and reproduce.json of
// `reproduce all` (or several experiments): every finding of every
// experiment in one table.
func writeIndex(dir string, reps []*reproduce.Report) error {
	b, err := json.MarshalIndent(struct {
		Experiments []*reproduce.Report `json:"experiments"`
	}{reps}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "reproduce.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	md.WriteString("# gridbed reproduce: the papers' findings beside gridbed's\n\n" + reproduce.VerdictRules + "\n\n| experiment | seeds | finding | class | paper | gridbed (95% CI) | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, r := range reps {
		seeds := fmt.Sprint(r.Seeds)
		if r.SeedsVariant() {
			seeds += " (a variant)"
		}
		for _, f := range r.Findings {
			fmt.Fprintf(&md, "| [%s](%s/reproduce.md) | %s | %s | %s | %s | %s | %s |\n", r.Experiment, r.Experiment, seeds, f.ID, f.ClassText(), f.PaperText(), f.MeasuredText(), f.Verdict)
		}
	}
	return os.WriteFile(filepath.Join(dir, "reproduce.md"), []byte(md.String()), 0o644)
}

// printFindings prints an experiment's findings as a table.
func printFindings(w io.Writer, rep *reproduce.Report) {
	variant := ""
	if rep.SeedsVariant() {
		variant = fmt.Sprintf(" — a variant: the file's judging seeds are %v", rep.JudgingSeeds)
	}
	fmt.Fprintf(w, "%s (%s %s %s): %d runs on seeds %v%s, %.1f s wall\n", rep.Experiment, rep.Paper, rep.Section, rep.Figure, len(rep.Runs), rep.Seeds, variant, rep.WallSeconds)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  finding\tclass\tpaper\tgridbed (95% CI)\tverdict")
	for _, f := range rep.Findings {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", f.ID, f.ClassText(), f.PaperText(), f.MeasuredText(), f.Verdict)
	}
	tw.Flush()
}

// listExperiments prints the experiments with their paper and figure,
// the runs a seed costs, the scale --smoke runs them at and their judging
// seeds (.ci/run reads the smoke scale as the fifth column).
func listExperiments(stdout, stderr io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "experiment\tpaper\tfigure\truns\tsmoke\tseeds\ttitle")
	for _, n := range papers.Names() {
		sc, err := papers.Load(n)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		e := sc.Experiment
		if e == nil {
			fmt.Fprintf(stderr, "%s has no experiment block\n", sc.Source)
			return 2
		}
		points := 1
		for _, a := range e.Vary {
			points *= len(a.Values)
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%d per seed\t%g\t%v\t%s\n", n, e.Paper, e.Section, e.Figure, points, e.Smoke.Scale, e.JudgingSeeds(), e.Title)
	}
	tw.Flush()
	return 0
}

// judgeAgain re-judges the runs recorded in dir/reproduce.json against the
// findings of the experiment (by its name, or the file given) as they are
// now, and rewrites dir's reproduce.md, reproduce.json and figures.
func judgeAgain(dir string, pos []string, withFigures bool, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce --judge: %v — give the directory of an earlier `gridbed reproduce NAME`\n", err)
		return 2
	}
	var rep reproduce.Report
	if err := json.Unmarshal(b, &rep); err != nil || rep.Experiment == "" {
		fmt.Fprintf(stderr, "gridbed reproduce --judge: %s/reproduce.json is not one experiment's reproduction (%v) — give an experiment's own directory\n", dir, err)
		return 2
	}
	var sc scenario.Scenario
	switch {
	case len(pos) == 1:
		sc, err = scenario.Load(pos[0])
	case len(pos) == 0:
		sc, err = papers.Load(rep.Experiment)
	default:
		err = fmt.Errorf("give at most the experiment's file")
	}
	if err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce --judge: %v\n", err)
		return 2
	}
	e := sc.Experiment
	if e == nil || !sameAxes(e.Vary, rep.Axes) {
		fmt.Fprintf(stderr, "gridbed reproduce --judge: %s's sweep is not the one the runs in %s had — run the experiment again\n", sc.Source, dir)
		return 2
	}
	// A finding's metric the runs did not record cannot be judged; a
	// figure they did not record is left out.
	rep.Metrics = nil
	for _, m := range e.Metrics() {
		recorded := len(rep.Runs) == 0 || hasValue(rep.Runs, m)
		if !recorded && !slices.Contains(e.Figures, m) {
			fmt.Fprintf(stderr, "gridbed reproduce --judge: the runs in %s did not record %s — run the experiment again to measure it\n", dir, m)
			return 2
		}
		if recorded {
			rep.Metrics = append(rep.Metrics, m)
		}
	}
	// The judging and tuned seeds are the file's as it is now: a seed
	// found to be tuned since is never judged on.
	rep.JudgingSeeds, rep.TunedOn = e.JudgingSeeds(), e.TunedOn
	rep.Findings = reproduce.Judge(e, rep.Runs, rep.Seeds)
	rep.Verdict = reproduce.Worst(rep.Findings)
	if err := writeReproduction(dir, &rep, withFigures && !rep.Interrupted, stderr); err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce --judge: %v\n", err)
		return 1
	}
	printFindings(stdout, &rep)
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(dir, "reproduce.md"))
	return 0
}

// sameAxes reports whether two sweeps have the same axes and values.
func sameAxes(a, b []scenario.ExperimentAxis) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || strings.Join(a[i].Values, ",") != strings.Join(b[i].Values, ",") {
			return false
		}
	}
	return true
}

// hasValue reports whether the runs recorded metric m.
func hasValue(runs []reproduce.Measurement, m string) bool {
	_, ok := runs[0].Values[m]
	return ok
}

// replicateSeeds are the seeds an experiment's replicates run on: the
// file's judging seeds; with --seed S, S, S+1, … (as many as --seeds N
// says, else as many as the file has); with --seeds N alone, the file's
// seeds cut to N or extended past the last one; with --smoke, one seed
// (--seed's, 1 by default) unless --seeds says more.
func replicateSeeds(e *scenario.Experiment, f reproduceFlags, seedGiven, seedsGiven bool) []uint64 {
	file := e.JudgingSeeds()
	n := len(file)
	if seedsGiven {
		n = f.seeds
	}
	if f.smoke && !seedsGiven {
		n = 1
	}
	if seedGiven || f.smoke {
		out := make([]uint64, n)
		for i := range out {
			out[i] = f.seed + uint64(i)
		}
		return out
	}
	out := append([]uint64(nil), file[:min(n, len(file))]...)
	for len(out) < n {
		out = append(out, out[len(out)-1]+1)
	}
	return out
}

// recordFidelity adds the reproductions in dirs to the record beside page
// (fidelity/record.json) and rewrites page's generated section from it.
// A reproduction that is not the experiment as its file defines it (other
// seeds, another scale, --set, interrupted) is refused, as is a page
// without the section's markers.
func recordFidelity(page string, dirs, pos []string, stdout, stderr io.Writer) int {
	if page == "" || len(pos) > 0 {
		fmt.Fprintln(stderr, "gridbed reproduce --record: name the page to render with --fidelity and no experiment, e.g.\n  gridbed reproduce --record results/record --fidelity docs/FIDELITY.md")
		return 2
	}
	text, err := os.ReadFile(page)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce --fidelity: %v\n", err)
		return 2
	}
	recPath := RecordPath(page)
	var rec reproduce.Record
	if b, err := os.ReadFile(recPath); err == nil {
		if err := json.Unmarshal(b, &rec); err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce --fidelity: %s: %v — it is written by this command only; restore it from git\n", recPath, err)
			return 2
		}
	} else if !os.IsNotExist(err) {
		fmt.Fprintf(stderr, "gridbed reproduce --fidelity: %v\n", err)
		return 2
	}
	names := papers.Names()
	for _, dir := range dirs {
		reps, err := readReproductions(dir)
		if err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce --record: %v\n", err)
			return 2
		}
		for _, rep := range reps {
			if !slices.Contains(names, rep.Experiment) {
				fmt.Fprintf(stderr, "gridbed reproduce --record: %s in %s is not an experiment of examples/papers — the record holds the papers' experiments only\n", rep.Experiment, dir)
				return 2
			}
			if why := reproduce.Recordable(rep); why != "" {
				fmt.Fprintf(stderr, "gridbed reproduce --record: %s in %s cannot be recorded: %s — run `gridbed reproduce %s` as the file defines it\n", rep.Experiment, dir, why, rep.Experiment)
				return 2
			}
			rec.Put(reproduce.Trim(rep))
			fmt.Fprintf(stdout, "recorded %s: %d runs on seeds %v, verdict %s\n", rep.Experiment, len(rep.Runs), rep.Seeds, rep.Verdict)
		}
	}
	rendered, err := renderFidelity(string(text), rec)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce --fidelity: %s: %v\n", page, err)
		return 2
	}
	rec.Note = reproduce.RecordNote
	if len(dirs) > 0 {
		b, err := json.MarshalIndent(rec, "", "  ")
		if err == nil {
			err = os.WriteFile(recPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "gridbed reproduce --record: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "record: %s\n", recPath)
	}
	if err := os.WriteFile(page, []byte(rendered), 0o644); err != nil {
		fmt.Fprintf(stderr, "gridbed reproduce --fidelity: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "page: %s (%d of %d experiments recorded)\n", page, len(rec.Experiments), len(names))
	return 0
}

// RecordPath is where the record of page lives: fidelity/record.json
// beside it.
func RecordPath(page string) string {
	return filepath.Join(filepath.Dir(page), "fidelity", "record.json")
}

// renderFidelity is page with its generated section rendered from rec
// for every experiment of examples/papers.
func renderFidelity(page string, rec reproduce.Record) (string, error) {
	var exps []reproduce.Named
	for _, n := range papers.Names() {
		sc, err := papers.Load(n)
		if err != nil {
			return "", err
		}
		exps = append(exps, reproduce.Named{Name: n, Experiment: sc.Experiment})
	}
	return reproduce.ReplaceGenerated(page, reproduce.FidelitySection(rec, exps))
}

// readReproductions reads dir/reproduce.json: one experiment's
// reproduction, or the index of several (`reproduce all`), each judged
// as the index holds it.
func readReproductions(dir string) ([]*reproduce.Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil {
		return nil, fmt.Errorf("%v — give the directory of an earlier `gridbed reproduce`", err)
	}
	var index struct {
		Experiment  string              `json:"experiment"`
		Experiments []*reproduce.Report `json:"experiments"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("%s/reproduce.json: %v", dir, err)
	}
	if index.Experiment == "" {
		if len(index.Experiments) == 0 {
			return nil, fmt.Errorf("%s/reproduce.json holds no reproduction", dir)
		}
		return index.Experiments, nil
	}
	var rep reproduce.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s/reproduce.json: %v", dir, err)
	}
	return []*reproduce.Report{&rep}, nil
}
