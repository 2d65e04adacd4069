package scenario

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestNemesisAndSlowEntries: the random and slow entries and the
// peers.clock keys are read and validated like every other key.
func TestNemesisAndSlowEntries(t *testing.T) {
	bad := []struct{ yaml, want string }{
		{"faults:\n  - {at: 1m, random: {kinds: [partition, flood], rate: 1}}\n", `faults[0].random.kinds: "flood" is not a kind the nemesis draws`},
		{"faults:\n  - {at: 1m, random: {kinds: partition, rate: 1}}\n", `faults[0].random.kinds: found the value "partition" where the list of fault kinds belongs`},
		{"faults:\n  - {at: 1m, random: {kinds: [crash], rate: 0}}\n", `faults[0].random.rate: 0 is not a rate`},
		{"faults:\n  - {at: 1m, random: {kinds: [crash], rate: 1, max_concurrent: 0}}\n", `faults[0].random.max_concurrent: 0 is not a number of faults`},
		{"faults:\n  - {at: 1m, random: {kinds: [crash]}}\n", `faults[0]: random needs a rate`},
		{"faults:\n  - {at: 1m, random: {kinds: [crash], rate: 1, until: 20m}}\n", `faults[0]: the nemesis would draw faults from 1m until 20m: until must be after at and within the run`},
		{"faults:\n  - {when: {event: takeover}, random: {kinds: [crash], rate: 1}}\n", `faults[0]: a random entry starts at a time, not on a protocol event`},
		{"faults:\n  - {at: 1m, random: {kinds: [crash], rate: 1, sped: 2}}\n", `unknown key "sped" in a random fault`},
		{"faults:\n  - {at: 1m, slow: {delay: 50ms}}\n", `faults[0]: slow needs the fraction of the peers that are slow`},
		{"faults:\n  - {at: 1m, slow: {fraction: 0.2, delay: fast}}\n", `faults[0].slow.delay: "fast" is not a duration`},
		{"peers:\n  clock:\n    drift: 0.9\n", `peers.clock.drift: 0.9 is not a valid clock drift — write a number from 0 to 0.5`},
		{"peers:\n  clock:\n    offset: -1s\n", `peers.clock.offset: -1s is not a valid clock offset`},
	}
	for _, c := range bad {
		if _, err := Parse("in.yaml", []byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q):\n got %v\nwant … %s …", c.yaml, err, c.want)
		}
	}
	s, err := Parse("in.yaml", []byte(`
peers: {clock: {drift: 0.3, offset: 2s}}
faults:
  - {at: 1m, slow: {fraction: 0.25, delay: 40ms}}
  - {at: 2m, slow: {delay: 0s}}
  - {at: 3m, random: {kinds: [partition, slow], rate: 0.5, max_concurrent: 3, duration: 90s, until: 8m}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Peers.Clock.Drift != 0.3 || s.Peers.Clock.Offset != 2*time.Second {
		t.Fatalf("peers.clock read as %+v", s.Peers.Clock)
	}
	if f := s.Faults[0]; f.Kind != FaultSlow || f.Fraction != 0.25 || f.Service != 40*time.Millisecond {
		t.Fatalf("slow read as %+v", f)
	}
	r := s.Faults[2].Random
	if r == nil || len(r.Kinds) != 2 || r.Rate != 0.5 || r.MaxConcurrent != 3 || r.Duration != 90*time.Second || r.Until != 8*time.Minute {
		t.Fatalf("random read as %+v", r)
	}
	// The effective scenario writes them back as they were read.
	data, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("back.yaml", data)
	if err != nil {
		t.Fatalf("the effective scenario does not parse: %v\n%s", err, data)
	}
	if back.Peers.Clock != s.Peers.Clock || !reflect.DeepEqual(back.Faults[2].Random, r) || back.Faults[0].Service != 40*time.Millisecond {
		t.Fatalf("read back %+v, %+v", back.Peers.Clock, back.Faults)
	}
}
