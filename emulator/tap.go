package emulator

import (
	"fmt"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// MessageTap sees a run's messages as they go (gridbed run --trace,
// emulator/trace): Sent every message a peer or the job client hands to
// the bus, above the fault layers — so it sees what the link model then
// drops, delays, duplicates or corrupts —, Delivered every message handed
// to an endpoint, after them (on the deterministic driver when its handler
// runs; on the emulator when it reaches the actor's mailbox). at is the
// run's emulated time. Both are called on the run's own goroutines (the
// emulator's actors call them at once): an implementation locks what it
// shares, keeps nothing of data after it returns, and must be cheap.
type MessageTap interface {
	Sent(at time.Duration, to bus.Address, data []byte)
	Delivered(at time.Duration, to bus.Address, data []byte)
}

// deliveryTapper is a driver that reports every message it hands to an
// endpoint (the deterministic and emulator drivers; a run split over
// workers does not: its deliveries happen in other processes).
type deliveryTapper interface {
	TapDeliveries(f func(at time.Duration, to bus.Address, data []byte))
}

// installTap puts tap (if not nil) on drv: above the fault layers
// (installed first) for what is sent, on the driver for what is
// delivered; regions (if not nil) sees the deliveries too.
func installTap(drv Driver, tap MessageTap, regions *regionMeter) error {
	dt, ok := drv.(deliveryTapper)
	if !ok {
		what := "a message trace"
		if tap == nil {
			what = "measuring the latency between the regions of link.latency_matrix"
		}
		return fmt.Errorf("%s needs the deliveries of one process: the %s driver does not report them (a run split over workers)", what, drv.Name())
	}
	switch {
	case tap != nil && regions != nil:
		dt.TapDeliveries(func(at time.Duration, to bus.Address, data []byte) {
			tap.Delivered(at, to, data)
			regions.Delivered(at, to, data)
		})
	case tap != nil:
		dt.TapDeliveries(tap.Delivered)
	default:
		dt.TapDeliveries(regions.Delivered)
	}
	if tap != nil {
		drv.WrapBus(func(inner bus.Bus) bus.Bus { return &sendTap{Bus: inner, tap: tap, now: drv.Now} })
	}
	return nil
}

// sendTap tells its tap of every message published through it and hands
// it on unchanged; a batch goes on as a batch (bus.PublishBatch), so the
// run's transport counts are what they are without the tap.
type sendTap struct {
	bus.Bus
	tap MessageTap
	now func() time.Duration
}

func (s *sendTap) Publish(to bus.Address, data []byte) error {
	s.tap.Sent(s.now(), to, data)
	return s.Bus.Publish(to, data)
}

// PublishBatch implements bus.Batcher.
func (s *sendTap) PublishBatch(msgs []bus.Message) error {
	at := s.now()
	for _, m := range msgs {
		s.tap.Sent(at, m.To, m.Data)
	}
	return bus.PublishBatch(s.Bus, msgs)
}
