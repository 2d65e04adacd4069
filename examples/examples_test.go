package examples_test

import (
	"os"
	"testing"

	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/examples"
)

// TestLookup: the docs' paths name embedded files from anywhere; other
// paths (a bare name, the experiments' directory, no such file) do not.
func TestLookup(t *testing.T) {
	for p, want := range map[string]string{
		"examples/quickstart.yaml":      "examples/quickstart.yaml",
		"./examples/bench.yaml":         "examples/bench.yaml",
		"../../examples/churn.yaml":     "examples/churn.yaml",
		"quickstart.yaml":               "",
		"examples/papers/003-fig6.yaml": "",
		"examples/nosuch.yaml":          "",
		"other/quickstart.yaml":         "",
	} {
		src, data, ok := examples.Lookup(p)
		if ok != (want != "") || src != want || ok && len(data) == 0 {
			t.Errorf("examples.Lookup(%q) = %q, %d bytes, %v; want %q", p, src, len(data), ok, want)
		}
	}
}

// TestEmbeddedAreTheFiles: every example file of this directory is
// embedded, byte for byte, and parses.
func TestEmbeddedAreTheFiles(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || len(e.Name()) < 6 || e.Name()[len(e.Name())-5:] != ".yaml" {
			continue
		}
		n++
		disk, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		src, data, ok := examples.Lookup("examples/" + e.Name())
		if !ok || string(data) != string(disk) {
			t.Errorf("%s: embedded %v, same bytes %v", e.Name(), ok, string(data) == string(disk))
			continue
		}
		if _, err := scenario.Parse(src, data); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	if n == 0 || n != len(examples.Names()) {
		t.Errorf("%d files here, %d embedded", n, len(examples.Names()))
	}
}
