//go:build race

package emulator

// raceOn: the tests run under the race detector (the package's own tests
// cannot import emutest, which imports this package).
const raceOn = true
