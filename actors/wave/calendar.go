// Package wave is the pure core of the Wave scheduler (001): the emulated
// calendar, hosts' hourly availability (001 §V-A), the timezone-aware CAN
// labels and wavezones (001 §III-B), the target-wavezone rule (001 §V-A,
// option a), the seven scheduling strategies as decisions (001 §IV-A) and
// the two host discoveries (001 §IV). No goroutines, clocks, global
// randomness or I/O: callers pass the time and a *rand.Rand.
package wave

import "time"

// Timezones and Wavezones: 001 §V-A divides a 1 × 24 CAN space into 6
// wavezones of 4 timezones each.
const (
	Timezones            = 24
	Wavezones            = 6
	TimezonesPerWave     = Timezones / Wavezones
	Day                  = 24 * time.Hour
	NightStart, NightEnd = 0, 6 // local hours of night (001 §V-A: 12 pm to 6 am)
)

// Calendar maps emulated time to time of day. Start is the UTC time of day
// at emulated time 0 (clock.start).
type Calendar struct {
	Start time.Duration
}

// UTC is the UTC time since the first midnight before the run began at
// emulated time now (so UTC(now)/Day is the day index).
func (c Calendar) UTC(now time.Duration) time.Duration { return c.Start + now }

// Local is the local time since that midnight in timezone tz, whose UTC
// offset is tz hours (timezone tz's local time is UTC + tz h, mod a day).
// Timezone k is the k-th stripe of the CAN's timezone dimension (Label).
func (c Calendar) Local(now time.Duration, tz int) time.Duration {
	return c.UTC(now) + time.Duration(tz)*time.Hour
}

// LocalHour is the hour of the day (0–23) in timezone tz at now, and the
// index of the local day (for the hourly availability profile).
func (c Calendar) LocalHour(now time.Duration, tz int) (hour int, day int64) {
	l := c.Local(now, tz)
	day = int64(l / Day)
	return int((l % Day) / time.Hour), day
}

// Night reports whether local hour h is night time (001 §V-A: 0–6 h).
func Night(h int) bool { return h >= NightStart && h < NightEnd }

// NextHour is the first whole UTC hour strictly after now, as emulated
// time: every timezone's hourly slot changes there (offsets are whole
// hours).
func (c Calendar) NextHour(now time.Duration) time.Duration {
	u := c.UTC(now)
	return (u/time.Hour+1)*time.Hour - c.Start
}
