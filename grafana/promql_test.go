package grafana

// A small type checker for the dashboards' PromQL: every series must be
// one gridbed exports (checked against the registry of a real simulated
// run), with the labels and label values it has; rate and increase apply
// to counters, delta and deriv to gauges; the labels of a result are
// tracked through functions, aggregations and vector matches, so that a
// grouping by a missing label or a match that can never pair is found
// without a Prometheus server.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/metrics"
)

var promql = parser.NewParser(parser.Options{})

// family is one metric family of the registry: its type and every label
// with the values it had.
type family struct {
	typ    dto.MetricType
	labels map[string]map[string]bool
}

type registry map[string]*family

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// openLabels have values that depend on the run (a dashboard must not
// expect particular ones); other labels' values are fixed sets that a
// run shows in full.
var openLabels = map[string]bool{"scheme": true, "driver": true, "mode": true, "population": true, "scenario": true, "seed": true, "run_id": true}

func registryOf(m *metrics.Run) (registry, error) {
	mfs, err := m.Registry.Gather()
	if err != nil {
		return nil, err
	}
	reg := registry{}
	for _, mf := range mfs {
		f := &family{typ: mf.GetType(), labels: map[string]map[string]bool{}}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if f.labels[l.GetName()] == nil {
					f.labels[l.GetName()] = map[string]bool{}
				}
				f.labels[l.GetName()][l.GetValue()] = true
			}
		}
		reg[mf.GetName()] = f
	}
	return reg, nil
}

// series is what a selector's metric name refers to.
type series struct {
	name, base string
	fam        *family
	suffix     string // "", "_bucket", "_sum" or "_count"
}

func (r registry) resolve(name string) (series, bool) {
	if f, ok := r[name]; ok {
		return series{name: name, base: name, fam: f}, true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		if f, ok := r[base]; ok && (f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_SUMMARY && suf != "_bucket") {
			return series{name: name, base: base, fam: f, suffix: suf}, true
		}
	}
	return series{}, false
}

func (s series) labels() map[string]bool {
	out := map[string]bool{}
	for l := range s.fam.labels {
		out[l] = true
	}
	for _, l := range targetLabels {
		out[l] = true
	}
	if s.suffix == "_bucket" {
		out["le"] = true
	}
	if s.fam.typ == dto.MetricType_SUMMARY && s.suffix == "" {
		out["quantile"] = true
	}
	return out
}

func (s series) counterLike() bool {
	return s.fam.typ == dto.MetricType_COUNTER || s.suffix != ""
}

var literalAlternation = regexp.MustCompile(`^[a-zA-Z0-9_:.\-]+(\|[a-zA-Z0-9_:.\-]+)*$`)

// checker checks one expression against the registry, collecting problems.
type checker struct {
	reg      registry
	problems []string
}

func (c *checker) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// check parses expr and returns the labels of its result.
func (c *checker) check(expr string) map[string]bool {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		c.errorf("does not parse: %v", err)
		return nil
	}
	return c.labels(e)
}

func (c *checker) selector(vs *parser.VectorSelector) (series, bool) {
	name := selectorName(vs)
	s, ok := c.reg.resolve(name)
	if !ok {
		c.errorf("metric %q is not in gridbed's registry", name)
		return s, false
	}
	if s.fam.typ == dto.MetricType_HISTOGRAM && s.suffix == "" {
		c.errorf("histogram %s has no series of that name: use %[1]s_bucket, _sum or _count", name)
	}
	have := s.labels()
	for _, m := range vs.LabelMatchers {
		if m.Name == "__name__" {
			continue
		}
		if !have[m.Name] {
			c.errorf("%s has no label %q (it has %v)", name, m.Name, sorted(have))
			continue
		}
		vals := s.fam.labels[m.Name]
		if openLabels[m.Name] || vals == nil || !literalAlternation.MatchString(m.Value) {
			continue
		}
		for _, v := range strings.Split(m.Value, "|") {
			if !vals[v] {
				c.errorf("%s{%s} never has the value %q (it has %v)", name, m.Name, v, sorted(vals))
			}
		}
	}
	return s, true
}

// selectors are the series an expression reads.
func (c *checker) selectors(n parser.Node) []series {
	var out []series
	parser.Inspect(n, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if s, ok := c.reg.resolve(selectorName(vs)); ok {
				out = append(out, s)
			}
		}
		return nil
	})
	return out
}

func selectorName(vs *parser.VectorSelector) string {
	for _, m := range vs.LabelMatchers {
		if m.Name == "__name__" {
			return m.Value
		}
	}
	return vs.Name
}

// labels returns the labels of n's result (nil for a scalar), checking
// every selector, function argument, grouping and vector match under n.
func (c *checker) labels(n parser.Node) map[string]bool {
	switch n := n.(type) {
	case *parser.VectorSelector:
		s, ok := c.selector(n)
		if !ok {
			return map[string]bool{}
		}
		return s.labels()
	case *parser.MatrixSelector:
		return c.labels(n.VectorSelector)
	case *parser.SubqueryExpr:
		return c.labels(n.Expr)
	case *parser.ParenExpr:
		return c.labels(n.Expr)
	case *parser.StepInvariantExpr:
		return c.labels(n.Expr)
	case *parser.UnaryExpr:
		return c.labels(n.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return nil
	case *parser.AggregateExpr:
		if n.Param != nil {
			c.labels(n.Param)
		}
		in := c.labels(n.Expr)
		for _, g := range n.Grouping {
			if !in[g] {
				c.errorf("%s by/without %q: the aggregated series have no such label (they have %v)", n.Op, g, sorted(in))
			}
		}
		switch {
		case n.Op == parser.TOPK || n.Op == parser.BOTTOMK || n.Op == parser.LIMITK || n.Op == parser.LIMIT_RATIO:
			return in
		case n.Without:
			out := copySet(in)
			for _, g := range n.Grouping {
				delete(out, g)
			}
			return out
		default:
			out := map[string]bool{}
			for _, g := range n.Grouping {
				out[g] = true
			}
			return out
		}
	case *parser.Call:
		var args []map[string]bool
		for _, a := range n.Args {
			args = append(args, c.labels(a))
		}
		switch n.Func.Name {
		case "rate", "irate", "increase", "resets":
			for _, s := range c.selectors(n.Args[0]) {
				if !s.counterLike() {
					c.errorf("%s(%s): %s is a %s, not a counter", n.Func.Name, s.name, s.base, strings.ToLower(s.fam.typ.String()))
				}
			}
		case "delta", "idelta", "deriv", "predict_linear":
			for _, s := range c.selectors(n.Args[0]) {
				if s.fam.typ != dto.MetricType_GAUGE || s.suffix != "" {
					c.errorf("%s(%s): %s is not a gauge", n.Func.Name, s.name, s.name)
				}
			}
		case "histogram_quantile":
			buckets := false
			for _, s := range c.selectors(n.Args[1]) {
				buckets = buckets || s.suffix == "_bucket"
			}
			if !buckets {
				c.errorf("histogram_quantile over no _bucket series")
			}
			if len(args) > 1 && !args[1]["le"] {
				c.errorf("histogram_quantile: the buckets lost their le label (keep it in the aggregation)")
			}
			out := copySet(args[1])
			delete(out, "le")
			return out
		case "scalar", "time", "pi":
			return nil // a scalar
		case "vector":
			return map[string]bool{}
		}
		for i, t := range n.Func.ArgTypes {
			if (t == parser.ValueTypeVector || t == parser.ValueTypeMatrix) && i < len(args) {
				return args[i]
			}
		}
		return map[string]bool{}
	case *parser.BinaryExpr:
		l, r := c.labels(n.LHS), c.labels(n.RHS)
		if l == nil || r == nil { // a scalar side: the vector's labels
			if l == nil {
				return r
			}
			return l
		}
		vm := n.VectorMatching
		if vm == nil {
			vm = &parser.VectorMatching{Card: parser.CardOneToOne}
		}
		for _, side := range []map[string]bool{l, r} {
			if vm.On {
				for _, m := range vm.MatchingLabels {
					if !side[m] {
						c.errorf("%s on(%s): a side lacks the label (it has %v)", n.Op, m, sorted(side))
					}
				}
			}
		}
		switch {
		case vm.Card == parser.CardManyToMany:
			return l
		case vm.Card == parser.CardOneToOne:
			ls, rs := matchSet(l, vm), matchSet(r, vm)
			if !slices.Equal(sorted(ls), sorted(rs)) {
				c.errorf("%s between series labelled %v and %v: no pair matches, the result is empty (aggregate both sides or use on/ignoring)", n.Op, sorted(l), sorted(r))
			}
			return ls // on: the matching labels; otherwise the left side's less ignoring
		default: // group_left / group_right: the "many" side's labels
			out := copySet(l)
			if vm.Card == parser.CardOneToMany {
				out = copySet(r)
			}
			for _, inc := range vm.Include {
				out[inc] = true
			}
			return out
		}
	}
	c.errorf("unexpected PromQL node %T", n)
	return map[string]bool{}
}

// matchSet is the labels two sides are matched on.
func matchSet(s map[string]bool, vm *parser.VectorMatching) map[string]bool {
	out := map[string]bool{}
	if vm.On {
		for _, m := range vm.MatchingLabels {
			if s[m] {
				out[m] = true
			}
		}
		return out
	}
	for l := range s {
		if !slices.Contains(vm.MatchingLabels, l) {
			out[l] = true
		}
	}
	return out
}

func copySet(s map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range s {
		out[k] = true
	}
	return out
}

func sorted[V any](s map[string]V) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runRegistry builds the registry the way gridbed run does and fills it
// with a short simulated run: a workload (so the job series exist), a
// crash fault and oracle samples, so every family has its labels and the
// fixed label sets (message types, overlay and job events, job states,
// fault kinds, drop reasons) all their values. The run happens once per
// test binary.
func runRegistry(t testing.TB) registry {
	t.Helper()
	simOnce.Do(func() { simReg, simErr = simulate() })
	if simErr != nil {
		t.Fatal(simErr)
	}
	return simReg
}

var (
	simOnce sync.Once
	simReg  registry
	simErr  error
)

func simulate() (registry, error) {
	sc, err := scenario.Parse("registry.yaml", []byte(`
name: grafana-registry
seed: 4
duration: 40m
peers: {count: 30, population: mixed, join_window: 1m}
overlay: {dimensions: 3}
link: {bandwidth: {up: 100Mbit, down: 100Mbit}}
workload: {jobs: 30, interarrival: 20s, runtime: 5m, start: 2m}
matchmaking: {scheme: can-p}
faults:
  - {at: 20m, crash: {fraction: 0.1}}
`))
	if err != nil {
		return nil, err
	}
	m := metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverSim, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverSim, Metrics: m})
	if err != nil {
		return nil, err
	}
	if err := res.CheckJobs(); err != nil {
		return nil, err
	}
	reg, err := registryOf(m)
	if err != nil {
		return nil, err
	}
	// The series only some runs have: the Wave scheduler's (its peers on
	// the bus, docs/WAVE.md), the heterogeneous CEs' (gridbed_job_ce_*,
	// peers holding GPUs, 002 §4.1) and allocation's (a 004 run).
	for _, r := range []struct{ name, doc string }{
		{"wave.yaml", `
name: grafana-wave
seed: 4
duration: 30h
peers: {count: 30, bootstrap: direct}
overlay: {dimensions: 1, heartbeat: {period: 10m}}
oracle: {interval: 1h}
wave: {strategy: wave-adaptive, engine: actors, runtime_min: 2h, runtime_max: 4h, submit_window: 6h, migration_bytes: 1024}
`},
		{"het.yaml", `
name: grafana-het
seed: 4
duration: 1h
peers: {count: 30, population: mixed, bootstrap: direct, ces: {gpu_types: 2, gpu_fraction: 0.5}}
overlay: {dimensions: 10}
workload: {jobs: 30, interarrival: 60s, runtime: 10m, kind: mixed, classes: nodes, constraint_ratio: 0.5, ces: {gpu_fraction: 0.3}, start: 2m}
matchmaking: {scheme: can-het}
`},
		{"alloc.yaml", `
name: grafana-allocation
seed: 4
duration: 100h
allocation: {grid: synthetic, jobset: 0, allocator: greedy, relocator: same, theta: 0.1, max_moves: 3}
`},
	} {
		if err := mergeRun(ctx, reg, r.name, r.doc); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// mergeRun runs the scenario doc on the deterministic driver with a
// registry of its own and adds to reg the families reg does not have.
func mergeRun(ctx context.Context, reg registry, name, doc string) error {
	sc, err := scenario.Parse(name, []byte(doc))
	if err != nil {
		return err
	}
	m := metrics.NewRun(metrics.RunInfo{Driver: emulator.DriverSim, Mode: sc.Overlay.Heartbeat.Mode.String(), Population: sc.Peers.Population})
	if _, err := emulator.Run(ctx, sc, emulator.Options{Driver: emulator.DriverSim, Metrics: m}); err != nil {
		return err
	}
	r, err := registryOf(m)
	if err != nil {
		return err
	}
	for k, f := range r {
		if _, ok := reg[k]; !ok {
			reg[k] = f
		}
	}
	return nil
}

// The checker itself must catch the mistakes it is there for.
func TestCheckerCatchesMistakes(t *testing.T) {
	reg := runRegistry(t)
	for _, tc := range []struct{ expr, want string }{
		{`gridbed_peer`, "not in gridbed's registry"},
		{`sum by (msg_type) (rate(gridbed_messages_total[1m]))`, `no such label`},
		{`rate(gridbed_peers[1m])`, "not a counter"},
		{`deriv(gridbed_messages_total[1m])`, "not a gauge"},
		{`gridbed_overlay_events_total{event="take_over"}`, `never has the value "take_over"`},
		{`gridbed_jobs{status="lost"}`, `has no label "status"`},
		{`sum(increase(gridbed_messages_total[1m])) / delta(gridbed_emulated_time_seconds[1m])`, "result is empty"},
		{`histogram_quantile(0.5, sum by (scheme) (rate(gridbed_job_wait_seconds_bucket[1m])))`, "lost their le"},
		{`histogram_quantile(0.5, rate(gridbed_job_wait_seconds_sum[1m]))`, "no _bucket"},
		{`gridbed_peers_bucket`, "not in gridbed's registry"},
		{`gridbed_clock_lag_seconds`, "no series of that name"},
		{`sum by (type) (rate(gridbed_messages_total[1m])) / on (type) gridbed_peers`, "a side lacks the label"},
		{`sum(rate(gridbed_messages_total[1m])`, "does not parse"},
	} {
		c := &checker{reg: reg}
		c.check(tc.expr)
		if !slices.ContainsFunc(c.problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("%s: problems %q, want one containing %q", tc.expr, c.problems, tc.want)
		}
	}
	for _, ok := range []string{
		`sum by (type) (increase(gridbed_messages_total[1m])) / scalar(sum(delta(gridbed_emulated_time_seconds[1m])))`,
		`gridbed_jobs{state=~"lost|duplicated"} > 0`,
		`sum(rate(gridbed_messages_total[1m])) / sum(gridbed_peers)`,
	} {
		c := &checker{reg: reg}
		if c.check(ok); len(c.problems) > 0 {
			t.Errorf("%s is correct, but the checker says %q", ok, c.problems)
		}
	}
	c := &checker{reg: reg}
	out := c.check(`histogram_quantile(0.99, sum by (scheme, le) (rate(gridbed_job_wait_seconds_bucket{scheme=~".+"}[1m])))`)
	if len(c.problems) > 0 || !out["scheme"] || out["le"] {
		t.Errorf("a correct quantile: problems %q, labels %v", c.problems, sorted(out))
	}
	if _, err := expand(`rate(x[$__rate_interval]) * $unknown`, nil); err == nil {
		t.Error("an unknown Grafana variable must be an error")
	}
	if got, _ := expand(`rate(x{s=~"${scheme}"}[$__rate_interval])`, map[string]string{"scheme": ".+"}); got != `rate(x{s=~".+"}[1m])` {
		t.Errorf("expand: %s", got)
	}
}
