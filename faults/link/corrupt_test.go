package link_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/gridbed/gridbed/emulator/bus"
	"github.com/gridbed/gridbed/emulator/bus/bustest"
	"github.com/gridbed/gridbed/faults/link"
)

// TestCorruptEveryCorruptedMessageRejected: through a Chain with
// duplication and corruption, every message arrives (none is lost), the
// receivers reject exactly the corrupted ones by the frame check — the
// count Corrupt reports — and accept every other one intact; the
// publisher's bytes are never changed; the share corrupted is p.
func TestCorruptEveryCorruptedMessageRejected(t *testing.T) {
	const peers, n = 8, 20000
	for _, tc := range []struct {
		p   float64
		dup float64
	}{{0, 0}, {0.01, 0}, {0.01, 0.1}, {0.3, 0.2}, {1, 0}} {
		for seed := uint64(1); seed <= 2; seed++ {
			r, c := newChainRig(t, seed, peers)
			r.corrupt = true
			c.Corrupt.SetCorrupt(tc.p)
			c.Duplicate.SetDuplicate(tc.dup)
			for i := range n {
				from, to := uint64(i%peers), uint64((i+1+i/peers)%peers)
				r.seq++
				data := envelope(t, from, to, r.seq, 0)
				orig := bytes.Clone(data)
				if err := c.Publish(bus.Address(to), data); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(data, orig) {
					t.Fatalf("p %g seed %d: the publisher's bytes were changed", tc.p, seed)
				}
			}
			r.run()
			got := r.take()
			rejected := 0
			for _, d := range got {
				if d.rejected {
					rejected++
				}
			}
			f := c.Faults()
			if len(got) != n+int(f.Duplicated) {
				t.Errorf("p %g seed %d: %d deliveries, want %d sent + %d copies", tc.p, seed, len(got), n, f.Duplicated)
			}
			if uint64(rejected) != f.Corrupted || f.Corrupted != c.Corrupt.Faults().Corrupted {
				t.Errorf("p %g seed %d: %d rejected by the frame check, %d corrupted", tc.p, seed, rejected, f.Corrupted)
			}
			total := float64(len(got))
			if want := tc.p * total; math.Abs(float64(f.Corrupted)-want) > 5*math.Sqrt(want+1) {
				t.Errorf("p %g seed %d: %d of %.0f corrupted, want about %.0f", tc.p, seed, f.Corrupted, total, want)
			}
		}
	}
}

// TestCorruptSetCorruptValidates: a probability outside [0, 1] panics.
func TestCorruptSetCorruptValidates(t *testing.T) {
	for _, p := range []float64{-0.1, 1.5, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetCorrupt(%v) did not panic", p)
				}
			}()
			link.NewCorrupt(bustest.NewBus(), 1).SetCorrupt(p)
		}()
	}
}
