package geo

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// The packed PlanetLab format, in which the slices of the embedded data
// set are stored (geo/data/planetlab/sliceNN.bin.gz, written by
// cmd/gendata with EncodePlanetLab). After gzip:
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
// pairs, e.g. 5.5064 ms) are listed as exceptions, with the code of the
// value rounded down to 0.1 ms in the planes. The matrix is symmetric with
// a zero diagonal, so only the upper triangle is stored. The writer
// (EncodePlanetLab) and the readers (DecodePlanetLab, and decodePlanetLab
// for the embedded slices) below are the format's only definition.
const (
	plMagic   = "OWPL"
	plVersion = 1
)

// plCode maps µs on the five-significant-digit grid to a dense code; ok is
// false for values off the grid (or too large for 24 bits).
func plCode(u int64) (code uint32, ok bool) {
	switch {
	case u < 0:
		return 0, false
	case u < 100_000:
		return uint32(u), true
	case u < 1_000_000:
		return uint32(100_000 + (u-100_000)/10), u%10 == 0
	default:
		c := 190_000 + (u-1_000_000)/100
		return uint32(c), u%100 == 0 && c < 1<<24
	}
}

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

// plCodes returns the codes of m's upper triangle and its exception list
// (index, value in 0.1 µs pairs, encoded), checking that m can be packed:
// square, exactly symmetric, zero diagonal, every value exact on the µs
// grid or in 0.1 µs.
func plCodes(m *Matrix) (codes []uint32, exc []byte, err error) {
	n := m.Rows()
	if !m.Square() || !m.Symmetric(0) {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab needs an exactly symmetric square matrix", ErrShape)
	}
	if n > math.MaxUint16 {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab holds at most %d hosts, not %d", ErrShape, math.MaxUint16, n)
	}
	for i := range n {
		if m.At(i, i) != 0 {
			return nil, nil, fmt.Errorf("%w: packed PlanetLab: diagonal entry %d is %v, want 0", ErrShape, i, m.At(i, i))
		}
	}
	codes = make([]uint32, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			v := m.At(i, j)
			u := int64(math.Round(v * 1000))
			c, ok := plCode(u)
			if ok && float64(plMicros(c))/1000 != v {
				ok = false
			}
			if !ok {
				// Off the grid: store exactly in 0.1 µs units, and a
				// rounded code so that deltas stay small.
				tu := math.Round(v * 10000)
				if !(tu >= 0 && tu <= math.MaxUint32) || float64(uint32(tu))/10000 != v {
					return nil, nil, fmt.Errorf("%w: packed PlanetLab: entry (%d,%d) = %v cannot be stored exactly", ErrInvalidLatency, i, j, v)
				}
				c, _ = plCode(u - u%100)
				exc = binary.BigEndian.AppendUint32(exc, uint32(len(codes)))
				exc = binary.BigEndian.AppendUint32(exc, uint32(tu))
			}
			codes = append(codes, c)
		}
	}
	return codes, exc, nil
}

// EncodePlanetLab packs m, a square matrix that is exactly symmetric with
// a zero diagonal, in the gzipped format the embedded PlanetLab slices are
// stored in. base is nil for the first slice of a data set; for a later
// slice it is the first slice, and m is stored as deltas against it (it
// must have as many hosts). Host names are not stored: DecodePlanetLab
// names hosts PlanetLabName(i). It also returns the number of entries off
// the µs grid, stored as exceptions. It fails, storing nothing, if a value
// is negative, NaN or cannot be stored exactly, or if a delta against base
// does not fit 24 bits.
func EncodePlanetLab(m, base *Matrix) (packed []byte, offGrid int, err error) {
	codes, exc, err := plCodes(m)
	if err != nil {
		return nil, 0, err
	}
	n := m.Rows()
	kind := byte(0)
	vals := codes
	if base != nil {
		if base.Rows() != n {
			return nil, 0, fmt.Errorf("%w: packed PlanetLab: %d hosts against a base of %d", ErrShape, n, base.Rows())
		}
		baseCodes, _, err := plCodes(base)
		if err != nil {
			return nil, 0, fmt.Errorf("base: %w", err)
		}
		kind = 1
		vals = make([]uint32, len(codes))
		for k := range codes {
			d := int32(codes[k]) - int32(baseCodes[k])
			z := uint32(d<<1) ^ uint32(d>>31) // zigzag
			if z >= 1<<24 {
				return nil, 0, fmt.Errorf("%w: packed PlanetLab: delta %d at %d does not fit 24 bits", ErrShape, d, k)
			}
			vals[k] = z
		}
	}
	raw := []byte(plMagic)
	raw = append(raw, plVersion, kind)
	raw = binary.BigEndian.AppendUint16(raw, uint16(n))
	for shift := 16; shift >= 0; shift -= 8 {
		for _, v := range vals {
			raw = append(raw, byte(v>>shift))
		}
	}
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(exc)/8))
	raw = append(raw, exc...)
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, 0, err
	}
	if _, err := w.Write(raw); err != nil {
		return nil, 0, err
	}
	if err := w.Close(); err != nil {
		return nil, 0, err
	}
	return b.Bytes(), len(exc) / 8, nil
}

// DecodePlanetLab reads a slice packed by EncodePlanetLab; base is the
// first slice of the data set when the slice was packed against it, else
// nil (an absolute slice ignores it). Hosts are named PlanetLabName(i).
// Corrupt or truncated input is an error wrapping ErrSyntax or ErrShape.
func DecodePlanetLab(packed []byte, base *Matrix) (*Matrix, error) {
	var baseCodes []uint32
	if base != nil {
		var err error
		if baseCodes, _, err = plCodes(base); err != nil {
			return nil, fmt.Errorf("base: %w", err)
		}
	}
	m, _, err := decodePlanetLab(packed, baseCodes)
	return m, err
}

// decodePlanetLab decodes a packed slice against the codes of the first
// slice (nil for an absolute slice) and returns the matrix and its codes.
func decodePlanetLab(gz []byte, base []uint32) (*Matrix, []uint32, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab slice: %v", ErrSyntax, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab slice: %v", ErrSyntax, err)
	}
	if len(raw) < 8 || string(raw[:4]) != plMagic || raw[4] != plVersion {
		return nil, nil, fmt.Errorf("%w: not a packed PlanetLab slice", ErrSyntax)
	}
	kind, n := raw[5], int(binary.BigEndian.Uint16(raw[6:8]))
	t := n * (n - 1) / 2
	raw = raw[8:]
	if kind > 1 {
		return nil, nil, fmt.Errorf("%w: packed PlanetLab slice of unknown kind %d", ErrSyntax, kind)
	}
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
