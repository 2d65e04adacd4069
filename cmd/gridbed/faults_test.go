package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallFaulty is a short scenario with a named partition and its heal.
const smallFaulty = `name: small-faulty
seed: 1
duration: 12m
peers: {count: 30, join_window: 1m}
overlay: {dimensions: 2, heartbeat: {period: 30s}}
oracle: {interval: 30s}
faults:
  - {at: 3m, partition: {name: cut, fraction: 0.3}}
  - {at: 5m, heal: {name: cut}}
`

// writeFile writes text into dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// summaryFaults reads the fault kinds and the seed of a run's summary.json.
func summaryFaults(t *testing.T, dir string) (kinds []string, seed uint64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Seed   uint64 `json:"seed"`
		Faults struct {
			Events []struct {
				Kind string `json:"kind"`
			} `json:"events"`
		} `json:"faults"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Faults.Events {
		kinds = append(kinds, e.Kind)
	}
	return kinds, s.Seed
}

// TestFaultsFlag: --faults FILE replaces the scenario's fault timeline
// with FILE's (and its seed with FILE's), --set edits the result, and a
// bad faults file is refused with its own file and line.
func TestFaultsFlag(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "base.yaml", smallFaulty)
	over := writeFile(t, dir, "crash.faults.yaml", "base: "+base+"\nseed: 7\nfaults:\n  - {at: 4m, crash: {fraction: 0.1}}\n")
	if code, stdout, stderr := gridbed(t, "validate", base, "--faults", over); code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("validate --faults: exit %d\n%s%s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "run")
	code, stdout, stderr := gridbed(t, "run", base, "--driver", "sim", "--faults", over, "--report=false", "--out", out)
	if code != 0 {
		t.Fatalf("run --faults: exit %d\n%s%s", code, stdout, stderr)
	}
	if kinds, seed := summaryFaults(t, out); strings.Join(kinds, ",") != "crash" || seed != 7 {
		t.Fatalf("run --faults: faults %v, seed %d; want the file's crash alone and its seed 7", kinds, seed)
	}
	// --set after --faults: the file's entry and seed edited.
	out2 := filepath.Join(dir, "run2")
	if code, stdout, stderr := gridbed(t, "run", base, "--driver", "sim", "--faults", over, "--set", "faults.0.at=6m", "--set", "seed=3", "--report=false", "--out", out2); code != 0 {
		t.Fatalf("run --faults --set: exit %d\n%s%s", code, stdout, stderr)
	}
	if kinds, seed := summaryFaults(t, out2); len(kinds) != 1 || seed != 3 {
		t.Fatalf("run --faults --set: faults %v, seed %d", kinds, seed)
	}
	// The note when the file was written for another base.
	other := writeFile(t, dir, "other.faults.yaml", "base: examples/nemesis.yaml\nfaults: []\n")
	if code, _, stderr := gridbed(t, "validate", base, "--faults", other); code != 0 || !strings.Contains(stderr, "were written for examples/nemesis.yaml") {
		t.Fatalf("another base: exit %d, %s", code, stderr)
	}
	for _, c := range []struct{ text, want string }{
		{"faults:\n  - {at: 4m, crash: {fraction: 2}}\n", "bad.faults.yaml:2:32: faults[0].crash.fraction: 2 is not a number from 0 to 1"},
		{"seed: 2\n\nfaults:\n  - {at: 50m, crash: {fraction: 0.1}}\n", "bad.faults.yaml:4: faults[0]: at 50m is not within the run (duration 12m)"},
		{"peers: {count: 3}\nfaults: []\n", `bad.faults.yaml:1:1: peers: unknown key "peers" in a faults file, which holds only the fault timeline (and the base and seed it was found with) — set other keys in the scenario file or with --set peers=…`},
		{"seed: 2\n", "bad.faults.yaml:1:1: faults: the file has no faults: list"},
		{"faults:\n  - {at: 4m, heal: {name: nope}}\n", `bad.faults.yaml:2: faults[0]: no earlier partition is named "nope"`},
	} {
		bad := writeFile(t, dir, "bad.faults.yaml", c.text)
		if code, _, stderr := gridbed(t, "validate", base, "--faults", bad); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("faults file %q: exit %d\n got %s\nwant … %s …", c.text, code, stderr, c.want)
		}
	}
	if code, _, stderr := gridbed(t, "validate", base, "--faults", filepath.Join(dir, "missing.yaml")); code != 2 || !strings.Contains(stderr, "--faults "+filepath.Join(dir, "missing.yaml")) {
		t.Errorf("a missing faults file: exit %d, %s", code, stderr)
	}
}

// TestSweepVariesAFault: --vary addresses a fault entry's field by the
// name the entry carries, one grid point per value; --set by index.
func TestSweepVariesAFault(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "base.yaml", smallFaulty)
	out := filepath.Join(dir, "sweep")
	code, stdout, stderr := gridbed(t, "sweep", base, "--driver", "sim", "--report=false", "--out", out,
		"--set", "faults.0.at=2m", "--vary", "faults.cut.fraction=0.1,0.4", "--columns", "overlay.takeovers")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	csv, err := os.ReadFile(filepath.Join(out, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "faults.cut.fraction,") || !strings.HasPrefix(lines[1], "0.1,") || !strings.HasPrefix(lines[2], "0.4,") {
		t.Fatalf("sweep.csv:\n%s", csv)
	}
	for i, frac := range []string{"0.1", "0.4"} {
		eff, err := os.ReadFile(filepath.Join(out, "0"+string(rune('1'+i))+"-faults.cut.fraction="+frac, "scenario.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(eff), "at: 2m") || !strings.Contains(string(eff), "fraction: "+frac) {
			t.Fatalf("point %s's scenario.yaml has not the fault it varied:\n%s", frac, eff)
		}
	}
	// A bad value names the --vary flag it came from.
	if code, _, stderr := gridbed(t, "sweep", base, "--driver", "sim", "--vary", "faults.cut.fraction=0.1,2"); code != 2 || !strings.Contains(stderr, "--vary faults.cut.fraction=2: 2 is not a number from 0 to 1") {
		t.Fatalf("a bad axis value: exit %d, %s", code, stderr)
	}
}
