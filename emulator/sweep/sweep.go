// Package sweep expands a parameter grid over scenario keys (the cartesian
// product of `--vary key=v1,v2,…`) and tabulates run summaries by dotted
// path, so that one command compares schemes the way the papers' figures do.
package sweep

import (
	"encoding/json"
	"fmt"
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

// Lookup returns the value at a dotted path (e.g. "overlay.broken_links.mean")
// of a JSON-marshalable summary, formatted for a table, and whether it exists.
func Lookup(summary any, path string) (string, bool) {
	b, err := json.Marshal(summary)
	if err != nil {
		return "", false
	}
	var cur any
	if err := json.Unmarshal(b, &cur); err != nil {
		return "", false
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[k]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case nil:
		return "—", true
	case float64:
		if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
			return strconv.FormatInt(int64(v), 10), true
		}
		return strconv.FormatFloat(v, 'g', 4, 64), true
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	}
	return fmt.Sprint(cur), true
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
