package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/sweep"
)

// TestHelpExitsZero: every form of asking for help prints it on stdout and
// exits 0; a command's help is its own, with the exit statuses where they
// matter.
func TestHelpExitsZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage:", "gridbed [command]", "Exit status:", "130"}},
		{[]string{"-h"}, []string{"Usage:", "Available Commands:"}},
		{[]string{"help"}, []string{"Available Commands:", "completion", "version"}},
		{[]string{"run", "--help"}, []string{"gridbed run FILE [flags]", "--strict", "--metrics-addr", "Exit status:", "go build -o gridbed ./cmd/gridbed"}},
		{[]string{"help", "run"}, []string{"gridbed run FILE [flags]", "--strict"}},
		{[]string{"sweep", "-h"}, []string{"--seeds N", "95% confidence interval", "--vary"}},
		{[]string{"help", "reproduce"}, []string{"--judge", "--smoke", "Exit status:"}},
		{[]string{"bench", "--help"}, []string{"--ceiling-duration", "examples/bench.yaml"}},
		{[]string{"validate", "--help"}, []string{"--set key=value"}},
		{[]string{"keys", "--help"}, []string{"gridbed keys"}},
	} {
		code, stdout, stderr := gridbed(t, tc.args...)
		if code != 0 || stderr != "" {
			t.Errorf("gridbed %v: exit %d, stderr %q; want 0 and nothing on stderr", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("gridbed %v: help lacks %q:\n%s", tc.args, w, stdout)
			}
		}
	}
	// help run is run's help, not the general one.
	_, general, _ := gridbed(t, "--help")
	if _, run, _ := gridbed(t, "help", "run"); run == general {
		t.Error("gridbed help run prints the general help")
	}
}

// TestVersion: gridbed version and --version name gridbed's version, the
// commit, Go's version and the key dependencies', and exit 0.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := gridbed(t, args...)
		if code != 0 {
			t.Errorf("gridbed %v: exit %d: %s", args, code, stderr)
		}
		for _, w := range []string{"gridbed ", "commit ", "go ", "nats-server ", "protoactor-go "} {
			if !strings.Contains(stdout, w) {
				t.Errorf("gridbed %v lacks %q:\n%s", args, w, stdout)
			}
		}
	}
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/gridbed/gridbed", Version: "v0.3.0"},
		Deps: []*debug.Module{{Path: "github.com/nats-io/nats-server/v2", Version: "v2.15.2"},
			{Path: "github.com/asynkron/protoactor-go", Version: "v0.0.0-x", Replace: &debug.Module{Version: "v0.0.1"}}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-26T08:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := formatVersion(bi)
	for _, w := range []string{"gridbed v0.3.0\n", "abc123 (2026-11-26T08:00:00Z), with uncommitted changes", "go1.99", "nats-server        v2.15.2", "v0.0.1 (replaces v0.0.0-x)", "nats.go            unknown"} {
		if !strings.Contains(got, w) {
			t.Errorf("formatVersion lacks %q:\n%s", w, got)
		}
	}
}

// TestUnknownFlagSuggestsSet: a scenario key written as a flag — before
// or after the command, "--key v" or "--key=v", the key whole or by its
// unique last element — is answered with the --set to write; another
// unknown flag with where the flags are listed. Exit status 2.
func TestUnknownFlagSuggestsSet(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "3", "run", "examples/quickstart.yaml"}, "write --set seed=3"},
		{[]string{"run", "examples/quickstart.yaml", "--seed", "3"}, "write --set seed=3"},
		{[]string{"run", "examples/quickstart.yaml", "--peers.count=50"}, "write --set peers.count=50"},
		{[]string{"sweep", "examples/churn.yaml", "--join-window", "30s"}, "peers.join_window is a scenario key — write --set peers.join_window=30s"},
		{[]string{"validate", "examples/quickstart.yaml", "--duration"}, "write --set duration=VALUE"},
		{[]string{"keys", "--seed", "3"}, "write --set seed=3 (e.g. gridbed run FILE --set seed=3)"},
		{[]string{"run", "examples/quickstart.yaml", "--frobnicate"}, "unknown flag: --frobnicate — `gridbed run --help` lists the flags"},
		{[]string{"run", "examples/quickstart.yaml", "-out", "x"}, "-out: write --out (flags take two dashes)"},
		{[]string{"run", "examples/quickstart.yaml", "-seed=4"}, "write --set seed=4"},
	} {
		code, stdout, stderr := gridbed(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("gridbed %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestFlagValuesChecked: a flag value that cannot be meant is refused
// before anything runs, saying what to write.
func TestFlagValuesChecked(t *testing.T) {
	const q = "../../examples/quickstart.yaml"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", q, "--progress", "bogus"}, "write --progress auto, --progress on or --progress off"},
		{[]string{"run", q, "--log-level", "loud"}, "--log-level debug, --log-level info, --log-level warn or --log-level error"},
		{[]string{"run", q, "--metrics-addr", "9464"}, "write --metrics-addr :9464"},
		{[]string{"run", q, "--metrics-addr", "localhost"}, "not host:port"},
		{[]string{"run", q, "--metrics-addr", "127.0.0.1:99999"}, "not host:port"},
		{[]string{"run", q, "--pprof-addr", "nohost"}, "not host:port"},
		{[]string{"bench", "--metrics-addr", "9464"}, "write --metrics-addr :9464"},
		{[]string{"bench", "--peers", "-5"}, "--peers must be positive"},
		{[]string{"bench", "--ceiling-duration", "0s"}, "--ceiling-duration must be positive"},
		{[]string{"bench", "--ceiling-trials", "0"}, "--ceiling-trials must be positive"},
		{[]string{"run", q, "--strict=maybe"}, `invalid argument "maybe" for "--strict"`},
		{[]string{"sweep", q, "--vary", "overlay.dimensions=2,3", "--seeds", "0"}, "--seeds 0: write 1 or more"},
		{[]string{"sweep", q, "--vary", "seed=1,2", "--seeds", "2"}, "write --seeds N"},
		{[]string{"sweep", q, "--vary", "overlay.dimensions"}, "write key=value1,value2"},
		{[]string{"reproduce", "003-fig6", "--scale", "0"}, "--scale a factor above 0"},
		{[]string{"sweep", q, "--vary", "overlay.dimensions=2,3", "--columns", "messages.per_node_per_minut"}, `messages has no "per_node_per_minut" — it has `},
		{[]string{"sweep", q, "--vary", "overlay.dimensions=2,3", "--columns", "jobs.wait_seconds.p95"}, `jobs.wait_seconds has no "p95"`},
		{[]string{"sweep", q, "--vary", "overlay.dimensions=2,3", "--columns", "outcome.x"}, `outcome is a value, not a section`},
	} {
		code, _, stderr := gridbed(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("gridbed %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// Every default column, and a path through a map, is accepted.
	schema := emulator.Summary{Jobs: &emulator.JobsSummary{}, Staleness: &emulator.StalenessSummary{}, Emulator: &emulator.LiveSummary{}, Sim: &emulator.SimSummary{}}
	for _, c := range append(append([]string{"messages.by_type.heartbeat.count", "overlay.events.route_forward"}, sweep.DefaultColumns...), sweep.JobColumns...) {
		if err := sweep.CheckPath(schema, c); err != nil {
			t.Errorf("--columns %s refused: %v", c, err)
		}
	}
	// What the help promises is accepted: a bare port for the profiler,
	// :PORT and off for metrics.
	for _, c := range []struct{ flag, v string }{{"pprof-addr", "6060"}, {"metrics-addr", ":0"}, {"metrics-addr", "off"}, {"pprof-addr", "off"}} {
		if err := checkAddr(c.flag, c.v, c.flag == "pprof-addr"); err != nil {
			t.Errorf("--%s %s refused: %v", c.flag, c.v, err)
		}
	}
}

// TestCompletion: gridbed completion writes a script for each shell, and
// the completions offer a flag's words and the experiments' names.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, stdout, stderr := gridbed(t, "completion", sh)
		if code != 0 || !strings.Contains(stdout, "gridbed") || len(stdout) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes: %s", sh, code, len(stdout), stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "run", "x.yaml", "--driver", ""}, []string{"emulator", "sim"}},
		{[]string{"__complete", "run", "x.yaml", "--progress", ""}, []string{"auto", "on", "off"}},
		{[]string{"__complete", "reproduce", ""}, []string{"003-fig6", "all"}},
		{[]string{"__complete", ""}, []string{"run", "sweep", "reproduce", "version"}},
	} {
		code, stdout, _ := gridbed(t, tc.args...)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(stdout, w+"\n") && !strings.Contains(stdout, w+"\t") {
				t.Errorf("gridbed %v: exit %d, no %q:\n%s", tc.args, code, w, stdout)
			}
		}
	}
}

// TestBuiltinExamples: the examples' documented paths work from any
// directory — gridbed bench's default file among them — read from the
// copies built into gridbed, and say so; a path that is no example is
// still an error naming it.
func TestBuiltinExamples(t *testing.T) {
	t.Chdir(t.TempDir())
	code, stdout, stderr := gridbed(t, "validate", "examples/quickstart.yaml")
	if code != 0 || stdout != "examples/quickstart.yaml: ok\n" || !strings.Contains(stderr, "built into gridbed") {
		t.Errorf("validate examples/quickstart.yaml from elsewhere: exit %d, %q, %q", code, stdout, stderr)
	}
	code, stdout, stderr = gridbed(t, "bench", "--json", "--driver", "sim", "--peers", "40", "--duration", "2m")
	if code != 0 || !strings.Contains(stdout, `"peers"`) || !strings.Contains(stderr, "bench examples/bench.yaml") {
		t.Errorf("gridbed bench from elsewhere: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := gridbed(t, "validate", "examples/nosuch.yaml"); code != 2 || !strings.Contains(stderr, "examples/nosuch.yaml") {
		t.Errorf("no such example: exit %d, %q", code, stderr)
	}
}

// TestKeysWrapped: gridbed keys fits its meanings in 100 columns (a line
// is longer only by one unbreakable word).
func TestKeysWrapped(t *testing.T) {
	code, stdout, _ := gridbed(t, "keys")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for _, l := range lines {
		words := strings.Fields(l)
		if n := len([]rune(l)); n > 100 && n-len([]rune(words[len(words)-1])) > 100 {
			t.Errorf("a %d-character line: %q", n, l)
		}
	}
	if !strings.HasPrefix(lines[0], "KEY") || len(lines) < 50 {
		t.Errorf("keys: %d lines, first %q", len(lines), lines[0])
	}
}
