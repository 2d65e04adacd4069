package can

import "testing"

func TestCapable(t *testing.T) {
	cases := []struct {
		node, req Point
		want      bool
	}{
		{Point{5, 5, 0}, Point{5, 5, 9}, true},  // equal; virtual ignored
		{Point{6, 5, 9}, Point{5, 5, 0}, true},  // more capable in one
		{Point{4, 9, 0}, Point{5, 0, 0}, false}, // short in one
		{Point{0, 0, 0}, Point{0, 0, 1 << 31}, true},
		{Point{0, 1}, Point{1, 0}, false},
		{Point{7}, Point{3}, true}, // no resource dimension
		{Point{5, 5, 0}, Point{5, 0}, false},
	}
	for _, c := range cases {
		if got := Capable(c.node, c.req); got != c.want {
			t.Errorf("Capable(%v, %v) = %v, want %v", c.node, c.req, got, c.want)
		}
	}
}
