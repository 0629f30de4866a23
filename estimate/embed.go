package estimate

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// embedding is the second model Factor blends in when FactorConfig.Embed
// is > 0: a Euclidean embedding with per-node heights and biases, fitted
// centrally to the same measured pairs,
//
//	d(i, j) ≈ (e^{h_i} + e^{h_j} + ‖x_i − x_j‖) · e^{b_i + b_j}
//
// with x_i in Embed dimensions. It is the metric model of Vivaldi with
// heights, fitted by L-BFGS on the same robust log loss as the low-rank
// model instead of by springs. Its errors differ from the low-rank
// model's: it is better on small RTTs (nodes of one region, which a
// metric embedding keeps close), worse on detour pairs, so their blend in
// the log domain beats either.
type embedding struct {
	n, d   int
	x      []float64 // h[n] | b[n] | X[n·d]
	fitted bool
	cache  []float64 // n×n log estimates after a fit (n ≤ embedCacheMax), nil otherwise
}

// embedCacheMax is the largest number of nodes for which the embedding's
// log estimates are kept as an n×n table after each fit (32 MB at 2,048),
// so that an estimate costs a lookup instead of a distance.
const embedCacheMax = 2048

func newEmbedding(n, d int) *embedding {
	return &embedding{n: n, d: d, x: make([]float64, n*(2+d))}
}

func (e *embedding) parts(x []float64) (h, b, X []float64) {
	n := e.n
	return x[:n], x[n : 2*n], x[2*n:]
}

// logModel returns the model's log RTT for {i, j}, i ≠ j, with the base
// (heights plus distance) and the distance.
func (e *embedding) logModel(x []float64, i, j int) (l, base, dist float64) {
	h, b, X := e.parts(x)
	d := e.d
	xi, xj := X[i*d:i*d+d], X[j*d:j*d+d]
	for k := range xi {
		v := xi[k] - xj[k]
		dist += v * v
	}
	dist = math.Sqrt(dist + 1e-6)
	base = math.Exp(h[i]) + math.Exp(h[j]) + dist
	return math.Log(base) + b[i] + b[j], base, dist
}

// initNode places a new node at the origin with a small height.
func (e *embedding) initNode(i int) {
	h, b, X := e.parts(e.x)
	h[i], b[i] = math.Log(5), 0
	clear(X[i*e.d : i*e.d+e.d])
	if e.cache != nil {
		for j := range e.n {
			if j != i {
				l, _, _ := e.logModel(e.x, i, j)
				e.cache[i*e.n+j], e.cache[j*e.n+i] = l, l
			}
		}
	}
}

// log returns the fitted model's log RTT for {i, j}, i ≠ j.
func (e *embedding) log(i, j int) float64 {
	if e.cache != nil {
		return e.cache[i*e.n+j]
	}
	l, _, _ := e.logModel(e.x, i, j)
	return l
}

// refresh rebuilds the table of log estimates after a fit.
func (e *embedding) refresh() {
	n := e.n
	if n > embedCacheMax {
		e.cache = nil
		return
	}
	if e.cache == nil {
		e.cache = make([]float64, n*n)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			l, _, _ := e.logModel(e.x, i, j)
			e.cache[i*n+j], e.cache[j*n+i] = l, l
		}
	}
}

// init places the nodes by classical multidimensional scaling of the
// low-rank model's estimates (the top d eigenvectors of the double-centred
// squared-distance matrix), heights 5 ms, biases 0: a start near a good
// basin, which springs or gradient steps from random points do not find.
func (e *embedding) init(f *Factor) {
	n, d := e.n, e.d
	d2 := make([]float64, n*n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := f.model(i, j)
			d2[i*n+j], d2[j*n+i] = v*v, v*v
		}
	}
	rm := make([]float64, n)
	all := 0.0
	for i := range n {
		for j := range n {
			rm[i] += d2[i*n+j] / float64(n)
		}
		all += rm[i] / float64(n)
	}
	B := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			B.SetSym(i, j, -0.5*(d2[i*n+j]-rm[i]-rm[j]+all))
		}
	}
	h, b, X := e.parts(e.x)
	for i := range n {
		h[i], b[i] = math.Log(5), 0
	}
	clear(X)
	var eig mat.EigenSym
	if !eig.Factorize(B, true) {
		return // all at the origin: the fit starts from heights alone
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	idx := All(n)
	sort.SliceStable(idx, func(a, b int) bool { return vals[idx[a]] > vals[idx[b]] })
	for k := range min(d, n) {
		// 0.8: the estimates include the heights, which the distance
		// should not carry.
		sc := 0.8 * math.Sqrt(max(0, vals[idx[k]]))
		for i := range n {
			X[i*d+k] = vecs.At(i, idx[k]) * sc
		}
	}
}

// fit minimises the loss on tr: on the first fit from the MDS start (the
// squared stage, then the robust one), afterwards warm from the last fit.
func (e *embedding) fit(f *Factor, tr []factorPair) {
	c := f.cfg
	if !e.fitted {
		e.init(f)
		if c.WarmIters > 0 {
			e.minimise(tr, 0, c.Lambda, c.WarmIters)
		}
		e.minimise(tr, c.Huber, c.Lambda, c.Iters)
	} else {
		e.minimise(tr, c.Huber, c.Lambda, c.RefitIters)
	}
	e.fitted = true
	e.refresh()
}

func (e *embedding) minimise(tr []factorPair, huber, lambda float64, iters int) {
	prob := optimize.Problem{
		Func: func(x []float64) float64 { return e.loss(x, nil, tr, huber, lambda) },
		Grad: func(g, x []float64) { e.loss(x, g, tr, huber, lambda) },
	}
	settings := &optimize.Settings{
		MajorIterations: iters,
		Converger:       &optimize.FunctionConverge{Absolute: 1e-10, Relative: 1e-10, Iterations: 50},
	}
	res, err := optimize.Minimize(prob, slices.Clone(e.x), settings, &optimize.LBFGS{})
	if res == nil || err != nil && !validVec(res.X) {
		return
	}
	if validVec(res.X) {
		copy(e.x, res.X)
	}
}

// loss is the Huber (huber 0: squared) loss of the log residuals plus an
// L2 penalty lambda on the biases (the heights and positions are free).
func (e *embedding) loss(x, g []float64, tr []factorPair, huber, lambda float64) float64 {
	n, d := e.n, e.d
	h, _, X := e.parts(x)
	var gh, gb, gX []float64
	if g != nil {
		clear(g)
		gh, gb, gX = e.parts(g)
	}
	sum := 0.0
	for _, p := range tr {
		i, j := p.i, p.j
		l, base, dist := e.logModel(x, i, j)
		r := l - p.y
		var dr float64
		if huber > 0 && math.Abs(r) > huber {
			sum += huber * (2*math.Abs(r) - huber)
			dr = 2 * huber * math.Copysign(1, r)
		} else {
			sum += r * r
			dr = 2 * r
		}
		if g == nil {
			continue
		}
		gb[i] += dr
		gb[j] += dr
		gh[i] += dr * math.Exp(h[i]) / base
		gh[j] += dr * math.Exp(h[j]) / base
		s := dr / base / dist
		for k := range d {
			v := (X[i*d+k] - X[j*d+k]) * s
			gX[i*d+k] += v
			gX[j*d+k] -= v
		}
	}
	for k := n; k < 2*n; k++ {
		sum += lambda * x[k] * x[k]
		if g != nil {
			g[k] += 2 * lambda * x[k]
		}
	}
	return sum
}
