package main

import (
	"math"
	"runtime/debug"

	"github.com/gridbed/gridbed/emulator"
)

// memoryLimit is the soft memory limit runs are admitted against: the
// process's (GOMEMLIMIT, or the half of the machine main sets), or half
// the machine's memory when none is set (tests).
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		return l
	}
	return emulator.PhysicalMemory() / 2
}
