package overlay

import "github.com/gridbed/gridbed/actors/core"

// HeartbeatMode is what a heartbeat carries (002 §4.2): Config.Mode.
type HeartbeatMode string

// Heartbeat modes (002 §4.2).
const (
	HeartbeatVanilla  HeartbeatMode = "vanilla"  // the full neighbor list to every neighbor
	HeartbeatCompact  HeartbeatMode = "compact"  // the full list only to take-over nodes
	HeartbeatAdaptive HeartbeatMode = "adaptive" // compact + FULL-UPDATE requests on broken links
)

// HeartbeatModes lists the heartbeat modes in the dissertation's order.
var HeartbeatModes = []HeartbeatMode{HeartbeatVanilla, HeartbeatCompact, HeartbeatAdaptive}

// ParseHeartbeatMode returns the heartbeat mode named s.
func ParseHeartbeatMode(s string) (HeartbeatMode, error) {
	return core.ParseEnum(s, "heartbeat mode", HeartbeatModes)
}

func (m HeartbeatMode) String() string { return string(m) }

// SplitRule is how an owner divides its zone at a join: Config.Split.
type SplitRule string

// Zone split rules at a join.
const (
	// SplitKD cuts between the two fixed points when the zone's midpoint
	// does not separate them (002 §4.2.2: a distributed KD-tree; can.Split).
	SplitKD SplitRule = "kd"
	// SplitHalve always halves the zone like the original CAN, moving the
	// joiner's virtual coordinate when only the virtual dimension can
	// separate the points (002 §4.2.2: coordinates never change except
	// along the virtual dimension; can.Halve).
	SplitHalve SplitRule = "halve"
)

// SplitRules lists the split rules.
var SplitRules = []SplitRule{SplitKD, SplitHalve}

// ParseSplitRule returns the split rule named s.
func ParseSplitRule(s string) (SplitRule, error) { return core.ParseEnum(s, "split rule", SplitRules) }

func (r SplitRule) String() string { return string(r) }
