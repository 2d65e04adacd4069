package nemesis

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// nemesisScenario is a 60-minute run with a nemesis from 5m to 45m.
func nemesisScenario(t *testing.T, seed uint64) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("nemesis.yaml", []byte(`
name: nemesis
seed: 1
duration: 60m
peers: {count: 50}
faults:
  - at: 1m
    loss: {p: 0.01}
  - at: 5m
    random: {kinds: [partition, loss, latency, duplicate, crash, leave, bus_restart, slow, flap, corrupt], rate: 0.5, max_concurrent: 2, duration: 3m, until: 45m}
`))
	if err != nil {
		t.Fatal(err)
	}
	sc.Seed = seed
	return sc
}

func TestGenerateDeterministicPerSeed(t *testing.T) {
	for _, seed := range []uint64{1, 2, 99} {
		a, ea := Expand(nemesisScenario(t, seed))
		b, eb := Expand(nemesisScenario(t, seed))
		if !reflect.DeepEqual(a.Faults, b.Faults) || !reflect.DeepEqual(ea, eb) {
			t.Fatalf("seed %d: two expansions differ", seed)
		}
		if len(ea) < 5 {
			t.Fatalf("seed %d: only %d faults drawn at 0.5 a minute over 40 minutes", seed, len(ea))
		}
	}
	a, _ := Expand(nemesisScenario(t, 1))
	b, _ := Expand(nemesisScenario(t, 2))
	if reflect.DeepEqual(a.Faults, b.Faults) {
		t.Fatal("seeds 1 and 2 drew the same timeline")
	}
}

func TestGenerateKeepsItsBounds(t *testing.T) {
	drawn := map[string]int{}
	defer func() {
		for _, k := range scenario.RandomKinds {
			if drawn[k] == 0 {
				t.Errorf("no seed drew a %s fault: %v", k, drawn)
			}
		}
	}()
	for seed := uint64(1); seed <= 20; seed++ {
		sc, eps := Expand(nemesisScenario(t, seed))
		for _, e := range eps {
			drawn[e.Faults[0].Kind]++
		}
		if sc.Faults[0].Kind != scenario.FaultLoss || sc.Faults[0].At != time.Minute {
			t.Fatalf("seed %d: the written entry was not kept first: %+v", seed, sc.Faults[0])
		}
		if HasRandom(sc) {
			t.Fatalf("seed %d: the expanded scenario still has a random entry", seed)
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("seed %d: the expanded scenario does not validate: %v", seed, err)
		}
		for i, e := range eps {
			first, last := e.Faults[0], e.Faults[len(e.Faults)-1]
			if first.At < 5*time.Minute || last.At > 45*time.Minute {
				t.Fatalf("seed %d: episode %d (%v–%v) outside 5m–45m", seed, i, first.At, last.At)
			}
			// Never more than max_concurrent (2) under way at a start.
			n := 0
			for _, o := range eps[:i] {
				if end := episodeEnd(o); end > first.At {
					n++
				}
			}
			if n >= 2 {
				t.Fatalf("seed %d: episode %d starts with %d under way", seed, i, n)
			}
		}
	}
}

// episodeEnd is when episode e's disturbance is over.
func episodeEnd(e Episode) time.Duration {
	last := e.Faults[len(e.Faults)-1]
	return last.At + last.RestartAfter + last.DownFor + last.Length
}

// TestExpandedRoundTrip: the expanded scenario written as YAML reads back
// as the same timeline (the chaos command's replay files).
func TestExpandedRoundTrip(t *testing.T) {
	sc, _ := Expand(nemesisScenario(t, 7))
	data, err := sc.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := scenario.Parse("replay.yaml", data)
	if err != nil {
		t.Fatalf("the written scenario does not parse: %v\n%s", err, data)
	}
	strip := func(fs []scenario.Fault) []scenario.Fault {
		out := slices.Clone(fs)
		for i := range out {
			out[i].Line = 0
		}
		return out
	}
	if !reflect.DeepEqual(strip(back.Faults), strip(sc.Faults)) {
		t.Fatalf("read back\n%+v\nwritten\n%+v", back.Faults, sc.Faults)
	}
}

func TestDDMin(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		fails func(set map[int]bool) bool
		want  [][]int // any of these
	}{
		{"one culprit", 16, func(s map[int]bool) bool { return s[11] }, [][]int{{11}}},
		{"a pair", 20, func(s map[int]bool) bool { return s[3] && s[17] }, [][]int{{3, 17}}},
		{"three apart", 33, func(s map[int]bool) bool { return s[0] && s[15] && s[32] }, [][]int{{0, 15, 32}}},
		{"any two of a group", 10, func(s map[int]bool) bool { return s[2] && (s[5] || s[7]) }, [][]int{{2, 5}, {2, 7}}},
		{"everything", 4, func(s map[int]bool) bool { return len(s) == 4 }, [][]int{{0, 1, 2, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			fails := func(sub []int) bool {
				calls++
				set := map[int]bool{}
				for _, i := range sub {
					set[i] = true
				}
				return tc.fails(set)
			}
			got := DDMin(tc.n, fails)
			if !slices.ContainsFunc(tc.want, func(w []int) bool { return slices.Equal(got, w) }) {
				t.Fatalf("DDMin = %v, want %v", got, tc.want)
			}
			// 1-minimal: dropping any one unit passes.
			for i := range got {
				if fails(slices.Delete(slices.Clone(got), i, i+1)) {
					t.Fatalf("DDMin = %v is not 1-minimal: without %d it still fails", got, got[i])
				}
			}
			if calls > tc.n*tc.n {
				t.Fatalf("%d calls for %d units", calls, tc.n)
			}
		})
	}
}
