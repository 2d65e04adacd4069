package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gridbed/gridbed/faults/bandwidth"
)

// Bandwidth is link.bandwidth: the peers' access links (faults/bandwidth).
// Up and Down give every peer the same link; Classes, when set, replace
// them with a distribution over the peers.
type Bandwidth struct {
	Up, Down bandwidth.Rate    // every peer's upload and download capacity (0: unlimited)
	Classes  []bandwidth.Class // the access links and their shares of the peers, instead of Up and Down
	Link     bandwidth.Rate    // cap of every (sender, receiver) link (0: none)
	Queue    bandwidth.Size    // most bytes an access-link queue holds (0: no limit)
}

// Config is the bandwidth model the scenario asks for.
func (b Bandwidth) Config() bandwidth.Config {
	c := bandwidth.Config{Classes: b.Classes, Link: b.Link, Queue: b.Queue}
	if len(b.Classes) == 0 && (b.Up > 0 || b.Down > 0) {
		c.Classes = []bandwidth.Class{{Fraction: 1, Up: b.Up, Down: b.Down}}
	}
	return c
}

// On reports whether the scenario limits bandwidth.
func (b Bandwidth) On() bool { return b.Config().On() }

// bandwidthFields are the scalar keys of link.bandwidth, appended to schema;
// link.bandwidth.classes is a list, read by bandwidthClasses.
var bandwidthFields = []field{
	rateField("link.bandwidth.up", func(s *Scenario) *bandwidth.Rate { return &s.Link.Bandwidth.Up }, "1Mbit",
		"Upload capacity of every peer's access link, e.g. 1Mbit (a DSL uplink), 512kbit, 100Mbit; 0: unlimited (the default — no bandwidth model). A peer's messages queue behind one another on its uplink: a message of n bytes takes n·8/up to send (serialization delay), one copy per receiver (no multicast). Both drivers. docs/FAULTS.md, Bandwidth."),
	rateField("link.bandwidth.down", func(s *Scenario) *bandwidth.Rate { return &s.Link.Bandwidth.Down }, "8Mbit",
		"Download capacity of every peer's access link, e.g. 8Mbit; 0: unlimited. Messages reaching a peer queue behind one another on its downlink."),
	rateField("link.bandwidth.link", func(s *Scenario) *bandwidth.Rate { return &s.Link.Bandwidth.Link }, "2Mbit",
		"Cap of every (sender, receiver) link on top of the access links, e.g. 2Mbit (a congested path); 0: none."),
	sizeField("link.bandwidth.queue", func(s *Scenario) *bandwidth.Size { return &s.Link.Bandwidth.Queue }, "64KB",
		"Most bytes an access-link queue (a peer's uplink or downlink) holds, the message being sent included, e.g. 64KB (KB: 1000 bytes, KiB: 1024); a message that would exceed it is dropped and counted (summary faults.bandwidth.dropped_*). 0: no limit."),
}

// rateField is a bandwidth.Rate written as a rate (1Mbit); example is a
// valid non-default value for messages.
func rateField(key string, p func(*Scenario) *bandwidth.Rate, example, doc string) field {
	return unitField(key, p, bandwidth.ParseRate, bandwidth.RateSyntax, "rate", example, doc)
}

// sizeField is a bandwidth.Size written as a size (64KB).
func sizeField(key string, p func(*Scenario) *bandwidth.Size, example, doc string) field {
	return unitField(key, p, bandwidth.ParseSize, bandwidth.SizeSyntax, "size", example, doc)
}

// unitField is a non-negative quantity written with its unit (a rate, a
// size), read by parse; want says how to write one, what names it in
// messages.
func unitField[T interface {
	~int64
	String() string
}](key string, p func(*Scenario) *T, parse func(string) (T, error), want, what, example, doc string) field {
	return field{
		key: key, doc: doc, want: want,
		reset: func(s *Scenario) { *p(s) = 0 },
		decode: func(s *Scenario, n *yaml.Node) string {
			v, err := parse(n.Value)
			if err != nil {
				_, name := splitKey(key)
				return err.Error() + ", e.g. " + name + ": " + example
			}
			*p(s) = v
			return ""
		},
		encode: func(s *Scenario) *yaml.Node { return strNode((*p(s)).String()) },
		check: func(s *Scenario) string {
			if *p(s) < 0 {
				return fmt.Sprintf("a negative %s — write %s", what, want)
			}
			return ""
		},
	}
}

const bandwidthClassesKey = "link.bandwidth.classes"

const bandwidthClassesDoc = "Access links drawn over the peers, instead of link.bandwidth.up and .down: a list of classes, each {fraction, up, down} — the share of the peers (by a hash of the seed and the peer's id) with that upload and download capacity (0 or left out: unlimited); the fractions add up to 1. E.g. [{fraction: 0.7, up: 1Mbit, down: 8Mbit}, {fraction: 0.3, up: 20Mbit, down: 100Mbit}]. Not settable with --set."

const bandwidthClassesExample = "classes: [{fraction: 0.7, up: 1Mbit, down: 8Mbit}, {fraction: 0.3, up: 20Mbit, down: 100Mbit}]"

// bandwidthClasses reads link.bandwidth.classes.
func (p *parser) bandwidthClasses(s *Scenario, v *yaml.Node) {
	p.pos[bandwidthClassesKey] = v
	s.Link.Bandwidth.Classes = nil
	if isNull(v) {
		return
	}
	bad := func(n *yaml.Node, msg string) {
		if !strings.Contains(msg, " — ") {
			msg += " — write a list of classes, e.g. " + bandwidthClassesExample
		}
		p.add(n, bandwidthClassesKey, msg)
		p.failed[bandwidthClassesKey] = true
		s.Link.Bandwidth.Classes = nil
	}
	if v.Kind != yaml.SequenceNode {
		bad(v, fmt.Sprintf("found %s where the list of classes belongs", kindName(v)))
		return
	}
	var classes []bandwidth.Class
	for i, c := range v.Content {
		c = deref(c)
		if c.Kind != yaml.MappingNode {
			bad(c, fmt.Sprintf("class %d: found %s where a class {fraction, up, down} belongs", i, kindName(c)))
			return
		}
		var k bandwidth.Class
		seen := map[string]bool{}
		for j := 0; j+1 < len(c.Content); j += 2 {
			name, val := c.Content[j].Value, deref(c.Content[j+1])
			if seen[name] {
				bad(c.Content[j], fmt.Sprintf("class %d: %s is given twice — write it once", i, name))
				return
			}
			seen[name] = true
			if val.Kind != yaml.ScalarNode || isNull(val) {
				bad(val, fmt.Sprintf("class %d: %s: found %s where a single value belongs", i, name, kindName(val)))
				return
			}
			var err error
			switch name {
			case "fraction":
				k.Fraction, err = strconv.ParseFloat(val.Value, 64)
				if err != nil || !(k.Fraction > 0 && k.Fraction <= 1) {
					bad(val, fmt.Sprintf("class %d: fraction %s is not a share of the peers — write a number above 0 and at most 1, e.g. 0.5", i, show(val)))
					return
				}
			case "up":
				k.Up, err = bandwidth.ParseRate(val.Value)
			case "down":
				k.Down, err = bandwidth.ParseRate(val.Value)
			default:
				msg := fmt.Sprintf("class %d: unknown key %q — write fraction, up and down", i, name)
				if m := closest(name, []string{"fraction", "up", "down"}); m != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", m)
				}
				bad(c.Content[j], msg)
				return
			}
			if err != nil {
				bad(val, fmt.Sprintf("class %d: %s: %v", i, name, err))
				return
			}
		}
		if !seen["fraction"] {
			bad(c, fmt.Sprintf("class %d has no fraction — write the share of the peers with this access link, e.g. fraction: 0.5", i))
			return
		}
		classes = append(classes, k)
	}
	s.Link.Bandwidth.Classes = classes
}

// checkBandwidth checks the classes against each other and against up and
// down.
func (p *parser) checkBandwidth(s *Scenario) {
	b := s.Link.Bandwidth
	if len(b.Classes) == 0 || p.failed[bandwidthClassesKey] {
		return
	}
	at := p.pos[bandwidthClassesKey]
	if b.Up != 0 || b.Down != 0 {
		p.add(at, bandwidthClassesKey, "link.bandwidth.classes replaces link.bandwidth.up and .down — write either the classes or up and down, not both")
		return
	}
	if err := (bandwidth.Config{Classes: b.Classes}).Validate(); err != nil {
		p.add(at, bandwidthClassesKey, strings.TrimPrefix(err.Error(), "bandwidth: "))
	}
}

// bandwidthClassesNode renders the classes for the effective-scenario dump.
func bandwidthClassesNode(classes []bandwidth.Class) *yaml.Node {
	out := &yaml.Node{Kind: yaml.SequenceNode}
	if len(classes) == 0 {
		out.Style = yaml.FlowStyle
	}
	for _, k := range classes {
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		m.Content = append(m.Content,
			plainNode("fraction"), plainNode(fmtFloat(k.Fraction)),
			plainNode("up"), strNode(k.Up.String()),
			plainNode("down"), strNode(k.Down.String()))
		out.Content = append(out.Content, m)
	}
	return out
}
