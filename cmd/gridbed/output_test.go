package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestValidatePlan: validate --plan prints the driver, the emulated and
// planned wall time and the memory estimate, and exits 2 for a run that
// gridbed run would refuse.
func TestValidatePlan(t *testing.T) {
	code, stdout, stderr := gridbed(t, "validate", "examples/quickstart.yaml", "--plan")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"examples/quickstart.yaml: ok\nplan:\n", "driver     emulator", "emulated   10m0s",
		"wall       10s planned (duration 10m0s / time_scale 60)", "memory     about ", "admitted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--plan lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = gridbed(t, "validate", "examples/quickstart.yaml", "--plan", "--driver", "sim")
	if code != 0 || !strings.Contains(stdout, "driver     sim") || !strings.Contains(stdout, "wall       no plan") {
		t.Errorf("--plan --driver sim: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = gridbed(t, "validate", "examples/quickstart.yaml", "--plan", "--set", "peers.count=1000000", "--set", "overlay.dimensions=8")
	if code != 2 || !strings.Contains(stdout, "REFUSED: this run needs about") {
		t.Errorf("a run too large: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := gridbed(t, "validate", "examples/quickstart.yaml"); code != 0 || strings.Contains(stdout, "plan:") {
		t.Errorf("without --plan: exit %d\n%s", code, stdout)
	}
}

// TestHelpNamesDefaultDriver: each command that runs scenarios says its
// driver in the first lines of its help.
func TestHelpNamesDefaultDriver(t *testing.T) {
	for cmd, want := range map[string]string{
		"run":       "on the emulator driver by default",
		"sweep":     "on the emulator driver by default",
		"chaos":     "on the deterministic driver only",
		"reproduce": "on the deterministic driver",
	} {
		code, stdout, _ := gridbed(t, cmd, "--help")
		lines := strings.SplitN(stdout, "\n", 5)
		head := strings.Join(lines[:min(4, len(lines))], " ")
		if code != 0 || !strings.Contains(strings.Join(strings.Fields(head), " "), want) {
			t.Errorf("gridbed %s --help: the first lines do not say %q:\n%s", cmd, want, head)
		}
	}
}

// TestLogFormat: --log-format json writes one JSON object a line at the
// level asked; a bad word is refused with the choices.
func TestLogFormat(t *testing.T) {
	var b bytes.Buffer
	logFlags{level: "info", format: "json"}.logger(&b).Info("falling behind", "lag_wall_seconds", 0.5)
	logFlags{level: "info", format: "json"}.logger(&b).Debug("not shown")
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil || line["msg"] != "falling behind" || line["lag_wall_seconds"] != 0.5 || line["level"] != "INFO" {
		t.Fatalf("json log: %v %q", err, b.String())
	}
	b.Reset()
	logFlags{level: "warn", format: "text"}.logger(&b).Warn("x", "k", 1)
	if !strings.Contains(b.String(), "level=WARN msg=x k=1") {
		t.Fatalf("text log: %q", b.String())
	}
	for _, cmd := range []string{"run", "sweep", "bench", "worker"} {
		code, _, stderr := gridbed(t, cmd, "--log-format", "xml")
		if code != 2 || !strings.Contains(stderr, "text") || !strings.Contains(stderr, "json") {
			t.Errorf("gridbed %s --log-format xml: exit %d, %s", cmd, code, stderr)
		}
	}
	if got := (logFlags{level: "info", format: "json"}).args(); strings.Join(got, " ") != "--log-level info --log-format json" {
		t.Errorf("worker args %v", got)
	}
}
