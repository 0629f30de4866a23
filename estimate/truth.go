package estimate

import (
	"fmt"
	"math"

	"github.com/overworld/overworld/geo"
)

// Pair is a directed pair of endpoints.
type Pair struct{ From, To int }

// Truth is an all-pairs RTT matrix used as the network a measurement
// process probes and as the reference estimates are scored against. Unlike
// a geo.Matrix it may have holes: a pair whose value is missing is never
// sampled by a probe (the probe is lost) and is left out of accuracy
// figures, and Missing reports every such pair, so a hole is never read as
// 0 ms.
type Truth struct {
	names   []string
	n       int
	rtt     []float64 // n×n row-major, NaN where missing, 0 on the diagonal
	missing []Pair
	lat     []float64 // positions in degrees (WithPositions), nil when unknown
	lon     []float64
}

// NewTruth builds a Truth from names and n rows of n RTTs in ms. Entries
// off the diagonal that are NaN, infinite, negative or 0 are missing (a
// real RTT between two hosts is never exactly 0: the data sets use 0 for
// "not measured"); the diagonal is ignored. Ragged rows, a non-square
// shape, fewer than 2 endpoints and duplicate names are errors.
func NewTruth(names []string, rows [][]float64) (*Truth, error) {
	n := len(names)
	if n < 2 {
		return nil, fmt.Errorf("%w: %d endpoints, want at least 2", ErrShape, n)
	}
	if len(rows) != n {
		return nil, fmt.Errorf("%w: %d names for %d rows", ErrShape, n, len(rows))
	}
	seen := make(map[string]int, n)
	for i, s := range names {
		if j, dup := seen[s]; dup {
			return nil, fmt.Errorf("%w: name %q at %d and %d", ErrShape, s, j, i)
		}
		seen[s] = i
	}
	t := &Truth{names: append([]string(nil), names...), n: n, rtt: make([]float64, n*n)}
	for i, r := range rows {
		if len(r) != n {
			return nil, fmt.Errorf("%w: row %d (%q) has %d entries, want %d", ErrShape, i, names[i], len(r), n)
		}
		for j, v := range r {
			switch {
			case i == j:
				v = 0
			case math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
				v = math.NaN()
				t.missing = append(t.missing, Pair{i, j})
			}
			t.rtt[i*n+j] = v
		}
	}
	return t, nil
}

// TruthFromMatrix builds a Truth from a square geo.Matrix; zeros off the
// diagonal are missing pairs (a geo.Matrix cannot hold NaN or negative
// values, so 0 is how a hole shows there).
func TruthFromMatrix(m *geo.Matrix) (*Truth, error) {
	if m == nil || !m.Square() {
		return nil, fmt.Errorf("%w: need a square matrix (the same endpoints as rows and columns)", ErrShape)
	}
	rows := make([][]float64, m.Rows())
	for i := range rows {
		rows[i] = m.Row(i)
	}
	return NewTruth(m.RowNames(), rows)
}

// Len returns the number of endpoints.
func (t *Truth) Len() int { return t.n }

// Names returns a copy of the endpoint names.
func (t *Truth) Names() []string { return append([]string(nil), t.names...) }

// Name returns endpoint i's name.
func (t *Truth) Name(i int) string { return t.names[i] }

// RTT returns the directed RTT from i to j and whether it was measured.
func (t *Truth) RTT(i, j int) (float64, bool) {
	v := t.rtt[i*t.n+j]
	return v, !math.IsNaN(v)
}

// Value returns the RTT of the unordered pair {i, j}: the mean of the two
// directions when both are present, the one present otherwise, and false
// when neither is.
func (t *Truth) Value(i, j int) (float64, bool) {
	a, okA := t.RTT(i, j)
	b, okB := t.RTT(j, i)
	switch {
	case okA && okB:
		return (a + b) / 2, true
	case okA:
		return a, true
	case okB:
		return b, true
	}
	return 0, false
}

// WithPositions returns a copy of t that also knows where every endpoint
// is (degrees, north and east positive: a site table, GeoIP): the side
// information of mf-geo. Lengths must match Len and coordinates be in
// range.
func (t *Truth) WithPositions(lat, lon []float64) (*Truth, error) {
	if len(lat) != t.n || len(lon) != t.n {
		return nil, fmt.Errorf("%w: %d latitudes and %d longitudes for %d endpoints", ErrShape, len(lat), len(lon), t.n)
	}
	for i := range t.n {
		if !(lat[i] >= -90 && lat[i] <= 90 && lon[i] >= -180 && lon[i] <= 180) {
			return nil, fmt.Errorf("%w: endpoint %d (%q) at (%g, %g), want latitude in [-90, 90] and longitude in [-180, 180]", ErrConfig, i, t.names[i], lat[i], lon[i])
		}
	}
	u := *t
	u.lat, u.lon = append([]float64(nil), lat...), append([]float64(nil), lon...)
	return &u, nil
}

// Positions returns copies of the endpoints' latitudes and longitudes and
// true, or false when t has none (PlanetLab).
func (t *Truth) Positions() (lat, lon []float64, ok bool) {
	if t.lat == nil {
		return nil, nil, false
	}
	return append([]float64(nil), t.lat...), append([]float64(nil), t.lon...), true
}

// Missing returns the directed pairs with no value, in row-major order.
func (t *Truth) Missing() []Pair { return append([]Pair(nil), t.missing...) }

// Compatible reports whether u has the same endpoints in the same order as
// t (successive snapshots of one network).
func (t *Truth) Compatible(u *Truth) bool {
	if t.n != u.n {
		return false
	}
	for i := range t.names {
		if t.names[i] != u.names[i] {
			return false
		}
	}
	return true
}

// PlanetLab returns slice 1..18 of the embedded PlanetLab data set (490
// hosts) as a Truth.
func PlanetLab(slice int) (*Truth, error) {
	m, err := geo.PlanetLab(slice)
	if err != nil {
		return nil, err
	}
	return TruthFromMatrix(m)
}

// WonderNetwork returns the embedded WonderNetwork data set (geo.WonderNetwork:
// average RTT between servers in 242 cities, November 2018) as a Truth,
// endpoints named by city. A direction WonderNetwork did not measure is
// missing; Value then uses the other direction, and the 18 pairs measured
// in neither direction are left out of accuracy figures.
func WonderNetwork() (*Truth, error) {
	ps, err := geo.WonderNetwork()
	if err != nil {
		return nil, err
	}
	n := ps.Len()
	names := make([]string, n)
	rows := make([][]float64, n)
	lat, lon := make([]float64, n), make([]float64, n)
	for i := range n {
		names[i] = ps.City(i).Name
		lat[i], lon[i] = ps.City(i).Lat, ps.City(i).Lon
		rows[i] = make([]float64, n)
		for j := range n {
			if v, ok := ps.RTT(i, j); ok && i != j {
				rows[i][j] = v
			}
		}
	}
	t, err := NewTruth(names, rows)
	if err != nil {
		return nil, err
	}
	return t.WithPositions(lat, lon)
}
