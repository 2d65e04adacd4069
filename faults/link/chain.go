package link

import "github.com/gridbed/gridbed/emulator/bus"

// Chain is the full link model: Partition → Loss → Duplicate → Delay →
// inner bus. A partition or loss decision is taken at send time, before any
// delay, and each copy of a duplicated message is delayed independently. All
// faults are off until their setters are called. The Chain is itself a
// bus.Bus whose Publish enters the Partition layer; Register, Unregister,
// Stats and Close go to the inner bus.
type Chain struct {
	Partition *Partition
	Loss      *Loss
	Duplicate *Duplicate
	Delay     *Delay

	inner // the wrapped bus
}

// ChainStats are the counters of the layers of a Chain.
type ChainStats struct {
	DroppedPartition uint64 // messages dropped by a partition cut
	DroppedLoss      uint64 // messages dropped by loss
	Duplicated       uint64 // extra copies published by duplication
	Delayed          uint64 // messages (copies included) delayed by more than 0
	// DelayPending counts delayed messages (copies included) not yet due:
	// at the end of a run, those still in the link-delay queue.
	DelayPending uint64
}

// NewChain stacks the four decorators over inner. sched runs delayed
// publishes; every layer draws from its own stream derived from seed.
func NewChain(inner bus.Bus, sched Scheduler, seed uint64) *Chain {
	c := &Chain{inner: inner}
	c.Delay = NewDelay(inner, sched, seed)
	c.Duplicate = NewDuplicate(c.Delay, seed)
	c.Loss = NewLoss(c.Duplicate, seed)
	c.Partition = NewPartition(c.Loss)
	return c
}

// Publish sends data through the faults to the inner bus.
func (c *Chain) Publish(to bus.Address, data []byte) error { return c.Partition.Publish(to, data) }

// Faults returns the counters of the chain's layers.
func (c *Chain) Faults() ChainStats {
	return ChainStats{
		DroppedPartition: c.Partition.Faults().Dropped,
		DroppedLoss:      c.Loss.Faults().Dropped,
		Duplicated:       c.Duplicate.Faults().Duplicated,
		Delayed:          c.Delay.Faults().Delayed,
		DelayPending:     c.Delay.Faults().Pending,
	}
}
