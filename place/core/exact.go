package core

import (
	"math"
	"math/rand/v2"
	"slices"
)

// MaxExactSubsets is the largest number of k-subsets Exact will enumerate.
// At a few hundred players one subset costs about a microsecond, so the
// limit bounds an exhaustive search to seconds; larger instances belong to
// LocalSearch.
const MaxExactSubsets = 5e6

// Subsets returns C(m, k), the number of k-subsets of m candidates, as a
// float64 (it may be astronomically large). It is 0 when k < 0 or k > m.
func Subsets(m, k int) float64 {
	if k < 0 || k > m {
		return 0
	}
	k = min(k, m-k)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(m-k+i) / float64(i)
	}
	return math.Round(c)
}

// Exact returns an optimal set of cores: the lexicographic optimum of
// (objective, other objective), ties going to the subset that comes first in
// lexicographic order of sorted candidate indices. It enumerates the
// k-subsets depth-first, keeping each player's nearest chosen core so that a
// subset costs O(n), and cuts a branch when even adding every remaining
// candidate could not beat the best set found (so the worst case is
// O(n·C(m,k)), and k = 1 is a plain O(n·m) scan). It fails with a
// *TooLargeError when C(m,k) exceeds MaxExactSubsets.
func Exact(p Problem) (Solution, error) {
	in, err := newInst(p)
	if err != nil {
		return Solution{}, err
	}
	if s := Subsets(in.m, in.k); s > MaxExactSubsets {
		return Solution{}, &TooLargeError{Candidates: in.m, K: in.k, Subsets: s, Limit: MaxExactSubsets}
	}
	sol := in.evaluate(in.exact())
	sol.Exact = true
	return sol, nil
}

// exact runs the branch-and-bound enumeration and returns the best set.
func (in *inst) exact() []int {
	n, m, k := in.n, in.m, in.k
	if k == 1 {
		bc, best := -1, score{}
		for c := range m {
			var s score
			for _, v := range in.lat[c*n : (c+1)*n] {
				s.sum += v
				s.max = max(s.max, v)
			}
			if bc < 0 || in.obj.better(s, best) {
				bc, best = c, s
			}
		}
		return []int{bc}
	}
	// Seed the bound with a local optimum (a fixed-seed search, so Exact
	// stays deterministic): most branches then die at the first cut. The
	// seed holds the best score until an enumerated set equals or beats
	// it; equal sets replace it only if they come first lexicographically.
	bestSet := in.localSearch(rand.New(rand.NewPCG(0x5eed, 0xc0de)), Options{})
	best := in.scoreOf(bestSet)

	// suffix[c*n+p] = min over candidates c' ≥ c of d(p, c'); row m is +Inf.
	suffix := make([]float64, (m+1)*n)
	for p := range n {
		suffix[m*n+p] = math.Inf(1)
	}
	for c := m - 1; c >= 0; c-- {
		for p := range n {
			suffix[c*n+p] = min(in.lat[c*n+p], suffix[(c+1)*n+p])
		}
	}
	// mins[d] holds each player's nearest latency among the first d chosen.
	mins := make([][]float64, k)
	for d := range mins {
		mins[d] = make([]float64, n)
	}
	for p := range n {
		mins[0][p] = math.Inf(1)
	}
	cur := make([]int, k)
	// A set whose running sum (k-median) or maximum (k-center) passes
	// these limits is strictly worse than best; the other limit is +Inf.
	var bestPrimarySum, bestPrimaryMax float64
	setLimits := func() {
		bestPrimarySum, bestPrimaryMax = math.Inf(1), math.Inf(1)
		if in.obj == KCenter {
			bestPrimaryMax = best.max
		} else {
			bestPrimarySum = best.sum
		}
	}
	setLimits()

	var rec func(depth, start int)
	rec = func(depth, start int) {
		prev := mins[depth]
		for c := start; c <= m-(k-depth); c++ {
			col := in.lat[c*n : (c+1)*n]
			cur[depth] = c
			if depth == k-1 {
				// Partial sums and maxima only grow: give up on the set as
				// soon as its objective exceeds the best one's.
				var s score
				worse := false
				for p, v := range col {
					v = min(v, prev[p])
					s.sum += v
					s.max = max(s.max, v)
					if s.sum > bestPrimarySum || s.max > bestPrimaryMax {
						worse = true
						break
					}
				}
				if !worse && (in.obj.better(s, best) || (s == best && slices.Compare(cur, bestSet) < 0)) {
					best = s
					copy(bestSet, cur)
					setLimits()
				}
				continue
			}
			next := mins[depth+1]
			rest := suffix[(c+1)*n : (c+2)*n]
			// Any completion picks its remaining cores after c, so every
			// player ends at least as close as min(next, rest): a
			// component-wise lower bound, and sums of smaller terms in the
			// same order round to smaller floats. Branches that can at best
			// tie are kept, for the lexicographic tie-break.
			var lb score
			worse := false
			for p, v := range col {
				v = min(v, prev[p])
				next[p] = v
				b := min(v, rest[p])
				lb.sum += b
				lb.max = max(lb.max, b)
				if lb.sum > bestPrimarySum || lb.max > bestPrimaryMax {
					worse = true
					break
				}
			}
			if worse || in.obj.better(best, lb) {
				continue
			}
			rec(depth+1, c+1)
		}
	}
	rec(0, 0)
	return bestSet
}

// scoreOf scores a core set exactly as the enumeration does.
func (in *inst) scoreOf(cores []int) score {
	n := in.n
	var s score
	for p := range n {
		v := math.Inf(1)
		for _, c := range cores {
			v = min(v, in.lat[c*n+p])
		}
		s.sum += v
		s.max = max(s.max, v)
	}
	return s
}
