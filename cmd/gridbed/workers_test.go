package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerFlagsRefuseWhatCannotWork: gridbed worker needs a
// coordinator, and --workers runs the emulator driver only; both are
// refused before anything runs, saying what to write.
func TestWorkerFlagsRefuseWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"worker"}, 2, "give --coordinator nats://HOST:PORT"},
		{[]string{"run", "examples/quickstart.yaml", "--workers", "2", "--driver", "sim", "--out", t.TempDir() + "/out", "--metrics-addr", "off"}, 2, "drop --driver sim"},
	} {
		code, _, stderr := gridbed(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("gridbed %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	code, stdout, _ := gridbed(t, "worker", "--help")
	if code != 0 || !strings.Contains(stdout, "--coordinator") || !strings.Contains(stdout, "docs/WORKERS.md") {
		t.Errorf("gridbed worker --help: exit %d:\n%s", code, stdout)
	}
}

// TestBadSplitAndBusInputExit2: a negative worker count, --listen without
// workers and a bus.url where no NATS server answers are the user's input:
// exit 2 with a sentence saying what to write, the URL named.
func TestBadSplitAndBusInputExit2(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "-1"}, "--workers -1: write N ≥ 1"},
		{[]string{"--remote-workers", "-2"}, "--remote-workers -2: write M ≥ 1"},
		{[]string{"--listen", "0.0.0.0:4222"}, "add --workers N or --remote-workers M"},
		{[]string{"--set", "bus.url=nats://127.0.0.1:1"}, "bus.url nats://127.0.0.1:1: no NATS server answers there"},
	} {
		args := append([]string{"run", "../../examples/quickstart.yaml", "--metrics-addr", "off", "--out", out, "--set", "peers.count=10"}, c.args...)
		code, _, stderr := gridbed(t, args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", c.args, code, c.want, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: %s exists after a refused run (%v)", c.args, out, err)
		}
	}
}
