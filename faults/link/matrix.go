package link

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Matrix is a measured latency matrix between named regions, as a CSV
// file gives it (ParseMatrix): the one-way delay from each region to each
// (its own included) as a median and a jitter, and each region's weight —
// the share of the peers placed in it. A message from region i to region
// j is delayed by Median[i][j] plus a uniform offset in ±Jitter[i][j]
// (Latency{Dist: "constant"}, on top of link.latency).
type Matrix struct {
	Regions []string
	Weights []float64
	Median  [][]time.Duration
	Jitter  [][]time.Duration
}

// Latencies is the matrix as the delay layer takes it
// (Delay.SetRegionMatrix).
func (m *Matrix) Latencies() [][]Latency {
	out := make([][]Latency, len(m.Regions))
	for i := range m.Regions {
		out[i] = make([]Latency, len(m.Regions))
		for j := range m.Regions {
			out[i][j] = Latency{Dist: "constant", Mean: m.Median[i][j], Jitter: m.Jitter[i][j]}
		}
	}
	return out
}

// matrixHeader is the columns a matrix file starts with (weight is
// optional).
var matrixHeader = []string{"from", "to", "median_ms", "jitter_ms"}

// maxMatrixRegions bounds a matrix file's regions (and so its rows), as link.regions.
const maxMatrixRegions = 64

// ParseMatrix reads a latency matrix in CSV: lines starting with # are
// comments (the file's source and date go there); the first other line is
// the header `from,to,median_ms,jitter_ms` with an optional fifth column
// `weight`; then one row per ordered pair of regions, each region's own
// pair included: the one-way delay's median and jitter in milliseconds
// (non-negative, jitter at most the median), and, on a region's own row
// only, its weight (positive; 1 when empty). Regions are named by their
// first appearance. Every pair must be given exactly once. Errors name the
// line and what to write instead; it never panics.
func ParseMatrix(data []byte) (*Matrix, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("no header: write `from,to,median_ms,jitter_ms` (and optionally `,weight`) as the first line that is not a # comment")
	}
	if err != nil {
		return nil, fmt.Errorf("the header: %w", err)
	}
	weighted := len(header) == 5 && strings.TrimSpace(header[4]) == "weight"
	if len(header) < 4 || len(header) > 5 || (len(header) == 5 && !weighted) || !equalFold(header[:4], matrixHeader) {
		line, _ := r.FieldPos(0)
		return nil, fmt.Errorf("line %d: header %q: write `from,to,median_ms,jitter_ms` (and optionally `,weight`)", line, strings.Join(header, ","))
	}
	type pair struct{ from, to int }
	index := map[string]int{}
	m := &Matrix{}
	region := func(name string) (int, error) {
		if i, ok := index[name]; ok {
			return i, nil
		}
		if len(m.Regions) == maxMatrixRegions {
			return 0, fmt.Errorf("more than %d regions", maxMatrixRegions)
		}
		index[name] = len(m.Regions)
		m.Regions = append(m.Regions, name)
		m.Weights = append(m.Weights, 0)
		return len(m.Regions) - 1, nil
	}
	type entry struct {
		median, jitter time.Duration
		line           int
	}
	seen := map[pair]entry{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err // a csv.ParseError names its line
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d as the header says (from,to,median_ms,jitter_ms%s)", line, len(rec), len(header), map[bool]string{true: ",weight"}[weighted])
		}
		from, to := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if from == "" || to == "" {
			return nil, fmt.Errorf("line %d: a region name is empty: write both the from and the to region", line)
		}
		i, err := region(from)
		if err == nil {
			var j int
			j, err = region(to)
			if err == nil {
				p := pair{i, j}
				if e, dup := seen[p]; dup {
					return nil, fmt.Errorf("line %d: %s → %s is given again (first on line %d): give each pair once", line, from, to, e.line)
				}
				var e entry
				e.line = line
				if e.median, err = millis(rec[2]); err != nil {
					return nil, fmt.Errorf("line %d: median_ms %q: %w", line, rec[2], err)
				}
				if e.jitter, err = millis(rec[3]); err != nil {
					return nil, fmt.Errorf("line %d: jitter_ms %q: %w", line, rec[3], err)
				}
				if e.jitter > e.median {
					return nil, fmt.Errorf("line %d: jitter_ms %s is above median_ms %s: a delay would go below zero — write a jitter at most the median", line, rec[3], rec[2])
				}
				seen[p] = e
				if weighted {
					w := strings.TrimSpace(rec[4])
					switch {
					case w != "" && i != j:
						return nil, fmt.Errorf("line %d: a weight on %s → %s: weights go on a region's own row (%s → %s)", line, from, to, from, from)
					case w != "":
						x, perr := strconv.ParseFloat(w, 64)
						if perr != nil || !(x > 0) || math.IsInf(x, 0) {
							return nil, fmt.Errorf("line %d: weight %q: write a positive number (the share of the peers placed in %s, relative to the others)", line, w, from)
						}
						m.Weights[i] = x
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	n := len(m.Regions)
	if n == 0 {
		return nil, errors.New("no rows: give one row per ordered pair of regions, e.g. `a,a,1,0.1` `a,b,40,2` `b,a,40,2` `b,b,1,0.1`")
	}
	m.Median, m.Jitter = make([][]time.Duration, n), make([][]time.Duration, n)
	for i := range n {
		m.Median[i], m.Jitter[i] = make([]time.Duration, n), make([]time.Duration, n)
		for j := range n {
			e, ok := seen[pair{i, j}]
			if !ok {
				return nil, fmt.Errorf("no row for %s → %s: every ordered pair of the %d regions needs one (%d rows), a region's own pair included", m.Regions[i], m.Regions[j], n, n*n)
			}
			m.Median[i][j], m.Jitter[i][j] = e.median, e.jitter
		}
		if m.Weights[i] == 0 {
			m.Weights[i] = 1
		}
	}
	return m, nil
}

// millis reads a non-negative number of milliseconds, up to an hour.
func millis(s string) (time.Duration, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > float64(time.Hour/time.Millisecond) {
		return 0, errors.New("write a number of milliseconds from 0 to 3600000, e.g. 41.5")
	}
	return time.Duration(math.Round(x * float64(time.Millisecond))), nil
}

func equalFold(a, b []string) bool {
	for i := range a {
		if !strings.EqualFold(strings.TrimSpace(a[i]), b[i]) {
			return false
		}
	}
	return true
}

// Pick returns the region a uniform u in [0, 1) falls in, regions taking
// shares of [0, 1) in proportion to their weights.
func (m *Matrix) Pick(u float64) int {
	total := 0.0
	for _, w := range m.Weights {
		total += w
	}
	x := u * total
	for i, w := range m.Weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(m.Weights) - 1
}
