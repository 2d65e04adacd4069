package bandwidth

import (
	"fmt"
	"math"
	"strings"

	"github.com/gridbed/gridbed/emulator/bus"
)

// Class is one kind of access link and the share of the peers that have it
// (a DSL line, a campus network): Up is the peer's upload capacity, Down its
// download capacity (0: unlimited).
type Class struct {
	Fraction float64
	Up, Down Rate
}

// String is "0.5: 1Mbit up, 8Mbit down".
func (c Class) String() string {
	return fmt.Sprintf("%g: %v up, %v down", c.Fraction, c.Up, c.Down)
}

// Config is the bandwidth model: every peer's access link drawn from
// Classes, an optional cap per (sender, receiver) link, and an optional
// limit on the bytes each access-link queue holds. The zero Config limits
// nothing.
type Config struct {
	// Classes are the access links, each held by its Fraction of the peers
	// (the fractions add up to 1). Empty: every access link is unlimited.
	Classes []Class
	// Link caps every (sender, receiver) link on top of the access links
	// (0: no cap).
	Link Rate
	// Queue is the most bytes an access-link queue (a peer's uplink or
	// downlink) holds, the message in transmission included; a message that
	// would take it beyond is dropped. 0: no limit.
	Queue Size
}

// On reports whether c limits anything.
func (c Config) On() bool {
	if c.Link > 0 {
		return true
	}
	for _, k := range c.Classes {
		if k.Up > 0 || k.Down > 0 {
			return true
		}
	}
	return false
}

// Uniform is the Config where every peer has the same access link.
func Uniform(up, down Rate) Config {
	return Config{Classes: []Class{{Fraction: 1, Up: up, Down: down}}}
}

// Validate reports fractions that are not in (0, 1] or do not add up to 1,
// and negative rates or sizes.
func (c Config) Validate() error {
	sum := 0.0
	for i, k := range c.Classes {
		if !(k.Fraction > 0 && k.Fraction <= 1) {
			return fmt.Errorf("bandwidth: class %d: fraction %v is not in (0, 1] — write the share of peers with this access link, e.g. 0.5", i, k.Fraction)
		}
		if k.Up < 0 || k.Down < 0 {
			return fmt.Errorf("bandwidth: class %d: negative rate — write %s", i, RateSyntax)
		}
		sum += k.Fraction
	}
	if len(c.Classes) > 0 && math.Abs(sum-1) > 1e-9 {
		parts := make([]string, len(c.Classes))
		for i, k := range c.Classes {
			parts[i] = fmt.Sprint(k.Fraction)
		}
		return fmt.Errorf("bandwidth: the class fractions %s add up to %v, not 1 — make them add up to 1", strings.Join(parts, " + "), sum)
	}
	if c.Link < 0 {
		return fmt.Errorf("bandwidth: negative link cap — write %s", RateSyntax)
	}
	if c.Queue < 0 {
		return fmt.Errorf("bandwidth: negative queue limit — write %s", SizeSyntax)
	}
	return nil
}

// ClassOf returns the class index of address a: a seeded hash of a, mapped
// onto the cumulative fractions, so the same seed gives every peer the same
// access link on both drivers, and a share close to each Fraction of any
// large population. -1 when there are no classes.
func (c Config) ClassOf(seed uint64, a bus.Address) int {
	if len(c.Classes) == 0 {
		return -1
	}
	u := float64(mix(seed, streamClass, uint64(a))>>11) / (1 << 53) // uniform in [0, 1)
	acc := 0.0
	for i, k := range c.Classes {
		acc += k.Fraction
		if u < acc {
			return i
		}
	}
	return len(c.Classes) - 1
}

const streamClass = 0x62616e64 // "band"

// mix is a seeded 64-bit hash of (a, b) (splitmix64 finalizers).
func mix(seed, a, b uint64) uint64 {
	z := seed
	for _, v := range []uint64{a, b} {
		z += v + 0x9e3779b97f4a7c15
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
	}
	return z
}
