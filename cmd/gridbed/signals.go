package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitNow ends the process; tests replace it.
var exitNow = os.Exit

// interruptContext returns a context the first SIGINT or SIGTERM cancels:
// the run then stops within about two seconds and writes what it measured
// (outcome interrupted). A second signal exits at once with status 130,
// writing nothing more. stop releases the signals.
func interruptContext(stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "\ngridbed: %v — stopping the run and writing what it measured (send it again to exit at once)\n", s)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "gridbed: %v again — exiting at once; results not written\n", s)
			exitNow(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
