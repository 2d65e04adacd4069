package core

import (
	"fmt"
	"strings"
)

// ParseEnum returns the value of values spelled s, or an error naming
// what noun is and every value it can be: how the cores parse their typed
// modes (heartbeat mode, scheduling mode, …).
func ParseEnum[T ~string](s, noun string, values []T) (T, error) {
	for _, v := range values {
		if string(v) == s {
			return v, nil
		}
	}
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	return "", fmt.Errorf("unknown %s %q (want one of %s)", noun, s, strings.Join(names, ", "))
}
