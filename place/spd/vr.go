package spd

import (
	"cmp"
	"math"
	"slices"
)

// entry is one tuple (c_i, s_j, D) of Algorithm 1's list L: player c
// through contact s reaches the root with one-way latency d; tie is the
// contact's own distance to the root, used only to order equal d.
type entry struct {
	c, s   int
	d, tie float64
}

// sortEntries sorts L by d, non-decreasing; equal d by the contact's
// distance to the root, then player, then server. (This tie order is the
// one Table II of the paper shows.)
func sortEntries(L []entry) {
	slices.SortFunc(L, func(a, b entry) int {
		if c := cmp.Compare(a.d, b.d); c != 0 {
			return c
		}
		if c := cmp.Compare(a.tie, b.tie); c != 0 {
			return c
		}
		if a.c != b.c {
			return a.c - b.c
		}
		return a.s - b.s
	})
}

// bestChain is Algorithm Chains on a sorted L over m players: the window
// [h, t] covering every player with the least d(t) − d(h), the first such
// head on ties within Tolerance (which also has the least d(t)). It runs
// in O(|L|) with two pointers: for every head, the tail is the first
// position where every player has been seen, which only moves right as
// the head does. ok is false when L does not cover every player.
func bestChain(L []entry, m int) (h, t int, ok bool) {
	count := make([]int, m)
	seen, tail := 0, -1
	bestV := math.Inf(1)
	for head := range L {
		for seen < m && tail+1 < len(L) {
			tail++
			if count[L[tail].c] == 0 {
				seen++
			}
			count[L[tail].c]++
		}
		if seen < m {
			break
		}
		if v := L[tail].d - L[head].d; v < bestV-Tolerance {
			bestV, h, t, ok = v, head, tail, true
		}
		count[L[head].c]--
		if count[L[head].c] == 0 {
			seen--
		}
	}
	return h, t, ok
}

// minimalChains lists, for every head that has one, the minimal chain
// [h, t] of a sorted L (the rows of the paper's Table III), by a plain
// scan from each head. It is the O(|L|²) reference for bestChain.
func minimalChains(L []entry, m int) [][2]int {
	var out [][2]int
	for h := range L {
		seen := make([]bool, m)
		k := 0
		for t := h; t < len(L); t++ {
			if !seen[L[t].c] {
				seen[L[t].c] = true
				k++
			}
			if k == m {
				out = append(out, [2]int{h, t})
				break
			}
		}
	}
	return out
}

// SPDVRCS is the paper's Algorithm 1 (SPDVRCS-H): with the root and the
// servers of a client-server solution fixed, it reassigns players to
// minimise the delay variation within the bound. L holds every (player,
// server, latency to the root) with 2·latency ≤ bound; the chain of L with
// the least spread is chosen and each player takes its first (lowest
// latency) tuple in the chain. The result is exact for this sub-problem,
// so the variation never increases, and no server outside sol.Servers is
// used. Servers on the tree that carry no player may become contacts (they
// are already part of the network). O(mn log(mn)).
//
// In line 13 of Algorithm 1, δ is the best variation so far (dv).
func SPDVRCS(in *Instance, sol Solution, bound float64) (Solution, error) {
	if err := in.validSolution(sol, CS, bound); err != nil {
		return Solution{}, err
	}
	r, n := sol.Root, in.n
	servers := in.used(CS, r, sol.Assign)
	L := make([]entry, 0, in.m*len(servers))
	for i := 0; i < in.m; i++ {
		for _, s := range servers {
			ds := in.dist[s*n+r]
			if d := in.lat[i*n+s] + ds; within(2*d, bound) {
				L = append(L, entry{c: i, s: s, d: d, tie: ds})
			}
		}
	}
	sortEntries(L)
	h, t, ok := bestChain(L, in.m)
	if !ok { // cannot happen: sol's own tuples are in L
		return in.eval(CS, r, slices.Clone(sol.Assign)), nil
	}
	assign := make([]int, in.m)
	for i := range assign {
		assign[i] = -1
	}
	for _, e := range L[h : t+1] {
		if assign[e.c] < 0 {
			assign[e.c] = e.s
		}
	}
	return in.eval(CS, r, assign), nil
}

// SPDVRP2P is the paper's Algorithm 2 (SPDVRP2P-H). L is the list of
// player pairs sorted by latency; its variation dv(L) is last − first.
// Phase 1 raises the smallest latency: Procedure Reassign tries every
// contact server of the input for the first player of L's first pair and
// keeps the move that lowers dv(L) most while the delay stays within the
// bound; when no move of that player helps, the second player of the pair
// is tried; the phase ends when neither can move. Phase 2 does the same
// with the last pair of L, lowering the largest latency. Every accepted
// move strictly lowers the variation, so it never increases and the loop
// ends; contacts only move among the input's contact servers, so no server
// outside sol.Servers is used.
//
// Decisions: lines 8–10 and 21–23 of Algorithm 2 loop "foreach s_k ∈ S"
// around the same call; following the text, they are read as one call
// that reassigns the pair's second player (c_j). Equal latencies in L are
// ordered by player indices (i < j, lexicographic), so the first pair is
// the smallest latency with the smallest (i, j) and the last pair the
// largest latency with the largest (i, j). L is not kept sorted: the
// algorithm needs only its first and last pair and dv(L), which are kept
// per player (the two smallest and two largest latencies of each row), so
// a trial move costs O(m) and an accepted one O(m) for most rows.
func SPDVRP2P(in *Instance, sol Solution, bound float64) (Solution, error) {
	if err := in.validSolution(sol, P2P, bound); err != nil {
		return Solution{}, err
	}
	m, n := in.m, in.n
	assign := slices.Clone(sol.Assign)
	if m < 3 {
		return spdvrP2PSmall(in, assign, bound), nil
	}
	var contacts []int
	{
		seen := make([]bool, n)
		for _, s := range assign {
			if !seen[s] {
				seen[s] = true
			}
		}
		for s, ok := range seen {
			if ok {
				contacts = append(contacts, s)
			}
		}
	}
	st := newPairState(in, assign)
	q := make([]float64, m)
	reassign := func(c int) bool {
		curLo, curHi := st.lo(), st.hi()
		bestDV := curHi - curLo
		bestS := -1
		exLo, exHi := st.excluding(c)
		for _, s := range contacts {
			if s == assign[c] {
				continue
			}
			lc := in.lat[c*n+s]
			drow := in.dist[s*n : (s+1)*n]
			lo, hi := exLo, exHi
			for j := 0; j < m; j++ {
				if j == c {
					continue
				}
				aj := assign[j]
				d := lc + drow[aj] + in.lat[j*n+aj]
				lo, hi = min(lo, d), max(hi, d)
			}
			if hi-lo < bestDV && within(hi, bound) {
				bestDV, bestS = hi-lo, s
			}
		}
		if bestS < 0 {
			return false
		}
		assign[c] = bestS
		lc := in.lat[c*n+bestS]
		for j := 0; j < m; j++ {
			if j != c {
				aj := assign[j]
				q[j] = lc + in.dist[bestS*n+aj] + in.lat[j*n+aj]
			}
		}
		st.setRow(c, q)
		return true
	}
	for phase := 0; phase < 2; phase++ {
		for {
			var i, j int
			if phase == 0 {
				i, j = st.first()
			} else {
				i, j = st.last()
			}
			if !reassign(i) && !reassign(j) {
				break
			}
		}
	}
	return in.eval(P2P, -1, assign), nil
}

// spdvrP2PSmall handles one or two players, where L has at most one pair
// and its variation is already 0.
func spdvrP2PSmall(in *Instance, assign []int, bound float64) Solution {
	return in.eval(P2P, -1, assign)
}

// pairState keeps the symmetric matrix of pair latencies and, per row, the
// two smallest and two largest entries with their columns.
type pairState struct {
	m            int
	p            []float64
	min1, min2   []float64
	max1, max2   []float64
	amin1, amax1 []int
}

func newPairState(in *Instance, assign []int) *pairState {
	m, n := in.m, in.n
	st := &pairState{m: m, p: make([]float64, m*m),
		min1: make([]float64, m), min2: make([]float64, m), max1: make([]float64, m), max2: make([]float64, m),
		amin1: make([]int, m), amax1: make([]int, m)}
	for i := 0; i < m; i++ {
		ai := assign[i]
		for j := i + 1; j < m; j++ {
			aj := assign[j]
			d := in.lat[i*n+ai] + in.dist[ai*n+aj] + in.lat[j*n+aj]
			st.p[i*m+j], st.p[j*m+i] = d, d
		}
	}
	for i := 0; i < m; i++ {
		st.rowStats(i)
	}
	return st
}

func (st *pairState) rowStats(i int) {
	m := st.m
	mn1, mn2, mx1, mx2 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	a1, b1 := -1, -1
	for j := 0; j < m; j++ {
		if j == i {
			continue
		}
		d := st.p[i*m+j]
		if d < mn1 {
			mn2, mn1, a1 = mn1, d, j
		} else if d < mn2 {
			mn2 = d
		}
		if d >= mx1 { // ≥: the largest column wins ties, as the last pair does
			mx2, mx1, b1 = mx1, d, j
		} else if d > mx2 {
			mx2 = d
		}
	}
	st.min1[i], st.min2[i], st.max1[i], st.max2[i], st.amin1[i], st.amax1[i] = mn1, mn2, mx1, mx2, a1, b1
}

// setRow replaces row and column c with q (q[c] ignored) and refreshes the
// row statistics.
func (st *pairState) setRow(c int, q []float64) {
	m := st.m
	for j := 0; j < m; j++ {
		if j == c {
			continue
		}
		old, d := st.p[j*m+c], q[j]
		st.p[c*m+j], st.p[j*m+c] = d, d
		// Row j changed in one entry: refresh it in O(1) unless the entry
		// held one of its two smallest or largest values.
		if st.amin1[j] == c || st.amax1[j] == c || old <= st.min2[j] || old >= st.max2[j] {
			st.rowStats(j)
			continue
		}
		if d < st.min1[j] {
			st.min2[j], st.min1[j], st.amin1[j] = st.min1[j], d, c
		} else if d < st.min2[j] {
			st.min2[j] = d
		}
		if d > st.max1[j] || d == st.max1[j] && c > st.amax1[j] {
			st.max2[j], st.max1[j], st.amax1[j] = st.max1[j], d, c
		} else if d > st.max2[j] {
			st.max2[j] = d
		}
	}
	st.rowStats(c)
}

func (st *pairState) lo() float64 { return slices.Min(st.min1) }
func (st *pairState) hi() float64 { return slices.Max(st.max1) }

// excluding returns the smallest and largest latency over pairs without c.
func (st *pairState) excluding(c int) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := 0; i < st.m; i++ {
		if i == c {
			continue
		}
		mn, mx := st.min1[i], st.max1[i]
		if st.amin1[i] == c {
			mn = st.min2[i]
		}
		if st.amax1[i] == c {
			mx = st.max2[i]
		}
		lo, hi = min(lo, mn), max(hi, mx)
	}
	return lo, hi
}

// first returns L's first pair (i < j): the smallest latency, smallest
// (i, j) on ties.
func (st *pairState) first() (int, int) {
	lo := st.lo()
	m := st.m
	for i := 0; i < m; i++ {
		if st.min1[i] == lo {
			for j := i + 1; j < m; j++ {
				if st.p[i*m+j] == lo {
					return i, j
				}
			}
		}
	}
	return 0, 1
}

// last returns L's last pair (i < j): the largest latency, largest (i, j)
// on ties.
func (st *pairState) last() (int, int) {
	hi := st.hi()
	m := st.m
	for i := m - 1; i >= 0; i-- {
		if st.max1[i] == hi {
			for j := m - 1; j > i; j-- {
				if st.p[i*m+j] == hi {
					return i, j
				}
			}
		}
	}
	return m - 2, m - 1
}
