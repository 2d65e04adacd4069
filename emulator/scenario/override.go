package scenario

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FaultsOverride is a fault timeline kept apart from the scenario it was
// made for: `gridbed run BASE --faults FILE` runs BASE with FILE's
// timeline in place of its own. gridbed chaos writes one per failing seed
// (the faults left after shrinking), and a person can write one to try a
// timeline on several scenarios. In a file:
//
//	base: examples/nemesis.yaml   # the scenario it was made for (optional)
//	seed: 16                      # the seed it fails with (optional)
//	faults:
//	  - {at: 17m58s, crash: {fraction: 0.16, restart_after: 1m54s}}
type FaultsOverride struct {
	Source string // the file, for messages
	// Base names the scenario file the timeline was made for; only a note
	// (a run says when BASE is another file).
	Base string
	// Seed, when set, is the run's seed too: who a fault hits is drawn
	// from it, so a timeline found failing replays only with its seed.
	Seed    uint64
	HasSeed bool
	Faults  []Fault
}

// overrideKeys are the keys of a faults file.
var overrideKeys = []string{"base", "seed", "faults"}

// LoadFaults reads a faults file (ParseFaults).
func LoadFaults(path string) (FaultsOverride, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return FaultsOverride{}, fmt.Errorf("--faults %s: %w", path, err)
	}
	return ParseFaults(path, data)
}

// ParseFaults reads a faults file strictly: the keys base, seed and
// faults (required; its entries read as a scenario's), each problem with
// the file's line and what to write instead. The timeline is checked
// against a scenario only when applied (Apply, then Validate).
func ParseFaults(source string, data []byte) (FaultsOverride, error) {
	o := FaultsOverride{Source: source}
	p := newParser(source)
	root := p.document(data)
	var s Scenario
	sawFaults := false
	if root != nil {
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], deref(root.Content[i+1])
			name, ok := p.mappingKey(k, "", "in a faults file", overrideKeys, seen)
			if !ok {
				continue
			}
			switch name {
			case "base":
				if v.Kind != yaml.ScalarNode || isNull(v) {
					p.add(v, "base", fmt.Sprintf("found %s where the base scenario's file name belongs — write e.g. base: examples/nemesis.yaml", kindName(v)))
				}
				o.Base = v.Value
			case "seed":
				if v.Kind != yaml.ScalarNode || !wholeNumber(v) || v.Decode(&o.Seed) != nil {
					p.add(v, "seed", fmt.Sprintf("%s is not a seed — write a whole number from 0 to 18446744073709551615, e.g. seed: 16", valueText(v)))
				}
				o.HasSeed = true
			case "faults":
				sawFaults = true
				p.faults(&s, v)
			default:
				msg := fmt.Sprintf("unknown key %q in a faults file, which holds only the fault timeline (and the base and seed it was found with)", name)
				if c := closest(name, overrideKeys); c != "" {
					msg += fmt.Sprintf(" — did you mean %q?", c)
				} else {
					msg += fmt.Sprintf(" — set other keys in the scenario file or with --set %s=…", name)
				}
				p.add(k, name, msg)
			}
		}
	}
	if !sawFaults && p.tree && len(p.errs) == 0 {
		p.add(root, "faults", "the file has no faults: list — write the timeline that replaces the scenario's, e.g.\nfaults:\n  - {at: 10m, "+faultExample[FaultPartition]+"}\n(faults: [] runs without faults)")
	}
	if len(p.errs) > 0 {
		p.errs.sort()
		return FaultsOverride{}, p.errs
	}
	for i := range s.Faults {
		s.Faults[i].source = source
	}
	o.Faults = s.Faults
	return o, nil
}

// Apply replaces s's fault timeline with o's (and its seed with o's, when
// o has one). It does not validate: call Validate (or SetAll) afterwards,
// whose problems with an entry name o's file and line.
func (o FaultsOverride) Apply(s *Scenario) {
	s.Faults = append([]Fault(nil), o.Faults...)
	if o.HasSeed {
		s.Seed = o.Seed
	}
}

// FaultsYAML renders a faults file: the comment head (each line written
// as a YAML comment), base, the seed when hasSeed, and the timeline, which
// ParseFaults reads back to the same entries.
func FaultsYAML(head, base string, seed uint64, hasSeed bool, faults []Fault) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	if base != "" {
		root.Content = append(root.Content, plainNode("base"), strNode(base))
	}
	if hasSeed {
		root.Content = append(root.Content, plainNode("seed"), plainNode(strconv.FormatUint(seed, 10)))
	}
	root.Content = append(root.Content, plainNode("faults"), faultsNode(faults))
	return encodeDocument(strings.TrimRight(head, "\n"), root)
}
