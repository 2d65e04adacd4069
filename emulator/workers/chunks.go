package workers

// The oracle's collect in chunks: a worker's answer to collect carries its
// counters, and its peers' states travel beside it in chunks of at most
// Options.ChunkBytes each (a few hundred bytes per state: one message for
// all of them would hit the server's max payload, 8 MB, at about 60,000
// peers per worker). The worker publishes the chunks, numbered from 0, on
// the subject the collect names, then answers with their count; its
// messages reach the coordinator in the order it published them, so the
// coordinator's chunkSet puts them together in order and names any chunk
// that did not arrive.

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gridbed/gridbed/actors/peer"
)

// DefaultChunkBytes bounds one chunk of a collect's states when
// Options.ChunkBytes is 0.
const DefaultChunkBytes = 1 << 20

// chunkWait bounds how long the coordinator waits, after a worker's
// answer to collect, for the chunks it names (published before it on the
// same connection, they are normally here already).
const chunkWait = 10 * time.Second

// StateChunk is one chunk of a worker's peer states (collect).
type StateChunk struct {
	Seq    int // 0, 1, … within one answer
	States []peer.State
}

// publishChunks publishes states on subj in chunks of at most limit
// bytes each (a state larger than limit goes alone) and returns how many.
// A chunk's size is known only once encoded: it starts from a guess of
// states per chunk, halves it while a chunk comes out too large, and
// adjusts the guess to the bytes per state of each chunk it sends.
func publishChunks(nc *nats.Conn, subj string, states []peer.State, limit int) (int, error) {
	if limit <= 0 {
		limit = DefaultChunkBytes
	}
	n := max(1, limit/256)
	seq := 0
	for i := 0; i < len(states) || seq == 0; {
		k := min(n, len(states)-i)
		data := encode(StateChunk{Seq: seq, States: states[i : i+k]})
		if len(data) > limit && k > 1 {
			n = max(1, k/2)
			continue
		}
		if err := nc.Publish(subj, data); err != nil {
			return seq, fmt.Errorf("chunk %d (%d states, %d bytes): %w", seq, k, len(data), err)
		}
		if k > 0 {
			n = max(1, k*limit*9/10/len(data)) // aim below the limit
		}
		i += k
		seq++
	}
	return seq, nil
}

// chunkSet gathers the chunks of one worker's answer to collect, in
// order. A chunk 0 starts the set afresh (a collect asked again after a
// bus outage).
type chunkSet struct {
	mu     sync.Mutex
	next   int // the Seq expected next
	states []peer.State
	err    error // a chunk out of order or that did not decode
	more   chan struct{}
}

func newChunkSet() *chunkSet { return &chunkSet{more: make(chan struct{}, 1)} }

// add takes one chunk as it arrives.
func (s *chunkSet) add(data []byte) {
	var c StateChunk
	err := decode(data, &c)
	s.mu.Lock()
	switch {
	case err != nil:
		s.err = cmpErr(s.err, err)
	case c.Seq == 0:
		s.next, s.states, s.err = 1, c.States, nil
	case c.Seq != s.next:
		s.err = cmpErr(s.err, fmt.Errorf("chunk %d arrived after chunk %d: chunk %d is missing", c.Seq, s.next-1, s.next))
	default:
		s.next++
		s.states = append(s.states, c.States...)
	}
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// wait returns the states of the of chunks, in order, once they have all
// arrived — or an error naming the first one missing after timeout.
func (s *chunkSet) wait(of int, timeout time.Duration) ([]peer.State, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		next, states, err := s.next, s.states, s.err
		s.mu.Unlock()
		switch {
		case err != nil:
			return nil, err
		case next >= of:
			return slices.Clip(states), nil
		}
		select {
		case <-s.more:
		case <-t.C:
			return nil, fmt.Errorf("%d of %d chunks arrived within %v: chunk %d is missing", next, of, timeout, next)
		}
	}
}
