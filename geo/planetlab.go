package geo

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"strings"
	"sync"
)

// PlanetLabSlices is the number of time slices in the embedded PlanetLab
// data set; PlanetLab accepts slices 1..PlanetLabSlices.
const PlanetLabSlices = 18

// PlanetLabName returns the endpoint name ReadPlanetLab gives host i
// ("pl000", "pl001", …; the data set does not name its hosts).
func PlanetLabName(i int) string { return fmt.Sprintf("pl%03d", i) }

// ReadPlanetLab reads an all-pairs RTT matrix in the PlanetLab text format
// of Zhu et al.: n lines of n tab- or space-separated latencies in ms, entry
// (i, j) the RTT from host i to host j, diagonal zero. Hosts are named
// PlanetLabName(i). It rejects ragged rows, a non-square matrix, fields that
// are not numbers, NaN, infinities, negative entries and a non-zero diagonal,
// with an error naming the line and column. Blank lines are skipped. The
// matrix is kept as measured (it is not symmetrized).
func ReadPlanetLab(r io.Reader) (*Matrix, error) {
	const format = "planetlab"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var flat []float64
	n, line := -1, 0
	rowsSeen := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if n < 0 {
			n = len(fields)
			flat = make([]float64, 0, n*n)
		}
		if len(fields) != n {
			return nil, &ParseError{Format: format, Line: line, Err: fmt.Errorf("%w: row has %d entries, first row has %d", ErrShape, len(fields), n)}
		}
		if rowsSeen == n {
			return nil, &ParseError{Format: format, Line: line, Err: fmt.Errorf("%w: more than %d rows for %d columns (not square)", ErrShape, n, n)}
		}
		for j, f := range fields {
			v, err := parseLatency(f)
			if err == nil && j == rowsSeen && v != 0 {
				err = fmt.Errorf("%w: diagonal entry is %g, want 0", ErrShape, v)
			}
			if err != nil {
				return nil, &ParseError{Format: format, Line: line, Column: j + 1, Err: err}
			}
			flat = append(flat, v)
		}
		rowsSeen++
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{Format: format, Line: line + 1, Err: err}
	}
	if n < 0 {
		return nil, &ParseError{Format: format, Err: fmt.Errorf("%w: no rows", ErrShape)}
	}
	if rowsSeen != n {
		return nil, &ParseError{Format: format, Line: line, Err: fmt.Errorf("%w: %d rows of %d columns (not square)", ErrShape, rowsSeen, n)}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = PlanetLabName(i)
	}
	return newMatrixOwned(names, names, flat)
}

//go:embed data/planetlab
var planetLabFS embed.FS

type plSlice struct {
	once  sync.Once
	m     *Matrix
	codes []uint32 // kept for slice 1 only: the base of the other slices' deltas
	err   error
}

var planetLabCache [PlanetLabSlices + 1]plSlice

// PlanetLab returns time slice 1..18 of the embedded PlanetLab data set
// (Zhu et al., IEEE/ACM ToN 2017; see geo/data/NOTICE.md): RTT in ms between
// 490 PlanetLab hosts named "pl000".."pl489". Each slice is exactly
// symmetric with a zero diagonal and no zero, missing or negative entry off
// the diagonal; values are exactly those of the published text files. A
// slice is decoded on first use (under 10 ms) and shared: the Matrix is immutable.
func PlanetLab(slice int) (*Matrix, error) {
	if slice < 1 || slice > PlanetLabSlices {
		return nil, fmt.Errorf("geo: PlanetLab slice %d out of range 1..%d", slice, PlanetLabSlices)
	}
	s, err := planetLabSlice(slice)
	if err != nil {
		return nil, err
	}
	return s.m, nil
}

func planetLabSlice(slice int) (*plSlice, error) {
	s := &planetLabCache[slice]
	s.once.Do(func() {
		var base []uint32
		if slice != 1 {
			b, err := planetLabSlice(1)
			if err != nil {
				s.err = err
				return
			}
			base = b.codes
		}
		data, err := planetLabFS.ReadFile(fmt.Sprintf("data/planetlab/slice%02d.bin.gz", slice))
		if err != nil {
			s.err = fmt.Errorf("geo: PlanetLab slice %d: %w", slice, err)
			return
		}
		s.m, s.codes, s.err = decodePlanetLab(data, base)
		if s.err != nil {
			s.err = fmt.Errorf("geo: PlanetLab slice %d: %w", slice, s.err)
		}
		if slice != 1 {
			s.codes = nil
		}
	})
	return s, s.err
}
