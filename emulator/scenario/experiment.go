package scenario

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Experiment is a scenario file's optional top-level `experiment:` block:
// the published experiment the scenario reproduces (paper, section,
// figure), the sweep that reproduces it, how `--scale` shrinks it, and the
// paper's findings with their published values, which `gridbed reproduce`
// compares with gridbed's. `gridbed run` ignores the block (the file is an
// ordinary scenario, one point of the sweep).
type Experiment struct {
	Paper   string // the paper, as in docs/PAPERS.md, e.g. "003"
	Section string // e.g. "§5.4"
	Figure  string // e.g. "Fig 6(a)"
	Title   string
	// Vary are the sweep's axes (the grid is their cartesian product, the
	// first axis slowest).
	Vary []ExperimentAxis
	// Scale says what `--scale F` does: each key's value × F^Exponent.
	Scale []ScaleRule
	// Smoke is the reduced version the test suite runs.
	Smoke Smoke
	// Seeds are the judging seeds, fixed before the run: `gridbed
	// reproduce` runs these replicates unless --seed/--seeds say otherwise
	// (at least 3; none written: 1, 2, 3).
	Seeds []uint64
	// TunedOn are the seeds on which the file's readings (its parameters,
	// its reading of the paper) were chosen: a verdict is never drawn from
	// a replicate on one of them.
	TunedOn  []uint64
	Findings []Finding
	// Figures are summary.json paths recorded and drawn beside the
	// findings' metrics, e.g. the utilization that says which load an
	// experiment ran at (003 Fig 5).
	Figures []string
}

// Metrics are the summary.json paths the experiment records: the
// findings' metrics, then its figures, each once.
func (e *Experiment) Metrics() []string {
	var out []string
	for _, f := range e.Findings {
		if !slices.Contains(out, f.Metric) {
			out = append(out, f.Metric)
		}
	}
	for _, m := range e.Figures {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// DefaultSeeds are the judging seeds of an experiment whose block names
// none.
var DefaultSeeds = []uint64{1, 2, 3}

// MinJudgingSeeds is the fewest replicates a verdict is drawn from.
const MinJudgingSeeds = 3

// JudgingSeeds are the seeds `gridbed reproduce` runs by default: the
// block's seeds, or DefaultSeeds.
func (e *Experiment) JudgingSeeds() []uint64 {
	if len(e.Seeds) > 0 {
		return e.Seeds
	}
	return DefaultSeeds
}

// ExperimentAxis is one varied key and its values, as written.
type ExperimentAxis struct {
	Key    string
	Values []string
}

// ScaleRule multiplies Key's value by F^Exponent under `--scale F`.
type ScaleRule struct {
	Key      string
	Exponent float64
}

// Smoke is the scale of the test suite's reduced run (one seed) and the
// findings whose ordering it asserts.
type Smoke struct {
	Scale    float64
	Findings []string
}

// Kinds of finding.
const (
	FindingRatio    = "ratio"    // metric at Of ÷ metric at Over
	FindingOrder    = "order"    // a chain of axis values ordered by the metric
	FindingExponent = "exponent" // log-log slope of the metric against a numeric axis
	FindingValue    = "value"    // the metric itself, at the points Of selects (all without)
)

// Finding is one published claim of the experiment.
type Finding struct {
	ID, Claim, Kind, Metric string
	// Of and Over select the points of a ratio (axis key → value); Where
	// filters the points of an order or exponent finding.
	Of, Over, Where map[string]string
	// Axis is the axis an order chain or an exponent's x runs along.
	Axis string
	// AxisOffset is added to an exponent's axis values before the fit:
	// the paper's x when it counts differently (002 counts the virtual
	// dimension: its d is overlay.dimensions + 1).
	AxisOffset float64
	// Order is the chain, e.g. "cent < can-p3 <= can-p2" (OrderChain).
	Order string
	// Paper is the published value (nil when the paper gives only an
	// ordering: then Direction says which side of 1 a ratio falls).
	Paper     *float64
	Tolerance float64 // relative band around Paper, default 0.3
	// AtLeast and AtMost, when set, replace the band: the magnitude holds
	// when the value can lie in [AtLeast, AtMost].
	AtLeast, AtMost *float64
	Direction       string // "below" or "above" (ratio without Paper)
	Line            int    // line of the finding in its file
}

// Classes of finding: what kind of claim it is, derived from its keys.
const (
	// ClassMagnitude: the paper publishes a number (paper:), judged
	// within its tolerance band. A number equal to the pivot (1 for a
	// ratio, 0 for an exponent) is an "about equal" claim.
	ClassMagnitude = "magnitude"
	// ClassBound: at_least/at_most without a published number.
	ClassBound = "bound"
	// ClassDirection: only a side of the pivot (direction: below|above).
	ClassDirection = "direction"
	// ClassOrder: an order chain along an axis.
	ClassOrder = "order"
)

// Class is what kind of claim the finding makes: magnitude (a published
// number), bound (at_least/at_most alone), direction (a side of the pivot
// alone) or order (a chain).
func (f Finding) Class() string {
	switch {
	case f.Kind == FindingOrder:
		return ClassOrder
	case f.Paper != nil:
		return ClassMagnitude
	case f.AtLeast != nil || f.AtMost != nil:
		return ClassBound
	}
	return ClassDirection
}

// Pivot is the value that orders nothing: 1 for a ratio, 0 for an
// exponent (an order chain and a value have none; 1 is returned).
func (f Finding) Pivot() float64 {
	if f.Kind == FindingExponent {
		return 0
	}
	return 1
}

// AboutEqual reports whether the finding publishes the pivot itself (a
// ratio of 1, an exponent of 0): a claim that two things are about equal,
// which orders nothing and stands or falls with its band. A value claims
// no comparison: never about equal.
func (f Finding) AboutEqual() bool {
	return (f.Kind == FindingRatio || f.Kind == FindingExponent) && f.Paper != nil && *f.Paper == f.Pivot()
}

// OrderLink is one step of an order chain: Value, then (unless last) the
// relation to the next value, "<" or "<=".
type OrderLink struct {
	Value, Rel string
}

// OrderChain parses an order string such as "cent < can-p3 <= can-p2".
func OrderChain(s string) ([]OrderLink, error) {
	fields := strings.Fields(s)
	if len(fields) < 3 || len(fields)%2 == 0 {
		return nil, fmt.Errorf(`%q is not an order chain — write values separated by "<" or "<=", e.g. "cent < can-p2 <= can-p1"`, s)
	}
	var out []OrderLink
	for i := 0; i < len(fields); i += 2 {
		l := OrderLink{Value: fields[i]}
		if i+1 < len(fields) {
			l.Rel = fields[i+1]
			if l.Rel != "<" && l.Rel != "<=" {
				return nil, fmt.Errorf(`%q in the order chain %q is not a relation — write "<" or "<="`, l.Rel, s)
			}
		}
		if l.Value == "<" || l.Value == "<=" {
			return nil, fmt.Errorf(`the order chain %q has two relations in a row — write a value between them`, s)
		}
		out = append(out, l)
	}
	return out, nil
}

// Axis returns the experiment's axis for key, or nil.
func (e *Experiment) Axis(key string) *ExperimentAxis {
	for i := range e.Vary {
		if e.Vary[i].Key == key {
			return &e.Vary[i]
		}
	}
	return nil
}

// AxisNumber reads an axis value as a number: a duration in seconds, or
// a plain number; false when it is neither.
func AxisNumber(v string) (float64, bool) {
	if x, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return x, true
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d.Seconds(), true
	}
	return 0, false
}

// experimentKeys are the keys of each mapping of the block, in order.
var experimentKeys = map[string][]string{
	"experiment": {"paper", "section", "figure", "title", "vary", "scale", "smoke", "seeds", "tuned_on", "findings", "figures"},
	"vary":       {"key", "values"},
	"smoke":      {"scale", "findings"},
	"finding":    {"id", "claim", "kind", "metric", "of", "over", "where", "axis", "axis_offset", "order", "paper", "tolerance", "at_least", "at_most", "direction"},
}

var findingID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// experiment reads the top-level `experiment:` block into s.Experiment.
func (p *parser) experiment(s *Scenario, v *yaml.Node) {
	p.pos["experiment"] = v
	if v.Kind != yaml.MappingNode {
		p.add(v, "experiment", fmt.Sprintf(`found %s where the experiment block belongs — write its keys indented below "experiment:", e.g. "  paper: \"003\""; valid keys: %s`,
			kindName(v), strings.Join(experimentKeys["experiment"], ", ")))
		return
	}
	e := &Experiment{Smoke: Smoke{Scale: 0.1}}
	fields := p.expMapping(v, "experiment", experimentKeys["experiment"])
	str := func(key string, dst *string, required bool) {
		n := fields[key]
		if n == nil {
			if required {
				p.add(v, "experiment."+key, fmt.Sprintf(`the experiment names no %s — write e.g. "  %s: %s"`, key, key, map[string]string{"paper": `"003"`}[key]))
			}
			return
		}
		*dst = p.expScalar(n, "experiment."+key, "a text")
	}
	str("paper", &e.Paper, true)
	str("section", &e.Section, false)
	str("figure", &e.Figure, false)
	str("title", &e.Title, false)
	if n := fields["vary"]; n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		at := v
		if n != nil {
			at = n
		}
		p.add(at, "experiment.vary", `the experiment needs at least one axis — write a list under "vary:", e.g. "    - {key: matchmaking.scheme, values: [cent, can-p2]}"`)
	} else {
		for _, an := range n.Content {
			an = deref(an)
			if an.Kind != yaml.MappingNode {
				p.add(an, "experiment.vary", fmt.Sprintf(`found %s where an axis belongs — write "- {key: matchmaking.scheme, values: [cent, can-p2]}"`, kindName(an)))
				continue
			}
			af := p.expMapping(an, "experiment.vary", experimentKeys["vary"])
			var ax ExperimentAxis
			if kn := af["key"]; kn == nil {
				p.add(an, "experiment.vary.key", `the axis names no key — write e.g. "key: matchmaking.scheme"`)
				continue
			} else if ax.Key = p.expScalar(kn, "experiment.vary.key", "a scenario key"); leaves[ax.Key] == nil {
				p.add(kn, "experiment.vary.key", unknownSetKey(ax.Key))
				continue
			} else if e.Axis(ax.Key) != nil {
				p.add(kn, "experiment.vary.key", fmt.Sprintf("%s is varied twice — merge the two axes into one list of values", ax.Key))
				continue
			}
			vn := af["values"]
			if vn == nil || vn.Kind != yaml.SequenceNode || len(vn.Content) == 0 {
				p.add(an, "experiment.vary.values", fmt.Sprintf(`the axis %s has no values — write e.g. "values: [%s]"`, ax.Key, setExample(leaves[ax.Key])))
				continue
			}
			for _, x := range vn.Content {
				val := p.expScalar(deref(x), "experiment.vary.values", "a value")
				if slices.Contains(ax.Values, val) {
					p.add(x, "experiment.vary.values", fmt.Sprintf("%s appears twice on the axis %s — list each value once", val, ax.Key))
					continue
				}
				// The value must be one the key takes (checked with the
				// rest of the scenario by checkExperiment).
				ax.Values = append(ax.Values, val)
				p.expValues = append(p.expValues, expValue{node: x, key: ax.Key, value: val})
			}
			e.Vary = append(e.Vary, ax)
		}
	}
	if n := fields["scale"]; n != nil {
		if n.Kind != yaml.MappingNode {
			p.add(n, "experiment.scale", fmt.Sprintf(`found %s where the scaling rules belong — write "key: exponent" lines, e.g. "    peers.count: 1"`, kindName(n)))
		} else {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, x := deref(n.Content[i]), deref(n.Content[i+1])
				key := p.expScalar(k, "experiment.scale", "a scenario key")
				if leaves[key] == nil {
					p.add(k, "experiment.scale", unknownSetKey(key))
					continue
				}
				exp, ok := p.expNumber(x, "experiment.scale."+key)
				if !ok {
					continue
				}
				e.Scale = append(e.Scale, ScaleRule{Key: key, Exponent: exp})
			}
		}
	}
	ids := map[string]bool{}
	if n := fields["findings"]; n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		at := v
		if n != nil {
			at = n
		}
		p.add(at, "experiment.findings", `the experiment states no finding — write a list under "findings:", each with id, claim, kind, metric`)
	} else {
		for _, fn := range n.Content {
			f, ok := p.finding(e, deref(fn))
			if f.ID != "" && ids[f.ID] {
				p.add(fn, "experiment.findings.id", fmt.Sprintf("the finding id %q is used twice — give each finding its own id", f.ID))
				continue
			}
			// A finding with a problem still holds its id: smoke's
			// reference to it is not a second problem.
			ids[f.ID] = f.ID != ""
			if ok {
				e.Findings = append(e.Findings, f)
			}
		}
	}
	if n := fields["figures"]; n != nil {
		for _, x := range p.expList(n, "experiment.figures") {
			if m := p.expScalar(x, "experiment.figures", "a summary.json path"); m != "" {
				e.Figures = append(e.Figures, m)
			}
		}
	}
	if n := fields["smoke"]; n != nil {
		if n.Kind != yaml.MappingNode {
			p.add(n, "experiment.smoke", fmt.Sprintf(`found %s where the smoke run belongs — write "scale: 0.1" and "findings: [id, …]" below "smoke:"`, kindName(n)))
		} else {
			sf := p.expMapping(n, "experiment.smoke", experimentKeys["smoke"])
			if x := sf["scale"]; x != nil {
				if v, ok := p.expNumber(x, "experiment.smoke.scale"); ok {
					if v <= 0 || v > 1 {
						p.add(x, "experiment.smoke.scale", fmt.Sprintf("%s is not a scale for a reduced run — write a number above 0 and at most 1, e.g. 0.1", fmtFloat(v)))
					} else {
						e.Smoke.Scale = v
					}
				}
			}
			if x := sf["findings"]; x != nil {
				for _, idn := range p.expList(x, "experiment.smoke.findings") {
					id := p.expScalar(idn, "experiment.smoke.findings", "a finding id")
					if !ids[id] {
						p.add(idn, "experiment.smoke.findings", fmt.Sprintf("no finding has the id %q — write one of: %s", id, strings.Join(sortedKeys(ids), ", ")))
						continue
					}
					e.Smoke.Findings = append(e.Smoke.Findings, id)
				}
			}
		}
	}
	e.Seeds = p.expSeeds(fields["seeds"], "experiment.seeds")
	e.TunedOn = p.expSeeds(fields["tuned_on"], "experiment.tuned_on")
	if n := fields["seeds"]; n != nil && n.Kind == yaml.SequenceNode {
		if len(n.Content) < MinJudgingSeeds {
			p.add(n, "experiment.seeds", fmt.Sprintf(`%d judging seed(s) are too few for a verdict — list at least %d seeds the readings were not chosen on, e.g. "seeds: [4201, 4202, 4203]"`, len(n.Content), MinJudgingSeeds))
		}
		for _, x := range n.Content {
			if v, err := strconv.ParseUint(deref(x).Value, 10, 64); err == nil && slices.Contains(e.TunedOn, v) {
				p.add(x, "experiment.seeds", fmt.Sprintf("seed %d is listed under tuned_on too: a verdict is never drawn from a seed the readings were chosen on — judge on another seed", v))
			}
		}
	}
	s.Experiment = e
}

// expSeeds reads a list of seeds (whole numbers ≥ 0), each once.
func (p *parser) expSeeds(n *yaml.Node, key string) []uint64 {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, key, fmt.Sprintf(`found %s where a list of seeds belongs — write e.g. "%s: [4201, 4202, 4203]"`, kindName(n), key[strings.LastIndex(key, ".")+1:]))
		return nil
	}
	var out []uint64
	for _, x := range n.Content {
		x = deref(x)
		text := p.expScalar(x, key, "a seed")
		if text == "" {
			continue
		}
		v, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			p.add(x, key, fmt.Sprintf("%q is not a seed — write a whole number of 0 or more, e.g. 4201", text))
			continue
		}
		if slices.Contains(out, v) {
			p.add(x, key, fmt.Sprintf("seed %d is listed twice — list each seed once", v))
			continue
		}
		out = append(out, v)
	}
	return out
}

// finding reads one entry of experiment.findings.
func (p *parser) finding(e *Experiment, n *yaml.Node) (Finding, bool) {
	const key = "experiment.findings"
	if n.Kind != yaml.MappingNode {
		p.add(n, key, fmt.Sprintf(`found %s where a finding belongs — write "- id: …" with claim, kind, metric`, kindName(n)))
		return Finding{}, false
	}
	errs := len(p.errs)
	fields := p.expMapping(n, key, experimentKeys["finding"])
	f := Finding{Tolerance: 0.3, Line: n.Line}
	need := func(name string) string {
		x := fields[name]
		if x == nil {
			p.add(n, key+"."+name, fmt.Sprintf("the finding %s has no %s — write %s", f.ID, name, map[string]string{
				"id": `e.g. "id: canp2-over-cent"`, "claim": `the paper's claim, e.g. "claim: CAN-P2 waits 1.5× CENT (003 §5.4)"`,
				"kind": "ratio, order, exponent or value", "metric": `a summary.json path, e.g. "metric: jobs.wait_seconds.mean"`,
				"axis": "one of the vary keys", "order": `a chain, e.g. "order: cent < can-p2 <= can"`,
			}[name]))
			return ""
		}
		return p.expScalar(x, key+"."+name, "a text")
	}
	if f.ID = need("id"); f.ID != "" && !findingID.MatchString(f.ID) {
		p.add(fields["id"], key+".id", fmt.Sprintf("%q is not a finding id — write lower-case letters, digits, '.', '_' or '-', e.g. canp2-over-cent", f.ID))
	}
	f.Claim, f.Kind, f.Metric = need("claim"), need("kind"), need("metric")
	opt := func(name string) *float64 {
		x := fields[name]
		if x == nil {
			return nil
		}
		v, ok := p.expNumber(x, key+"."+name)
		if !ok {
			return nil
		}
		return &v
	}
	f.Paper, f.AtLeast, f.AtMost = opt("paper"), opt("at_least"), opt("at_most")
	if t := opt("tolerance"); t != nil {
		if *t <= 0 || *t >= 1 {
			p.add(fields["tolerance"], key+".tolerance", fmt.Sprintf("%s is not a relative tolerance — write a number above 0 and below 1, e.g. 0.3 for 30%%", fmtFloat(*t)))
		}
		f.Tolerance = *t
	}
	points := func(name string) map[string]string {
		x := fields[name]
		if x == nil {
			return nil
		}
		if x.Kind != yaml.MappingNode {
			p.add(x, key+"."+name, fmt.Sprintf(`found %s where points belong — write "{axis key: value}", e.g. "{matchmaking.scheme: can-p2}"`, kindName(x)))
			return nil
		}
		m := map[string]string{}
		for i := 0; i+1 < len(x.Content); i += 2 {
			k := p.expScalar(deref(x.Content[i]), key+"."+name, "an axis key")
			val := p.expScalar(deref(x.Content[i+1]), key+"."+name, "an axis value")
			ax := e.Axis(k)
			switch {
			case ax == nil:
				p.add(x.Content[i], key+"."+name, fmt.Sprintf("%s is not a vary key of this experiment — write one of: %s", k, strings.Join(axisKeys(e), ", ")))
			case !slices.Contains(ax.Values, val):
				p.add(x.Content[i+1], key+"."+name, fmt.Sprintf("%s is not a value of the axis %s — write one of: %s", val, k, strings.Join(ax.Values, ", ")))
			default:
				m[k] = val
			}
		}
		return m
	}
	f.Of, f.Over, f.Where = points("of"), points("over"), points("where")
	if fields["axis_offset"] != nil && f.Kind != FindingExponent {
		p.add(fields["axis_offset"], key+".axis_offset", fmt.Sprintf("axis_offset shifts an exponent's x; the finding %s is a %s — drop it", f.ID, f.Kind))
	}
	if x := fields["direction"]; x != nil {
		if f.Direction = p.expScalar(x, key+".direction", "below or above"); f.Direction != "below" && f.Direction != "above" {
			p.add(x, key+".direction", fmt.Sprintf("%q is not a direction — write below (the ratio is under 1) or above", f.Direction))
		}
	}
	axis := func() *ExperimentAxis {
		name := need("axis")
		if name == "" {
			return nil
		}
		ax := e.Axis(name)
		if ax == nil {
			p.add(fields["axis"], key+".axis", fmt.Sprintf("%s is not a vary key of this experiment — write one of: %s", name, strings.Join(axisKeys(e), ", ")))
		}
		f.Axis = name
		return ax
	}
	switch f.Kind {
	case FindingRatio:
		if f.Of == nil || f.Over == nil {
			p.add(n, key, fmt.Sprintf("the ratio %s needs of and over — write e.g. \"of: {%s: …}\" and \"over: {%s: …}\"", f.ID, axisKeys(e)[0], axisKeys(e)[0]))
		}
		if f.Paper == nil && f.Direction == "" && f.AtLeast == nil && f.AtMost == nil {
			p.add(n, key, fmt.Sprintf("the ratio %s states nothing to compare — write the paper's value (paper: 1.5), a bound (at_least: 10) or, without a published magnitude, direction: below|above", f.ID))
		}
	case FindingOrder:
		ax := axis()
		if o := need("order"); o != "" && ax != nil {
			chain, err := OrderChain(o)
			if err != nil {
				p.add(fields["order"], key+".order", err.Error())
			}
			for _, l := range chain {
				if !slices.Contains(ax.Values, l.Value) {
					p.add(fields["order"], key+".order", fmt.Sprintf("%s is not a value of the axis %s — write values among: %s", l.Value, ax.Key, strings.Join(ax.Values, ", ")))
				}
			}
			f.Order = o
		}
	case FindingValue:
		if fields["over"] != nil {
			p.add(fields["over"], key+".over", fmt.Sprintf("the value %s is the metric itself at the points of \"of\" — drop over, or make it a ratio (kind: ratio)", f.ID))
		}
		if fields["direction"] != nil {
			p.add(fields["direction"], key+".direction", fmt.Sprintf("a value has no side of 1 to claim — give the finding %s the paper's number (paper:) or a bound (at_least/at_most) instead of direction", f.ID))
		}
		if f.Paper == nil && f.AtLeast == nil && f.AtMost == nil {
			p.add(n, key, fmt.Sprintf("the value %s states nothing to compare — write the paper's number (paper: 20) or a bound (at_most: 0.1)", f.ID))
		}
	case FindingExponent:
		if o := opt("axis_offset"); o != nil {
			f.AxisOffset = *o
		}
		if ax := axis(); ax != nil {
			for _, v := range ax.Values {
				if x, ok := AxisNumber(v); !ok || x+f.AxisOffset <= 0 {
					p.add(fields["axis"], key+".axis", fmt.Sprintf("the exponent %s needs positive numbers on the axis %s, and %q is not one — fit it along an axis of numbers or durations such as overlay.dimensions", f.ID, ax.Key, v))
					break
				}
			}
		}
		if f.Paper == nil {
			p.add(n, key+".paper", fmt.Sprintf("the exponent %s has no paper value — write e.g. \"paper: 2\" for growth as the square", f.ID))
		}
	case "":
	default:
		p.add(fields["kind"], key+".kind", fmt.Sprintf("%q is not a kind of finding — write ratio, order, exponent or value", f.Kind))
	}
	return f, len(p.errs) == errs
}

func axisKeys(e *Experiment) []string {
	var out []string
	for _, a := range e.Vary {
		out = append(out, a.Key)
	}
	if len(out) == 0 {
		out = []string{"matchmaking.scheme"}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// expMapping reads the keys of mapping n (at dotted path key), rejecting
// unknown and duplicate ones.
func (p *parser) expMapping(n *yaml.Node, key string, valid []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, ok := p.mappingKey(n.Content[i], key, "in "+key, valid, seen)
		if !ok {
			continue
		}
		if !slices.Contains(valid, name) {
			msg := fmt.Sprintf("unknown key %q in %s", name, key)
			if m := closest(name, valid); m != "" {
				msg += fmt.Sprintf(" — did you mean %q?", m)
			}
			p.add(n.Content[i], key+"."+name, msg+" Valid keys here: "+strings.Join(valid, ", "))
			continue
		}
		out[name] = deref(n.Content[i+1])
	}
	return out
}

// expScalar reads a scalar as text.
func (p *parser) expScalar(n *yaml.Node, key, want string) string {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		p.add(n, key, fmt.Sprintf("found %s where %s belongs — write one value", kindName(n), want))
		return ""
	}
	return n.Value
}

// expNumber reads a finite number.
func (p *parser) expNumber(n *yaml.Node, key string) (float64, bool) {
	s := p.expScalar(n, key, "a number")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.add(n, key, fmt.Sprintf("%q is not a number — write e.g. 1.5", s))
		return 0, false
	}
	return v, true
}

// expList reads a list, or a single scalar as a list of one.
func (p *parser) expList(n *yaml.Node, key string) []*yaml.Node {
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			out[i] = deref(x)
		}
		return out
	case yaml.ScalarNode:
		return []*yaml.Node{n}
	}
	p.add(n, key, fmt.Sprintf("found %s where a list belongs — write e.g. [scheme-order]", kindName(n)))
	return nil
}

// expValue is a vary value, checked against the rest of the scenario.
type expValue struct {
	node       *yaml.Node
	key, value string
}

// checkExperiment checks that every vary value is one its key takes with
// the rest of the scenario (after validate; s is valid).
func (p *parser) checkExperiment(s *Scenario) {
	for _, v := range p.expValues {
		next := *s
		if err := next.SetAll(v.key + "=" + v.value); err != nil {
			msg := err.Error()
			if es, ok := err.(Errors); ok && len(es) > 0 {
				msg = es[0].Msg
			}
			p.add(v.node, "experiment.vary", fmt.Sprintf("the value %s of the axis %s: %s", v.value, v.key, msg))
		}
	}
}
