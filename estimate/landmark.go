package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/optimize"
)

// Prober measures one RTT from i to j (with whatever noise the network
// has); false when the probe is lost. *Process implements it.
type Prober interface {
	Probe(i, j int) (float64, bool)
}

// LandmarkConfig configures the landmark-based estimators.
type LandmarkConfig struct {
	// Landmarks is the number of landmark nodes L, drawn at random among
	// the endpoints. Every node measures its RTT to each landmark, so L
	// is also the per-node measurement budget.
	Landmarks int
	// Dim is GNP's number of Euclidean dimensions (GNP's paper: 7 with 15
	// landmarks). Unused by Landmark.
	Dim int
	// Samples is the number of probes per measured pair; the minimum is
	// kept (queueing only adds delay).
	Samples int
}

// DefaultLandmarkConfig returns GNP's published setting: 15 landmarks, 7
// dimensions, and 4 probes per pair.
func DefaultLandmarkConfig() LandmarkConfig { return LandmarkConfig{Landmarks: 15, Dim: 7, Samples: 4} }

func (c LandmarkConfig) validate(n int) error {
	switch {
	case c.Landmarks < 2 || c.Landmarks >= n:
		return fmt.Errorf("%w: %d landmarks among %d nodes, want 2..%d", ErrConfig, c.Landmarks, n, n-1)
	case c.Dim < 1 || c.Dim >= c.Landmarks:
		return fmt.Errorf("%w: %d dimensions with %d landmarks, want 1..%d", ErrConfig, c.Dim, c.Landmarks, c.Landmarks-1)
	case c.Samples < 1:
		return fmt.Errorf("%w: %d samples per pair, want ≥ 1", ErrConfig, c.Samples)
	}
	return nil
}

// landmarkData is what both landmark methods measure: the landmarks and
// every node's RTT to each (NaN when every probe was lost).
type landmarkData struct {
	n, L  int
	marks []int
	dist  []float64 // n×L
}

func measureLandmarks(n int, pr Prober, cfg LandmarkConfig, rng *rand.Rand) (*landmarkData, error) {
	if rng == nil {
		return nil, ErrNilRand
	}
	if pr == nil {
		return nil, fmt.Errorf("%w: nil prober", ErrConfig)
	}
	if err := cfg.validate(n); err != nil {
		return nil, err
	}
	d := &landmarkData{n: n, L: cfg.Landmarks, marks: rng.Perm(n)[:cfg.Landmarks], dist: make([]float64, n*cfg.Landmarks)}
	for i := range n {
		for l, m := range d.marks {
			best := math.NaN()
			if i == m {
				best = 0
			} else {
				for range cfg.Samples {
					if v, ok := pr.Probe(i, m); ok && (math.IsNaN(best) || v < best) {
						best = v
					}
				}
			}
			d.dist[i*d.L+l] = best
		}
	}
	return d, nil
}

// Landmarks returns the landmark node indices.
func (d *landmarkData) Landmarks() []int { return slices.Clone(d.marks) }

// Landmark is a Netvigator-style proximity estimator from landmark distance
// vectors. Netvigator (Sharma et al. 2006) has every node traceroute to L
// landmarks and estimates d(a, b) from the paths through landmarks and the
// routers on them ("milestones"); the paper uses PlanetLab's running
// service as a black box. Without router-level paths, overworld keeps
// Netvigator's estimate from distance vectors alone. For nodes a and b with
// RTT vectors to the landmarks l:
//
//	U = min_l (d(a,l) + d(l,b))     the best path through a landmark (upper bound)
//	D = max_l |d(a,l) − d(l,b)|     the triangle-inequality lower bound
//	d̂(a, b) = α·U + (1−α)·D
//
// α is fitted once, by leave-one-out on the measured node-to-landmark RTTs
// (each landmark in turn treated as an ordinary node), to minimise the
// squared log error over a grid of 101 values. A pair involving a
// landmark is measured, so its estimate is the measurement.
type Landmark struct {
	d     *landmarkData
	alpha float64
	isL   []int     // node -> landmark slot, or -1
	loo   []float64 // per node: median leave-one-out relative error to its landmarks
}

// NewLandmark measures every node's RTT to cfg.Landmarks random landmarks
// through pr and fits α. Nodes that reached no landmark estimate from the
// landmarks they did reach; with none, as the median RTT.
func NewLandmark(n int, pr Prober, cfg LandmarkConfig, rng *rand.Rand) (*Landmark, error) {
	if cfg.Dim == 0 {
		cfg.Dim = 1
	}
	d, err := measureLandmarks(n, pr, cfg, rng)
	if err != nil {
		return nil, err
	}
	e := &Landmark{d: d, isL: make([]int, n)}
	for i := range e.isL {
		e.isL[i] = -1
	}
	for l, m := range d.marks {
		e.isL[m] = l
	}
	e.fitAlpha()
	return e, nil
}

// bounds returns U and D for a and b using every landmark but skip (-1:
// none); ok is false when no landmark has both distances.
func (e *Landmark) bounds(a, b, skip int) (up, down float64, ok bool) {
	L := e.d.L
	da, db := e.d.dist[a*L:a*L+L], e.d.dist[b*L:b*L+L]
	up = math.Inf(1)
	for l := range L {
		x, y := da[l], db[l]
		if l == skip || math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		up = min(up, x+y)
		down = max(down, math.Abs(x-y))
		ok = true
	}
	return up, down, ok
}

func (e *Landmark) fitAlpha() {
	type ud struct {
		u, d, y float64
		node    int
	}
	var rows []ud
	for l, m := range e.d.marks {
		for i := range e.d.n {
			y := e.d.dist[i*e.d.L+l]
			if i == m || !(y > 0) {
				continue
			}
			if u, d, ok := e.bounds(i, m, l); ok && u > 0 {
				rows = append(rows, ud{u, d, y, i})
			}
		}
	}
	best, bestErr := 0.5, math.Inf(1)
	for k := 0; k <= 100; k++ {
		a := float64(k) / 100
		s := 0.0
		for _, r := range rows {
			est := max(a*r.u+(1-a)*r.d, 1e-3)
			lr := math.Log(est / r.y)
			s += lr * lr
		}
		if s < bestErr {
			best, bestErr = a, s
		}
	}
	e.alpha = best
	per := make([][]float64, e.d.n)
	for _, r := range rows {
		est := max(best*r.u+(1-best)*r.d, 1e-3)
		per[r.node] = append(per[r.node], math.Abs(est/r.y-1))
	}
	e.loo = make([]float64, e.d.n)
	for i, xs := range per {
		e.loo[i] = 1
		if len(xs) > 0 {
			slices.Sort(xs)
			e.loo[i] = Quantile(xs, 0.5)
		}
	}
}

// Alpha returns the fitted weight of the upper bound.
func (e *Landmark) Alpha() float64 { return e.alpha }

// Landmarks returns the landmark node indices.
func (e *Landmark) Landmarks() []int { return e.d.Landmarks() }

// Len returns the number of nodes.
func (e *Landmark) Len() int { return e.d.n }

// Estimate returns α·U + (1−α)·D, or the measurement when a or b is a
// landmark.
func (e *Landmark) Estimate(a, b int) float64 {
	if a == b {
		return 0
	}
	if l := e.isL[b]; l >= 0 && !math.IsNaN(e.d.dist[a*e.d.L+l]) {
		return e.d.dist[a*e.d.L+l]
	}
	if l := e.isL[a]; l >= 0 && !math.IsNaN(e.d.dist[b*e.d.L+l]) {
		return e.d.dist[b*e.d.L+l]
	}
	u, d, ok := e.bounds(a, b, -1)
	if !ok {
		return 100
	}
	return e.alpha*u + (1-e.alpha)*d
}

// Uncertainty is 0 for a measured pair (a landmark at either end) and
// otherwise the mean of the two nodes' leave-one-out error: for each node,
// the median relative error of estimating its RTT to each landmark from
// the other landmarks. (The relative width of the bounds, (U−D)/(U+D), was
// tried first: on PlanetLab it does not predict the error.)
func (e *Landmark) Uncertainty(a, b int) float64 {
	if a == b || e.isL[a] >= 0 || e.isL[b] >= 0 {
		return 0
	}
	return (e.loo[a] + e.loo[b]) / 2
}

// GNP is Global Network Positioning (Ng and Zhang 2002): the L landmarks
// are embedded in a Dim-dimensional Euclidean space from their all-pairs
// RTTs, then each host is placed from its RTTs to the landmarks, both by
// minimising the sum of squared relative errors ((d̂ − d)/d)² with BFGS
// (gonum/optimize; GNP's paper used the simplex downhill method on the same
// objective). An estimate is the Euclidean distance.
type GNP struct {
	d     *landmarkData
	dim   int
	x     []float64 // n×dim
	resid []float64 // per node: mean |relative error| to the landmarks
}

// NewGNP measures every node's RTT to cfg.Landmarks random landmarks (and
// the landmarks' all-pairs RTTs) through pr and embeds everyone.
func NewGNP(n int, pr Prober, cfg LandmarkConfig, rng *rand.Rand) (*GNP, error) {
	d, err := measureLandmarks(n, pr, cfg, rng)
	if err != nil {
		return nil, err
	}
	g := &GNP{d: d, dim: cfg.Dim, x: make([]float64, n*cfg.Dim), resid: make([]float64, n)}
	L, D := d.L, cfg.Dim
	// Landmark–landmark RTTs: the mean of both directions' minima.
	ll := make([]float64, L*L)
	for a, ma := range d.marks {
		for b, mb := range d.marks {
			if a != b {
				x, y := d.dist[ma*L+b], d.dist[mb*L+a]
				switch {
				case math.IsNaN(x):
					ll[a*L+b] = y
				case math.IsNaN(y):
					ll[a*L+b] = x
				default:
					ll[a*L+b] = (x + y) / 2
				}
			}
		}
	}
	// Landmarks: several random starts, keep the best.
	scale := 0.0
	cnt := 0
	for _, v := range ll {
		if v > 0 {
			scale += v
			cnt++
		}
	}
	if cnt == 0 {
		return nil, fmt.Errorf("%w: no landmark pair measured", ErrTooFew)
	}
	scale /= float64(cnt)
	obj := func(p []float64, grad []float64) float64 {
		if grad != nil {
			clear(grad)
		}
		s := 0.0
		for a := range L {
			for b := a + 1; b < L; b++ {
				m := ll[a*L+b]
				if !(m > 0) {
					continue
				}
				s += relTerm(p[a*D:a*D+D], p[b*D:b*D+D], m, grad, a*D, b*D)
			}
		}
		return s
	}
	best, bestF := []float64(nil), math.Inf(1)
	for range 5 {
		p0 := make([]float64, L*D)
		for k := range p0 {
			p0[k] = rng.NormFloat64() * scale
		}
		res, err := optimize.Minimize(optimize.Problem{
			Func: func(p []float64) float64 { return obj(p, nil) },
			Grad: func(gr, p []float64) { obj(p, gr) },
		}, p0, &optimize.Settings{MajorIterations: 2000}, &optimize.LBFGS{})
		if res != nil && validVec(res.X) && res.F < bestF && (err == nil || res.F < math.Inf(1)) {
			best, bestF = res.X, res.F
		}
	}
	if best == nil {
		return nil, fmt.Errorf("estimate: GNP could not embed the landmarks")
	}
	lx := best
	// Hosts: start near the closest landmark, a few perturbed starts.
	for i := range n {
		if l := slices.Index(d.marks, i); l >= 0 {
			copy(g.x[i*D:i*D+D], lx[l*D:l*D+D])
		}
	}
	for i := range n {
		if slices.Contains(d.marks, i) {
			g.resid[i] = g.hostResidual(i, lx)
			continue
		}
		di := d.dist[i*L : i*L+L]
		host := func(p []float64, grad []float64) float64 {
			if grad != nil {
				clear(grad)
			}
			s := 0.0
			for l := range L {
				if m := di[l]; m > 0 {
					s += relTerm(p, lx[l*D:l*D+D], m, grad, 0, -1)
				}
			}
			return s
		}
		near, nd := 0, math.Inf(1)
		for l := range L {
			if v := di[l]; v < nd {
				near, nd = l, v
			}
		}
		if math.IsInf(nd, 1) {
			continue // reached no landmark: stays at the origin
		}
		hb, hf := []float64(nil), math.Inf(1)
		for s := range 3 {
			p0 := slices.Clone(lx[near*D : near*D+D])
			for k := range p0 {
				p0[k] += rng.NormFloat64() * nd * float64(s+1) / 2
			}
			res, _ := optimize.Minimize(optimize.Problem{
				Func: func(p []float64) float64 { return host(p, nil) },
				Grad: func(gr, p []float64) { host(p, gr) },
			}, p0, &optimize.Settings{MajorIterations: 500}, &optimize.BFGS{})
			if res != nil && validVec(res.X) && res.F < hf {
				hb, hf = res.X, res.F
			}
		}
		if hb != nil {
			copy(g.x[i*D:i*D+D], hb)
		}
		g.resid[i] = g.hostResidual(i, lx)
	}
	return g, nil
}

// relTerm adds ((‖a−b‖ − m)/m)² and, when grad is not nil, its gradient
// with respect to a (at offset ga) and b (at offset gb; -1 for none).
func relTerm(a, b []float64, m float64, grad []float64, ga, gb int) float64 {
	d2 := 0.0
	for k := range a {
		t := a[k] - b[k]
		d2 += t * t
	}
	d := math.Sqrt(d2 + 1e-12)
	r := (d - m) / m
	if grad != nil {
		c := 2 * r / m / d
		for k := range a {
			t := (a[k] - b[k]) * c
			grad[ga+k] += t
			if gb >= 0 {
				grad[gb+k] -= t
			}
		}
	}
	return r * r
}

func (g *GNP) hostResidual(i int, lx []float64) float64 {
	L, D := g.d.L, g.dim
	s, c := 0.0, 0
	for l := range L {
		m := g.d.dist[i*L+l]
		if !(m > 0) {
			continue
		}
		d2 := 0.0
		for k := range D {
			t := g.x[i*D+k] - lx[l*D+k]
			d2 += t * t
		}
		s += math.Abs(math.Sqrt(d2)-m) / m
		c++
	}
	if c == 0 {
		return 1
	}
	return s / float64(c)
}

// Landmarks returns the landmark node indices.
func (g *GNP) Landmarks() []int { return g.d.Landmarks() }

// Len returns the number of nodes.
func (g *GNP) Len() int { return g.d.n }

// Estimate returns the Euclidean distance between i's and j's coordinates.
func (g *GNP) Estimate(i, j int) float64 {
	if i == j {
		return 0
	}
	D := g.dim
	xi, xj := g.x[i*D:i*D+D], g.x[j*D:j*D+D]
	s := 0.0
	for k := range xi {
		t := xi[k] - xj[k]
		s += t * t
	}
	return math.Sqrt(s)
}

// Uncertainty is the mean of the two hosts' mean relative error to their
// landmarks after placement.
func (g *GNP) Uncertainty(i, j int) float64 { return (g.resid[i] + g.resid[j]) / 2 }
