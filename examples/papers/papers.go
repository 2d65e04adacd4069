// Package papers is gridbed's experiment suite: one scenario file per
// published experiment of the papers (docs/PAPERS.md), each with an
// experiment block naming the paper's section and figure, the sweep that
// reproduces it and the paper's findings with their values. The files are
// embedded, so `gridbed reproduce NAME` works from any directory; each
// also runs as an ordinary scenario (`gridbed run examples/papers/NAME.yaml
// --driver sim`, one point). docs/FIDELITY.md.
package papers

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gridbed/gridbed/emulator/scenario"
)

//go:embed *.yaml
var files embed.FS

// Dir is where the files live in the repository, for messages and Source.
const Dir = "examples/papers"

// Names lists the experiments, sorted (e.g. "003-fig6").
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	slices.Sort(out)
	return out
}

// Load parses experiment name's scenario file (Source
// "examples/papers/NAME.yaml").
func Load(name string) (scenario.Scenario, error) {
	data, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return scenario.Scenario{}, fmt.Errorf("no experiment named %q — `gridbed reproduce --list` names them: %s", name, strings.Join(Names(), ", "))
	}
	return scenario.Parse(path.Join(Dir, name+".yaml"), data)
}
