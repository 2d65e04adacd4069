package peer

import (
	"bytes"
	"testing"
)

// A panic while an actor handles a message reaches OnPanic with its stack
// instead of protoactor's silent recovery; without OnPanic it propagates.
func TestReportPanicHandsThePanicOn(t *testing.T) {
	var got any
	var stack []byte
	func() {
		defer reportPanic(func(v any, st []byte) { got, stack = v, st })
		panic("boom")
	}()
	if got != "boom" || !bytes.Contains(stack, []byte("TestReportPanicHandsThePanicOn")) {
		t.Fatalf("OnPanic got %v with stack %q", got, stack)
	}
	propagated := func() (v any) {
		defer func() { v = recover() }()
		func() {
			defer reportPanic(nil)
			panic("again")
		}()
		return nil
	}()
	if propagated != "again" {
		t.Fatalf("without OnPanic the panic did not propagate: %v", propagated)
	}
}
