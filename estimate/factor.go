package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/overworld/overworld/geo"
	"gonum.org/v1/gonum/optimize"
)

// FactorConfig configures Factor. Start from DefaultFactorConfig.
type FactorConfig struct {
	// Rank is the number of latent factors per node. 10 fits the PlanetLab
	// matrices best at 32 neighbours (5 underfits; 20 overfits the ~13% of
	// pairs measured).
	Rank int
	// Lambda is the L2 penalty on the factors (not on the biases).
	Lambda float64
	// Huber is the width, in log-RTT units, of the quadratic zone of the
	// Huber loss of the second stage: residuals beyond it (pairs that
	// violate the low-rank structure, e.g. detour routes) pull linearly, not
	// quadratically. 0.1 ≈ 10% relative error.
	Huber float64
	// WarmIters is the number of L-BFGS iterations of the first stage
	// (squared log error) on a cold start; it finds a good basin that the
	// non-smooth robust stage cannot find from random factors.
	WarmIters int
	// Iters is the number of iterations of the robust stage on a cold start.
	Iters int
	// RefitIters is the number of robust iterations when refitting a model
	// already fitted (a new snapshot, more samples).
	RefitIters int
	// Window is the number of recent samples kept per pair; the pair's RTT
	// is their minimum, since queueing only ever adds delay.
	Window int
	// Direct answers a measured pair with its measurement (the minimum of
	// its window) instead of the model: the model smooths over pairs that
	// violate the low-rank structure, the measurement does not.
	Direct bool
	// Step is the learning rate of the online update: once the model has
	// been fitted, every sample also takes one stochastic gradient step of
	// the robust loss on its pair's six parameter vectors (O(Rank) work),
	// so estimates track the network between refits. 0 disables it.
	Step float64
	// Detour, when > 0, answers an unmeasured pair with the best two-hop
	// path through a common measured peer, min_c meas(a,c) + meas(c,b),
	// when that path is shorter than Detour × the model: it catches the
	// small RTTs (nodes at one site) that a low-rank model overestimates.
	// The paths are recomputed at each Fit.
	Detour float64
	// Embed, when > 0, also fits a Euclidean embedding with heights in
	// Embed dimensions to the same pairs (the metric model of Vivaldi,
	// fitted centrally on the robust log loss, started from the low-rank
	// model's estimates by multidimensional scaling) and blends it in:
	// log estimate = (1 − EmbedWeight) · low-rank + EmbedWeight · embedding.
	// The two err on different pairs (the embedding on detour routes, the
	// low-rank model on small RTTs within a region), so the blend is more
	// accurate than either.
	Embed int
	// EmbedWeight is the embedding's share of the blend, in [0, 1].
	EmbedWeight float64
	// Local, when > 0, corrects an unmeasured pair {a, b} by the models'
	// errors on the measured pairs next to it: the log residuals
	// r(a, c) = log meas(a, c) − log blend(a, c) of a's measured peers c,
	// weighted by how close c is to b relative to a (w = exp(−blend(c, b) /
	// (blend(a, b) · LocalWidth))), and the same from b's side. The
	// estimate is multiplied by exp(Local · Σ w·r / (Σ w + 0.1)): a measured
	// path to a node near b says how far b is from a better than a global
	// model does (a node whose routes to a region detour, a site the
	// models place badly). Recomputed at each Fit.
	Local float64
	// LocalWidth is the width of the Local weights, as a share of the
	// pair's own estimate (> 0 when Local > 0).
	LocalWidth float64
}

// DefaultFactorConfig returns the configuration measured best on PlanetLab
// slice 1 (see the package tests and lab estimate): rank 10 and λ 0.3 with
// 32 neighbours, and an 8-dimensional embedding blended in at half weight
// and the local correction at gain 0.5 and width 0.1, tuned with 16
// neighbours on the pairs never probed.
func DefaultFactorConfig() FactorConfig {
	return FactorConfig{Rank: 10, Lambda: 0.3, Huber: 0.1, WarmIters: 400, Iters: 600, RefitIters: 200, Window: 4, Direct: true, Step: 0.0005, Detour: 1, Embed: 8, EmbedWeight: 0.5, Local: 0.5, LocalWidth: 0.1}
}

// Validate checks c.
func (c FactorConfig) Validate() (FactorConfig, error) {
	switch {
	case c.Rank < 1 || c.Rank > 100:
		return c, fmt.Errorf("%w: rank %d, want 1..100", ErrConfig, c.Rank)
	case !(c.Lambda >= 0) || math.IsInf(c.Lambda, 0):
		return c, fmt.Errorf("%w: lambda %g, want ≥ 0", ErrConfig, c.Lambda)
	case !(c.Huber > 0) || math.IsInf(c.Huber, 0):
		return c, fmt.Errorf("%w: huber width %g, want > 0", ErrConfig, c.Huber)
	case c.WarmIters < 0 || c.Iters < 1 || c.RefitIters < 1:
		return c, fmt.Errorf("%w: iterations warm %d, robust %d, refit %d; want ≥ 0, ≥ 1, ≥ 1", ErrConfig, c.WarmIters, c.Iters, c.RefitIters)
	case !(c.Detour >= 0) || math.IsInf(c.Detour, 0):
		return c, fmt.Errorf("%w: detour factor %g, want ≥ 0", ErrConfig, c.Detour)
	case !(c.Step >= 0) || c.Step > 1:
		return c, fmt.Errorf("%w: online step %g, want in [0, 1]", ErrConfig, c.Step)
	case c.Embed < 0 || c.Embed > 50:
		return c, fmt.Errorf("%w: embedding dimensions %d, want 0..50", ErrConfig, c.Embed)
	case !(c.EmbedWeight >= 0) || c.EmbedWeight > 1:
		return c, fmt.Errorf("%w: embedding weight %g, want in [0, 1]", ErrConfig, c.EmbedWeight)
	case !(c.Local >= 0) || c.Local > 1:
		return c, fmt.Errorf("%w: local correction %g, want in [0, 1]", ErrConfig, c.Local)
	case c.Local > 0 && !(c.LocalWidth > 0 && c.LocalWidth <= 10):
		return c, fmt.Errorf("%w: local width %g, want in (0, 10]", ErrConfig, c.LocalWidth)
	case c.Window < 1 || c.Window > 64:
		return c, fmt.Errorf("%w: window %d, want 1..64", ErrConfig, c.Window)
	}
	return c, nil
}

// Factor is overworld's estimator beyond the paper: robust low-rank
// matrix factorisation of the log-RTT matrix with per-node biases, fitted
// centrally (like the paper's Netvigator repository) to the RTTs the nodes
// measure to their neighbours:
//
//	log d(i, j) ≈ b_i + b_j + (u_i·v_j + u_j·v_i) / 2
//
// The log makes the loss a relative error, which is the paper's metric;
// the symmetric bilinear term is not constrained to a metric space, so it
// can represent the triangle-inequality violations (detour routes) that
// make a Euclidean embedding (Vivaldi, GNP) err on about a quarter of the
// PlanetLab pairs; the biases carry each node's access delay. The fit
// minimises the Huber loss of the log residuals plus an L2 penalty on the
// factors with L-BFGS (gonum/optimize), starting from the squared loss on a
// cold start (graduated non-convexity). The source paper of the PlanetLab
// data (Zhu et al. 2017) uses matrix completion on the same matrices.
//
// With Embed > 0 (the default) a Euclidean embedding with heights is
// fitted to the same pairs and blended in (see FactorConfig.Embed); with
// Local > 0 (the default) an unmeasured pair is corrected by the blend's
// residuals on the measured paths next to it (see FactorConfig.Local).
//
// Observe only records samples (each pair keeps the minimum of its last
// Window samples); Fit refits the model, warm-started from the previous
// fit. Estimates come from the last fit.
type Factor struct {
	cfg        FactorConfig
	n          int
	rng        *rand.Rand
	x          []float64 // b[n] | u[n·R] | v[n·R]
	fitted     bool
	pairs      map[int]int // i*n+j (i<j) -> index into obs
	obs        []pairObs
	resid      []float64  // per node: median |log residual| on its pairs
	meas       []float64  // n×n: the live window minimum of a measured pair, NaN otherwise
	ub         []float64  // n×n: best two-hop path through a measured peer (Detour > 0)
	emb        *embedding // Embed > 0
	local      []float64  // n×n: log correction of an unmeasured pair (Local > 0, n ≤ embedCacheMax)
	blends     []float64  // n×n: every pair's blend at the last fit, for the corrections
	adj        [][]int    // per node: its measured peers at the last Fit (Local > 0)
	res        []float64  // aligned with adj, node x's at res[resOff[x]:resOff[x+1]]: log residual of the blend
	resOff     []int
	km         []float64 // n×n great-circle distance of known positions (SetPositions), nil otherwise
	goff       []float64 // n×n: log of the geographic base RTT a + b·km, nil without positions
	geoA, geoB float64   // the geographic base's fitted terms: ms, ms per km
}

type pairObs struct {
	i, j    int
	samples []float64 // ring of the last Window samples
	next    int
	live    bool
}

// NewFactor creates the estimator for n nodes, factors initialised small
// and random from rng.
func NewFactor(n int, cfg FactorConfig, rng *rand.Rand) (*Factor, error) {
	if rng == nil {
		return nil, ErrNilRand
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: %d nodes", ErrTooFew, n)
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	f := &Factor{cfg: cfg, n: n, rng: rng, x: make([]float64, n*(1+2*cfg.Rank)), pairs: map[int]int{}, resid: make([]float64, n), meas: make([]float64, n*n)}
	for k := range f.meas {
		f.meas[k] = math.NaN()
	}
	if cfg.Embed > 0 {
		f.emb = newEmbedding(n, cfg.Embed)
	}
	for i := range n {
		f.initNode(i, math.Log(100))
	}
	return f, nil
}

// initNode sets node i's bias so that a fresh pair estimates exp(2·bias)
// and draws its factors small and random.
func (f *Factor) initNode(i int, logMean float64) {
	R := f.cfg.Rank
	f.x[i] = logMean / 2
	u, v := f.x[f.n+i*R:f.n+(i+1)*R], f.x[f.n+f.n*R+i*R:f.n+f.n*R+(i+1)*R]
	for k := range R {
		u[k] = f.rng.NormFloat64() * 0.1
		v[k] = f.rng.NormFloat64() * 0.1
	}
	f.resid[i] = 1
	if f.emb != nil {
		f.emb.initNode(i)
	}
}

// Len returns the number of nodes.
func (f *Factor) Len() int { return f.n }

// Estimate returns the RTT for {i, j} in ms: the measurement of a measured
// pair (Direct), else the blend of the models with the local correction
// (Local), or the two-hop path through a measured peer when that is
// shorter (Detour).
func (f *Factor) Estimate(i, j int) float64 {
	if i == j {
		return 0
	}
	if f.cfg.Direct {
		if m := f.meas[i*f.n+j]; m == m { // not NaN
			return m
		}
	}
	m := f.blend(i, j)
	if f.cfg.Local > 0 && f.adj != nil {
		if f.local != nil {
			m *= math.Exp(f.local[i*f.n+j])
		} else {
			m *= math.Exp(f.localLog(i, j, m, nil))
		}
	}
	if f.ub != nil {
		if u := f.ub[i*f.n+j]; u < f.cfg.Detour*m {
			return u
		}
	}
	return m
}

// model returns the fitted model's RTT for {i, j}, i ≠ j.
func (f *Factor) model(i, j int) float64 { return math.Exp(f.logModel(i, j)) }

// logModel returns the fitted low-rank model's log RTT for {i, j}, i ≠ j.
func (f *Factor) logModel(i, j int) float64 {
	R, n := f.cfg.Rank, f.n
	u, v := f.x[n:n+n*R], f.x[n+n*R:]
	ui, uj, vi, vj := u[i*R:i*R+R], u[j*R:j*R+R], v[i*R:i*R+R], v[j*R:j*R+R]
	s := 0.0
	for k := range ui {
		s += ui[k]*vj[k] + uj[k]*vi[k]
	}
	l := f.x[i] + f.x[j] + s/2
	if f.goff != nil {
		l += f.goff[i*n+j]
	}
	return l
}

// blend returns the estimate of the fitted models for {i, j}, i ≠ j: the
// low-rank model, blended in the log domain with the embedding when there
// is one and it has been fitted.
func (f *Factor) blend(i, j int) float64 {
	m := f.logModel(i, j)
	if f.emb == nil || !f.emb.fitted {
		return math.Exp(m)
	}
	w := f.cfg.EmbedWeight
	return math.Exp((1-w)*m + w*f.emb.log(i, j))
}

// Uncertainty is the mean of the two nodes' median absolute relative
// residual on their measured pairs after the last fit (1 before any fit).
func (f *Factor) Uncertainty(i, j int) float64 { return (f.resid[i] + f.resid[j]) / 2 }

// Measurements returns the number of pairs with at least one live sample.
func (f *Factor) Measurements() int {
	c := 0
	for k := range f.obs {
		if f.obs[k].live {
			c++
		}
	}
	return c
}

// Observe records a round: a node that leaves has its pairs' samples
// dropped; one that returns starts from fresh factors; samples are added
// to their pair's window.
func (f *Factor) Observe(samples []Sample, changes []Change) {
	for _, c := range changes {
		if c.Node < 0 || c.Node >= f.n {
			continue
		}
		for k := range f.obs {
			if o := &f.obs[k]; o.i == c.Node || o.j == c.Node {
				o.live, o.samples, o.next = false, o.samples[:0], 0
				f.meas[o.i*f.n+o.j], f.meas[o.j*f.n+o.i] = math.NaN(), math.NaN()
			}
		}
		if c.Join {
			f.initNode(c.Node, 2*f.x[c.Node])
		}
	}
	for _, s := range samples {
		f.Add(s.From, s.To, s.RTT)
	}
}

// Add records one RTT sample for the pair {i, j}; invalid samples (i == j,
// out of range, NaN, ≤ 0) are ignored.
func (f *Factor) Add(i, j int, rtt float64) {
	if i == j || i < 0 || j < 0 || i >= f.n || j >= f.n || !(rtt > 0) || math.IsInf(rtt, 0) {
		return
	}
	if i > j {
		i, j = j, i
	}
	key := i*f.n + j
	k, ok := f.pairs[key]
	if !ok {
		k = len(f.obs)
		f.pairs[key] = k
		f.obs = append(f.obs, pairObs{i: i, j: j, samples: make([]float64, 0, f.cfg.Window)})
	}
	o := &f.obs[k]
	if len(o.samples) < f.cfg.Window {
		o.samples = append(o.samples, rtt)
	} else {
		o.samples[o.next] = rtt
		o.next = (o.next + 1) % f.cfg.Window
	}
	o.live = true
	m := slices.Min(o.samples)
	f.meas[i*f.n+j], f.meas[j*f.n+i] = m, m
	if f.fitted && f.cfg.Step > 0 {
		f.sgd(i, j, math.Log(m))
	}
}

// sgd takes one stochastic gradient step of the robust loss (and the
// factors' share of the L2 penalty) on the pair {i, j} towards log RTT y.
func (f *Factor) sgd(i, j int, y float64) {
	n, R := f.n, f.cfg.Rank
	u, v := f.x[n:n+n*R], f.x[n+n*R:]
	ui, uj, vi, vj := u[i*R:i*R+R], u[j*R:j*R+R], v[i*R:i*R+R], v[j*R:j*R+R]
	s := 0.0
	for k := range ui {
		s += ui[k]*vj[k] + uj[k]*vi[k]
	}
	r := f.x[i] + f.x[j] + s/2 - y
	if f.goff != nil {
		r += f.goff[i*n+j]
	}
	d := 2 * max(-f.cfg.Huber, min(f.cfg.Huber, r)) // Huber derivative
	lr := f.cfg.Step
	f.x[i] -= lr * d
	f.x[j] -= lr * d
	h, lam := d/2, 2*f.cfg.Lambda/float64(2*f.cfg.Rank+1)
	for k := range ui {
		a, b, c, e := ui[k], uj[k], vi[k], vj[k]
		ui[k] -= lr * (h*e + lam*a)
		vj[k] -= lr * (h*a + lam*e)
		uj[k] -= lr * (h*c + lam*b)
		vi[k] -= lr * (h*b + lam*c)
	}
}

// factorPair is one training pair: endpoints and log RTT.
type factorPair struct {
	i, j int
	y    float64
}

// Fit fits the model to the recorded pairs: the squared stage then the
// robust stage on the first fit, the robust stage only (RefitIters) after.
// It fails when no pair has been measured.
func (f *Factor) Fit() error {
	var tr []factorPair
	for _, o := range f.obs {
		if o.live && len(o.samples) > 0 {
			tr = append(tr, factorPair{o.i, o.j, math.Log(slices.Min(o.samples))})
		}
	}
	if len(tr) == 0 {
		return fmt.Errorf("%w: no pair measured", ErrTooFew)
	}
	f.geoBase(tr)
	if !f.fitted {
		mean := 0.0
		for _, p := range tr {
			mean += p.y
			if f.goff != nil {
				mean -= f.goff[p.i*f.n+p.j]
			}
		}
		mean /= float64(len(tr))
		for i := range f.n {
			f.x[i] = mean / 2
		}
		if f.cfg.WarmIters > 0 {
			f.minimise(tr, 0, f.cfg.WarmIters)
		}
		f.minimise(tr, f.cfg.Huber, f.cfg.Iters)
	} else {
		f.minimise(tr, f.cfg.Huber, f.cfg.RefitIters)
	}
	f.fitted = true
	if f.emb != nil {
		f.emb.fit(f, tr)
	}
	f.residuals(tr)
	f.bounds()
	f.corrections()
	return nil
}

// localPrior is the weight of a zero correction in Local's weighted mean:
// a pair with no measured path near it keeps the models' estimate.
const localPrior = 0.1

// corrections records each node's measured peers and the blend's log
// residuals on them, and tabulates the Local correction of every
// unmeasured pair (n ≤ embedCacheMax; beyond, Estimate computes it).
func (f *Factor) corrections() {
	if !(f.cfg.Local > 0) {
		f.adj, f.res, f.local = nil, nil, nil
		return
	}
	n := f.n
	f.adj, f.res = make([][]int, n), make([]float64, 0, 2*len(f.obs))
	off := make([]int, n+1)
	for _, o := range f.obs {
		if o.live {
			f.adj[o.i] = append(f.adj[o.i], o.j)
			f.adj[o.j] = append(f.adj[o.j], o.i)
		}
	}
	for i, nb := range f.adj {
		for _, c := range nb {
			f.res = append(f.res, math.Log(f.meas[i*n+c])-math.Log(f.blend(i, c)))
		}
		off[i+1] = len(f.res)
	}
	f.resOff = off
	if n > embedCacheMax {
		f.local = nil
		return
	}
	if f.local == nil {
		f.local = make([]float64, n*n)
	}
	// Every pair's blend once: each correction reads it at every measured
	// peer of both ends.
	if f.blends == nil {
		f.blends = make([]float64, n*n)
	}
	bl := f.blends
	for i := range n {
		for j := range n {
			if i != j {
				bl[i*n+j] = f.blend(i, j)
			}
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := 0.0
			if m := f.meas[i*n+j]; m != m { // unmeasured
				v = f.localLog(i, j, bl[i*n+j], bl)
			}
			f.local[i*n+j], f.local[j*n+i] = v, v
		}
	}
}

// localLog returns the Local log correction of the unmeasured pair {a, b}
// whose blended estimate is m; bl, if not nil, holds every pair's blend
// (n×n), which it reads instead of computing them.
func (f *Factor) localLog(a, b int, m float64, bl []float64) float64 {
	sw, sr := 0.0, 0.0
	scale := -1 / (m * f.cfg.LocalWidth)
	for _, side := range [2][2]int{{a, b}, {b, a}} {
		x, y := side[0], side[1]
		rs := f.res[f.resOff[x]:f.resOff[x+1]]
		for k, c := range f.adj[x] {
			if c == y {
				continue
			}
			var e float64
			if bl != nil {
				e = bl[c*f.n+y]
			} else {
				e = f.blend(c, y)
			}
			w := math.Exp(e * scale)
			sw += w
			sr += w * rs[k]
		}
	}
	return f.cfg.Local * sr / (sw + localPrior)
}

// bounds precomputes, for every pair, the best two-hop path through a
// common measured peer: ub(a, b) = min_c meas(a, c) + meas(c, b).
func (f *Factor) bounds() {
	if !(f.cfg.Detour > 0) {
		f.ub = nil
		return
	}
	n := f.n
	if f.ub == nil {
		f.ub = make([]float64, n*n)
	}
	for k := range f.ub {
		f.ub[k] = math.Inf(1)
	}
	adj := make([][]int, n)
	for _, o := range f.obs {
		if o.live {
			adj[o.i] = append(adj[o.i], o.j)
			adj[o.j] = append(adj[o.j], o.i)
		}
	}
	for c, nb := range adj {
		for x, a := range nb {
			da := f.meas[a*n+c]
			for _, b := range nb[x+1:] {
				if v := da + f.meas[c*n+b]; v < f.ub[a*n+b] {
					f.ub[a*n+b], f.ub[b*n+a] = v, v
				}
			}
		}
	}
}

// Profile returns, as an Estimator, the profile distance of the fitted
// model: the mean over third nodes c of |d̂(a, c) − d̂(b, c)|, in ms. By the
// triangle inequality it is a lower bound on d(a, b) on average; nodes at
// one site have nearly equal rows, so it finds them even where the model's
// own estimate of their RTT is poor. Cost O(n³); the result is a snapshot.
func (f *Factor) Profile() Estimator {
	n := f.n
	rows := make([]float64, n*n)
	for a := range n {
		for c := range n {
			if a != c {
				rows[a*n+c] = f.model(a, c)
			}
		}
	}
	p := make([]float64, n*n)
	for a := range n {
		ra := rows[a*n : a*n+n]
		for b := a + 1; b < n; b++ {
			rb := rows[b*n : b*n+n]
			s := 0.0
			for c := range n {
				s += math.Abs(ra[c] - rb[c])
			}
			s -= ra[b] + rb[a] // c = a and c = b compare a row's 0 with an RTT
			v := s / float64(max(1, n-2))
			p[a*n+b], p[b*n+a] = v, v
		}
	}
	return matrixEst{n, p}
}

type matrixEst struct {
	n int
	v []float64
}

func (m matrixEst) Len() int                  { return m.n }
func (m matrixEst) Estimate(i, j int) float64 { return m.v[i*m.n+j] }

func (f *Factor) residuals(tr []factorPair) {
	per := make([][]float64, f.n)
	for _, p := range tr {
		r := math.Abs(f.blend(p.i, p.j)/math.Exp(p.y) - 1)
		per[p.i] = append(per[p.i], r)
		per[p.j] = append(per[p.j], r)
	}
	for i, rs := range per {
		if len(rs) == 0 {
			f.resid[i] = 1
			continue
		}
		slices.Sort(rs)
		f.resid[i] = Quantile(rs, 0.5)
	}
}

// minimise runs L-BFGS on the loss (huber 0: squared) from f.x.
func (f *Factor) minimise(tr []factorPair, huber float64, iters int) {
	prob := optimize.Problem{
		Func: func(x []float64) float64 { return f.loss(x, nil, tr, huber) },
		Grad: func(g, x []float64) { f.loss(x, g, tr, huber) },
	}
	settings := &optimize.Settings{
		MajorIterations: iters,
		Converger:       &optimize.FunctionConverge{Absolute: 1e-10, Relative: 1e-10, Iterations: 50},
	}
	res, err := optimize.Minimize(prob, slices.Clone(f.x), settings, &optimize.LBFGS{})
	if res == nil || err != nil && !validVec(res.X) {
		return // keep the previous model
	}
	if validVec(res.X) {
		copy(f.x, res.X)
	}
}

func validVec(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// loss returns the objective at x and, when g is not nil, its gradient.
func (f *Factor) loss(x, g []float64, tr []factorPair, huber float64) float64 {
	n, R := f.n, f.cfg.Rank
	b, u, v := x[:n], x[n:n+n*R], x[n+n*R:]
	var gb, gu, gv []float64
	if g != nil {
		clear(g)
		gb, gu, gv = g[:n], g[n:n+n*R], g[n+n*R:]
	}
	sum := 0.0
	for _, p := range tr {
		i, j := p.i, p.j
		ui, uj, vi, vj := u[i*R:i*R+R], u[j*R:j*R+R], v[i*R:i*R+R], v[j*R:j*R+R]
		s := 0.0
		for k := range ui {
			s += ui[k]*vj[k] + uj[k]*vi[k]
		}
		r := b[i] + b[j] + s/2 - p.y
		if f.goff != nil {
			r += f.goff[i*n+j]
		}
		var d float64 // d loss / d r
		if huber > 0 && math.Abs(r) > huber {
			sum += huber * (2*math.Abs(r) - huber)
			d = 2 * huber * math.Copysign(1, r)
		} else {
			sum += r * r
			d = 2 * r
		}
		if g == nil {
			continue
		}
		gb[i] += d
		gb[j] += d
		h := d / 2
		gui, guj, gvi, gvj := gu[i*R:i*R+R], gu[j*R:j*R+R], gv[i*R:i*R+R], gv[j*R:j*R+R]
		for k := range ui {
			gui[k] += h * vj[k]
			gvj[k] += h * ui[k]
			guj[k] += h * vi[k]
			gvi[k] += h * uj[k]
		}
	}
	lam := f.cfg.Lambda
	for k := n; k < len(x); k++ {
		sum += lam * x[k] * x[k]
		if g != nil {
			g[k] += 2 * lam * x[k]
		}
	}
	return sum
}

// SetPositions gives the estimator every node's position (degrees, north
// and east positive) before its first Fit: the model then carries the
// geographic base RTT a + b·km of every pair as a fixed offset of its log
// RTT (a and b fitted to the measured pairs at each Fit), and its factors
// and biases learn the departure from it. It is GeoFactor's geographic
// model.
func (f *Factor) SetPositions(lat, lon []float64) error {
	n := f.n
	if len(lat) != n || len(lon) != n {
		return fmt.Errorf("%w: %d latitudes and %d longitudes for %d nodes", ErrShape, len(lat), len(lon), n)
	}
	for i := range n {
		if !(lat[i] >= -90 && lat[i] <= 90 && lon[i] >= -180 && lon[i] <= 180) {
			return fmt.Errorf("%w: node %d at (%g, %g), want latitude in [-90, 90] and longitude in [-180, 180]", ErrConfig, i, lat[i], lon[i])
		}
	}
	f.km = make([]float64, n*n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			d := geo.GreatCircleKm(lat[i], lon[i], lat[j], lon[j])
			f.km[i*n+j], f.km[j*n+i] = d, d
		}
	}
	return nil
}

// geoBase fits the geographic base RTT a + b·km to the measured pairs (least
// squares of the relative error) and tabulates its log.
func (f *Factor) geoBase(tr []factorPair) {
	if f.km == nil {
		return
	}
	n := f.n
	// minimise Σ ((a + b·x)/m − 1)²: weighted least squares, weights 1/m².
	var s00, s01, s11, t0, t1 float64
	for _, p := range tr {
		m := math.Exp(p.y)
		x := f.km[p.i*n+p.j]
		w := 1 / (m * m)
		s00 += w
		s01 += w * x
		s11 += w * x * x
		t0 += w * m
		t1 += w * x * m
	}
	det := s00*s11 - s01*s01
	a, b := 1.0, 0.01
	if det > 0 {
		a, b = (t0*s11-t1*s01)/det, (s00*t1-s01*t0)/det
	}
	a, b = max(a, 1), max(b, 0.01)
	f.geoA, f.geoB = a, b
	if f.goff == nil {
		f.goff = make([]float64, n*n)
	}
	for k, x := range f.km {
		f.goff[k] = math.Log(a + b*x)
	}
}
