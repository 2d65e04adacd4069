package main

import (
	"os"
	"testing"

	"github.com/gridbed/gridbed/emulator"
)

// TestMain runs the command in-process with the garbage collector
// settings main gives it (emulator.TuneGC).
//
// Started as `TEST-BINARY worker …` (what --workers starts: this
// executable), it is a gridbed worker process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	emulator.TuneGC()
	os.Exit(m.Run())
}
