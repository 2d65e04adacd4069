package categorical

import (
	"testing"

	"github.com/gridbed/gridbed/actors/can"
)

// 002 Table 5.2's two types: OS (type 0: Linux, Windows) and architecture
// (type 1: x86, MIPS) — (Linux, x86) is 0001, (Windows, x86) 0010,
// (Linux, MIPS) 0100, (Windows, MIPS) 1000.
var osArch = Space{Values: []int{2, 2}}

const (
	linux, windows = 0, 1
	x86, mips      = 0, 1
)

func TestIndexRoundTrips(t *testing.T) {
	for _, s := range []Space{osArch, {Values: []int{2, 2, 2, 2}}, {Values: []int{3, 5, 2}}, {Values: []int{8, 8, 4}}} {
		seen := map[int]bool{}
		for i := range s.Combinations() {
			v := s.ValuesOf(i)
			if got := s.Index(v); got != i {
				t.Fatalf("%v: Index(ValuesOf(%d) = %v) = %d", s.Values, i, v, got)
			}
			seen[i] = true
		}
		if len(seen) != s.Combinations() {
			t.Fatalf("%v: %d distinct indexes, want %d", s.Values, len(seen), s.Combinations())
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		s  Space
		ok bool
	}{
		{Space{}, false},
		{Space{Values: []int{2, 1}}, false},
		{Space{Values: []int{2, 2, 2, 2}}, true},
		{Space{Values: []int{64, 64, 2}}, false},
		{Space{Values: []int{16, 16}}, true},
	} {
		if err := tc.s.Check(); (err == nil) != tc.ok {
			t.Errorf("Check(%v) = %v, want ok=%v", tc.s.Values, err, tc.ok)
		}
	}
}

// A job's CID is the OR over every combination it accepts (002 §5.1.2):
// exact, a range, don't care.
func TestJobCID(t *testing.T) {
	four := Space{Values: []int{2, 2, 2, 2}}
	wide := Space{Values: []int{4, 4, 3, 2}} // 96 combinations: two words
	for _, tc := range []struct {
		name  string
		s     Space
		c     Constraint
		count int
		bits  string // for osArch, 002 Table 5.2's string
	}{
		{"exact x86 Linux", osArch, Exact([]int{linux, x86}), 1, "0001"},
		{"job E: x86, any OS", osArch, Constraint{{0, 1}, {x86, x86}}, 2, "0011"},
		{"Linux, any arch", osArch, Constraint{{linux, linux}, {0, 1}}, 2, "0101"},
		{"don't care", osArch, Any(osArch), 4, "1111"},
		{"16: exact", four, Exact([]int{1, 0, 1, 1}), 1, ""},
		{"16: one type free", four, Constraint{{0, 1}, {0, 0}, {1, 1}, {1, 1}}, 2, ""},
		{"16: any", four, Any(four), 16, ""},
		{"96: range in type 0 and 1", wide, Constraint{{1, 2}, {0, 3}, {2, 2}, {0, 0}}, 8, ""},
		{"96: any", wide, Any(wide), 96, ""},
		{"empty range", osArch, Constraint{{1, 0}, {0, 1}}, 0, "0000"},
		{"bounds clipped", osArch, Constraint{{-3, 9}, {1, 7}}, 2, "1100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := JobCID(tc.s, tc.c)
			if got := cid.Count(); got != tc.count {
				t.Fatalf("JobCID has %d combinations, want %d", got, tc.count)
			}
			if tc.bits != "" {
				if got := cid.String(4); got != tc.bits {
					t.Fatalf("JobCID = %s, want %s", got, tc.bits)
				}
			}
			// Every combination is in the CID iff the constraint accepts it.
			for i := range tc.s.Combinations() {
				v := tc.s.ValuesOf(i)
				if cid.Has(i) != (tc.count > 0 && tc.c.Accepts(v)) {
					t.Fatalf("combination %d %v: in CID %v, accepted %v", i, v, cid.Has(i), tc.c.Accepts(v))
				}
				if Matches(CID(tc.s, v), cid) != cid.Has(i) {
					t.Fatalf("combination %d: Matches disagrees with the CID", i)
				}
			}
		})
	}
}

func zone(lo0, hi0, lo1, hi1 uint64) can.Zone {
	return can.Zone{Lo: []uint64{lo0, lo1}, Hi: []uint64{hi0, hi1}}
}

// 002 Fig 5.2: four nodes in a 2-d CAN (memory, CPU). B lies above A
// along CPU, C above A along memory, D above both B and C. C and D are
// (Linux, MIPS); B is (Linux, x86). AC(D) = C(D), AC(B) = C(B)|AC(D) =
// 0101, AC(C) = 0100, and AC(A) holds everything. Job E (x86, any OS: 0011)
// can be pushed towards B only.
func TestACIDOnFigure52(t *testing.T) {
	a, b, c, d := zone(0, 200, 0, 200), zone(0, 200, 200, 400), zone(200, 400, 0, 200), zone(200, 400, 200, 400)
	cidA := CID(osArch, []int{windows, x86})
	cidB := CID(osArch, []int{linux, x86})
	cidC := CID(osArch, []int{linux, mips})
	cidD := cidC
	// Lower nodes also list their lower neighbors: ACID ignores them.
	acD := ACID(d, cidD, []Upper{{b, Set{0xff}}, {c, Set{0xff}}})
	acB := ACID(b, cidB, []Upper{{a, Set{0xff}}, {d, acD}})
	acC := ACID(c, cidC, []Upper{{a, Set{0xff}}, {d, acD}})
	acA := ACID(a, cidA, []Upper{{b, acB}, {c, acC}})
	for _, tc := range []struct {
		name string
		got  Set
		want string
	}{{"AC(D)", acD, "0100"}, {"AC(B)", acB, "0101"}, {"AC(C)", acC, "0100"}, {"AC(A)", acA, "0111"}} {
		if s := tc.got.String(4); s != tc.want {
			t.Errorf("%s = %s, want %s", tc.name, s, tc.want)
		}
	}
	jobE := JobCID(osArch, Constraint{{0, 1}, {x86, x86}})
	if !Matches(acB, jobE) {
		t.Errorf("job E (%s) should be pushed towards B (AC %s)", jobE.String(4), acB.String(4))
	}
	if Matches(acC, jobE) {
		t.Errorf("job E (%s) must not be pushed towards C (AC %s)", jobE.String(4), acC.String(4))
	}
	if !Matches(acC, nil) {
		t.Errorf("a job without a categorical constraint matches any region")
	}
}

// ACIDs beyond 64 combinations: bits in the second word propagate and
// filter like those in the first.
func TestACIDBeyondOneWord(t *testing.T) {
	s := Space{Values: []int{10, 10}} // 100 combinations
	hi := CID(s, []int{9, 9})         // bit 99
	lo := CID(s, []int{0, 0})         // bit 0
	own, up := zone(0, 100, 0, 100), zone(100, 200, 0, 100)
	ac := ACID(own, lo, []Upper{{up, hi}})
	if !ac.Has(99) || !ac.Has(0) || ac.Count() != 2 {
		t.Fatalf("ACID = %v, want bits 0 and 99", ac)
	}
	if !Matches(ac, JobCID(s, Constraint{{9, 9}, {5, 9}})) {
		t.Fatalf("a job accepting (9, 9) must match an ACID holding it")
	}
	if Matches(lo, JobCID(s, Constraint{{9, 9}, {5, 9}})) {
		t.Fatalf("a job not accepting (0, 0) must not match its CID")
	}
	if !(Set{1, 0, 0}).Equal(Set{1}) || (Set{1, 0, 1}).Equal(Set{1}) {
		t.Fatalf("Equal must ignore trailing zero words only")
	}
}
