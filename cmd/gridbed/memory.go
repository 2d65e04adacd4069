package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// physicalMemory is the machine's memory in bytes (MemTotal), 0 if unknown.
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return v << 10
				}
			}
		}
	}
	return 0
}

// memoryLimit is the soft memory limit runs are admitted against: the
// process's (GOMEMLIMIT, or the half of the machine main sets), or half
// the machine's memory when none is set (tests).
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		return l
	}
	return physicalMemory() / 2
}
