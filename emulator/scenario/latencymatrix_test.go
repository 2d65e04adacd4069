package scenario

import (
	"strings"
	"testing"
	"time"
)

// TestLatencyMatrixKey: link.latency_matrix reads the CSV beside the
// scenario file, sets link.regions from it and survives a --set; a
// missing file, a bad row or a conflicting key is an error naming the key,
// the line and what to write.
func TestLatencyMatrixKey(t *testing.T) {
	s, err := Parse("testdata/regions.yaml", []byte("link:\n  latency_matrix: matrix.csv\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := s.Link.Matrix
	if m == nil || s.Link.Regions != 2 || strings.Join(m.Regions, ",") != "east,west" || m.Weights[0] != 3 || m.Weights[1] != 1 ||
		m.Median[0][1] != 40*time.Millisecond || m.Jitter[1][1] != 500*time.Microsecond {
		t.Fatalf("matrix %+v, regions %d", m, s.Link.Regions)
	}
	if err := s.Set("link.latency_matrix=matrix.csv"); err != nil || s.Link.Matrix == nil {
		t.Fatalf("--set again: %v", err)
	}
	for _, c := range []struct{ doc, want string }{
		{"link:\n  latency_matrix: nowhere.csv\n", "regions.yaml:2:19: link.latency_matrix: no file nowhere.csv"},
		{"link:\n  latency_matrix: bad-matrix.csv\n", "bad-matrix.csv: line 2: jitter_ms 5 is above median_ms 1"},
		{"link:\n  regions: 3\n  latency_matrix: matrix.csv\n", "has 2 regions and link.regions says 3"},
		{"link:\n  latency_matrix: matrix.csv\n  region_latency: [[0s, 1ms], [1ms, 0s]]\n  regions: 2\n", "remove link.region_latency"},
	} {
		_, err := Parse("testdata/regions.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.doc, err, c.want)
		}
	}
}
