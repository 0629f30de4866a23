package geo

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// SameSiteDelay is the one-way delay between two nodes at one site (and
// from a node to itself): one LAN hop in a data centre, 0.5 ms. Both
// drivers use it: the simulator's default same-site delay and the live
// mesh's latency emulation between two nodes in one city.
const SameSiteDelay = 500 * time.Microsecond

// MaxRTTMs is the largest RTT a Sites table accepts: one hour, far above any
// real measurement (the embedded data's largest is 7.9 s), so delays in ns
// never overflow.
const MaxRTTMs = 3_600_000

// ErrSites reports a latency table New cannot use: a bad shape, a bad entry,
// a duplicate name or a pair that cannot be filled in.
var ErrSites = errors.New("geo: bad site latency table")

// Sites is an emulated WAN's latency table: named sites (a PlanetLab host, a
// WonderNetwork city, a data centre) and the one-way delay between every
// ordered pair. Nodes are placed at sites; two nodes at one site talk over
// a same-site delay (SameSiteDelay unless the driver is configured
// otherwise). A Sites is immutable and may be shared by several simulators
// and goroutines.
//
// The one-way delay from site i to site j is half the RTT measured from i
// to j. The two directions are not symmetrized (call Matrix.Symmetrize first
// for that). Missing measurements are filled in when the table is built, as
// SiteFill describes; the table itself is complete.
type Sites struct {
	names  []string
	index  map[string]int
	oneWay []int64 // n×n row-major, ns
	fill   SiteFill
}

// SiteFill says how a Sites table was completed. An entry (i, j), i ≠ j, is
// missing when it is NaN or 0 (a 0 ms RTT between two distinct sites is not a
// measurement). A missing entry is filled, in this order of preference:
//
//  1. from the reverse direction (j, i), if that was measured: RTTs are
//     nearly symmetric, so this is the best estimate available;
//  2. otherwise by the shortest two-leg detour through a third site k with
//     both legs measured (directly or by reverse): min over k of
//     rtt(i,k) + rtt(k,j). By the triangle inequality this bounds the direct
//     path from above, and Internet routes are close to it on average;
//  3. otherwise the table is rejected with an error naming the pair.
type SiteFill struct {
	Measured int // off-diagonal ordered pairs measured
	Reverse  int // filled from the reverse direction
	Detour   int // filled by the shortest two-leg detour
}

// Filled returns the number of ordered pairs that were filled in.
func (f SiteFill) Filled() int { return f.Reverse + f.Detour }

// NewSites builds a latency table from site names and RTTs in ms:
// rttMs[i][j] is the RTT measured from names[i] to names[j]. NaN and 0 off
// the diagonal mean "not measured" and are filled in (see SiteFill); the
// diagonal must be 0 or NaN (a site's own delay is the same-site delay).
// It rejects an empty table, ragged rows, empty or duplicate names,
// negative or infinite entries or ones above MaxRTTMs, and pairs that
// cannot be filled, each with an error naming the position. The data is
// copied.
func NewSites(names []string, rttMs [][]float64) (*Sites, error) {
	n := len(names)
	if n == 0 {
		return nil, fmt.Errorf("%w: no sites", ErrSites)
	}
	if len(rttMs) != n {
		return nil, fmt.Errorf("%w: %d names for %d rows", ErrSites, n, len(rttMs))
	}
	s := &Sites{names: append([]string(nil), names...), index: make(map[string]int, n)}
	for i, name := range names {
		if name == "" {
			return nil, fmt.Errorf("%w: site %d has an empty name", ErrSites, i)
		}
		if j, dup := s.index[name]; dup {
			return nil, fmt.Errorf("%w: site name %q at %d and %d", ErrSites, name, j, i)
		}
		s.index[name] = i
	}
	rtt := make([]float64, n*n) // NaN = missing
	for i, row := range rttMs {
		if len(row) != n {
			return nil, fmt.Errorf("%w: row %d (%q) has %d entries, want %d", ErrSites, i, names[i], len(row), n)
		}
		for j, v := range row {
			switch {
			case math.IsInf(v, 0) || v < 0 || v > MaxRTTMs:
				return nil, fmt.Errorf("%w: RTT from %q to %q is %g ms (want 0 to %g ms, or NaN for not measured)", ErrSites, names[i], names[j], v, float64(MaxRTTMs))
			case i == j:
				if v != 0 && !math.IsNaN(v) {
					return nil, fmt.Errorf("%w: diagonal entry %d (%q) is %g ms, want 0", ErrSites, i, names[i], v)
				}
				rtt[i*n+j] = 0
			case v == 0 || math.IsNaN(v):
				rtt[i*n+j] = math.NaN()
			default:
				rtt[i*n+j] = v
				s.fill.Measured++
			}
		}
	}
	if err := s.complete(rtt); err != nil {
		return nil, err
	}
	return s, nil
}

// SitesFromMatrix builds a latency table from a square Matrix of RTTs in
// ms (PlanetLab slices, WonderNetwork cities, a CSV file), its row names
// naming the sites. A Matrix holds no NaN, so its missing entries are the
// zeros off the diagonal; they are filled in as SiteFill describes.
func SitesFromMatrix(m *Matrix) (*Sites, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil matrix", ErrSites)
	}
	if !m.Square() {
		return nil, fmt.Errorf("%w: want a square matrix (the same endpoints as rows and columns), have %d×%d", ErrSites, m.Rows(), m.Cols())
	}
	rows := make([][]float64, m.Rows())
	for i := range rows {
		rows[i] = m.Row(i)
	}
	return NewSites(m.RowNames(), rows)
}

// PlanetLabSites returns the sites of one time slice (1..18) of the embedded
// PlanetLab data set: 490 hosts named "pl000".."pl489". The embedded slices
// are complete, so nothing is filled in.
func PlanetLabSites(slice int) (*Sites, error) {
	m, err := PlanetLab(slice)
	if err != nil {
		return nil, err
	}
	return SitesFromMatrix(m)
}

// WonderNetworkSites returns sites for the named WonderNetwork cities with
// the average RTT measured between them (a pair measured in one direction
// only uses that direction for both).
func WonderNetworkSites(cities []string) (*Sites, error) {
	ps, err := WonderNetwork()
	if err != nil {
		return nil, err
	}
	m, err := ps.Matrix(cities, SymUpper)
	if err != nil {
		return nil, err
	}
	return SitesFromMatrix(m)
}

// complete fills the NaN entries of rtt (see SiteFill) and stores half of each
// RTT as the one-way delay.
func (s *Sites) complete(rtt []float64) error {
	n := len(s.names)
	// Pass 1: reverse direction, from measured values only.
	filled := append([]float64(nil), rtt...)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if math.IsNaN(rtt[i*n+j]) && !math.IsNaN(rtt[j*n+i]) {
				filled[i*n+j] = rtt[j*n+i]
				s.fill.Reverse++
			}
		}
	}
	// Pass 2: two-leg detours over pass-1 values (measured or reversed),
	// so that the result does not depend on the order pairs are filled in.
	known := append([]float64(nil), filled...)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if !math.IsNaN(known[i*n+j]) {
				continue
			}
			best := math.Inf(1)
			for k := 0; k < n; k++ {
				if k == i || k == j {
					continue
				}
				if d := known[i*n+k] + known[k*n+j]; d < best { // NaN compares false
					best = d
				}
			}
			if math.IsInf(best, 1) {
				return fmt.Errorf("%w: no RTT from %q to %q: neither direction is measured and no third site has both legs", ErrSites, s.names[i], s.names[j])
			}
			filled[i*n+j] = best
			s.fill.Detour++
		}
	}
	s.oneWay = make([]int64, n*n)
	for k, v := range filled {
		s.oneWay[k] = int64(math.Round(v * 1e6 / 2)) // ms RTT → ns one way
	}
	return nil
}

// Len returns the number of sites.
func (s *Sites) Len() int { return len(s.names) }

// Name returns the name of site i.
func (s *Sites) Name(i int) string { return s.names[i] }

// Index returns the index of the named site.
func (s *Sites) Index(name string) (int, bool) { i, ok := s.index[name]; return i, ok }

// OneWay returns the one-way delay from site i to site j (half the RTT;
// zero for i == j, where the same-site delay applies instead).
func (s *Sites) OneWay(i, j int) time.Duration { return time.Duration(s.oneWay[i*len(s.names)+j]) }

// Fill reports how the table was completed.
func (s *Sites) Fill() SiteFill { return s.fill }
