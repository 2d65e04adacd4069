package workers

// The bus outage of a run split across processes (the timeline's
// bus_restart): the coordinator stops the NATS server every process is a
// client of — the run's bus and the control path alike — and starts a
// fresh one on the same address after down_for, as a one-process run
// stops and starts its embedded server (emulator/bus/outage.go). Every
// client reconnects. Meanwhile:
//
//   - the workers' buses refuse every publish (bus.Stats.Refused, counted
//     where it happens), and what they had published that the server had
//     not yet handed to the receiving worker is gone: the coordinator
//     counts it once every worker has closed (lostInTransit);
//   - the coordinator holds the commands it sends (spawns of churn
//     included) and sends them, in order, once every worker is back; its
//     requests wait for the server, and one an outage interrupted is asked
//     again;
//   - the workers hold their joins and job events and send no heartbeat;
//     nobody is judged by silence until every worker has said it is back
//     (resume), its bus reconnected;
//   - a batch of job events a worker published in the instant before its
//     connection noticed the stop, or that the server had not yet handed
//     to the coordinator, is gone with it: resume names the first batch
//     the coordinator lacks from the worker, which sends it and the ones
//     after it again (jobOutbox).
//
// See docs/WORKERS.md, "bus_restart".

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/faults/outage"
)

// errBusDown is what a request gets when the coordinator's server was
// down (a bus_restart) past the request's time: the worker is not to be
// blamed for it.
var errBusDown = errors.New("the run's NATS server was down (bus_restart)")

// resumeWait bounds how long the coordinator, its server restarted,
// waits for every worker to be back (control and bus connections), and
// settleWait how long a process waits beyond the longest outage before it
// gives up on the other side.
const (
	resumeWait = 30 * time.Second
	settleWait = 30 * time.Second
)

// heldCmd is a command the coordinator could not send during an outage.
type heldCmd struct {
	worker int
	cmd    Cmd
}

// outageGrace is how long a process of the run may stay cut off from the
// coordinator's server before it gives up: 0 when the scenario has no
// bus_restart (the server going away means the coordinator did), else the
// longest outage it may have in wall time plus settleWait. A nemesis
// (random) that may draw bus_restart holds the bus down at most 30
// emulated seconds (faults/nemesis).
func outageGrace(sc scenario.Scenario) time.Duration {
	var longest time.Duration
	for _, f := range sc.Faults {
		switch {
		case f.Kind == scenario.FaultBusRestart:
			longest = max(longest, f.DownFor)
		case f.Kind == scenario.FaultRandom && (f.Random == nil || len(f.Random.Kinds) == 0 || contains(f.Random.Kinds, scenario.FaultBusRestart)):
			longest = max(longest, 30*time.Second)
		}
	}
	if longest == 0 {
		return 0
	}
	if sc.TimeScale > 0 {
		longest = time.Duration(float64(longest) / sc.TimeScale)
	}
	return longest + settleWait
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

var _ outage.Server = nullBus{}

// OwnsServer implements outage.Server: the coordinator serves the run's
// bus, so the coordinator's fault layer (over nullBus) stops and starts
// it for bus_restart.
func (nullBus) OwnsServer() bool { return true }

// StopServer implements outage.Server (Coordinator.stopServer).
func (b nullBus) StopServer() error { return b.c.stopServer() }

// StartServer implements outage.Server (Coordinator.startServer).
func (b nullBus) StartServer() error { return b.c.startServer() }

// down reports whether the coordinator's server is stopped or its
// workers are not all back yet, and the number of outages so far.
func (c *Coordinator) down() (bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.back != nil, c.outages
}

// stopServer shuts the coordinator's NATS server down: every connection
// of the run (the workers' buses, their control connections, the
// coordinator's own) loses it. Refused once the run's end has begun.
func (c *Coordinator) stopServer() error {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	c.mu.Lock()
	switch {
	case c.closing || c.closed:
		c.mu.Unlock()
		return bus.ErrClosed
	case c.back != nil:
		c.mu.Unlock()
		return bus.ErrServerStopped
	}
	c.back = make(chan struct{})
	c.outCancel() // the requests in flight are asked again after it
	c.outCtx, c.outCancel = context.WithCancel(context.Background())
	c.outages++
	c.stoppedAt = time.Now()
	k, srv := c.outages, c.srv
	c.mu.Unlock()
	srv.Shutdown()
	srv.WaitForShutdown()
	c.log.Warn("bus_restart: the run's NATS server stopped", "outage", k)
	return nil
}

// startServer starts a fresh NATS server where the stopped one listened,
// waits until the coordinator's connection is back and every live worker
// has said so (resume: its control connection and every bus connection
// reconnected, its held joins and job events sent), then sends the
// commands held meanwhile and lets the watch judge silences again.
func (c *Coordinator) startServer() error {
	c.ctl.Lock()
	defer c.ctl.Unlock()
	c.mu.Lock()
	if c.back == nil {
		c.mu.Unlock()
		return bus.ErrServerRunning
	}
	k := c.outages
	c.mu.Unlock()
	srv, err := bus.ServeEmbedded(c.host, c.port)
	if err != nil {
		return fmt.Errorf("workers: restart the run's NATS server on %s:%d: %w", c.host, c.port, err)
	}
	c.mu.Lock()
	c.srv = srv
	c.mu.Unlock()
	if !pollEvery(5*time.Millisecond, resumeWait, c.nc.IsConnected) {
		return fmt.Errorf("workers: the coordinator's connection not back %v after the restart", resumeWait)
	}
	deadline := time.Now().Add(resumeWait)
	done := make(chan struct{}, c.opts.Workers)
	for i := range c.opts.Workers {
		if !c.alive(i) {
			done <- struct{}{}
			continue
		}
		go func() {
			defer func() { done <- struct{}{} }()
			c.resume(i, k, deadline)
		}()
	}
	for range c.opts.Workers {
		<-done
	}
	c.mu.Lock()
	now := time.Now()
	for _, w := range c.workers {
		w.lastBeat = now // silences count from here
	}
	held := c.held
	c.held = nil
	for _, h := range held {
		if !c.workers[h.worker].dead {
			_ = c.nc.Publish(cmdSubject(c.st.Run, h.worker), encode(h.cmd))
		}
	}
	close(c.back)
	c.back = nil
	c.mu.Unlock()
	c.log.Info("bus_restart: the run's NATS server is back, every worker with it", "outage", k, "held_commands", len(held), "wall_down", time.Since(c.stoppedAt).Round(time.Millisecond))
	return nil
}

// resume asks worker i until it answers that it is back after outage k,
// or until deadline (the watch then judges it by its silence: a worker
// whose process died during the outage has no control connection).
func (c *Coordinator) resume(i int, k uint64, deadline time.Time) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		// The first batch of job events it lacks from the worker: the
		// server that stopped took the ones in flight with it, and
		// nothing the worker sent since the stop is here yet.
		cmd := Cmd{Op: opResume, Index: int(k), JobsNext: c.merge.next(i)}
		msg, err := c.nc.Request(cmdSubject(c.st.Run, i), encode(cmd), max(time.Until(deadline), time.Millisecond))
		if err == nil {
			var r Report
			if decode(msg.Data, &r) == nil && r.Err == "" {
				c.mu.Lock()
				if r.CID != 0 {
					c.workers[i].hello.CID = r.CID
				}
				c.mu.Unlock()
				return
			}
			c.log.Warn("bus_restart: a worker could not resume", "worker", i, "err", r.Err)
		}
		<-tick.C // no responders yet: its control connection is not back
	}
	c.log.Error("bus_restart: a worker did not come back after the restart", "worker", i, "wait", resumeWait)
}

// awaitUp waits (at most wait) until the coordinator's server is up and
// every worker back; it returns the number of outages so far and the
// context the next outage cancels.
func (c *Coordinator) awaitUp(wait time.Duration) (uint64, context.Context, error) {
	c.mu.Lock()
	back, k, ctx := c.back, c.outages, c.outCtx
	c.mu.Unlock()
	if back == nil {
		return k, ctx, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-back:
	case <-t.C:
		return 0, nil, fmt.Errorf("%w for more than %v", errBusDown, wait)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outages, c.outCtx, nil
}

// interrupted reports whether an outage began since the k-th.
func (c *Coordinator) interrupted(k uint64) bool {
	down, n := c.down()
	return down || n != k
}

// lostInTransit is what the outages destroyed on the server (accepted by
// a worker's bus, never received by the worker hosting its receiver),
// read from the workers' final bus counters once every one has closed:
// then nothing is in transit, and every message a worker's bus accepted
// was received, as delivered, unroutable, dropped (slow consumer) or
// discarded at the end, by the one worker subscribed to its shard — or
// lost. ok is false when it cannot be known (a worker's counters are
// missing) or the sum is negative (the books then say so).
func lostInTransit(final []bus.Stats) (lost uint64, ok bool) {
	var gap int64
	for _, s := range final {
		gap += s.Unsettled() // Published − received, per worker (Lost is its Refused only)
	}
	if gap < 0 {
		return 0, false
	}
	return uint64(gap), true
}

// listenPort is the TCP port srv listens on.
func listenPort(srv interface{ Addr() net.Addr }) int {
	if a, ok := srv.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// pollEvery checks cond every period until it holds (true) or timeout
// elapses (false).
func pollEvery(period, timeout time.Duration, cond func() bool) bool {
	tick := time.NewTicker(period)
	defer tick.Stop()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
