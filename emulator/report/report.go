// Package report turns results into figures and one page a person opens:
// report.html, with the scenario, the key numbers of summary.json, the
// invariants and the figures, each written as SVG (shown by the page), PDF
// and PNG at twice screen resolution. WriteRun does it for one run
// (gridbed run --out DIR), Sweep for a grid of runs (gridbed sweep). The
// figures are the papers' kinds: the CDF of job wait (000 §V, 003 §5.3),
// messages and bytes per node per minute (002 Fig 4.7, 000 Fig 4), broken
// links over time (002 Fig 4.6), mean wait by scheduling mode (000 Fig 3);
// a figure without data is not drawn, and the page says why. The page
// needs no network and no JavaScript.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
)

// FigureDir is the directory, inside the results directory, that holds
// the figures. It belongs to the report: figure files the current report
// did not write are removed from it.
const FigureDir = "figures"

// Figure is one figure on the page: FigureDir/Name.svg, Name.pdf and Name.png.
type Figure struct {
	Name    string
	Title   string
	Caption string
}

// SVG, PNG and PDF are the figure's files, relative to the results
// directory.
func (f Figure) SVG() string { return FigureDir + "/" + f.Name + ".svg" }
func (f Figure) PNG() string { return FigureDir + "/" + f.Name + ".png" }
func (f Figure) PDF() string { return FigureDir + "/" + f.Name + ".pdf" }

// Omitted is a figure not drawn, and why.
type Omitted struct {
	Title, Reason string
}

// Cell is one table cell: text, an optional link (relative), a note shown
// small after it (e.g. the summary.json key), and whether it is bad news.
type Cell struct {
	Text, Href, Note string
	Bad, OK          bool
}

// Table is a captioned table of the page.
type Table struct {
	Caption string
	Head    []string
	Rows    [][]Cell
}

// Link is a link to another results file.
type Link struct {
	Text, Href string
}

// Page is what report.html shows.
type Page struct {
	Title    string
	Subtitle string
	Links    []Link
	Tables   []Table
	Figures  []Figure
	Omitted  []Omitted
}

// write saves the figures into dir/FigureDir, removes figure files left
// there by an earlier report, and writes dir/report.html; figures must be
// in page order.
func write(dir string, page *Page, figs []*figure) error {
	fd := filepath.Join(dir, FigureDir)
	if err := os.MkdirAll(fd, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	page.Figures = page.Figures[:0]
	for _, f := range figs {
		if err := f.save(fd); err != nil {
			return err
		}
		page.Figures = append(page.Figures, f.Figure)
		keep[f.Name+".svg"], keep[f.Name+".png"], keep[f.Name+".pdf"] = true, true, true
	}
	old, err := os.ReadDir(fd)
	if err != nil {
		return err
	}
	for _, e := range old {
		if ext := filepath.Ext(e.Name()); (ext == ".svg" || ext == ".png" || ext == ".pdf") && !keep[e.Name()] {
			if err := os.Remove(filepath.Join(fd, e.Name())); err != nil {
				return err
			}
		}
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, page); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), buf.Bytes(), 0o644)
}

// files links the results files that exist in dir.
func files(dir string, names ...string) []Link {
	var out []Link
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			out = append(out, Link{Text: n, Href: n})
		}
	}
	return out
}

// keyValue is a two-column table of labelled values with their
// summary.json keys as notes.
type keyValue struct{ t Table }

func (kv *keyValue) add(label, value, key string) {
	kv.t.Rows = append(kv.t.Rows, []Cell{{Text: label}, {Text: value, Note: key}})
}

func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6 || v <= -1e6:
		return fmt.Sprintf("%.4g", v)
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// fmtOpt formats a nullable figure ("—" for null) with a unit.
func fmtOpt(v *float64, unit string) string {
	if v == nil {
		return "—"
	}
	return strings.TrimSpace(fmtNum(*v) + " " + unit)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arimo, Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1440px; padding: 0 1.5em; color: #222; background: #fff; line-height: 1.35; }
h1 { font-size: 1.6em; margin: 0 0 .2em; }
h2 { font-size: 1.2em; margin: 1.4em 0 .5em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
.sub { color: #555; margin: 0 0 .6em; }
.links a { margin-right: 1em; }
.tables { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.tables > div { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: .92em; }
caption { text-align: left; font-weight: bold; padding-bottom: .3em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; overflow-wrap: anywhere; min-width: 4em; }
td.ok { color: #1a6b1a; font-weight: bold; }
td.bad { color: #b00020; font-weight: bold; }
.note { color: #888; font-size: .8em; margin-left: .5em; font-family: "DejaVu Sans Mono", monospace; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 1.5em; }
figure { margin: 0; border: 1px solid #e4e4e4; padding: .6em; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-size: .92em; margin-top: .4em; }
figcaption .files { color: #666; font-size: .85em; }
ul.omitted { color: #555; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
{{if .Links}}<p class="links">Files: {{range .Links}}<a href="{{.Href}}">{{.Text}}</a>{{end}}</p>{{end}}
<div class="tables">
{{range .Tables}}<div><table>
<caption>{{.Caption}}</caption>
{{if .Head}}<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>{{end}}
{{range .Rows}}<tr>{{range .}}<td{{if .Bad}} class="bad"{{else if .OK}} class="ok"{{end}}>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{if .Note}}<span class="note">{{.Note}}</span>{{end}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}</div>
<h2>Figures</h2>
{{if .Figures}}<div class="figures">
{{range .Figures}}<figure id="{{.Name}}">
<img src="{{.SVG}}" alt="{{.Title}}">
<figcaption><b>{{.Title}}.</b> {{.Caption}} <span class="files">(<a href="{{.SVG}}">SVG</a>, <a href="{{.PDF}}">PDF</a>, <a href="{{.PNG}}">PNG</a>)</span></figcaption>
</figure>
{{end}}</div>{{else}}<p>No figure has data.</p>{{end}}
{{if .Omitted}}<h2>Not drawn</h2>
<ul class="omitted">
{{range .Omitted}}<li><b>{{.Title}}</b>: {{.Reason}}</li>
{{end}}</ul>{{end}}
</body>
</html>
`))
