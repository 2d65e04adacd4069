//go:build !race

package cores

// Live is a live-driver run's share: it mostly waits on its scaled clock
// (the long tier's live runs use 0.05–0.5 of a core here) — a quarter of
// a core.
const Live = 1
