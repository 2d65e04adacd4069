package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/metrics"
)

// TestSecondRunOnDefaultPort: two runs at once with the default metrics
// address — the second (or both, when another process holds the port)
// says loudly where it serves instead and how Prometheus finds it; each
// writes a target file with its own address, and removes it when it ends.
func TestSecondRunOnDefaultPort(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(metrics.TargetsDirEnv, dir)
	metrics.Advertise("run")
	defer metrics.Advertise("")
	var out [2]bytes.Buffer
	var eps [2]*endpoints
	for i := range eps {
		m := metrics.NewRun(metrics.RunInfo{Driver: "emulator"})
		ep, err := serveEndpoints("run", m.Registry, defaultMetricsAddr, false, "", &out[i])
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		eps[i] = ep
	}
	second := eps[1].servers[0]
	if second.Addr() == defaultMetricsAddr {
		t.Fatalf("the second run serves on the default %s too", defaultMetricsAddr)
	}
	target, _ := second.TargetFile()
	for _, want := range []string{
		"***** the default metrics port " + defaultMetricsAddr + " is busy",
		"***** this run serves its metrics on http://" + second.Addr() + "/metrics instead *****",
		"finds it through " + target + " (file_sd_configs)",
		"curl -s http://" + second.Addr() + "/metrics",
	} {
		if !strings.Contains(out[1].String(), want) {
			t.Errorf("the second run's stderr lacks %q:\n%s", want, out[1].String())
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "gridbed-*.json"))
	if len(files) != 2 {
		t.Fatalf("%d target files in %s, want one per run: %v", len(files), dir, files)
	}
	for i, ep := range eps {
		f, err := ep.servers[0].TargetFile()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var groups []struct {
			Targets []string          `json:"targets"`
			Labels  map[string]string `json:"labels"`
		}
		if err := json.Unmarshal(b, &groups); err != nil || len(groups) != 1 || len(groups[0].Targets) != 1 ||
			groups[0].Targets[0] != ep.servers[0].Addr() || groups[0].Labels["gridbed_process"] != "run" {
			t.Errorf("run %d's target file %s: %s (%v)", i, f, b, err)
		}
	}
	for _, ep := range eps {
		ep.Close()
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("files left after both runs ended: %v", left)
	}
}
