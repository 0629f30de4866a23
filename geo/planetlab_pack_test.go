package geo

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestPlanetLabCodeIsMonotoneAndInvertible(t *testing.T) {
	prev := uint32(0)
	for _, u := range []int64{0, 1, 99_999, 100_000, 100_010, 999_990, 1_000_000, 1_000_100, 7_892_800} {
		c, ok := plCode(u)
		if !ok || int64(plMicros(c)) != u {
			t.Fatalf("µs %d: code %d ok %v back %d", u, c, ok, plMicros(c))
		}
		if u > 0 && c <= prev {
			t.Fatalf("code not increasing at %d", u)
		}
		prev = c
	}
	for _, u := range []int64{-1, 100_001, 1_000_010} {
		if _, ok := plCode(u); ok {
			t.Errorf("µs %d off the grid accepted", u)
		}
	}
}

// sameValues reports the first entry where a and b differ, bit for bit.
func sameValues(a, b *Matrix) error {
	if a.Rows() != b.Rows() || a.Cols() != b.Cols() {
		return fmt.Errorf("%d×%d, want %d×%d", a.Rows(), a.Cols(), b.Rows(), b.Cols())
	}
	for i := 0; i < a.Rows(); i++ {
		for j := 0; j < a.Cols(); j++ {
			if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i, j)) {
				return fmt.Errorf("(%d,%d) = %v, want %v", i, j, a.At(i, j), b.At(i, j))
			}
		}
	}
	return nil
}

func TestPlanetLabPackRoundTrips(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	v := [][]float64{
		{0, 0.175, 5.5064, 2984.1},
		{0.175, 0, 121.42, 1e-4},
		{5.5064, 121.42, 0, 75.387},
		{2984.1, 1e-4, 75.387, 0},
	}
	m1, err := NewSquare(names, v)
	if err != nil {
		t.Fatal(err)
	}
	v[0][1], v[1][0] = 0.2, 0.2
	v[2][3], v[3][2] = 7892.8, 7892.8
	m2, _ := NewSquare(names, v)
	packed1, off, err := EncodePlanetLab(m1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if off != 2 {
		t.Errorf("%d entries off the grid, want 2 (5.5064 and 0.0001)", off)
	}
	packed2, _, err := EncodePlanetLab(m2, m1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m      *Matrix
		packed []byte
		base   *Matrix
	}{{m1, packed1, nil}, {m2, packed2, m1}} {
		back, err := DecodePlanetLab(tc.packed, tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameValues(back, tc.m); err != nil {
			t.Error(err)
		}
		if back.RowName(3) != PlanetLabName(3) {
			t.Errorf("host 3 named %q, want %q", back.RowName(3), PlanetLabName(3))
		}
	}
}

// TestPlanetLabPackRoundTripsRandom packs seeded random matrices on the
// five-significant-digit grid, with a few values off it, as a first slice
// and as a delta slice, and decodes them back exactly.
func TestPlanetLabPackRoundTripsRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 2 + rng.IntN(30)
		random := func() *Matrix {
			flat := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					var v float64
					switch rng.IntN(4) {
					case 0:
						v = float64(rng.IntN(100_000)) / 1000 // below 100 ms: 1 µs grid
					case 1:
						v = float64(100_000+10*rng.IntN(90_000)) / 1000
					case 2:
						v = float64(1_000_000+100*rng.IntN(100_000)) / 1000
					default:
						v = float64(rng.IntN(100_000_000)) / 10000 // 0.1 µs: mostly off the grid
					}
					flat[i*n+j], flat[j*n+i] = v, v
				}
			}
			names := make([]string, n)
			for i := range names {
				names[i] = PlanetLabName(i)
			}
			m, err := NewSquareFlat(names, flat)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			return m
		}
		first, later := random(), random()
		for _, tc := range []struct{ m, base *Matrix }{{first, nil}, {later, first}, {first, first}} {
			packed, _, err := EncodePlanetLab(tc.m, tc.base)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			back, err := DecodePlanetLab(packed, tc.base)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if err := sameValues(back, tc.m); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
	}
}

// TestPlanetLabPackReproducesEmbedded re-packs embedded slices and checks
// that the bytes equal the embedded files: the writer is the one that made
// them.
func TestPlanetLabPackReproducesEmbedded(t *testing.T) {
	slices := []int{1, 18}
	if !testing.Short() {
		slices = slices[:0]
		for s := 1; s <= PlanetLabSlices; s++ {
			slices = append(slices, s)
		}
	}
	first, err := PlanetLab(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slices {
		m, err := PlanetLab(s)
		if err != nil {
			t.Fatal(err)
		}
		base := first
		if s == 1 {
			base = nil
		}
		packed, off, err := EncodePlanetLab(m, base)
		if err != nil {
			t.Fatalf("slice %d: %v", s, err)
		}
		want, err := planetLabFS.ReadFile(fmt.Sprintf("data/planetlab/slice%02d.bin.gz", s))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(packed, want) {
			t.Errorf("slice %d: re-packed %d bytes differ from the embedded %d (%d off the grid)", s, len(packed), len(want), off)
		}
	}
}

func TestEncodePlanetLabRejects(t *testing.T) {
	sq := func(v [][]float64) *Matrix {
		names := make([]string, len(v))
		for i := range names {
			names[i] = PlanetLabName(i)
		}
		m, err := NewSquare(names, v)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ok := sq([][]float64{{0, 1}, {1, 0}})
	three := sq([][]float64{{0, 1, 2}, {1, 0, 3}, {2, 3, 0}})
	rect, err := NewMatrix([]string{"a"}, []string{"b", "c"}, [][]float64{{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	// NewSquare rejects a non-zero diagonal; NewMatrix with the same row
	// and column names does not.
	diag, err := NewMatrix([]string{"a", "b"}, []string{"a", "b"}, [][]float64{{1, 1}, {1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		m, base *Matrix
		want    error
	}{
		{"asymmetric", sq([][]float64{{0, 1}, {2, 0}}), nil, ErrShape},
		{"not square", rect, nil, ErrShape},
		{"diagonal", diag, nil, ErrShape},
		{"inexact", sq([][]float64{{0, 1.00001}, {1.00001, 0}}), nil, ErrInvalidLatency},
		{"base size", ok, three, ErrShape},
		{"delta too large", sq([][]float64{{0, 1e6}, {1e6, 0}}), sq([][]float64{{0, 0.001}, {0.001, 0}}), ErrShape},
	} {
		if _, _, err := EncodePlanetLab(tc.m, tc.base); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := DecodePlanetLab([]byte("not gzip"), nil); !errors.Is(err, ErrSyntax) {
		t.Errorf("decoding garbage: error %v, want ErrSyntax", err)
	}
}
