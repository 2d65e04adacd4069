package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Every panel, target, annotation and query variable refers to the data
// source through the dashboard's datasource variable, so a dashboard
// imports into any Grafana; provisioning gives its own data source the uid
// provisionedUID (and makes it the default, which the variable picks).
const (
	datasourceRef  = "${datasource}"
	provisionedUID = "gridbed-prometheus"
	// runFilter keeps a series of the runs the run variable selects: every
	// series of one gridbed process shares its scrape target (instance, job)
	// with that process's gridbed_run_info.
	runFilter = `gridbed_run_info{run_id=~"$run"}`
)

// The parts of Grafana's dashboard JSON the tests read.
type (
	dashboard struct {
		file   string
		raw    any // the whole JSON, for checks over every object
		Inputs []struct {
			Name, Type, PluginID string
		} `json:"__inputs"`
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Annotations   struct {
			List []annotation `json:"list"`
		} `json:"annotations"`
		Templating struct {
			List []variable `json:"list"`
		} `json:"templating"`
	}
	dsRef struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	panel struct {
		ID          int `json:"id"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *dsRef `json:"datasource"`
		GridPos    struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"` // a row's panels
	}
	target struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Datasource   *dsRef `json:"datasource"`
		Hide         bool   `json:"hide"`
	}
	annotation struct {
		Name        string `json:"name"`
		BuiltIn     int    `json:"builtIn"`
		Datasource  *dsRef `json:"datasource"`
		Enable      bool   `json:"enable"`
		Expr        string `json:"expr"`
		TitleFormat string `json:"titleFormat"`
		TagKeys     string `json:"tagKeys"`
	}
	variable struct {
		Name       string          `json:"name"`
		Type       string          `json:"type"`
		Label      string          `json:"label"`
		Multi      bool            `json:"multi"`
		Datasource *dsRef          `json:"datasource"`
		Definition string          `json:"definition"`
		Query      json.RawMessage `json:"query"`
		IncludeAll bool            `json:"includeAll"`
		AllValue   string          `json:"allValue"`
		Current    struct {
			Value json.RawMessage `json:"value"`
		} `json:"current"`
		Refresh int `json:"refresh"`
	}
)

// query is one PromQL expression Grafana sends for a dashboard: a panel's
// target or an annotation.
type query struct {
	Dashboard string
	Where     string   // "panel \"Title\" target A" or "annotation \"Faults\""
	Expr      string   // as written, with Grafana variables
	Labels    []string // labels the legend or annotation title refers to
}

func (q query) String() string { return fmt.Sprintf("%s, %s: %s", q.Dashboard, q.Where, q.Expr) }

func loadDashboards(t testing.TB) []dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in grafana/dashboards (%v)", err)
	}
	var ds []dashboard
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := dashboard{file: filepath.Base(f)}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := json.Unmarshal(b, &d.raw); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ds = append(ds, d)
	}
	return ds
}

// allPanels flattens rows: a collapsed row keeps its panels inside it.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

func templateLabels(s string) []string {
	var out []string
	for _, m := range legendLabel.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// queries lists every PromQL expression of the dashboard.
func (d dashboard) queries() []query {
	var qs []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			if tg.Hide {
				continue
			}
			qs = append(qs, query{Dashboard: d.file, Where: fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), Expr: tg.Expr, Labels: templateLabels(tg.LegendFormat)})
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn != 0 {
			continue
		}
		var labels []string
		labels = append(labels, templateLabels(a.TitleFormat)...)
		for _, k := range strings.Split(a.TagKeys, ",") {
			if k = strings.TrimSpace(k); k != "" {
				labels = append(labels, k)
			}
		}
		qs = append(qs, query{Dashboard: d.file, Where: fmt.Sprintf("annotation %q", a.Name), Expr: a.Expr, Labels: labels})
	}
	return qs
}

// builtinVars are Grafana's interval variables, replaced by fixed windows.
var builtinVars = map[string]string{"__rate_interval": "1m", "__interval": "1m", "__range": "5m"}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// expand replaces Grafana variables the way Grafana does before sending a
// query; a variable neither built in nor in vars is an error.
func expand(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		s := varRef.FindStringSubmatch(m)
		name := s[1] + s[2] + s[3]
		if v, ok := builtinVars[name]; ok {
			return v
		}
		if v, ok := vars[name]; ok {
			return v
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown Grafana variable(s) %v", missing)
	}
	return out, nil
}

// defaultVars are the template variables' values as the dashboard opens:
// "All" becomes the variable's allValue.
func (d dashboard) defaultVars() map[string]string {
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			continue // not part of any expression
		}
		var cur any
		_ = json.Unmarshal(v.Current.Value, &cur)
		if l, ok := cur.([]any); ok && len(l) > 0 {
			cur = l[0]
		}
		s, _ := cur.(string)
		if s == "$__all" && v.IncludeAll {
			s = v.AllValue
		}
		vars[v.Name] = s
	}
	return vars
}

var labelValuesCall = regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// labelValues is the series selector and label of a query variable
// defined by label_values(selector, label).
func (v variable) labelValues() (selector, label string, err error) {
	q := v.Definition
	var obj struct {
		Query string `json:"query"`
	}
	var s string
	if json.Unmarshal(v.Query, &obj) == nil && obj.Query != "" {
		q = obj.Query
	} else if json.Unmarshal(v.Query, &s) == nil && s != "" {
		q = s
	}
	m := labelValuesCall.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return "", "", fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
	}
	if v.Definition != "" && strings.TrimSpace(v.Definition) != strings.TrimSpace(q) {
		return "", "", fmt.Errorf("variable %s: definition %q and query %q differ", v.Name, v.Definition, q)
	}
	return m[1], m[2], nil
}

func TestDashboardFiles(t *testing.T) {
	ds := loadDashboards(t)
	uids, titles := map[string]string{}, map[string]string{}
	for _, d := range ds {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: needs a uid and a title", d.file)
		}
		if f, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share the uid %q", f, d.file, d.UID)
		}
		if f, dup := titles[d.Title]; dup {
			t.Errorf("%s and %s share the title %q", f, d.file, d.Title)
		}
		uids[d.UID], titles[d.Title] = d.file, d.file
		if d.SchemaVersion < 36 || d.SchemaVersion > 41 {
			t.Errorf("%s: schemaVersion %d; the dashboards are written for ~39 (Grafana 10/11)", d.file, d.SchemaVersion)
		}
		ids := map[int]bool{}
		for _, p := range d.allPanels() {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: panel %q has id %d, zero or used twice", d.file, p.Title, p.ID)
			}
			ids[p.ID] = true
			if g := p.GridPos; g.W < 1 || g.X < 0 || g.X+g.W > 24 || g.H < 1 {
				t.Errorf("%s: panel %q lies outside the 24-column grid: %+v", d.file, p.Title, g)
			}
			if p.Type == "row" {
				continue
			}
			if p.Title == "" {
				t.Errorf("%s: panel %d has no title", d.file, p.ID)
			}
			if p.Datasource == nil || p.Datasource.UID != datasourceRef || p.Datasource.Type != "prometheus" {
				t.Errorf("%s: panel %q: data source %+v, want prometheus uid %s", d.file, p.Title, p.Datasource, datasourceRef)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.file, p.Title)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s: panel %q: target %q lacks an expression or has a missing or repeated refId", d.file, p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				if tg.Datasource == nil || tg.Datasource.UID != datasourceRef || tg.Datasource.Type != "prometheus" {
					t.Errorf("%s: panel %q target %s: data source %+v, want prometheus uid %s", d.file, p.Title, tg.RefID, tg.Datasource, datasourceRef)
				}
			}
		}
		faults := false
		for _, a := range d.Annotations.List {
			if a.BuiltIn != 0 {
				continue
			}
			if a.Datasource == nil || a.Datasource.UID != datasourceRef || a.Expr == "" {
				t.Errorf("%s: annotation %q: data source %+v and expression %q, want uid %s and a query", d.file, a.Name, a.Datasource, a.Expr, datasourceRef)
			}
			faults = faults || a.Enable && strings.Contains(a.Expr, "gridbed_faults_total")
		}
		if !faults {
			t.Errorf("%s: no enabled annotation shows the faults (gridbed_faults_total)", d.file)
		}
		for _, v := range d.Templating.List {
			if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != datasourceRef) {
				t.Errorf("%s: variable %s: data source %+v, want uid %s", d.file, v.Name, v.Datasource, datasourceRef)
			}
		}
		checkImportable(t, d)
	}
	for _, want := range []string{"gridbed-overview", "gridbed-overlay", "gridbed-jobs", "gridbed-emulator"} {
		if uids[want] == "" {
			t.Errorf("no dashboard has the uid %s", want)
		}
	}
}

// Every expression of every dashboard parses once Grafana's variables are
// replaced, reads only series gridbed exports, with their labels and label
// values, applies rate to counters and deriv to gauges, and keeps the
// labels its legend or annotation title names.
func TestDashboardQueriesUseRealMetrics(t *testing.T) {
	reg := runRegistry(t)
	n := 0
	for _, d := range loadDashboards(t) {
		vars := d.defaultVars()
		for _, v := range d.Templating.List {
			if v.Type == "datasource" {
				continue // checkImportable
			}
			if v.Type != "query" {
				t.Errorf("%s: variable %s of type %q: use query variables (label_values) or none", d.file, v.Name, v.Type)
				continue
			}
			sel, label, err := v.labelValues()
			if err != nil {
				t.Errorf("%s: %v", d.file, err)
				continue
			}
			c := &checker{reg: reg}
			if have := c.check(sel); have != nil && !have[label] {
				c.errorf("%s has no label %q", sel, label)
			}
			for _, p := range c.problems {
				t.Errorf("%s: variable %s: %s", d.file, v.Name, p)
			}
			if vars[v.Name] == "" {
				t.Errorf("%s: variable %s has no default value (select All with an allValue)", d.file, v.Name)
			}
		}
		for _, q := range d.queries() {
			n++
			expr, err := expand(q.Expr, vars)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			c := &checker{reg: reg}
			out := c.check(expr)
			if out != nil {
				for _, l := range q.Labels {
					if !out[l] {
						c.errorf("the legend/title names label %q, but the result has only %v", l, sorted(out))
					}
				}
			}
			for _, p := range c.problems {
				t.Errorf("%s\n\t%s", q, p)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d queries found in the dashboards", n)
	}
	t.Logf("%d queries checked against %d metric families", n, len(reg))
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The provisioning files, the compose file and prometheus.yml agree: the
// data source has the dashboards' uid and points at the compose
// Prometheus, the dashboards directory is mounted where the provider
// looks, Prometheus scrapes gridbed's default port on the host at the
// interval Grafana assumes.
func TestProvisioningAndCompose(t *testing.T) {
	var dsFile struct {
		Datasources []struct {
			Name, UID, Type, URL string
			IsDefault            bool           `yaml:"isDefault"`
			JSONData             map[string]any `yaml:"jsonData"`
		}
	}
	readYAML(t, "provisioning/datasources/prometheus.yaml", &dsFile)
	var dbFile struct {
		Providers []struct {
			Name, Type string
			Options    map[string]any
		}
	}
	readYAML(t, "provisioning/dashboards/gridbed.yaml", &dbFile)
	var compose struct {
		Services map[string]struct {
			Image       string
			Command     []string
			Environment map[string]string
			Volumes     []string
			ExtraHosts  []string `yaml:"extra_hosts"`
		}
	}
	readYAML(t, "compose.yaml", &compose)
	var prom struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		}
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string
			} `yaml:"static_configs"`
			FileSDConfigs []struct {
				Files []string
			} `yaml:"file_sd_configs"`
			RelabelConfigs []struct {
				SourceLabels []string `yaml:"source_labels"`
				Regex        string
				TargetLabel  string `yaml:"target_label"`
				Replacement  string
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus.yml", &prom)

	grafana, prometheus := compose.Services["grafana"], compose.Services["prometheus"]
	if grafana.Image == "" || prometheus.Image == "" {
		t.Fatalf("compose.yaml needs services grafana and prometheus with images; has %v", sorted(compose.Services))
	}
	env := func(s string) string { // Grafana's $VAR / ${VAR} in provisioning values
		return os.Expand(s, func(k string) string {
			v, ok := grafana.Environment[k]
			if !ok {
				t.Errorf("provisioning refers to $%s, which compose.yaml does not set for grafana", k)
			}
			return v
		})
	}
	mounts := map[string]string{} // container path → host path (relative to grafana/)
	for _, v := range grafana.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[0], ".") {
			mounts[parts[1]] = parts[0]
		}
	}
	if mounts["/etc/grafana/provisioning"] != "./provisioning" {
		t.Errorf("compose.yaml must mount ./provisioning at /etc/grafana/provisioning (mounts %v)", mounts)
	}

	if len(dsFile.Datasources) != 1 {
		t.Fatalf("want one provisioned data source, have %d", len(dsFile.Datasources))
	}
	ds := dsFile.Datasources[0]
	if ds.UID != provisionedUID || ds.Type != "prometheus" || !ds.IsDefault {
		t.Errorf("provisioned data source: uid %q type %q default %v, want %s, prometheus and the default (the dashboards' datasource variable picks it)", ds.UID, ds.Type, ds.IsDefault, provisionedUID)
	}
	if u := env(ds.URL); u != "http://prometheus:9090" {
		t.Errorf("data source URL under compose: %q, want http://prometheus:9090", u)
	}
	if ti := fmt.Sprint(ds.JSONData["timeInterval"]); ti != prom.Global.ScrapeInterval {
		t.Errorf("data source timeInterval %q differs from prometheus.yml scrape_interval %q ($__rate_interval depends on it)", ti, prom.Global.ScrapeInterval)
	}

	if len(dbFile.Providers) != 1 || dbFile.Providers[0].Type != "file" {
		t.Fatalf("want one file provider of dashboards, have %+v", dbFile.Providers)
	}
	dir := env(fmt.Sprint(dbFile.Providers[0].Options["path"]))
	if mounts[dir] != "./dashboards" {
		t.Errorf("the dashboard provider reads %q, where compose.yaml mounts %q, not ./dashboards", dir, mounts[dir])
	}
	if home := grafana.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		if d, f := filepath.Split(home); filepath.Clean(d) != dir {
			t.Errorf("home dashboard %s is not in the mounted dashboards directory %s", home, dir)
		} else if _, err := os.Stat(filepath.Join("dashboards", f)); err != nil {
			t.Errorf("home dashboard: %v", err)
		}
	}

	if !slices.Contains(prometheus.Volumes, "./prometheus.yml:/etc/prometheus/prometheus.yml:ro") || !slices.Contains(prometheus.Command, "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("compose.yaml must mount ./prometheus.yml and start Prometheus with it: volumes %v, command %v", prometheus.Volumes, prometheus.Command)
	}
	if !slices.Contains(prometheus.ExtraHosts, "host.docker.internal:host-gateway") {
		t.Errorf("prometheus needs extra_hosts host.docker.internal:host-gateway to reach gridbed on the host (Linux); has %v", prometheus.ExtraHosts)
	}
	if prom.Global.ScrapeInterval != "1s" {
		t.Errorf("scrape_interval %q: runs last seconds, scrape every 1s", prom.Global.ScrapeInterval)
	}
	// Every gridbed process's target file, from the directory compose
	// mounts, each address reached through host.docker.internal.
	if len(prom.ScrapeConfigs) != 1 || len(prom.ScrapeConfigs[0].StaticConfigs) != 0 || len(prom.ScrapeConfigs[0].FileSDConfigs) != 1 ||
		!slices.Equal(prom.ScrapeConfigs[0].FileSDConfigs[0].Files, []string{targetsMount + "/*.json"}) {
		t.Errorf("prometheus.yml must read gridbed's target files, %s/*.json (file_sd_configs), and nothing else; has %+v", targetsMount, prom.ScrapeConfigs)
	} else if rc := prom.ScrapeConfigs[0].RelabelConfigs; len(rc) != 1 || rc[0].TargetLabel != "__address__" || !strings.HasPrefix(rc[0].Replacement, "host.docker.internal:") {
		t.Errorf("prometheus.yml must point the loopback addresses of the target files at host.docker.internal; relabel_configs %+v", rc)
	}
	if !slices.Contains(prometheus.Volumes, "${HOME}/.cache/gridbed/targets:"+targetsMount+":ro") {
		t.Errorf("compose.yaml must mount gridbed's target directory (~/.cache/gridbed/targets) at %s; volumes %v", targetsMount, prometheus.Volumes)
	}
}

// targetsMount is where compose.yaml mounts gridbed's target directory and
// prometheus.yml reads it.
const targetsMount = "/etc/prometheus/gridbed-targets"

// checkImportable: the dashboard names no data source of its own. It has a
// datasource variable of type prometheus, first in the template list (the
// query variables after it read from it); __inputs declares the one
// Prometheus input that Grafana's import dialog asks for, and the
// variable's default is that input, so the data source picked on import
// is the one the dashboard opens with; every "datasource" object anywhere
// in the JSON is the variable or Grafana's built-in annotations; and a run
// variable lists gridbed_run_info's run ids.
func checkImportable(t *testing.T, d dashboard) {
	t.Helper()
	vars := d.Templating.List
	if len(vars) == 0 || vars[0].Name != "datasource" || vars[0].Type != "datasource" || string(vars[0].Query) != `"prometheus"` {
		t.Errorf("%s: the first template variable must be datasource, of type datasource, query \"prometheus\"", d.file)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("%s: __inputs %+v: want one datasource input of plugin prometheus", d.file, d.Inputs)
	} else if len(vars) > 0 && string(vars[0].Current.Value) != `"${`+d.Inputs[0].Name+`}"` {
		t.Errorf("%s: the datasource variable's default %s is not the import input ${%s}", d.file, vars[0].Current.Value, d.Inputs[0].Name)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "datasource" && path != ".templating.list" {
					ds, _ := x.(map[string]any)
					uid, _ := ds["uid"].(string)
					if uid != datasourceRef && uid != "-- Grafana --" {
						t.Errorf("%s: %s.datasource is %v, want {type: prometheus, uid: %s}", d.file, path, x, datasourceRef)
					}
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path, x)
			}
		}
	}
	walk("", d.raw)
	i := slices.IndexFunc(vars, func(v variable) bool { return v.Name == "run" })
	if i < 0 {
		t.Errorf("%s: no run variable", d.file)
		return
	}
	run := vars[i]
	sel, label, err := run.labelValues()
	if err != nil || sel != "gridbed_run_info" || label != "run_id" || !run.Multi || !run.IncludeAll || run.AllValue != ".+" || run.Refresh != 2 {
		t.Errorf("%s: run variable %+v (%v): want label_values(gridbed_run_info, run_id), multi, All = .+, refreshed with the time range", d.file, run, err)
	}
}

// runFiltered reports, for expr with Grafana's variables expanded, every
// series that does not go through the run variable: each selector must be
// the run filter itself, or lie (inside at most a range function, never
// under an aggregation) on the left of "and on(instance, job)" with the
// run filter on the right. So every query shows only the selected runs.
func runFiltered(expr string, runValue string) []string {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return []string{err.Error()}
	}
	filter := strings.ReplaceAll(runFilter, "$run", runValue)
	var bad []string
	parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.String() == filter {
			return nil
		}
		child := parser.Node(vs)
		for i := len(path) - 1; i >= 0; i-- {
			switch p := path[i].(type) {
			case *parser.MatrixSelector, *parser.Call, *parser.ParenExpr:
				child = p
				continue
			case *parser.BinaryExpr:
				if p.Op == parser.LAND && p.LHS == child && p.RHS.String() == filter && p.VectorMatching != nil && p.VectorMatching.On &&
					slices.Equal(sortedSlice(p.VectorMatching.MatchingLabels), []string{"instance", "job"}) {
					return nil
				}
			}
			break
		}
		bad = append(bad, vs.String())
		return nil
	})
	return bad
}

func sortedSlice(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Every series of every query and annotation goes through the run
// variable, and the filter itself is what the test expects (the checker
// would take a misspelt one for a different series).
func TestDashboardsFilterByRun(t *testing.T) {
	n := 0
	for _, d := range loadDashboards(t) {
		vars := d.defaultVars()
		vars["run"] = "r1"
		for _, q := range d.queries() {
			expr, err := expand(q.Expr, vars)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			n++
			if bad := runFiltered(expr, "r1"); len(bad) > 0 {
				t.Errorf("%s\n\tthese series ignore the run variable: %v (end them with \" and on(instance, job) %s\")", q, bad, runFilter)
			}
		}
	}
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{`sum(rate(x[1m]) and on(instance, job) gridbed_run_info{run_id=~"r1"})`, true},
		{`gridbed_run_info{run_id=~"r1"}`, true},
		{`sum(rate(x[1m]))`, false},
		{`sum(rate(x[1m])) and on(instance, job) gridbed_run_info{run_id=~"r1"}`, false}, // x aggregated first
		{`rate(x[1m]) and on(instance) gridbed_run_info{run_id=~"r1"}`, false},
		{`rate(x[1m]) and on(instance, job) gridbed_run_info`, false},
		{`x / (y and on(instance, job) gridbed_run_info{run_id=~"r1"})`, false},
	} {
		if bad := runFiltered(tc.expr, "r1"); (len(bad) == 0) != tc.ok {
			t.Errorf("runFiltered(%s) = %v, want ok %v", tc.expr, bad, tc.ok)
		}
	}
	if n < 20 {
		t.Errorf("only %d queries", n)
	}
}

// rateUnits are Grafana's units for per-second rates.
var rateUnits = map[string]bool{"ops": true, "reqps": true, "cps": true, "Bps": true, "binBps": true, "bps": true}

// Panels of per-wall-second rates carry a rate unit (bytes: Bps or binBps;
// CPU seconds per second: percentunit, a share of one core), not "short"
// or a text suffix, so Grafana scales and labels them.
func TestDashboardRateUnits(t *testing.T) {
	n := 0
	for _, d := range loadDashboards(t) {
		for _, p := range d.allPanels() {
			if p.Type == "row" || len(p.Targets) == 0 {
				continue
			}
			perSecond := true
			for _, tg := range p.Targets {
				perSecond = perSecond && strings.Contains(tg.Expr, "rate(") && !strings.Contains(tg.Expr, "histogram_quantile") && !strings.Contains(tg.Expr, "increase(")
			}
			if !perSecond {
				continue
			}
			n++
			unit, expr := p.FieldConfig.Defaults.Unit, p.Targets[0].Expr
			switch {
			case strings.Contains(expr, "_seconds_total["):
				if unit != "percentunit" {
					t.Errorf("%s: panel %q shows seconds per second with unit %q, want percentunit", d.file, p.Title, unit)
				}
			case strings.Contains(expr, "_bytes_total["):
				if unit != "Bps" && unit != "binBps" {
					t.Errorf("%s: panel %q shows bytes per second with unit %q, want Bps or binBps", d.file, p.Title, unit)
				}
			case !rateUnits[unit]:
				t.Errorf("%s: panel %q shows a rate with unit %q, want one of %v", d.file, p.Title, unit, sorted(rateUnits))
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d rate panels found", n)
	}
}
