package scenario

import (
	"sort"
	"strconv"
	"strings"
)

// Error is one problem with a scenario. Msg is a sentence that says what is
// wrong and what to write instead.
type Error struct {
	Source       string // file the problem is in ("" if none)
	Line, Column int    // 1-based position in Source; 0 if unknown
	Key          string // dotted key the problem is about ("" for the whole file)
	Msg          string
	Set          string // the --set assignment the problem came from (`""` for an empty one), "" otherwise
}

// Error renders the problem as `file.yaml:12:3: peers.count: <sentence>`,
// or for an override as `--set peers.count=abc: <sentence>`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Set != "" {
		b.WriteString("--set " + e.Set + ": ")
		if k, _, _ := strings.Cut(e.Set, "="); e.Key != "" && e.Key != strings.TrimSpace(k) {
			b.WriteString(e.Key + ": ")
		}
		b.WriteString(e.Msg)
		return b.String()
	}
	src := e.Source
	if src == "" && e.Line > 0 {
		src = "<scenario>"
	}
	if src != "" {
		b.WriteString(src)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one scenario, in file order.
type Errors []*Error

// Error renders one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *Error values.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sort orders problems by position; problems without a line go last.
func (es Errors) sort() {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if (a.Line == 0) != (b.Line == 0) {
			return b.Line == 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}
