// Package trace writes a run's messages, faults, job state changes and
// oracle samples as a Chrome / Perfetto trace (the trace-event format's
// JSON object form), so that a run opens in ui.perfetto.dev or
// chrome://tracing without conversion: one track per peer, each message a
// slice on its sender's track when sent and on its receiver's when
// delivered, a flow arrow from one to the other; messages that were sent
// but never delivered (dropped by the link model or a partition, or still
// in flight at the end) are marked where they were sent.
//
// A Writer is the run's emulator.MessageTap (gridbed run --trace); Finish
// adds what the run's result holds (faults, job histories, oracle
// samples) and closes the file. Filters keep a large run's trace small:
// a set of peers (a message is kept when its sender or receiver is one of
// them), message types, and a window of emulated time.
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wire"
	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/bus"
)

// Filter selects what a trace keeps; its zero value keeps everything.
type Filter struct {
	// Peers, if not nil, keeps the messages whose sender or receiver is
	// one of these peers (ids from 1; 0 is the job client), and only
	// their tracks' job steps.
	Peers map[core.NodeID]bool
	// Types, if not nil, keeps the messages of these types.
	Types map[wire.MsgType]bool
	// From and To bound the emulated time kept (To 0: to the end).
	From, To time.Duration
}

// ParsePeers reads a set of peers written as ids and ranges, "0-20,35".
func ParsePeers(s string) (map[core.NodeID]bool, error) {
	out := map[core.NodeID]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 32)
		}
		if err != nil || b < a {
			return nil, fmt.Errorf("peers %q: write ids and ranges of ids, e.g. 0-20,35", s)
		}
		if b-a > 1_000_000 {
			return nil, fmt.Errorf("peers %q: a range of more than a million peers", s)
		}
		for id := a; id <= b; id++ {
			out[core.NodeID(id)] = true
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("peers %q: no peer named: write ids and ranges of ids, e.g. 0-20,35", s)
	}
	return out, nil
}

// ParseTypes reads a set of message types by the names summary.json's
// messages.by_type uses, "heartbeat,join,zone_update".
func ParseTypes(s string) (map[wire.MsgType]bool, error) {
	byName := map[string]wire.MsgType{}
	var names []string
	for v := range wire.MsgType_name {
		if v != 0 {
			n := wire.Name(wire.MsgType(v))
			byName[n] = wire.MsgType(v)
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := map[wire.MsgType]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		t, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("message type %q: not one of %s", n, strings.Join(names, ", "))
		}
		out[t] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("message types %q: none named", s)
	}
	return out, nil
}

// Process ids of the trace: the peers' tracks, and the run's own.
const (
	pidPeers = 1
	pidRun   = 2
	// Track ids of the run's process.
	tidFaults = 1
	tidOracle = 2
	// tidClient is the job client's track among the peers' (peer ids
	// start at 1).
	tidClient = 0
)

// Writer writes a trace as the run goes; it is the run's
// emulator.MessageTap. Its methods may be called from many goroutines.
type Writer struct {
	f Filter

	mu      sync.Mutex
	w       *bufio.Writer
	err     error
	n       int // events written
	flows   uint64
	pending map[key]sent // sent, kept, not yet delivered
	tracks  map[uint64]bool
	c       Counts
}

// Counts are the messages a trace kept: sent, delivered with their send,
// delivered without a matching send (a duplicate copy, bytes the link
// corrupted, or sent before the window), sent but never delivered
// (Finish).
type Counts struct {
	Sent, Delivered, Unmatched, Undelivered uint64
}

// Counts returns what the trace kept so far.
func (t *Writer) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c
}

// key identifies one message: its envelope's sender, receiver and
// sequence number.
type key struct{ from, to, seq uint64 }

// sent is a message kept on its way.
type sent struct {
	flow uint64
	at   time.Duration
	typ  wire.MsgType
	n    int
}

// New returns a Writer that writes to w with filter f.
func New(w io.Writer, f Filter) *Writer {
	t := &Writer{f: f, w: bufio.NewWriterSize(w, 1<<16), pending: map[key]sent{}, tracks: map[uint64]bool{}}
	t.raw(`{"traceEvents":[`)
	return t
}

// track is the track of an address: a peer's id, the job client's 0.
func track(a uint64) uint64 {
	if a == uint64(peer.ClientAddress) {
		return tidClient
	}
	return a
}

// keeps says whether the filter keeps a message of type t between from
// and to at emulated time at.
func (t *Writer) keeps(at time.Duration, typ wire.MsgType, from, to uint64) bool {
	if at < t.f.From || (t.f.To > 0 && at > t.f.To) {
		return false
	}
	if t.f.Types != nil && !t.f.Types[typ] {
		return false
	}
	return t.f.Peers == nil || t.f.Peers[core.NodeID(track(from))] || t.f.Peers[core.NodeID(track(to))]
}

// Sent implements emulator.MessageTap: a slice on the sender's track and
// the start of the message's flow.
func (t *Writer) Sent(at time.Duration, to bus.Address, data []byte) {
	h, ok := wire.PeekHeader(data)
	if !ok || !t.keeps(at, h.Type, h.From, uint64(to)) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flows++
	k := key{h.From, uint64(to), h.Seq}
	t.pending[k] = sent{flow: t.flows, at: at, typ: h.Type, n: len(data)}
	t.c.Sent++
	name := wire.Name(h.Type)
	from := track(h.From)
	t.tracks[from] = true
	t.event(fmt.Sprintf(`{"name":"send %s","cat":"message","ph":"X","ts":%s,"dur":1,"pid":%d,"tid":%d,"args":{"to":%d,"bytes":%d,"seq":%d}}`,
		name, ts(at), pidPeers, from, uint64(to), len(data), h.Seq))
	t.event(fmt.Sprintf(`{"name":"%s","cat":"message","ph":"s","id":%d,"ts":%s,"pid":%d,"tid":%d}`, name, t.flows, ts(at), pidPeers, from))
}

// Delivered implements emulator.MessageTap: a slice on the receiver's
// track and the end of the message's flow (none for a copy whose send
// was already matched, or bytes the link changed).
func (t *Writer) Delivered(at time.Duration, to bus.Address, data []byte) {
	h, ok := wire.PeekHeader(data)
	if !ok || !t.keeps(at, h.Type, h.From, uint64(to)) {
		if !ok && t.f.Types == nil && (t.f.Peers == nil || t.f.Peers[core.NodeID(track(uint64(to)))]) && at >= t.f.From && (t.f.To == 0 || at <= t.f.To) {
			t.mu.Lock()
			t.c.Unmatched++
			t.tracks[track(uint64(to))] = true
			t.event(fmt.Sprintf(`{"name":"recv (unreadable: corrupted?)","cat":"message","ph":"X","ts":%s,"dur":1,"pid":%d,"tid":%d,"args":{"bytes":%d}}`,
				ts(at), pidPeers, track(uint64(to)), len(data)))
			t.mu.Unlock()
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := wire.Name(h.Type)
	rcv := track(uint64(to))
	t.tracks[rcv] = true
	k := key{h.From, uint64(to), h.Seq}
	s, ok := t.pending[k]
	if !ok {
		t.c.Unmatched++
		t.event(fmt.Sprintf(`{"name":"recv %s (no matching send: a duplicate, or sent before the window)","cat":"message","ph":"X","ts":%s,"dur":1,"pid":%d,"tid":%d,"args":{"from":%d,"bytes":%d,"seq":%d}}`,
			name, ts(at), pidPeers, rcv, h.From, len(data), h.Seq))
		return
	}
	delete(t.pending, k)
	t.c.Delivered++
	t.event(fmt.Sprintf(`{"name":"recv %s","cat":"message","ph":"X","ts":%s,"dur":1,"pid":%d,"tid":%d,"args":{"from":%d,"bytes":%d,"seq":%d,"latency_ms":%s}}`,
		name, ts(at), pidPeers, rcv, h.From, len(data), h.Seq, num(float64(at-s.at)/1e6)))
	t.event(fmt.Sprintf(`{"name":"%s","cat":"message","ph":"f","bp":"e","id":%d,"ts":%s,"pid":%d,"tid":%d}`, name, s.flow, ts(at), pidPeers, rcv))
}

// Finish marks the messages sent and never delivered, adds the run's
// faults (a track of their own), the job steps of the kept peers (on
// their tracks) and the oracle's samples (counters), names the tracks and
// closes the trace. res may be nil (a run that failed to finish).
func (t *Writer) Finish(res *emulator.Result) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]key, 0, len(t.pending))
	for k := range t.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := t.pending[a].at - t.pending[b].at; c != 0 {
			return int(math.Copysign(1, float64(c)))
		}
		return int(t.pending[a].flow) - int(t.pending[b].flow)
	})
	for _, k := range keys {
		s := t.pending[k]
		t.c.Undelivered++
		t.event(fmt.Sprintf(`{"name":"not delivered: %s to %d","cat":"message","ph":"i","s":"t","ts":%s,"pid":%d,"tid":%d,"args":{"bytes":%d,"seq":%d,"why":"dropped by the link model, a partition or an outage, or in flight at the end"}}`,
			wire.Name(s.typ), k.to, ts(s.at), pidPeers, track(k.from), s.n, k.seq))
	}
	if res != nil {
		t.run(res)
	}
	t.event(fmt.Sprintf(`{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":"peers"}}`, pidPeers))
	t.event(fmt.Sprintf(`{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":"run"}}`, pidRun))
	t.event(fmt.Sprintf(`{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"faults"}}`, pidRun, tidFaults))
	t.event(fmt.Sprintf(`{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"oracle"}}`, pidRun, tidOracle))
	ids := make([]uint64, 0, len(t.tracks))
	for id := range t.tracks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		name := "peer " + strconv.FormatUint(id, 10)
		if id == tidClient {
			name = "job client"
		}
		t.event(fmt.Sprintf(`{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":%s}}`, pidPeers, id, jstr(name)))
		t.event(fmt.Sprintf(`{"name":"thread_sort_index","ph":"M","pid":%d,"tid":%d,"args":{"sort_index":%d}}`, pidPeers, id, id))
	}
	other := map[string]any{"generator": "gridbed run --trace", "time": "emulated time, in the trace's microseconds",
		"sent": t.c.Sent, "delivered": t.c.Delivered, "unmatched": t.c.Unmatched, "undelivered": t.c.Undelivered}
	if res != nil {
		other["scenario"], other["seed"], other["outcome"] = res.Scenario.Name, res.Scenario.Seed, res.Summary.Outcome
	}
	o, err := json.Marshal(other)
	if err != nil {
		return err
	}
	t.raw(`],"displayTimeUnit":"ms","otherData":` + string(o) + "}\n")
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// run adds the result's faults, job steps and oracle samples.
func (t *Writer) run(res *emulator.Result) {
	in := func(at time.Duration) bool { return at >= t.f.From && (t.f.To == 0 || at <= t.f.To) }
	for _, e := range res.Summary.Faults.Events {
		at := time.Duration(e.TSeconds * 1e9)
		if in(at) {
			t.event(fmt.Sprintf(`{"name":%s,"cat":"fault","ph":"i","s":"g","ts":%s,"pid":%d,"tid":%d,"args":{"detail":%s}}`,
				jstr(e.Kind), ts(at), pidRun, tidFaults, jstr(e.Detail)))
		}
	}
	for _, row := range res.Jobs {
		for _, st := range row.Record.History {
			if !in(st.At) || (t.f.Peers != nil && !t.f.Peers[core.NodeID(track(uint64(st.Peer)))]) {
				continue
			}
			tid := track(uint64(st.Peer))
			t.tracks[tid] = true
			t.event(fmt.Sprintf(`{"name":%s,"cat":"job","ph":"i","s":"t","ts":%s,"pid":%d,"tid":%d,"args":{"other":%d,"reason":%s}}`,
				jstr(fmt.Sprintf("job %d %s", row.Record.ID, st.Event)), ts(st.At), pidPeers, tid, uint64(st.Other), jstr(st.Reason)))
		}
	}
	for _, s := range res.Series {
		if !in(s.T) {
			continue
		}
		o := s.Oracle
		t.event(fmt.Sprintf(`{"name":"overlay","cat":"oracle","ph":"C","ts":%s,"pid":%d,"tid":%d,"args":{"members":%d,"broken_links":%d,"zone_gaps":%d,"overlaps":%d}}`,
			ts(s.T), pidRun, tidOracle, o.Members, o.BrokenLinks, o.ZoneGaps, o.ZoneOverlaps))
	}
}

// event writes one event (the caller holds mu).
func (t *Writer) event(s string) {
	if t.n > 0 {
		t.raw(",\n")
	} else {
		t.raw("\n")
	}
	t.n++
	t.raw(s)
}

func (t *Writer) raw(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

// ts is an emulated time in the trace's unit, microseconds.
func ts(at time.Duration) string { return num(float64(at) / 1e3) }

// jstr is s as a JSON string.
func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
