package sweep

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestGridIsCartesianProduct(t *testing.T) {
	a1, _ := ParseAxis("overlay.heartbeat.mode=vanilla,compact,adaptive")
	a2, _ := ParseAxis("overlay.dimensions=5, 8")
	g := Grid([]Axis{a1, a2})
	if len(g) != 6 {
		t.Fatalf("%d points, want 6", len(g))
	}
	if got := strings.Join(g[1].Assignments([]Axis{a1, a2}), " "); got != "overlay.heartbeat.mode=vanilla overlay.dimensions=8" {
		t.Fatalf("second point %q", got)
	}
	if g[5].Name([]Axis{a1, a2}) != "overlay.heartbeat.mode=adaptive_overlay.dimensions=8" {
		t.Fatalf("name %q", g[5].Name([]Axis{a1, a2}))
	}
	if _, err := ParseAxis("overlay.dimensions"); err == nil {
		t.Fatal("axis without values accepted")
	}
}

func TestLookup(t *testing.T) {
	type inner struct {
		Mean  float64  `json:"mean"`
		Final int      `json:"final"`
		Rec   *float64 `json:"reconverge"`
	}
	s := struct {
		Driver string `json:"driver"`
		Links  inner  `json:"links"`
	}{"sim", inner{Mean: 1.23456, Final: 3}}
	for path, want := range map[string]string{"driver": "sim", "links.mean": "1.235", "links.final": "3", "links.reconverge": "—"} {
		if got, ok := Lookup(s, path); !ok || got != want {
			t.Errorf("Lookup(%s) = %q %v, want %q", path, got, ok, want)
		}
	}
	if _, ok := Lookup(s, "links.nope"); ok {
		t.Error("missing path found")
	}
	md := Markdown([]string{"a", "b"}, [][]string{{"1", "2"}})
	if md != "| a | b |\n|---|---|\n| 1 | 2 |\n" {
		t.Fatalf("markdown %q", md)
	}
}

// TestFormat: sweep.md's numbers never switch to exponents, and keep four
// significant digits; sweep.csv's keep every digit.
func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{
		77760.4: "77760", 6685: "6685", 1.23456: "1.235", 0.012345: "0.01235", 123.456: "123.5",
		-2.5: "-2.500", 0: "0", 1e6: "1000000", 42: "42", 1234567.89: "1234568",
	} {
		if got := Format(v); got != want {
			t.Errorf("Format(%v) = %q, want %q", v, got, want)
		}
	}
	for _, v := range []float64{77760.43219876, 0.1 + 0.2, 1.0 / 3} {
		if got, _ := strconv.ParseFloat(Full(v), 64); got != v {
			t.Errorf("Full(%v) = %q reads back as %v", v, Full(v), got)
		}
	}
}

// TestAggregate: a column over replicates gives the mean and Student's t
// 95% interval (checked by hand), leaves nulls out and says so, and
// gathers text.
func TestAggregate(t *testing.T) {
	// 1, 2, 3: mean 2, s = 1, half-width t(2)·s/√3 = 4.303/1.732 = 2.484.
	st := Aggregate([]any{1.0, 2.0, 3.0})
	half := 4.303 / math.Sqrt(3)
	if st.N != 3 || st.Mean != 2 || math.Abs(st.Lo-(2-half)) > 1e-12 || math.Abs(st.Hi-(2+half)) > 1e-12 {
		t.Fatalf("Aggregate(1, 2, 3) = %+v", st)
	}
	if got := st.Markdown(); got != "2.0 ± 2.5" {
		t.Errorf("markdown %q", got)
	}
	csv := st.CSV("x", st.Replicates)
	lo, _ := strconv.ParseFloat(csv[1], 64)
	hi, _ := strconv.ParseFloat(csv[2], 64)
	if len(csv) != 3 || csv[0] != "2" || lo != st.Lo || hi != st.Hi || len(csv[2]) < 15 {
		t.Errorf("csv %q: want the mean and the bounds at full precision (%v, %v)", csv, st.Lo, st.Hi)
	}
	if got := Aggregate([]any{77000.5, nil, 78000.5}).Markdown(); got != "77500 ± 6353 (2 of 3)" {
		t.Errorf("with a null: %q", got)
	}
	if got := Aggregate([]any{6685.0}).Markdown(); got != "6685" {
		t.Errorf("one run: %q", got)
	}
	if got := Aggregate([]any{"passed", "failed", "passed"}).Markdown(); got != "passed 2, failed 1" {
		t.Errorf("outcomes: %q", got)
	}
	if got := Aggregate([]any{"passed", "passed"}).Markdown(); got != "passed" {
		t.Errorf("same outcomes: %q", got)
	}
	if got := Aggregate([]any{nil, nil}).CSV("x", 2); len(got) != 3 || got[0] != "" {
		t.Errorf("all null: csv %q", got)
	}
	if got := Aggregate([]any{"passed", "failed"}).CSV("outcome", 2); len(got) != 1 || got[0] != `"passed 1, failed 1"` || len(CSVHead("outcome", 2)) != 1 {
		t.Errorf("outcome: csv %q, head %q: one cell", got, CSVHead("outcome", 2))
	}
	if h := CSVHead("jobs.completed", 3); strings.Join(h, ",") != "jobs.completed,jobs.completed.ci95_lo,jobs.completed.ci95_hi" {
		t.Errorf("csv head %v", h)
	}
}

// TestColumnsDescribed: every default column has a description with a
// title that is not its path; an unknown path gets one from its words and
// unit suffix.
func TestColumnsDescribed(t *testing.T) {
	for _, c := range append(append([]string{}, DefaultColumns...), JobColumns...) {
		if _, ok := columns[c]; !ok {
			t.Errorf("default column %s has no description", c)
		}
	}
	if d := Describe("jobs.wait_seconds.mean"); d.Label() != "Mean job wait (s)" {
		t.Errorf("label %q", d.Label())
	}
	if d := Describe("jobs.matchmaking.hops_p99_seconds"); d.Unit != "s" || strings.Contains(d.Title, "_") || strings.Contains(d.Title, ".") {
		t.Errorf("fallback %+v", d)
	}
}

// TestCSVCellsFollowTheHeader: a point with fewer replicates than the
// sweep's seeds (an interrupted sweep's last point) has as many cells as
// the header names, for a number and for text alike.
func TestCSVCellsFollowTheHeader(t *testing.T) {
	for _, col := range []string{"x", "outcome"} {
		for _, vals := range [][]any{{1.5}, {"interrupted"}, {nil}} {
			if got, want := len(Aggregate(vals).CSV(col, 3)), len(CSVHead(col, 3)); got != want {
				t.Errorf("column %s, values %v: %d cells, header %d", col, vals, got, want)
			}
		}
	}
}
