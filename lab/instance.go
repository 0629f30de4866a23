package lab

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/geo/topo"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/place/cma"
)

// ErrConfig reports an invalid experiment configuration; the wrapped message
// names the field and the value. It is the harness's, so that the world
// experiments' errors are the lab's.
var ErrConfig = harness.ErrConfig

// Data names where an experiment's delays come from.
type Data string

const (
	// DataBRITE is the CMA paper's setting: a BRITE-style topology
	// (CMAConfig.Topology, 5,000 nodes by default) generated from the seed,
	// clients and mirrors picked uniformly at random among its nodes, and
	// delays the shortest-path delays between them.
	DataBRITE Data = "brite"
	// DataReal draws players from the embedded GeoNames cities in proportion
	// to population and puts mirrors in WonderNetwork cities (CMAConfig.Servers);
	// delays are the modelled RTT of geo.Population.
	DataReal Data = "real"
)

// ParseData parses a Data name: brite or real.
func ParseData(s string) (Data, error) {
	switch d := Data(strings.ToLower(strings.TrimSpace(s))); d {
	case DataBRITE, DataReal:
		return d, nil
	}
	return "", fmt.Errorf("%w: data %q: want brite or real", ErrConfig, s)
}

// defaultServers lists 20 WonderNetwork cities where large public clouds run
// regions, spread over every inhabited continent and ordered so that each
// prefix is itself well spread: the first 5 are one region per continent
// (North America, Europe, East Asia, South-East Asia, South America), the
// first 10 add the US west coast, the UK, India, Australia and Africa, and
// the last 10 add second sites in the densest markets.
var defaultServers = []string{
	"New York", "Frankfurt", "Tokyo", "Singapore", "Sao Paulo",
	"Los Angeles", "London", "Bangalore", "Sydney", "Johannesburg",
	"Chicago", "Dallas", "Seattle", "Toronto", "Paris",
	"Stockholm", "Moscow", "Hong Kong", "Seoul", "Dubai",
}

// DefaultServers returns the default server cities for real data (a fresh
// copy): 20 WonderNetwork cities where large public clouds run regions,
// ordered so that every prefix is well spread. An m-server system uses the
// first m: New York, Frankfurt, Tokyo, Singapore, Sao Paulo; then Los
// Angeles, London, Bangalore, Sydney, Johannesburg; then Chicago, Dallas,
// Seattle, Toronto, Paris, Stockholm, Moscow, Hong Kong, Seoul, Dubai.
func DefaultServers() []string { return slices.Clone(defaultServers) }

// serverIndices resolves city names in the WonderNetwork data set.
func serverIndices(pings *geo.PingSet, names []string) ([]int, error) {
	idx := make([]int, len(names))
	seen := make(map[int]bool, len(names))
	for i, n := range names {
		j, ok := pings.CityIndex(n)
		if !ok {
			return nil, fmt.Errorf("%w: server city %q is not a WonderNetwork city (examples: %s)", ErrConfig, n, strings.Join(defaultServers[:5], ", "))
		}
		if seen[j] {
			return nil, fmt.Errorf("%w: server city %q listed twice", ErrConfig, n)
		}
		seen[j] = true
		idx[i] = j
	}
	return idx, nil
}

// apportion spreads total seats over m mirrors in proportion to the weights
// w[0], w[1], ..., repeated (mirror j weighs w[j mod len(w)]), by largest
// remainders (ties to the lower index), so that the total is kept exactly.
// The CMA paper's "each mirror's capacity is reduced proportionately" is
// apportion(caps, m, sum(caps)): with caps 100, 150, 200, 250, 300 and m = 10
// it gives 50, 75, 100, 125, 150 twice.
func apportion(w []int, m, total int) ([]int, error) {
	wsum := 0
	for j := 0; j < m; j++ {
		wsum += w[j%len(w)]
	}
	caps := make([]int, m)
	rem := make([]float64, m)
	given := 0
	for j := range caps {
		q := float64(total) * float64(w[j%len(w)]) / float64(wsum)
		caps[j] = int(q)
		rem[j] = q - float64(caps[j])
		given += caps[j]
	}
	order := make([]int, m)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for i := 0; given < total; i++ {
		caps[order[i%m]]++
		given++
	}
	for j, c := range caps {
		if c < 1 {
			return nil, fmt.Errorf("%w: a total capacity of %d spread over %d mirrors leaves mirror %d with none", ErrConfig, total, m, j)
		}
	}
	return caps, nil
}

// instance is the input of one scenario: a pool of clients, a pool of mirror
// locations (the m-mirror system uses the first m), and the delay in ms from
// every client to every mirror location.
type instance struct {
	clients []string
	mirrors []string
	delay   [][]float64 // clients × mirror pool
}

// mirrorsFor returns the first len(caps) mirror locations with capacities.
func (in *instance) mirrorsFor(caps []int) []cma.Mirror {
	ms := make([]cma.Mirror, len(caps))
	for j, c := range caps {
		ms[j] = cma.Mirror{ID: in.mirrors[j], Capacity: c}
	}
	return ms
}

// source builds the instances of one seed.
type source interface {
	// instance returns a pool of n clients and mirrors mirror locations,
	// drawn with rng.
	instance(n, mirrors int, rng *rand.Rand) (*instance, error)
}

// briteSource picks clients and mirrors among the nodes of one topology.
type briteSource struct{ g *topo.Graph }

func newBriteSource(cfg topo.HierConfig, seed uint64) (*briteSource, error) {
	g, err := topo.Hierarchical(cfg, rand.New(rand.NewPCG(seed, streamTopology)))
	if err != nil {
		return nil, fmt.Errorf("lab: topology: %w", err)
	}
	return &briteSource{g: g}, nil
}

// instance draws mirrors+n distinct nodes uniformly at random, the first
// ones mirrors and the rest clients, as the paper selects both "randomly from
// the 5000 nodes".
func (s *briteSource) instance(n, mirrors int, rng *rand.Rand) (*instance, error) {
	if n+mirrors > s.g.N() {
		return nil, fmt.Errorf("%w: %d clients and %d mirrors do not fit in a topology of %d nodes", ErrConfig, n, mirrors, s.g.N())
	}
	perm := rng.Perm(s.g.N())[:n+mirrors]
	mir, cl := perm[:mirrors], perm[mirrors:]
	m, err := topo.DelayMatrix(s.g, cl, mir)
	if err != nil {
		return nil, fmt.Errorf("lab: delays: %w", err)
	}
	return fromMatrix(m), nil
}

// realSource draws players from GeoNames cities and puts mirrors in the
// given WonderNetwork cities, in the order given.
type realSource struct {
	pop     *geo.Population
	servers []int
}

func newRealSource(servers []string) (*realSource, error) {
	pings, err := geo.WonderNetwork()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	cities, err := geo.GeoNamesCities()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	pop, err := geo.NewPopulation(cities, pings, geo.DefaultPopulationConfig())
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	idx, err := serverIndices(pings, servers)
	if err != nil {
		return nil, err
	}
	return &realSource{pop: pop, servers: idx}, nil
}

func (s *realSource) instance(n, mirrors int, rng *rand.Rand) (*instance, error) {
	if mirrors > len(s.servers) {
		return nil, fmt.Errorf("%w: %d mirrors asked for, %d server cities given", ErrConfig, mirrors, len(s.servers))
	}
	m, err := s.pop.Matrix(s.pop.Draw(n, rng), s.servers[:mirrors])
	if err != nil {
		return nil, fmt.Errorf("lab: delays: %w", err)
	}
	return fromMatrix(m), nil
}

func fromMatrix(m *geo.Matrix) *instance {
	in := &instance{clients: m.RowNames(), mirrors: m.ColNames(), delay: make([][]float64, m.Rows())}
	for i := range in.delay {
		in.delay[i] = m.Row(i)
	}
	return in
}

// Random streams: each use of randomness draws from its own PCG stream of
// the seed, so adding a scenario never changes another's input.
const (
	streamTopology = 0x746f706f // "topo"
	streamJoin     = 0x6a6f696e // "join"
	streamDynamic  = 0x64796e61 // "dyna"
	streamScript   = 0x73637270 // "scrp"
	streamDemo     = 0x64656d6f // "demo"
)
