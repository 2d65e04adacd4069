package main

import (
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
