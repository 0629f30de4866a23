package core

import (
	"cmp"
	"math"
	"slices"
)

// LowerBound returns a number no larger than the optimal Cost of p, so that
// a heuristic Solution is proven within (Cost − bound)/bound of the optimum.
//
// For KMedian it is the best Lagrangian bound found by 300 subgradient steps
// on the relaxation of "every player is assigned" (for multipliers λ,
// Σ_p λ_p plus the k smallest Σ_p min(0, d(p,c) − λ_p)); it never exceeds
// the linear-programming bound, which is usually within a percent of the
// optimum. For KCenter it is a packing bound: if k+1 players have
// pairwise disjoint sets of candidates within radius r (or a player has
// none), no k cores reach them all within r, so the optimum exceeds r; the
// largest such r is found by bisection over the latencies, trying players
// in order of fewest candidates within r. Both cost O(n·m) per step.
//
// Rounding is absorbed by a relative 1e-9 margin.
func LowerBound(p Problem) (float64, error) {
	in, err := newInst(p)
	if err != nil {
		return 0, err
	}
	var lb float64
	if in.obj == KCenter {
		lb = in.centerBound()
	} else {
		lb = in.medianBound()
	}
	return max(0, lb-relTol*lb), nil
}

// nearestAll returns each player's latency to its nearest candidate.
func (in *inst) nearestAll() []float64 {
	n := in.n
	near := make([]float64, n)
	for p := range near {
		near[p] = math.Inf(1)
	}
	for c := range in.m {
		for p, v := range in.lat[c*n : (c+1)*n] {
			near[p] = min(near[p], v)
		}
	}
	return near
}

func (in *inst) medianBound() float64 {
	n, m, k := in.n, in.m, in.k
	trivial := 0.0 // every player at its nearest candidate
	for _, v := range in.nearestAll() {
		trivial += v
	}
	if k == m {
		return trivial
	}
	// Upper bound for the step size, and starting multipliers: the greedy
	// solution and each player's latency in it.
	lambda := make([]float64, n)
	greedy := in.greedy()
	for p := range n {
		lambda[p] = math.Inf(1)
		for _, c := range greedy {
			lambda[p] = min(lambda[p], in.lat[c*n+p])
		}
	}
	ub := 0.0
	for _, v := range lambda {
		ub += v
	}
	best := trivial
	rho := make([]float64, m)
	idx := make([]int, m)
	g := make([]float64, n)
	theta, stall := 2.0, 0
	for range 300 {
		for c := range m {
			r := 0.0
			for p, v := range in.lat[c*n : (c+1)*n] {
				if d := v - lambda[p]; d < 0 {
					r += d
				}
			}
			rho[c], idx[c] = r, c
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(rho[a], rho[b]) })
		l, mag := 0.0, 0.0 // mag bounds the terms' magnitude, for rounding
		for _, v := range lambda {
			l += v
			mag += v
		}
		for _, c := range idx[:k] {
			l += rho[c]
			mag -= rho[c]
		}
		l -= relTol * mag
		if l > best*(1+relTol) {
			best, stall = max(best, l), 0
		} else if stall++; stall >= 20 {
			theta, stall = theta/2, 0
		}
		if ub-best <= relTol*ub || theta < 1e-4 {
			break
		}
		// Subgradient: 1 − (number of chosen candidates closer than λ_p).
		for p := range g {
			g[p] = 1
		}
		for _, c := range idx[:k] {
			for p, v := range in.lat[c*n : (c+1)*n] {
				if v < lambda[p] {
					g[p]--
				}
			}
		}
		norm := 0.0
		for _, v := range g {
			norm += v * v
		}
		if norm == 0 {
			break // l is the relaxation's optimum
		}
		step := theta * (ub - l) / norm
		for p := range lambda {
			lambda[p] = max(0, lambda[p]+step*g[p])
		}
	}
	return best
}

func (in *inst) centerBound() float64 {
	n, m, k := in.n, in.m, in.k
	trivial := 0.0 // the worst-placed player's nearest candidate
	for _, v := range in.nearestAll() {
		trivial = max(trivial, v)
	}
	if k == m {
		return trivial
	}
	vals := slices.Clone(in.lat)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	used := make([]bool, m)
	size := make([]int, n)
	order := make([]int, n)
	// beyond reports whether the optimum is certainly larger than r.
	beyond := func(r float64) bool {
		clear(size)
		for c := range m {
			for p, v := range in.lat[c*n : (c+1)*n] {
				if v <= r {
					size[p]++
				}
			}
		}
		for p := range order {
			if size[p] == 0 {
				return true
			}
			order[p] = p
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(size[a], size[b]), cmp.Compare(a, b)) })
		clear(used)
		packed := 0
	next:
		for _, p := range order {
			for c := range m {
				if in.lat[c*n+p] <= r && used[c] {
					continue next
				}
			}
			for c := range m {
				if in.lat[c*n+p] <= r {
					used[c] = true
				}
			}
			if packed++; packed > k {
				return true
			}
		}
		return false
	}
	lo, hi := -1, len(vals)-1 // beyond(vals[lo]) holds (lo = -1: vacuously)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) / 2)
		if beyond(vals[mid]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The optimum is one of the latencies and exceeds vals[lo].
	return max(trivial, vals[lo+1])
}
