package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A --set (or --vary) key may address one field of one entry of the fault
// timeline: faults.SEL.FIELD, where SEL is the entry's index in the
// timeline as written (faults.0.at=6m; faults[0].at is read the same) or
// the name the entry carries (faults.cut.fraction=0.3 for a partition
// named cut), and FIELD is at or one of the keys of the entry's kind
// (gridbed keys, docs/FAULTS.md). The entry is rewritten with the new
// value and read again exactly as the file's entries are, so a bad value
// gets the file's sentence; the whole scenario is validated afterwards.

// bracketIndex matches faults[N] written for faults.N.
var bracketIndex = regexp.MustCompile(`^faults\[(\d+)\]`)

// isFaultKey reports whether key addresses the fault timeline.
func isFaultKey(key string) bool {
	return key == "faults" || strings.HasPrefix(key, "faults.") || strings.HasPrefix(key, "faults[")
}

// faultSetExample is the sentence every refused fault key ends with.
const faultSetExample = "e.g. --set faults.0.at=6m (the first entry) or --set faults.cut.fraction=0.3 (the entry named cut)"

// setFault applies the value text to the fault field key (faults.SEL.FIELD)
// of s, or says what is wrong and what to write instead. s.Faults is
// copied before it changes.
func (s *Scenario) setFault(key, text string) string {
	key = bracketIndex.ReplaceAllString(key, "faults.$1")
	rest, _ := strings.CutPrefix(key, "faults.")
	if key == "faults" || rest == "" {
		return "the fault timeline is a list: set one field of one entry, " + faultSetExample + " — or write the whole list in the scenario file under faults:"
	}
	if len(s.Faults) == 0 {
		return "the scenario has no fault timeline to set a field of — write the entries in the scenario file under faults: (or give them with --faults FILE), then set their fields, " + faultSetExample
	}
	sel, field, ok := strings.Cut(rest, ".")
	i, msg := s.faultIndex(sel)
	if msg != "" {
		return msg
	}
	f := s.Faults[i]
	fields := append([]string{"at"}, faultKeys[f.Kind]...)
	if !ok || field == "" {
		return fmt.Sprintf("faults.%s is a whole entry (a %s) — set one of its fields, e.g. --set faults.%s.at=%s; fields: %s",
			sel, f.Kind, sel, fmtDuration(f.At), strings.Join(fields, ", "))
	}
	if !slices.Contains(fields, field) {
		m := fmt.Sprintf("unknown field %q of faults.%s (a %s)", field, sel, f.Kind)
		if c := closest(field, fields); c != "" {
			return m + fmt.Sprintf(" — did you mean %q? Fields: %s", c, strings.Join(fields, ", "))
		}
		return m + " — write one of its fields: " + strings.Join(fields, ", ")
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Sprintf("the value is empty — write the entry's new %s, e.g. --set faults.%s.%s=%s", field, sel, field, faultFieldExample(f, field))
	}
	n, _, problem := setValue(text)
	if problem == "" && isNull(n) {
		problem = fmt.Sprintf("%q is read as YAML's null, leaving no value", text)
	}
	if problem != "" {
		return fmt.Sprintf("%s — write the entry's new %s, e.g. --set faults.%s.%s=%s", problem, field, sel, field, faultFieldExample(f, field))
	}
	entry := faultsNode([]Fault{f}).Content[0]
	if field == "at" {
		// at replaces a when: the entry then happens at a time.
		entry.Content = []*yaml.Node{plainNode("at"), n, entry.Content[len(entry.Content)-2], entry.Content[len(entry.Content)-1]}
	} else {
		body := entry.Content[len(entry.Content)-1]
		body.Style = 0
		replaced := false
		for j := 0; j+1 < len(body.Content); j += 2 {
			if body.Content[j].Value == field {
				body.Content[j+1], replaced = n, true
			}
		}
		if !replaced {
			body.Content = append(body.Content, plainNode(field), n)
		}
	}
	p := newParser("")
	g, ok := p.fault(fmt.Sprintf("faults[%d]", i), entry)
	if !ok {
		var msgs []string
		for _, e := range p.errs {
			msgs = append(msgs, e.Msg)
		}
		return strings.Join(msgs, "; ")
	}
	g.Line, g.source = f.Line, f.source
	s.Faults = slices.Clone(s.Faults)
	s.Faults[i] = g
	return ""
}

// faultIndex finds the entry sel names: an index into the timeline, or
// the name of one entry. A name that a partition (or flap) and the heal
// that ends it both carry is the partition's.
func (s *Scenario) faultIndex(sel string) (int, string) {
	if i, err := strconv.Atoi(sel); err == nil {
		if i < 0 || i >= len(s.Faults) {
			return 0, fmt.Sprintf("there is no fault entry %d: the timeline has %d (faults.0 to faults.%d) — write an index from 0 to %d, or the name an entry carries, %s",
				i, len(s.Faults), len(s.Faults)-1, len(s.Faults)-1, faultSetExample)
		}
		return i, ""
	}
	var named, heals []int
	var names []string
	for i, f := range s.Faults {
		if f.Name != "" && !slices.Contains(names, f.Name) {
			names = append(names, f.Name)
		}
		switch {
		case f.Name != sel:
		case f.Kind == FaultHeal:
			heals = append(heals, i)
		default:
			named = append(named, i)
		}
	}
	if len(named) == 0 {
		named = heals
	}
	switch len(named) {
	case 1:
		return named[0], ""
	case 0:
		m := fmt.Sprintf("no fault entry is named %q", sel)
		if len(names) == 0 {
			return 0, m + fmt.Sprintf(" (none carries a name) — address an entry by its index, from faults.0 to faults.%d, e.g. --set faults.0.at=6m, or give it name: %s in the file", len(s.Faults)-1, sel)
		}
		if c := closest(sel, names); c != "" {
			return 0, m + fmt.Sprintf(" — did you mean %q? Names: %s (or address an entry by its index, faults.0 to faults.%d)", c, strings.Join(names, ", "), len(s.Faults)-1)
		}
		return 0, m + fmt.Sprintf(" — write one of the names the entries carry, %s, or an index from 0 to %d", strings.Join(names, ", "), len(s.Faults)-1)
	}
	var which []string
	for _, i := range named {
		which = append(which, fmt.Sprintf("faults.%d (a %s)", i, s.Faults[i].Kind))
	}
	return 0, fmt.Sprintf("%d fault entries are named %q: %s — address one by its index, e.g. faults.%d.at", len(named), sel, strings.Join(which, ", "), named[0])
}

// faultFieldExample is a value of field that entry f could take, for a
// message.
func faultFieldExample(f Fault, field string) string {
	entry := faultsNode([]Fault{f}).Content[0]
	body := entry.Content[len(entry.Content)-1]
	for j := 0; j+1 < len(body.Content); j += 2 {
		if v := body.Content[j+1]; body.Content[j].Value == field && v.Kind == yaml.ScalarNode {
			return scalarText(v)
		}
	}
	switch field {
	case "at":
		return fmtDuration(f.At)
	case "fraction", "p":
		return "0.2"
	case "peers", "from", "to":
		return "[1,2,3]"
	case "name":
		return "cut"
	case "oneway":
		return "true"
	case "region":
		return "0"
	}
	return "2m"
}
