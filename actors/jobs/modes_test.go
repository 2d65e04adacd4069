package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/wire"
)

// The scheduling mode's meaning comes from its value, not its spelling:
// the table is 000 §V-B's (l: local only; li: plus internode; liq: plus
// queue balancing; push or pull).
func TestSchedModeMeaning(t *testing.T) {
	for _, tc := range []struct {
		m                         SchedMode
		internode, balance, pulls bool
	}{
		{SchedVanilla, false, false, false},
		{SchedL, false, false, false},
		{SchedLIPush, true, false, false},
		{SchedLIPull, true, false, true},
		{SchedLIQPush, true, true, false},
		{SchedLIQPull, true, true, true},
	} {
		if tc.m.Internode() != tc.internode || tc.m.Balancing() != tc.balance || tc.m.Pulls() != tc.pulls {
			t.Errorf("%s: internode %v balancing %v pulls %v, want %v %v %v", tc.m,
				tc.m.Internode(), tc.m.Balancing(), tc.m.Pulls(), tc.internode, tc.balance, tc.pulls)
		}
		if got, err := ParseSchedMode(tc.m.String()); err != nil || got != tc.m {
			t.Errorf("ParseSchedMode(%q) = %q, %v", tc.m.String(), got, err)
		}
	}
	if len(SchedModes) != 6 {
		t.Fatalf("SchedModes has %d modes, the table 6", len(SchedModes))
	}
}

func TestParseRefusesUnknownValues(t *testing.T) {
	for _, err := range []error{
		func() error { _, err := ParseScheme("can-p2"); return err }(),
		func() error { _, err := ParseSchedMode("lip"); return err }(),
		func() error { _, err := ParseResidueModel("Balloon"); return err }(),
		func() error { _, err := ParseLoadView(""); return err }(),
		func() error { _, err := ParseStopNodes("all"); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "want one of") {
			t.Errorf("error %v, want one listing the values", err)
		}
	}
	for _, s := range Schemes {
		if got, err := ParseScheme(s.String()); err != nil || got != s {
			t.Errorf("ParseScheme(%q) = %q, %v", s.String(), got, err)
		}
	}
}

// An unknown value in Config is refused when the core is made.
func TestNewRefusesUnknownConfig(t *testing.T) {
	for _, cfg := range []Config{{Scheme: "canp"}, {Mode: "li"}, {Residue: "bubble"}, {LoadView: "fresh"}, {StopNodes: "all"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New with %+v did not panic", cfg)
				}
			}()
			tNew(&fakeView{id: idS, zone: tZone(0, can.Span, 0, can.Span, 0, can.Span), point: can.Point{1, 1, 1}}, cfg, 1, nil)
		}()
	}
}

// Under MP (002 §3.3) a peer is one core: the owner fails a job requiring
// several cores at once, with its own reason, and matches the others as
// CAN-P does. Under CAN-P the same multi-core job runs.
func TestMPFailsMultiCoreJobs(t *testing.T) {
	for _, tc := range []struct {
		scheme     Scheme
		cores      uint32
		wantFailed bool
	}{
		{SchemeMP, 2, true},
		{SchemeMP, 4, true},
		{SchemeMP, 1, false},
		{SchemeCANP, 2, false},
	} {
		v := &fakeView{id: 1, zone: zSelf(), point: can.Point{uint32(tQ2) - 10, uint32(tQ2) - 10, vAmt(4, 8)}}
		n := tNew(v, Config{Res: vRes{}, Scheme: tc.scheme}, 1, nil)
		tDrain(n)
		spec := tSpec(9, time.Hour) // owned here
		spec.Req[2] = vAmt(tc.cores, 1)
		n.Step(0, 50, &wire.JobSubmit{Job: spec})
		r := tDrain(n)
		var reason string
		for _, st := range tTo[*wire.JobStatus](r, tClientID) {
			for _, f := range st.Failed {
				reason = f.Reason
			}
		}
		if tc.wantFailed != (reason == ReasonMultiCore) {
			t.Fatalf("%s, job of %d cores: failure %q, want failed with %q: %v", tc.scheme, tc.cores, reason, ReasonMultiCore, tc.wantFailed)
		}
		if !tc.wantFailed {
			if len(tEvents(r, EvStarted)) != 1 {
				t.Fatalf("%s, job of %d cores: not started on the capable owner: %s", tc.scheme, tc.cores, tMsgString(r))
			}
		}
	}
}
