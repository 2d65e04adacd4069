package bus

// Batched fan-out on the NATS bus (NATSOptions.Batched, bus.fanout:
// batched): PublishBatch sends the messages of a batch for the addresses of
// one shard as one NATS message, a batch frame (frame.go), on that shard's
// connection; the receiving connection's subscription hands each message
// of the frame to its address's handler. Every counter of Stats but
// Transport still counts messages one by one, so the invariant of
// Stats holds in logical messages:
//
//   - Published, PublishErrs, Refused count a frame's messages;
//   - Delivered, Unroutable and Discarded count them as they are handed
//     over (or not);
//   - Dropped: nats.go counts a dropped NATS message; a dropped frame is
//     turned into its messages when the next frame of its publisher shows
//     the gap in the frames' numbering (frameHeader seq, before) — until
//     then it counts as one and Unsettled shows the rest;
//   - Lost: an outage loses the last NATS messages a connection published
//     (StopServer counts how many); a per-connection ring of the running
//     message counts after each NATS message turns them into messages, and
//     the gap they later leave in the frames' numbering is not counted
//     again as Dropped.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/nats-io/nats.go"
)

// tailRing is how many of its latest NATS messages a connection remembers
// the running counts of: an outage that loses more of them in transit
// counts the excess one message per NATS message (and logs it).
const tailRing = 1 << 14

// maxPublishers bounds the publishers whose frame numbering a subscription
// follows; frames of further publishers are delivered without gap
// counting.
const maxPublishers = 4096

// tailCounts are a connection's running counts after one of its NATS
// messages.
type tailCounts struct {
	messages    uint64 // logical messages published
	frames      uint64 // frames published
	frameMsgs   uint64 // messages in those frames
	natsMsgsOut uint64 // NATS messages published (the ring's index)
}

// frameState is where a publisher's frame numbering stands at a receiver.
type frameState struct{ nextSeq, nextBefore uint64 }

// batchState is a shard's bookkeeping for batched fan-out.
type batchState struct {
	// Publishing side, guarded by pubMu, which is held around each
	// nc.Publish so the running counts follow the connection's order.
	pubMu     sync.Mutex
	publisher uint64 // random id in the frames this connection publishes
	out       tailCounts
	ring      []tailCounts
	transport atomic.Uint64

	// Receiving side, on the subscription's goroutine (under deliverMu).
	senders map[uint64]frameState
	// Gaps in the frames' numbering (frames and their messages), and the
	// part of them StopServer already counted as Lost.
	gapFrames, gapMsgs         atomic.Uint64
	excusedFrames, excusedMsgs atomic.Uint64
}

func (s *shard) initBatch() {
	var id [8]byte
	_, _ = rand.Read(id[:])
	s.publisher = binary.LittleEndian.Uint64(id[:])
	s.ring = make([]tailCounts, tailRing)
	s.senders = map[uint64]frameState{}
}

// publishCounted publishes one NATS message on s's connection carrying n
// messages (a frame if frame) and, if it was accepted, advances the
// connection's running counts.
func (s *shard) publishCounted(subj string, data []byte, n uint64, frame bool) error {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if err := s.nc.Publish(subj, data); err != nil {
		return err
	}
	s.record(n, frame)
	return nil
}

// record advances the running counts by one NATS message of n messages;
// pubMu is held.
func (s *shard) record(n uint64, frame bool) {
	o := &s.out
	o.natsMsgsOut++
	o.messages += n
	if frame {
		o.frames++
		o.frameMsgs += n
	}
	s.ring[o.natsMsgsOut%tailRing] = *o
	s.transport.Add(1)
}

// lostTail turns the last d NATS messages the connection published — lost
// in an outage — into messages, and excuses the frames among them from the
// gap counting. Without batching, or beyond the ring, a NATS message counts
// as one message.
func (s *shard) lostTail(d uint64) uint64 {
	if !s.b.batched {
		return d
	}
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	now := s.out
	if d > now.natsMsgsOut || d >= tailRing {
		s.b.log.Warn("bus outage: more NATS messages lost in transit than the ring remembers; the excess counts one message each", "lost_nats_messages", d, "ring", tailRing)
		return d
	}
	var then tailCounts
	if i := now.natsMsgsOut - d; i > 0 {
		then = s.ring[i%tailRing]
	}
	s.excusedFrames.Add(now.frames - then.frames)
	s.excusedMsgs.Add(now.frameMsgs - then.frameMsgs)
	return now.messages - then.messages
}

// droppedMessages is the shard's Stats().Dropped: nats.go's count of
// dropped NATS messages with every frame the numbering showed missing
// (and StopServer did not count as lost) replaced by its messages.
func (s *shard) droppedMessages() uint64 {
	n := s.dropped()
	if !s.b.batched {
		return n
	}
	f := satSub(s.gapFrames.Load(), s.excusedFrames.Load())
	m := satSub(s.gapMsgs.Load(), s.excusedMsgs.Load())
	return n - min(f, n) + m
}

func satSub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// framePool lends PublishBatch its frame buffers.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// PublishBatch publishes msgs, in order, with one NATS message per
// connection of their receivers: a shard's single message as Publish
// sends it, several as a batch frame (frame.go) on the shard's subject
// gb.<run>.<shard>.b. Messages to different shards are not ordered among
// themselves (as with Publish, they travel on different connections). It
// counts messages as Publish does, one by one (Stats), and returns the
// first error. Without NATSOptions.Batched it is Publish message by message.
func (b *NATSBus) PublishBatch(msgs []Message) error {
	if !b.batched || len(msgs) == 1 {
		var first error
		for _, m := range msgs {
			if err := b.Publish(m.To, m.Data); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	if b.closed.Load() {
		b.closedPublishErrs.Add(uint64(len(msgs)))
		return ErrClosed
	}
	var (
		first error
		taken = make([]bool, len(msgs))
		idx   = make([]int, 0, len(msgs))
	)
	for i := range msgs {
		if taken[i] {
			continue
		}
		k := uint64(msgs[i].To) % b.n
		idx = idx[:0]
		for j := i; j < len(msgs); j++ {
			if !taken[j] && uint64(msgs[j].To)%b.n == k {
				taken[j] = true
				idx = append(idx, j)
			}
		}
		var err error
		if len(idx) == 1 {
			err = b.Publish(msgs[i].To, msgs[i].Data)
		} else {
			err = b.shards[k].publishFrame(msgs, idx)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// publishFrame publishes msgs[i] for i in idx (at least two, all of s's
// shard) as one frame.
func (s *shard) publishFrame(msgs []Message, idx []int) error {
	var sb [subjBufLen]byte
	subj := append(append(sb[:0], s.prefix...), frameToken...)
	buf := framePool.Get().(*[]byte)
	defer framePool.Put(buf)
	n := uint64(len(idx))
	s.pubMu.Lock()
	h := frameHeader{publisher: s.publisher, seq: s.out.frames + 1, before: s.out.frameMsgs}
	*buf = appendFrame((*buf)[:0], h, msgs, idx)
	err := s.nc.Publish(unsafe.String(unsafe.SliceData(subj), len(subj)), *buf)
	if err == nil {
		s.record(n, true)
	}
	s.pubMu.Unlock()
	return s.settlePublish(err, n, msgs[idx[0]].To)
}

// onFrame delivers the messages of a batch frame, after counting the
// frames of its publisher that never arrived. A malformed frame counts as
// one Unroutable message.
func (s *shard) onFrame(data []byte) {
	h, body, err := parseFrame(data)
	if err != nil {
		s.unroutable.Add(1)
		return
	}
	if s.senders != nil {
		st, ok := s.senders[h.publisher]
		if !ok {
			st = frameState{nextSeq: 1}
		}
		if ok || len(s.senders) < maxPublishers {
			if h.seq >= st.nextSeq {
				s.gapFrames.Add(h.seq - st.nextSeq)
				s.gapMsgs.Add(satSub(h.before, st.nextBefore))
				s.senders[h.publisher] = frameState{nextSeq: h.seq + 1, nextBefore: h.before + uint64(h.count)}
			}
		}
	}
	for range h.count {
		to, msg, rest, _ := nextEntry(body) // parseFrame checked every entry
		body = rest
		if h.count > 1 {
			// Each message gets its own bytes, as it would alone: a
			// receiver that keeps part of its message (lazily decoded
			// lists) must not pin the whole frame. Measured at 20,000
			// peers without this copy: twice the live heap.
			msg = bytes.Clone(msg)
		}
		s.deliver(to, msg)
	}
}

// frameMessages is how many messages the NATS message m carries: a
// frame's count, or 1.
func frameMessages(m *nats.Msg) uint64 {
	subj := m.Subject
	if len(subj) < 2 || subj[len(subj)-2:] != "."+frameToken {
		return 1
	}
	h, _, err := parseFrame(m.Data)
	if err != nil {
		return 1
	}
	return uint64(h.count)
}

var _ Batcher = (*NATSBus)(nil)
