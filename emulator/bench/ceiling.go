// Package bench measures gridbed on the machine it runs on (gridbed
// bench): the raw actor → embedded NATS → actor ceiling, and a scenario's
// sustained protocol message rate, clock lag, memory and time compression
// against it, in one run.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gridbed/gridbed/emulator/bus"
)

// CeilingOptions configure Ceiling. Zero values take the defaults.
type CeilingOptions struct {
	// Actors is the number of actors, each registered at its own address
	// (default 10,000, like the end-to-end test of docs/BENCHMARKS.md,
	// "The machine's limits").
	Actors int
	// InFlight is the number of messages circulating at any time (default
	// 8,192): enough to keep both cores busy, bounded so that mailboxes
	// cannot grow without limit (overload collapses: docs/BENCHMARKS.md).
	InFlight int
	// Size is the message size in bytes (default 300).
	Size int
	// Connections is the bus's number of NATS connections (default
	// bus.DefaultConnections, as the emulator driver).
	Connections int
	// Warmup is run before measuring (default 1 s), Duration measured
	// (default 5 s).
	Warmup, Duration time.Duration
	// Trials is how many times Ceilings measures (default 3): one 5-s
	// measurement moved by half between runs on this machine
	// (docs/BENCHMARKS.md), the median of several less.
	Trials int
}

func (o *CeilingOptions) defaults() {
	if o.Actors <= 0 {
		o.Actors = 10_000
	}
	if o.InFlight <= 0 {
		o.InFlight = 8192
	}
	if o.Size <= 0 {
		o.Size = 300
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Trials <= 0 {
		o.Trials = 3
	}
}

// CeilingResult is what Ceiling measured.
type CeilingResult struct {
	MessagesPerSecond float64       `json:"messages_per_second"`
	Delivered         uint64        `json:"delivered"` // over the measured interval
	Seconds           float64       `json:"seconds"`
	Dropped           uint64        `json:"dropped"` // slow-consumer drops over the whole measurement
	Options           CeilingResOpt `json:"options"`
	// Trials are every measurement's rate when Ceilings took several
	// (MessagesPerSecond is then their median; Delivered and Seconds the
	// median trial's); Min and Max their range.
	Trials []float64 `json:"trials_messages_per_second,omitempty"`
	Min    float64   `json:"min_messages_per_second,omitempty"`
	Max    float64   `json:"max_messages_per_second,omitempty"`
}

// Ceilings measures the ceiling opts.Trials times, each on a bus and
// actors of its own, and reports the median trial with every trial's
// rate beside it.
func Ceilings(ctx context.Context, opts CeilingOptions) (CeilingResult, error) {
	opts.defaults()
	var all []CeilingResult
	for range opts.Trials {
		c, err := Ceiling(ctx, opts)
		if err != nil {
			return c, err
		}
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b CeilingResult) int { return cmp.Compare(a.MessagesPerSecond, b.MessagesPerSecond) })
	res := all[len(all)/2]
	for _, c := range all {
		res.Trials = append(res.Trials, c.MessagesPerSecond)
		res.Dropped = max(res.Dropped, c.Dropped)
	}
	res.Min, res.Max = all[0].MessagesPerSecond, all[len(all)-1].MessagesPerSecond
	return res, nil
}

// CeilingResOpt echoes the options a ceiling was measured with.
type CeilingResOpt struct {
	Actors      int `json:"actors"`
	InFlight    int `json:"in_flight"`
	Size        int `json:"size_bytes"`
	Connections int `json:"connections"`
}

// hop is a circulating message in an actor's mailbox.
type hop struct{ data []byte }

// relay is a ceiling actor: it passes every message it receives on to a
// random actor over the bus and does nothing else.
type relay struct {
	bus  bus.Bus
	n    uint64
	rng  *rand.Rand
	stop *atomic.Bool
}

func (r *relay) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*hop)
	if !ok || r.stop.Load() {
		return
	}
	_ = r.bus.Publish(bus.Address(1+r.rng.Uint64N(r.n)), m.data) // errors are counted by the bus
}

// Ceiling measures the raw actor → embedded NATS → actor message rate on
// this machine: protoactor actors, each registered on gridbed's NATS bus
// (emulator/bus, the code the emulator driver uses) with the handler the
// driver uses (hand the bytes to the actor's mailbox), pass InFlight
// messages of Size bytes on to random actors and do nothing else. It is
// the rate no protocol running on the same bus and actors can exceed.
func Ceiling(ctx context.Context, opts CeilingOptions) (CeilingResult, error) {
	opts.defaults()
	b, err := bus.OpenNATS(bus.NATSOptions{Run: "ceiling", Connections: opts.Connections})
	if err != nil {
		return CeilingResult{}, err
	}
	res := CeilingResult{Options: CeilingResOpt{Actors: opts.Actors, InFlight: opts.InFlight, Size: opts.Size, Connections: b.Connections()}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	defer system.Shutdown()
	var stop atomic.Bool
	root := system.Root
	for i := range opts.Actors {
		r := &relay{bus: b, n: uint64(opts.Actors), rng: rand.New(rand.NewPCG(uint64(i), 0x6365696c)), stop: &stop}
		pid := root.Spawn(actor.PropsFromProducer(func() actor.Actor { return r }))
		if err := b.Register(bus.Address(i+1), func(_ bus.Address, data []byte) { root.Send(pid, &hop{data: data}) }); err != nil {
			b.Close()
			return res, err
		}
	}
	payload := make([]byte, opts.Size)
	rng := rand.New(rand.NewPCG(1, 2))
	for range opts.InFlight {
		if err := b.Publish(bus.Address(1+rng.Uint64N(uint64(opts.Actors))), payload); err != nil {
			b.Close()
			return res, fmt.Errorf("bench: ceiling: %w", err)
		}
	}
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err = wait(opts.Warmup)
	var from bus.Stats
	var start time.Time
	if err == nil {
		from, start = b.Stats(), time.Now()
		err = wait(opts.Duration)
	}
	to, end := b.Stats(), time.Now()
	stop.Store(true)
	cerr := b.Close()
	if err != nil {
		return res, err
	}
	res.Delivered = to.Delivered - from.Delivered
	res.Seconds = end.Sub(start).Seconds()
	res.MessagesPerSecond = float64(res.Delivered) / res.Seconds
	res.Dropped = b.Stats().Dropped
	if res.Delivered == 0 {
		return res, errors.Join(errors.New("bench: ceiling: no message delivered"), cerr)
	}
	return res, cerr
}
