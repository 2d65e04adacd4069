package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	files, _ := filepath.Glob(filepath.Join(out, "seed-*.faults.yaml"))
	if len(files) == 0 {
		t.Fatalf("no faults file written in %s:\n%s", out, stdout)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Short and to the point: the base's name, the seed and the
		// faults left, no scenario key besides.
		text := string(b)
		if strings.Contains(text, "random:") || !strings.Contains(text, "partition:") || !strings.Contains(text, "\nbase: "+file+"\n") ||
			strings.Contains(text, "peers:") || strings.Contains(text, "overlay:") || strings.Count(text, "\n") > 30 {
			t.Fatalf("%s is not the base's name, the seed and the partitions left:\n%s", f, b)
		}
		if !strings.Contains(stdout, "replay: gridbed run "+file+" --driver sim --faults "+f) {
			t.Fatalf("stdout does not say how to replay %s:\n%s", f, stdout)
		}
		// The replay, as a person runs it: it fails again (exit 3).
		if code, rout, rerr := gridbed(t, "run", file, "--driver", "sim", "--faults", f, "--strict", "--report=false", "--out", filepath.Join(dir, "replay")); code != 3 || !strings.Contains(rout, "overlay_reconverged") {
			t.Fatalf("gridbed run %s --faults %s: exit %d, want 3 (failed)\n%s\n%s", file, f, code, rout, rerr)
		}
		whole := strings.TrimSuffix(f, ".faults.yaml") + ".yaml"
		b, err = os.ReadFile(whole)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "random:") || !strings.Contains(string(b), "partition:") {
			t.Fatalf("%s is not a plain timeline with the partition:\n%s", whole, b)
		}
		if code, _, stderr := gridbed(t, "validate", whole); code != 0 {
			t.Fatalf("%s does not validate: %s", whole, stderr)
		}
	}
	if code, _, stderr := gridbed(t, "chaos", file, "--runs", "0"); code != 2 || !strings.Contains(stderr, "--runs") {
		t.Fatalf("--runs 0: exit %d, %s", code, stderr)
	}
}

// TestChaosInterruptKeepsSchedules: SIGINT while gridbed chaos runs keeps
// what it found: every failing schedule so far is written (as drawn or
// shrunk part-way), the report says the search was interrupted and is
// written as chaos.txt beside them, and the exit status is 130.
func TestChaosInterruptKeepsSchedules(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "harsh.yaml")
	if err := os.WriteFile(file, []byte(harshNemesis), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "found")
	var stdout bytes.Buffer
	stderr := newWatchBuffer(": failed (") // a seed's progress line
	done := make(chan int)
	go func() {
		done <- run([]string{"chaos", file, "--runs", "20", "--parallel", "1", "--out", out}, &stdout, stderr)
	}()
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("chaos ended (exit %d) before a seed failed:\n%s", code, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("no seed failed within 2 minutes:\n%s", stderr.String())
	}
	if code := interruptAndWait(t, done, stderr); code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "seed-*.yaml"))
	report, err := os.ReadFile(filepath.Join(out, "chaos.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%d schedules written, report: %v\nstdout:\n%s", len(files), err, stdout.String())
	}
	if string(report) != stdout.String() || !strings.Contains(string(report), "interrupted:") || !strings.Contains(string(report), "not replayed (interrupted)") {
		t.Fatalf("chaos.txt:\n%s\nstdout:\n%s", report, stdout.String())
	}
	for _, f := range files {
		args := []string{"validate", f}
		if strings.HasSuffix(f, ".faults.yaml") {
			args = []string{"validate", file, "--faults", f}
		}
		if code, _, stderr := gridbed(t, args...); code != 0 {
			t.Fatalf("%v does not validate: %s", args, stderr)
		}
	}
}
