package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// parser walks a scenario's yaml.Node tree, collecting every problem.
type parser struct {
	source string
	errs   Errors
	tree   bool                  // a node tree was read (no syntax error)
	pos    map[string]*yaml.Node // dotted key → value node, for keys present in the file
	failed map[string]bool       // keys whose value could not be read or is invalid
}

func newParser(source string) *parser {
	return &parser{source: source, pos: map[string]*yaml.Node{}, failed: map[string]bool{}}
}

func (p *parser) add(n *yaml.Node, key, msg string) {
	e := &Error{Source: p.source, Key: key, Msg: msg}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

// document reads the YAML and returns the top-level mapping, or nil when the
// file is empty (all defaults) or unusable (problem recorded).
func (p *parser) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // empty, or only comments
			p.tree = true
			return nil
		}
		p.syntax(err, data)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(err, data)
		return nil
	default:
		if len(extra.Content) > 0 && !isNull(extra.Content[0]) {
			p.add(extra.Content[0], "", `the file holds a second YAML document after "---" — write one scenario per file, or delete the second "---" line`)
		}
	}
	p.tree = true
	root := deref(doc.Content[0])
	switch {
	case isNull(root):
		return nil
	case root.Kind != yaml.MappingNode:
		p.add(root, "", fmt.Sprintf(`the scenario must be a mapping of keys, but the file holds %s — write one "key: value" per line at the top level, e.g. "duration: 10m"; valid keys: %s`,
			kindName(root), strings.Join(sections[""], ", ")))
		return nil
	}
	return root
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax records a YAML syntax error, keeping yaml's line.
func (p *parser) syntax(err error, data []byte) {
	text := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(text); m != nil {
		line, _ = strconv.Atoi(m[1])
		text = m[2]
	} else {
		text = strings.TrimPrefix(text, "yaml: ")
		// yaml.v3 drops "line 1:" from errors on the first line (its
		// 0-based line is tested against 0); anchor errors carry no line.
		if !strings.Contains(text, "anchor") && !strings.Contains(text, "alias") {
			line = 1
		}
	}
	hint := "write valid YAML: check the indentation, colons and quotes on this line and the next"
	if strings.Contains(text, "anchor") {
		hint = "write each anchor (&name) before the aliases (*name) that use it"
	} else if lines := bytes.Split(data, []byte("\n")); strings.Contains(text, "tab") ||
		line > 0 && line <= len(lines) && bytes.HasPrefix(bytes.TrimLeft(lines[line-1], " "), []byte("\t")) ||
		line > 0 && line < len(lines) && bytes.HasPrefix(bytes.TrimLeft(lines[line], " "), []byte("\t")) {
		hint = "write valid YAML indented with spaces; YAML does not allow tabs for indentation"
	}
	p.errs = append(p.errs, &Error{Source: p.source, Line: line, Msg: "YAML syntax error: " + text + " — " + hint})
}

// section reads the keys of one mapping; path is its dotted path ("" = top).
func (p *parser) section(s *Scenario, path string, m *yaml.Node) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		name := k.Value
		key := joinKey(path, name)
		switch {
		case k.Kind != yaml.ScalarNode:
			p.add(k, path, fmt.Sprintf("found %s used as a key %s — write a plain name; valid keys here: %s",
				kindName(k), where(path), strings.Join(sections[path], ", ")))
			continue
		case k.ShortTag() == "!!merge":
			p.add(k, path, "YAML merge keys (<<) are not supported — write the keys out in full")
			continue
		}
		if first := seen[name]; first != nil {
			p.add(k, key, fmt.Sprintf("duplicate key %q (already set on line %d) — keep only one of the two lines", name, first.Line))
			continue
		}
		seen[name] = k
		if key == "faults" {
			p.faults(s, v)
			continue
		}
		if key == "link.region_latency" {
			p.regionMatrix(s, v)
			continue
		}
		if f := leaves[key]; f != nil {
			p.pos[key] = v
			if msg := assign(f, s, v, fileExample(f)); msg != "" {
				p.failed[key] = true
				p.add(v, key, msg)
			}
			continue
		}
		if children, ok := sections[key]; ok {
			switch {
			case v.Kind == yaml.MappingNode:
				p.section(s, key, v)
			case isNull(v): // "peers:" with nothing under it: all defaults
			default:
				p.add(v, key, fmt.Sprintf(`found %s where the section %q belongs — write its keys indented below "%s:", e.g. "  %s: %s"; valid keys here: %s`,
					kindName(v), key, name, children[0], sectionExample(key, children[0]), strings.Join(children, ", ")))
				for _, c := range children { // don't blame keys that depend on these
					p.failSection(joinKey(key, c))
				}
			}
			continue
		}
		p.add(k, key, unknownKey(path, name))
	}
}

// failSection marks every key under path (or path itself) as failed.
func (p *parser) failSection(path string) {
	for key := range leaves {
		if key == path || strings.HasPrefix(key, path+".") {
			p.failed[key] = true
		}
	}
}

// sectionExample is the default of key path.child, or "..." for a section.
func sectionExample(path, child string) string {
	if f := leaves[joinKey(path, child)]; f != nil {
		d := Default()
		return scalarText(f.encode(&d))
	}
	return "..."
}

// validate runs every key's check in schema order. Keys that could not be
// read, and keys depending on them, are skipped: they would only repeat the
// problem. A problem is placed at its key's value, or failing that at the
// value of the first dependency present in the file.
func (p *parser) validate(s *Scenario) {
	for i := range schema {
		f := &schema[i]
		if p.failed[f.key] {
			continue
		}
		skip := false
		for _, d := range f.deps {
			skip = skip || p.failed[d]
		}
		if skip {
			p.failed[f.key] = true
			continue
		}
		msg := f.check(s)
		if msg == "" {
			continue
		}
		p.failed[f.key] = true
		n := p.pos[f.key]
		for _, d := range f.deps {
			if n == nil {
				n = p.pos[d]
			}
		}
		p.add(n, f.key, msg)
	}
	p.checkLifetime(s)
	p.checkRegionMatrix(s)
	if !p.failed["faults"] && !p.failed["duration"] && !p.failed["link.regions"] {
		p.errs = append(p.errs, checkFaults(s)...)
	}
}

// checkLifetime checks the session model against the keys it reads.
func (p *parser) checkLifetime(s *Scenario) {
	l := s.Churn.Lifetime
	if p.failed["churn.lifetime.dist"] || l.Dist == LifetimeNone {
		return
	}
	at := func(keys ...string) *yaml.Node {
		for _, k := range keys {
			if n := p.pos[k]; n != nil {
				return n
			}
		}
		return nil
	}
	if l.Dist == "pareto" && !p.failed["churn.lifetime.shape"] && l.Shape <= 1 {
		p.add(at("churn.lifetime.shape", "churn.lifetime.dist"), "churn.lifetime.shape",
			fmt.Sprintf("%s is not a pareto shape: its mean is infinite unless the shape is above 1 — write e.g. shape: 1.5", fmtFloat(l.Shape)))
	}
	if !p.failed["churn.start"] && !p.failed["duration"] && s.Churn.Start >= s.Duration {
		p.add(at("churn.start", "churn.lifetime.dist"), "churn.start",
			fmt.Sprintf("%s is not before the end of the run (duration %s) — start churn earlier for the session model", fmtDuration(s.Churn.Start), fmtDuration(s.Duration)))
	}
}

// assign stores scalar node n into f's field, or says what is wrong.
// example shows a valid assignment, e.g. `count: 500`.
func assign(f *field, s *Scenario, n *yaml.Node, example string) string {
	switch {
	case n.Kind != yaml.ScalarNode:
		return fmt.Sprintf("found %s where a single value belongs — write %s, e.g. %s", kindName(n), f.want, example)
	case isNull(n):
		return fmt.Sprintf("has no value — write %s, e.g. %s (leave the key out to get the default)", f.want, example)
	}
	return f.decode(s, n)
}

func fileExample(f *field) string {
	d := Default()
	_, name := splitKey(f.key)
	return name + ": " + scalarText(f.encode(&d))
}

func setExample(f *field) string {
	d := Default()
	return "--set " + f.key + "=" + scalarText(f.encode(&d))
}

// setNode reads the value of a --set assignment as a YAML scalar.
func setNode(f *field, text string) (*yaml.Node, string) {
	if strings.TrimSpace(text) == "" {
		return strNode(""), ""
	}
	var doc yaml.Node
	err := yaml.Unmarshal([]byte(text), &doc)
	if err == nil && len(doc.Content) > 0 && doc.Content[0].Kind == yaml.ScalarNode {
		return doc.Content[0], ""
	}
	if f.literal { // free text such as "a: b" is taken as written
		return strNode(text), ""
	}
	if err != nil {
		return nil, fmt.Sprintf("%q is not a single YAML value — write %s, e.g. %s", text, f.want, setExample(f))
	}
	return deref(doc.Content[0]), ""
}

// unknownKey explains an unknown key name in section path.
func unknownKey(path, name string) string {
	valid := sections[path]
	msg := fmt.Sprintf("unknown key %q %s", name, where(path))
	if m := closest(name, valid); m != "" {
		return msg + fmt.Sprintf(" — did you mean %q? Valid keys here: %s", m, strings.Join(valid, ", "))
	}
	// The right name in the wrong section?
	var elsewhere []string
	for key := range leaves {
		for k := key; k != ""; k, _ = splitKey(k) {
			if parent, n := splitKey(k); n == name && parent != path && !slices.Contains(elsewhere, k) {
				elsewhere = append(elsewhere, k)
			}
		}
	}
	if len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		parent, _ := splitKey(elsewhere[0])
		return msg + fmt.Sprintf(" — did you mean %q? Move it under %s. Valid keys here: %s",
			elsewhere[0], sectionName(parent), strings.Join(valid, ", "))
	}
	return msg + " — write one of the valid keys here: " + strings.Join(valid, ", ")
}

// unknownSetKey explains an unknown dotted key given to --set.
func unknownSetKey(key string) string {
	if key == "faults" || strings.HasPrefix(key, "faults.") || strings.HasPrefix(key, "faults[") {
		return "the fault timeline is a list and cannot be set with --set — write it in the scenario file under faults:"
	}
	if key == "link.region_latency" {
		return "the region latency matrix is a list of lists and cannot be set with --set — write it in the scenario file under link:"
	}
	if _, ok := sections[key]; ok && key != "" {
		under := leavesUnder(key)
		return fmt.Sprintf("%q is a section, not a single value — set one of its keys, e.g. %s; keys here: %s",
			key, setExample(leaves[under[0]]), strings.Join(under, ", "))
	}
	msg := fmt.Sprintf("unknown key %q", key)
	all := leavesUnder("")
	var best string
	bestD := maxDistance(key) + 1
	for _, k := range all {
		_, last := splitKey(k)
		d := distance(key, k)
		if !strings.Contains(key, ".") {
			d = min(d, distance(key, last))
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		valid := all
		if parent, _ := splitKey(best); parent != "" {
			valid = leavesUnder(parent)
		}
		return msg + fmt.Sprintf(" — did you mean %q? Valid keys here: %s", best, strings.Join(valid, ", "))
	}
	// List the keys of the deepest section the key names, else all keys.
	valid := all
	for sec := key; sec != ""; sec, _ = splitKey(sec) {
		if _, ok := sections[sec]; ok {
			valid = leavesUnder(sec)
			break
		}
	}
	return msg + " — write one of the valid keys: " + strings.Join(valid, ", ")
}

// leavesUnder lists the leaf keys inside section path, in schema order.
func leavesUnder(path string) []string {
	var out []string
	for i := range schema {
		if k := schema[i].key; path == "" || strings.HasPrefix(k, path+".") {
			out = append(out, k)
		}
	}
	return out
}

func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return fmt.Sprintf("in section %q", path)
}

func sectionName(path string) string {
	if path == "" {
		return "the top level"
	}
	return strconv.Quote(path + ":")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "an empty value"
		}
		return "the value " + show(n)
	}
	return "an unexpected YAML node"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == nullTag }

// deref follows YAML aliases (*name) to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
