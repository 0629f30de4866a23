package geo

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrMissingPair reports a pair of endpoints with no measurement in either
// direction.
var ErrMissingPair = errors.New("geo: pair not measured")

// header finds named columns (case-insensitive) in a CSV header row.
func header(format string, rec []string, required, optional []string) (map[string]int, error) {
	idx := make(map[string]int, len(rec))
	for i, h := range rec {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := idx[h]; dup && h != "" {
			return nil, &ParseError{Format: format, Line: 1, Column: i + 1, Field: h, Err: fmt.Errorf("%w: duplicate header %s", ErrSyntax, quoteField(rec[i]))}
		}
		idx[h] = i
	}
	out := make(map[string]int, len(required)+len(optional))
	for _, name := range required {
		alts := strings.Split(name, "|")
		found := false
		for _, a := range alts {
			if i, ok := idx[a]; ok {
				out[alts[0]], found = i, true
				break
			}
		}
		if !found {
			return nil, &ParseError{Format: format, Line: 1, Field: alts[0], Err: fmt.Errorf("%w: header has no %q column", ErrSyntax, alts[0])}
		}
	}
	for _, name := range optional {
		if i, ok := idx[name]; ok {
			out[name] = i
		}
	}
	return out, nil
}

// ReadWonderCities reads the WonderNetwork city list (wittgenstein's
// cities.csv): a header naming the columns city, lat, long (or lon) and
// population, in any order and case, optionally a country column, then one
// city per row. Names must be unique and non-empty; coordinates must be in
// range; population must be a non-negative integer. Errors name the line,
// column and field.
//
// Beware: the published 2018 cities.csv places 20 of its cities at the wrong
// place (an ambiguous name resolved to another country, such as Portland
// in Jamaica, or a country centroid). The embedded WonderNetwork data set
// carries coordinates re-derived from the measurements' own distance column.
func ReadWonderCities(r io.Reader) ([]City, error) {
	var out []City
	seen := map[string]int{}
	err := readTable(r, "wondernetwork cities", []string{"city", "lat", "long|lon", "population"}, []string{"country"},
		func(line int, rec []string, col map[string]int, perr func(string, error) error) error {
			var err error
			c := City{Name: strings.TrimSpace(rec[col["city"]])}
			c.ASCIIName = c.Name
			if c.Name == "" {
				return perr("city", fmt.Errorf("%w: empty city name", ErrSyntax))
			}
			if prev, dup := seen[c.Name]; dup {
				return perr("city", fmt.Errorf("%w: city %s also on line %d", ErrDuplicateName, quoteField(c.Name), prev))
			}
			seen[c.Name] = line
			if i, ok := col["country"]; ok {
				c.Country = strings.TrimSpace(rec[i])
			}
			if c.Lat, err = parseDegrees(rec[col["lat"]], 90); err != nil {
				return perr("lat", err)
			}
			if c.Lon, err = parseDegrees(rec[col["long"]], 180); err != nil {
				return perr("long", err)
			}
			if c.Population, err = parsePopulation(rec[col["population"]]); err != nil {
				return perr("population", err)
			}
			out = append(out, c)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Ping is one row of a WonderNetwork ping file: the summary of the pings
// from the From city's server to one destination.
type Ping struct {
	From    string    // source city (the file's city)
	To      string    // destination as published: "<City> <Country>, <Continent>"
	Km      float64   // great-circle distance in km, as published (column "hidden")
	Avg     float64   // average RTT in ms ("hidden.1")
	Min     float64   // minimum RTT in ms ("hidden.3")
	Max     float64   // maximum RTT in ms ("hidden.4")
	Mdev    float64   // mean deviation of the RTT in ms ("hidden.5")
	Checked time.Time // when it was measured ("Last Checked", UTC); zero if absent
}

// wonderPingColumns maps the numeric header names of a ping file to the
// Ping fields they fill. The visible columns ("Average", "min", ...) repeat
// the same numbers with units ("336.80ms") and are ignored.
var wonderPingColumns = []struct {
	header string
	field  func(*Ping) *float64
}{
	{"hidden", func(p *Ping) *float64 { return &p.Km }},
	{"hidden.1", func(p *Ping) *float64 { return &p.Avg }},
	{"hidden.3", func(p *Ping) *float64 { return &p.Min }},
	{"hidden.4", func(p *Ping) *float64 { return &p.Max }},
	{"hidden.5", func(p *Ping) *float64 { return &p.Mdev }},
}

// ReadWonderPings reads one WonderNetwork ping file (Data/<City>/<City>Ping.csv
// in wittgenstein), whose pings were sent from the city source. The header
// must name the columns City, hidden (km), hidden.1 (avg ms), hidden.3 (min
// ms), hidden.4 (max ms) and hidden.5 (mdev ms); "Last Checked"
// ("2006-01-02 15:04:05", UTC) is optional. It rejects empty destinations,
// numbers that are missing, negative or not finite, and rows where min ≤
// avg ≤ max does not hold, with an error naming the line, column and field.
func ReadWonderPings(source string, r io.Reader) ([]Ping, error) {
	required := []string{"city"}
	for _, c := range wonderPingColumns {
		required = append(required, c.header)
	}
	var out []Ping
	err := readTable(r, "wondernetwork pings", required, []string{"last checked"},
		func(line int, rec []string, col map[string]int, perr func(string, error) error) error {
			p := Ping{From: source, To: strings.TrimSpace(rec[col["city"]])}
			if p.To == "" {
				return perr("city", fmt.Errorf("%w: empty destination", ErrSyntax))
			}
			for _, c := range wonderPingColumns {
				v, err := parseLatency(strings.TrimSpace(rec[col[c.header]]))
				if err != nil {
					return perr(c.header, err)
				}
				*c.field(&p) = v
			}
			if !(p.Min <= p.Avg && p.Avg <= p.Max) {
				return perr("hidden.1", fmt.Errorf("%w: avg %g ms outside [min %g, max %g]", ErrInvalidLatency, p.Avg, p.Min, p.Max))
			}
			if i, ok := col["last checked"]; ok && strings.TrimSpace(rec[i]) != "" {
				t, err := time.Parse(time.DateTime, strings.TrimSpace(rec[i]))
				if err != nil {
					return perr("last checked", fmt.Errorf("%w: %s is not a \"2006-01-02 15:04:05\" time", ErrSyntax, quoteField(rec[i])))
				}
				p.Checked = t
			}
			out = append(out, p)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readTable reads a CSV table whose header names the required columns
// (and possibly the optional ones; see header), then calls row for every
// data row with its line number, the column index by lower-case name and a
// function that makes a *ParseError for a field of that row. Rows must have
// as many fields as the header. The first error stops the reading.
func readTable(r io.Reader, format string, required, optional []string,
	row func(line int, rec []string, col map[string]int, perr func(field string, err error) error) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err == io.EOF {
		return &ParseError{Format: format, Err: fmt.Errorf("%w: empty input, want a header row", ErrSyntax)}
	}
	if err != nil {
		return csvError(format, err)
	}
	col, err := header(format, rec, required, optional)
	if err != nil {
		return err
	}
	ncols := len(rec)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(format, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != ncols {
			return &ParseError{Format: format, Line: line, Err: fmt.Errorf("%w: %d fields, header has %d", ErrSyntax, len(rec), ncols)}
		}
		perr := func(field string, err error) error {
			return &ParseError{Format: format, Line: line, Column: col[field] + 1, Field: field, Err: err}
		}
		if err := row(line, rec, col, perr); err != nil {
			return err
		}
	}
}

// PingSet holds WonderNetwork measurements: a list of cities and, for each
// directed pair (source, destination) that was measured, the average and
// minimum RTT in ms. A PingSet is immutable.
type PingSet struct {
	cities     []City
	index      map[string]int
	avg, min   []float64 // n×n row-major, source row; NaN where not measured
	pairs      int
	unresolved int
}

// NewPingSet builds a PingSet from cities and pings. Each ping's From must
// name one of the cities; its To is resolved to the city whose name is the
// longest prefix of To followed by a space (the published
// "<City> <Country>, <Continent>" form) or equal to To. Pings to a
// destination that is not in cities are skipped and counted by
// Unresolved; a ping from a city to itself or a second ping for the same
// directed pair is an error.
func NewPingSet(cities []City, pings []Ping) (*PingSet, error) {
	s, err := newPingSet(cities)
	if err != nil {
		return nil, err
	}
	byLen := make([]int, len(cities))
	for i := range byLen {
		byLen[i] = i
	}
	sort.SliceStable(byLen, func(a, b int) bool { return len(cities[byLen[a]].Name) > len(cities[byLen[b]].Name) })
	n := len(cities)
	for k, p := range pings {
		i, ok := s.index[p.From]
		if !ok {
			return nil, fmt.Errorf("%w: ping %d is from %q, which is not a city", ErrUnknownName, k, p.From)
		}
		j := -1
		for _, c := range byLen {
			name := cities[c].Name
			if p.To == name || strings.HasPrefix(p.To, name+" ") {
				j = c
				break
			}
		}
		if j < 0 {
			s.unresolved++
			continue
		}
		if i == j {
			return nil, fmt.Errorf("geo: ping %d from %q to itself (%q)", k, p.From, p.To)
		}
		if !math.IsNaN(s.avg[i*n+j]) {
			return nil, fmt.Errorf("%w: ping %d: second measurement from %q to %q", ErrDuplicateName, k, p.From, cities[j].Name)
		}
		if err := checkLatency(p.Avg); err != nil {
			return nil, fmt.Errorf("%w: ping %d avg", err, k)
		}
		if err := checkLatency(p.Min); err != nil {
			return nil, fmt.Errorf("%w: ping %d min", err, k)
		}
		s.avg[i*n+j], s.min[i*n+j] = p.Avg, p.Min
		s.pairs++
	}
	return s, nil
}

func newPingSet(cities []City) (*PingSet, error) {
	names := make([]string, len(cities))
	for i, c := range cities {
		names[i] = c.Name
	}
	idx, err := indexNames(names, "city")
	if err != nil {
		return nil, err
	}
	n := len(cities)
	s := &PingSet{cities: append([]City(nil), cities...), index: idx,
		avg: make([]float64, n*n), min: make([]float64, n*n)}
	for k := range s.avg {
		s.avg[k], s.min[k] = math.NaN(), math.NaN()
	}
	return s, nil
}

// Len returns the number of cities.
func (s *PingSet) Len() int { return len(s.cities) }

// Cities returns a copy of the cities; index i is city i everywhere.
func (s *PingSet) Cities() []City { return append([]City(nil), s.cities...) }

// City returns city i.
func (s *PingSet) City(i int) City { return s.cities[i] }

// CityIndex returns the index of the named city.
func (s *PingSet) CityIndex(name string) (int, bool) { i, ok := s.index[name]; return i, ok }

// RTT returns the average RTT in ms measured from city i to city j, and
// whether that direction was measured. It is false for i == j and for
// indices out of range.
func (s *PingSet) RTT(i, j int) (avg float64, ok bool) { return s.get(s.avg, i, j) }

// MinRTT returns the minimum RTT in ms measured from city i to city j, and
// whether that direction was measured.
func (s *PingSet) MinRTT(i, j int) (min float64, ok bool) { return s.get(s.min, i, j) }

func (s *PingSet) get(a []float64, i, j int) (float64, bool) {
	n := len(s.cities)
	if i < 0 || j < 0 || i >= n || j >= n {
		return 0, false
	}
	v := a[i*n+j]
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// PairRTT returns the average RTT in ms between cities i and j measured
// from i, or from j when i did not measure j, and whether either was
// measured.
func (s *PingSet) PairRTT(i, j int) (float64, bool) {
	if v, ok := s.RTT(i, j); ok {
		return v, true
	}
	return s.RTT(j, i)
}

// Pairs returns the number of measured directed pairs.
func (s *PingSet) Pairs() int { return s.pairs }

// Unresolved returns the number of pings NewPingSet skipped because their
// destination is not one of the cities.
func (s *PingSet) Unresolved() int { return s.unresolved }

// Matrix returns the complete, symmetric matrix of average RTT in ms over the
// named cities, in the given order. A pair measured in both directions is
// combined as sym says (SymUpper keeps the direction from the city named
// first); a pair measured in one direction uses that direction; a pair
// measured in neither is an ErrMissingPair error naming it.
func (s *PingSet) Matrix(names []string, sym Symmetrization) (*Matrix, error) {
	if err := sym.valid(); err != nil {
		return nil, err
	}
	idx := make([]int, len(names))
	for a, name := range names {
		i, ok := s.index[name]
		if !ok {
			return nil, fmt.Errorf("%w: city %q", ErrUnknownName, name)
		}
		idx[a] = i
	}
	k := len(names)
	flat := make([]float64, k*k)
	for a := 0; a < k; a++ {
		for b := a + 1; b < k; b++ {
			x, okx := s.RTT(idx[a], idx[b])
			y, oky := s.RTT(idx[b], idx[a])
			var v float64
			switch {
			case okx && oky:
				v = sym.combine(x, y)
			case okx:
				v = x
			case oky:
				v = y
			default:
				if idx[a] == idx[b] {
					return nil, fmt.Errorf("%w: city %q named twice", ErrDuplicateName, names[a])
				}
				return nil, fmt.Errorf("%w: %q and %q", ErrMissingPair, names[a], names[b])
			}
			flat[a*k+b], flat[b*k+a] = v, v
		}
	}
	rows := append([]string(nil), names...)
	return newMatrixOwned(rows, rows, flat)
}

//go:embed data/wondernetwork
var wonderFS embed.FS

var wonderCache struct {
	once sync.Once
	set  *PingSet
	err  error
}

// WonderNetwork returns the embedded WonderNetwork data set: RTT between
// WonderNetwork servers in 242 cities, measured by WonderNetwork in
// November 2018 and compiled by ConsenSys in wittgenstein (Apache-2.0; see
// geo/data/NOTICE.md). Of the 242×241 = 58,322 directed pairs, 57,807 are
// measured: 28,664 unordered pairs in both directions, 479 in one direction
// only, 18 in neither. Pings to six destinations that are not sources
// (Carlow, Edmonton, Guadalajara, Guatemala, Siauliai, Zagreb) are not kept.
// Coordinates are WonderNetwork's server locations as re-derived from the
// published distances (they differ from wittgenstein's cities.csv for 20
// cities; Westpoort, missing there, is included with population 0).
// The PingSet is decoded once and shared.
func WonderNetwork() (*PingSet, error) {
	c := &wonderCache
	c.once.Do(func() {
		c.set, c.err = loadWonder()
		if c.err != nil {
			c.err = fmt.Errorf("geo: embedded WonderNetwork: %w", c.err)
		}
	})
	return c.set, c.err
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func loadWonder() (*PingSet, error) {
	cz, err := wonderFS.ReadFile("data/wondernetwork/cities.csv.gz")
	if err != nil {
		return nil, err
	}
	cb, err := gunzip(cz)
	if err != nil {
		return nil, err
	}
	cities, err := ReadWonderCities(bytes.NewReader(cb))
	if err != nil {
		return nil, err
	}
	rz, err := wonderFS.ReadFile("data/wondernetwork/rtt.bin.gz")
	if err != nil {
		return nil, err
	}
	return DecodeWonderRTT(rz, cities)
}
