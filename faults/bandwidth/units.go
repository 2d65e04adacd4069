package bandwidth

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is a link capacity in bits per second; 0 is unlimited.
type Rate int64

// Rate units: decimal (SI) multiples, as network capacities are quoted.
const (
	Bit  Rate = 1
	Kbit Rate = 1000
	Mbit Rate = 1000 * Kbit
	Gbit Rate = 1000 * Mbit
)

// Size is a number of bytes.
type Size int64

// Size units: decimal KB and MB (1000, 1000²) and binary KiB and MiB.
const (
	Byte Size = 1
	KB   Size = 1000
	MB   Size = 1000 * KB
	KiB  Size = 1024
	MiB  Size = 1024 * KiB
)

// rateUnits maps every accepted unit spelling to its multiple (bits per
// second). Byte rates are accepted too; a trailing /s is optional.
var rateUnits = map[string]float64{
	"bit": 1, "kbit": 1e3, "Kbit": 1e3, "Mbit": 1e6, "Gbit": 1e9,
	"bps": 1, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9,
	"B": 8, "kB": 8e3, "KB": 8e3, "MB": 8e6, "GB": 8e9,
}

// RateSyntax is how to write a rate, for error messages.
const RateSyntax = "a number and a unit, e.g. 1Mbit, 512kbit, 8Mbit/s, 100Mbps or 125kB/s (decimal multiples; B is a byte), or 0 for unlimited"

// ParseRate reads a rate such as "1Mbit", "8Mbit/s", "512kbit", "1.5Mbps"
// or "125kB/s"; "0" is unlimited. Rates below 1 bit/s or above 1000 Gbit/s
// are rejected.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	if t == "0" || t == "unlimited" {
		return 0, nil
	}
	num, unit := splitNumber(strings.TrimSuffix(t, "/s"))
	v, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a rate — write %s", s, RateSyntax)
	}
	mult, ok := rateUnits[unit]
	if !ok {
		hint := ""
		switch strings.ToLower(unit) {
		case "mbit", "mbps", "mb":
			hint = " (M is mega: write Mbit or MB)"
		case "gbit", "gbps", "gb":
			hint = " (write Gbit or GB)"
		case "":
			hint = " (a number needs a unit, e.g. " + num + "Mbit)"
		}
		return 0, fmt.Errorf("%q has no rate unit I know%s — write %s", s, hint, RateSyntax)
	}
	bits := v * mult
	switch {
	case bits == 0:
		return 0, nil
	case bits < 1:
		return 0, fmt.Errorf("%q is below 1 bit/s — write a positive rate, e.g. 1Mbit, or 0 for unlimited", s)
	case bits > float64(1000*Gbit):
		return 0, fmt.Errorf("%q is above 1000Gbit — write a smaller rate, or 0 for unlimited", s)
	}
	return Rate(math.Round(bits)), nil
}

// String writes r the way ParseRate reads it, in the largest bit unit that
// keeps it short: "1Mbit", "512kbit", "1.5Mbit"; "0" is unlimited.
func (r Rate) String() string {
	if r <= 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		v    Rate
	}{{"Gbit", Gbit}, {"Mbit", Mbit}, {"kbit", Kbit}} {
		if r >= u.v {
			return strconv.FormatFloat(float64(r)/float64(u.v), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(int64(r), 10) + "bit"
}

// SizeSyntax is how to write a size, for error messages.
const SizeSyntax = "a number and a unit, e.g. 64KB, 1MB, 1500B or 64KiB (KB is 1000 bytes, KiB 1024), or 0 for no limit"

var sizeUnits = map[string]float64{
	"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30,
}

// ParseSize reads a byte count such as "64KB", "1MiB" or "1500B"; "0" is
// no limit.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	num, unit := splitNumber(t)
	v, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a size — write %s", s, SizeSyntax)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		hint := ""
		if unit == "" {
			hint = " (a number needs a unit, e.g. " + num + "KB)"
		} else if strings.Contains(strings.ToLower(unit), "bit") {
			hint = " (a queue holds bytes: write KB or MB)"
		}
		return 0, fmt.Errorf("%q has no size unit I know%s — write %s", s, hint, SizeSyntax)
	}
	b := v * mult
	switch {
	case b == 0:
		return 0, nil
	case b < 1:
		return 0, fmt.Errorf("%q is below 1 byte — write a positive size, e.g. 64KB, or 0 for no limit", s)
	case b > float64(1<<40):
		return 0, fmt.Errorf("%q is above 1TiB — write a smaller size, or 0 for no limit", s)
	}
	return Size(math.Round(b)), nil
}

// String writes n the way ParseSize reads it: "64KB", "64KiB", "1500B".
func (n Size) String() string {
	if n <= 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		v    Size
	}{{"MB", MB}, {"MiB", MiB}, {"KB", KB}, {"KiB", KiB}} {
		if n%u.v == 0 {
			return strconv.FormatInt(int64(n/u.v), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(n), 10) + "B"
}

// splitNumber splits "1.5Mbit" into "1.5" and "Mbit".
func splitNumber(s string) (num, unit string) {
	i := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// Serialize is the time a link of rate r takes to put n bytes on the wire:
// n·8 / r, rounded up to the nanosecond; 0 when r is unlimited.
func Serialize(n int, r Rate) time.Duration {
	if r <= 0 || n <= 0 {
		return 0
	}
	bits := int64(n) * 8
	if bits <= math.MaxInt64/int64(time.Second) {
		ns := bits * int64(time.Second)
		return time.Duration((ns + int64(r) - 1) / int64(r))
	}
	return time.Duration(math.Ceil(float64(bits) * 1e9 / float64(r)))
}
