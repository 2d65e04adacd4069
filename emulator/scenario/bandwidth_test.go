package scenario

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gridbed/gridbed/faults/bandwidth"
)

func TestBandwidthKeys(t *testing.T) {
	s, err := Parse("bw.yaml", []byte("link:\n  bandwidth:\n    classes:\n      - {fraction: 0.7, up: 1Mbit, down: 8Mbit}\n      - {fraction: 0.3, up: 20Mbit/s}\n    queue: 64KiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := bandwidth.Config{Classes: []bandwidth.Class{{Fraction: 0.7, Up: bandwidth.Mbit, Down: 8 * bandwidth.Mbit}, {Fraction: 0.3, Up: 20 * bandwidth.Mbit}},
		Queue: 64 * bandwidth.KiB}
	if got := s.Link.Bandwidth.Config(); !reflect.DeepEqual(got, want) {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
	roundTrip(t, s)

	d := Default()
	if d.Link.Bandwidth.On() {
		t.Errorf("the default scenario limits bandwidth: %+v", d.Link.Bandwidth)
	}
	if err := d.SetAll("link.bandwidth.up=1Mbit", "link.bandwidth.down=8Mbit/s"); err != nil {
		t.Fatal(err)
	}
	if got := d.Link.Bandwidth.Config(); !reflect.DeepEqual(got, bandwidth.Uniform(bandwidth.Mbit, 8*bandwidth.Mbit)) {
		t.Errorf("--set up and down: Config() = %+v", got)
	}
	roundTrip(t, d)
}

func TestBandwidthErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"link: {bandwidth: {up: 1mbit}}\n", "in.yaml:1:24: link.bandwidth.up: \"1mbit\" has no rate unit I know (M is mega: write Mbit or MB)"},
		{"link: {bandwidth: {up: 5}}\n", "needs a unit, e.g. 5Mbit"},
		{"link: {bandwidth: {queue: 64kbit}}\n", "link.bandwidth.queue: \"64kbit\" has no size unit I know (a queue holds bytes"},
		{"link: {bandwidth: {bandwith: 1Mbit}}\n", "link.bandwidth"},
		{"link: {bandwidth: {classes: [{fraction: 0.5, up: 1Mbit}, {fraction: 0.4, up: 2Mbit}]}}\n", "in.yaml:1:29: link.bandwidth.classes: the class fractions 0.5 + 0.4 add up to 0.9, not 1"},
		{"link: {bandwidth: {classes: [{fraction: 1, upload: 1Mbit}]}}\n", "class 0: unknown key \"upload\" — write fraction, up and down"},
		{"link: {bandwidth: {classes: [{up: 1Mbit}]}}\n", "class 0 has no fraction"},
		{"link: {bandwidth: {classes: [{fraction: 1.5, up: 1Mbit}]}}\n", "fraction 1.5 is not a share of the peers"},
		{"link: {bandwidth: {classes: [{fraction: 1, up: fast}]}}\n", "class 0: up: \"fast\" is not a rate"},
		{"link: {bandwidth: {classes: 1Mbit}}\n", "found the value \"1Mbit\" where the list of classes belongs"},
		{"link: {bandwidth: {up: 1Mbit, classes: [{fraction: 1, up: 2Mbit}]}}\n", "replaces link.bandwidth.up and .down"},
	} {
		_, err := Parse("in.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
	s := Default()
	if err := s.Set("link.bandwidth.classes=[]"); err == nil || !strings.Contains(err.Error(), "cannot be set with --set") {
		t.Errorf("--set link.bandwidth.classes: %v", err)
	}
	if err := s.Set("link.bandwidth.down=8 Mbit"); err != nil {
		t.Errorf("--set link.bandwidth.down=8 Mbit: %v", err)
	}
}
