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
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// parser walks a scenario's yaml.Node tree, collecting every problem.
type parser struct {
	source string
	errs   Errors
	tree   bool                  // a node tree was read (no syntax error)
	pos    map[string]*yaml.Node // dotted key → value node, for keys present in the file
	failed map[string]bool       // keys whose value could not be read or is invalid
	// expValues are the experiment block's vary values, checked once the
	// rest of the scenario is valid.
	expValues []expValue
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

var unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// syntax records a YAML syntax error with its line and what to write
// instead.
func (p *parser) syntax(err error, data []byte) {
	text := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		text = m[2]
	}
	lines := bytes.Split(data, []byte("\n"))
	tabbed := func(i int) bool { // 0-based line i is indented with a tab
		return i >= 0 && i < len(lines) && bytes.HasPrefix(bytes.TrimLeft(lines[i], " "), []byte("\t"))
	}
	// yaml.v3 gives no line for errors on the first line (it tests its
	// 0-based line against 0), for unknown anchors and for bad characters;
	// the last two are found below.
	if line == 0 {
		line = 1
	}
	hint := "write valid YAML: check the indentation, colons and quotes on this line and the next"
	switch m := unknownAnchor.FindStringSubmatch(text); {
	case m != nil:
		line = max(aliasLine(data, m[1]), 1)
		hint = fmt.Sprintf("write the anchor &%s on a value before the alias *%s that repeats it, or write the value itself", m[1], m[1])
	case strings.Contains(text, "UTF-8") || strings.Contains(text, "Unicode"):
		line = max(badCharLine(data), 1)
		hint = "save the file as UTF-8 text"
	case strings.Contains(text, "control characters"):
		line = max(badCharLine(data), 1)
		hint = `delete the control character, or write it as an escape inside double quotes, e.g. "a\x01b"`
	case strings.Contains(text, "incompatible YAML document"):
		hint = "delete the %YAML line: the YAML reader takes no version directive other than %YAML 1.1, and needs none"
	case strings.Contains(text, "exceeded max depth"):
		hint = "nest lists and mappings less deeply: a scenario needs four levels at most"
	case strings.Contains(text, "tab") || tabbed(line-1) || tabbed(line):
		hint = "write valid YAML indented with spaces; YAML does not allow tabs for indentation"
	}
	p.errs = append(p.errs, &Error{Source: p.source, Line: line, Msg: "YAML syntax error: " + text + " — " + hint})
}

// aliasLine is the 1-based line of the first alias *name in data outside a
// comment, 0 if there is none.
func aliasLine(data []byte, name string) int {
	alias := []byte("*" + name)
	for off := 0; ; {
		i := bytes.Index(data[off:], alias)
		if i < 0 {
			return 0
		}
		at, end := off+i, off+i+len(alias)
		lineStart := bytes.LastIndexByte(data[:at], '\n') + 1
		before := data[lineStart:at]
		comment := bytes.HasPrefix(bytes.TrimLeft(before, " \t"), []byte("#")) || bytes.Contains(before, []byte(" #"))
		if !comment && (end == len(data) || !anchorChar(data[end])) {
			return bytes.Count(data[:at], []byte("\n")) + 1
		}
		off = end
	}
}

// anchorChar reports whether yaml.v3 reads c as part of an anchor name.
func anchorChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '-'
}

// badCharLine is the 1-based line of the first byte of data that is not
// UTF-8 or is a character YAML does not allow in a file (a control
// character other than tab and line breaks), 0 if there is none.
func badCharLine(data []byte) int {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 || !yamlChar(r) {
			return bytes.Count(data[:off], []byte("\n")) + 1
		}
		off += size
	}
	return 0
}

// yamlChar reports whether YAML allows r in a file (YAML 1.2 §5.1).
func yamlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7e || r == 0x85 ||
		r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
}

// section reads the keys of one mapping; path is its dotted path ("" = top).
func (p *parser) section(s *Scenario, path string, m *yaml.Node) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		name, ok := p.mappingKey(k, path, where(path), sections[path], seen)
		if !ok {
			continue
		}
		key := joinKey(path, name)
		if key == "faults" {
			p.faults(s, v)
			continue
		}
		if key == "experiment" {
			p.experiment(s, v)
			continue
		}
		if key == "link.region_latency" {
			p.regionMatrix(s, v)
			continue
		}
		if key == bandwidthClassesKey {
			p.bandwidthClasses(s, v)
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

// mappingKey reads key node k of a mapping at path (described by in, e.g.
// `in a fault`, for messages), whose valid keys are valid. A key that is
// not a plain name, a merge key (<<) and a key already in seen are
// problems, recorded here; otherwise the name is returned and added to seen.
func (p *parser) mappingKey(k *yaml.Node, path, in string, valid []string, seen map[string]*yaml.Node) (string, bool) {
	n := deref(k)
	switch {
	case n.Kind != yaml.ScalarNode || isNull(n):
		p.add(k, path, fmt.Sprintf("found %s used as a key %s — write a plain name; valid keys here: %s",
			kindName(n), in, strings.Join(valid, ", ")))
		return "", false
	case n.ShortTag() == "!!merge":
		p.add(k, path, "YAML merge keys (<<) are not supported — write the keys out in full")
		return "", false
	}
	if first := seen[n.Value]; first != nil {
		p.add(k, joinKey(path, n.Value), fmt.Sprintf("duplicate key %q (already set on line %d) — keep only one of the two lines", n.Value, first.Line))
		return "", false
	}
	seen[n.Value] = k
	return n.Value, true
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
	p.loadLatencyMatrix(s)
	p.checkRegionMatrix(s)
	p.checkBandwidth(s)
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
	case n.Style&yaml.TaggedStyle != 0 && !slices.Contains(coreTags, n.ShortTag()):
		return fmt.Sprintf("the YAML tag %s is not one a scenario reads — write the value without it, e.g. %s", n.Tag, example)
	}
	return f.decode(s, n)
}

// coreTags are the explicit YAML tags a scenario value may carry (e.g.
// !!str 5 for the text "5"); any other tag (!foo, !!binary, !!timestamp) is
// rejected rather than silently dropped.
var coreTags = []string{strTag, intTag, floatTag, boolTag, nullTag}

func fileExample(f *field) string {
	d := Default()
	_, name := splitKey(f.key)
	return name + ": " + scalarText(f.encode(&d))
}

func setExample(f *field) string {
	d := Default()
	return "--set " + f.key + "=" + scalarText(f.encode(&d))
}

// setNode reads the value of a --set assignment as one YAML value, or
// says what is wrong with it and what to write instead. A free-text key
// (f.literal) takes the text as written when YAML would not read it as one
// scalar, or would drop a comment from it ("name=run #3"); an empty value
// is then the empty string.
func setNode(f *field, text string) (*yaml.Node, string) {
	if !utf8.ValidString(text) {
		return nil, fmt.Sprintf("%q is not valid UTF-8 — write %s, e.g. %s", text, f.want, setExample(f))
	}
	if strings.TrimSpace(text) == "" {
		if f.literal {
			return strNode(""), ""
		}
		return nil, fmt.Sprintf("the value is empty — write %s, e.g. %s", f.want, setExample(f))
	}
	n, commented, problem := setValue(text)
	if f.literal && (n == nil || n.Kind != yaml.ScalarNode || commented) {
		return strNode(text), ""
	}
	switch {
	case problem == "" && isNull(n):
		problem = fmt.Sprintf("%q is read as YAML's null, leaving no value", text)
	case problem == "":
		return n, ""
	}
	msg := fmt.Sprintf("%s — write %s, e.g. %s", problem, f.want, setExample(f))
	switch {
	case strings.Contains(text, "#"):
		msg += fmt.Sprintf(" (a # at the start of a value or after a space begins a YAML comment; to keep it, quote the value: '%s=\"%s\"')", f.key, strings.TrimSpace(text))
	case f.literal && n != nil && isNull(n):
		msg += fmt.Sprintf(" (to use the text itself, quote it: '%s=\"%s\"')", f.key, strings.TrimSpace(text))
	}
	return nil, msg
}

// setValue parses text as a YAML document holding one value. It returns
// the value (aliases followed) and whether YAML read a comment beside it,
// or a sentence saying why text is not one value.
func setValue(text string) (n *yaml.Node, commented bool, problem string) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	err := dec.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF) && strings.Contains(text, "#"):
		return nil, true, fmt.Sprintf("%q is read as a YAML comment, leaving no value", text)
	case errors.Is(err, io.EOF) || err == nil && len(doc.Content) == 0:
		return nil, false, fmt.Sprintf("%q holds no YAML value", text)
	case err != nil:
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "line 1: ")
		return nil, false, fmt.Sprintf("%q is not a single YAML value (%s)", text, reason)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, false, fmt.Sprintf("%q holds more than one YAML document", text)
	}
	n = doc.Content[0]
	return deref(n), hasComment(&doc) || hasComment(n), ""
}

// hasComment reports whether YAML attached a comment to n.
func hasComment(n *yaml.Node) bool {
	return n.HeadComment != "" || n.LineComment != "" || n.FootComment != ""
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
	if key == "link.region_latency" {
		return "the region latency matrix is a list of lists and cannot be set with --set — write it in the scenario file under link:"
	}
	if key == bandwidthClassesKey {
		return "the bandwidth classes are a list and cannot be set with --set — write them in the scenario file under link: bandwidth:, or set link.bandwidth.up and .down"
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
	case yaml.AliasNode:
		return "an alias"
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
