package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gridbed/gridbed/emulator"
)

// choiceValue is a flag taking one of a few words; any other value is
// refused when the flag is parsed, with the words to write.
type choiceValue struct {
	name    string
	v       *string
	choices []string
}

func (c *choiceValue) String() string { return *c.v }
func (c *choiceValue) Type() string   { return strings.Join(c.choices, "|") }
func (c *choiceValue) Set(s string) error {
	for _, w := range c.choices {
		if strings.EqualFold(s, w) {
			*c.v = w
			return nil
		}
	}
	alts := make([]string, len(c.choices))
	for i, w := range c.choices {
		alts[i] = "--" + c.name + " " + w
	}
	return fmt.Errorf("write %s", orList(alts))
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// addChoiceFlag adds flag name taking one of choices (the first is the
// default unless def says otherwise), completed in the shell.
func addChoiceFlag(c *cobra.Command, v *string, name, def string, choices []string, usage string) {
	*v = def
	c.Flags().Var(&choiceValue{name: name, v: v, choices: choices}, name, usage)
	_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
}

// addDriverFlag adds --driver: emulator (actors over embedded NATS) or sim.
func addDriverFlag(c *cobra.Command, v *string) {
	addChoiceFlag(c, v, "driver", emulator.DriverLive, []string{emulator.DriverLive, emulator.DriverSim},
		"emulator: actors over embedded NATS in scaled real time; sim: deterministic, virtual time")
}

// logLevels are --log-level's words.
var logLevels = []string{"debug", "info", "warn", "error"}

// addLogLevelFlag adds --log-level (logs go to stderr).
func addLogLevelFlag(c *cobra.Command, v *string) {
	addChoiceFlag(c, v, "log-level", "warn", logLevels, "what is logged to stderr")
}

// logFlags are --log-level and --log-format.
type logFlags struct{ level, format string }

// addLogFlags adds --log-level and --log-format (logs go to stderr).
func addLogFlags(c *cobra.Command, l *logFlags) {
	addLogLevelFlag(c, &l.level)
	addChoiceFlag(c, &l.format, "log-format", "text", []string{"text", "json"},
		"how log lines are written to stderr: text (time=… level=… msg=… key=value) or json (one object a line, for a log collector)")
}

// logger is the command's logger on w, at the flags' level and format.
func (l logFlags) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slogLevel(l.level)}
	if l.format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// args are the flags as a worker process is given them.
func (l logFlags) args() []string {
	level, format := l.level, l.format
	if level == "" {
		level = "warn"
	}
	if format == "" {
		format = "text"
	}
	return []string{"--log-level", level, "--log-format", format}
}

// slogLevel reads a --log-level word (already validated).
func slogLevel(s string) slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(s))
	return level
}

// addrValue is a listen-address flag, checked when parsed: "off", a
// host:port, or (bare, for --pprof-addr) a port.
type addrValue struct {
	name string
	v    *string
	bare bool // a bare port is allowed and means loopback
}

func (a *addrValue) String() string { return *a.v }
func (a *addrValue) Type() string   { return "ADDR" }
func (a *addrValue) Set(s string) error {
	if err := checkAddr(a.name, s, a.bare); err != nil {
		return err
	}
	*a.v = s
	return nil
}

// checkAddr checks a listen address: "off", host:port (an empty host is
// this machine's loopback interface) with a port from 0 to 65535, or — when
// bare — a port alone. Errors say what to write.
func checkAddr(flag, s string, bare bool) error {
	if s == "off" || (s == "" && bare) {
		return nil
	}
	validPort := func(p string) bool {
		n, err := strconv.Atoi(p)
		return err == nil && n >= 0 && n <= 65535
	}
	if validPort(s) {
		if bare {
			return nil
		}
		return fmt.Errorf("a port alone is not an address — write --%s :%s (this machine only), --%s 0.0.0.0:%s (every interface) or --%s off", flag, s, flag, s, flag)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || !validPort(port) {
		return fmt.Errorf("not host:port — write e.g. --%s 127.0.0.1:9464, --%s :9464 (this machine only) or --%s off", flag, flag, flag)
	}
	if host != "" && net.ParseIP(host) == nil && strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q is not a host name or IP address — write e.g. --%s 127.0.0.1:%s", host, flag, port)
	}
	return nil
}

// addAddrFlag adds a listen-address flag.
func addAddrFlag(fs *pflag.FlagSet, v *string, name, def string, bare bool, usage string) {
	*v = def
	fs.Var(&addrValue{name: name, v: v, bare: bare}, name, usage)
}

// addFaultsFlag adds --faults FILE: a faults file (scenario.FaultsOverride,
// as gridbed chaos writes) whose timeline replaces the scenario's.
func addFaultsFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "faults", "", "replace the scenario's fault timeline with the one in `FILE` (faults:, and its seed: if it has one; gridbed chaos writes them, docs/FAULTS.md); --set faults.… then edits it")
}
