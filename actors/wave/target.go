package wave

import "time"

// TargetWavezone is the wavezone a wave strategy schedules and migrates
// to at now: the one whose earliest timezone just entered night (001 §V-A,
// option (a), which "provides the maximal length of night-time cycles").
// Timezone tz's local time is UTC + tz h, so in wavezone w timezone
// 4w + 3 reaches midnight first; the target is the wavezone where that
// timezone's local time since midnight is shortest while still in the night.
func (c Calendar) TargetWavezone(now time.Duration) int {
	best, bestAge := 0, time.Duration(-1)
	for w := 0; w < Wavezones; w++ {
		first := w*TimezonesPerWave + TimezonesPerWave - 1
		age := c.Local(now, first) % Day // time since local midnight
		if age >= NightEnd*time.Hour {
			continue
		}
		if bestAge < 0 || age < bestAge {
			best, bestAge = w, age
		}
	}
	return best
}
