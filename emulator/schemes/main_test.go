package schemes_test

import (
	"os"
	"testing"

	"github.com/gridbed/gridbed/emulator"
)

// TestMain runs the package's scenarios with the command's garbage
// collector settings (emulator.TuneGC), as a user's runs are.
func TestMain(m *testing.M) {
	emulator.TuneGC()
	os.Exit(m.Run())
}
