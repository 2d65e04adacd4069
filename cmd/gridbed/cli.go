package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// exitStatuses is the exit-status table every command's help ends with
// (docs/RESULTS.md#outcome-and-exit-codes).
const exitStatuses = `Exit status:
  0    the run completed, whatever its outcome (without --strict)
  1    an error of gridbed itself (e.g. writing the results; with
       run --check-determinism, two runs of one seed that diverged)
  2    it did not start: a bad flag, scenario file or --set, a results
       directory that cannot be written, a run that cannot fit in memory,
       a busy --metrics-addr or --pprof-addr
  3    --strict and the outcome is failed (an invariant failed); for
       reproduce --strict, a finding not reproduced
  4    overloaded: the overload guard stopped the run (or --strict and the
       machine could not keep up)
  130  interrupted (the first Ctrl-C stops the run and writes what it
       measured; a second exits at once)
`

// exitCode is a command's exit status, its reasons already printed.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// status turns a command's exit status into its RunE result.
func status(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}

// run executes the command line args and returns the exit status: what
// main exits with and what the tests check.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(args, stdout, stderr)
	root.SetArgs(args)
	c, err := root.ExecuteC()
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	// Cobra's own errors: an unknown command, or wrong arguments.
	name := "gridbed"
	if c != nil {
		name = c.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	if strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(stderr, "\n%s", root.UsageString())
	} else {
		fmt.Fprintf(stderr, "`%s --help` lists the flags\n", name)
	}
	return 2
}

// newRoot builds the gridbed command and its subcommands, writing to
// stdout and stderr; args are the whole command line (for the advice on an
// unknown flag).
func newRoot(args []string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gridbed",
		Short: "an emulation testbed for P2P desktop-grid protocols",
		Long: `gridbed — an emulation testbed for P2P desktop-grid protocols

Runs scenarios of the CAN-based desktop grid (overlay maintenance, churn,
faults, job matchmaking) over embedded NATS in real time, or on the
deterministic simulator in virtual time, and writes their results and a
report. Scenario files are YAML (docs/SCENARIOS.md; gridbed keys lists every
key); an examples/NAME.yaml path that does not exist where gridbed runs is
read from the examples built into gridbed.

` + exitStatuses,
		Example: `  gridbed run examples/quickstart.yaml --driver sim
  gridbed run examples/chaos.yaml --strict --set seed=3
  gridbed sweep examples/churn.yaml --driver sim --seeds 3 --vary overlay.heartbeat.mode=vanilla,compact
  gridbed reproduce 003-fig6 --seeds 3
  gridbed help run`,
		Version:       versionText(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Bare "gridbed": the usage on stderr, status 2 (nothing ran).
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprint(stderr, c.UsageString())
			return exitCode(2)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(stderr, "%s: %s\n", c.CommandPath(), flagAdvice(c, args, err))
		return exitCode(2)
	})
	root.AddCommand(newRunCmd(stdout, stderr), newWorkerCmd(stderr), newSweepCmd(stdout, stderr), newValidateCmd(stdout, stderr),
		newReproduceCmd(stdout, stderr), newKeysCmd(stdout), newBenchCmd(stdout, stderr), newVersionCmd(stdout),
		newChaosCmd(stdout, stderr), newTraceCmd(stdout, stderr))
	return root
}

// flagAdvice says what to write instead of a flag the command refused:
// an unknown flag that is a scenario key (--seed 3, --peers.count=50,
// before or after the command) is answered with the --set to write.
func flagAdvice(c *cobra.Command, args []string, err error) string {
	if _, arg, ok := strings.Cut(err.Error(), "unknown shorthand flag: "); ok {
		// Go's flag package took -out for --out; pflag reads it as -o -u -t.
		if i := strings.LastIndex(arg, " in -"); i >= 0 {
			long, _, _ := strings.Cut(arg[i+len(" in -"):], "=")
			if c.Flags().Lookup(long) != nil || scenarioKey(long) != "" {
				err = fmt.Errorf("unknown flag: --%s", long)
				if c.Flags().Lookup(long) != nil {
					return fmt.Sprintf("-%s: write --%s (flags take two dashes)", long, long)
				}
				args = slices.Clone(args)
				for j, a := range args {
					if a == "-"+long || strings.HasPrefix(a, "-"+long+"=") {
						args[j] = "-" + a
					}
				}
			}
		}
	}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return fmt.Sprintf("%v — `%s --help` lists the flags and their values", err, c.CommandPath())
	}
	key := scenarioKey(name)
	if key == "" {
		return fmt.Sprintf("%v — `%s --help` lists the flags", err, c.CommandPath())
	}
	value := flagValue(args, name)
	if value == "" {
		value = "VALUE"
	}
	example := c.CommandPath() + " FILE"
	if c.Flags().Lookup("set") == nil {
		example = "gridbed run FILE"
	}
	return fmt.Sprintf("--%s is not a flag; %s is a scenario key — write --set %s=%s (e.g. %s --set %s=%s)",
		name, key, key, value, example, key, value)
}

// scenarioKey is the scenario key a flag name stands for: the key itself
// (seed, peers.count) or the one key whose last element it is (count is
// not unique; join_window is peers.join_window), hyphens read as
// underscores (--join-window); "" for none.
func scenarioKey(name string) string {
	name = strings.ReplaceAll(name, "-", "_")
	var byLast []string
	for _, k := range scenario.Keys() {
		if k.Key == name {
			return k.Key
		}
		if k.Key[strings.LastIndex(k.Key, ".")+1:] == name {
			byLast = append(byLast, k.Key)
		}
	}
	if len(byLast) == 1 {
		return byLast[0]
	}
	return ""
}

// flagValue is the value given to --name on the command line ("--name=v"
// or "--name v"), or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			return args[i+1]
		}
	}
	return ""
}

// flagGiven reports whether flag name was set on the command line.
func flagGiven(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}

// scenarioFiles completes a scenario file argument: YAML files.
func scenarioFiles(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// addSetFlag adds the repeatable --set key=value flag.
func addSetFlag(fs *pflag.FlagSet, sets *[]string, usage string) {
	fs.StringArrayVar(sets, "set", nil, usage)
}
