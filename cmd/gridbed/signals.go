package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// exitNow ends the process; tests replace it.
var exitNow = os.Exit

// sameSignal is how close a second signal may follow the first and still
// count as the same one: GNU timeout -s INT, and a terminal's Ctrl-C,
// deliver one interrupt to the process directly and again through its
// process group.
const sameSignal = time.Second

// onSameSignal is called when a signal counts as the first one again;
// tests set it.
var onSameSignal = func() {}

// interruptContext returns a context the first SIGINT or SIGTERM cancels:
// the run then stops within about two seconds and writes what it measured
// (outcome interrupted). A signal within sameSignal of the first is the
// same one. A later second signal exits at once with status 130, removing
// the temporary directories of the results being written (removeTemps).
// stop releases the signals.
func interruptContext(stderr io.Writer) (ctx context.Context, stop func()) {
	return interruptContextAt(stderr, time.Now)
}

// interruptContextAt is interruptContext reading the time from now.
func interruptContextAt(stderr io.Writer, now func() time.Time) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first time.Time
		select {
		case s := <-sigs:
			first = now()
			fmt.Fprintf(stderr, "\ngridbed: %v — stopping the run and writing what it measured (send it again to exit at once)\n", s)
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case s := <-sigs:
				if now().Sub(first) < sameSignal {
					onSameSignal() // the same signal, delivered twice
					continue
				}
				fmt.Fprintf(stderr, "gridbed: %v again — exiting at once; results not written\n", s)
				removeTemps(stderr)
				exitNow(130)
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
