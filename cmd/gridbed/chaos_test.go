package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harshNemesis is a small overlay under a nemesis of partitions whose
// reconvergence limit is one heartbeat period: seeds that draw a late
// partition fail it honestly (docs/FAULTS.md).
const harshNemesis = `name: harsh
seed: 1
duration: 20m
peers: {count: 40, join_window: 1m}
overlay: {dimensions: 2, heartbeat: {period: 30s}}
invariants: {reconverge_periods: 1}
faults:
  - {at: 3m, random: {kinds: [partition, loss], rate: 0.4, max_concurrent: 2, duration: 2m, until: 12m}}
`

// TestChaosFindsShrinksAndReplays: gridbed chaos runs the seeds, exits 3
// when one failed, writes each failing schedule as a plain scenario (no
// random entry) and says that replaying it failed again.
func TestChaosFindsShrinksAndReplays(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "harsh.yaml")
	if err := os.WriteFile(file, []byte(harshNemesis), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "found")
	code, stdout, stderr := gridbed(t, "chaos", file, "--runs", "3", "--parallel", "2", "--out", out)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (a seed failed)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "seeds failed") || !strings.Contains(stdout, "replayed: fails again") || strings.Contains(stdout, "DID NOT") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	files, _ := filepath.Glob(filepath.Join(out, "seed-*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no schedule written in %s:\n%s", out, stdout)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "random:") || !strings.Contains(string(b), "partition:") {
			t.Fatalf("%s is not a plain timeline with the partition:\n%s", f, b)
		}
		if code, _, stderr := gridbed(t, "validate", f); code != 0 {
			t.Fatalf("%s does not validate: %s", f, stderr)
		}
	}
	if code, _, stderr := gridbed(t, "chaos", file, "--runs", "0"); code != 2 || !strings.Contains(stderr, "--runs") {
		t.Fatalf("--runs 0: exit %d, %s", code, stderr)
	}
}
