package control

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/overworld/overworld/estimate"
)

// coords places the nodes in network coordinates and estimates a player's
// RTT to a node from the player's measured samples.
//
// The nodes' coordinates come from estimate.Vivaldi (serf's coordinate
// client) run over the node-to-node RTT matrix for vivaldiRounds rounds in
// which every node samples every other; they are converted to ms. A
// player's coordinate is fitted to its own samples only, GNP-style: the
// point x and height h ≥ 0 minimising Σ_j ((‖x − y_j‖ + h + H_j − m_j)/m_j)²
// over the measured nodes j (y_j a node's position, H_j its height plus
// adjustment, m_j the measured RTT), by Levenberg–Marquardt from the
// nearest measured node. The fit reads the samples in node order,
// so it is a deterministic function of them: a plane rebuilt from the same
// samples estimates the same RTTs.
type coords struct {
	dim int
	pos [][]float64 // node -> position, ms
	hgt []float64   // node -> height + adjustment, ms
	// known is false for a node with no RTT to any other node (a site
	// the RTT table does not know, not measured yet): it has no
	// position, a player's RTT to it is not estimated (MaxRTT until the
	// player measures it), and a player's samples to it place nothing.
	known []bool
}

const (
	vivaldiRounds = 200
	fitIters      = 50
)

// newCoords fits the coordinates of the nodes whose RTT matrix is rtt. A
// lone node has no geometry to fit: it sits at the origin (AddNode fits
// the pair anew when a second node comes).
func newCoords(rtt [][]float64, seed uint64) (*coords, error) {
	n := len(rtt)
	if n == 1 {
		d := int(estimate.DefaultVivaldiConfig().Serf.Dimensionality)
		return &coords{dim: d, pos: [][]float64{make([]float64, d)}, hgt: []float64{0}, known: []bool{true}}, nil
	}
	v, err := estimate.NewVivaldi(n, estimate.DefaultVivaldiConfig(), rand.New(rand.NewPCG(seed, 0x636f6f7264)))
	if err != nil {
		return nil, fmt.Errorf("%w: network coordinates: %v", ErrConfig, err)
	}
	var samples []estimate.Sample
	known := make([]bool, n)
	for i := range n {
		for j := range n {
			if i != j && !math.IsNaN(rtt[i][j]) {
				samples = append(samples, estimate.Sample{From: i, To: j, RTT: math.Max(rtt[i][j], 0.01)})
				known[i], known[j] = true, true
			}
		}
	}
	for range vivaldiRounds {
		v.Observe(samples, nil)
	}
	c := &coords{pos: make([][]float64, n), hgt: make([]float64, n), known: known}
	for i := range n {
		co := v.Coordinate(i)
		c.dim = len(co.Vec)
		if c.dim > maxDim {
			return nil, fmt.Errorf("%w: network coordinates of %d dimensions, at most %d", ErrConfig, c.dim, maxDim)
		}
		p := make([]float64, len(co.Vec))
		for k, x := range co.Vec {
			p[k] = x * 1000 // serf coordinates are in seconds
		}
		c.pos[i] = p
		c.hgt[i] = (co.Height + co.Adjustment) * 1000
	}
	return c, nil
}

// fill writes into row the player's RTT to every node: the measured value
// where meas is not NaN, else the estimate from the fitted coordinate
// times 1+margin, clamped to [0, MaxRTT]; MaxRTT to a node that is not
// known, or for a player who measured no known node.
func (c *coords) fill(meas, row []float64, margin float64) {
	if !slices.ContainsFunc(meas, math.IsNaN) {
		copy(row, meas)
		return
	}
	x, h := c.fit(meas)
	for j := range row {
		switch {
		case !math.IsNaN(meas[j]):
			row[j] = meas[j]
		case x == nil || !c.known[j]:
			row[j] = ms(MaxRTT)
		default:
			row[j] = min(max((dist(x, c.pos[j])+h+c.hgt[j])*(1+margin), 0), ms(MaxRTT))
		}
	}
}

// fit returns the player's position and height (see coords), by
// Levenberg–Marquardt on the relative residuals from the nearest measured
// node's position; nil if it measured no known node.
func (c *coords) fit(meas []float64) ([]float64, float64) {
	near := -1
	for j, m := range meas {
		if !math.IsNaN(m) && c.known[j] && (near < 0 || m < meas[near]) {
			near = j
		}
	}
	if near < 0 {
		return nil, 0
	}
	d := c.dim
	x := append(append([]float64(nil), c.pos[near]...), math.Max(meas[near]-c.hgt[near], 0))
	n := d + 1
	jtj := make([]float64, n*n)
	jtr := make([]float64, n)
	a := make([]float64, n*n)
	step := make([]float64, n)
	nx := make([]float64, n)
	f := c.loss(meas, x[:d], x[d])
	lambda := 1e-2
	for range fitIters {
		clear(jtj)
		clear(jtr)
		for j, m := range meas {
			if math.IsNaN(m) || !c.known[j] {
				continue
			}
			m = math.Max(m, 0.1)
			dj := dist(x[:d], c.pos[j])
			r := (dj + x[d] + c.hgt[j] - m) / m
			var g [maxDim + 1]float64
			for k := range d {
				if dj > 1e-9 {
					g[k] = (x[k] - c.pos[j][k]) / (dj * m)
				}
			}
			g[d] = 1 / m
			for u := range n {
				jtr[u] += g[u] * r
				for v := range n {
					jtj[u*n+v] += g[u] * g[v]
				}
			}
		}
		improved := false
		for range 8 {
			copy(a, jtj)
			for u := range n {
				a[u*n+u] += lambda * (jtj[u*n+u] + 1e-9)
				step[u] = -jtr[u]
			}
			if !solve(a, step, n) {
				lambda *= 4
				continue
			}
			for u := range n {
				nx[u] = x[u] + step[u]
			}
			nx[d] = math.Max(nx[d], 0)
			if nf := c.loss(meas, nx[:d], nx[d]); nf < f {
				done := f-nf <= 1e-6*f
				copy(x, nx)
				f = nf
				lambda = math.Max(lambda/3, 1e-7)
				improved = !done
				break
			}
			lambda *= 4
		}
		if !improved {
			break
		}
	}
	return x[:d], x[d]
}

// maxDim bounds the coordinates' dimensions (serf's default is 8).
const maxDim = 16

// solve solves a·x = b in place (b becomes x) by Gaussian elimination with
// partial pivoting; false when a is singular.
func solve(a, b []float64, n int) bool {
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r*n+col]) > math.Abs(a[piv*n+col]) {
				piv = r
			}
		}
		if math.Abs(a[piv*n+col]) < 1e-300 {
			return false
		}
		if piv != col {
			for k := range n {
				a[col*n+k], a[piv*n+k] = a[piv*n+k], a[col*n+k]
			}
			b[col], b[piv] = b[piv], b[col]
		}
		for r := col + 1; r < n; r++ {
			fct := a[r*n+col] / a[col*n+col]
			for k := col; k < n; k++ {
				a[r*n+k] -= fct * a[col*n+k]
			}
			b[r] -= fct * b[col]
		}
	}
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < n; k++ {
			s -= a[r*n+k] * b[k]
		}
		b[r] = s / a[r*n+r]
	}
	return true
}

func (c *coords) loss(meas, x []float64, h float64) float64 {
	s := 0.0
	for j, m := range meas {
		if math.IsNaN(m) || !c.known[j] {
			continue
		}
		m = math.Max(m, 0.1)
		r := (dist(x, c.pos[j]) + h + c.hgt[j] - m) / m
		s += r * r
	}
	return s
}

func dist(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		t := a[k] - b[k]
		s += t * t
	}
	return math.Sqrt(s)
}
