package overlay

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/wire"
)

// lazyState fingerprints everything a node holds (the list cache itself
// and the kept lists aside, which onHeartbeat settles before it judges a
// list): its own zones and membership, the neighbor table as stored
// (entries, ids, boxes), the tombstones, the awaited zones and suspects,
// the timers' deadlines, the messages and timers asked for, the counters.
// Config.VerifyLazy compares it before and after merging a list the cache
// says changes nothing, so that a judgement resting on state its key does
// not cover — or a change mark does not see — is caught whatever it
// touched.
type lazyState struct {
	self, table, tombs, watch uint64
	msgs, timers              int
	status                    Status
}

// fnv is a 64-bit FNV-1a hash fed whole words.
type fnv uint64

func newFNV() fnv { return 0xcbf29ce484222325 }

func (h *fnv) add(vs ...uint64) {
	for _, v := range vs {
		*h = (*h ^ fnv(v)) * 0x100000001b3
	}
}

func (h *fnv) zone(z can.Zone) {
	h.add(uint64(len(z.Lo)))
	h.add(z.Lo...)
	h.add(z.Hi...)
}

func (h *fnv) zones(zs []can.Zone) {
	h.add(uint64(len(zs)))
	for _, z := range zs {
		h.zone(z)
	}
}

func (h *fnv) split(s *wire.Split) {
	if s == nil {
		h.add(0)
		return
	}
	up := uint64(0)
	if s.Upper {
		up = 1
	}
	h.add(1, uint64(s.Dim), s.At, up, s.Sibling)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (n *Node) lazyState() lazyState {
	self := newFNV()
	self.add(b2u(n.joined), b2u(n.left), uint64(n.contact), n.version, uint64(len(n.pending)))
	self.add(uint64(len(n.point)))
	for _, c := range n.point {
		self.add(uint64(c))
	}
	self.zone(n.zone)
	self.zones(n.extra)
	self.add(uint64(len(n.history)))
	for _, s := range n.history {
		self.split(s)
	}

	table := newFNV()
	table.add(uint64(len(n.nbrs)))
	for _, nb := range n.nbrs {
		table.add(uint64(nb.ID), nb.Version, uint64(nb.LastHeard), b2u(nb.Heard))
		table.zone(nb.Zone)
		table.zones(nb.Extra)
		table.split(nb.LastSplit)
	}
	for _, id := range n.ids {
		table.add(uint64(id))
	}
	table.add(n.boxes...)

	tombs := newFNV()
	ids := make([]core.NodeID, 0, len(n.gone))
	for id := range n.gone {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := n.gone[id]
		tombs.add(uint64(id), t.version, uint64(t.at), t.ours)
	}

	watch := newFNV()
	watch.add(uint64(n.nextBeat), uint64(n.joinRetry), uint64(n.lastFullReq), uint64(n.fullBackoff))
	watch.add(uint64(n.holeSince), b2u(n.holeSeen))
	for _, a := range n.awaited {
		watch.zones(a.zones)
		watch.add(uint64(a.until), uint64(a.claimAt), uint64(a.giveUp))
	}
	ids = ids[:0]
	for id := range n.suspects {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		watch.add(uint64(id), uint64(n.suspects[id]))
	}
	return lazyState{uint64(self), uint64(table), uint64(tombs), uint64(watch), len(n.ready.Messages), len(n.ready.Timers), n.status}
}

// diff names the parts of the state that differ between s and t.
func (s lazyState) diff(t lazyState) string {
	var d []string
	if s.self != t.self {
		d = append(d, "own zones or membership")
	}
	if s.table != t.table {
		d = append(d, "neighbor table")
	}
	if s.tombs != t.tombs {
		d = append(d, "tombstones")
	}
	if s.watch != t.watch {
		d = append(d, "awaited zones, suspects or deadlines")
	}
	if s.msgs != t.msgs {
		d = append(d, fmt.Sprintf("%d messages sent", t.msgs-s.msgs))
	}
	if s.timers != t.timers {
		d = append(d, fmt.Sprintf("%d timers set", t.timers-s.timers))
	}
	if s.status != t.status {
		a, b := reflect.ValueOf(s.status), reflect.ValueOf(t.status)
		for i := range a.NumField() {
			if x, y := a.Field(i).Uint(), b.Field(i).Uint(); x != y {
				d = append(d, fmt.Sprintf("%s %d → %d", a.Type().Field(i).Name, x, y))
			}
		}
	}
	return strings.Join(d, ", ")
}

// misjudged counts and reports (Config.OnMisjudged) a list from neighbor
// from that the cache judged to change nothing, and what it changed.
func (n *Node) misjudged(now time.Duration, from core.NodeID, cached bool, before, after lazyState, list []*wire.NodeInfo) {
	n.status.LazyMisjudged++
	if n.cfg.OnMisjudged == nil {
		return
	}
	how := "a cached judgement"
	if !cached {
		how = "a judgement about to be cached (mark saw no change)"
	}
	ids := make([]uint64, len(list))
	for i, info := range list {
		ids[i] = info.GetId()
	}
	n.cfg.OnMisjudged(n.id, fmt.Sprintf("node %d at %v: %s that %d's list changes nothing was wrong: it changed %s (list %v)",
		n.id, now, how, from, before.diff(after), ids))
}
