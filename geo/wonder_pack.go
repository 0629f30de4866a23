package geo

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
)

// The packed WonderNetwork RTT format, in which the RTT of the embedded
// data set is stored (geo/data/wondernetwork/rtt.bin.gz, written by
// cmd/gendata with EncodeWonderRTT). After gzip:
//
//	"OWWN" | version=1 | 3 reserved zero bytes | n uint16 BE
//	for avg, then for min: 3 byte planes (high byte plane first) of n×n
//	    24-bit values in row-major order, row = source city
//
// A value is 0 for a pair that was not measured, else 1 + the RTT in units
// of 0.01 ms (the published resolution). Cities are not stored: they are
// the city list the file is decoded with (cities.csv.gz for the embedded
// set), index i being city i. The writer (EncodeWonderRTT) and the reader
// (DecodeWonderRTT) below are the format's only definition.
const (
	wnMagic   = "OWWN"
	wnVersion = 1
	wnHeader  = 10 // magic, version, reserved, n
)

// EncodeWonderRTT packs the average and minimum RTT of s in the gzipped
// format the embedded WonderNetwork RTT is stored in. Only the measured
// pairs and their RTT are stored; DecodeWonderRTT needs s's cities, in the
// same order, to rebuild it. It fails, storing nothing, if s has more than
// 65,535 cities, or an RTT above 167,772.14 ms or not a whole number of
// 0.01 ms.
func EncodeWonderRTT(s *PingSet) ([]byte, error) {
	n := s.Len()
	if n > math.MaxUint16 {
		return nil, fmt.Errorf("%w: packed WonderNetwork RTT holds at most %d cities, not %d", ErrShape, math.MaxUint16, n)
	}
	raw := make([]byte, 0, wnHeader+6*n*n)
	raw = append(raw, wnMagic...)
	raw = append(raw, wnVersion, 0, 0, 0)
	raw = binary.BigEndian.AppendUint16(raw, uint16(n))
	vals := make([]uint32, n*n)
	for _, part := range []struct {
		name string
		get  func(i, j int) (float64, bool)
	}{{"avg", s.RTT}, {"min", s.MinRTT}} {
		clear(vals)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				v, ok := part.get(i, j)
				if !ok {
					continue
				}
				c := math.Round(v * 100)
				if !(c >= 0 && c+1 < 1<<24) || float64(uint32(c))/100 != v {
					return nil, fmt.Errorf("%w: packed WonderNetwork RTT: %s RTT %v ms from %q to %q is above %v ms or not a whole number of 0.01 ms",
						ErrInvalidLatency, part.name, v, s.City(i).Name, s.City(j).Name, float64(1<<24-2)/100)
				}
				vals[i*n+j] = uint32(c) + 1
			}
		}
		for shift := 16; shift >= 0; shift -= 8 {
			for _, v := range vals {
				raw = append(raw, byte(v>>shift))
			}
		}
	}
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeWonderRTT reads RTT packed by EncodeWonderRTT into a PingSet over
// cities, which must be the packed set's cities in the same order. Corrupt
// or truncated input is an error wrapping ErrSyntax; a city list of the
// wrong length is an error wrapping ErrShape.
func DecodeWonderRTT(packed []byte, cities []City) (*PingSet, error) {
	raw, err := gunzip(packed)
	if err != nil {
		return nil, fmt.Errorf("%w: packed WonderNetwork RTT file: %v", ErrSyntax, err)
	}
	if len(raw) < wnHeader || string(raw[:4]) != wnMagic || raw[4] != wnVersion {
		return nil, fmt.Errorf("%w: not a packed WonderNetwork RTT file", ErrSyntax)
	}
	n := int(binary.BigEndian.Uint16(raw[8:wnHeader]))
	if n != len(cities) {
		return nil, fmt.Errorf("%w: RTT file for %d cities, city list has %d", ErrShape, n, len(cities))
	}
	raw = raw[wnHeader:]
	if len(raw) != 6*n*n {
		return nil, fmt.Errorf("%w: packed WonderNetwork RTT file has %d bytes, want %d", ErrSyntax, len(raw), 6*n*n)
	}
	s, err := newPingSet(cities)
	if err != nil {
		return nil, err
	}
	for part, dst := range [][]float64{s.avg, s.min} {
		p := raw[part*3*n*n:]
		hi, mid, lo := p[:n*n], p[n*n:2*n*n], p[2*n*n:3*n*n]
		for k := range dst {
			v := uint32(hi[k])<<16 | uint32(mid[k])<<8 | uint32(lo[k])
			if v == 0 {
				continue
			}
			if k/n == k%n {
				return nil, fmt.Errorf("%w: packed WonderNetwork RTT file measures city %d to itself", ErrSyntax, k/n)
			}
			dst[k] = float64(v-1) / 100
		}
	}
	for k := range s.avg {
		if math.IsNaN(s.avg[k]) != math.IsNaN(s.min[k]) {
			return nil, fmt.Errorf("%w: packed WonderNetwork RTT file: avg and min disagree on pair %d", ErrSyntax, k)
		}
		if !math.IsNaN(s.avg[k]) {
			s.pairs++
		}
	}
	return s, nil
}
