package geo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// PopulationConfig configures the player-population model. The zero value
// is not useful; start from DefaultPopulationConfig.
type PopulationConfig struct {
	// MinPopulation excludes smaller cities from Draw (0 keeps all; the
	// GeoNames extract holds cities of 100,000 people and more).
	MinPopulation int
	// FibreKmPerMs is the speed of light in optical fibre: c / 1.4682.
	FibreKmPerMs float64
	// RouteInflation is the ratio of the access path to the great-circle
	// distance from player to anchor (fitted).
	RouteInflation float64
	// LastMileMs is the constant part of the access RTT (fitted).
	LastMileMs float64
	// IntraCityMs is the RTT floor from a player to a server in its own
	// anchor city, before the access term (fitted).
	IntraCityMs float64
}

// Fitted on the embedded WonderNetwork data by FitPopulationConfig(w, nil);
// TestDefaultPopulationConfigIsFitted checks that they still are.
const (
	fibreKmPerMs      = 299_792.458 / 1.4682 / 1000
	fitRouteInflation = 0.911
	fitLastMileMs     = 0
	fitIntraCityMs    = 10.51
)

// DefaultPopulationConfig returns the model constants fitted on the
// embedded WonderNetwork data (see Population): RouteInflation 0.911,
// LastMileMs 0, IntraCityMs 10.51, fibre at 204.19 km/ms, all cities drawn.
func DefaultPopulationConfig() PopulationConfig {
	return PopulationConfig{
		FibreKmPerMs:   fibreKmPerMs,
		RouteInflation: fitRouteInflation,
		LastMileMs:     fitLastMileMs,
		IntraCityMs:    fitIntraCityMs,
	}
}

// ErrConfig reports an invalid PopulationConfig.
var ErrConfig = errors.New("geo: invalid population config")

func (c PopulationConfig) validate() error {
	switch {
	case c.MinPopulation < 0:
		return fmt.Errorf("%w: MinPopulation %d < 0", ErrConfig, c.MinPopulation)
	case !(c.FibreKmPerMs > 0) || math.IsInf(c.FibreKmPerMs, 0):
		return fmt.Errorf("%w: FibreKmPerMs %g must be positive and finite", ErrConfig, c.FibreKmPerMs)
	case !(c.RouteInflation >= 0) || math.IsInf(c.RouteInflation, 0):
		return fmt.Errorf("%w: RouteInflation %g must be non-negative and finite", ErrConfig, c.RouteInflation)
	case !(c.LastMileMs >= 0) || math.IsInf(c.LastMileMs, 0):
		return fmt.Errorf("%w: LastMileMs %g must be non-negative and finite", ErrConfig, c.LastMileMs)
	case !(c.IntraCityMs >= 0) || math.IsInf(c.IntraCityMs, 0):
		return fmt.Errorf("%w: IntraCityMs %g must be non-negative and finite", ErrConfig, c.IntraCityMs)
	}
	return nil
}

// AccessMs returns the access term for a player km from its anchor.
func (c PopulationConfig) AccessMs(km float64) float64 {
	return c.LastMileMs + 2*km*c.RouteInflation/c.FibreKmPerMs
}

// Player is one simulated player.
type Player struct {
	ID       string  // "p000000", "p000001", … unique within one Draw
	City     City    // where the player lives
	Anchor   int     // nearest measured WonderNetwork city (index in the PingSet)
	AccessKm float64 // great-circle km from City to the anchor
}

// Population is the player-population model: it draws players from real
// cities and gives their RTT to servers in WonderNetwork cities. It is
// immutable and safe for concurrent use; randomness comes only from the
// *rand.Rand passed to Draw.
//
// A player is drawn from a list of cities (the embedded GeoNames extract,
// say) with probability proportional to the city's population. Its anchor
// is the measured WonderNetwork city nearest to it on the great circle,
// AccessKm away. The RTT from a player to a server in WonderNetwork city s
// is
//
//	RTT(anchor, s) + access(AccessKm)    when s is not the anchor,
//	IntraCityMs    + access(AccessKm)    when s is the anchor,
//	access(km) = LastMileMs + 2 · km · RouteInflation / FibreKmPerMs,
//
// where RTT(anchor, s) is the measured average RTT (the anchor's
// measurement of s, else s's of the anchor). When the pair was measured in
// neither direction (18 of 29,161 pairs), the nearest WonderNetwork city
// that did measure s stands in for the anchor.
//
// FitPopulationConfig fits the constants on the WonderNetwork data with the
// construction the model uses: every city h plays a player anchored at its
// nearest other city a. RouteInflation and LastMileMs are the
// least-absolute-deviation line (both ≥ 0) of the excess
// RTT(h, s) − RTT(a, s), over every other city s, against the distance
// h–a; IntraCityMs is the median of RTT(h, a) − access(km(h, a)). On the
// embedded data (DefaultPopulationConfig) the excess grows by 0.911 × the
// fibre propagation delay with a zero intercept (the way from player to
// anchor often points towards the server, so less than the whole detour is
// paid), while a city and its nearest neighbour (median 200 km apart) are
// 10.5 ms further apart than that: neighbouring servers often meet at a
// distant exchange. WonderNetwork measures servers in data centres, so the
// fitted access term is that of a well-connected host: add a home access
// network's delay to LastMileMs to model home players.
//
// EvaluateHoldout validates the model on cities it has not seen; on 20 %
// holdouts its median relative error is about 0.09, half that of a
// distance-only line.
type Population struct {
	cfg     PopulationConfig
	pings   *PingSet
	cities  []City
	anchor  []int     // per city
	access  []float64 // per city, km
	cum     []int64   // cumulative population, for Draw
	measure []bool    // per WonderNetwork city: has any measurement
}

// NewPopulation builds the model over cities (e.g. GeoNamesCities()),
// anchored on the measured cities of pings (e.g. WonderNetwork()). Cities
// with fewer than cfg.MinPopulation people or no people are never drawn;
// at least one must remain.
func NewPopulation(cities []City, pings *PingSet, cfg PopulationConfig) (*Population, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if pings == nil || pings.Pairs() == 0 {
		return nil, errors.New("geo: population needs a PingSet with measurements")
	}
	p := &Population{cfg: cfg, pings: pings, measure: make([]bool, pings.Len())}
	n := pings.Len()
	for i := 0; i < n; i++ {
		for j := 0; j < n && !p.measure[i]; j++ {
			_, a := pings.RTT(i, j)
			_, b := pings.RTT(j, i)
			p.measure[i] = a || b
		}
	}
	var total int64
	for k, c := range cities {
		if c.Population <= 0 || c.Population < cfg.MinPopulation {
			continue
		}
		if !validCoord(c.Lat, c.Lon) {
			return nil, fmt.Errorf("geo: population: city %d (%q) has invalid coordinates %g,%g", k, c.Name, c.Lat, c.Lon)
		}
		a, km := p.nearest(c.Lat, c.Lon, func(i int) bool { return p.measure[i] })
		total += int64(c.Population)
		p.cities = append(p.cities, c)
		p.anchor = append(p.anchor, a)
		p.access = append(p.access, km)
		p.cum = append(p.cum, total)
	}
	if total == 0 {
		return nil, fmt.Errorf("geo: population: no city with at least %d people", max(cfg.MinPopulation, 1))
	}
	return p, nil
}

// nearest returns the WonderNetwork city nearest to (lat, lon) among those
// ok accepts, and its distance in km; -1 if none.
func (p *Population) nearest(lat, lon float64, ok func(int) bool) (int, float64) {
	return nearestCity(p.pings, lat, lon, ok)
}

func nearestCity(s *PingSet, lat, lon float64, ok func(int) bool) (int, float64) {
	best, bd := -1, math.Inf(1)
	for i, c := range s.cities {
		if !ok(i) {
			continue
		}
		if d := GreatCircleKm(lat, lon, c.Lat, c.Lon); d < bd {
			best, bd = i, d
		}
	}
	return best, bd
}

// Config returns the model's configuration.
func (p *Population) Config() PopulationConfig { return p.cfg }

// Cities returns the number of cities players can be drawn from.
func (p *Population) Cities() int { return len(p.cities) }

// Draw returns n players, each in a city drawn independently with
// probability proportional to its population. The same rng state gives
// the same players.
func (p *Population) Draw(n int, rng *rand.Rand) []Player {
	if n <= 0 {
		return nil
	}
	total := p.cum[len(p.cum)-1]
	out := make([]Player, n)
	for i := range out {
		x := rng.Int64N(total)
		k := sort.Search(len(p.cum), func(k int) bool { return p.cum[k] > x })
		out[i] = Player{ID: fmt.Sprintf("p%06d", i), City: p.cities[k], Anchor: p.anchor[k], AccessKm: p.access[k]}
	}
	return out
}

// RTT returns the model RTT in ms from player pl to a server in
// WonderNetwork city server (an index in the PingSet), or NaN when server
// or the player's anchor is not a valid index.
func (p *Population) RTT(pl Player, server int) float64 {
	n := p.pings.Len()
	if server < 0 || server >= n || pl.Anchor < 0 || pl.Anchor >= n {
		return math.NaN()
	}
	return modelRTT(p.pings, p.cfg, pl.City.Lat, pl.City.Lon, pl.Anchor, pl.AccessKm, server, nil)
}

// modelRTT is the model for a player at (lat, lon), anchored at anchor km
// away, to server. allowed limits the stand-in anchors (nil: any).
func modelRTT(s *PingSet, cfg PopulationConfig, lat, lon float64, anchor int, km float64, server int, allowed func(int) bool) float64 {
	if anchor == server {
		return cfg.IntraCityMs + cfg.AccessMs(km)
	}
	if r, ok := s.PairRTT(anchor, server); ok {
		return r + cfg.AccessMs(km)
	}
	a, d := nearestCity(s, lat, lon, func(i int) bool {
		_, ok := s.PairRTT(i, server)
		return i != server && ok && (allowed == nil || allowed(i))
	})
	if a < 0 {
		return math.NaN()
	}
	r, _ := s.PairRTT(a, server)
	return r + cfg.AccessMs(d)
}

// Matrix returns the model RTT from each player (rows, named by ID) to each
// server city (columns, named by city name). Server indices must be valid
// and distinct, and player IDs unique.
func (p *Population) Matrix(players []Player, servers []int) (*Matrix, error) {
	n := p.pings.Len()
	cols := make([]string, len(servers))
	for b, s := range servers {
		if s < 0 || s >= n {
			return nil, fmt.Errorf("%w: server index %d out of range [0,%d)", ErrShape, s, n)
		}
		cols[b] = p.pings.cities[s].Name
	}
	rows := make([]string, len(players))
	flat := make([]float64, len(players)*len(servers))
	for a, pl := range players {
		if pl.Anchor < 0 || pl.Anchor >= n {
			return nil, fmt.Errorf("%w: player %q has anchor %d out of range [0,%d)", ErrShape, pl.ID, pl.Anchor, n)
		}
		rows[a] = pl.ID
		for b, s := range servers {
			v := p.RTT(pl, s)
			if math.IsNaN(v) {
				return nil, fmt.Errorf("%w: no RTT from player %q to server %q", ErrMissingPair, pl.ID, cols[b])
			}
			flat[a*len(servers)+b] = v
		}
	}
	return newMatrixOwned(rows, cols, flat)
}

// FitPopulationConfig fits RouteInflation, LastMileMs and IntraCityMs on
// the cities of s listed in use (nil: all), as Population describes: each city h plays a player anchored at its nearest
// other city a in use. MinPopulation is 0 and FibreKmPerMs the default.
func FitPopulationConfig(s *PingSet, use []int) (PopulationConfig, error) {
	if use == nil {
		use = make([]int, s.Len())
		for i := range use {
			use[i] = i
		}
	}
	in := make([]bool, s.Len())
	for _, i := range use {
		if i < 0 || i >= s.Len() {
			return PopulationConfig{}, fmt.Errorf("%w: city index %d out of range", ErrShape, i)
		}
		in[i] = true
	}
	cfg := DefaultPopulationConfig()
	var xs, ys []float64 // excess RTT against distance to the anchor
	var dk, dr []float64 // direct: distance and RTT to the anchor
	for _, h := range use {
		c := s.cities[h]
		a, km := nearestCity(s, c.Lat, c.Lon, func(i int) bool { return in[i] && i != h })
		if a < 0 {
			continue
		}
		if r, ok := s.PairRTT(h, a); ok {
			dk, dr = append(dk, km), append(dr, r)
		}
		for _, t := range use {
			if t == h || t == a {
				continue
			}
			m, ok1 := s.PairRTT(h, t)
			r, ok2 := s.PairRTT(a, t)
			if ok1 && ok2 {
				xs, ys = append(xs, km), append(ys, m-r)
			}
		}
	}
	if len(xs) < 2 || len(dk) == 0 {
		return PopulationConfig{}, errors.New("geo: too few measured pairs to fit the population model")
	}
	icpt, slope := ladFit(xs, ys)
	cfg.LastMileMs = icpt
	cfg.RouteInflation = slope * cfg.FibreKmPerMs / 2
	res := make([]float64, len(dk))
	for k := range dk {
		res[k] = dr[k] - cfg.AccessMs(dk[k])
	}
	cfg.IntraCityMs = math.Max(0, median(res))
	return cfg, nil
}

// ladFit returns the least-absolute-deviation line y ≈ a + b·x with a ≥ 0
// and b ≥ 0: the profile cost over b (a at its optimum, the clamped median
// residual) is convex, so a golden-section search finds b.
func ladFit(xs, ys []float64) (a, b float64) {
	r := make([]float64, len(xs))
	cost := func(b float64) (float64, float64) {
		for k := range xs {
			r[k] = ys[k] - b*xs[k]
		}
		a := math.Max(0, median(r))
		c := 0.0
		for k := range xs {
			c += math.Abs(ys[k] - a - b*xs[k])
		}
		return c, a
	}
	lo, hi := 0.0, 1.0 // ms per km: 1 is 100 times the speed of light in fibre
	const phi = 0.6180339887498949
	for it := 0; it < 100 && hi-lo > 1e-9; it++ {
		m1, m2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
		c1, _ := cost(m1)
		c2, _ := cost(m2)
		if c1 <= c2 {
			hi = m2
		} else {
			lo = m1
		}
	}
	b = (lo + hi) / 2
	_, a = cost(b)
	return a, b
}

// median returns the median of v (the mean of the middle two for even
// length), reordering a copy.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantile returns the q-quantile of sorted s (nearest rank).
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// ErrorStats summarises prediction errors over pairs.
type ErrorStats struct {
	Pairs        int     // pairs compared
	MedianRelErr float64 // median of |predicted − measured| / measured
	P90RelErr    float64 // 90th percentile of the same
	Within15     float64 // share of pairs with relative error ≤ 15 %
	Within50     float64 // share of pairs with relative error ≤ 50 %
	MeanSignedMs float64 // mean of predicted − measured, in ms
}

// String formats the statistics on one line.
func (e ErrorStats) String() string {
	return fmt.Sprintf("%d pairs: median rel. err %.3f, p90 %.3f, within 15%% %.1f%%, within 50%% %.1f%%, mean signed err %+.2f ms",
		e.Pairs, e.MedianRelErr, e.P90RelErr, 100*e.Within15, 100*e.Within50, e.MeanSignedMs)
}

func errorStats(pred, meas []float64) ErrorStats {
	st := ErrorStats{Pairs: len(pred)}
	if len(pred) == 0 {
		return st
	}
	rel := make([]float64, len(pred))
	sum := 0.0
	for k := range pred {
		rel[k] = math.Abs(pred[k]-meas[k]) / meas[k]
		sum += pred[k] - meas[k]
		if rel[k] <= 0.15 {
			st.Within15++
		}
		if rel[k] <= 0.50 {
			st.Within50++
		}
	}
	slices.Sort(rel)
	n := float64(len(pred))
	st.MedianRelErr = median(rel)
	st.P90RelErr = quantile(rel, 0.9)
	st.Within15 /= n
	st.Within50 /= n
	st.MeanSignedMs = sum / n
	return st
}

// HoldoutReport is the result of EvaluateHoldout.
type HoldoutReport struct {
	HeldOut, Kept int // cities held out (players) and kept (anchors and servers)
	// Model: the population model with the constants of the config given.
	Model ErrorStats
	// Refit: the model with its constants refitted on the kept cities only.
	Refit ErrorStats
	// Baseline: RTT = BaselineMs + BaselineMsPerKm × great-circle km from
	// the held-out city to the server, a least-absolute-deviation line
	// fitted on the kept cities' pairs.
	Baseline                    ErrorStats
	BaselineMs, BaselineMsPerKm float64
	RefitConfig                 PopulationConfig
}

// String formats the report as four lines: the split, then the model, the
// refitted model and the baseline.
func (r HoldoutReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "held out %d cities, %d kept\n", r.HeldOut, r.Kept)
	fmt.Fprintf(&b, "model    %v\n", r.Model)
	fmt.Fprintf(&b, "refit    %v (inflation %.3f, last mile %.2f ms, intra-city %.2f ms)\n", r.Refit,
		r.RefitConfig.RouteInflation, r.RefitConfig.LastMileMs, r.RefitConfig.IntraCityMs)
	fmt.Fprintf(&b, "baseline %v (%.2f ms + %.5f ms/km)", r.Baseline, r.BaselineMs, r.BaselineMsPerKm)
	return b.String()
}

// EvaluateHoldout validates the population model on measurements it has
// not seen. It holds out a random fraction holdout (0 < holdout < 1) of the
// cities of pings, chosen with rng; each held-out city plays a player
// anchored at its nearest kept city, and its predicted RTT to every kept
// city is compared with the measured one (its own measurement, else the
// server's). The same pairs are predicted by the model with cfg's
// constants, by the model refitted on the kept cities alone, and by a
// distance-only baseline fitted on the kept cities.
func EvaluateHoldout(pings *PingSet, cfg PopulationConfig, holdout float64, rng *rand.Rand) HoldoutReport {
	n := pings.Len()
	perm := rng.Perm(n)
	h := int(math.Round(holdout * float64(n)))
	h = min(max(h, 1), n-2)
	held := make([]bool, n)
	for _, i := range perm[:h] {
		held[i] = true
	}
	var kept []int
	for i := 0; i < n; i++ {
		if !held[i] {
			kept = append(kept, i)
		}
	}
	rep := HoldoutReport{HeldOut: h, Kept: len(kept)}
	refit, err := FitPopulationConfig(pings, kept)
	if err != nil {
		refit = cfg
	}
	rep.RefitConfig = refit
	// Baseline line on the kept pairs.
	var xs, ys []float64
	for _, i := range kept {
		for _, j := range kept {
			if r, ok := pings.RTT(i, j); ok {
				xs, ys = append(xs, pings.cities[i].Km(pings.cities[j])), append(ys, r)
			}
		}
	}
	rep.BaselineMs, rep.BaselineMsPerKm = ladFit(xs, ys)
	isKept := func(i int) bool { return !held[i] }
	var meas, pm, pr, pb []float64
	for _, p := range perm[:h] {
		c := pings.cities[p]
		a, km := nearestCity(pings, c.Lat, c.Lon, isKept)
		for _, s := range kept {
			m, ok := pings.PairRTT(p, s)
			if !ok {
				continue
			}
			x := modelRTT(pings, cfg, c.Lat, c.Lon, a, km, s, isKept)
			y := modelRTT(pings, refit, c.Lat, c.Lon, a, km, s, isKept)
			if math.IsNaN(x) || math.IsNaN(y) || m <= 0 {
				continue
			}
			meas, pm, pr = append(meas, m), append(pm, x), append(pr, y)
			pb = append(pb, rep.BaselineMs+rep.BaselineMsPerKm*c.Km(pings.cities[s]))
		}
	}
	rep.Model = errorStats(pm, meas)
	rep.Refit = errorStats(pr, meas)
	rep.Baseline = errorStats(pb, meas)
	return rep
}
