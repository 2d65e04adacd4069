//go:build race

package cores

// Live is a live-driver run's share: under the race detector, whose
// instrumented actors cost several times more, a whole core.
const Live = PerCore
