package testnet

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gridbed/gridbed/actors/wire"
)

// Format writes a wire message on one line for a trace: its type and the
// fields that are set, CAN coordinates as fractions of the span (zones as
// [lo,hi)×…, points as (x,y,…) where they lie on a grid of 1/1024), a node's info as id:zone vN, a split as
// dimension@coordinate, durations (a job's work) as durations.
func Format(m proto.Message) string {
	r := m.ProtoReflect()
	return string(r.Descriptor().Name()) + "{" + fields(r) + "}"
}

func fields(r protoreflect.Message) string {
	var parts []string
	fds := r.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if !r.Has(fd) {
			continue
		}
		parts = append(parts, string(fd.Name())+"="+value(fd, r.Get(fd)))
	}
	return strings.Join(parts, " ")
}

func value(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.IsList() {
		l := v.List()
		var parts []string
		for i := range l.Len() {
			parts = append(parts, single(fd, l.Get(i)))
		}
		if fd.Name() == "point" {
			return "(" + strings.Join(parts, ",") + ")"
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return single(fd, v)
}

func single(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch m := v.Message().Interface().(type) {
		case *wire.Zone:
			return Zone(m.Lo, m.Hi)
		case *wire.NodeInfo:
			s := fmt.Sprintf("%d:%s v%d", m.Id, zoneOf(m.Zone), m.Version)
			for _, z := range m.Extra {
				s += "+" + zoneOf(z)
			}
			return s
		case *wire.Split:
			dir := "lower"
			if m.Upper {
				dir = "upper"
			}
			return fmt.Sprintf("d%d@%s %s sibling %d", m.Dim, Frac(m.At), dir, m.Sibling)
		}
		return "{" + fields(v.Message()) + "}"
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'g', 4, 64)
	case protoreflect.BytesKind:
		return fmt.Sprintf("%dB", len(v.Bytes()))
	case protoreflect.Uint32Kind:
		// A point's coordinates on a grid of 1/1024 of the span read as
		// fractions; others (resource amounts) as numbers.
		if fd.Name() == "point" && v.Uint()%(1<<22) == 0 {
			return Frac(v.Uint())
		}
	case protoreflect.Int64Kind:
		if fd.Name() == "work" {
			return time.Duration(v.Int()).String()
		}
	}
	return v.String()
}

func zoneOf(z *wire.Zone) string {
	if z == nil {
		return "?"
	}
	return Zone(z.Lo, z.Hi)
}

// Zone writes the zone [lo, hi) as fractions of the span: [0,.5)×[.5,1).
func Zone(lo, hi []uint64) string {
	var parts []string
	for d := range lo {
		h := "?"
		if d < len(hi) {
			h = Frac(hi[d])
		}
		parts = append(parts, "["+Frac(lo[d])+","+h+")")
	}
	return strings.Join(parts, "×")
}

// Frac writes a fixed-point coordinate as a fraction of the span (2^32):
// exactly when four decimals do, else rounded with a trailing "~".
func Frac(v uint64) string {
	const span = 1 << 32
	f := float64(v) / span
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if len(s) > 6 {
		s = strconv.FormatFloat(f, 'f', 4, 64) + "~"
	}
	if strings.HasPrefix(s, "0.") {
		s = s[1:]
	}
	return s
}
