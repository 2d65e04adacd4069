package wave

// Profile is the hourly availability of hosts (001 §V-A): night hours are
// available with a local CPU load uniform in [0, 0.1]; each daytime hour is
// available with probability DayFree, with a load uniform in [0, 0.3];
// unavailable hours give a foreign job nothing (screensaver mode, 001 §IV:
// the job is suspended while the owner uses the machine).
//
// 001 generates "a coarse-grain hourly synthetic profile" per machine and
// does not say whether a day repeats; gridbed draws every (host, local day,
// hour) slot afresh, from a hash of Seed, so a slot is a pure function and
// both drivers see the same one.
type Profile struct {
	Seed    uint64
	DayFree float64 // probability that a daytime hour is available (0.05–0.95 in 001 §V-A)
}

// Slot is one host's hour: whether a foreign job may run, and the owner's
// share of the CPU then.
type Slot struct {
	Available bool
	Load      float64
}

// Rate is the progress a foreign job makes per second of the slot, in
// seconds of dedicated-machine work: 1 − load when available, else 0
// (001 §IV, screensaver mode: the job shares the CPU with local jobs).
func (s Slot) Rate() float64 {
	if !s.Available {
		return 0
	}
	return 1 - s.Load
}

// Slot is host's slot at local hour h of local day day (001 §V-A).
func (p Profile) Slot(host uint64, day int64, h int) Slot {
	x := mix(p.Seed ^ mix(host) ^ mix(uint64(day)*24+uint64(h)+0x9e37))
	u1 := float64(x>>11) / (1 << 53)
	u2 := float64(mix(x)>>11) / (1 << 53)
	if Night(h) {
		return Slot{Available: true, Load: 0.1 * u2}
	}
	if u1 < p.DayFree {
		return Slot{Available: true, Load: 0.3 * u2}
	}
	return Slot{Load: 1}
}

// mix is splitmix64's finalizer: a pure hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
