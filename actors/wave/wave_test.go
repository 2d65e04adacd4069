package wave

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gridbed/gridbed/actors/can"
	"github.com/gridbed/gridbed/actors/core"
)

func TestLocalHour(t *testing.T) {
	for _, c := range []struct {
		start, now time.Duration
		tz, hour   int
		day        int64
	}{
		{0, 0, 0, 0, 0},
		{0, 0, 5, 5, 0},
		{22 * time.Hour, 3 * time.Hour, 0, 1, 1},
		{22 * time.Hour, 0, 3, 1, 1},
		{6 * time.Hour, 90 * time.Minute, 23, 6, 1},
	} {
		h, d := Calendar{Start: c.start}.LocalHour(c.now, c.tz)
		if h != c.hour || d != c.day {
			t.Errorf("start %v now %v tz %d: hour %d day %d, want %d %d", c.start, c.now, c.tz, h, d, c.hour, c.day)
		}
	}
}

func TestTargetWavezone(t *testing.T) {
	for _, c := range []struct {
		utc  time.Duration
		want int
	}{
		{0, 0},                             // tz 3 is at 03:00
		{time.Hour, 5},                     // tz 23 has just reached midnight
		{4 * time.Hour, 5},                 // tz 23 at 03:00
		{5 * time.Hour, 4},                 // tz 19 at 00:00
		{21*time.Hour + 30*time.Minute, 0}, // tz 3 at 00:30
	} {
		cal := Calendar{Start: c.utc}
		got := cal.TargetWavezone(0)
		if got != c.want {
			t.Errorf("UTC %v: wavezone %d, want %d", c.utc, got, c.want)
		}
		// Its earliest timezone is in its first four hours of night.
		first := got*TimezonesPerWave + TimezonesPerWave - 1
		if h, _ := cal.LocalHour(0, first); h >= 4 {
			t.Errorf("UTC %v: wavezone %d's first timezone is at local %d h", c.utc, got, h)
		}
	}
}

func TestProfile(t *testing.T) {
	for _, free := range []float64{0.05, 0.15, 0.5, 0.95} {
		p := Profile{Seed: 7, DayFree: free}
		var day, avail int
		for host := uint64(1); host <= 200; host++ {
			for h := 0; h < 24; h++ {
				s := p.Slot(host, 3, h)
				if s != p.Slot(host, 3, h) {
					t.Fatal("slot not a pure function")
				}
				if Night(h) {
					if !s.Available || s.Load < 0 || s.Load > 0.1 {
						t.Fatalf("night slot %+v", s)
					}
					continue
				}
				day++
				if s.Available {
					avail++
					if s.Load < 0 || s.Load > 0.3 {
						t.Fatalf("day slot %+v", s)
					}
				} else if s.Rate() != 0 {
					t.Fatalf("unavailable slot runs at %v", s.Rate())
				}
			}
		}
		got := float64(avail) / float64(day)
		if got < free-0.04 || got > free+0.04 {
			t.Errorf("DayFree %v: %v of day slots available", free, got)
		}
	}
}

func TestLabels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for tz := 0; tz < Timezones; tz++ {
		for range 50 {
			p := JoinLabel(rng, tz)
			if WavezoneAt(p[0]) != WavezoneOf(tz) {
				t.Fatalf("tz %d joined at wavezone %d", tz, WavezoneAt(p[0]))
			}
		}
	}
	if WavezoneOf(23) != 5 || WavezoneOf(4) != 1 || TimezoneAt(uint32(can.Span-1)) != 23 {
		t.Fatal("wavezones of the 1 × 24 space")
	}
}

func TestStrategies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		s       Strategy
		unavail Action
		noHost  Action
		initial int
		night   bool
	}{
		{NoMigration, Stay, Fail, 1, false},
		{MigrationImmediate, Migrate, Fail, 1, false},
		{MigrationLinger, Wait, Fail, 1, false},
		{WaveImmediate, Migrate, Fail, 1, true},
		{WaveLinger, Wait, Fail, 1, true},
		{MigrationAdaptive, Migrate, Wait, 2, false},
		{WaveAdaptive, Migrate, Wait, 2, true},
	} {
		if p, err := ParseStrategy(string(c.s)); err != nil || p != c.s {
			t.Fatalf("parse %s", c.s)
		}
		d := c.s.OnUnavailable(rng)
		if d.Action != c.unavail {
			t.Errorf("%s on unavailable: %v", c.s, d.Action)
		}
		if d.Action == Wait && (d.For < time.Hour || d.For >= 3*time.Hour) {
			t.Errorf("%s lingers %v", c.s, d.For)
		}
		if got := c.s.OnNoHost(rng).Action; got != c.noHost {
			t.Errorf("%s with no host: %v", c.s, got)
		}
		if len(c.s.Initial()) != c.initial || c.s.Night() != c.night {
			t.Errorf("%s: initial %v night %v", c.s, c.s.Initial(), c.s.Night())
		}
		if c.s.OnWaitEnd(true).Action != Stay {
			t.Errorf("%s leaves an available host after lingering", c.s)
		}
		want := Migrate
		if c.s == NoMigration {
			want = Stay
		}
		if c.s.OnWaitEnd(false).Action != want {
			t.Errorf("%s after lingering on a busy host", c.s)
		}
	}
	if _, err := ParseStrategy("wave"); err == nil {
		t.Fatal("parsed an unknown strategy")
	}
}

// stripes is a Space of n zones side by side along the timezone axis, each
// the whole virtual axis: a chain of neighbors.
func stripes(n int) *Space {
	s := NewSpace()
	w := can.Span / uint64(n)
	for i := 0; i < n; i++ {
		z := can.Whole(2)
		z.Lo[0], z.Hi[0] = uint64(i)*w, uint64(i+1)*w
		if i == n-1 {
			z.Hi[0] = can.Span
		}
		var nb []core.NodeID
		if i > 0 {
			nb = append(nb, core.NodeID(i))
		}
		if i < n-1 {
			nb = append(nb, core.NodeID(i+2))
		}
		s.Add(core.NodeID(i+1), can.Point{uint32(z.Lo[0] + w/2), 0}, []can.Zone{z}, nb)
	}
	return s
}

func TestRoute(t *testing.T) {
	s := stripes(6)
	for _, c := range []struct {
		from  core.NodeID
		tz    int
		owner core.NodeID
		hops  int
	}{
		{1, 0, 1, 0}, {1, 23, 6, 5}, {4, 9, 3, 1}, {6, 2, 1, 5},
	} {
		p := can.Point{uint32(uint64(c.tz)*stripe + 5), 77}
		o, h := s.Route(c.from, p)
		if o != c.owner || h != c.hops {
			t.Errorf("from %d to tz %d: owner %d after %d hops, want %d after %d", c.from, c.tz, o, h, c.owner, c.hops)
		}
	}
}

func TestDiscovery(t *testing.T) {
	s := stripes(6) // peer k owns wavezone k-1
	only := func(id core.NodeID) func(core.NodeID) bool { return func(x core.NodeID) bool { return x == id } }
	all := func(core.NodeID) bool { return true }
	none := func(core.NodeID) bool { return false }
	for _, c := range []struct {
		name   string
		find   func(*rand.Rand) Found
		ok     bool
		host   core.NodeID
		probes uint64
	}{
		{"random takes the first", func(r *rand.Rand) Found { return RandomLabel(r, s, 1, WavezoneRegion(2), all, RandomTries) }, true, 3, 1},
		{"random gives up after 5", func(r *rand.Rand) Found { return RandomLabel(r, s, 1, Everywhere, none, RandomTries) }, false, 0, 5},
		{"ring takes no host outside the region", func(r *rand.Rand) Found { return ExpandingRing(r, s, 1, WavezoneRegion(0), only(3), 2) }, false, 0, 3},
		{"ring two hops away", func(r *rand.Rand) Found { return ExpandingRing(r, s, 1, Region{0, 3 * (can.Span / 6)}, only(3), 2) }, true, 3, 0}, // starts at 1, 2 or 3
		{"ring scope 1 misses", func(r *rand.Rand) Found { return ExpandingRing(r, s, 1, WavezoneRegion(0), only(3), 1) }, false, 0, 2},
		{"ring both sides", func(r *rand.Rand) Found { return ExpandingRing(r, s, 6, WavezoneRegion(3), none, 2) }, false, 0, 5},
	} {
		r := rand.New(rand.NewPCG(9, 9))
		f := c.find(r)
		if f.OK != c.ok || f.Host != c.host || (c.probes > 0 && f.Probe != c.probes) || f.Reply > f.Probe {
			t.Errorf("%s: %+v, want ok %v host %d probes %d", c.name, f, c.ok, c.host, c.probes)
		}
	}
}

func TestRingStaysInRegion(t *testing.T) {
	s := stripes(6)
	r := rand.New(rand.NewPCG(5, 6))
	// Every peer is acceptable but only wavezone 1's peer (2) is in region.
	f := ExpandingRing(r, s, 1, WavezoneRegion(1), func(core.NodeID) bool { return true }, 2)
	if !f.OK || f.Host != 2 {
		t.Fatalf("%+v", f)
	}
}
