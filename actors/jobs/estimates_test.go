package jobs

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gridbed/gridbed/actors/wire"
)

// copyLoad copies every field of a heartbeat's load: a field added to
// wire.Load and left out of copyLoad fails here.
func TestCopyLoadCopiesEveryField(t *testing.T) {
	l := &wire.Load{}
	m := l.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		switch {
		case f.IsList() && f.Kind() == protoreflect.MessageKind:
			m.Mutable(f).List().Append(protoreflect.ValueOfMessage(m.Mutable(f).List().NewElement().Message()))
		case f.IsList() && f.Kind() == protoreflect.Uint32Kind:
			m.Mutable(f).List().Append(protoreflect.ValueOfUint32(uint32(i + 1)))
		case f.IsList() && f.Kind() == protoreflect.Uint64Kind:
			m.Mutable(f).List().Append(protoreflect.ValueOfUint64(uint64(i + 1)))
		case f.IsList() && f.Kind() == protoreflect.FloatKind:
			m.Mutable(f).List().Append(protoreflect.ValueOfFloat32(float32(i + 1)))
		case f.Kind() == protoreflect.Uint32Kind:
			m.Set(f, protoreflect.ValueOfUint32(uint32(i+1)))
		case f.Kind() == protoreflect.FloatKind:
			m.Set(f, protoreflect.ValueOfFloat32(float32(i+1)))
		default:
			t.Fatalf("field %s of kind %v: teach this test to set it", f.Name(), f.Kind())
		}
		if !m.Has(f) {
			t.Fatalf("field %s not set", f.Name())
		}
	}
	c := copyLoad(l)
	if !proto.Equal(c, l) {
		t.Fatalf("copyLoad(%v) = %v", l, c)
	}
	// Changing the copy's Residual and Balloons in place, as the
	// estimates do, leaves the heartbeat's alone.
	c.Residual[0] = -1
	c.Balloons = slices.DeleteFunc(c.Balloons, func(*wire.Balloon) bool { return true })
	if l.Residual[0] == -1 || len(l.Balloons) != 1 || l.Balloons[0] == nil {
		t.Fatalf("the heartbeat's load changed: %v", l)
	}
}
