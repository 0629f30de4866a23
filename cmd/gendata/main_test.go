package main

import (
	"math"
	"testing"

	"github.com/overworld/overworld/geo"
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

func TestPlanetLabEncodingRoundTrips(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	v := [][]float64{
		{0, 0.175, 5.5064, 2984.1},
		{0.175, 0, 121.42, 1e-4},
		{5.5064, 121.42, 0, 75.387},
		{2984.1, 1e-4, 75.387, 0},
	}
	m1, err := geo.NewSquare(names, v)
	if err != nil {
		t.Fatal(err)
	}
	v[0][1], v[1][0] = 0.2, 0.2
	v[2][3], v[3][2] = 7892.8, 7892.8
	m2, _ := geo.NewSquare(names, v)
	packed1, base, st, err := encodePlanetLab(m1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.exceptions != 2 {
		t.Errorf("%d exceptions, want 2 (5.5064 and 0.0001)", st.exceptions)
	}
	packed2, _, _, err := encodePlanetLab(m2, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m      *geo.Matrix
		packed []byte
		base   []uint32
	}{{m1, packed1, nil}, {m2, packed2, base}} {
		flat, _, err := decodePlanetLab(tc.packed, tc.base)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				if flat[i*4+j] != tc.m.At(i, j) {
					t.Errorf("(%d,%d) = %v, want %v", i, j, flat[i*4+j], tc.m.At(i, j))
				}
			}
		}
	}
	asym, _ := geo.NewSquare([]string{"a", "b"}, [][]float64{{0, 1}, {2, 0}})
	if _, _, _, err := encodePlanetLab(asym, nil); err == nil {
		t.Error("asymmetric matrix encoded")
	}
}

func TestFixCoordinatesFindsMisplacedCity(t *testing.T) {
	truth := []geo.City{
		{Name: "A", Lat: 48.85, Lon: 2.35}, {Name: "B", Lat: 51.5, Lon: -0.13}, {Name: "C", Lat: 40.7, Lon: -74},
		{Name: "D", Lat: 35.7, Lon: 139.7}, {Name: "E", Lat: -33.9, Lon: 151.2}, {Name: "F", Lat: 45.5, Lon: -122.7},
	}
	n := len(truth)
	km := make([]float64, n*n)
	for i := range truth {
		for j := range truth {
			km[i*n+j] = math.Round(truth[i].Km(truth[j]))
		}
	}
	cities := append([]geo.City(nil), truth...)
	cities[5].Lat, cities[5].Lon = 18.13, -76.53 // Portland, Jamaica
	known := map[string]bool{"A": true, "B": true, "C": true, "D": true, "E": true, "F": true}
	fixed, err := fixCoordinates(cities, known, km)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) != 1 {
		t.Fatalf("fixed %v", fixed)
	}
	if d := cities[5].Km(truth[5]); d > 5 {
		t.Errorf("F placed %.1f km from the truth: %v", d, fixed)
	}
	for i := 0; i < 5; i++ {
		if cities[i] != truth[i] {
			t.Errorf("city %s moved", cities[i].Name)
		}
	}
}
