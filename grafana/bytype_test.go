package grafana

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// manyValued are the counters whose label (a message type, an event)
// takes tens of values of which a run moves a few: a panel by that label
// shows only the series that moved.
var manyValued = regexp.MustCompile(`^sum by \((type|event)\) \((rate|increase)?\(?(gridbed_messages_total|gridbed_message_bytes_total|gridbed_job_events_total|gridbed_overlay_events_total)\b`)

// TestByTypePanelsShowWhatMoved: every panel that splits one of those
// counters by its label keeps only the series above zero (a legend of 30
// message types, 25 of them flat at zero, hides the five that matter).
func TestByTypePanelsShowWhatMoved(t *testing.T) {
	n := 0
	for _, d := range loadDashboards(t) {
		for _, p := range d.allPanels() {
			for _, tg := range p.Targets {
				if !manyValued.MatchString(tg.Expr) || strings.Contains(tg.Expr, `type=~"wave_`) {
					continue
				}
				n++
				if !strings.HasSuffix(tg.Expr, " > 0") {
					t.Errorf("%s / %s: %s shows every label value, moved or not — end it with > 0", d.Title, p.Title, tg.Expr)
				}
			}
		}
	}
	if n < 6 {
		t.Errorf("only %d by-type panels found: the pattern no longer matches the dashboards", n)
	}
}

// TestComposePrometheusMatchesParser: the queries' static check parses
// them with the PromQL parser of the Prometheus module gridbed builds with
// (github.com/prometheus/prometheus v0.3xx.y is Prometheus 3.xx.y), and
// compose.yaml ships a Prometheus of the same major version, so what the
// check accepts is what the shipped server reads. (The live test runs
// Debian's 2.42, grafana/README.md says why that still holds.)
func TestComposePrometheusMatchesParser(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := ""
	if v := regexp.MustCompile(`(?m)^\s*github\.com/prometheus/prometheus (v\S+)`).FindSubmatch(mod); v != nil {
		module = string(v[1])
	}
	m := regexp.MustCompile(`^v0\.(\d)\d\d\.`).FindStringSubmatch(module)
	if m == nil {
		t.Fatalf("github.com/prometheus/prometheus %q: not a v0.MNN.P version of Prometheus M.NN", module)
	}
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	img := regexp.MustCompile(`image: prom/prometheus:v(\d+)\.`).FindSubmatch(b)
	if img == nil {
		t.Fatal("compose.yaml has no prom/prometheus:vM.N.P image")
	}
	if string(img[1]) != m[1] {
		t.Errorf("compose.yaml ships Prometheus %s.x, the queries are checked with the parser of Prometheus %s.x (module %s): make them agree", img[1], m[1], module)
	}
}
