package emulator_test

import (
	"context"
	"fmt"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// A Go test in your own repository can describe a scenario, run it with the
// deterministic driver (the same seed gives the same summary) or on real
// actors over NATS (emulator.DriverLive), and assert on the summary.
// Here: 150 peers, graceful churn faster than the heartbeat period; after
// churn stops the overlay must be exact again.
func Example() {
	sc, err := scenario.Parse("inline", []byte(`
name: graceful-churn
seed: 7
duration: 20m
peers: {count: 150, join_window: 1m}
overlay:
  dimensions: 3
  heartbeat: {period: 30s, mode: adaptive}
churn: {interval: 10s, start: 3m, stop: 12m, fail_fraction: 0}
`))
	if err != nil {
		fmt.Println(err) // file:line and what to write instead
		return
	}
	res, err := emulator.Run(context.Background(), sc, emulator.Options{Driver: emulator.DriverSim})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	fmt.Println("churn happened:", s.Churn.Joins > 0 && s.Churn.Leaves > 0)
	fmt.Println("every leave taken over:", s.Overlay.Takeovers >= s.Churn.Leaves)
	fmt.Println("reconverged:", s.Overlay.ReconvergeSeconds != nil)
	fmt.Println("gaps, overlaps, broken links:", s.Overlay.ZoneGaps, s.Overlay.ZoneOverlaps, s.Overlay.BrokenLinks.Final)
	// Output:
	// churn happened: true
	// every leave taken over: true
	// reconverged: true
	// gaps, overlaps, broken links: 0 0 0
}
