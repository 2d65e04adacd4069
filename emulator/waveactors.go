package emulator

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
	"github.com/gridbed/gridbed/actors/peer"
	"github.com/gridbed/gridbed/actors/wave"
	"github.com/gridbed/gridbed/emulator/scenario"
	"github.com/gridbed/gridbed/emulator/waverun"
	"github.com/gridbed/gridbed/metrics"
)

// maxWaveState is the largest job state a Wave peer ships on the bus (the
// embedded NATS server's payload limit, 8 MiB, less room for the
// envelope).
const maxWaveState = 8<<20 - 4096

// waveRun is a Wave run whose hosts are actors on the bus (wave.engine
// actors): every peer runs the Wave core (actors/wave.Node) over its
// overlay core, which maintains the timezone CAN — heartbeats, take-over,
// repair — under the run's churn and faults, on either driver. The
// population (timezones, labels, jobs) is the event loop's draw
// (waverun.Draw); the job-history check is waverun.Ledger.
type waveRun struct {
	sc      scenario.Scenario
	cfg     waverun.Config
	pop     waverun.Population
	tz      map[[2]uint32]int // a label's timezone
	base    time.Duration     // the emulated instant the submit window opens
	ids     func() *idAlloc
	ledger  *waverun.Ledger
	m       *metrics.Wave
	setupFn *peer.WaveSetup
}

// waveConfig is the event loop's configuration of sc (both engines draw
// the same population from it).
func waveConfig(sc scenario.Scenario) (waverun.Config, error) {
	strategy, err := wave.ParseStrategy(sc.Wave.Strategy)
	if err != nil {
		return waverun.Config{}, err
	}
	return waverun.Config{
		Seed: sc.Seed, Peers: sc.Peers.Count, Strategy: strategy, Discovery: wave.Discovery(sc.Wave.Discovery),
		DayFree: sc.Wave.DayFree, Clients: sc.Wave.Clients, RuntimeMin: sc.Wave.RuntimeMin, RuntimeMax: sc.Wave.RuntimeMax,
		SubmitWindow: sc.Wave.SubmitWindow, ClockStart: sc.Clock.Start, Duration: sc.Duration, MigrationBytes: sc.Wave.MigrationBytes,
	}, nil
}

// prepareWave places r's population on the timezone CAN (001 §III-B):
// the initial peers at the event loop's labels, the peers churn brings
// at labels of their own.
func (r *run) prepareWave() error {
	sc := r.sc
	if sc.Overlay.Dimensions != 1 {
		return fmt.Errorf("wave.engine actors: overlay.dimensions is %d — the timezone CAN has one dimension (plus the virtual one): write overlay.dimensions: 1", sc.Overlay.Dimensions)
	}
	if sc.Wave.MigrationBytes > maxWaveState {
		return fmt.Errorf("wave.engine actors: wave.migration_bytes %d does not fit in one message on the bus — write at most %d", sc.Wave.MigrationBytes, maxWaveState)
	}
	if sc.MP() {
		return fmt.Errorf("wave.engine actors: a Wave host is one peer — leave peers.per_core off")
	}
	cfg, err := waveConfig(sc)
	if err != nil {
		return err
	}
	w := &waveRun{sc: sc, cfg: cfg, pop: waverun.Draw(cfg), tz: map[[2]uint32]int{}, ledger: waverun.NewLedger(0)}
	extraTZ, extra := waverun.Extra(sc.Seed, len(r.nodes)-sc.Peers.Count)
	for i := range r.nodes {
		tz, p := 0, can.Point(nil)
		if i < sc.Peers.Count {
			tz, p = w.pop.Timezones[i], w.pop.Points[i]
		} else {
			tz, p = extraTZ[i-sc.Peers.Count], extra[i-sc.Peers.Count]
		}
		r.nodes[i].Point = p
		w.tz[[2]uint32{p[0], p[1]}] = tz
	}
	w.ledger = waverun.NewLedger(len(w.pop.Jobs))
	w.base = sc.Peers.JoinWindow + sc.Overlay.Heartbeat.Period // joins over the bus; a direct bootstrap moves it to the handover
	w.ids = func() *idAlloc { return r.ids }
	w.m = r.m.EnableWaveLive()
	r.wave = w
	return nil
}

// setup is the drivers' Wave setup (nil for a run without the Wave
// scheduler on the bus).
func (w *waveRun) setup() *peer.WaveSetup {
	if w == nil {
		return nil
	}
	if w.setupFn != nil {
		return w.setupFn
	}
	byClient := map[core.NodeID][]wave.Job{}
	for k, j := range w.pop.Jobs {
		byClient[j.Client] = append(byClient[j.Client], wave.Job{ID: uint32(k), Runtime: j.Runtime, Submit: w.base + j.Offset})
	}
	w.setupFn = &peer.WaveSetup{
		Config: wave.Config{Strategy: w.cfg.Strategy, Discovery: w.cfg.Discovery, Calendar: wave.Calendar{Start: w.cfg.ClockStart},
			Profile: wave.Profile{Seed: w.cfg.Seed, DayFree: w.cfg.DayFree}, MigrationBytes: w.cfg.MigrationBytes},
		Peer: func(id core.NodeID) (int, []wave.Job) {
			p := w.ids().Point(id)
			var js []wave.Job
			if int(id) <= w.sc.Peers.Count {
				js = byClient[id] // a restarted peer (a new id) submits nothing again
			}
			return w.tz[[2]uint32{p[0], p[1]}], js
		},
		Rand: func(id core.NodeID) *rand.Rand { return waverun.PeerRand(w.cfg.Seed, id) },
		Sink: w.ledger,
	}
	return w.setupFn
}

// WaveSample is what the oracle saw of the Wave peers at a sample: by
// wavezone, the running hosts, those available in their current hour and
// the jobs on hosts; and the jobs completed and failed so far.
type WaveSample struct {
	Hosts, Available, Jobs [wave.Wavezones]int
	Completed, Failed      int
}

// sample reads the Wave peers' states at a sample and sets the live
// series.
func (w *waveRun) sample(states []peer.State) *WaveSample {
	s := &WaveSample{}
	for _, st := range states {
		ws := st.Wave
		if !ws.On || !st.Snapshot.Joined {
			continue // not started, left, or crashed (driver.Base.Observed)
		}
		s.Hosts[ws.Wavezone]++
		if ws.Available {
			s.Available[ws.Wavezone]++
		}
		if ws.Holding {
			s.Jobs[ws.Wavezone]++
		}
	}
	_, s.Completed, s.Failed = w.ledger.Live()
	for z := range wave.Wavezones {
		l := strconv.Itoa(z)
		if s.Hosts[z] > 0 {
			w.m.Available.WithLabelValues(l).Set(float64(s.Available[z]) / float64(s.Hosts[z]))
		}
		w.m.OnHosts.WithLabelValues(l).Set(float64(s.Jobs[z]))
	}
	w.m.Jobs.WithLabelValues(w.sc.Wave.Strategy, "completed").Set(float64(s.Completed))
	w.m.Jobs.WithLabelValues(w.sc.Wave.Strategy, "failed").Set(float64(s.Failed))
	return s
}

// finish closes the job histories at end against the peers still
// running, puts the figures of 001 §V-B in the summary and judges
// conservation (invariant wave_conservation).
func (w *waveRun) finish(sum *Summary, end time.Duration, states []peer.State) {
	live := map[core.NodeID]wave.Snapshot{}
	for _, st := range states {
		if st.Wave.On && st.Snapshot.Joined { // a crashed peer's state says it left the overlay
			live[st.Snapshot.ID] = st.Wave
		}
	}
	departures := sum.Churn.Leaves+sum.Churn.Failures > 0 || len(sum.Faults.Events) > 0 || len(sum.Faults.Dropped) > 0
	res := w.ledger.Finish(end, live, departures)
	res.Engine = scenario.WaveEngineActors
	res.Strategy, res.Discovery = string(w.cfg.Strategy), string(w.cfg.Discovery)
	res.DayFree, res.Clients = w.cfg.DayFree, w.cfg.Clients
	res.Messages = map[string]waverun.Count{}
	for typ, c := range sum.Messages.ByType {
		if strings.HasPrefix(typ, "wave_") {
			res.Messages[typ] = waverun.Count{Count: c.Count, Bytes: c.Bytes}
			res.MessagesTotal += c.Count
		}
	}
	if h := sum.Peers.HandoverSeconds; h != nil {
		res.HandoverSeconds = *h
		res.OverlayMessages = sum.Peers.BootstrapMessages
	}
	sum.Wave = res
	sum.Invariants.add(InvariantCheck{Name: "wave_conservation", OK: res.Conservation, Detail: waveConservationDetail(res)})
	waveMetrics(w.m, res)
	w.m.Jobs.WithLabelValues(res.Strategy, "lost").Set(float64(res.Lost))
}
