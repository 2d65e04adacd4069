package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/trace"
)

// traceFlags are run's message-trace flags.
type traceFlags struct {
	file, peers, types string
	from, to           time.Duration
}

func addTraceFlags(fs *pflag.FlagSet, f *traceFlags) {
	fs.StringVar(&f.file, "trace", "", "write the run's messages (sent, delivered, not delivered), faults, job steps and oracle samples to `FILE` as a Chrome/Perfetto trace (open it in ui.perfetto.dev or chrome://tracing); not with --workers")
	fs.StringVar(&f.peers, "trace-peers", "", "keep only the messages from or to these peers and their job steps (`IDS`: ids and ranges, e.g. 0-20,35; peers count from 1, 0 is the job client)")
	fs.StringVar(&f.types, "trace-types", "", "keep only these message types (`TYPES`, as summary.json's messages.by_type names them, e.g. heartbeat,join)")
	fs.DurationVar(&f.from, "trace-from", 0, "keep only what happens from this emulated time on (e.g. 10m)")
	fs.DurationVar(&f.to, "trace-to", 0, "keep only what happens up to this emulated time (e.g. 12m; default: the end)")
}

// openTrace is a trace being written: the Writer, its file, and the
// temporary it is written to (put in place by finish).
type openTrace struct {
	w         *trace.Writer
	f         *os.File
	path, tmp string
	done      bool
}

// traceMagic is how a gridbed trace starts: a file that does not is not
// replaced (gridbed deletes only what it wrote).
const traceMagic = `{"traceEvents":[`

// open checks the flags and creates the trace's temporary beside FILE;
// nil without --trace. A trace flag without --trace, a bad filter, or a
// FILE that exists and is not a gridbed trace is an error.
func (f traceFlags) open() (*openTrace, error) {
	if f.file == "" {
		if f.peers != "" || f.types != "" || f.from != 0 || f.to != 0 {
			return nil, errors.New("--trace-peers, --trace-types, --trace-from and --trace-to filter a trace: add --trace FILE")
		}
		return nil, nil
	}
	var flt trace.Filter
	var err error
	if f.peers != "" {
		if flt.Peers, err = trace.ParsePeers(f.peers); err != nil {
			return nil, fmt.Errorf("--trace-peers: %w", err)
		}
	}
	if f.types != "" {
		if flt.Types, err = trace.ParseTypes(f.types); err != nil {
			return nil, fmt.Errorf("--trace-types: %w", err)
		}
	}
	if f.from < 0 || f.to < 0 || (f.to > 0 && f.to < f.from) {
		return nil, fmt.Errorf("--trace-from %v, --trace-to %v: give a window with from before to (to 0: the end)", f.from, f.to)
	}
	flt.From, flt.To = f.from, f.to
	if head, err := readHead(f.file, len(traceMagic)); err == nil && head != traceMagic {
		return nil, fmt.Errorf("--trace %s: the file exists and is not a gridbed trace; name another file, or move it away", f.file)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--trace %s: %w", f.file, err)
	}
	tf, err := os.CreateTemp(filepath.Dir(f.file), "."+filepath.Base(f.file)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("--trace %s: %w", f.file, err)
	}
	return &openTrace{w: trace.New(tf, flt), f: tf, path: f.file, tmp: tf.Name()}, nil
}

// readHead reads the first n bytes of path ("" for a shorter file).
func readHead(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return "", nil
	}
	return string(bytes.TrimSpace(b)), nil
}

// finish completes the trace from the run's result and puts it in place.
func (t *openTrace) finish(res *emulator.Result, stdout io.Writer) error {
	t.done = true
	err := t.w.Finish(res)
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(t.tmp, 0o644) // as the results' files are
	}
	if err == nil {
		err = os.Rename(t.tmp, t.path)
	}
	if err != nil {
		os.Remove(t.tmp)
		return err
	}
	c := t.w.Counts()
	fmt.Fprintf(stdout, "trace: %s (%d messages sent, %d delivered, %d not delivered, %d delivered without a matching send; open it in ui.perfetto.dev)\n",
		t.path, c.Sent, c.Delivered, c.Undelivered, c.Unmatched)
	return nil
}

// discard removes an unfinished trace's temporary.
func (t *openTrace) discard() {
	if !t.done {
		t.done = true
		t.f.Close()
		os.Remove(t.tmp)
	}
}

// timelineMagic is how a timeline page gridbed wrote starts.
const timelineMagic = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gridbed timeline"

func newTraceCmd(stdout, stderr io.Writer) *cobra.Command {
	var peers, out string
	var from, to time.Duration
	c := &cobra.Command{
		Use:   "trace FILE",
		Short: "draw a trace of gridbed run --trace as a timeline page",
		Long: `Draws a trace that gridbed run --trace wrote as a Lamport-style timeline:
time downwards, one column per peer, an arrow per message from its sending
to its delivery (hover it for the message), messages never delivered as
dashed arrows ending in a cross, faults as bands across the columns, job
steps as dots. It writes a standalone HTML page (--out; by default FILE
with .html). Without --peers it draws the peer with the most messages in
the window and the peers it exchanged the most with; more than 3,000
messages are refused: name fewer peers or a shorter window. The whole
trace opens in ui.perfetto.dev as it is.`,
		Example: `  gridbed run examples/chaos.yaml --driver sim --trace t.json --trace-peers 0-20
  gridbed trace t.json --peers 1-5 --from 10m --to 12m`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return status(cmdTrace(args[0], peers, out, from, to, stdout, stderr))
		},
	}
	fs := c.Flags()
	fs.StringVar(&peers, "peers", "", "the peers to draw (`IDS`: ids and ranges, e.g. 1-5,9; 0 is the job client)")
	fs.DurationVar(&from, "from", 0, "draw from this emulated time (e.g. 10m)")
	fs.DurationVar(&to, "to", 0, "draw up to this emulated time (default: the trace's end)")
	fs.StringVar(&out, "out", "", "the page to write (`FILE.html`; default: the trace's name with .html)")
	return c
}

func cmdTrace(file, peers, out string, from, to time.Duration, stdout, stderr io.Writer) int {
	var o trace.TimelineOptions
	if peers != "" {
		p, err := trace.ParsePeers(peers)
		if err != nil {
			fmt.Fprintf(stderr, "gridbed trace: --peers: %v\n", err)
			return 2
		}
		o.Peers = p
	}
	if from < 0 || to < 0 || (to > 0 && to < from) {
		fmt.Fprintf(stderr, "gridbed trace: --from %v, --to %v: give a window with from before to\n", from, to)
		return 2
	}
	o.From, o.To = from, to
	if out == "" {
		out = strings.TrimSuffix(file, filepath.Ext(file)) + ".html"
	}
	if head, err := readHead(out, len(timelineMagic)); err == nil && head != timelineMagic {
		fmt.Fprintf(stderr, "gridbed trace: --out %s: the file exists and is not a timeline gridbed wrote; name another with --out\n", out)
		return 2
	}
	in, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed trace: %v\n", err)
		return 2
	}
	defer in.Close()
	var page bytes.Buffer
	st, err := trace.Timeline(in, &page, o)
	if err != nil {
		fmt.Fprintf(stderr, "gridbed trace: %s: %v\n", file, err)
		return 2
	}
	if err := os.WriteFile(out, page.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "gridbed trace: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "timeline: %s (peers %v, %v to %v; messages: %d delivered, %d not delivered, %d to or from peers not drawn; faults: %d; job steps: %d)\n",
		out, st.Columns, st.From, st.To, st.Arrows, st.Lost, st.Outside, st.Faults, st.Steps)
	return 0
}
