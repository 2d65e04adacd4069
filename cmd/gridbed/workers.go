package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/workers"
	"github.com/gridbed/gridbed/metrics"
)

// workerFlags are gridbed run's flags for a run split across processes.
type workerFlags struct {
	local, remote int
	listen        string
}

func addWorkerFlags(c *cobra.Command, f *workerFlags) {
	fs := c.Flags()
	fs.IntVar(&f.local, "workers", 0, "split the run over `N` local worker processes (emulator driver; docs/WORKERS.md); 0: one process")
	fs.IntVar(&f.remote, "remote-workers", 0, "also wait for `M` workers joining from other machines (gridbed worker --coordinator URL)")
	fs.StringVar(&f.listen, "listen", "", "with workers: the `host:port` the run's NATS server listens on (default 127.0.0.1 on a free port; remote workers need e.g. 0.0.0.0:4222)")
}

// check says what is wrong with the flags ("" when nothing): a worker
// count is never negative, and --listen is for a split run.
func (f workerFlags) check() string {
	switch {
	case f.local < 0:
		return fmt.Sprintf("--workers %d: write N ≥ 1 local worker processes, or 0 (the default) for one process", f.local)
	case f.remote < 0:
		return fmt.Sprintf("--remote-workers %d: write M ≥ 1 workers joining from other machines, or 0 (the default)", f.remote)
	case f.listen != "" && f.local+f.remote == 0:
		return "--listen is the address a split run's NATS server listens on: add --workers N or --remote-workers M, or drop it"
	}
	return ""
}

// lockedWriter serialises writes to w: the worker processes' output is
// copied to the command's stderr by os/exec's goroutines while the
// command itself writes there.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// shareable returns w as several goroutines may write it: a file as it
// is (each write is one system call), anything else behind a lock.
func shareable(w io.Writer) io.Writer {
	switch w.(type) {
	case *os.File, *lockedWriter:
		return w
	}
	return &lockedWriter{w: w}
}

// localWorkers are the worker processes gridbed run started.
type localWorkers struct {
	cmds   []*exec.Cmd
	stderr io.Writer
}

// start starts n worker processes of this executable joining url.
func (l *localWorkers) start(n int, url string, log logFlags) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--workers: cannot find the gridbed executable: %w", err)
	}
	for range n {
		cmd := exec.Command(exe, append([]string{"worker", "--coordinator", url, "--metrics-addr", "127.0.0.1:0"}, log.args()...)...)
		cmd.Stdout, cmd.Stderr = l.stderr, l.stderr
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("--workers: start a worker: %w", err)
		}
		l.cmds = append(l.cmds, cmd)
	}
	return nil
}

// wait waits for the workers to exit (they do once the run closes them),
// killing those still running after grace.
func (l *localWorkers) wait(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		for _, c := range l.cmds {
			_ = c.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		for _, c := range l.cmds {
			if c.ProcessState == nil && c.Process != nil {
				_ = c.Process.Kill()
			}
		}
		<-done
	}
}

// workersOption returns the emulator.Options.Workers of the flags (nil
// for a run in one process) and the local processes it starts.
func workersOption(ctx context.Context, f workerFlags, log logFlags, logger *slog.Logger, stderr io.Writer) (func(emulator.WorkersSetup) (emulator.Driver, error), *localWorkers) {
	if f.local+f.remote == 0 {
		return nil, nil
	}
	lw := &localWorkers{stderr: stderr}
	opts := workers.Options{Workers: f.local + f.remote, Listen: f.listen, Logger: logger,
		OnListen: func(url string) error {
			if f.remote > 0 {
				fmt.Fprintf(stderr, "waiting for %d remote workers: gridbed worker --coordinator %s\n", f.remote, url)
			}
			return lw.start(f.local, url, log)
		},
		OnJoin: func(index int, h workers.Hello) {
			fmt.Fprintf(stderr, "worker %d: pid %d on %s, metrics http://%s/metrics\n", index, h.PID, h.Host, h.Metrics)
		}}
	if f.remote > 0 {
		opts.Wait = 10 * time.Minute
	}
	return workers.Opener(ctx, opts), lw
}

func newWorkerCmd(stderr io.Writer) *cobra.Command {
	var url, metricsAddr string
	var log logFlags
	c := &cobra.Command{
		Use:   "worker --coordinator nats://HOST:PORT",
		Short: "host a share of the peers of a run split across processes",
		Long: `Joins the run of a coordinator (gridbed run FILE --workers N
--remote-workers M --listen HOST:PORT) and hosts its share of the peers
until the run ends; docs/WORKERS.md. It serves /metrics while it runs.`,
		Example: "  gridbed worker --coordinator nats://10.0.0.5:4222 --metrics-addr :9101",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if url == "" {
				fmt.Fprintln(stderr, "gridbed worker: give --coordinator nats://HOST:PORT (what gridbed run --workers prints)")
				return exitCode(2)
			}
			logger := log.logger(stderr)
			metrics.Advertise("worker") // its /metrics in a Prometheus target file of its own
			ctx, stop := interruptContext(stderr)
			defer stop()
			if err := workers.Work(ctx, url, workers.WorkerOptions{MetricsAddr: loopbackAddr(metricsAddr), Logger: logger}); err != nil {
				fmt.Fprintf(stderr, "gridbed worker: %v\n", err)
				return exitCode(1)
			}
			return nil
		},
	}
	c.Flags().StringVar(&url, "coordinator", "", "the coordinator's NATS `URL`")
	addAddrFlag(c.Flags(), &metricsAddr, "metrics-addr", "127.0.0.1:0", false, `serve /metrics here: host:port, ":PORT" for this machine only, or "off"`)
	addLogFlags(c, &log)
	return c
}
