package emulator

import (
	"github.com/gridbed/gridbed/actors/chord"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/rnt"
	"github.com/gridbed/gridbed/emulator/scenario"
)

// rntSetupOf hosts 003 §5.1's Rendezvous Node Tree on the peers
// (matchmaking.scheme rnt): the ring is maintained, and the tree
// aggregated, every overlay heartbeat period, a node presumed failed
// after the heartbeats' fail_after periods; the extended search's k is
// matchmaking.rnt_candidates. The first peer founds the ring.
func rntSetupOf(sc scenario.Scenario) *peer.RNTSetup {
	return &peer.RNTSetup{
		Config: rnt.Config{
			Chord:      chord.Config{Period: sc.Overlay.Heartbeat.Period, FailAfter: sc.Overlay.Heartbeat.FailAfter},
			Candidates: sc.Matchmaking.RntCandidates,
		},
		Founder: 1,
	}
}
