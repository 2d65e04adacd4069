package main

import (
	"os"
	"testing"

	"github.com/gridbed/gridbed/emulator"
)

// TestMain runs the command in-process with the garbage collector
// settings main gives it (emulator.TuneGC).
func TestMain(m *testing.M) {
	emulator.TuneGC()
	os.Exit(m.Run())
}
