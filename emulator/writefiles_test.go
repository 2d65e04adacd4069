package emulator_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/emulator"
	"github.com/gridbed/gridbed/emulator/emutest"
)

// TestWriteFilesSaysWhatIsComplete: when a results file cannot be written
// (here timeseries.csv is in the way as a directory, as a full disk would
// stop it) WriteFiles's error names that file and the files written whole
// before it, and where they are.
func TestWriteFilesSaysWhatIsComplete(t *testing.T) {
	sc := emutest.Load(t, "../examples/quickstart.yaml", "peers.count=20", "peers.join_window=20s", "duration=3m")
	res := emutest.Run(t, sc, emulator.DriverSim)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "timeseries.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := res.WriteFiles(dir)
	var we *emulator.WriteError
	if !errors.As(err, &we) || we.Failed != "timeseries.csv" || !slices.Equal(we.Complete, []string{"summary.json", "scenario.yaml"}) ||
		!strings.Contains(err.Error(), "summary.json, scenario.yaml complete in "+dir) {
		t.Fatalf("seed %d: WriteFiles = %v (%+v), want timeseries.csv failed after summary.json and scenario.yaml", sc.Seed, err, we)
	}
	for _, f := range we.Complete {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("seed %d: %s said complete: %v", sc.Seed, f, err)
		}
	}
}
