package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gridbed/gridbed/faults/link"
)

// Fault is one entry of the fault timeline: at emulated time At, one thing
// goes wrong (or is repaired). In a scenario file:
//
//	faults:
//	  - at: 10m
//	    partition: {fraction: 0.3}
//	  - at: 15m
//	    heal: {}
//	  - at: 20m
//	    latency: {dist: exponential, mean: 500ms}
//	  - at: 25m
//	    crash: {fraction: 0.2}
//	  - at: 30m
//	    bus_restart: {down_for: 5s}
type Fault struct {
	At   time.Duration
	Kind string // one of FaultKinds
	Line int    // line in the scenario file, 0 if none
	// source is the faults file (--faults) the entry was read from; ""
	// for the scenario's own file. Messages name it with Line.
	source string
	// When, instead of At, names a protocol event (TriggerEvents): the
	// fault happens at the first oracle sample at which Count such events
	// (summed over all peers) have happened. At is then that sample's time.
	When  string
	Count uint64

	// partition: the peers on one side — a fraction of all addresses (by a
	// hash of the seed, the entry and the address), a region, or explicit
	// peers — are cut off from the rest; OneWay cuts only their messages to
	// the rest. heal: Name, or every partition when empty.
	Name     string
	Fraction float64
	Region   int // -1: none
	Peers    []uint64
	OneWay   bool
	// partition, flap: From and To, instead of a side, are two sets of
	// peers: the links from a peer in From to a peer in To (and, unless
	// OneWay, back) are cut, or flap.
	From, To []uint64

	// flap: the chosen links — a Fraction of all links (by a hash of the
	// seed, the entry and the link), the links of Peers, or From → To —
	// go down and up for Length (then they are up for good): up for a
	// sample of mean Up, down for a sample of mean Down, drawn from
	// Latency.Dist, each link on its own seeded schedule.
	Up, Down, Length time.Duration

	// latency: the link's new delay distribution.
	Latency Latency
	// loss, duplicate: the link's new probability.
	P float64
	// crash: Fraction of the members, or every member of Region; with
	// RestartAfter > 0 as many new peers join at the crashed peers' points
	// that much later (crash-restart: state lost, new node ids).
	RestartAfter time.Duration
	// bus_restart: the bus is down for DownFor (the embedded NATS server
	// stops and starts again; in the deterministic driver every message
	// sent meanwhile is lost).
	DownFor time.Duration
	// slow: Fraction of the peers (by a hash of the seed and the address:
	// a larger fraction keeps the slow peers of a smaller one) serve every
	// message they receive in Service, first come first served, from now
	// on; Service 0 makes every peer fast again.
	Service time.Duration
	// random: a seeded nemesis (faults/nemesis) that draws a timeline of
	// the other kinds from at to Random.Until; the run replaces the entry
	// with what it drew.
	Random *Random
}

// Random is a nemesis entry (faults: - {at: 5m, random: {...}}): from the
// entry's at until Until, faults of Kinds start as a Poisson process of
// Rate per emulated minute, each lasting about Duration, at most
// MaxConcurrent at once; the timeline is drawn from the run seed.
type Random struct {
	Kinds         []string
	Rate          float64 // faults per emulated minute
	MaxConcurrent int
	Duration      time.Duration // mean length of one fault
	Until         time.Duration // 0: three quarters of the run
}

// RandomKinds are the kinds a nemesis can draw.
var RandomKinds = []string{FaultPartition, FaultLoss, FaultLatency, FaultDuplicate, FaultCrash, FaultLeave, FaultBusRestart, FaultSlow, FaultFlap, FaultCorrupt}

// End is the emulated time until which nemesis r draws faults in a run
// of the given duration.
func (r *Random) End(duration time.Duration) time.Duration {
	if r.Until > 0 {
		return r.Until
	}
	return duration * 3 / 4
}

// Fault kinds.
const (
	FaultPartition  = "partition"
	FaultHeal       = "heal"
	FaultLatency    = "latency"
	FaultLoss       = "loss"
	FaultDuplicate  = "duplicate"
	FaultCrash      = "crash"
	FaultLeave      = "leave"
	FaultBusRestart = "bus_restart"
	FaultRandom     = "random"
	FaultSlow       = "slow"
	FaultFlap       = "flap"
	FaultCorrupt    = "corrupt"
)

// TriggerEvents are the protocol events a fault can wait for (when:): the
// names of overlay.events in the results, and job events (job_<event>,
// counted in runs with a workload).
var TriggerEvents = []string{"join_owned", "join_retry", "route_drop", "link_learned", "takeover", "leave_seen",
	"failure_detected", "broken_link_detected", "full_update_request", "zone_query", "orphan_claimed",
	"extra_yielded", "extra_handed", "probe", "zone_conflict", "rejoin", "hole_claimed",
	"job_submitted", "job_owned", "job_pushed", "job_queued", "job_started", "job_completed",
	"job_rematched", "job_adopted", "job_returned", "job_resubmitted", "job_failed"}

// FaultKinds lists the kinds a timeline entry can have.
var FaultKinds = []string{FaultPartition, FaultHeal, FaultLatency, FaultLoss, FaultDuplicate, FaultCrash, FaultLeave, FaultBusRestart, FaultSlow, FaultRandom, FaultFlap, FaultCorrupt}

// faultKeys are the valid keys inside each kind's mapping.
var faultKeys = map[string][]string{
	FaultPartition:  {"name", "fraction", "region", "peers", "from", "to", "oneway"},
	FaultHeal:       {"name"},
	FaultLatency:    {"dist", "mean", "jitter"},
	FaultLoss:       {"p"},
	FaultDuplicate:  {"p"},
	FaultCrash:      {"fraction", "region", "restart_after"},
	FaultLeave:      {"fraction", "region"},
	FaultBusRestart: {"down_for"},
	FaultSlow:       {"fraction", "delay"},
	FaultRandom:     {"kinds", "rate", "max_concurrent", "duration", "until"},
	FaultFlap:       {"name", "fraction", "peers", "from", "to", "oneway", "up", "down", "dist", "duration"},
	FaultCorrupt:    {"p"},
}

// faultExample shows a valid entry of each kind.
var faultExample = map[string]string{
	FaultPartition:  "partition: {fraction: 0.3}",
	FaultHeal:       "heal: {}",
	FaultLatency:    "latency: {dist: exponential, mean: 500ms}",
	FaultLoss:       "loss: {p: 0.1}",
	FaultDuplicate:  "duplicate: {p: 0.05}",
	FaultCrash:      "crash: {fraction: 0.2}",
	FaultLeave:      "leave: {fraction: 0.1}",
	FaultBusRestart: "bus_restart: {down_for: 5s}",
	FaultSlow:       "slow: {fraction: 0.2, delay: 50ms}",
	FaultRandom:     "random: {kinds: [partition, crash, loss], rate: 0.2, max_concurrent: 2, duration: 2m}",
	FaultFlap:       "flap: {fraction: 0.1, up: 60s, down: 10s, duration: 5m}",
	FaultCorrupt:    "corrupt: {p: 0.01}",
}

const faultsDoc = "Fault timeline: a list of entries, each with `at` (emulated time) or `when: {event: E, count: N}` (the first oracle sample by which N protocol events E happened, e.g. takeover) and one of partition {fraction | region | peers: [ids], oneway, name}, heal {name} (every partition without a name), latency {dist, mean, jitter}, loss {p}, duplicate {p}, crash {fraction | region, restart_after}, leave {fraction | region} (a graceful mass departure), bus_restart {down_for}, slow {fraction, delay} (that fraction of the peers serve each message they receive in delay; delay 0s: none), random {kinds, rate, max_concurrent, duration, until} (a seeded nemesis drawing faults of those kinds: docs/FAULTS.md), flap {fraction | peers | from + to, up, down, dist, duration, oneway, name} (links that go down and up), corrupt {p} (a share of the messages arrive with a changed byte and are rejected); a partition may also cut from: [ids] to: [ids] (oneway: only that way); e.g. `- {at: 10m, partition: {fraction: 0.3}}`. --set (and sweep's --vary) set one field of one entry, by index or by the name the entry carries: faults.0.at=6m, faults.cut.fraction=0.3."

// faults reads the top-level "faults" list.
func (p *parser) faults(s *Scenario, v *yaml.Node) {
	p.pos["faults"] = v
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.add(v, "faults", fmt.Sprintf("found %s where the fault timeline belongs — write a list of entries, one per line starting with \"- \", e.g. \"  - {at: 10m, %s}\"", kindName(v), faultExample[FaultPartition]))
		p.failed["faults"] = true
		return
	}
	for i, e := range v.Content {
		f, ok := p.fault(fmt.Sprintf("faults[%d]", i), deref(e))
		if !ok {
			p.failed["faults"] = true
			continue
		}
		s.Faults = append(s.Faults, f)
	}
}

// fault reads one timeline entry; key names it in messages.
func (p *parser) fault(key string, e *yaml.Node) (Fault, bool) {
	f := Fault{Region: -1, Line: e.Line}
	if e.Kind != yaml.MappingNode {
		p.add(e, key, fmt.Sprintf("found %s where a fault belongs — write a mapping with at and one fault, e.g. {at: 10m, %s}", kindName(e), faultExample[FaultPartition]))
		return f, false
	}
	ok, sawAt := true, false
	valid := append([]string{"at", "when"}, FaultKinds...)
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(e.Content); i += 2 {
		k, v := e.Content[i], deref(e.Content[i+1])
		name, named := p.mappingKey(k, key, "in a fault", valid, seen)
		if !named {
			ok = false
			continue
		}
		switch {
		case name == "when":
			if sawAt {
				p.add(k, key, "an entry has either at or when, not both — keep one, e.g. at: 10m or when: {event: takeover}")
				ok = false
			}
			sawAt = true
			ok = p.trigger(key+".when", &f, v) && ok
		case name == "at":
			if sawAt {
				p.add(k, key, "an entry has either at or when, not both — keep one, e.g. at: 10m or when: {event: takeover}")
				ok = false
			}
			sawAt = true
			d, msg := readDuration(v)
			if msg != "" {
				p.add(v, key+".at", msg)
				ok = false
			}
			f.At = d
		case faultKeys[name] != nil:
			if f.Kind != "" {
				p.add(k, key, fmt.Sprintf("one entry holds both %s and %s — write one fault per entry (two entries may have the same at)", f.Kind, name))
				ok = false
				continue
			}
			f.Kind = name
			ok = p.faultBody(key+"."+name, &f, v) && ok
		default:
			p.add(k, key, unknownIn(name, "in a fault", valid))
			ok = false
		}
	}
	if !sawAt {
		p.add(e, key, "the fault has no at — write when it happens, e.g. at: 10m (or when: {event: takeover} to wait for a protocol event)")
		ok = false
	}
	if f.Kind == "" && ok {
		p.add(e, key, "the entry names no fault — write one of "+strings.Join(FaultKinds, ", ")+", e.g. "+faultExample[FaultCrash])
		ok = false
	}
	return f, ok
}

// trigger reads a fault's when: {event: NAME, count: N}.
func (p *parser) trigger(key string, f *Fault, v *yaml.Node) bool {
	if v.Kind != yaml.MappingNode {
		p.add(v, key, fmt.Sprintf("found %s — write when: {event: takeover} (events: %s)", kindName(v), strings.Join(TriggerEvents, ", ")))
		return false
	}
	f.Count = 1
	ok := true
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, n := v.Content[i], deref(v.Content[i+1])
		name, named := p.mappingKey(k, key, "in when", []string{"event", "count"}, seen)
		if !named {
			ok = false
			continue
		}
		switch name {
		case "event":
			if n.Kind != yaml.ScalarNode || n.ShortTag() != strTag || !slices.Contains(TriggerEvents, n.Value) {
				msg := fmt.Sprintf("%s is not a protocol event", valueText(n))
				if m := closest(n.Value, TriggerEvents); m != "" && n.Kind == yaml.ScalarNode {
					msg += fmt.Sprintf(" — did you mean %q? Events: %s", m, strings.Join(TriggerEvents, ", "))
				} else {
					msg += " — write one of " + strings.Join(TriggerEvents, ", ")
				}
				p.add(n, key+".event", msg)
				ok = false
			}
			f.When = n.Value
		case "count":
			if n.Kind != yaml.ScalarNode || !wholeNumber(n) || n.Decode(&f.Count) != nil || f.Count == 0 {
				p.add(n, key+".count", fmt.Sprintf("%s is not a count — write a whole number from 1, e.g. count: 10", valueText(n)))
				ok = false
			}
		default:
			p.add(k, key, fmt.Sprintf("unknown key %q in when — write event (and optionally count), e.g. when: {event: takeover, count: 5}", name))
			ok = false
		}
	}
	if f.When == "" && ok {
		p.add(v, key, "when names no event — write e.g. when: {event: takeover}")
		ok = false
	}
	return ok
}

// faultBody reads the mapping under a fault's kind.
func (p *parser) faultBody(key string, f *Fault, v *yaml.Node) bool {
	switch {
	case isNull(v) && f.Kind == FaultHeal:
		return true
	case v.Kind != yaml.MappingNode:
		p.add(v, key, fmt.Sprintf("found %s — write a mapping, e.g. %s", kindName(v), faultExample[f.Kind]))
		return false
	}
	ok := true
	fail := func(n *yaml.Node, k, msg string) {
		p.add(n, key+"."+k, msg)
		ok = false
	}
	valid := faultKeys[f.Kind]
	if f.Kind == FaultRandom {
		f.Random = &Random{MaxConcurrent: 1, Duration: 2 * time.Minute}
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, n := v.Content[i], deref(v.Content[i+1])
		name, named := p.mappingKey(k, key, "in a "+f.Kind+" fault", valid, seen)
		if !named {
			ok = false
			continue
		}
		if !slices.Contains(valid, name) {
			fail(k, name, unknownIn(name, "in a "+f.Kind+" fault", valid))
			continue
		}
		var msg string
		switch name {
		case "name":
			if n.Kind != yaml.ScalarNode || isNull(n) {
				msg = fmt.Sprintf("found %s where a name belongs — write a name, e.g. name: west", kindName(n))
			}
			f.Name = n.Value
		case "fraction", "p":
			x, m := readFraction(n)
			msg = m
			if name == "p" {
				f.P = x
			} else {
				f.Fraction = x
			}
		case "region":
			var r int
			if !wholeNumber(n) || n.Decode(&r) != nil || r < 0 {
				msg = fmt.Sprintf("%s is not a region — write a region number from 0 to link.regions − 1, e.g. region: 0", valueText(n))
			}
			f.Region = r
		case "peers":
			f.Peers, msg = readPeers(name, n)
		case "from":
			f.From, msg = readPeers(name, n)
		case "to":
			f.To, msg = readPeers(name, n)
		case "up", "down":
			d, m := readDuration(n)
			if m == "" && d <= 0 {
				m = fmt.Sprintf("%s is not positive — write the mean length of a %s period, e.g. %s: 30s", fmtDuration(d), name, name)
			}
			msg = m
			if name == "up" {
				f.Up = d
			} else {
				f.Down = d
			}
		case "oneway":
			if n.ShortTag() != boolTag || n.Decode(&f.OneWay) != nil {
				msg = fmt.Sprintf("%s is not true or false — write oneway: true to cut only the side's messages to the rest", valueText(n))
			}
		case "dist":
			if !slices.Contains(link.Dists, n.Value) {
				msg = fmt.Sprintf("%s is not a delay distribution — write one of %s", valueText(n), strings.Join(link.Dists, ", "))
			}
			f.Latency.Dist = n.Value
		case "kinds":
			if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
				msg = fmt.Sprintf("found %s where the list of fault kinds belongs — write a list of %s, e.g. kinds: [partition, crash, loss]", kindName(n), strings.Join(RandomKinds, ", "))
				break
			}
			for _, x := range n.Content {
				x = deref(x)
				if x.Kind != yaml.ScalarNode || !slices.Contains(RandomKinds, x.Value) {
					msg = fmt.Sprintf("%s is not a kind the nemesis draws — write kinds from %s", valueText(x), strings.Join(RandomKinds, ", "))
					break
				}
				f.Random.Kinds = append(f.Random.Kinds, x.Value)
			}
		case "rate":
			if t := n.ShortTag(); (t != intTag && t != floatTag) || n.Decode(&f.Random.Rate) != nil || !(f.Random.Rate > 0 && f.Random.Rate <= 60) {
				msg = fmt.Sprintf("%s is not a rate — write faults per emulated minute, above 0 and at most 60, e.g. rate: 0.2 (one every 5 minutes on average)", valueText(n))
			}
		case "max_concurrent":
			if !wholeNumber(n) || n.Decode(&f.Random.MaxConcurrent) != nil || f.Random.MaxConcurrent < 1 || f.Random.MaxConcurrent > 100 {
				msg = fmt.Sprintf("%s is not a number of faults — write a whole number from 1 to 100, e.g. max_concurrent: 2", valueText(n))
			}
		case "duration", "until":
			d, m := readDuration(n)
			if m == "" && d <= 0 {
				m = fmt.Sprintf("%s is not positive — write a positive duration, e.g. 2m", fmtDuration(d))
			}
			msg = m
			if f.Kind == FaultFlap {
				f.Length = d
			} else if name == "duration" {
				f.Random.Duration = d
			} else {
				f.Random.Until = d
			}
		case "mean", "jitter", "restart_after", "down_for", "delay":
			d, m := readDuration(n)
			if m == "" && d < 0 {
				m = fmt.Sprintf("%s is negative — write 0s or a positive duration", fmtDuration(d))
			}
			msg = m
			switch name {
			case "mean":
				f.Latency.Mean = d
			case "jitter":
				f.Latency.Jitter = d
			case "restart_after":
				f.RestartAfter = d
			case "down_for":
				f.DownFor = d
			case "delay":
				f.Service = d
			}
		}
		if msg != "" {
			fail(n, name, msg)
		}
	}
	if f.Kind == FaultLatency && f.Latency.Dist == "" {
		f.Latency.Dist = "constant"
	}
	if f.Kind == FaultFlap && f.Latency.Dist == "" {
		f.Latency.Dist = "exponential"
	}
	return ok
}

// readPeers reads a list of peer ids under key name (peers, from, to).
func readPeers(name string, n *yaml.Node) ([]uint64, string) {
	switch {
	case n.Kind != yaml.SequenceNode:
		return nil, fmt.Sprintf("found %s where the list of peers belongs — write a list of peer ids, e.g. %s: [1, 2, 3]", kindName(n), name)
	case len(n.Content) == 0:
		return nil, fmt.Sprintf("the list of peers is empty — write at least one peer id, e.g. %s: [1, 2, 3]", name)
	}
	var ids []uint64
	for _, x := range n.Content {
		x = deref(x)
		var id uint64
		if x.Kind != yaml.ScalarNode || !wholeNumber(x) || x.Decode(&id) != nil || id == 0 {
			return nil, fmt.Sprintf("%s is not a peer id — write ids from 1 up, e.g. %s: [1, 2, 3]", valueText(x), name)
		}
		ids = append(ids, id)
	}
	return ids, ""
}

// unknownIn explains an unknown key name in a fault's mapping (in says
// where, e.g. "in a fault") whose valid keys are valid.
func unknownIn(name, in string, valid []string) string {
	msg := fmt.Sprintf("unknown key %q %s", name, in)
	if m := closest(name, valid); m != "" {
		return msg + fmt.Sprintf(" — did you mean %q? Valid keys: %s", m, strings.Join(valid, ", "))
	}
	return msg + " — write one of the valid keys: " + strings.Join(valid, ", ")
}

// valueText shows node n in a message: a scalar as show does, else its kind
// ("a list").
func valueText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		return show(n)
	}
	return kindName(n)
}

func readDuration(n *yaml.Node) (time.Duration, string) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return 0, fmt.Sprintf("found %s where a duration belongs — write a duration such as 10m or 90s", kindName(n))
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		msg := fmt.Sprintf("%s is not a duration — write Go duration syntax such as 10m, 90s or 1h30m", show(n))
		if n.ShortTag() == intTag || n.ShortTag() == floatTag {
			msg += fmt.Sprintf(" (a number needs a unit, e.g. %ss)", n.Value)
		}
		return 0, msg
	}
	return d, ""
}

func readFraction(n *yaml.Node) (float64, string) {
	var x float64
	if t := n.ShortTag(); (t != intTag && t != floatTag) || n.Decode(&x) != nil || !(x >= 0 && x <= 1) {
		return 0, fmt.Sprintf("%s is not a number from 0 to 1 — write e.g. 0.2", valueText(n))
	}
	return x, ""
}

// checkFaults validates the timeline against the rest of the scenario.
func checkFaults(s *Scenario) Errors {
	var errs Errors
	add := func(i int, f Fault, msg string) {
		src := s.Source
		if f.source != "" {
			src = f.source
		}
		errs = append(errs, &Error{Source: src, Line: f.Line, Key: fmt.Sprintf("faults[%d]", i), Msg: msg})
	}
	// Named heals must follow their partition in time: walk the timed
	// entries in time order (index i still names the entry as written).
	order := make([]int, len(s.Faults))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s.Faults[order[a]].At < s.Faults[order[b]].At })
	names := map[string]bool{}
	for _, i := range order {
		f := s.Faults[i]
		if !slices.Contains(FaultKinds, f.Kind) {
			add(i, f, fmt.Sprintf("unknown fault kind %q — write one of %s", f.Kind, strings.Join(FaultKinds, ", ")))
			continue
		}
		if f.When == "" && (f.At < 0 || f.At >= s.Duration) {
			add(i, f, fmt.Sprintf("at %s is not within the run (duration %s) — write a time from 0s to before %s", fmtDuration(f.At), fmtDuration(s.Duration), fmtDuration(s.Duration)))
		}
		if f.Region >= s.Link.Regions {
			fix := fmt.Sprintf("write a region from 0 to %d, or raise link.regions", s.Link.Regions-1)
			if s.Link.Regions == 1 {
				fix = fmt.Sprintf("set link.regions to at least %d to spread the peers over regions", f.Region+1)
			}
			add(i, f, fmt.Sprintf("region %d does not exist: link.regions is %d — %s", f.Region, s.Link.Regions, fix))
		}
		switch f.Kind {
		case FaultPartition:
			sides := 0
			if f.Fraction > 0 {
				sides++
			}
			if f.Region >= 0 {
				sides++
			}
			if len(f.Peers) > 0 {
				sides++
			}
			if len(f.From) > 0 || len(f.To) > 0 {
				sides++
				if len(f.From) == 0 || len(f.To) == 0 {
					add(i, f, "a cut between peer sets needs both from and to — e.g. partition: {from: [1, 2], to: [3], oneway: true}")
				}
			}
			if sides != 1 {
				add(i, f, "a partition needs exactly one of fraction (above 0), region or peers (or from and to) to say who is cut off — e.g. partition: {fraction: 0.3}")
			}
			if f.Fraction >= 1 {
				add(i, f, "a partition of fraction 1 cuts nobody off from anybody — write a fraction below 1, e.g. 0.3")
			}
			if f.Name != "" {
				names[f.Name] = true
			}
		case FaultHeal:
			if f.Name != "" && !names[f.Name] && f.When == "" {
				add(i, f, fmt.Sprintf("no earlier partition is named %q — name the partition (partition: {name: %s, ...}) or write heal: {} to heal all", f.Name, f.Name))
			}
		case FaultLeave:
			if (f.Fraction > 0) == (f.Region >= 0) {
				add(i, f, "a leave needs exactly one of fraction (above 0) or region — e.g. leave: {fraction: 0.1}")
			}
		case FaultCrash:
			if (f.Fraction > 0) == (f.Region >= 0) {
				add(i, f, "a crash needs exactly one of fraction (above 0) or region — e.g. crash: {fraction: 0.2}")
			}
			if f.When == "" && f.RestartAfter > 0 && f.At+f.RestartAfter >= s.Duration {
				add(i, f, fmt.Sprintf("the restart at %s is not within the run — shorten restart_after or lengthen duration", fmtDuration(f.At+f.RestartAfter)))
			}
		case FaultBusRestart:
			if f.DownFor <= 0 {
				add(i, f, "bus_restart needs a positive down_for — e.g. bus_restart: {down_for: 5s}")
			}
		case FaultSlow:
			if f.Service > 0 && f.Fraction <= 0 {
				add(i, f, "slow needs the fraction of the peers that are slow — e.g. slow: {fraction: 0.2, delay: 50ms} (delay: 0s makes every peer fast again)")
			}
		case FaultFlap:
			sets := 0
			if f.Fraction > 0 {
				sets++
			}
			if len(f.Peers) > 0 {
				sets++
			}
			if len(f.From) > 0 || len(f.To) > 0 {
				sets++
				if len(f.From) == 0 || len(f.To) == 0 {
					add(i, f, "flapping links between peer sets need both from and to — e.g. flap: {from: [1, 2], to: [3], up: 60s, down: 10s, duration: 5m}")
				}
			}
			if sets != 1 {
				add(i, f, "a flap needs exactly one of fraction (of the links, above 0), peers (their links), or from and to, to say which links flap — e.g. "+faultExample[FaultFlap])
			}
			if f.Up <= 0 || f.Down <= 0 || f.Length <= 0 {
				add(i, f, "a flap needs up and down (mean period lengths) and a duration — e.g. "+faultExample[FaultFlap])
			}
			if f.When == "" && f.Length > 0 && f.At+f.Length > s.Duration {
				add(i, f, fmt.Sprintf("the flapping would last until %s, after the run (duration %s) — shorten duration", fmtDuration(f.At+f.Length), fmtDuration(s.Duration)))
			}
			if f.Name != "" {
				names[f.Name] = true
			}
		case FaultRandom:
			r := f.Random
			switch {
			case f.When != "":
				add(i, f, "a random entry starts at a time, not on a protocol event — write at: 5m instead of when")
			case len(r.Kinds) == 0:
				add(i, f, "random needs kinds and a rate — e.g. "+faultExample[FaultRandom])
			case r.Rate <= 0:
				add(i, f, "random needs a rate (faults per emulated minute) — e.g. rate: 0.2")
			case r.End(s.Duration) <= f.At || r.End(s.Duration) > s.Duration:
				add(i, f, fmt.Sprintf("the nemesis would draw faults from %s until %s: until must be after at and within the run (duration %s) — write e.g. until: %s",
					fmtDuration(f.At), fmtDuration(r.End(s.Duration)), fmtDuration(s.Duration), fmtDuration((f.At+s.Duration)/2)))
			}
		}
	}
	return errs
}

// SortedFaults returns the timed part of the timeline (entries with at) in
// the order the faults happen (by at, then as written).
func (s Scenario) SortedFaults() []Fault {
	var out []Fault
	for _, f := range s.Faults {
		if f.When == "" {
			out = append(out, f)
		}
	}
	out = append(out, s.Departures.faults(s.Duration)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// TriggeredFaults returns the entries that wait for a protocol event, as
// written.
func (s Scenario) TriggeredFaults() []Fault {
	var out []Fault
	for _, f := range s.Faults {
		if f.When != "" {
			out = append(out, f)
		}
	}
	return out
}

// faultsNode renders the timeline for the effective-scenario dump.
func faultsNode(fs []Fault) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	if len(fs) == 0 {
		seq.Style = yaml.FlowStyle // faults: []
	}
	for _, f := range fs {
		body := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		kv := func(k string, v *yaml.Node) {
			body.Content = append(body.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
		}
		if f.Name != "" {
			kv("name", strNode(f.Name))
		}
		peers := func(k string, ids []uint64) {
			if len(ids) == 0 {
				return
			}
			ps := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, id := range ids {
				ps.Content = append(ps.Content, plainNode(strconv.FormatUint(id, 10)))
			}
			kv(k, ps)
		}
		switch f.Kind {
		case FaultFlap:
			if f.Fraction > 0 {
				kv("fraction", plainNode(fmtFloat(f.Fraction)))
			}
			peers("peers", f.Peers)
			peers("from", f.From)
			peers("to", f.To)
			if f.OneWay {
				kv("oneway", plainNode("true"))
			}
			kv("up", strNode(fmtDuration(f.Up)))
			kv("down", strNode(fmtDuration(f.Down)))
			kv("dist", strNode(f.Latency.Dist))
			kv("duration", strNode(fmtDuration(f.Length)))
		case FaultCorrupt:
			kv("p", plainNode(fmtFloat(f.P)))
		case FaultPartition, FaultCrash, FaultLeave:
			if f.Fraction > 0 {
				kv("fraction", plainNode(fmtFloat(f.Fraction)))
			}
			if f.Region >= 0 {
				kv("region", plainNode(strconv.Itoa(f.Region)))
			}
			peers("peers", f.Peers)
			peers("from", f.From)
			peers("to", f.To)
			if f.OneWay {
				kv("oneway", plainNode("true"))
			}
			if f.RestartAfter > 0 {
				kv("restart_after", strNode(fmtDuration(f.RestartAfter)))
			}
		case FaultLatency:
			kv("dist", strNode(f.Latency.Dist))
			kv("mean", strNode(fmtDuration(f.Latency.Mean)))
			kv("jitter", strNode(fmtDuration(f.Latency.Jitter)))
		case FaultLoss, FaultDuplicate:
			kv("p", plainNode(fmtFloat(f.P)))
		case FaultSlow:
			kv("fraction", plainNode(fmtFloat(f.Fraction)))
			kv("delay", strNode(fmtDuration(f.Service)))
		case FaultBusRestart:
			kv("down_for", strNode(fmtDuration(f.DownFor)))
		case FaultRandom:
			ks := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, k := range f.Random.Kinds {
				ks.Content = append(ks.Content, strNode(k))
			}
			kv("kinds", ks)
			kv("rate", plainNode(fmtFloat(f.Random.Rate)))
			kv("max_concurrent", plainNode(strconv.Itoa(f.Random.MaxConcurrent)))
			kv("duration", strNode(fmtDuration(f.Random.Duration)))
			if f.Random.Until > 0 {
				kv("until", strNode(fmtDuration(f.Random.Until)))
			}
		}
		entry := &yaml.Node{Kind: yaml.MappingNode}
		if f.When != "" {
			when := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			when.Content = append(when.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Value: "event"}, strNode(f.When),
				&yaml.Node{Kind: yaml.ScalarNode, Value: "count"}, plainNode(strconv.FormatUint(f.Count, 10)))
			entry.Content = append(entry.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "when"}, when)
		} else {
			entry.Content = append(entry.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "at"}, strNode(fmtDuration(f.At)))
		}
		entry.Content = append(entry.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.Kind}, body)
		seq.Content = append(seq.Content, entry)
	}
	return seq
}

const regionLatencyDoc = "Region-pair latency matrix: link.regions rows of link.regions mean extra delays, row i for messages from region i (the diagonal: within a region), drawn with link.inter_region.dist and .jitter; replaces link.inter_region.mean. E.g. [[0s, 80ms], [80ms, 0s]]. Not settable with --set."

// regionMatrix reads link.region_latency.
func (p *parser) regionMatrix(s *Scenario, v *yaml.Node) {
	const key = "link.region_latency"
	p.pos[key] = v
	if isNull(v) {
		return
	}
	bad := func(n *yaml.Node, msg string) {
		if !strings.Contains(msg, " — ") {
			msg += " — write one row per region, each a list of durations, e.g. region_latency: [[0s, 80ms], [80ms, 0s]]"
		}
		p.add(n, key, msg)
		p.failed[key] = true
		s.Link.RegionLatency = nil
	}
	if v.Kind != yaml.SequenceNode {
		bad(v, fmt.Sprintf("found %s where the matrix belongs", kindName(v)))
		return
	}
	for _, row := range v.Content {
		row = deref(row)
		if row.Kind != yaml.SequenceNode {
			bad(row, fmt.Sprintf("found %s where a row belongs", kindName(row)))
			return
		}
		var r []time.Duration
		for _, x := range row.Content {
			d, msg := readDuration(deref(x))
			if msg == "" && d < 0 {
				msg = fmt.Sprintf("%s is negative — write 0s or a positive duration, e.g. 80ms", fmtDuration(d))
			}
			if msg != "" {
				bad(x, msg)
				return
			}
			r = append(r, d)
		}
		s.Link.RegionLatency = append(s.Link.RegionLatency, r)
	}
}

// checkRegionMatrix checks the matrix's shape against link.regions.
func (p *parser) checkRegionMatrix(s *Scenario) {
	m := s.Link.RegionLatency
	if len(m) == 0 || p.failed["link.region_latency"] || p.failed["link.regions"] {
		return
	}
	n := s.Link.Regions
	ok := len(m) == n
	for _, row := range m {
		ok = ok && len(row) == n
	}
	if !ok {
		p.add(p.pos["link.region_latency"], "link.region_latency",
			fmt.Sprintf("the matrix must have link.regions (%d) rows of %d durations each — write one row per region, or change link.regions", n, n))
	}
}

// matrixNode renders the matrix for the effective-scenario dump.
func matrixNode(m [][]time.Duration) *yaml.Node {
	out := &yaml.Node{Kind: yaml.SequenceNode}
	if len(m) == 0 {
		out.Style = yaml.FlowStyle
	}
	for _, row := range m {
		r := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, d := range row {
			r.Content = append(r.Content, strNode(fmtDuration(d)))
		}
		out.Content = append(out.Content, r)
	}
	return out
}
