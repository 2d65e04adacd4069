package scenario

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gridbed/gridbed/actors/jobs"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/faults/bandwidth"
)

func TestDefault(t *testing.T) {
	want := Scenario{
		Seed:      1,
		TimeScale: 60,
		Duration:  10 * time.Minute,
		Peers:     Peers{Count: 500, Population: PopulationMixed, JoinWindow: time.Minute, Bootstrap: BootstrapJoins, Categorical: PeersCategorical{Values: 2}, CEs: PeersCEs{GpuFraction: 0.5}},
		Overlay: Overlay{Dimensions: 2, Split: overlay.SplitKD, Heartbeat: Heartbeat{
			Period: 30 * time.Second, Mode: overlay.HeartbeatVanilla, FailAfter: 3, AnnounceRepairs: true, ZoneQueries: true, TakeoverRequest: true,
		}},
		Churn: Churn{Start: 2 * time.Minute, FailFraction: 0.5, Lifetime: Lifetime{Dist: LifetimeNone, Mean: 30 * time.Minute, Shape: 2}},
		Link:  Link{Latency: Latency{Dist: "constant"}, Regions: 1, InterRegion: Latency{Dist: "constant"}},
		Workload: Workload{Interarrival: 15 * time.Second, Start: 2 * time.Minute, ConstraintRatio: 0.43,
			Kind: WorkloadMixed, Classes: ClassesIndependent, Runtime: time.Hour, RuntimeDist: RuntimeUniform, Categorical: WorkloadCategorical{DontCare: 0.5}, CEs: WorkloadCEs{GpuFraction: 0.3}},
		Matchmaking: Matchmaking{Scheme: jobs.SchemeCANP.String(), StoppingFactor: 2, Residue: jobs.ResidueNone, LoadView: jobs.LoadViewHeartbeat, StopNodes: jobs.StopNodesOwn, Categorical: "none", RntCandidates: 4},
		Jobs:        Jobs{ClientTimeout: 10 * time.Minute, MaxAttempts: 5},
		Scheduling:  Scheduling{Mode: jobs.SchedVanilla.String(), Period: 10 * time.Second, Contention: true, PullReach: 1, PullTarget: jobs.PullTargetWaiting, QueueLoad: jobs.QueueLoadWaiting},
		Bus:         Bus{Connections: 8, Fanout: FanoutPerReceiver},
		Emulator:    Emulator{Overload: OverloadAbort, LagTolerance: 0.01},
		Oracle:      Oracle{Interval: 30 * time.Second},
		Departures:  Departures{Start: time.Hour, Events: 4},
		Invariants:  Invariants{ReconvergePeriods: 20, Survivors: 1, CompletedJobs: 1},
		Allocation: Allocation{Grid: GridNone, Jobset: 2, Order: 1, Allocator: "greedy", SocialScore: "joining", SocialGain: "sums", Relocator: "none", Theta: 0.1, MaxMoves: 3, Spikes: "none", CrashDownFor: 30 * time.Second, Weights: Weights{2e-5, 0.1, 0.1},
			Placement: "central", GossipPeriod: 10 * time.Second},
		Wave: Wave{Strategy: WaveOff, Discovery: "ring", DayFree: 0.5, Clients: 0.2, RuntimeMin: 12 * time.Hour, RuntimeMax: 24 * time.Hour,
			SubmitWindow: 24 * time.Hour, MigrationBytes: 1 << 20, Engine: WaveEngineAuto},
	}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Default() = %+v\nwant %+v", got, want)
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

// roundTrip renders s with YAML() and parses the result back.
func roundTrip(t *testing.T, s Scenario) {
	t.Helper()
	out, err := s.YAML()
	if err != nil {
		t.Fatalf("YAML(): %v", err)
	}
	back, err := Parse(s.Source, out)
	if err != nil {
		t.Fatalf("parsing YAML() output: %v\n%s", err, out)
	}
	s.Experiment = nil           // not a run parameter: the effective scenario leaves it out
	for i := range back.Faults { // positions are those of the dump
		if i < len(s.Faults) {
			back.Faults[i].Line = s.Faults[i].Line
		}
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("YAML() round trip changed the scenario:\n got %+v\nwant %+v\n%s", back, s, out)
	}
}

func TestDefaultsRoundTrip(t *testing.T) {
	roundTrip(t, Default())

	// Every leaf key appears in the rendering.
	out, err := Default().YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		_, name := splitKey(k.Key)
		if k.Key == "experiment" {
			continue // not a run parameter: the effective scenario leaves it out
		}
		if !strings.Contains(string(out), name+":") {
			t.Errorf("YAML() output lacks key %s:\n%s", k.Key, out)
		}
	}
}

func TestEmptyFilesMeanDefaults(t *testing.T) {
	for _, name := range []string{"empty.yaml", "comments_only.yaml", "empty_sections.yaml"} {
		path := filepath.Join("testdata", name)
		s, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := Default()
		want.Source = path
		if !reflect.DeepEqual(s, want) {
			t.Errorf("%s: got %+v, want defaults", name, s)
		}
	}
}

func TestLoadFull(t *testing.T) {
	path := filepath.Join("testdata", "full.yaml")
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Scenario{
		Name:      "full-example",
		Seed:      18446744073709551615,
		TimeScale: 120.5,
		Duration:  90 * time.Minute,
		Peers:     Peers{Count: 2000, Population: PopulationClustered, JoinWindow: 5 * time.Minute, Bootstrap: BootstrapDirect, Categorical: PeersCategorical{Types: 3, Values: 3, Combinations: 20}, Clock: PeersClock{Drift: 0.05, Offset: time.Second}, CEs: PeersCEs{GpuTypes: 1, GpuFraction: 0.25}},
		Overlay: Overlay{Dimensions: 4, Split: overlay.SplitHalve, Heartbeat: Heartbeat{
			Period: 10 * time.Second, Mode: overlay.HeartbeatAdaptive, FailAfter: 5, AnnounceRepairs: false, ZoneQueries: false, TakeoverRequest: false,
		}, OrphanNotice: true, JoinRetry: 2 * time.Second},
		Churn: Churn{Interval: 15 * time.Second, Start: 10 * time.Minute, Stop: time.Hour, FailFraction: 0.25,
			Lifetime: Lifetime{Dist: "weibull", Mean: 20 * time.Minute, Shape: 0.5}},
		Link: Link{Latency: Latency{Dist: "exponential", Mean: 50 * time.Millisecond, Jitter: 5 * time.Millisecond},
			Loss: 0.01, Duplicate: 0.002, Corrupt: 0.001, Regions: 3, InterRegion: Latency{Dist: "normal", Mean: 80 * time.Millisecond, Jitter: time.Millisecond},
			RegionLatency: [][]time.Duration{{0, 80 * time.Millisecond, 90 * time.Millisecond}, {80 * time.Millisecond, 0, 70 * time.Millisecond}, {90 * time.Millisecond, 70 * time.Millisecond, 5 * time.Millisecond}},
			Bandwidth:     Bandwidth{Up: bandwidth.Mbit, Down: 8 * bandwidth.Mbit, Link: 2 * bandwidth.Mbit, Queue: 64 * bandwidth.KB}},
		Workload: Workload{Jobs: 20000, Interarrival: 17500 * time.Millisecond, Load: 0.75, Start: 6 * time.Minute, ConstraintRatio: 0.8,
			Kind: WorkloadClustered, Classes: ClassesNodes, Runtime: 40 * time.Minute, RuntimeDist: RuntimeExponential,
			Drain: true, DrainLimit: 3 * time.Hour, Warmup: 30 * time.Minute, Categorical: WorkloadCategorical{Exact: 0.25, Range: 0.5, DontCare: 0.3}, CEs: WorkloadCEs{GpuFraction: 0.2}},
		Matchmaking: Matchmaking{Scheme: jobs.SchemeCENT.String(), StoppingFactor: 3, Residue: jobs.ResidueBalloon, LoadView: jobs.LoadViewOracle, StopNodes: jobs.StopNodesTarget, Categorical: "cid", RntCandidates: 7},
		Jobs:        Jobs{ClientTimeout: 5 * time.Minute, MaxAttempts: 3},
		Scheduling:  Scheduling{Mode: jobs.SchedLIQPull.String(), Period: 5 * time.Second, Contention: false, PullReach: 3, PullTarget: jobs.PullTargetQueue, QueueLoad: jobs.QueueLoadQueue},
		Bus:         Bus{URL: "nats://bus.example.org:4222", Connections: 16, Fanout: FanoutBatched},
		Emulator:    Emulator{Overload: OverloadWarn, LagTolerance: 0.05},
		Oracle:      Oracle{Interval: time.Minute},
		Invariants:  Invariants{ReconvergePeriods: 30, Survivors: 5, CompletedJobs: 10},
		Allocation: Allocation{Grid: "aeolus", Jobset: 1, Order: 7, Allocator: "social", SocialScore: "own-greedy", SocialGain: "job", Relocator: "min-num", Theta: 0.05, MaxMoves: 5, Spikes: "fig4", CrashAt: 10 * time.Minute, CrashDownFor: time.Minute, Sample: 250 * time.Second, Weights: Weights{1e-4, 0.025, 0.05},
			Placement: "neighbors", GossipPeriod: 5 * time.Second},
		Departures: Departures{Fraction: 0.2, Start: 40 * time.Minute, Stop: 50 * time.Minute, Events: 3},
		Clock:      Clock{Start: 22 * time.Hour},
		Wave: Wave{Strategy: "wave-adaptive", Discovery: "random", DayFree: 0.15, Clients: 0.3, RuntimeMin: 10 * time.Hour, RuntimeMax: 20 * time.Hour,
			SubmitWindow: time.Hour, MigrationBytes: 2048, Engine: WaveEngineEvents},
		Faults: []Fault{
			{At: 20 * time.Minute, Kind: FaultPartition, Line: 103, Name: "west", Region: 1, OneWay: true},
			{At: 25 * time.Minute, Kind: FaultHeal, Line: 105, Name: "west", Region: -1},
			{At: 26 * time.Minute, Kind: FaultPartition, Line: 107, Fraction: 0.3, Region: -1},
			{At: 27 * time.Minute, Kind: FaultPartition, Line: 109, Peers: []uint64{1, 2, 3}, Region: -1},
			{At: 28 * time.Minute, Kind: FaultHeal, Line: 111, Region: -1},
			{At: 30 * time.Minute, Kind: FaultLatency, Line: 112, Region: -1, Latency: Latency{Dist: "pareto", Mean: 400 * time.Millisecond}},
			{At: 31 * time.Minute, Kind: FaultLoss, Line: 114, Region: -1, P: 0.1},
			{At: 31 * time.Minute, Kind: FaultDuplicate, Line: 116, Region: -1, P: 0.05},
			{At: 35 * time.Minute, Kind: FaultCrash, Line: 118, Fraction: 0.2, Region: -1, RestartAfter: 2 * time.Minute},
			{At: 36 * time.Minute, Kind: FaultCrash, Line: 120, Region: 2},
			{At: 40 * time.Minute, Kind: FaultBusRestart, Line: 122, Region: -1, DownFor: 5 * time.Second},
			{At: 41 * time.Minute, Kind: FaultPartition, Line: 124, Name: "oneway-link", Region: -1, OneWay: true, From: []uint64{4}, To: []uint64{5, 6}},
			{At: 42 * time.Minute, Kind: FaultHeal, Line: 126, Name: "oneway-link", Region: -1},
			{At: 43 * time.Minute, Kind: FaultFlap, Line: 128, Name: "flappy", Fraction: 0.1, Region: -1, OneWay: true, Up: time.Minute, Down: 10 * time.Second, Length: 5 * time.Minute, Latency: Latency{Dist: "uniform"}},
			{At: 44 * time.Minute, Kind: FaultFlap, Line: 130, Region: -1, From: []uint64{1, 2}, To: []uint64{3}, Up: 30 * time.Second, Down: 5 * time.Second, Length: 2 * time.Minute, Latency: Latency{Dist: "exponential"}},
			{At: 45 * time.Minute, Kind: FaultCorrupt, Line: 132, Region: -1, P: 0.01},
		},
		Source: path,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got  %+v\nwant %+v", s, want)
	}
	roundTrip(t, s)

	// full.yaml is meant to set every key away from its default.
	d := Default()
	for i := range schema {
		f := &schema[i]
		if f.key == "link.latency_matrix" {
			continue // it excludes link.region_latency, which full.yaml sets; TestLatencyMatrixKey sets it
		}
		if scalarText(f.encode(&s)) == scalarText(f.encode(&d)) {
			t.Errorf("full.yaml leaves %s at its default", f.key)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "no-such-file.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load(missing) = %v, want a not-exist error", err)
	}
}

// A malformed file and the one problem it must produce.
type badCase struct {
	file   string
	line   int
	column int    // 0: not checked
	key    string // Error.Key
	msg    string // distinctive part of the message
	hint   string // the "what to write instead" part
}

var badCases = []badCase{
	{"unknown_top_key.yaml", 3, 1, "peer", `unknown key "peer" at the top level`, `did you mean "peers"?`},
	{"unknown_nested_key.yaml", 5, 5, "overlay.heartbeat.perod", `unknown key "perod" in section "overlay.heartbeat"`, `did you mean "period"?`},
	{"misplaced_key.yaml", 3, 1, "count", `unknown key "count" at the top level`, `did you mean "peers.count"? Move it under "peers:"`},
	{"bad_enum.yaml", 4, 11, "overlay.heartbeat.mode", `"vanila" is not a heartbeat mode`, `write one of vanilla, compact, adaptive (did you mean "vanilla"?)`},
	{"bad_population.yaml", 4, 15, "peers.population", `"gaussian" is not a population kind`, `write one of clustered, mixed, uniform`},
	{"negative_count.yaml", 3, 10, "peers.count", `-5 is not a valid peer count`, `write a whole number from 1 to 1000000`},
	{"count_too_large.yaml", 3, 10, "peers.count", `2000000 is not a valid peer count`, `write a whole number from 1 to 1000000`},
	{"float_for_int.yaml", 3, 15, "overlay.dimensions", `2.5 is not a valid number of dimensions`, `write a whole number from 1 to 16`},
	{"quoted_number.yaml", 3, 16, "bus.connections", `"16" is not a valid connection count`, `write a whole number from 1 to 256`},
	{"octal_number.yaml", 3, 16, "bus.connections", `010 is not a valid connection count`, `without leading zeros`},
	{"negative_seed.yaml", 3, 7, "seed", `-1 is not a valid seed`, `write a whole number from 0 to 18446744073709551615`},
	{"bad_duration.yaml", 3, 11, "duration", `"10 minutes" is not a duration`, `write Go duration syntax such as 10m, 90s or 1h30m`},
	{"bare_number_duration.yaml", 3, 13, "oracle.interval", `30 is not a duration`, `a number needs a unit, e.g. 30s`},
	{"zero_time_scale.yaml", 3, 13, "time_scale", `0 is not a valid time scale`, `write a number of emulated seconds per wall-clock second`},
	{"tiny_time_scale.yaml", 3, 13, "time_scale", `1e-09 is not a valid time scale`, `from 0.000001 to 1000000`},
	{"wall_overflow.yaml", 4, 11, "duration", `at time_scale 0.001 would last 2.28e+05 years of wall-clock time`, `write a larger time_scale or a shorter duration`},
	{"zero_oracle_interval.yaml", 3, 13, "oracle.interval", `0s is not a valid snapshot interval`, `write a positive duration such as 30s`},
	{"fail_fraction_too_big.yaml", 3, 18, "churn.fail_fraction", `1.5 is not a valid failure fraction`, `write a number from 0 to 1, e.g. 0.5`},
	{"fail_after_zero.yaml", 5, 17, "overlay.heartbeat.fail_after", `0 is not a valid missed-heartbeat limit`, `write a whole number from 1 to 100`},
	{"join_window_too_long.yaml", 5, 16, "peers.join_window", `20m is not shorter than duration 10m`, `make join_window shorter than the run, e.g. 1m`},
	{"period_too_long.yaml", 3, 11, "overlay.heartbeat.period", `30s is not shorter than duration 20s`, `make the heartbeat period shorter than the run, e.g. 2s`},
	{"list_for_section.yaml", 3, 3, "overlay", `found a list where the section "overlay" belongs`, `write its keys indented below "overlay:"`},
	{"mapping_for_scalar.yaml", 3, 3, "seed", `found a mapping where a single value belongs`, `write a whole number from 0 to 18446744073709551615, e.g. seed: 1`},
	{"top_level_list.yaml", 2, 1, "", `the scenario must be a mapping of keys, but the file holds a list`, `write one "key: value" per line`},
	{"duplicate_key.yaml", 5, 3, "bus.connections", `duplicate key "connections" (already set on line 3)`, `keep only one of the two lines`},
	{"syntax_error.yaml", 4, 0, "", `YAML syntax error: mapping values are not allowed in this context`, `write valid YAML`},
	{"tabs.yaml", 3, 0, "", `YAML syntax error: found character that cannot start any token`, `YAML does not allow tabs for indentation`},
	{"bad_bus_url.yaml", 3, 8, "bus.url", `"http://localhost:4222" is not a NATS server URL`, `write nats://host:port`},
	{"null_value.yaml", 2, 10, "duration", `has no value`, `write Go duration syntax such as 10m, 90s or 1h30m, e.g. duration: 10m`},
	{"two_documents.yaml", 4, 1, "", `the file holds a second YAML document`, `write one scenario per file`},
	{"negative_jobs.yaml", 3, 9, "workload.jobs", `-10 is not a valid job count`, `write a whole number from 0 to 10000000`},
	{"zero_interarrival.yaml", 4, 17, "workload.interarrival", `0s is not a valid mean inter-arrival time`, `write a positive duration such as 15s`},
	{"workload_start_in_join_window.yaml", 6, 10, "workload.start", `3m is before the initial peers have joined (peers.join_window 5m)`, `write at least 5m, or shorten peers.join_window`},
	{"workload_start_after_run.yaml", 5, 10, "workload.start", `1h is not shorter than duration 30m`, `make workload.start shorter than the run, e.g. 1m`},
	{"constraint_ratio_count.yaml", 4, 21, "workload.constraint_ratio", `1.3 is not a valid constraint ratio`, `write a probability from 0 to 1, e.g. 0.43 (1.3 constrained resources of 3 on average)`},
	{"bad_runtime_dist.yaml", 4, 17, "workload.runtime_dist", `"exponentail" is not a running-time distribution`, `write one of uniform, normal, exponential (did you mean "exponential"?)`},
	{"bad_scheme.yaml", 3, 11, "matchmaking.scheme", `"CAN-P" is not a matchmaking scheme`, `write one of can, can-p, can-p1, can-p2, can-p3, cent, cent-queue, mp, can-het, can-hom, cent-het, rnt (did you mean "can-p"?)`},
	{"stopping_factor_too_big.yaml", 4, 20, "matchmaking.stopping_factor", `4 is not a valid stopping factor`, `write a whole number from 1 to 3`},
	{"client_timeout_too_short.yaml", 8, 19, "jobs.client_timeout", `1m30s is shorter than 1.5 × (overlay.heartbeat.fail_after + 2) heartbeat periods (7m30s)`, `write at least 7m30s for jobs.client_timeout, or make overlay.heartbeat.period at most 12s`},
	{"max_attempts_zero.yaml", 3, 17, "jobs.max_attempts", `0 is not a valid number of attempts`, `write a whole number from 1 to 100`},
	{"merge_key.yaml", 3, 3, "peers", `YAML merge keys (<<) are not supported`, `write the keys out in full`},
	{"unknown_anchor.yaml", 4, 0, "", `YAML syntax error: unknown anchor 'period' referenced`, `write the anchor &period on a value before the alias *period that repeats it`},
	{"custom_tag.yaml", 2, 7, "seed", `the YAML tag !seed is not one a scenario reads`, `write the value without it, e.g. seed: 1`},
	{"yaml_directive.yaml", 1, 0, "", `YAML syntax error: found incompatible YAML document`, `delete the %YAML line`},
	{"not_utf8.yaml", 2, 0, "", `YAML syntax error: incomplete UTF-8 octet sequence`, `save the file as UTF-8 text`},
	{"control_character.yaml", 2, 0, "", `YAML syntax error: control characters are not allowed`, `delete the control character, or write it as an escape inside double quotes`},
	{"too_deep.yaml", 2, 0, "", `YAML syntax error: exceeded max depth of 10000`, `nest lists and mappings less deeply`},
	{"huge_number.yaml", 2, 13, "time_scale", `2e308 is not a valid time scale (it is beyond the range of 64-bit numbers)`, `write a number of emulated seconds per wall-clock second`},
	{"duplicate_fault_key.yaml", 4, 28, "faults[0].crash.fraction", `duplicate key "fraction" (already set on line 4)`, `keep only one of the two lines`},
}

func TestMalformedFiles(t *testing.T) {
	rendered := map[string]string{} // file → full error text
	for _, c := range badCases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			s, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", s)
			}
			if !reflect.DeepEqual(s, Scenario{}) {
				t.Errorf("a failed Load returned a non-zero scenario: %+v", s)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want Errors: %v", err, err)
			}
			if len(errs) != 1 {
				t.Fatalf("got %d problems, want 1:\n%v", len(errs), err)
			}
			e := errs[0]
			rendered[c.file] = err.Error()
			if e.Source != path || e.Line != c.line || c.column != 0 && e.Column != c.column {
				t.Errorf("position %s:%d:%d, want %s:%d:%d\n%v", e.Source, e.Line, e.Column, path, c.line, c.column, e)
			}
			if e.Key != c.key {
				t.Errorf("key %q, want %q", e.Key, c.key)
			}
			if !strings.Contains(e.Msg, c.msg) {
				t.Errorf("message lacks %q:\n%s", c.msg, e.Msg)
			}
			if !strings.Contains(e.Msg, c.hint) {
				t.Errorf("message lacks hint %q:\n%s", c.hint, e.Msg)
			}
			if !hasHint(e.Msg) {
				t.Errorf("message has no hint on what to write: %s", e.Msg)
			}
			prefix := path + ":" + strconv.Itoa(c.line) + ":"
			if c.key != "" {
				if c.column != 0 {
					prefix += strconv.Itoa(c.column) + ":"
				}
				prefix += " " + c.key + ":"
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("rendered as %q, want prefix %q", err.Error(), prefix)
			}
		})
	}
	// Each file's distinctive message belongs to that file alone.
	for _, c := range badCases {
		for file, text := range rendered {
			if file != c.file && strings.Contains(text, c.msg) {
				t.Errorf("%s's message %q also appears for %s: %s", c.file, c.msg, file, text)
			}
		}
	}
}

// hasHint reports whether msg says what is wrong, then " — ", then what to
// do about it.
func hasHint(msg string) bool {
	_, fix, ok := strings.Cut(msg, " — ")
	if !ok {
		return false
	}
	for _, verb := range []string{"write ", "did you mean", "make ", "keep ", "set ", "delete ", "save ", "nest "} {
		if strings.HasPrefix(fix, verb) {
			return true
		}
	}
	return false
}

func TestSeveralProblems(t *testing.T) {
	path := filepath.Join("testdata", "multi_problem.yaml")
	_, err := Load(path)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want Errors: %v", err, err)
	}
	want := []struct {
		line int
		key  string
		msg  string
	}{
		{2, "sed", `did you mean "seed"?`},
		{3, "duration", `"10 minutes" is not a duration`},
		{5, "peers.count", `-5 is not a valid peer count`},
		{8, "overlay.dimensions", `2.5 is not a valid number of dimensions`},
		{10, "overlay.heartbeat.mode", `did you mean "vanilla"?`},
		{12, "bus.url", `is not a NATS server URL`},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(errs), len(want), err)
	}
	lines := strings.Split(err.Error(), "\n")
	for i, w := range want {
		e := errs[i]
		if e.Line != w.line || e.Key != w.key || !strings.Contains(e.Msg, w.msg) {
			t.Errorf("problem %d = %v, want line %d key %s message containing %q", i, e, w.line, w.key, w.msg)
		}
		if lines[i] != e.Error() {
			t.Errorf("line %d of Error() = %q, want %q", i, lines[i], e.Error())
		}
	}
	// The bad duration must not also produce cross-field complaints about
	// join_window or the heartbeat period.
	if strings.Contains(err.Error(), "shorter than") {
		t.Errorf("cross-field checks ran against an unreadable duration:\n%v", err)
	}
}

func TestParseInline(t *testing.T) {
	cases := []struct{ in, want string }{
		// yaml.v3 leaves "line 1" out of first-line errors; it is restored.
		{"a: b: c\n", "in.yaml:1: YAML syntax error: mapping values are not allowed in this context — write valid YAML: check the indentation, colons and quotes on this line and the next"},
		{"a: &x 1\nb: *y\n", "in.yaml:2: YAML syntax error: unknown anchor 'y' referenced — write the anchor &y on a value before the alias *y that repeats it, or write the value itself"},
		{"hello\n", `in.yaml:1:1: the scenario must be a mapping of keys, but the file holds the value "hello" — write one "key: value" per line at the top level, e.g. "duration: 10m"; valid keys: name, seed, time_scale, duration, peers, overlay, churn, link, workload, departures, matchmaking, scheduling, jobs, bus, emulator, oracle, invariants, allocation, clock, wave, faults, experiment`},
		{"<<: {seed: 2}\n", "in.yaml:1:1: YAML merge keys (<<) are not supported — write the keys out in full"},
		{"peers: 5\n", `in.yaml:1:8: peers: found the value 5 where the section "peers" belongs — write its keys indented below "peers:", e.g. "  count: 500"; valid keys here: count, population, join_window, bootstrap, categorical, clock, ces`},
		{"peers:\n  count: 0500\n", "in.yaml:2:10: peers.count: 0500 is not a valid peer count — write a whole number from 1 to 1000000 without leading zeros (YAML would read 0500 as an octal number)"},
		{"time_scale: 2e6\n", "in.yaml:1:13: time_scale: 2e+06 is not a valid time scale — write a number of emulated seconds per wall-clock second, from 0.000001 to 1000000, e.g. 60"},
		{"seed: !!float 4\n", "in.yaml:1:7: seed: !!float 4 is not a valid seed — write a whole number from 0 to 18446744073709551615"},
		{"name: !!binary aGk=\n", `in.yaml:1:7: name: the YAML tag !!binary is not one a scenario reads — write the value without it, e.g. name: ""`},
		{"*s: 1\n", "in.yaml:1: YAML syntax error: unknown anchor 's' referenced — write the anchor &s on a value before the alias *s that repeats it, or write the value itself"},
		{"? [a]\n: 1\n", "in.yaml:1:3: found a list used as a key at the top level — write a plain name; valid keys here: name, seed, time_scale, duration, peers, overlay, churn, link, workload, departures, matchmaking, scheduling, jobs, bus, emulator, oracle, invariants, allocation, clock, wave, faults, experiment"},
		{"time_scale: .nan\n", "in.yaml:1:13: time_scale: NaN is not a valid time scale — write a number of emulated seconds per wall-clock second, from 0.000001 to 1000000, e.g. 60"},
		{"seed: 18446744073709551616\n", "in.yaml:1:7: seed: 18446744073709551616 is not a valid seed — write a whole number from 0 to 18446744073709551615"},
		{"bus:\n  url: localhost:4222\n", `in.yaml:2:8: bus.url: "localhost:4222" is not a NATS server URL — write nats://host:port (or tls://, ws://, wss://), or "" for the embedded server (did you mean "nats://localhost:4222"?)`},
		{"peers:\n  join_window: -1s\n", "in.yaml:2:16: peers.join_window: -1s is not a valid join window — write 0s or a positive duration such as 1m"},
		{"overlay:\n  heartbeat:\n    period: 0s\n", "in.yaml:3:13: overlay.heartbeat.period: 0s is not a valid heartbeat period — write a positive duration such as 30s"},
	}
	for _, c := range cases {
		_, err := Parse("in.yaml", []byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", c.in, err, c.want)
		}
	}
	// Edge values that are fine.
	for _, in := range []string{"---\n", "--- # nothing\n...\n", "seed: 3\r\nname: x\r\n", "\ufeffseed: 3\n", "seed: !!int 3\n", "? seed\n: 3\n", "seed: 0\n", "seed: 18446744073709551615\n", "time_scale: 1e6\n", "time_scale: 0.001\n", "peers:\n  join_window: 0\n", "peers:\n  count: 1_000\n", "name: 2024\n", "bus:\n  url: \"\"\n", "---\nseed: 2\n---\n"} {
		if _, err := Parse("ok.yaml", []byte(in)); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}
}

func TestCrossFieldAtDependency(t *testing.T) {
	// join_window keeps its default (1m); the run is shortened below it.
	// The problem is about peers.join_window but placed at duration's line.
	_, err := Parse("x.yaml", []byte("seed: 3\nduration: 45s\n"))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("want one problem, got %v", err)
	}
	want := "x.yaml:2:11: peers.join_window: 1m is not shorter than duration 45s — make join_window shorter than the run, e.g. 4.5s"
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
}

func TestAliases(t *testing.T) {
	s, err := Parse("a.yaml", []byte("duration: &d 20m\noracle:\n  interval: *d\npeers:\n  join_window: 2m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Oracle.Interval != 20*time.Minute {
		t.Fatalf("alias not followed: %v", s.Oracle.Interval)
	}
}

func TestSet(t *testing.T) {
	s := Default()
	for _, a := range []string{
		"peers.count=2000",
		"overlay.heartbeat.mode=compact",
		"overlay.heartbeat.period=15s",
		"duration=1h",
		"time_scale=2.5",
		"seed=42",
		"name=run 7: bigger",
		`bus.url="nats://127.0.0.1:4222"`,
		" oracle.interval =2m",
		"matchmaking.residue=balloon",
	} {
		if err := s.Set(a); err != nil {
			t.Fatalf("Set(%q): %v", a, err)
		}
	}
	want := Default()
	want.Peers.Count = 2000
	want.Overlay.Heartbeat.Mode = overlay.HeartbeatCompact
	want.Overlay.Heartbeat.Period = 15 * time.Second
	want.Duration = time.Hour
	want.TimeScale = 2.5
	want.Seed = 42
	want.Name = "run 7: bigger"
	want.Bus.URL = "nats://127.0.0.1:4222"
	want.Oracle.Interval = 2 * time.Minute
	want.Matchmaking.Residue = jobs.ResidueBalloon
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("after Set: %+v\nwant %+v", s, want)
	}
	if err := s.Set("bus.url="); err != nil || s.Bus.URL != "" {
		t.Fatalf("Set(bus.url=) = %v, URL %q", err, s.Bus.URL)
	}
}

func TestSetErrors(t *testing.T) {
	cases := []struct {
		assignment string
		want       string // the exact rendering
	}{
		{"peers.count=abc",
			`--set peers.count=abc: "abc" is not a valid peer count — write a whole number from 1 to 1000000`},
		{"peers.count=2.5",
			`--set peers.count=2.5: 2.5 is not a valid peer count — write a whole number from 1 to 1000000`},
		{"peers.count=0",
			`--set peers.count=0: 0 is not a valid peer count — write a whole number from 1 to 1000000`},
		{"peers.cout=5",
			`--set peers.cout=5: unknown key "peers.cout" — did you mean "peers.count"? Valid keys here: peers.count, peers.population, peers.join_window, peers.bootstrap, peers.categorical.types, peers.categorical.values, peers.categorical.combinations, peers.clock.drift, peers.clock.offset, peers.ces.gpu_types, peers.ces.gpu_fraction`},
		{"fail_after=5",
			`--set fail_after=5: unknown key "fail_after" — did you mean "overlay.heartbeat.fail_after"? Valid keys here: overlay.heartbeat.period, overlay.heartbeat.mode, overlay.heartbeat.fail_after, overlay.heartbeat.announce_repairs, overlay.heartbeat.zone_queries, overlay.heartbeat.takeover_request`},
		{"overlay.heartbeat.mode=vanila",
			`--set overlay.heartbeat.mode=vanila: "vanila" is not a heartbeat mode — write one of vanilla, compact, adaptive (did you mean "vanilla"?)`},
		{"matchmaking.residue=baloon",
			`--set matchmaking.residue=baloon: "baloon" is not a residue representation — write one of none, balloon, dual-can (did you mean "balloon"?)`},
		{"matchmaking.scheme=mp",
			`--set matchmaking.scheme=mp: mp splits nodes by their cores, but overlay.dimensions 2 has no cores dimension — write overlay.dimensions: 4 or more`},
		{"matchmaking.residue=dualcan",
			`--set matchmaking.residue=dualcan: "dualcan" is not a residue representation — write one of none, balloon, dual-can (did you mean "dual-can"?)`},
		{"duration=10 minutes",
			`--set duration=10 minutes: "10 minutes" is not a duration — write Go duration syntax such as 10m, 90s or 1h30m`},
		{"peers=5",
			`--set peers=5: "peers" is a section, not a single value — set one of its keys, e.g. --set peers.count=500; keys here: peers.count, peers.population, peers.join_window, peers.bootstrap, peers.categorical.types, peers.categorical.values, peers.categorical.combinations, peers.clock.drift, peers.clock.offset, peers.ces.gpu_types, peers.ces.gpu_fraction`},
		{"peers.count=[1, 2]",
			`--set peers.count=[1, 2]: found a list where a single value belongs — write a whole number from 1 to 1000000, e.g. --set peers.count=500`},
		{"peers.count",
			`--set peers.count: missing "=" — write key=value, e.g. --set peers.count=2000`},
		{"peers.join_window=20m",
			`--set peers.join_window=20m: 20m is not shorter than duration 10m — make join_window shorter than the run, e.g. 1m`},
		{"bus.url=localhost:4222",
			`--set bus.url=localhost:4222: "localhost:4222" is not a NATS server URL — write nats://host:port (or tls://, ws://, wss://), or "" for the embedded server (did you mean "nats://localhost:4222"?)`},
		// A value YAML does not read as one value.
		{"seed=#1",
			`--set seed=#1: "#1" is read as a YAML comment, leaving no value — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1 (a # at the start of a value or after a space begins a YAML comment; to keep it, quote the value: 'seed="#1"')`},
		{"churn.interval=#ns",
			`--set churn.interval=#ns: "#ns" is read as a YAML comment, leaving no value — write Go duration syntax such as 10m, 90s or 1h30m, e.g. --set churn.interval=0s (a # at the start of a value or after a space begins a YAML comment; to keep it, quote the value: 'churn.interval="#ns"')`},
		{"churn.interval= # x",
			`--set churn.interval= # x: " # x" is read as a YAML comment, leaving no value — write Go duration syntax such as 10m, 90s or 1h30m, e.g. --set churn.interval=0s (a # at the start of a value or after a space begins a YAML comment; to keep it, quote the value: 'churn.interval="# x"')`},
		{"seed=",
			`--set seed=: the value is empty — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1`},
		{"peers.population= ",
			`--set peers.population= : the value is empty — write one of clustered, mixed, uniform, e.g. --set peers.population=mixed`},
		{"seed=~",
			`--set seed=~: "~" is read as YAML's null, leaving no value — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1`},
		{"name=null",
			`--set name=null: "null" is read as YAML's null, leaving no value — write any text, e.g. --set name="" (to use the text itself, quote it: 'name="null"')`},
		{"seed=1\n---\n2",
			"--set seed=1\n---\n2: \"1\\n---\\n2\" holds more than one YAML document — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1"},
		{"seed=[1",
			`--set seed=[1: "[1" is not a single YAML value (did not find expected ',' or ']') — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1`},
		{"seed=*a",
			`--set seed=*a: "*a" is not a single YAML value (unknown anchor 'a' referenced) — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1`},
		{"seed=!foo 1",
			`--set seed=!foo 1: the YAML tag !foo is not one a scenario reads — write the value without it, e.g. --set seed=1`},
		{"seed=!!float 4",
			`--set seed=!!float 4: !!float 4 is not a valid seed — write a whole number from 0 to 18446744073709551615`},
		{"seed=\xff",
			"--set seed=\xff: \"\\xff\" is not valid UTF-8 — write a whole number from 0 to 18446744073709551615, e.g. --set seed=1"},
		{"name=caf\xe9",
			"--set name=caf\xe9: \"caf\\xe9\" is not valid UTF-8 — write any text, e.g. --set name=\"\""},
		{"time_scale=2e308",
			`--set time_scale=2e308: 2e308 is not a valid time scale (it is beyond the range of 64-bit numbers) — write a number of emulated seconds per wall-clock second, from 0.000001 to 1000000, e.g. 60`},
		{"",
			`--set "": the assignment is empty — write key=value, e.g. --set peers.count=2000`},
	}
	for _, c := range cases {
		s := Default()
		err := s.Set(c.assignment)
		if err == nil {
			t.Errorf("Set(%q) succeeded", c.assignment)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("Set(%q):\n got %s\nwant %s", c.assignment, err, c.want)
		}
		if !reflect.DeepEqual(s, Default()) {
			t.Errorf("failed Set(%q) changed the scenario: %+v", c.assignment, s)
		}
	}
}

// TestSetHash: a free-text key takes a value holding a # as written; any
// other key reads a trailing comment as YAML does.
func TestSetHash(t *testing.T) {
	for _, c := range []struct {
		assignment string
		name       string
		seed       uint64
	}{
		{"name=#x", "#x", 1},
		{"name=run #3", "run #3", 1},
		{`name="#1"`, "#1", 1},
		{"name=a: b # c", "a: b # c", 1},
		{"seed=7 # the lucky one", "", 7},
		{`seed="7"`, "", 0}, // a string: rejected below
	} {
		s := Default()
		err := s.Set(c.assignment)
		if c.seed == 0 {
			if err == nil {
				t.Errorf("Set(%q) accepted", c.assignment)
			}
			continue
		}
		if err != nil || s.Name != c.name || s.Seed != c.seed {
			t.Errorf("Set(%q) = %v: name %q seed %d, want name %q seed %d", c.assignment, err, s.Name, s.Seed, c.name, c.seed)
		}
	}
}

// TestOddTextRoundTrips: free text that yaml.v3 would write in a block
// style that loses line breaks ("\n\n" read back as "\n"), or that holds
// control characters or surrounding spaces, reads back from YAML() as it
// was.
func TestOddTextRoundTrips(t *testing.T) {
	for _, text := range []string{"\n", "\n\n", " \n ", "a\n", "a\n\n", "\tb", "\x01", "\u2028", " padded ", "\ufeff",
		strings.Repeat("a  b ", 40), "line one\nline two\n"} {
		s := Default()
		s.Name = text
		s.Faults = []Fault{{At: time.Minute, Kind: FaultPartition, Name: text, Fraction: 0.5, Region: -1}}
		roundTrip(t, s)
	}
}

func TestSetRevalidates(t *testing.T) {
	// Shortening the run below the (default) join window and heartbeat
	// period breaks rules owned by other keys; Set must catch it.
	s := Default()
	err := s.Set("duration=30s")
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("Set(duration=30s) = %v, want 2 problems", err)
	}
	want := "--set duration=30s: peers.join_window: 1m is not shorter than duration 30s — make join_window shorter than the run, e.g. 3s\n" +
		"--set duration=30s: overlay.heartbeat.period: 30s is not shorter than duration 30s — make the heartbeat period shorter than the run, e.g. 3s"
	if err.Error() != want {
		t.Fatalf("got\n%s\nwant\n%s", err, want)
	}
	if s.Duration != 10*time.Minute {
		t.Fatalf("failed Set changed duration to %v", s.Duration)
	}
	// Fixing the dependent keys first makes the same override valid.
	for _, a := range []string{"peers.join_window=10s", "overlay.heartbeat.period=5s", "duration=30s"} {
		if err := s.Set(a); err != nil {
			t.Fatalf("Set(%q): %v", a, err)
		}
	}
	if s.Duration != 30*time.Second {
		t.Fatalf("duration = %v", s.Duration)
	}
	// Set on a scenario loaded from a file keeps its source.
	f, err := Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Set("peers.count=3"); err != nil || f.Source != filepath.Join("testdata", "full.yaml") {
		t.Fatalf("Set on loaded scenario: %v, source %q", err, f.Source)
	}
}

func TestValidate(t *testing.T) {
	s := Default()
	s.Peers.Count = 0
	s.Overlay.Heartbeat.Mode = "Compact"
	s.Bus.URL = "nats://"
	err := s.Validate()
	want := `peers.count: 0 is not a valid peer count — write a whole number from 1 to 1000000` + "\n" +
		`overlay.heartbeat.mode: "Compact" is not a heartbeat mode — write one of vanilla, compact, adaptive (did you mean "compact"?)` + "\n" +
		`bus.url: "nats://" is not a NATS server URL — write nats://host:port (or tls://, ws://, wss://), or "" for the embedded server`
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() =\n%v\nwant\n%s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Key != "peers.count" {
		t.Fatalf("errors.As(*Error) = %v", e)
	}
}

func TestBusURL(t *testing.T) {
	for _, ok := range []string{"", "nats://localhost:4222", "nats://10.0.0.1", "tls://bus:4443", "ws://h:80", "wss://h", "nats://user:pw@h:4222"} {
		if msg := checkBusURL(ok); msg != "" {
			t.Errorf("%q rejected: %s", ok, msg)
		}
	}
	for _, bad := range []string{"http://h:4222", "nats://", "nats://h:99999", "nats://h:x", "h:4222", "nats:/h", "://h"} {
		if msg := checkBusURL(bad); msg == "" || !strings.Contains(msg, "write nats://host:port") {
			t.Errorf("%q accepted or unhelpful: %q", bad, msg)
		}
	}
}

func TestKeys(t *testing.T) {
	keys := Keys()
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.Key] {
			t.Errorf("key %s listed twice", k.Key)
		}
		seen[k.Key] = true
		if strings.TrimSpace(k.Doc) == "" {
			t.Errorf("key %s has no doc", k.Key)
		}
		if k.Default == "" {
			t.Errorf("key %s has no default text", k.Key)
		}
		if k.Key == "faults" || k.Key == "link.region_latency" || k.Key == bandwidthClassesKey || k.Key == "experiment" {
			continue // lists: not settable with --set (TestFaultErrors)
		}
		// Each listed default is accepted by --set and is the default.
		s := Default()
		if err := s.Set(k.Key + "=" + k.Default); err != nil {
			t.Errorf("Set(%s=%s): %v", k.Key, k.Default, err)
		} else if !reflect.DeepEqual(s, Default()) {
			t.Errorf("Set(%s=%s) changed the defaults", k.Key, k.Default)
		}
	}
	// Every leaf field of Scenario except Source has exactly one key, named
	// after the field path in snake_case (Peers.JoinWindow → peers.join_window).
	var fields []string
	leafPaths(reflect.TypeOf(Scenario{}), "", &fields)
	for _, f := range fields {
		if f == "source" || f == "link.matrix" {
			continue // the file's path and what link.latency_matrix read
		}
		if !seen[f] {
			t.Errorf("Scenario field %s has no key in the schema", f)
		}
		delete(seen, f)
	}
	for k := range seen {
		t.Errorf("key %s matches no Scenario field", k)
	}
	defaults := map[string]string{}
	for _, k := range keys {
		defaults[k.Key] = k.Default
	}
	for k, v := range map[string]string{"name": `""`, "duration": "10m", "time_scale": "60", "peers.population": "mixed", "bus.url": `""`} {
		if defaults[k] != v {
			t.Errorf("default of %s listed as %q, want %q", k, defaults[k], v)
		}
	}
}

// leafPaths collects the dotted snake_case paths of t's non-struct fields.
func leafPaths(t reflect.Type, prefix string, out *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		path := joinKey(prefix, snake(f.Name))
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
			leafPaths(f.Type, path, out)
		} else {
			*out = append(*out, path)
		}
	}
}

// snake turns TimeScale into time_scale and URL into url.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) && unicode.IsLower(rune(name[i-1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func TestSuggestions(t *testing.T) {
	cases := map[string]string{
		"peer": "peers", "Peers": "peers", "timescale": "time_scale", "time-scale": "time_scale",
		"sed": "seed", "oracel": "oracle", "xyzzy": "", "b": "",
	}
	top := sections[""]
	for word, want := range cases {
		if got := closest(word, top); got != want {
			t.Errorf("closest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestRenderWithoutPosition(t *testing.T) {
	e := &Error{Source: "f.yaml", Key: "seed", Msg: "m"}
	if e.Error() != "f.yaml: seed: m" {
		t.Errorf("got %q", e.Error())
	}
	e = &Error{Line: 3, Column: 2, Msg: "m"}
	if e.Error() != "<scenario>:3:2: m" {
		t.Errorf("got %q", e.Error())
	}
}

func TestSetAllValidatesOnce(t *testing.T) {
	s := Default()
	s.Churn.Interval, s.Churn.Stop = 10*time.Second, 8*time.Minute
	// Shortening the run alone would leave churn.stop after its end.
	if err := s.Set("duration=5m"); err == nil {
		t.Fatal("duration=5m alone accepted with churn.stop 8m")
	}
	if err := s.SetAll("duration=5m", "churn.stop=4m"); err != nil {
		t.Fatalf("SetAll in either order: %v", err)
	}
	if s.Duration != 5*time.Minute || s.Churn.Stop != 4*time.Minute {
		t.Fatalf("got duration %v stop %v", s.Duration, s.Churn.Stop)
	}
	before := s
	if err := s.SetAll("peers.count=10", "seed=x"); err == nil || !reflect.DeepEqual(s, before) {
		t.Fatal("a bad assignment must leave the scenario unchanged")
	}
}

// TestFaultErrors: every mistake in the fault timeline is reported with its
// line and what to write instead, and nothing of a bad timeline is kept.
func TestFaultErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"faults:\n  - at: 1m\n    partiton: {fraction: 0.3}\n", `in.yaml:3:5: faults[0]: unknown key "partiton" in a fault — did you mean "partition"?`},
		{"faults:\n  - at: 1m\n    partition: {fraktion: 0.3}\n", `in.yaml:3:17: faults[0].partition.fraktion: unknown key "fraktion" in a partition fault — did you mean "fraction"?`},
		{"faults:\n  - partition: {fraction: 0.3}\n", `in.yaml:2:5: faults[0]: the fault has no at — write when it happens, e.g. at: 10m`},
		{"faults:\n  - at: 1m\n", `in.yaml:2:5: faults[0]: the entry names no fault`},
		{"faults:\n  - at: 1m\n    crash: {fraction: 0.2}\n    heal: {}\n", `in.yaml:4:5: faults[0]: one entry holds both crash and heal`},
		{"faults:\n  - at: 20m\n    crash: {fraction: 0.2}\n", `in.yaml:2: faults[0]: at 20m is not within the run (duration 10m)`},
		{"faults:\n  - at: 1m\n    crash: {region: 2}\n", `in.yaml:2: faults[0]: region 2 does not exist: link.regions is 1`},
		{"faults:\n  - at: 1m\n    partition: {oneway: true}\n", `in.yaml:2: faults[0]: a partition needs exactly one of fraction (above 0), region or peers`},
		{"faults:\n  - at: 1m\n    heal: {name: east}\n", `in.yaml:2: faults[0]: no earlier partition is named "east"`},
		{"faults:\n  - at: 1m\n    loss: {p: 1.5}\n", `in.yaml:3:15: faults[0].loss.p: 1.5 is not a number from 0 to 1`},
		{"faults:\n  - at: 1m\n    latency: {dist: gauss, mean: 1s}\n", `in.yaml:3:21: faults[0].latency.dist: "gauss" is not a delay distribution — write one of constant, uniform, exponential, normal, pareto`},
		{"faults:\n  - at: 1m\n    bus_restart: {down_for: 5}\n", `in.yaml:3:29: faults[0].bus_restart.down_for: 5 is not a duration`},
		{"faults:\n  - at: 1m\n    bus_restart: {}\n", `in.yaml:2: faults[0]: bus_restart needs a positive down_for`},
		{"faults: {at: 1m}\n", `in.yaml:1:9: faults: found a mapping where the fault timeline belongs — write a list of entries`},
		{"faults:\n  - when: {event: takeovr}\n    heal: {}\n", `in.yaml:2:19: faults[0].when.event: "takeovr" is not a protocol event — did you mean "takeover"?`},
		{"faults:\n  - at: 1m\n    when: {event: takeover}\n    heal: {}\n", `in.yaml:3:5: faults[0]: an entry has either at or when, not both`},
		{"faults:\n  - when: {event: takeover, count: 0}\n    heal: {}\n", `in.yaml:2:36: faults[0].when.count: 0 is not a count`},
		// Malformed mappings inside the timeline.
		{"faults:\n  - {at: 1m, zzz: 1, heal: {}}\n", `in.yaml:2:14: faults[0]: unknown key "zzz" in a fault — write one of the valid keys: at, when, partition, heal`},
		{"faults:\n  - {at: 1m, at: 2m, heal: {}}\n", `in.yaml:2:14: faults[0].at: duplicate key "at" (already set on line 2) — keep only one of the two lines`},
		{"faults:\n  - {<<: {at: 1m}, heal: {}}\n", `in.yaml:2:6: faults[0]: YAML merge keys (<<) are not supported — write the keys out in full`},
		{"faults:\n  - {[at]: 1m, heal: {}}\n", `in.yaml:2:6: faults[0]: found a list used as a key in a fault — write a plain name; valid keys here: at, when`},
		{"faults:\n  - {when: {event: takeover, event: probe}, heal: {}}\n", `in.yaml:2:30: faults[0].when.event: duplicate key "event" (already set on line 2)`},
		{"faults:\n  - {when: {event: [takeover]}, heal: {}}\n", `in.yaml:2:20: faults[0].when.event: a list is not a protocol event — write one of join_owned,`},
		{"faults:\n  - {at: 1m, partition: {peers: []}}\n", `in.yaml:2:33: faults[0].partition.peers: the list of peers is empty — write at least one peer id`},
		{"faults:\n  - {at: 1m, partition: {peers: [{}]}}\n", `in.yaml:2:33: faults[0].partition.peers: a mapping is not a peer id — write ids from 1 up`},
		{"faults:\n  - {at: 1m, partition: {name: [a]}}\n", `in.yaml:2:32: faults[0].partition.name: found a list where a name belongs — write a name, e.g. name: west`},
		{"faults:\n  - {at: [1m], heal: {}}\n", `in.yaml:2:10: faults[0].at: found a list where a duration belongs — write a duration such as 10m or 90s`},
		{"faults:\n  - {at: 1m, loss: {p: {}}}\n", `in.yaml:2:24: faults[0].loss.p: a mapping is not a number from 0 to 1 — write e.g. 0.2`},
		{"faults:\n  - {at: 1m, loss: {zz: 1}}\n", `in.yaml:2:21: faults[0].loss.zz: unknown key "zz" in a loss fault — write one of the valid keys: p`},
		// Per-link cuts, flapping links, corruption.
		{"faults:\n  - {at: 1m, partition: {from: [1]}}\n", `in.yaml:2: faults[0]: a cut between peer sets needs both from and to`},
		{"faults:\n  - {at: 1m, partition: {from: [1], to: [2], peers: [3]}}\n", `in.yaml:2: faults[0]: a partition needs exactly one of fraction (above 0), region or peers (or from and to)`},
		{"faults:\n  - {at: 1m, flap: {fraction: 0.1, up: 10s, down: 5s}}\n", `in.yaml:2: faults[0]: a flap needs up and down (mean period lengths) and a duration`},
		{"faults:\n  - {at: 1m, flap: {up: 10s, down: 5s, duration: 1m}}\n", `in.yaml:2: faults[0]: a flap needs exactly one of fraction (of the links, above 0), peers (their links), or from and to`},
		{"faults:\n  - {at: 1m, flap: {fraction: 0.1, up: 0s, down: 5s, duration: 1m}}\n", `in.yaml:2:40: faults[0].flap.up: 0s is not positive — write the mean length of a up period`},
		{"faults:\n  - {at: 5m, flap: {fraction: 0.1, up: 10s, down: 5s, duration: 6m}}\n", `in.yaml:2: faults[0]: the flapping would last until 11m, after the run (duration 10m)`},
		{"faults:\n  - {at: 1m, flap: {fraction: 0.1, up: 10s, down: 5s, duration: 1m, dist: gauss}}\n", `faults[0].flap.dist: "gauss" is not a delay distribution`},
		{"faults:\n  - {at: 1m, flap: {to: [2], up: 10s, down: 5s, duration: 1m}}\n", `in.yaml:2: faults[0]: flapping links between peer sets need both from and to`},
		{"faults:\n  - {at: 1m, corrupt: {p: 2}}\n", `in.yaml:2:27: faults[0].corrupt.p: 2 is not a number from 0 to 1`},
		{"faults:\n  - {at: 1m, corrupt: {q: 0.1}}\n", `in.yaml:2:24: faults[0].corrupt.q: unknown key "q" in a corrupt fault`},
	}
	for _, c := range cases {
		s, err := Parse("in.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q):\n got %v\nwant … %s …", c.yaml, err, c.want)
		}
		if !reflect.DeepEqual(s, Scenario{}) {
			t.Errorf("Parse(%q) kept a scenario despite the error", c.yaml)
		}
	}
	s := Default()
	if err := s.Set("faults=[]"); err == nil || !strings.Contains(err.Error(), "the fault timeline is a list: set one field of one entry") {
		t.Errorf("--set faults: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"link: {regions: 2, region_latency: [[0s, 80ms], [80ms]]}\n", "in.yaml:1:36: link.region_latency: the matrix must have link.regions (2) rows of 2 durations each"},
		{"link: {regions: 2, region_latency: [[0s, 80], [80ms, 0s]]}\n", "in.yaml:1:42: link.region_latency: 80 is not a duration"},
		{"link: {regions: 2, region_latency: 80ms}\n", "in.yaml:1:36: link.region_latency: found the value \"80ms\" where the matrix belongs"},
	} {
		if _, err := Parse("in.yaml", []byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q):\n got %v\nwant … %s …", c.yaml, err, c.want)
		}
	}
}

// TestWorkloadRules: the rules between the workload and jobs keys and the
// keys they depend on apply only when the workload is on, and name both
// sides.
func TestWorkloadRules(t *testing.T) {
	bad := []struct{ in, want string }{
		{"workload:\n  start: -1s\n",
			"in.yaml:2:10: workload.start: -1s is not a valid workload start — write 0s or a positive duration such as 2m"},
		{"workload:\n  jobs: 10\n  start: 30s\n",
			"in.yaml:3:10: workload.start: 30s is before the initial peers have joined (peers.join_window 1m) — write at least 1m, or shorten peers.join_window"},
		// The start keeps its default (2m); the run is shortened below it.
		{"duration: 90s\nworkload:\n  jobs: 10\n",
			"in.yaml:1:11: workload.start: 2m is not shorter than duration 1m30s — make workload.start shorter than the run, e.g. 1m"},
		{"jobs:\n  client_timeout: 0s\n",
			"in.yaml:2:19: jobs.client_timeout: 0s is not a valid client timeout — write a positive duration such as 10m"},
		// The timeout keeps its default (10m); the period is lengthened:
		// the problem is placed at the period's line.
		{"duration: 1h\noverlay:\n  heartbeat:\n    period: 6m\nworkload:\n  jobs: 10\n",
			"in.yaml:4:13: jobs.client_timeout: 10m is shorter than 1.5 × (overlay.heartbeat.fail_after + 2) heartbeat periods (45m), the time an owner's failure takes to be repaired — write at least 45m for jobs.client_timeout, or make overlay.heartbeat.period at most 1m20s"},
		{"workload:\n  runtime: 0s\n",
			"in.yaml:2:12: workload.runtime: 0s is not a valid mean running time — write a positive duration such as 1h"},
		{"workload:\n  kind: uniform\n",
			`in.yaml:2:9: workload.kind: "uniform" is not a workload kind — write one of clustered, mixed`},
		{"matchmaking:\n  stopping_factor: 0\n",
			"in.yaml:2:20: matchmaking.stopping_factor: 0 is not a valid stopping factor — write a whole number from 1 to 3"},
		{"workload:\n  jobs: 2e7\n",
			"in.yaml:2:9: workload.jobs: 2e7 is not a valid job count — write a whole number from 0 to 10000000"},
		{"workload:\n  drain: yes please\n",
			`in.yaml:2:10: workload.drain: "yes please" is not a boolean — write true or false`},
		{"workload:\n  drain_limit: -1h\n",
			"in.yaml:2:16: workload.drain_limit: -1h is not a valid drain limit — write 0s or a positive duration such as 4h"},
	}
	for _, c := range bad {
		_, err := Parse("in.yaml", []byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", c.in, err, c.want)
		}
	}
	// Without jobs, the start and the timeout are not held to the run.
	for _, in := range []string{
		"workload:\n  start: 30s\n",
		"workload:\n  start: 1h\n",
		"jobs:\n  client_timeout: 30s\n",
		"duration: 1h\noverlay:\n  heartbeat:\n    period: 6m\n",
		"workload:\n  jobs: 10\n  start: 1m\n", // = peers.join_window
		"workload:\n  jobs: 10000000\n  constraint_ratio: 0\n",
		"workload:\n  jobs: 1\n  constraint_ratio: 1\n  kind: clustered\n  runtime_dist: normal\n",
		"workload:\n  jobs: 10\njobs:\n  client_timeout: 3m45s\n", // = 1.5 × (3 + 2) × 30s
		"matchmaking:\n  scheme: can\n  stopping_factor: 1\n",
	} {
		if _, err := Parse("ok.yaml", []byte(in)); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}

	set := []struct {
		assignments []string
		want        string
	}{
		{[]string{"matchmaking.scheme=CENT"},
			`--set matchmaking.scheme=CENT: "CENT" is not a matchmaking scheme — write one of can, can-p, can-p1, can-p2, can-p3, cent, cent-queue, mp, can-het, can-hom, cent-het, rnt (did you mean "cent"?)`},
		{[]string{"workload.runtime_dist=gaussian"},
			`--set workload.runtime_dist=gaussian: "gaussian" is not a running-time distribution — write one of uniform, normal, exponential`},
		{[]string{"workload.jobs=1000", "peers.join_window=5m"},
			"--set workload.jobs=1000 --set peers.join_window=5m: workload.start: 2m is before the initial peers have joined (peers.join_window 5m) — write at least 5m, or shorten peers.join_window"},
		{[]string{"workload.jobs=1000", "jobs.client_timeout=50s"},
			"--set workload.jobs=1000 --set jobs.client_timeout=50s: jobs.client_timeout: 50s is shorter than 1.5 × (overlay.heartbeat.fail_after + 2) heartbeat periods (3m45s), the time an owner's failure takes to be repaired — write at least 3m45s for jobs.client_timeout, or make overlay.heartbeat.period at most 6s"},
		{[]string{"jobs.max_attempts=101"},
			"--set jobs.max_attempts=101: 101 is not a valid number of attempts — write a whole number from 1 to 100"},
	}
	for _, c := range set {
		s := Default()
		err := s.SetAll(c.assignments...)
		if err == nil || err.Error() != c.want {
			t.Errorf("SetAll(%q):\n got %v\nwant %s", c.assignments, err, c.want)
		}
		if !reflect.DeepEqual(s, Default()) {
			t.Errorf("failed SetAll(%q) changed the scenario", c.assignments)
		}
	}
	s := Default()
	if s.Workload.On() {
		t.Error("the default scenario has a workload")
	}
	if err := s.SetAll("workload.jobs=1000", "matchmaking.scheme=cent", "workload.interarrival=17.5s"); err != nil {
		t.Fatal(err)
	}
	if !s.Workload.On() || s.Matchmaking.Scheme != jobs.SchemeCENT.String() || s.Workload.Interarrival != 17500*time.Millisecond {
		t.Errorf("after SetAll: %+v %+v", s.Workload, s.Matchmaking)
	}
	roundTrip(t, s)
}

// TestDrainLimit: a draining run may go on for workload.drain_limit past
// duration, by default the longer of 4 mean running times and 2 client
// timeouts; without drain (or without jobs) it ends at duration.
func TestDrainLimit(t *testing.T) {
	for _, c := range []struct {
		set     []string
		limit   time.Duration
		horizon time.Duration
	}{
		{[]string{"workload.jobs=10", "duration=8h"}, 4 * time.Hour, 8 * time.Hour},
		{[]string{"workload.jobs=10", "duration=8h", "workload.drain=true"}, 4 * time.Hour, 12 * time.Hour},
		{[]string{"workload.jobs=10", "duration=8h", "workload.drain=true", "workload.runtime=1m"}, 20 * time.Minute, 8*time.Hour + 20*time.Minute},
		{[]string{"workload.jobs=10", "duration=8h", "workload.drain=true", "workload.drain_limit=30m"}, 30 * time.Minute, 8*time.Hour + 30*time.Minute},
		{[]string{"duration=8h", "workload.drain=true"}, 4 * time.Hour, 8 * time.Hour}, // no jobs: nothing to drain
	} {
		s := Default()
		if err := s.SetAll(c.set...); err != nil {
			t.Fatal(err)
		}
		if s.DrainLimit() != c.limit || s.Horizon() != c.horizon {
			t.Errorf("%v: drain limit %v, horizon %v; want %v, %v", c.set, s.DrainLimit(), s.Horizon(), c.limit, c.horizon)
		}
	}
}

// TestExamplesLoad: every scenario file in examples/ loads and validates,
// so the README's and docs' commands start.
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestDeparturesTimeline: departures.* adds evenly spaced entries to the
// fault timeline, crashes and leaves alternating, that together remove
// departures.fraction of the initial population.
func TestDeparturesTimeline(t *testing.T) {
	sc, err := Parse("d.yaml", []byte("duration: 8h\nfaults:\n  - {at: 30m, loss: {p: 0.01}}\ndepartures: {fraction: 0.3, start: 1h, stop: 4h, events: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := sc.SortedFaults()
	if len(fs) != 5 || fs[0].Kind != FaultLoss {
		t.Fatalf("timeline %+v: want the loss entry, then 4 departures", fs)
	}
	left := 1.0
	for k, f := range fs[1:] {
		kind := []string{FaultCrash, FaultLeave}[k%2]
		if at := time.Hour + time.Duration(k)*time.Hour; f.Kind != kind || f.At != at || f.Region != -1 {
			t.Fatalf("departure %d: %+v, want %s at %v", k, f, kind, at)
		}
		left -= left * f.Fraction
	}
	if math.Abs(left-0.7) > 1e-9 {
		t.Fatalf("%.4f of the peers left after the departures, want 0.7", left)
	}
	if _, err := Parse("d.yaml", []byte("duration: 2h\ndepartures: {fraction: 0.1, start: 1h, stop: 3h}\n")); err == nil {
		t.Fatal("departures past the end of the run: no error")
	}
	if sc, err := Parse("d.yaml", []byte("duration: 2h\n")); err != nil || len(sc.SortedFaults()) != 0 {
		t.Fatalf("no departures by default: %v, %v", sc.SortedFaults(), err)
	}
}

// TestSchedModeCENT: scheduling.mode cent runs 000's CENT — the
// cent-queue scheme with vanilla run nodes — whatever matchmaking.scheme
// says; every other mode keeps the file's scheme.
func TestSchedModeCENT(t *testing.T) {
	s := Default()
	s.Matchmaking.Scheme = "can-p2"
	s.Scheduling.Mode = SchedCENT
	if scheme, _, mode := s.JobSchemes(); scheme != jobs.SchemeCENTQueue || mode != jobs.SchedVanilla {
		t.Fatalf("mode cent: scheme %q, run-node mode %q; want %q, %q", scheme, mode, jobs.SchemeCENTQueue, jobs.SchedVanilla)
	}
	if got := s.SchemeName(); got != jobs.SchemeCENTQueue.String() {
		t.Fatalf("mode cent: results name the scheme %q, want %q", got, jobs.SchemeCENTQueue)
	}
	s.Scheduling.Mode = SchedCENTGreedy
	if scheme, _, mode := s.JobSchemes(); scheme != jobs.SchemeCENT || mode != jobs.SchedVanilla || s.SchemeName() != jobs.SchemeCENT.String() {
		t.Fatalf("mode cent-greedy: scheme %q (named %q), run-node mode %q; want %q, %q", scheme, s.SchemeName(), mode, jobs.SchemeCENT, jobs.SchedVanilla)
	}
	s.Scheduling.Mode = jobs.SchedLIQPull.String()
	if scheme, sf, mode := s.JobSchemes(); scheme != jobs.SchemeCANP || sf != 2 || mode != jobs.SchedLIQPull {
		t.Fatalf("mode liq-pull with can-p2: %q, SF %d, %q; want %q, 2, %q", scheme, sf, mode, jobs.SchemeCANP, jobs.SchedLIQPull)
	}
	if got := s.SchemeName(); got != "can-p2" {
		t.Fatalf("mode liq-pull: results name the scheme %q, want can-p2", got)
	}
}

// Categorical keys (002 ch. 5): impossible combinations are refused with
// the file, line and what to write instead.
func TestCategoricalKeys(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"matchmaking: {categorical: subcan}\n",
			"in.yaml:1:28: matchmaking.categorical: subcan needs peers with categorical resources — set peers.categorical.types (e.g. 4), or write none"},
		{"matchmaking: {categorical: cid}\n",
			"in.yaml:1:28: matchmaking.categorical: cid needs peers with categorical resources — set peers.categorical.types (e.g. 4), or write none"},
		{"workload: {categorical: {exact: 0.5}}\n",
			"in.yaml:1:33: workload.categorical.range: jobs with categorical constraints need peers with categorical resources — set peers.categorical.types (e.g. 4), or write 0 for workload.categorical.exact and .range"},
		{"peers: {categorical: {types: 4}}\nworkload: {categorical: {exact: 0.7, range: 0.5}}\n",
			"in.yaml:2:45: workload.categorical.range: 0.7 exact and 0.5 range jobs make more than all of them — write at most 0.3"},
		{"peers: {categorical: {types: 12, values: 3}}\n",
			"in.yaml:1:42: peers.categorical.values: 12 types of 3 values make more than 4096 combinations — write fewer types or values (at most 4096 combinations)"},
		{"peers: {categorical: {types: 2, values: 2, combinations: 5}}\n",
			"in.yaml:1:58: peers.categorical.combinations: 5 combinations in use, but 2 types of 2 values make only 4 — write at most 4, or 0 for all"},
		{"matchmaking: {categorical: cdi}\n",
			`in.yaml:1:28: matchmaking.categorical: "cdi" is not a categorical matchmaking mode — write one of none, cid, subcan`},
	} {
		_, err := Parse("in.yaml", []byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", c.in, err, c.want)
		}
	}
	sc, err := Parse("in.yaml", []byte("peers: {categorical: {types: 4}}\nworkload: {categorical: {exact: 0.625}}\nmatchmaking: {categorical: cid}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Peers.Categorical; got.Space().Combinations() != 16 || got.InUse() != 16 || !sc.Workload.Categorical.On() {
		t.Fatalf("002 §5.2.1's setup: %+v, %+v", got, sc.Workload.Categorical)
	}
}

// subcan (002 §2.4) is accepted with categorical peers.
func TestSubCANAccepted(t *testing.T) {
	sc, err := Parse("in.yaml", []byte("peers: {categorical: {types: 4}}\nworkload: {categorical: {exact: 0.625}}\nmatchmaking: {categorical: subcan}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Matchmaking.Categorical != CategoricalSubCAN {
		t.Fatalf("matchmaking.categorical = %q, want subcan", sc.Matchmaking.Categorical)
	}
}
