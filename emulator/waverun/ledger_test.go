package waverun

import (
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wave"
)

// The ledger accounts for every job once and catches a duplicate, a job
// on two hosts, a host with two jobs and a job lost without a cause; a
// transfer given up unacknowledged leaves the job where it went — lost
// with that reason, or on the host it reached.
func TestLedger(t *testing.T) {
	h := time.Hour
	sub := func(j uint32) wave.Event {
		return wave.Event{Kind: wave.Submitted, Job: j, At: 0, Runtime: 2 * h}
	}
	place := func(j uint32, host core.NodeID, mig bool, at time.Duration) wave.Event {
		return wave.Event{Kind: wave.Placed, Job: j, Host: host, Migration: mig, At: at}
	}
	for _, tc := range []struct {
		name       string
		events     []wave.Event
		live       map[core.NodeID]wave.Snapshot
		departures bool
		ok         bool
		completed  int
		lost       int
	}{
		{"migrated and completed", []wave.Event{sub(0), place(0, 2, false, 0), {Kind: wave.Left, Job: 0, Host: 2, Work: 3600, At: h},
			place(0, 3, true, h), {Kind: wave.Completed, Job: 0, Host: 3, Work: 3600, At: 2 * h}}, nil, false, true, 1, 0},
		{"placed twice", []wave.Event{sub(0), place(0, 2, false, 0), place(0, 3, false, 0)}, nil, false, false, 0, 1},
		{"host with two jobs", []wave.Event{sub(0), sub(1), place(0, 2, false, 0), place(1, 2, false, 0)}, nil, false, false, 0, 2},
		{"left a host that did not hold it", []wave.Event{sub(0), place(0, 2, false, 0), {Kind: wave.Left, Job: 0, Host: 3, At: h}}, nil, false, false, 0, 1},
		{"crashed host: lost", []wave.Event{sub(0), place(0, 2, false, 0)}, nil, true, true, 0, 1},
		{"lost without a cause", []wave.Event{sub(0), place(0, 2, false, 0)}, nil, false, false, 0, 1},
		{"unfinished on its live host", []wave.Event{sub(0), place(0, 2, false, 0)}, map[core.NodeID]wave.Snapshot{2: {On: true, Holding: true, Job: 0}}, false, true, 0, 0},
		{"on two live hosts", []wave.Event{sub(0), place(0, 2, false, 0)}, map[core.NodeID]wave.Snapshot{2: {On: true, Holding: true, Job: 0}, 3: {On: true, Holding: true, Job: 0}}, false, false, 0, 1},
		{"ship given up, never arrived: lost with its reason", []wave.Event{sub(0), {Kind: wave.Unacked, Job: 0, Host: 1, At: h}}, nil, true, true, 0, 1},
		{"migration given up, arrived: on its host", []wave.Event{sub(0), place(0, 2, false, 0), {Kind: wave.Left, Job: 0, Host: 2, Work: 3600, At: h},
			place(0, 3, true, h), {Kind: wave.Unacked, Job: 0, Host: 2, At: 2 * h}}, map[core.NodeID]wave.Snapshot{3: {On: true, Holding: true, Job: 0}}, true, true, 0, 0},
		{"too little work", []wave.Event{sub(0), place(0, 2, false, 0), {Kind: wave.Completed, Job: 0, Host: 2, Work: 3600, At: 2 * h}}, nil, false, false, 1, 0},
	} {
		jobs := 0
		for _, e := range tc.events {
			jobs = max(jobs, int(e.Job)+1)
		}
		l := NewLedger(jobs)
		for _, e := range tc.events {
			l.WaveEvent(e)
		}
		res := l.Finish(3*h, tc.live, tc.departures)
		unacked := 0
		for _, e := range tc.events {
			if e.Kind == wave.Unacked && tc.lost > 0 {
				unacked++
			}
		}
		if res.LostUnacked != unacked {
			t.Errorf("%s: %d lost unacknowledged, want %d", tc.name, res.LostUnacked, unacked)
		}
		if res.Conservation != tc.ok || res.Completed != tc.completed || res.Lost != tc.lost {
			t.Errorf("%s: conservation %v (notes %v), %d completed, %d lost; want %v, %d, %d", tc.name, res.Conservation, res.ConservationNotes, res.Completed, res.Lost, tc.ok, tc.completed, tc.lost)
		}
	}
}
