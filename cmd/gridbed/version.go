package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionDeps are the dependencies whose versions gridbed version names:
// the ones that decide how a run behaves.
var versionDeps = []struct{ path, name string }{
	{"github.com/nats-io/nats-server/v2", "nats-server"},
	{"github.com/nats-io/nats.go", "nats.go"},
	{"github.com/asynkron/protoactor-go", "protoactor-go"},
	{"github.com/prometheus/client_golang", "prometheus client"},
}

// versionText is what gridbed version and gridbed --version print: the
// module's version, the commit it was built from, Go's version and the key
// dependencies', from the build information in the binary.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("gridbed (no build information)\ngo         %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return formatVersion(bi)
}

// formatVersion renders build information as gridbed version prints it.
func formatVersion(bi *debug.BuildInfo) string {
	var b strings.Builder
	version := bi.Main.Version
	if version == "" || version == "(devel)" {
		version = "(devel: built from a source tree, not a tagged release)"
	}
	fmt.Fprintf(&b, "gridbed %s\n", version)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	commit := settings["vcs.revision"]
	switch {
	case commit == "":
		commit = "unknown (built without VCS information: go run, or -buildvcs=false)"
	default:
		if t := settings["vcs.time"]; t != "" {
			commit += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			commit += ", with uncommitted changes"
		}
	}
	fmt.Fprintf(&b, "%-18s %s\n", "commit", commit)
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	fmt.Fprintf(&b, "%-18s %s %s/%s\n", "go", goVersion, runtime.GOOS, runtime.GOARCH)
	deps := map[string]string{}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version + " (replaces " + d.Version + ")"
		}
		deps[d.Path] = v
	}
	for _, d := range versionDeps {
		v, ok := deps[d.path]
		if !ok {
			v = "unknown"
		}
		fmt.Fprintf(&b, "%-18s %s\n", d.name, v)
	}
	return b.String()
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print gridbed's version, commit, Go and key dependency versions",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprint(stdout, versionText())
			return nil
		},
	}
}
