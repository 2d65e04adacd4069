package allocrun

import (
	"sync"

	alloc "github.com/gridbed/gridbed/actors/allocation"
	"github.com/gridbed/gridbed/emulator/bus"
)

// machineCrash is what a machine's crash under allocation.placement
// neighbors did (written in the crashed machine's context; read once
// the run is quiet).
type machineCrash struct {
	happened, restarted bool
	machine, jobs       int
}

// crashMachine schedules allocation.crash_at under allocation.placement
// neighbors, where there is no allocator to crash: at Config.CrashAt
// every machine tells the host how many jobs it holds (in its own
// context), and the machine holding the most (the lowest index among
// equals) crashes (alloc.Peer.Crash): it leaves the bus — messages to it
// are unroutable, the crash's lost messages — and its jobs stop; a job
// sent to it while it is down is refused and placed again by its sender
// (flushPeer); one already on its way when it crashed is lost, and
// counted (JobsLost) when it restarts, Config.DownFor later
// (alloc.Peer.Restart).
func (r *run) crashMachine() {
	var mu sync.Mutex
	counts, left := make([]int, len(r.peers)), len(r.peers)
	for i, p := range r.peers {
		r.h.At(bus.Address(alloc.MachineAddr(i)), r.cfg.CrashAt, func() {
			mu.Lock()
			counts[i] = len(p.Exec.Jobs)
			left--
			last := left == 0
			mu.Unlock()
			if !last {
				return
			}
			most := 0
			for k, n := range counts {
				if n > counts[most] {
					most = k
				}
			}
			r.h.At(bus.Address(alloc.MachineAddr(most)), r.h.Now(), func() { r.crashPeer(r.peers[most]) })
		})
	}
}

// crashPeer takes machine p down now and schedules its restart.
func (r *run) crashPeer(p *alloc.Peer) {
	addr := alloc.MachineAddr(p.Index)
	now := r.h.Now()
	r.crash = machineCrash{happened: true, machine: p.Index, jobs: len(p.Exec.Jobs)}
	r.downAddr.Store(addr)
	r.h.Unregister(bus.Address(addr))
	p.Crash(now)
	r.h.At(bus.Address(addr), now+r.cfg.DownFor, func() {
		if err := r.h.Register(bus.Address(addr), r.handlers[p.Index]); err != nil {
			return
		}
		r.downAddr.Store(0)
		// Every job message sent to p before it crashed has been
		// delivered or found no endpoint by now (the bus's delay is
		// far below any downtime): the ones left never reached it.
		r.mu.Lock()
		lost := 0
		for job, to := range r.inflight {
			if to == addr {
				delete(r.inflight, job)
				lost++
			}
		}
		r.mu.Unlock()
		r.crash.restarted = true
		p.Restart(r.h.Now())
		r.flushPeer(p)
		r.lost.Add(int64(lost))
		r.checkOver()
	})
}
