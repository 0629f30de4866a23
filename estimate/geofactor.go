package estimate

import "math"

// GeoFactor is mf-geo: mf with the nodes' positions known to the estimator
// (a site table, GeoIP: game servers know where they are), the side
// information of Htrae (Agarwal and Lorch, "Matchmaking for online games
// and other latency-sensitive P2P systems", SIGCOMM 2009). It assumes
// those positions are right to within a city; it probes what mf probes,
// except that its random peers are drawn one per distance band
// (ProbeConfig.Banded, on in DefaultSpec), that the near neighbours it
// adds are the geographically nearest peers, and that ProbeConfig.Disputed
// more are the peers on which its two models disagree most (Disputed).
//
// It fits two Factor models to the same samples: the plain one, and a
// geographic one whose log-RTT model carries the geographic base RTT
// a + b·km (great-circle distance; a and b fitted at each Fit to the
// measured pairs by least squares of the relative error) as a fixed
// offset, so that its factors learn only the routes' departure from
// geography. A pair the geographic model places under Short ms is answered
// by it (the plain model overestimates the small RTTs few probes see);
// every other pair by the log-domain blend of the two models, Mix of it
// geographic. No answer is below the speed-of-light bound in fibre,
// 2·km / (200 km/ms). Session uses it for MethodFactorGeo when the Truth
// has positions, and plain mf otherwise (PlanetLab has none).
type GeoFactor struct {
	plain, geo *Factor
	// Short is the geographic model's estimate, in ms, under which it
	// answers alone.
	Short float64
	// Mix is the geographic model's share, in [0, 1], of the log-domain
	// blend that answers the other pairs.
	Mix float64
}

// Defaults of GeoFactor, chosen on WonderNetwork (PlanetLab has no
// positions to choose them on): Short covers the band of pairs under 30 ms
// that mf overestimates, Mix a quarter.
const (
	geoShort = 30
	geoMix   = 0.25
)

// NewGeoFactor makes mf-geo from two fresh Factor models of the same size
// and the nodes' positions (degrees, north and east positive).
func NewGeoFactor(lat, lon []float64, plain, geo *Factor) (*GeoFactor, error) {
	if plain == nil || geo == nil || plain.n != geo.n {
		return nil, ErrShape
	}
	if err := geo.SetPositions(lat, lon); err != nil {
		return nil, err
	}
	return &GeoFactor{plain: plain, geo: geo, Short: geoShort, Mix: geoMix}, nil
}

// Len returns the number of nodes.
func (g *GeoFactor) Len() int { return g.plain.n }

// Estimate returns the geographic model's estimate when it is under Short
// ms, the blend of the two otherwise, never below the speed-of-light bound.
func (g *GeoFactor) Estimate(i, j int) float64 {
	if i == j {
		return 0
	}
	v := g.geo.Estimate(i, j)
	if v >= g.Short {
		v = math.Exp((1-g.Mix)*math.Log(g.plain.Estimate(i, j)) + g.Mix*math.Log(v))
	}
	return math.Max(v, g.geo.km[i*g.plain.n+j]/100)
}

// Uncertainty is the plain model's.
func (g *GeoFactor) Uncertainty(i, j int) float64 { return g.plain.Uncertainty(i, j) }

// Observe passes the round to both models.
func (g *GeoFactor) Observe(samples []Sample, changes []Change) {
	g.plain.Observe(samples, changes)
	g.geo.Observe(samples, changes)
}

// Fit fits both models.
func (g *GeoFactor) Fit() error {
	if err := g.plain.Fit(); err != nil {
		return err
	}
	return g.geo.Fit()
}

// Disputed ranks every pair by how much the two models disagree on it,
// most first (the negated absolute difference of their log estimates), as
// an Estimator: the ranking by which mf-geo adds its disputed neighbours
// (ProbeConfig.Disputed). A probe there settles the most between them.
func (g *GeoFactor) Disputed() Estimator { return disputeRank{g} }

// disputeRank is GeoFactor.Disputed's ranking.
type disputeRank struct{ g *GeoFactor }

func (d disputeRank) Len() int { return d.g.Len() }

func (d disputeRank) Estimate(i, j int) float64 {
	return -math.Abs(math.Log(d.g.plain.Estimate(i, j)) - math.Log(d.g.geo.Estimate(i, j)))
}

// Distance returns the great-circle distances of the nodes' positions, in
// km, as an Estimator: the ranking by which mf-geo adds near neighbours.
func (g *GeoFactor) Distance() Estimator { return matrixEst{g.plain.n, g.geo.km} }
