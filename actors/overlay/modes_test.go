package overlay

import (
	"strings"
	"testing"

	"github.com/gridbed/gridbed/actors/can"
)

func TestParseHeartbeatMode(t *testing.T) {
	for _, m := range HeartbeatModes {
		got, err := ParseHeartbeatMode(m.String())
		if err != nil || got != m {
			t.Fatalf("ParseHeartbeatMode(%q) = %q, %v", m.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Compact", "full"} {
		if _, err := ParseHeartbeatMode(bad); err == nil || !strings.Contains(err.Error(), "vanilla, compact, adaptive") {
			t.Fatalf("ParseHeartbeatMode(%q): error %v, want one naming the modes", bad, err)
		}
	}
	if r, err := ParseSplitRule("halve"); err != nil || r != SplitHalve {
		t.Fatalf("ParseSplitRule(halve) = %q, %v", r, err)
	}
	if _, err := ParseSplitRule("quad"); err == nil {
		t.Fatal("ParseSplitRule(quad): no error")
	}
}

// An unknown heartbeat mode is refused when the node is made, not run as
// some other mode.
func TestNewRefusesUnknownMode(t *testing.T) {
	for _, cfg := range []Config{{Mode: "Compact"}, {Split: "quad"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New with %+v did not panic", cfg)
				}
			}()
			New(1, can.Point{1, 2}, cfg, nil)
		}()
	}
	New(1, can.Point{1, 2}, Config{}, nil) // the defaults are valid
}
