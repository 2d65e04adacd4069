package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gridbed/gridbed/examples"
	"github.com/gridbed/gridbed/faults/link"
)

// loadLatencyMatrix reads link.latency_matrix (the CSV beside the
// scenario file, or in the working directory, or beside a built-in
// example) into Link.Matrix and sets link.regions from it; an error says
// where it looked or which line of the CSV is wrong.
func (p *parser) loadLatencyMatrix(s *Scenario) {
	const key = "link.latency_matrix"
	name := s.Link.LatencyMatrix
	s.Link.Matrix = nil
	if name == "" || p.failed[key] {
		return
	}
	data, where, err := readBeside(s.Source, name)
	if err != nil {
		p.add(p.pos[key], key, err.Error())
		return
	}
	m, err := link.ParseMatrix(data)
	if err != nil {
		p.add(p.pos[key], key, fmt.Sprintf("%s: %v", where, err))
		return
	}
	switch {
	case len(s.Link.RegionLatency) > 0:
		p.add(p.pos[key], key, "link.latency_matrix gives every pair of regions its delay: remove link.region_latency")
		return
	case s.Link.Regions != 1 && s.Link.Regions != len(m.Regions):
		p.add(p.pos[key], key, fmt.Sprintf("%s has %d regions and link.regions says %d: remove link.regions (the matrix sets it)", where, len(m.Regions), s.Link.Regions))
		return
	case s.Link.InterRegion.Mean != 0 || s.Link.InterRegion.Jitter != 0:
		p.add(p.pos[key], key, "link.latency_matrix gives the delays between regions: remove link.inter_region")
		return
	}
	s.Link.Matrix, s.Link.Regions = m, len(m.Regions)
}

// readBeside reads the file name a scenario from source names: beside the
// scenario file, then in the working directory, then — for a built-in
// example — from the examples built into gridbed. where is the path read.
func readBeside(source, name string) (data []byte, where string, err error) {
	var tried []string
	try := func(path string) bool {
		tried = append(tried, path)
		var rerr error
		data, rerr = os.ReadFile(path)
		if rerr == nil {
			where = path
			return true
		}
		if !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("cannot read %s: %v", path, rerr)
		}
		return false
	}
	if filepath.IsAbs(name) {
		if try(name) {
			return data, where, nil
		}
	} else {
		if source != "" && try(filepath.Join(filepath.Dir(source), name)) {
			return data, where, nil
		}
		if err == nil && try(name) {
			return data, where, nil
		}
		if b, ok := examples.ReadBeside(source, name); ok && err == nil {
			return b, filepath.Join(examples.Dir, name) + " (built in)", nil
		}
	}
	if err != nil {
		return nil, "", err
	}
	return nil, "", fmt.Errorf("no file %s (looked at %q) — write the path of a CSV latency matrix relative to the scenario file", name, tried)
}
