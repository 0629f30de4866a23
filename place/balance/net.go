package balance

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/overworld/overworld/geo"
)

// Net is a latency model for players: a fixed pool of player locations,
// the RTT between two of them and from each to the cluster. A new player
// takes a location drawn uniformly from the pool.
type Net interface {
	Locations() int           // size of the pool, ≥ 1
	RTT(a, b int) float64     // ms between the players at locations a and b
	ClusterRTT(a int) float64 // ms from the player at location a to the cluster
}

// GeoNet places players in GeoNames cities (drawn by population) and
// takes their RTTs from geo.Population: to the cluster in a WonderNetwork
// city, RTT(player, cluster) + HomeMs; between two players,
//
//	R(anchor_a, anchor_b) + access(a) + access(b) + 2·HomeMs,
//
// where R is the measured RTT between the anchors (IntraCityMs when they
// share one) and access the model's access term: the population model
// with the second player standing in as a server at its anchor city,
// reached over its own access path, both directions averaged. For the few
// anchor pairs WonderNetwork never measured, R is the population model's
// stand-in seen from the first anchor's city. HomeMs is the home access network's
// RTT (the population model is fitted on data-centre hosts): a player
// hosting an instance pays it once more than a cluster server does.
type GeoNet struct {
	anchor  []int32
	access  []float64 // ms
	cluster []float64 // ms
	home    float64
	idx     map[int32]int32 // anchor -> row of base
	base    []float64       // anchors × anchors
	k       int
}

// NewGeoNet draws n players from pop with rng and puts the cluster in
// WonderNetwork city cluster (an index of pings, which must be the
// PingSet pop was built on). homeMs ≥ 0 is added per home end.
func NewGeoNet(pop *geo.Population, pings *geo.PingSet, cluster, n int, homeMs float64, rng *rand.Rand) (*GeoNet, error) {
	if cluster < 0 || cluster >= pings.Len() {
		return nil, fmt.Errorf("%w: cluster city %d out of range [0,%d)", ErrConfig, cluster, pings.Len())
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: %d player locations (want ≥ 1)", ErrConfig, n)
	}
	if !(homeMs >= 0) || math.IsInf(homeMs, 0) {
		return nil, fmt.Errorf("%w: home access %g ms (want finite, ≥ 0)", ErrConfig, homeMs)
	}
	ps := pop.Draw(n, rng)
	g := &GeoNet{anchor: make([]int32, n), access: make([]float64, n), cluster: make([]float64, n),
		home: homeMs, idx: map[int32]int32{}}
	cfg := pop.Config()
	var anchors []int
	for i, p := range ps {
		g.anchor[i] = int32(p.Anchor)
		g.access[i] = cfg.AccessMs(p.AccessKm)
		g.cluster[i] = pop.RTT(p, cluster) + homeMs
		if math.IsNaN(g.cluster[i]) {
			return nil, fmt.Errorf("%w: no RTT from player in %s to the cluster", ErrConfig, p.City.Name)
		}
		if _, ok := g.idx[int32(p.Anchor)]; !ok {
			g.idx[int32(p.Anchor)] = int32(len(anchors))
			anchors = append(anchors, p.Anchor)
		}
	}
	g.k = len(anchors)
	g.base = make([]float64, g.k*g.k)
	for a, x := range anchors {
		// a player standing exactly at anchor x: access 0
		px := geo.Player{City: pings.City(x), Anchor: x}
		for b, y := range anchors {
			v := pop.RTT(px, y) // IntraCityMs when x == y
			if math.IsNaN(v) {
				return nil, fmt.Errorf("%w: no RTT between %s and %s", ErrConfig, pings.City(x).Name, pings.City(y).Name)
			}
			g.base[a*g.k+b] = v
		}
	}
	// make it symmetric: the mean of the two directions
	for a := 0; a < g.k; a++ {
		for b := a + 1; b < g.k; b++ {
			m := (g.base[a*g.k+b] + g.base[b*g.k+a]) / 2
			g.base[a*g.k+b], g.base[b*g.k+a] = m, m
		}
	}
	for i := range ps {
		g.anchor[i] = g.idx[g.anchor[i]]
	}
	return g, nil
}

// Locations implements Net.
func (g *GeoNet) Locations() int { return len(g.anchor) }

// RTT implements Net.
func (g *GeoNet) RTT(a, b int) float64 {
	if a == b {
		return 0
	}
	if a > b { // one order of additions, so RTT(a, b) == RTT(b, a) exactly
		a, b = b, a
	}
	return g.base[int(g.anchor[a])*g.k+int(g.anchor[b])] + g.access[a] + g.access[b] + 2*g.home
}

// ClusterRTT implements Net.
func (g *GeoNet) ClusterRTT(a int) float64 { return g.cluster[a] }

// PlaneNet is the paper's synthetic model (§5): players uniform in the
// plane [−Half, Half]², RTT the Euclidean distance in ms, the cluster at
// the origin.
type PlaneNet struct {
	x, y []float64
}

// NewPlaneNet draws n locations in [−half, half]² with rng.
func NewPlaneNet(n int, half float64, rng *rand.Rand) (*PlaneNet, error) {
	if n < 1 || !(half > 0) || math.IsInf(half, 0) {
		return nil, fmt.Errorf("%w: plane of %d locations, half-width %g", ErrConfig, n, half)
	}
	p := &PlaneNet{x: make([]float64, n), y: make([]float64, n)}
	for i := range p.x {
		p.x[i] = (2*rng.Float64() - 1) * half
		p.y[i] = (2*rng.Float64() - 1) * half
	}
	return p, nil
}

// Locations implements Net.
func (p *PlaneNet) Locations() int { return len(p.x) }

// RTT implements Net.
func (p *PlaneNet) RTT(a, b int) float64 { return math.Hypot(p.x[a]-p.x[b], p.y[a]-p.y[b]) }

// ClusterRTT implements Net.
func (p *PlaneNet) ClusterRTT(a int) float64 { return math.Hypot(p.x[a], p.y[a]) }
