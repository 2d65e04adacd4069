package workers

import (
	"sync"
	"time"

	"github.com/gridbed/gridbed/emulator/bus"
)

// hold is a worker's control path through a bus_restart of the
// coordinator's server (outage.go): from the moment its control
// connection drops until the coordinator says resume, the worker sends no
// heartbeat, holds what it would publish to the coordinator (joins, job
// events) and makes its requests (bootstrap contacts, injections) wait.
// The connection refuses publishes while it is down (no reconnect
// buffer): what it held is sent, in order, once the coordinator, itself
// reconnected and subscribed, asks for it. (What it published in the
// instant before the drop was noticed is lost with the server: the job
// events are sent again, jobOutbox.)
type hold struct {
	mu       sync.Mutex
	waiting  chan struct{} // non-nil while paused, closed on resume
	held     []heldMsg
	cutSince time.Time     // when the control connection dropped; zero while connected
	graceFor time.Duration // outageGrace of the scenario; 0: no bus_restart
}

type heldMsg struct {
	subj string
	data []byte
}

func (h *hold) setGrace(d time.Duration) {
	h.mu.Lock()
	h.graceFor = d
	h.mu.Unlock()
}

func (h *hold) grace() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.graceFor
}

// cut notes that the control connection dropped: the worker pauses. It
// returns the grace the scenario gives an outage (0: none, the
// coordinator is gone).
func (h *hold) cut() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		h.waiting = make(chan struct{})
	}
	if h.cutSince.IsZero() {
		h.cutSince = time.Now()
	}
	return h.graceFor
}

// reconnected notes that the control connection is back; the worker
// stays paused until resume.
func (h *hold) reconnected() {
	h.mu.Lock()
	h.cutSince = time.Time{}
	h.mu.Unlock()
}

// cutFor is how long the control connection has been down (0 while up).
func (h *hold) cutFor() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cutSince.IsZero() {
		return 0
	}
	return time.Since(h.cutSince)
}

func (h *hold) paused() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting != nil
}

// publish sends data to the coordinator on subj, or holds it while the
// worker is paused (or the connection refuses it: the outage has just
// begun).
func (w *worker) publish(subj string, data []byte) {
	w.hold.mu.Lock()
	defer w.hold.mu.Unlock()
	if w.hold.waiting == nil {
		if w.nc.Publish(subj, data) == nil {
			return
		}
		w.hold.waiting = make(chan struct{})
	}
	w.hold.held = append(w.hold.held, heldMsg{subj, data})
}

// awaitResumed waits while the worker is paused, at most the scenario's
// grace for an outage.
func (w *worker) awaitResumed() {
	w.hold.mu.Lock()
	ch, grace := w.hold.waiting, w.hold.graceFor
	w.hold.mu.Unlock()
	if ch == nil || grace == 0 {
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// resume is the worker's answer to the coordinator's resume after a
// bus_restart: once every connection of its bus is back (and subscribed
// on the new server) it sends what it held, in order, and goes on; the
// answer carries its control connection's new id. The batches of job
// events go from jobsNext on, the first the coordinator lacks, whether
// held here or published before the stop was noticed and lost with the
// server (jobOutbox).
func (w *worker) resume(jobsNext uint64) Report {
	var r Report
	r.CID, _ = w.nc.GetClientID()
	if w.drv != nil {
		if nb, ok := w.drv.Bus().(*bus.NATSBus); ok {
			if err := nb.AwaitConnected(resumeWait); err != nil {
				r.Err = err.Error()
				return r
			}
		}
	}
	w.hold.mu.Lock()
	defer w.hold.mu.Unlock()
	subj := jobsSubject(w.st.Run)
	if w.jobs != nil {
		for _, data := range w.jobsOut.unacked(jobsNext) {
			if err := w.nc.Publish(subj, data); err != nil {
				r.Err = "send the job events again: " + err.Error()
				return r
			}
		}
	}
	for i, m := range w.hold.held {
		if w.jobs != nil && m.subj == subj {
			continue // sent above, unless the coordinator has it
		}
		if err := w.nc.Publish(m.subj, m.data); err != nil {
			w.hold.held = w.hold.held[i:]
			r.Err = "send what it held: " + err.Error()
			return r
		}
	}
	w.hold.held = nil
	if w.hold.waiting != nil {
		close(w.hold.waiting)
		w.hold.waiting = nil
	}
	return r
}
