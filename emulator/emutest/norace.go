//go:build !race

package emutest

// Race is true when the tests run under the race detector (go test
// -race): instrumented code runs several times slower, so a live run may
// fall behind its time scale without saying anything about the code.
const Race = false
