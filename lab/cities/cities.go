// Package cities holds the real-world inputs the lab's experiments share:
// the default server cities (WonderNetwork cities where large public
// clouds run regions), the cities of a demo's nodes, and the player
// population (GeoNames cities drawn by population, with the modelled RTT
// of geo.Population to every WonderNetwork city).
//
// It exists so that the CMA, SPD and balance reproductions and the world
// demo load the embedded data one way. Every function returns fresh
// values; nothing is cached.
package cities

import (
	"fmt"
	"slices"
	"strings"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
)

// servers lists 20 WonderNetwork cities where large public clouds run
// regions, spread over every inhabited continent and ordered so that each
// prefix is itself well spread: the first 5 are one region per continent
// (North America, Europe, East Asia, South-East Asia, South America), the
// first 10 add the US west coast, the UK, India, Australia and Africa, and
// the last 10 add second sites in the densest markets.
var servers = []string{
	"New York", "Frankfurt", "Tokyo", "Singapore", "Sao Paulo",
	"Los Angeles", "London", "Bangalore", "Sydney", "Johannesburg",
	"Chicago", "Dallas", "Seattle", "Toronto", "Paris",
	"Stockholm", "Moscow", "Hong Kong", "Seoul", "Dubai",
}

// Servers returns the default server cities for real data (a fresh copy):
// 20 WonderNetwork cities where large public clouds run regions, ordered
// so that every prefix is well spread. An m-server system uses the first
// m: New York, Frankfurt, Tokyo, Singapore, Sao Paulo; then Los Angeles,
// London, Bangalore, Sydney, Johannesburg; then Chicago, Dallas, Seattle,
// Toronto, Paris, Stockholm, Moscow, Hong Kong, Seoul, Dubai.
func Servers() []string { return slices.Clone(servers) }

// ForNodes returns n WonderNetwork cities for a demo's nodes: Servers
// first, then the data set's other cities in its order. Fewer are
// returned if the data set has fewer than n.
func ForNodes(n int) []string {
	out := Servers()
	if n <= len(out) {
		return out[:max(n, 0)]
	}
	ps, err := geo.WonderNetwork()
	if err != nil {
		return out
	}
	for _, c := range ps.Cities() {
		if len(out) == n {
			break
		}
		if !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Population loads the embedded data and returns the player population
// (GeoNames cities by population, geo.DefaultPopulationConfig) and the
// WonderNetwork pings it models RTTs from.
func Population() (*geo.Population, *geo.PingSet, error) {
	pings, err := geo.WonderNetwork()
	if err != nil {
		return nil, nil, fmt.Errorf("lab/cities: %w", err)
	}
	cs, err := geo.GeoNamesCities()
	if err != nil {
		return nil, nil, fmt.Errorf("lab/cities: %w", err)
	}
	pop, err := geo.NewPopulation(cs, pings, geo.DefaultPopulationConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("lab/cities: %w", err)
	}
	return pop, pings, nil
}

// Indices resolves server city names in the WonderNetwork data set, in
// order. An unknown or repeated name is an error wrapping lab.ErrConfig.
func Indices(pings *geo.PingSet, names []string) ([]int, error) {
	idx := make([]int, len(names))
	seen := make(map[int]bool, len(names))
	for i, n := range names {
		j, ok := pings.CityIndex(n)
		if !ok {
			return nil, fmt.Errorf("%w: server city %q is not a WonderNetwork city (examples: %s)", lab.ErrConfig, n, strings.Join(servers[:5], ", "))
		}
		if seen[j] {
			return nil, fmt.Errorf("%w: server city %q listed twice", lab.ErrConfig, n)
		}
		seen[j] = true
		idx[i] = j
	}
	return idx, nil
}
