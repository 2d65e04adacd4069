// The adaptive heartbeat scheme (002 §4.2.3): the border check and full
// updates on request.

package overlay

import (
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// checkBorder is the adaptive scheme's local broken-link detection (002
// §4.2.3): if part of our zone's border (not on the space boundary) is not
// covered by the zones of known neighbors, we ask every neighbor for its
// full neighbor list. While a hole persists after such a round (space nobody
// owns: the oracle's zone gaps) we ask again after 1, 2, 4, … up to 16
// periods instead of every period — a choice of ours; the paper does not say.
func (n *Node) checkBorder(now time.Duration) {
	if !n.borderHasHole(now) {
		n.fullBackoff = 0
		return
	}
	n.status.BrokenDetected++
	wait := time.Duration(max(n.fullBackoff, 1)) * n.cfg.HeartbeatPeriod
	if n.lastFullReq != 0 && now-n.lastFullReq < wait {
		return
	}
	n.fullBackoff = min(max(2*n.fullBackoff, 1), 16)
	n.requestFullUpdates(now)
}

// requestFullUpdates asks every neighbor for its full neighbor list
// (adaptive heartbeat, 002 §4.2.3).
func (n *Node) requestFullUpdates(now time.Duration) {
	n.lastFullReq = now
	n.status.FullUpdateReqs++
	req := &wire.FullUpdateRequest{Self: n.info()}
	for _, nb := range n.nbrs {
		n.send(nb.ID, req)
	}
}

// borderHasHole reports whether some face of one of our zones, not on the
// space boundary, is not completely covered by abutting zones: known
// neighbors' zones, our other zones, and awaited zones. Areas are compared
// in floating point relative to the face: a hole smaller than a billionth
// of a face goes unnoticed (the oracle counts exactly).
func (n *Node) borderHasHole(now time.Duration) bool {
	var cover []can.Zone
	for _, a := range n.awaited {
		if a.until > now {
			cover = append(cover, a.zones...) // may double count a part already taken over: a hole then hides for a while
		}
	}
	for _, nb := range n.nbrs {
		cover = append(cover, nb.Zone)
		cover = append(cover, nb.Extra...)
	}
	mine := n.zones()
	cover = append(cover, mine...)
	for _, z := range mine {
		if can.FaceHasHole(z, cover) {
			return true
		}
	}
	return false
}

func (n *Node) onFullUpdateRequest(now time.Duration, from core.NodeID, m *wire.FullUpdateRequest) {
	if !n.joined || !n.validSender(from, m.Self) {
		return
	}
	n.learn(now, m.Self, fromSelf)
	n.status.FullUpdatesSent++
	n.send(from, &wire.FullUpdate{Self: n.info(), Neighbors: n.heardList()})
}

func (n *Node) onFullUpdate(now time.Duration, from core.NodeID, m *wire.FullUpdate) {
	if !n.joined || !n.validSender(from, m.Self) {
		return
	}
	n.learn(now, m.Self, fromSelf)
	for _, info := range m.Neighbors {
		n.learn(now, info, fromRelay)
	}
}
