package spd

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Matching is the paper's Algorithm Matching: for every server r as the
// root, each player takes the contact s minimising d(c,s) + d(s,r), and
// the root whose tree has the least client-server delay wins (ties: the
// smaller variation, then the smaller index). Its delay is Γ, the minimum
// client-server delay of the instance: for a fixed root each player's term
// is at its minimum, so no assignment under any root does better. The
// number of servers is not considered. With model P2P the same assignment
// is evaluated as a peer-to-peer network (the paper's "alg-mp"). O(n²m).
func Matching(in *Instance, model Model) Solution {
	best := Solution{Delay: math.Inf(1)}
	assign := make([]int, in.m)
	for r := 0; r < in.n; r++ {
		lo, hi := math.Inf(1), 0.0
		for i := 0; i < in.m; i++ {
			a, e := in.nearestVia(i, r)
			assign[i] = a
			lo, hi = min(lo, e), max(hi, e)
		}
		d, v := 2*hi, 2*(hi-lo)
		if d < best.Delay || d == best.Delay && v < best.Variation {
			best = Solution{Model: CS, Root: r, Assign: slices.Clone(assign), Delay: d, Variation: v}
		}
	}
	return in.eval(model, best.Root, best.Assign)
}

// nearestVia returns the contact minimising player i's latency to root r
// and that latency (ties: the smaller server index).
func (in *Instance) nearestVia(i, r int) (int, float64) {
	n := in.n
	row := in.lat[i*n : (i+1)*n]
	best, be := -1, math.Inf(1)
	for s, l := range row {
		if e := l + in.dist[s*n+r]; e < be {
			best, be = s, e
		}
	}
	return best, be
}

// Gamma returns Γ, the delay of Algorithm Matching: the minimum
// client-server delay over every root and assignment.
func (in *Instance) Gamma() float64 { return Matching(in, CS).Delay }

// feasible returns an InfeasibleError when the bound is below Γ.
func (in *Instance) feasible(model Model, bound float64) error {
	if err := checkBound(bound); err != nil {
		return err
	}
	if g := in.Gamma(); !within(g, bound) {
		return &InfeasibleError{Model: model, Bound: bound, Gamma: g}
	}
	return nil
}

// bitset is a set of players.
type bitset []uint64

func newBitset(m int) bitset { return make(bitset, (m+63)/64) }
func (b bitset) set(i int)   { b[i>>6] |= 1 << (i & 63) }
func (b bitset) has(i int) bool {
	return b[i>>6]&(1<<(i&63)) != 0
}
func (b bitset) count() int {
	c := 0
	for _, w := range b {
		c += bits.OnesCount64(w)
	}
	return c
}

// coverCS returns, for root r, the players each server can serve within
// the bound: cover[s] = {c : 2·(d(c,s) + d(s,r)) ≤ bound}.
func (in *Instance) coverCS(r int, bound float64, cover []bitset) {
	n := in.n
	for s := 0; s < n; s++ {
		b := cover[s]
		clear(b)
		ds := in.dist[s*n+r]
		for i := 0; i < in.m; i++ {
			if within(2*(in.lat[i*n+s]+ds), bound) {
				b.set(i)
			}
		}
	}
}

func makeCovers(n, m int) []bitset {
	c := make([]bitset, n)
	for s := range c {
		c[s] = newBitset(m)
	}
	return c
}

// SPDCSH is the paper's greedy SPDCS-H: starting from a root r, the tree T
// takes the players it can serve within the bound; then, while players are
// left, the server outside T that serves the most of them joins T with its
// route to r, until every player is served. Which root to start from is not
// said; every server is tried and the solution with the fewest servers wins
// (ties: smaller delay, smaller variation, smaller root index). Where the
// paper adds a neighbour of T, routes here are fixed shortest paths (so
// that the tree is a real sub-network of the overlay): a server s outside T
// brings the servers of its route to r that are not yet in T, and is
// scored by the players those servers can take per server added; a
// neighbour on the root's shortest-path tree adds exactly one server, which
// is the paper's rule. A bound below Γ returns an *InfeasibleError.
func SPDCSH(in *Instance, bound float64) (Solution, error) {
	return spdTree(in, CS, bound)
}

// SPDP2PH is the paper's SPDP2P-H: the tree of SPDCS-H (a client-server
// solution within μ is a peer-to-peer solution within μ, §III-A) used as a
// peer-to-peer network, with the servers on the routes between every pair
// of contact servers added. The root whose tree needs the fewest servers
// as a P2P network wins (ties: smaller delay, variation, root index).
func SPDP2PH(in *Instance, bound float64) (Solution, error) {
	return spdTree(in, P2P, bound)
}

func spdTree(in *Instance, model Model, bound float64) (Solution, error) {
	if err := in.feasible(model, bound); err != nil {
		return Solution{}, err
	}
	n, m := in.n, in.m
	cover := makeCovers(n, m)
	left := newBitset(m)
	inT := make([]bool, n)
	assign := make([]int, m)
	var best Solution
	found := false
	var path []int
	for r := 0; r < n; r++ {
		in.coverCS(r, bound, cover)
		all := newBitset(m)
		for s := range cover {
			for w := range all {
				all[w] |= cover[s][w]
			}
		}
		if all.count() != m {
			continue // some player cannot reach r within the bound
		}
		for i := range left {
			left[i] = ^uint64(0)
		}
		if tail := m & 63; tail != 0 {
			left[len(left)-1] = 1<<tail - 1
		}
		clear(inT)
		nLeft := m
		add := func(nodes []int) {
			for _, v := range nodes {
				inT[v] = true
			}
			for i := 0; i < m; i++ {
				if !left.has(i) {
					continue
				}
				bs, be := -1, math.Inf(1)
				for _, v := range nodes {
					if cover[v].has(i) {
						if e := in.lat[i*n+v] + in.dist[v*n+r]; e < be {
							bs, be = v, e
						}
					}
				}
				if bs >= 0 {
					assign[i] = bs
					left[i>>6] &^= 1 << (i & 63)
					nLeft--
				}
			}
		}
		add([]int{r})
		for nLeft > 0 {
			bestS, bestGain, bestCost := -1, 0, 0
			for s := 0; s < n; s++ {
				if inT[s] {
					continue
				}
				path = path[:0]
				for v := s; !inT[v]; v = in.next(v, r) {
					path = append(path, v)
				}
				gain := 0
				for w := range left {
					var u uint64
					for _, v := range path {
						u |= cover[v][w]
					}
					gain += bits.OnesCount64(u & left[w])
				}
				// gain/len(path) > bestGain/bestCost, ties: fewer servers added.
				if gain > 0 && (bestS < 0 || gain*bestCost > bestGain*len(path) ||
					gain*bestCost == bestGain*len(path) && len(path) < bestCost) {
					bestS, bestGain, bestCost = s, gain, len(path)
				}
			}
			if bestS < 0 {
				break // cannot happen: every player is covered by some server
			}
			path = path[:0]
			for v := bestS; !inT[v]; v = in.next(v, r) {
				path = append(path, v)
			}
			add(path)
		}
		if nLeft > 0 {
			continue
		}
		sol := in.eval(model, r, slices.Clone(assign))
		if model == P2P {
			sol.Root = -1
		}
		if !found || better(sol, best) {
			best, found = sol, true
		}
	}
	if !found {
		return Solution{}, &InfeasibleError{Model: model, Bound: bound, Gamma: in.Gamma()}
	}
	if model == P2P {
		best.Root = -1
	}
	return best, nil
}

// better orders solutions: fewer servers, then smaller delay, then smaller
// variation (earlier wins ties; values within Tolerance tie).
func better(a, b Solution) bool {
	if len(a.Servers) != len(b.Servers) {
		return len(a.Servers) < len(b.Servers)
	}
	if math.Abs(a.Delay-b.Delay) > Tolerance {
		return a.Delay < b.Delay
	}
	return a.Variation < b.Variation-Tolerance
}

// ZIZO is Zoom-In Zoom-Out after Lee, Ko and Calo (NOSSDAV 2004) as the
// paper describes it. Zoom-in: every player takes its nearest server; if
// that assignment exceeds the bound, ZIZO fails (ErrNoSolution; the
// paper's Fig. 5). The core server s* minimises the longest distance from
// any player to it (through the player's best contact). Zoom-out: the
// contact server farthest from s* moves all its players one hop toward s*
// (the next server on its route to s*) when the result stays within the
// bound; this repeats, farthest first, until no contact server can move.
// For CS the root is s*. A bound below Γ returns an *InfeasibleError for
// CS; for P2P ZIZO is tried whatever the bound.
func ZIZO(in *Instance, model Model, bound float64) (Solution, error) {
	if err := checkBound(bound); err != nil {
		return Solution{}, err
	}
	if model == CS {
		if err := in.feasible(model, bound); err != nil {
			return Solution{}, err
		}
	}
	n, m := in.n, in.m
	core, coreE := -1, math.Inf(1)
	for s := 0; s < n; s++ {
		worst := 0.0
		for i := 0; i < m; i++ {
			_, e := in.nearestVia(i, s)
			worst = max(worst, e)
		}
		if worst < coreE {
			core, coreE = s, worst
		}
	}
	assign := make([]int, m)
	for i := 0; i < m; i++ {
		row := in.lat[i*n : (i+1)*n]
		b := 0
		for s, l := range row {
			if l < row[b] {
				b = s
			}
		}
		assign[i] = b
	}
	delay := func(a []int) float64 {
		if model == CS {
			hi := 0.0
			for i, s := range a {
				hi = max(hi, in.lat[i*n+s]+in.dist[s*n+core])
			}
			return 2 * hi
		}
		d, _ := in.p2pDelay(a)
		return d
	}
	if d := delay(assign); !within(d, bound) {
		return Solution{}, fmt.Errorf("%w: zizo: the zoom-in assignment (every player at its nearest server) has delay %.6g ms > bound %.6g ms", ErrNoSolution, d, bound)
	}
	trial := make([]int, m)
	for {
		var contacts []int
		seen := make([]bool, n)
		for _, s := range assign {
			if !seen[s] && s != core {
				seen[s] = true
				contacts = append(contacts, s)
			}
		}
		slices.SortStableFunc(contacts, func(a, b int) int {
			da, db := in.dist[a*n+core], in.dist[b*n+core]
			switch {
			case da > db:
				return -1
			case da < db:
				return 1
			}
			return a - b
		})
		moved := false
		for _, s := range contacts {
			to := in.next(s, core)
			copy(trial, assign)
			for i := range trial {
				if trial[i] == s {
					trial[i] = to
				}
			}
			if within(delay(trial), bound) {
				copy(assign, trial)
				moved = true
				break
			}
		}
		if !moved {
			break
		}
	}
	return in.eval(model, core, assign), nil
}

// DefaultKBestLimit bounds the (subset, root) pairs KBest examines.
const DefaultKBestLimit = 4_000_000

// KBest is the paper's k-best: every subset U of k servers is tried as the
// sub-network; for every root r in U, Algorithm Matching restricted to U
// (contacts whose route to r stays in U) assigns the players; among the
// solutions within the bound the one with the least delay, then variation,
// wins. For P2P the restricted Matching assignment is evaluated as a
// peer-to-peer network and kept only if its routes stay in U. The paper
// takes k from SPDCS-H (CS) or SPDP2P-H (P2P). limit caps the (subset,
// root) pairs examined (≤ 0: DefaultKBestLimit); beyond it ErrBudget is
// returned before any search. No subset of k servers within the bound
// gives ErrNoSolution.
func KBest(in *Instance, model Model, bound float64, k, limit int) (Solution, error) {
	if model != CS && model != P2P {
		return Solution{}, fmt.Errorf("%w: model %d", ErrInput, int(model))
	}
	if k < 1 || k > in.n {
		return Solution{}, fmt.Errorf("%w: k = %d, want 1..%d", ErrInput, k, in.n)
	}
	if err := in.feasible(model, bound); err != nil {
		return Solution{}, err
	}
	if limit <= 0 {
		limit = DefaultKBestLimit
	}
	if c := binomial(in.n, k); c < 0 || c*float64(k) > float64(limit) {
		return Solution{}, fmt.Errorf("%w: k-best: C(%d,%d)·%d (subset, root) pairs > limit %d", ErrBudget, in.n, k, k, limit)
	}
	n, m := in.n, in.m
	covers := make([][]bitset, n)
	for r := range covers {
		covers[r] = makeCovers(n, m)
		in.coverCS(r, bound, covers[r])
	}
	inU := make([]bool, n)
	allowed := make([]int, 0, k)
	acc := newBitset(m)
	assign := make([]int, m)
	var best Solution
	found := false
	forEachSubset(n, k, func(U []int) {
		for _, v := range U {
			inU[v] = true
		}
		defer func() {
			for _, v := range U {
				inU[v] = false
			}
		}()
		for _, r := range U {
			allowed = allowed[:0]
			clear(acc)
			for _, s := range U {
				if in.routeIn(s, r, inU) {
					allowed = append(allowed, s)
					for w := range acc {
						acc[w] |= covers[r][s][w]
					}
				}
			}
			if acc.count() != m {
				continue
			}
			hi, lo := 0.0, math.Inf(1)
			for i := 0; i < m; i++ {
				bs, be := -1, math.Inf(1)
				for _, s := range allowed {
					if e := in.lat[i*n+s] + in.dist[s*n+r]; e < be {
						bs, be = s, e
					}
				}
				assign[i] = bs
				hi, lo = max(hi, be), min(lo, be)
			}
			var sol Solution
			if model == CS {
				if found && (2*hi > best.Delay || 2*hi == best.Delay && 2*(hi-lo) >= best.Variation) {
					continue
				}
				sol = in.eval(CS, r, slices.Clone(assign))
			} else {
				d, v := in.p2pDelay(assign)
				if !within(d, bound) || found && (d > best.Delay || d == best.Delay && v >= best.Variation) {
					continue
				}
				sol = in.eval(P2P, -1, slices.Clone(assign))
				if !subsetOf(sol.Servers, inU) {
					continue
				}
			}
			best, found = sol, true
		}
	})
	if !found {
		return Solution{}, fmt.Errorf("%w: k-best: no %d servers serve every player within %.6g ms", ErrNoSolution, k, bound)
	}
	return best, nil
}

// routeIn reports whether the route from s to r stays in the set.
func (in *Instance) routeIn(s, r int, set []bool) bool {
	for v := s; ; v = in.next(v, r) {
		if !set[v] {
			return false
		}
		if v == r {
			return true
		}
	}
}

func subsetOf(xs []int, set []bool) bool {
	for _, x := range xs {
		if !set[x] {
			return false
		}
	}
	return true
}

// binomial returns C(n,k) as a float64 (exact below 2^53).
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

// forEachSubset calls f with every k-subset of 0..n-1 in lexicographic
// order; f must not keep the slice.
func forEachSubset(n, k int, f func([]int)) {
	if k == 0 || k > n {
		return
	}
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		f(idx)
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}
