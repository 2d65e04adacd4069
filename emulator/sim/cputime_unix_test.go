//go:build unix

package sim_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far, user and
// system, on every thread (the garbage collector's included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
