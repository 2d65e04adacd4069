// Package schemes holds the end-to-end tests of the job-scheduling
// schemes on both drivers: 000's PUSH/PULL modes and balloons, 002's
// categorical (CAN-P, CID, sub-CAN), heterogeneous-CE and Dual-CAN
// schemes. It has no code of its own: the schemes live in actors/ and
// run through emulator.Run; their tests are a package of their own so
// that `go test ./...` runs them beside the emulator package's.
package schemes
