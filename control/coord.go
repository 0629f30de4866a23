package control

import (
	"fmt"
	"math"
	"math/rand/v2"

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
// adjustment, m_j the measured RTT), by gradient descent with backtracking
// from the nearest measured node. The fit reads the samples in node order,
// so it is a deterministic function of them: a plane rebuilt from the same
// samples estimates the same RTTs.
type coords struct {
	dim int
	pos [][]float64 // node -> position, ms
	hgt []float64   // node -> height + adjustment, ms
}

const (
	vivaldiRounds = 200
	fitIters      = 150
)

func newCoords(rtt [][]float64, seed uint64) (*coords, error) {
	n := len(rtt)
	v, err := estimate.NewVivaldi(n, estimate.DefaultVivaldiConfig(), rand.New(rand.NewPCG(seed, 0x636f6f7264)))
	if err != nil {
		return nil, fmt.Errorf("%w: network coordinates: %v", ErrConfig, err)
	}
	var samples []estimate.Sample
	for i := range n {
		for j := range n {
			if i != j && !math.IsNaN(rtt[i][j]) {
				samples = append(samples, estimate.Sample{From: i, To: j, RTT: math.Max(rtt[i][j], 0.01)})
			}
		}
	}
	for range vivaldiRounds {
		v.Observe(samples, nil)
	}
	c := &coords{pos: make([][]float64, n), hgt: make([]float64, n)}
	for i := range n {
		co := v.Coordinate(i)
		c.dim = len(co.Vec)
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
// times 1+margin, clamped to [0, MaxRTT].
func (c *coords) fill(meas, row []float64, margin float64) {
	x, h := c.fit(meas)
	for j := range row {
		if !math.IsNaN(meas[j]) {
			row[j] = meas[j]
			continue
		}
		row[j] = min(max((dist(x, c.pos[j])+h+c.hgt[j])*(1+margin), 0), ms(MaxRTT))
	}
}

// fit returns the player's position and height (see coords).
func (c *coords) fit(meas []float64) ([]float64, float64) {
	near := -1
	for j, m := range meas {
		if !math.IsNaN(m) && (near < 0 || m < meas[near]) {
			near = j
		}
	}
	x := append([]float64(nil), c.pos[near]...)
	h := math.Max(meas[near]-c.hgt[near], 0)
	f := c.loss(meas, x, h)
	gx := make([]float64, c.dim)
	nx := make([]float64, c.dim)
	step := 1.0
	for range fitIters {
		gh := c.grad(meas, x, h, gx)
		norm := gh * gh
		for _, g := range gx {
			norm += g * g
		}
		if norm < 1e-18 {
			break
		}
		for {
			for k := range x {
				nx[k] = x[k] - step*gx[k]
			}
			nh := math.Max(h-step*gh, 0)
			if nf := c.loss(meas, nx, nh); nf < f {
				copy(x, nx)
				h, f = nh, nf
				step *= 2
				break
			}
			step /= 4
			if step < 1e-9 {
				return x, h
			}
		}
	}
	return x, h
}

func (c *coords) loss(meas, x []float64, h float64) float64 {
	s := 0.0
	for j, m := range meas {
		if math.IsNaN(m) {
			continue
		}
		m = math.Max(m, 0.1)
		r := (dist(x, c.pos[j]) + h + c.hgt[j] - m) / m
		s += r * r
	}
	return s
}

// grad writes the loss's gradient in x into gx and returns its derivative
// in h.
func (c *coords) grad(meas, x []float64, h float64, gx []float64) float64 {
	clear(gx)
	gh := 0.0
	for j, m := range meas {
		if math.IsNaN(m) {
			continue
		}
		m = math.Max(m, 0.1)
		d := dist(x, c.pos[j])
		r := 2 * (d + h + c.hgt[j] - m) / (m * m)
		gh += r
		if d > 1e-9 {
			for k := range x {
				gx[k] += r * (x[k] - c.pos[j][k]) / d
			}
		}
	}
	return gh
}

func dist(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		t := a[k] - b[k]
		s += t * t
	}
	return math.Sqrt(s)
}
