package main

import (
	"strings"
	"testing"
)

// TestValidateBadSetValues: a --set value that YAML reads as a comment, as
// nothing or as more than one value is rejected with exit status 2 and a
// message naming the assignment and saying what to write — not a panic.
func TestValidateBadSetValues(t *testing.T) {
	cases := []struct{ set, want string }{
		{"seed=#1", `--set seed=#1: "#1" is read as a YAML comment, leaving no value — write a whole number`},
		{"churn.interval=#ns", `--set churn.interval=#ns: "#ns" is read as a YAML comment, leaving no value — write Go duration syntax`},
		{"churn.interval= # x", `--set churn.interval= # x: " # x" is read as a YAML comment, leaving no value — write Go duration syntax`},
		{"seed=", `--set seed=: the value is empty — write a whole number`},
		{"seed=1\n---\n2", `holds more than one YAML document — write a whole number`},
	}
	for _, c := range cases {
		code, stdout, stderr := gridbed(t, "validate", "../../examples/quickstart.yaml", "--set", c.set)
		if code != 2 {
			t.Errorf("--set %q: exit %d, want 2 (stdout %q)", c.set, code, stdout)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("--set %q: stderr %q, want it to contain %q", c.set, stderr, c.want)
		}
	}
	// A free-text key takes a # as written.
	if code, _, stderr := gridbed(t, "validate", "../../examples/quickstart.yaml", "--set", "name=run #3"); code != 0 {
		t.Errorf("--set 'name=run #3': exit %d: %s", code, stderr)
	}
}
