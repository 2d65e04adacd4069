package workers

import (
	"context"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// Opener returns the emulator.Options.Workers that opens a coordinator
// with opts for the run: emulator.Run then drives its peers on
// opts.Workers workers.
func Opener(ctx context.Context, opts Options) func(emulator.WorkersSetup) (emulator.Driver, error) {
	return func(ws emulator.WorkersSetup) (emulator.Driver, error) {
		sc := ws.Scenario
		if opts.Logger == nil {
			opts.Logger = ws.Logger
		}
		opts.Jobs, opts.Central = ws.Jobs, ws.Central
		st := Setup{
			Scenario: sc.Name, Seed: sc.Seed, TimeScale: sc.TimeScale, Overlay: ws.Overlay,
			Connections: sc.Bus.Connections, Batched: sc.Bus.Fanout == scenario.FanoutBatched, Eager: ws.Eager,
			Clock: ws.Clock, BootPoints: ws.BootPoints, JoinWindow: sc.Peers.JoinWindow,
		}
		yaml, err := sc.YAML()
		if err != nil {
			return nil, err
		}
		st.YAML = yaml
		c, err := Open(ctx, opts, st, ws.Metrics)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
