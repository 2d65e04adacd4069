package link

import (
	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/faults/bandwidth"
)

// Chain is the full link model: Partition → Loss → Duplicate → Corrupt →
// Bandwidth → Delay → inner bus. Bandwidth (faults/bandwidth) queues a message behind
// the others on its sender's uplink and its receiver's downlink before the
// latency. A partition or loss decision is taken at send time, before any
// delay, and each copy of a duplicated message is delayed independently. All
// faults are off until their setters are called. The Chain is itself a
// bus.Bus whose Publish enters the Partition layer; Register, Unregister,
// Stats and Close go to the inner bus.
type Chain struct {
	Partition *Partition
	Loss      *Loss
	Duplicate *Duplicate
	Corrupt   *Corrupt
	Bandwidth *bandwidth.Shaper
	Delay     *Delay

	inner // the wrapped bus
}

// ChainStats are the counters of the layers of a Chain.
type ChainStats struct {
	DroppedPartition uint64 // messages dropped by a partition cut
	DroppedLoss      uint64 // messages dropped by loss
	Duplicated       uint64 // extra copies published by duplication
	Corrupted        uint64 // messages (copies included) published with a changed byte
	Delayed          uint64 // messages (copies included) delayed by more than 0
	// DelayPending counts delayed messages (copies included) not yet due:
	// at the end of a run, those still in the link-delay queue.
	DelayPending uint64
}

// NewChain stacks the five decorators over inner. sched runs delayed
// publishes; every layer draws from its own stream derived from seed.
func NewChain(inner bus.Bus, sched Scheduler, seed uint64) *Chain {
	c := &Chain{inner: inner}
	c.Delay = NewDelay(inner, sched, seed)
	c.Bandwidth = bandwidth.New(c.Delay, sched, seed)
	c.Corrupt = NewCorrupt(c.Bandwidth, seed)
	c.Duplicate = NewDuplicate(c.Corrupt, seed)
	c.Loss = NewLoss(c.Duplicate, seed)
	c.Partition = NewPartition(c.Loss)
	return c
}

// Publish sends data through the faults to the inner bus.
func (c *Chain) Publish(to bus.Address, data []byte) error { return c.Partition.Publish(to, data) }

// PublishBatch sends each message of msgs through the faults, taking for
// each (sender, receiver) exactly the decisions — and the seeded draws, in
// the same order — that Publish would one message after the other, so a run
// is the same whatever the fan-out mode. The messages that leave the chain
// at once go to the inner bus as batches (bus.PublishBatch); a delayed one
// is published alone when due. A delayed message ends the batch before it,
// so the inner bus sees every message in the order Publish would have
// given it. It returns the first error.
func (c *Chain) PublishBatch(msgs []bus.Message) error {
	var (
		first error
		run   []bus.Message
	)
	send := func() {
		if len(run) == 0 {
			return
		}
		if err := bus.PublishBatch(c.inner, run); err != nil && first == nil {
			first = err
		}
		run = run[:0]
	}
	for _, m := range msgs {
		if c.Partition.drops(m.To, m.Data) || c.Loss.lose() {
			continue
		}
		copies := 1
		if c.Duplicate.twice() {
			copies = 2
		}
		for i := range copies {
			data := m.Data
			if i == 1 {
				data = cloneBytes(m.Data)
			}
			data = c.Corrupt.corrupt(data)
			if c.Bandwidth.Hold(m.To, data) {
				continue // queued for the access links: on to Delay.Publish later
			}
			if delay := c.Delay.sample(m.To, data); delay > 0 {
				send() // the messages before it first, as Publish would
				c.Delay.hold(m.To, data, delay)
				continue
			}
			if run == nil {
				run = make([]bus.Message, 0, len(msgs))
			}
			run = append(run, bus.Message{To: m.To, Data: data})
		}
	}
	send()
	return first
}

// Faults returns the counters of the chain's layers.
func (c *Chain) Faults() ChainStats {
	return ChainStats{
		DroppedPartition: c.Partition.Faults().Dropped,
		DroppedLoss:      c.Loss.Faults().Dropped,
		Duplicated:       c.Duplicate.Faults().Duplicated,
		Corrupted:        c.Corrupt.Faults().Corrupted,
		Delayed:          c.Delay.Faults().Delayed,
		DelayPending:     c.Delay.Faults().Pending,
	}
}
