package sim_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/overlay"
	"github.com/gridbed/gridbed/emulator/population"
	"github.com/gridbed/gridbed/emulator/sim"
)

// TestBuildOverlayIsTheJoinPhase: the overlay BuildOverlay hands over is
// exactly the one the deterministic driver's own join phase has at the
// handover time for the same seed — zones, points, versions and neighbor
// tables of every peer — and it is exact (the oracle finds no broken or
// stale link, gap or overlap); the members carry their pending heartbeats,
// none before the handover.
func TestBuildOverlayIsTheJoinPhase(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 200
	}
	for _, tc := range []struct {
		kind string
		dims int
		seed uint64
	}{{population.Mixed, 2, 1}, {population.Clustered, 2, 2}, {population.Mixed, 4, 3}} {
		nodes, err := population.Generate(tc.kind, n, tc.dims, tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		points := make([]can.Point, n)
		for i, nd := range nodes {
			points[i] = nd.Point
		}
		cfg := overlay.Config{HeartbeatPeriod: 30 * time.Second}
		window := time.Minute
		b, err := sim.BuildOverlay(context.Background(), sim.BootstrapOptions{Seed: tc.seed, Overlay: cfg, Points: points, JoinWindow: window})
		if err != nil {
			t.Fatalf("seed %d %s d=%d: %v", tc.seed, tc.kind, tc.dims, err)
		}
		rep := b.Oracle
		if rep.Members != n || rep.BrokenLinks != 0 || rep.StaleLinks != 0 || rep.ZoneGaps != 0 || rep.ZoneOverlaps != 0 || b.At < window {
			t.Fatalf("seed %d %s: handover at %v: %+v", tc.seed, tc.kind, b.At, rep)
		}
		if b.Messages == 0 {
			t.Errorf("seed %d: the join phase exchanged no messages", tc.seed)
		}
		// The same run under the deterministic driver, joins and all.
		d := sim.NewDriver(sim.DriverOptions{Seed: tc.seed, Overlay: cfg})
		for i, p := range points {
			if err := d.Spawn(core.NodeID(i+1), p, time.Duration(int64(window)*int64(i)/int64(n))); err != nil {
				t.Fatal(err)
			}
		}
		d.Start()
		if err := d.AdvanceTo(context.Background(), b.At); err != nil {
			t.Fatal(err)
		}
		st, _ := d.Collect(context.Background())
		for i, m := range b.Members {
			got, want := m.Node.Snapshot(), st[i].Snapshot
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d %s: peer %d differs from the join phase:\n got %+v\nwant %+v", tc.seed, tc.kind, i+1, got, want)
			}
			beats := 0
			for _, tm := range m.Timers {
				if tm.At <= b.At {
					t.Errorf("peer %d: timer %+v not after the handover %v", i+1, tm, b.At)
				}
				if tm.Kind == core.TimerHeartbeat {
					beats++
				}
			}
			if beats != 1 {
				t.Errorf("peer %d: %d heartbeat timers pending, want 1", i+1, beats)
			}
		}
		t.Logf("seed %d %s d=%d: %d peers, handover at %v, %d messages in memory", tc.seed, tc.kind, tc.dims, n, b.At, b.Messages)
	}
}

// TestBuildOverlayStopsWhenInterrupted: an interrupted command does not
// wait for the join phase: BuildOverlay returns ctx's error, saying when.
func TestBuildOverlayStopsWhenInterrupted(t *testing.T) {
	nodes, err := population.Generate(population.Mixed, 50, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	points := make([]can.Point, len(nodes))
	for i, nd := range nodes {
		points[i] = nd.Point
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = sim.BuildOverlay(ctx, sim.BootstrapOptions{Seed: 1, Overlay: overlay.Config{HeartbeatPeriod: 30 * time.Second}, Points: points, JoinWindow: time.Minute})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("got %v, want an interruption wrapping context.Canceled", err)
	}
}
