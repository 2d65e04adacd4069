// Package categorical is the pure arithmetic of categorical resources
// (002 §2.4, ch. 5): a node's values for each categorical resource type
// (an operating system, a CPU architecture), the combination index that
// maps a node's values to one bit (002 §5.1.1's mapping function f), a
// job's constraint per type (an exact value, a range of values or "don't
// care"), the CID — a bit string with one bit per combination, a node's
// with its own combination's bit, a job's with the bit of every
// combination it accepts (002 §5.1.2–5.1.3) — the aggregated CID of the
// nodes above a node (ACID, 002 Eq 5.1) and the push filter of 002
// Algorithm 3 — and, for 002 §2.4's sub-CANs, the transform dimension
// that orders the combinations along a Hilbert curve (Transform).
// Everything here is a function of its arguments: no state, no time, no
// randomness.
//
// It is a package of its own rather than part of actors/load: load's
// aggregates are sums weighted by overlap fractions (003 Eq 1), the ACID
// is a union without weights, and the constraint model (types, values,
// combinations) is shared by the workload generator and the ledger, which
// need none of load's arithmetic.
package categorical

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/gridbed/gridbed/actors/can"
)

// Space is the categorical resource types of a run and how many values
// each has: Values[t] is the number of values of type t (002 §5.2.1: four
// types of two values each, 16 combinations).
type Space struct {
	Values []int
}

// MaxCombinations bounds the number of combinations a Space may have: the
// CID bit string travels on every heartbeat (002 §5.1.3 notes it grows
// with the combinations).
const MaxCombinations = 1 << 12

// Check reports a Space that has no types, a type with fewer than two
// values or too many combinations.
func (s Space) Check() error {
	if len(s.Values) == 0 {
		return errors.New("no categorical types")
	}
	m := 1
	for t, v := range s.Values {
		if v < 2 {
			return fmt.Errorf("type %d has %d values, want at least 2", t, v)
		}
		m *= v
		if m > MaxCombinations {
			return fmt.Errorf("more than %d combinations", MaxCombinations)
		}
	}
	return nil
}

// Types is the number of categorical types.
func (s Space) Types() int { return len(s.Values) }

// Combinations is M, the number of combinations of values (002 §5.1.3),
// the product of the values per type.
func (s Space) Combinations() int {
	if len(s.Values) == 0 {
		return 0
	}
	m := 1
	for _, v := range s.Values {
		m *= v
	}
	return m
}

// Index is the mapping function f of 002 §5.1.1: a node's values, one per
// type, to its combination's index in [0, M) — mixed radix, type 0 the
// least significant digit. It panics on values outside the Space.
func (s Space) Index(vals []int) int {
	if len(vals) != len(s.Values) {
		panic(fmt.Sprintf("categorical: %d values for %d types", len(vals), len(s.Values)))
	}
	idx, w := 0, 1
	for t, v := range vals {
		if v < 0 || v >= s.Values[t] {
			panic(fmt.Sprintf("categorical: value %d of type %d out of [0, %d)", v, t, s.Values[t]))
		}
		idx += v * w
		w *= s.Values[t]
	}
	return idx
}

// ValuesOf is f's inverse: the values of combination idx.
func (s Space) ValuesOf(idx int) []int {
	vals := make([]int, len(s.Values))
	for t, n := range s.Values {
		vals[t] = idx % n
		idx /= n
	}
	return vals
}

// Set is a CID or an ACID: a bit string of M bits, bit i set when
// combination i is in the set (002 §5.1.3). Words are little-endian (bit
// i is word i/64, bit i%64), so it is not limited to 64 combinations;
// trailing zero words do not change what a Set means.
type Set []uint64

// NewSet is the empty set of m combinations.
func NewSet(m int) Set { return make(Set, (m+63)/64) }

// Add sets bit i; the Set must have room for it (NewSet).
func (s Set) Add(i int) { s[i/64] |= 1 << (i % 64) }

// Has reports whether combination i is in the set.
func (s Set) Has(i int) bool { return i >= 0 && i/64 < len(s) && s[i/64]&(1<<(i%64)) != 0 }

// Empty reports whether no bit is set.
func (s Set) Empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// Count is the number of combinations in the set.
func (s Set) Count() int {
	c := 0
	for _, w := range s {
		c += bits.OnesCount64(w)
	}
	return c
}

// Or is the union of s and o (002 §5.1.3: a bitwise OR), a new Set.
func (s Set) Or(o Set) Set {
	if len(o) > len(s) {
		s, o = o, s
	}
	u := append(Set(nil), s...)
	for i, w := range o {
		u[i] |= w
	}
	return u
}

// Intersects reports whether s and o share a combination (a bitwise AND
// with at least one bit set, 002 §5.1.3's set membership check).
func (s Set) Intersects(o Set) bool {
	for i := range min(len(s), len(o)) {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// Equal reports whether s and o hold the same combinations.
func (s Set) Equal(o Set) bool {
	for i := range max(len(s), len(o)) {
		var a, b uint64
		if i < len(s) {
			a = s[i]
		}
		if i < len(o) {
			b = o[i]
		}
		if a != b {
			return false
		}
	}
	return true
}

// String is the bit string of the set's first m combinations, highest
// combination first as 002 Table 5.2 writes them ("0011").
func (s Set) String(m int) string {
	var b strings.Builder
	for i := m - 1; i >= 0; i-- {
		if s.Has(i) {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// CID is a node's CID (002 §5.1.1, §5.1.3): the set holding its own
// combination only.
func CID(s Space, vals []int) Set {
	c := NewSet(s.Combinations())
	c.Add(s.Index(vals))
	return c
}

// Accept is a job's constraint on one categorical type: the values Lo to
// Hi (inclusive) are acceptable. An exact value has Lo = Hi; "don't care"
// spans every value of the type.
type Accept struct {
	Lo, Hi int
}

// Constraint is a job's categorical requirement, one Accept per type.
type Constraint []Accept

// Exact is the constraint accepting exactly the values vals.
func Exact(vals []int) Constraint {
	c := make(Constraint, len(vals))
	for t, v := range vals {
		c[t] = Accept{v, v}
	}
	return c
}

// Any is the constraint that does not care about any type of s.
func Any(s Space) Constraint {
	c := make(Constraint, len(s.Values))
	for t, n := range s.Values {
		c[t] = Accept{0, n - 1}
	}
	return c
}

// Accepts reports whether a node with values vals meets the constraint.
func (c Constraint) Accepts(vals []int) bool {
	if len(vals) != len(c) {
		return false
	}
	for t, v := range vals {
		if v < c[t].Lo || v > c[t].Hi {
			return false
		}
	}
	return true
}

// JobCID is a job's CID (002 §5.1.2–5.1.3): the union over every
// combination of values its constraint accepts — 002's job E, Intel x86
// with any OS, is 0001|0010 = 0011. Bounds outside a type's values are
// clipped to them.
func JobCID(s Space, c Constraint) Set {
	cid := NewSet(s.Combinations())
	if len(c) != len(s.Values) {
		return cid
	}
	vals := make([]int, len(c))
	for t := range vals {
		vals[t] = max(c[t].Lo, 0)
		if vals[t] > min(c[t].Hi, s.Values[t]-1) {
			return cid // an empty range: nothing acceptable
		}
	}
	for {
		cid.Add(s.Index(vals))
		// Next combination within the box, type 0 fastest.
		t := 0
		for ; t < len(vals); t++ {
			if vals[t] < min(c[t].Hi, s.Values[t]-1) {
				vals[t]++
				break
			}
			vals[t] = max(c[t].Lo, 0)
		}
		if t == len(vals) {
			return cid
		}
	}
}

// Upper is what a node knows of one neighbor for ACID aggregation: its
// zone and the ACID its last heartbeat carried.
type Upper struct {
	Zone can.Zone
	ACID Set
}

// ACID is AC(n) (002 Eq 5.1): the union of n's own CID and the ACIDs of
// its upper neighbors — the neighbors farther from the origin — along
// every dimension of the CAN (the virtual one included), so that n knows
// which combinations exist in the region above it. Neighbors that are not
// upper neighbors of own are ignored.
func ACID(own can.Zone, cid Set, nbrs []Upper) Set {
	ac := append(Set(nil), cid...)
	for _, u := range nbrs {
		if _, upper, ok := can.Abut(own, u.Zone); ok && upper {
			ac = ac.Or(u.ACID)
		}
	}
	return ac
}

// MatchesCombo reports whether a node of combination combo — its index
// plus one, 0 for a node without categorical values, as heartbeats carry
// it — meets a job's CID (002 §5.1.3: the node's CID AND the job's ≠ 0).
// A job without a categorical constraint (a CID of no words) matches
// every node; a job with one matches no node without categorical values.
func MatchesCombo(combo uint32, job Set) bool {
	if len(job) == 0 {
		return true
	}
	return combo != 0 && job.Has(int(combo-1))
}

// Matches is 002 Algorithm 3's test (lines 6 and 11, the set membership
// of §5.1.3): a node whose CID — or a region whose ACID — is set can run
// a job with CID job iff set AND job ≠ 0. A job without a categorical
// constraint (a CID of no words) matches anything; a CID of zero bits (no
// acceptable combination) matches nothing.
func Matches(set, job Set) bool {
	return len(job) == 0 || set.Intersects(job)
}
