package emulator

import (
	"cmp"
	"fmt"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// interruptWait is how long an interrupted run may spend stopping.
func interruptWait(opts Options) time.Duration {
	return cmp.Or(opts.InterruptWait, 1500*time.Millisecond)
}

// closeWithin closes the driver, waiting at most wait for it (0: as long
// as the driver's own bounds take). A driver still closing when the wait
// ends goes on closing in the background; the process is about to exit.
func closeWithin(drv Driver, wait time.Duration) error {
	if wait <= 0 {
		return drv.Close()
	}
	done := make(chan error, 1)
	go func() { done <- drv.Close() }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("the peers had not all halted %v after the interrupt; messages still in their mailboxes are not in the bus counts", wait)
	}
}

// stoppedBeforeLive is the result of a run stopped during the join phase
// built in-process (peers.bootstrap: direct), before any peer ran on the
// bus: by an interrupt (oe nil) or by the memory ceiling (oe).
func stoppedBeforeLive(sc scenario.Scenario, driver string, wall time.Duration, oe *overloadError) *Result {
	var s Summary
	s.Scenario, s.Driver, s.Seed, s.TimeScale = sc.Name, driver, sc.Seed, sc.TimeScale
	s.WallSeconds = wall.Seconds()
	s.Peers.Initial = sc.Peers.Count
	s.Peers.Bootstrap = sc.Peers.Bootstrap
	s.Peers.BootstrapWallSeconds = wall.Seconds()
	s.Messages.ByType = map[string]TypeCount{}
	s.Overlay.Dimensions, s.Overlay.HeartbeatMode, s.Overlay.Split = sc.Overlay.Dimensions, sc.Overlay.Heartbeat.Mode.String(), sc.Overlay.Split.String()
	s.Oracle.IntervalSeconds = sc.Oracle.Interval.Seconds()
	s.Invariants.add(InvariantCheck{Name: "population_formed", Detail: fmt.Sprintf("the run stopped in the in-process join phase after %v of wall time, before the overlay went live", wall.Round(time.Millisecond))})
	why := ""
	if oe != nil {
		s.Invariants.add(InvariantCheck{Name: "run_completed", Detail: "stopped in the in-process join phase (peers.bootstrap: direct): " + oe.reason})
	} else {
		why = fmt.Sprintf("interrupted in the in-process join phase (peers.bootstrap: direct) after %v of wall time; no peer ran on the bus", wall.Round(time.Millisecond))
	}
	s.decide(why)
	return &Result{Summary: s, Scenario: sc}
}
