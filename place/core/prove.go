package core

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Proof is the result of Prove: the best set of cores found and a certified
// lower bound on the optimal k-median sum.
type Proof struct {
	// Solution is the best set found (Exact is false: Prove certifies the
	// sum, not the package's lexicographic tie-break on the maximum).
	Solution Solution
	// Bound is a lower bound on the optimal sum; Gap is
	// (Solution.Sum − Bound)/Bound, 0 when Optimal.
	Bound, Gap float64
	// Optimal reports that no set has a smaller sum than Solution.Sum
	// (up to a relative 1e-9): the search finished within MaxNodes.
	Optimal bool
	// Nodes is the number of branch-and-bound nodes explored.
	Nodes int
}

// ProveOptions tune Prove. The zero value is valid.
type ProveOptions struct {
	// Restarts are LocalSearch's random restarts for the starting
	// solution; 0 means 20, negative means none (the greedy start's local
	// optimum only, which leaves more to the branch and bound).
	Restarts int
	// MaxNodes caps the branch-and-bound nodes; 0 means 20000. When the
	// cap is hit the result carries the best bound of the open nodes.
	MaxNodes int
}

// Prove solves a k-median problem to proven optimality by branch and bound
// on the Lagrangian relaxation LowerBound uses ("every player is assigned"
// relaxed with multipliers λ): each node fixes some candidates in or out,
// optimises λ by subgradient steps (warm-started from its parent) and is cut
// when its bound reaches the best sum found. Lagrangian reduced costs fix
// further candidates without branching (a candidate whose exclusion alone
// pushes the bound past the best sum is fixed in, and vice versa), and each
// node's Lagrangian choice of cores is scored as a feasible solution. The
// start is LocalSearch with opts.Restarts restarts from rng. On the
// PlanetLab groups of the lab (100 players = candidates, k ≤ 25) it proves
// the optimum in at most a few thousand nodes.
//
// Prove returns ErrObjective for KCenter (its relaxation is weak; use Exact
// or LowerBound), and the usual errors for bad input.
func Prove(p Problem, rng *rand.Rand, opts ProveOptions) (Proof, error) {
	in, err := newInst(p)
	if err != nil {
		return Proof{}, err
	}
	if rng == nil {
		return Proof{}, ErrNilRand
	}
	if in.obj != KMedian {
		return Proof{}, fmt.Errorf("%w: Prove handles k-median only", ErrObjective)
	}
	if opts.Restarts == 0 {
		opts.Restarts = 20
	}
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = 20000
	}
	bb := &bnb{in: in, maxNodes: opts.MaxNodes}
	bb.best = in.localSearch(rng, Options{Restarts: opts.Restarts})
	bb.ub = in.scoreOf(bb.best).sum
	if in.k == in.m {
		bb.openLB = bb.ub
	} else {
		bb.openLB = math.Inf(1)
		state := make([]int8, in.m) // 0 free, 1 in, -1 out
		lambda := make([]float64, in.n)
		for p := range in.n {
			lambda[p] = math.Inf(1)
			for _, c := range bb.best {
				lambda[p] = min(lambda[p], in.lat[c*in.n+p])
			}
		}
		bb.rootLB = math.Inf(-1)
		bb.node(state, lambda, 0, true, math.Inf(-1))
	}
	slices.Sort(bb.best)
	sol := in.evaluate(bb.best)
	pr := Proof{Solution: sol, Nodes: bb.nodes, Bound: sol.Sum, Optimal: true}
	if bb.openLB < sol.Sum*(1-relTol) {
		pr.Optimal = false
		pr.Bound = max(0, bb.openLB, bb.rootLB) // latencies are ≥ 0
	}
	if pr.Bound > 0 {
		pr.Gap = max(0, (sol.Sum-pr.Bound)/pr.Bound)
	}
	return pr, nil
}

// bnb is one branch-and-bound search.
type bnb struct {
	in       *inst
	best     []int
	ub       float64 // sum of best
	nodes    int
	maxNodes int
	// openLB is the smallest bound of a node left unexplored because of
	// maxNodes (+Inf when none); rootLB the root's bound.
	openLB, rootLB float64
}

// cut reports whether a bound proves a node cannot beat the best sum.
func (bb *bnb) cut(lb float64) bool { return lb >= bb.ub*(1-relTol) }

// node explores the subproblem in which state fixes candidates (nIn of
// them in), with multipliers lambda (modified in place); parentLB is a
// bound valid for it, recorded if the node cap leaves it unexplored.
func (bb *bnb) node(state []int8, lambda []float64, nIn int, root bool, parentLB float64) {
	in := bb.in
	n, m, k := in.n, in.m, in.k
	if bb.nodes >= bb.maxNodes {
		bb.openLB = min(bb.openLB, parentLB)
		return
	}
	bb.nodes++
	free := 0
	for _, s := range state {
		if s == 0 {
			free++
		}
	}
	if nIn+free < k {
		return // infeasible
	}
	if nIn == k || nIn+free == k {
		var set []int
		for c, s := range state {
			if s == 1 || (s == 0 && nIn+free == k) {
				set = append(set, c)
			}
		}
		bb.offer(set)
		return
	}
	rho := make([]float64, m)
	idx := make([]int, 0, m)
	g := make([]float64, n)
	bestL, bestLambda := math.Inf(-1), slices.Clone(lambda)
	// eval computes the Lagrangian bound at lambda, the chosen free
	// candidates (idx[:need], by ascending ρ) and rho.
	need := k - nIn
	eval := func() float64 {
		idx = idx[:0]
		l, mag := 0.0, 0.0
		for _, v := range lambda {
			l += v
			mag += math.Abs(v)
		}
		for c := range m {
			if state[c] == -1 {
				continue
			}
			r := 0.0
			for p, v := range in.lat[c*n : (c+1)*n] {
				if d := v - lambda[p]; d < 0 {
					r += d
				}
			}
			rho[c] = r
			if state[c] == 1 {
				l += r
				mag -= r
			} else {
				idx = append(idx, c)
			}
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(rho[a], rho[b]), cmp.Compare(a, b)) })
		for _, c := range idx[:need] {
			l += rho[c]
			mag -= rho[c]
		}
		return l - relTol*mag
	}
	steps := 60
	if root {
		steps = 600
	}
	theta, stall := 1.0, 0
	for range steps {
		l := eval()
		if l > bestL {
			bestL, stall = l, 0
			copy(bestLambda, lambda)
		} else if stall++; stall >= 10 {
			theta, stall = theta/2, 0
		}
		if bb.cut(bestL) || theta < 1e-3 {
			break
		}
		for p := range g {
			g[p] = 1
		}
		for c, s := range state {
			if s != 1 {
				continue
			}
			for p, v := range in.lat[c*n : (c+1)*n] {
				if v < lambda[p] {
					g[p]--
				}
			}
		}
		for _, c := range idx[:need] {
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
			break
		}
		step := theta * (bb.ub - l) / norm
		for p := range lambda {
			lambda[p] = max(0, lambda[p]+step*g[p])
		}
	}
	copy(lambda, bestLambda)
	l := eval()
	if root {
		bb.rootLB = l
	}
	// The Lagrangian choice is a feasible set of cores.
	set := slices.Clone(idx[:need])
	for c, s := range state {
		if s == 1 {
			set = append(set, c)
		}
	}
	bb.offer(set)
	if bb.cut(l) {
		return
	}
	// Reduced-cost fixing at this λ: dropping a chosen free candidate
	// costs at least ρ(next) − ρ(c); adding an unchosen one ρ(c) − ρ(last).
	st := slices.Clone(state)
	fixed := 0
	if len(idx) > need {
		next, last := rho[idx[need]], rho[idx[need-1]]
		for i, c := range idx {
			if i < need && bb.cut(l-rho[c]+next) {
				st[c], fixed = 1, fixed+1
			} else if i >= need && bb.cut(l+rho[c]-last) {
				st[c], fixed = -1, fixed+1
			}
		}
	}
	if fixed > 0 {
		nIn2 := 0
		for _, s := range st {
			if s == 1 {
				nIn2++
			}
		}
		bb.nodes-- // the same node, tightened
		bb.node(st, lambda, nIn2, root, l)
		return
	}
	// Branch on the chosen free candidate whose exclusion costs least (the
	// most doubtful one): first without it, then with it.
	bc, pen := -1, math.Inf(1)
	next := rho[idx[need]]
	for _, c := range idx[:need] {
		if d := next - rho[c]; d < pen {
			bc, pen = c, d
		}
	}
	st[bc] = -1
	bb.node(st, slices.Clone(lambda), nIn, false, l)
	if bb.cut(l) { // the best sum may have dropped meanwhile
		return
	}
	st[bc] = 1
	bb.node(st, slices.Clone(lambda), nIn+1, false, l)
}

// offer keeps set (k distinct candidates) if it beats the best sum.
func (bb *bnb) offer(set []int) {
	if s := bb.in.scoreOf(set).sum; s < bb.ub {
		bb.ub, bb.best = s, slices.Clone(set)
	}
}
