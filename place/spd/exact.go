package spd

import (
	"fmt"
	"math"
	"slices"
)

// ExactOptions limits Exact.
type ExactOptions struct {
	// MaxWork caps the work units (subset–root pairs for CS, search nodes
	// for P2P); beyond it Exact returns ErrBudget. ≤ 0: DefaultExactWork.
	MaxWork int
}

// DefaultExactWork is Exact's default work limit, about a second.
const DefaultExactWork = 20_000_000

// Exact solves the problem exactly (beyond the paper): it minimises the
// number of servers used (contacts and every server on their routes, the
// root included for CS), then the delay variation, then the delay, within
// the bound. Routes are the fixed routes of Instance.Path. Variations
// and delays that differ by at most Tolerance count as equal, so a
// rounding difference cannot decide a tie (the tie goes to the smaller
// delay).
//
// CS: server sets U are enumerated by size; a set is feasible with root r
// in U when every player has a contact in U whose route to r stays in U and
// 2·(d(c,s) + d(s,r)) ≤ bound (a bitset test). At the first size with a
// feasible (U, r), the least variation of each is found by Algorithm
// Chains, which is exact for a fixed root and server set. A bound below Γ
// returns an *InfeasibleError (Γ is the exact minimum delay).
//
// P2P: contact sets X are enumerated in order of the servers they use
// (X and the routes between its members); for each, a branch and bound
// over the players' contacts in X (pairs checked as players are placed,
// pruned on the bound and on the best variation found) finds the least
// variation. The first server count with a solution ends the search. No
// solution gives ErrNoSolution. For instances of up to about 12 servers and
// 10 players.
func Exact(in *Instance, model Model, bound float64, opt ExactOptions) (Solution, error) {
	if err := checkBound(bound); err != nil {
		return Solution{}, err
	}
	if opt.MaxWork <= 0 {
		opt.MaxWork = DefaultExactWork
	}
	switch model {
	case CS:
		if err := in.feasible(CS, bound); err != nil {
			return Solution{}, err
		}
		return exactCS(in, bound, opt.MaxWork)
	case P2P:
		return exactP2P(in, bound, opt.MaxWork)
	}
	return Solution{}, fmt.Errorf("%w: model %d", ErrInput, int(model))
}

func exactCS(in *Instance, bound float64, maxWork int) (Solution, error) {
	n, m := in.n, in.m
	covers := make([][]bitset, n)
	for r := range covers {
		covers[r] = makeCovers(n, m)
		in.coverCS(r, bound, covers[r])
	}
	inU := make([]bool, n)
	acc := newBitset(m)
	work := 0
	type cand struct {
		r       int
		allowed []int
	}
	for k := 1; k <= n; k++ {
		if float64(work)+binomial(n, k)*float64(k) > float64(maxWork) {
			return Solution{}, fmt.Errorf("%w: exact: the servers needed exceed %d and C(%d,%d) sets remain (limit %d)", ErrBudget, k-1, n, k, maxWork)
		}
		var cands []cand
		forEachSubset(n, k, func(U []int) {
			for _, v := range U {
				inU[v] = true
			}
			for _, r := range U {
				work++
				clear(acc)
				var allowed []int
				for _, s := range U {
					if in.routeIn(s, r, inU) {
						allowed = append(allowed, s)
						for w := range acc {
							acc[w] |= covers[r][s][w]
						}
					}
				}
				if acc.count() == m {
					cands = append(cands, cand{r, allowed})
				}
			}
			for _, v := range U {
				inU[v] = false
			}
		})
		if len(cands) == 0 {
			continue
		}
		var best Solution
		found := false
		var L []entry
		for _, c := range cands {
			L = L[:0]
			for i := 0; i < m; i++ {
				for _, s := range c.allowed {
					ds := in.dist[s*n+c.r]
					if d := in.lat[i*n+s] + ds; within(2*d, bound) {
						L = append(L, entry{c: i, s: s, d: d, tie: ds})
					}
				}
			}
			sortEntries(L)
			h, t, ok := bestChain(L, m)
			if !ok {
				continue
			}
			v, d := 2*(L[t].d-L[h].d), 2*L[t].d
			if found && !lessVD(v, d, best.Variation, best.Delay) {
				continue
			}
			assign := make([]int, m)
			for i := range assign {
				assign[i] = -1
			}
			for _, e := range L[h : t+1] {
				if assign[e.c] < 0 {
					assign[e.c] = e.s
				}
			}
			best, found = in.eval(CS, c.r, assign), true
		}
		return best, nil
	}
	return Solution{}, fmt.Errorf("%w: exact: no server set serves every player within %.6g ms", ErrNoSolution, bound)
}

func exactP2P(in *Instance, bound float64, maxWork int) (Solution, error) {
	n, m := in.n, in.m
	if n > 20 {
		return Solution{}, fmt.Errorf("%w: exact p2p enumerates 2^n contact sets; n = %d > 20", ErrBudget, n)
	}
	type set struct {
		mask  int
		used  int
		items []int
	}
	sets := make([]set, 0, 1<<n-1)
	for mask := 1; mask < 1<<n; mask++ {
		var items []int
		for s := 0; s < n; s++ {
			if mask>>s&1 == 1 {
				items = append(items, s)
			}
		}
		// Servers used when every member of X is a contact.
		used := len(in.used(P2P, -1, items))
		sets = append(sets, set{mask, used, items})
	}
	slices.SortStableFunc(sets, func(a, b set) int { return a.used - b.used })
	work := 0
	var best Solution
	bestV, bestD := math.Inf(1), math.Inf(1)
	found := false
	assign := make([]int, m)
	// Players in order of their best single latency, largest first, so the
	// hardest players are placed first.
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		la, lb := slices.Min(in.lat[a*n:(a+1)*n]), slices.Min(in.lat[b*n:(b+1)*n])
		switch {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return 0
	})
	var overBudget bool
	var rec func(k int, lo, hi float64, X []int)
	rec = func(k int, lo, hi float64, X []int) {
		if overBudget {
			return
		}
		work++
		if work > maxWork {
			overBudget = true
			return
		}
		if k == m {
			v, d := hi-lo, hi
			if m < 2 {
				v, d = 0, 0
			}
			if !found || lessVD(v, d, bestV, bestD) {
				sol := in.eval(P2P, -1, slices.Clone(assign))
				// Equal server counts are guaranteed by the enumeration
				// order; fewer cannot happen (found earlier).
				best, bestV, bestD, found = sol, v, d, true
			}
			return
		}
		c := order[k]
		for _, s := range X {
			l := in.lat[c*n+s]
			nlo, nhi := lo, hi
			ok := true
			for q := 0; q < k; q++ {
				j := order[q]
				aj := assign[j]
				d := l + in.dist[s*n+aj] + in.lat[j*n+aj]
				if !within(d, bound) {
					ok = false
					break
				}
				nlo, nhi = min(nlo, d), max(nhi, d)
			}
			if !ok {
				continue
			}
			if k >= 1 && found && !lessVD(nhi-nlo, nhi, bestV, bestD) {
				continue
			}
			assign[c] = s
			rec(k+1, nlo, nhi, X)
		}
	}
	for g := 0; g < len(sets); {
		u := sets[g].used
		for ; g < len(sets) && sets[g].used == u; g++ {
			rec(0, math.Inf(1), math.Inf(-1), sets[g].items)
			if overBudget {
				return Solution{}, fmt.Errorf("%w: exact p2p: more than %d search nodes", ErrBudget, maxWork)
			}
		}
		if found && len(best.Servers) <= u {
			return best, nil
		}
	}
	if found {
		return best, nil
	}
	return Solution{}, fmt.Errorf("%w: exact p2p: no assignment keeps every pair of players within %.6g ms", ErrNoSolution, bound)
}
