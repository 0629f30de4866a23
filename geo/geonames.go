package geo

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// geoNamesColumns is the column count of a GeoNames dump; the fields used
// are 1 name, 2 asciiname, 4 latitude, 5 longitude, 8 country code and
// 14 population (0-based).
const geoNamesColumns = 19

var geoNamesFields = map[int]string{1: "name", 2: "asciiname", 4: "latitude", 5: "longitude", 8: "country code", 14: "population"}

// ReadGeoNames reads cities from a GeoNames dump (cities1000.txt,
// cities15000.txt, …): tab-separated lines of 19 columns, of which it keeps
// name, asciiname, latitude, longitude, country code and population. Other
// columns may be empty. Blank lines are skipped. It rejects a wrong column
// count, an empty name, a coordinate that is not a number or out of range
// and a population that is not a non-negative integer, with an error naming
// the line, column and field.
func ReadGeoNames(r io.Reader) ([]City, error) {
	const format = "geonames"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []City
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if text == "" {
			continue
		}
		f := strings.Split(text, "\t")
		perr := func(col int, err error) error {
			return &ParseError{Format: format, Line: line, Column: col + 1, Field: geoNamesFields[col], Err: err}
		}
		if len(f) != geoNamesColumns {
			return nil, &ParseError{Format: format, Line: line, Err: fmt.Errorf("%w: %d tab-separated fields, want %d", ErrSyntax, len(f), geoNamesColumns)}
		}
		c := City{Name: f[1], ASCIIName: f[2], Country: f[8]}
		if c.Name == "" {
			return nil, perr(1, fmt.Errorf("%w: empty name", ErrSyntax))
		}
		if c.ASCIIName == "" {
			c.ASCIIName = c.Name
		}
		var err error
		if c.Lat, err = parseDegrees(f[4], 90); err != nil {
			return nil, perr(4, err)
		}
		if c.Lon, err = parseDegrees(f[5], 180); err != nil {
			return nil, perr(5, err)
		}
		if c.Population, err = parsePopulation(f[14]); err != nil {
			return nil, perr(14, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{Format: format, Line: line + 1, Err: err}
	}
	return out, nil
}

func parseDegrees(s string, limit float64) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is not a number", ErrSyntax, quoteField(s))
	}
	if !(v >= -limit && v <= limit) {
		return 0, fmt.Errorf("%w: %s is outside [-%g, %g] degrees", ErrSyntax, quoteField(s), limit, limit)
	}
	return v, nil
}

func parsePopulation(s string) (int, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < 0 || v > 1<<40 {
		return 0, fmt.Errorf("%w: population %s is not a non-negative integer", ErrSyntax, quoteField(s))
	}
	return int(v), nil
}

//go:embed data/geonames/cities100000.txt.gz
var geoNamesGz []byte

var geoNamesCache struct {
	once   sync.Once
	cities []City
	err    error
}

// GeoNamesCities returns the embedded GeoNames extract: the 4,410 cities
// of at least 100,000 inhabitants in the GeoNames dump of May 2018 (CC BY
// 4.0, GeoNames; see geo/data/NOTICE.md), in the source's order. The
// result is a fresh copy the caller may modify.
func GeoNamesCities() ([]City, error) {
	c := &geoNamesCache
	c.once.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(geoNamesGz))
		if err != nil {
			c.err = fmt.Errorf("geo: embedded GeoNames: %w", err)
			return
		}
		c.cities, c.err = ReadGeoNames(zr)
	})
	if c.err != nil {
		return nil, c.err
	}
	return append([]City(nil), c.cities...), nil
}
