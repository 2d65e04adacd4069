package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: on any bytes Parse returns a scenario or an Errors, never
// panics; every problem names the file and a line and says what to write
// instead; a scenario it accepts validates and reads back from its YAML()
// output as the same scenario. The seeds are every example scenario, every
// file in testdata/ and testdata/fuzz/FuzzParse (empty and multiple
// documents, aliases and merge keys, tags and directives, huge numbers,
// deep nesting, bad bytes, odd text, every fault kind).
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"../../examples/*.yaml", "../../examples/papers/*.yaml", "testdata/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("in.yaml", data)
		if err != nil {
			checkErrors(t, err, "in.yaml", false)
			if !reflect.DeepEqual(s, Scenario{}) {
				t.Errorf("a failed Parse returned a non-zero scenario: %+v", s)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted a scenario that Validate rejects: %v\ninput:\n%s", err, data)
		}
		roundTrip(t, s)
	})
}

// FuzzSet: on any "key=value" assignment, SetAll on a valid scenario (the
// defaults, testdata/full.yaml) never panics; it either leaves the scenario
// unchanged and says what is wrong and what to write instead, or the
// result validates and reads back from its YAML() output as the same
// scenario. The seeds are every key at its default and
// testdata/fuzz/FuzzSet (values that YAML reads as a comment, as nothing,
// as several values, with tags, anchors, bad bytes, huge numbers).
func FuzzSet(f *testing.F) {
	for _, k := range Keys() {
		f.Add(k.Key + "=" + k.Default)
	}
	bases := []Scenario{Default()}
	full, err := Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	bases = append(bases, full)
	f.Fuzz(func(t *testing.T, assignment string) {
		for _, base := range bases {
			s := base
			err := s.SetAll(assignment)
			if err != nil {
				checkErrors(t, err, base.Source, true)
				if !reflect.DeepEqual(s, base) {
					t.Fatalf("a failed SetAll(%q) changed the scenario", assignment)
				}
				continue
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("SetAll(%q) accepted a scenario that Validate rejects: %v", assignment, err)
			}
			roundTrip(t, s)
		}
	})
}

// checkErrors asserts that err is an Errors whose every problem names its
// source, and a line when it came from the file or the --set assignment
// when fromSet, and says what is wrong, then " — ", then what to write
// instead (once: no hint appended to another).
func checkErrors(t *testing.T, err error, source string, fromSet bool) {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("error is %T, want a non-empty Errors: %v", err, err)
	}
	for _, e := range errs {
		if e.Source != source {
			t.Errorf("problem names source %q, want %q: %v", e.Source, source, e)
		}
		if fromSet && e.Set == "" {
			t.Errorf("problem does not name the --set assignment: %v", e)
		}
		if !fromSet && e.Line <= 0 {
			t.Errorf("problem has no line: %v", e)
		}
		if n := strings.Count(e.Msg, " — "); n != 1 {
			t.Errorf("problem says what is wrong and what to write instead in %d parts, want 2 joined by \" — \": %v", n+1, e)
		}
	}
}
