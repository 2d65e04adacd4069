// Package cputime reads the CPU time of the running process, which the
// emulator's summary (emulator.cpu_seconds) and a worker's heartbeats
// (emulator/workers) report.
package cputime

import (
	"syscall"
	"time"
)

// Process is the process's CPU time so far (user + system, getrusage
// RUSAGE_SELF): every goroutine of the process, so two parts of a run
// that share a process (a worker started in-process beside its
// coordinator) cannot be told apart by it.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
