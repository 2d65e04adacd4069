package allocrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/clock"
	"github.com/gridbed/gridbed/emulator/sim"
)

// simHost is the deterministic driver's world: every endpoint runs on its
// one event loop.
type simHost struct{ w *sim.World }

func (s simHost) Publish(to bus.Address, data []byte) error      { return s.w.Publish(to, data) }
func (s simHost) Register(addr bus.Address, h bus.Handler) error { return s.w.Register(addr, h) }
func (s simHost) Unregister(addr bus.Address)                    { s.w.Unregister(addr) }
func (s simHost) At(_ bus.Address, t time.Duration, fn func())   { s.w.At(t, fn) }
func (s simHost) Now() time.Duration                             { return s.w.Now() }
func (s simHost) Stats() bus.Stats                               { return s.w.Stats() }

// InFlight is the messages still in the event queue.
func (s simHost) InFlight() uint64 { return s.w.InFlight() }

// SimLatency is the delay of every message on the deterministic driver's
// bus.
const SimLatency = time.Millisecond

// RunSim runs cfg on the deterministic driver: virtual time, the in-memory
// bus, events at one instant in an order drawn from seed. The same seed
// gives the same result.
func RunSim(ctx context.Context, cfg Config, seed uint64) (Result, error) {
	return runSim(ctx, cfg, seed, SimLatency)
}

// runSim is RunSim with every message delayed by latency.
func runSim(ctx context.Context, cfg Config, seed uint64, latency time.Duration) (Result, error) {
	w := sim.New(seed, latency)
	w.Record(cfg.Record)
	r, err := start(cfg, simHost{w})
	if err != nil {
		return Result{}, err
	}
	var series [][]int
	var mu sync.Mutex
	r.sample(&series, &mu)
	if !w.RunUntilDone(cfg.Limit, ctx.Done()) {
		return r.result(series), ctx.Err()
	}
	return r.checkDone(r.result(series))
}

// mailbox runs one endpoint's functions in order on a goroutine of its
// own, like an actor's mailbox.
type mailbox struct {
	mu   sync.Mutex
	q    []func()
	wake chan struct{}
}

func (m *mailbox) put(fn func()) {
	m.mu.Lock()
	m.q = append(m.q, fn)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *mailbox) loop(stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		m.mu.Lock()
		q := m.q
		m.q = nil
		m.mu.Unlock()
		for _, fn := range q {
			select {
			case <-stop:
				return
			default:
			}
			fn()
		}
		if len(q) == 0 {
			select {
			case <-stop:
				return
			case <-m.wake:
			}
		}
	}
}

// liveHost is the emulator driver's: NATS carries the messages, the scaled
// clock's timer goroutine the instants, and each endpoint handles both in
// its own mailbox.
type liveHost struct {
	b     bus.Bus
	clk   *clock.Clock
	tm    *clock.Timers
	boxes map[bus.Address]*mailbox
	stop  chan struct{}
	wg    sync.WaitGroup
}

func (l *liveHost) box(addr bus.Address) *mailbox {
	m := l.boxes[addr]
	if m == nil {
		m = &mailbox{wake: make(chan struct{}, 1)}
		l.boxes[addr] = m
		l.wg.Add(1)
		go m.loop(l.stop, &l.wg)
	}
	return m
}

func (l *liveHost) Publish(to bus.Address, data []byte) error { return l.b.Publish(to, data) }
func (l *liveHost) Register(addr bus.Address, h bus.Handler) error {
	m := l.box(addr)
	return l.b.Register(addr, func(to bus.Address, data []byte) {
		own := append([]byte(nil), data...)
		m.put(func() { h(to, own) })
	})
}
func (l *liveHost) Unregister(addr bus.Address) { l.b.Unregister(addr) }
func (l *liveHost) At(addr bus.Address, t time.Duration, fn func()) {
	m := l.boxes[addr]
	l.tm.At(t, func(time.Time) { m.put(fn) })
}
func (l *liveHost) Now() time.Duration { return l.clk.Now() }
func (l *liveHost) Stats() bus.Stats   { return l.b.Stats() }

// LiveOptions configure the emulator driver's run.
type LiveOptions struct {
	TimeScale float64
	BusURL    string // "" for an embedded NATS server
	Run       string // the run id on the bus
}

// RunLive runs cfg on the emulator driver: the endpoints exchange their
// messages over NATS while emulated time runs opts.TimeScale times faster
// than wall time.
func RunLive(ctx context.Context, cfg Config, opts LiveOptions) (Result, error) {
	if opts.TimeScale <= 0 {
		return Result{}, fmt.Errorf("allocation: time scale must be positive")
	}
	if opts.Run == "" {
		opts.Run = fmt.Sprintf("alloc%d", time.Now().UnixNano()%1e9)
	}
	nb, err := bus.OpenNATS(bus.NATSOptions{URL: opts.BusURL, Run: opts.Run})
	if err != nil {
		return Result{}, fmt.Errorf("open NATS bus: %w", err)
	}
	l := &liveHost{b: nb, clk: clock.New(opts.TimeScale), boxes: map[bus.Address]*mailbox{}, stop: make(chan struct{})}
	l.tm = clock.NewTimers(l.clk)
	var series [][]int
	var mu sync.Mutex
	r, err := start(cfg, l)
	if err == nil {
		r.sample(&series, &mu)
		wall := time.Duration(float64(cfg.Limit) / opts.TimeScale)
		select {
		case <-r.done:
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(wall):
		}
	}
	l.tm.Stop()
	close(l.stop)
	l.wg.Wait()
	nb.Close()
	if r == nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	res := r.result(series)
	if err != nil {
		return res, err
	}
	return r.checkDone(res)
}
