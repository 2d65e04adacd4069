package sweep

import (
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
