package link

import (
	"strings"
	"testing"
	"time"
)

const tMatrix = `# two regions
from,to,median_ms,jitter_ms,weight
a,a,1,0.25,3
a,b,40.5,2,
b,a,41,2,
b,b,2,0.5,
`

// TestParseMatrix: a matrix file's regions, weights (1 when not given)
// and per-pair medians and jitters; the delay layer's latencies.
func TestParseMatrix(t *testing.T) {
	m, err := ParseMatrix([]byte(tMatrix))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Regions, ",") != "a,b" || m.Weights[0] != 3 || m.Weights[1] != 1 {
		t.Fatalf("regions %v weights %v", m.Regions, m.Weights)
	}
	if m.Median[0][1] != 40500*time.Microsecond || m.Jitter[0][0] != 250*time.Microsecond || m.Median[1][0] != 41*time.Millisecond {
		t.Fatalf("medians %v jitters %v", m.Median, m.Jitter)
	}
	l := m.Latencies()
	if l[1][1] != (Latency{Dist: "constant", Mean: 2 * time.Millisecond, Jitter: 500 * time.Microsecond}) {
		t.Fatalf("latency b→b %+v", l[1][1])
	}
	for _, c := range []struct {
		u    float64
		want int
	}{{0, 0}, {0.74, 0}, {0.75, 1}, {0.999, 1}} {
		if got := m.Pick(c.u); got != c.want {
			t.Errorf("Pick(%v) = %d, want %d (weights 3:1)", c.u, got, c.want)
		}
	}
	// Without a weight column every region weighs 1.
	m, err = ParseMatrix([]byte("from,to,median_ms,jitter_ms\nx,x,1,0\nx,y,2,1\ny,x,2,1\ny,y,1,0\n"))
	if err != nil || m.Weights[0] != 1 || m.Weights[1] != 1 {
		t.Fatalf("%v %+v", err, m)
	}
}

// TestParseMatrixErrors: each mistake is refused with its line and what
// to write instead.
func TestParseMatrixErrors(t *testing.T) {
	for _, c := range []struct{ csv, want string }{
		{"", "no header"},
		{"# only a comment\n", "no header"},
		{"a,b,c,d\n", "line 1: header"},
		{"from,to,median_ms,jitter_ms,size\n", "line 1: header"},
		{"from,to,median_ms,jitter_ms\n", "no rows"},
		{"from,to,median_ms,jitter_ms\na,a,1\n", "line 2: 3 fields, want 4"},
		{"from,to,median_ms,jitter_ms\na,a,x,0\n", "line 2: median_ms \"x\""},
		{"from,to,median_ms,jitter_ms\na,a,-1,0\n", "line 2: median_ms"},
		{"from,to,median_ms,jitter_ms\na,a,1,2\n", "line 2: jitter_ms 2 is above median_ms 1"},
		{"from,to,median_ms,jitter_ms\na,a,1,0\na,a,1,0\n", "line 3: a → a is given again (first on line 2)"},
		{"from,to,median_ms,jitter_ms\na,a,1,0\na,b,1,0\n", "no row for b → a"},
		{"from,to,median_ms,jitter_ms\n,a,1,0\n", "line 2: a region name is empty"},
		{"from,to,median_ms,jitter_ms,weight\na,b,1,0,2\n", "line 2: a weight on a → b"},
		{"from,to,median_ms,jitter_ms,weight\na,a,1,0,-2\n", "line 2: weight \"-2\""},
		{"from,to,median_ms,jitter_ms,weight\na,a,1,0,NaN\n", "line 2: weight \"NaN\""},
		{"from,to,median_ms,jitter_ms\na,a,NaN,0\n", "line 2: median_ms"},
		{"from,to,median_ms,jitter_ms\na,a,\"1,0\n", "line 2"},
		{"from,to,median_ms,jitter_ms\na,a,1,0\n\"", "line 3"},
	} {
		_, err := ParseMatrix([]byte(c.csv))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.csv, err, c.want)
		}
	}
}

// FuzzParseMatrix: ParseMatrix never panics, and a matrix it accepts is
// square, weighted positively, and never delays below zero.
func FuzzParseMatrix(f *testing.F) {
	f.Add([]byte(tMatrix))
	f.Add([]byte("from,to,median_ms,jitter_ms\nx,x,1,0\n"))
	f.Add([]byte("from,to,median_ms,jitter_ms,weight\nx,x,1,0,2\nx,y,3,1,\ny,x,3,1,\ny,y,0,0,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMatrix(data)
		if err != nil {
			return
		}
		n := len(m.Regions)
		if n == 0 || len(m.Weights) != n || len(m.Median) != n || len(m.Jitter) != n {
			t.Fatalf("shape: %+v", m)
		}
		for i := range n {
			if !(m.Weights[i] > 0) || len(m.Median[i]) != n || len(m.Jitter[i]) != n {
				t.Fatalf("row %d: %+v", i, m)
			}
			for j := range n {
				if m.Median[i][j] < 0 || m.Jitter[i][j] < 0 || m.Jitter[i][j] > m.Median[i][j] {
					t.Fatalf("pair %d→%d: median %v jitter %v", i, j, m.Median[i][j], m.Jitter[i][j])
				}
			}
		}
		if r := m.Pick(0.5); r < 0 || r >= n {
			t.Fatalf("Pick(0.5) = %d of %d", r, n)
		}
	})
}
