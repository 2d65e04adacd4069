// Package sweep expands a parameter grid over scenario keys (the cartesian
// product of `--vary key=v1,v2,…`) and tabulates run summaries by dotted
// path, so that one command compares schemes the way the papers' figures do.
package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Axis is one varied key and its values.
type Axis struct {
	Key    string
	Values []string
}

// ParseAxis reads "key=v1,v2,…".
func ParseAxis(s string) (Axis, error) {
	key, vals, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" || strings.TrimSpace(vals) == "" {
		return Axis{}, fmt.Errorf("--vary %q: write key=value1,value2,… e.g. --vary overlay.heartbeat.mode=vanilla,compact", s)
	}
	a := Axis{Key: key}
	for _, v := range strings.Split(vals, ",") {
		if v = strings.TrimSpace(v); v != "" {
			a.Values = append(a.Values, v)
		}
	}
	return a, nil
}

// Point is one combination of the grid: a value per axis, in axis order.
type Point []string

// Assignments renders the point as --set style "key=value" strings.
func (p Point) Assignments(axes []Axis) []string {
	out := make([]string, len(axes))
	for i, a := range axes {
		out[i] = a.Key + "=" + p[i]
	}
	return out
}

// Name is a file-system friendly name of the point, e.g.
// "overlay.heartbeat.mode=vanilla_churn.interval=5s".
func (p Point) Name(axes []Axis) string {
	s := strings.Join(p.Assignments(axes), "_")
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == ':' {
			return '-'
		}
		return r
	}, s)
}

// Grid is the cartesian product of the axes, the last axis varying fastest.
func Grid(axes []Axis) []Point {
	out := []Point{{}}
	for _, a := range axes {
		var next []Point
		for _, p := range out {
			for _, v := range a.Values {
				q := append(Point(nil), p...)
				next = append(next, append(q, v))
			}
		}
		out = next
	}
	return out
}

// Value returns the value at a dotted path (e.g.
// "overlay.broken_links.mean") of a JSON-marshalable summary as JSON
// decodes it — float64, string, bool, nil (null) or a map or slice — and
// whether the path exists.
func Value(summary any, path string) (any, bool) {
	b, err := json.Marshal(summary)
	if err != nil {
		return nil, false
	}
	var cur any
	if err := json.Unmarshal(b, &cur); err != nil {
		return nil, false
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Lookup returns the value at a dotted path of a JSON-marshalable summary,
// formatted for a table (Format), and whether it exists.
func Lookup(summary any, path string) (string, bool) {
	v, ok := Value(summary, path)
	if !ok {
		return "", false
	}
	return formatValue(v, Format), true
}

// formatValue renders a JSON value, numbers by num.
func formatValue(v any, num func(float64) string) string {
	switch v := v.(type) {
	case nil:
		return "—"
	case float64:
		return num(v)
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

// Format renders a number for a table a reader compares by eye, the same
// way in every cell: a whole number as is; otherwise four significant
// digits in fixed notation, never an exponent (77760.4 is 77760, not
// 7.776e+04; 0.012345 is 0.01235).
func Format(v float64) string {
	return formatDecimals(v, decimals(v))
}

// decimals is how many decimals give v four significant digits (none for
// a whole number or one of four digits or more).
func decimals(v float64) int {
	a := math.Abs(v)
	if a == 0 || math.IsInf(v, 0) || math.IsNaN(v) || (v == math.Trunc(v) && a < 1e15) || a >= 1000 {
		return 0
	}
	return max(0, 3-int(math.Floor(math.Log10(a))))
}

func formatDecimals(v float64, d int) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if s == "-0" {
		s = "0"
	}
	return s
}

// Full renders a number for sweep.csv: every digit float64 holds (the
// shortest text that reads back as the same number).
func Full(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Markdown renders rows as a Markdown table.
func Markdown(head []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteByte('\n')
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// CheckPath reports whether path can name a value of summaries shaped like
// schema (a summary with every optional section present): an error names
// the first element that is not there and the keys that are. A path
// through a map or a section that is null in schema (its keys are known
// only after a run, e.g. messages.by_type.heartbeat) is accepted.
func CheckPath(schema any, path string) error {
	var cur any
	b, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &cur); err != nil {
		return err
	}
	parts := strings.Split(path, ".")
	for i, k := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			if cur == nil {
				return nil // a map or section not in the schema
			}
			return fmt.Errorf("%s is a value, not a section: it has no %s", strings.Join(parts[:i], "."), k)
		}
		next, ok := m[k]
		if !ok {
			keys := make([]string, 0, len(m))
			for key := range m {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			where := "summary.json"
			if i > 0 {
				where = strings.Join(parts[:i], ".")
			}
			return fmt.Errorf("%s has no %q — it has %s", where, k, strings.Join(keys, ", "))
		}
		cur = next
	}
	return nil
}
