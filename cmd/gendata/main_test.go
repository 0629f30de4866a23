package main

import (
	"math"
	"testing"

	"github.com/overworld/overworld/geo"
)

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
