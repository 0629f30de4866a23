package geo

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/binary"
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

// The packed PlanetLab format (written by cmd/gendata). After gzip:
//
//	"OWPL" | version=1 | kind (0 absolute, 1 delta vs slice 1) | n uint16 BE
//	3 byte planes of T = n(n-1)/2 24-bit values (high byte plane first):
//	    the upper triangle (i < j, row-major) as codes, or as zigzag deltas
//	    code(slice) - code(slice 1)
//	nexc uint32 BE, then nexc × (index uint32 BE, value uint32 BE in 0.1 µs)
//
// A code is a monotone index of the value's grid: the source values have
// five significant digits, so in µs (u) they lie on a grid of 1 µs below
// 100 ms, 10 µs below 1 s and 100 µs above; code(u) numbers that grid
// densely so that deltas are small. The rare values off the µs grid (two
// pairs, e.g. 5.5064 ms) are listed as exceptions. The matrix is symmetric
// with a zero diagonal, so only the upper triangle is stored.
const (
	plMagic   = "OWPL"
	plVersion = 1
)

// plMicros converts a grid code back to µs.
func plMicros(code uint32) uint32 {
	switch {
	case code < 100_000:
		return code
	case code < 190_000:
		return 100_000 + (code-100_000)*10
	default:
		return 1_000_000 + (code-190_000)*100
	}
}

func decodePlanetLab(gz []byte, base []uint32) (*Matrix, []uint32, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, nil, err
	}
	if len(raw) < 8 || string(raw[:4]) != plMagic || raw[4] != plVersion {
		return nil, nil, fmt.Errorf("%w: not a packed PlanetLab slice", ErrSyntax)
	}
	kind, n := raw[5], int(binary.BigEndian.Uint16(raw[6:8]))
	t := n * (n - 1) / 2
	raw = raw[8:]
	if len(raw) < 3*t+4 {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab slice truncated", ErrSyntax)
	}
	if kind == 1 && len(base) != t {
		return nil, nil, fmt.Errorf("%w: delta slice of %d entries against a base of %d", ErrShape, t, len(base))
	}
	hi, mid, lo := raw[:t], raw[t:2*t], raw[2*t:3*t]
	codes := make([]uint32, t)
	for k := range codes {
		v := uint32(hi[k])<<16 | uint32(mid[k])<<8 | uint32(lo[k])
		if kind == 1 {
			d := int32(v>>1) ^ -int32(v&1) // zigzag
			v = uint32(int32(base[k]) + d)
		}
		codes[k] = v
	}
	flat := make([]float64, n*n)
	k := 0
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			v := float64(plMicros(codes[k])) / 1000
			flat[i*n+j], flat[j*n+i] = v, v
			k++
		}
	}
	exc := raw[3*t:]
	nexc := int(binary.BigEndian.Uint32(exc))
	exc = exc[4:]
	if len(exc) != 8*nexc {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab slice: bad exception list", ErrSyntax)
	}
	for e := 0; e < nexc; e++ {
		idx := int(binary.BigEndian.Uint32(exc[8*e:]))
		v := float64(binary.BigEndian.Uint32(exc[8*e+4:])) / 10000
		if idx >= t {
			return nil, nil, fmt.Errorf("%w: packed PlanetLab slice: exception index %d out of range", ErrSyntax, idx)
		}
		i, j := triangleIndex(n, idx)
		flat[i*n+j], flat[j*n+i] = v, v
	}
	names := make([]string, n)
	for i := range names {
		names[i] = PlanetLabName(i)
	}
	m, err := newMatrixOwned(names, names, flat)
	return m, codes, err
}

// triangleIndex inverts the row-major numbering of the upper triangle
// (i < j) of an n×n matrix.
func triangleIndex(n, k int) (i, j int) {
	for i = 0; k >= n-1-i; i++ {
		k -= n - 1 - i
	}
	return i, i + 1 + k
}
