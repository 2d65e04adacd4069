package testnet

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the traces (testdata/*.trace) with what the cores did")

// A trace is a script of steps, each with the output it must produce, in
// the style of etcd raft's data-driven tests:
//
//	# a comment
//	command arg key=value …
//	----
//	expected output, one or more lines
//	(a blank line ends the step)
//
// A step without "----" must produce no output. Outputs hold no blank lines.

// Step is one command of a trace.
type Step struct {
	Pos  string   // file:line, for messages
	Cmd  string   // the command
	Args []string // its arguments without key=, in order
	Keys map[string]string
	Want string // the expected output
}

// RunTrace runs the trace in file through do, which carries out a step and
// returns its output, and fails the test with a diff where an output
// differs from the expected one. With -rewrite it writes the outputs into
// the file instead.
func RunTrace(t *testing.T, file string, do func(t *testing.T, s *Step) string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseTrace(file, string(data))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, s := range steps {
		for _, c := range s.comments {
			out.WriteString(c + "\n")
		}
		got := strings.TrimRight(do(t, &s.Step), "\n")
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s: %s: the output has a blank line:\n%s", s.Pos, s.Cmd, got)
		}
		out.WriteString(s.line + "\n")
		if got != "" {
			out.WriteString("----\n" + got + "\n")
		}
		out.WriteString("\n")
		if !*rewrite && got != s.Want {
			t.Errorf("%s: %s: output differs (-want +got):\n%s", s.Pos, s.line, Diff(s.Want, got))
		}
	}
	for _, c := range trailing(string(data)) {
		out.WriteString(c + "\n")
	}
	if *rewrite {
		text := strings.TrimRight(out.String(), "\n") + "\n"
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type traceStep struct {
	Step
	line     string   // the command line as written
	comments []string // comment and blank lines before it
}

func parseTrace(file, text string) ([]traceStep, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var steps []traceStep
	var comments []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			if l != "" || len(comments) > 0 {
				comments = append(comments, l)
			}
			continue
		}
		if len(comments) > 0 && comments[len(comments)-1] == "" {
			comments = comments[:len(comments)-1] // the blank line that ended the step before
		}
		s := traceStep{Step: Step{Pos: fmt.Sprintf("%s:%d", file, i+1), Keys: map[string]string{}}, line: l, comments: comments}
		comments = nil
		f := strings.Fields(l)
		s.Cmd = f[0]
		for _, a := range f[1:] {
			if k, v, ok := strings.Cut(a, "="); ok {
				s.Keys[k] = v
			} else {
				s.Args = append(s.Args, a)
			}
		}
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "----" {
			i += 2
			var want []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				want = append(want, lines[i])
			}
			s.Want = strings.Join(want, "\n")
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// trailing returns the comment lines after the last step.
func trailing(text string) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && strings.HasPrefix(strings.TrimSpace(lines[i]), "#"); i-- {
		out = append([]string{lines[i]}, out...)
	}
	return out
}

// Int is the integer argument key, or def when it is absent.
func (s *Step) Int(t *testing.T, key string, def int) int {
	t.Helper()
	v, ok := s.Keys[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", s.Pos, key, v, err)
	}
	return n
}

// Dur is the duration argument key, or def when it is absent.
func (s *Step) Dur(t *testing.T, key string, def time.Duration) time.Duration {
	t.Helper()
	v, ok := s.Keys[key]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", s.Pos, key, v, err)
	}
	return d
}

// IDs are the step's arguments without key= as node ids.
func (s *Step) IDs(t *testing.T) []uint64 {
	t.Helper()
	var ids []uint64
	for _, a := range s.Args {
		id, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			t.Fatalf("%s: node id %q: %v", s.Pos, a, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Fractions parses key's comma-separated fractions of the CAN span
// ("0.25,0.5", "1/3" too) as fixed-point coordinates (2^32 is the whole
// span).
func (s *Step) Fractions(t *testing.T, key string) []uint64 {
	t.Helper()
	v, ok := s.Keys[key]
	if !ok {
		t.Fatalf("%s: %s: %s= missing", s.Pos, s.Cmd, key)
	}
	var out []uint64
	for _, f := range strings.Split(v, ",") {
		num, den, frac := strings.Cut(f, "/")
		var x float64
		var err error
		if frac {
			var a, b float64
			if a, err = strconv.ParseFloat(num, 64); err == nil {
				b, err = strconv.ParseFloat(den, 64)
				x = a / b
			}
		} else {
			x, err = strconv.ParseFloat(f, 64)
		}
		if err != nil || x < 0 || x > 1 {
			t.Fatalf("%s: %s=%q: want fractions of the span in [0, 1]", s.Pos, key, v)
		}
		out = append(out, uint64(x*(1<<32)))
	}
	return out
}

// Diff is a line diff of want and got: lines only in want start with "-",
// lines only in got with "+", common lines with " ".
func Diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// lcs[i][j] is the length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			out.WriteString("+ " + b[j] + "\n")
			j++
		default:
			out.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}

// RunTraces runs every trace file matching pattern as a parallel subtest
// named after the file: start gives each its fresh state and the step
// function RunTrace calls.
func RunTraces(t *testing.T, pattern string, start func(t *testing.T) func(t *testing.T, s *Step) string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces match %s: %v", pattern, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			t.Parallel()
			RunTrace(t, f, start(t))
		})
	}
}
