// Package examples embeds the example scenario files of this directory, so
// that the gridbed command finds them from any working directory: a path
// such as examples/bench.yaml that does not exist where gridbed runs is read
// from here (gridbed bench's default file, `cd /tmp && gridbed run
// examples/quickstart.yaml`). The published experiments are embedded by
// the papers package beside them.
package examples

import (
	"embed"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed *.yaml *.csv
var files embed.FS

// Dir is where the files live in the repository.
const Dir = "examples"

// Names lists the embedded scenario files (e.g. "quickstart.yaml"), sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// Lookup returns the embedded file a path names: "examples/NAME.yaml" as
// written in the docs (from any directory, with or without a leading
// "./"), or a path ending in examples/NAME.yaml; source is the path in the
// repository ("examples/NAME.yaml") and ok is false for any other path.
func Lookup(p string) (source string, data []byte, ok bool) {
	p = filepath.ToSlash(filepath.Clean(p))
	dir, name := path.Split(p)
	if path.Base(strings.TrimSuffix(dir, "/")) != Dir || !strings.HasSuffix(name, ".yaml") {
		return "", nil, false
	}
	data, err := files.ReadFile(name)
	if err != nil {
		return "", nil, false
	}
	return path.Join(Dir, name), data, true
}

// ReadBeside reads a data file a built-in example names (a latency
// matrix: link.latency_matrix), relative to the examples: source is the
// scenario's source as Lookup gives it ("examples/NAME.yaml"), name the
// path the scenario wrote. ok is false for any other source or name.
func ReadBeside(source, name string) (data []byte, ok bool) {
	source = filepath.ToSlash(filepath.Clean(source))
	dir, _ := path.Split(source)
	if path.Base(strings.TrimSuffix(dir, "/")) != Dir {
		return nil, false
	}
	name = path.Clean(filepath.ToSlash(name))
	if !fs.ValidPath(name) || strings.HasSuffix(name, ".yaml") {
		return nil, false
	}
	data, err := files.ReadFile(name)
	return data, err == nil
}
