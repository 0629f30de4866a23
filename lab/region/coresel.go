package region

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/estimate"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/core"
)

// The core-selection reference and its ties (the lab's core-selection
// target): the optimum on measurements is proven with core.Prove rather
// than taken from core.Select's local search, and the near-ties of the
// optimum are measured so that a miss can be told apart from a choice
// between interchangeable nodes.

const (
	// tieCost is the relative cost within which two core sets count as
	// interchangeable: swapping an optimal core o for s is a tie when the
	// measured k-median cost rises by at most 0.1%.
	tieCost = 0.001
	// colocatedMs is the measured RTT under which two nodes count as
	// co-located (one site).
	colocatedMs = 1.0
)

// coreRef is the reference for one (trial, k): the proven optimum on the
// measured matrix, and which non-optimal candidates tie with which optimal
// core.
type coreRef struct {
	opt core.Solution
	// tie[i][c] reports that replacing opt.Cores[i] by candidate c (not in
	// opt) raises the measured cost by at most tieCost.
	tie [][]bool
	// paper is the paper's own selection on the measurements
	// (core.KMinimum, k-minimum-pairwise), the reference of its hit ratio.
	paper core.Solution
}

// RefRow describes the reference of one (trial, k).
type RefRow struct {
	Trial, K int
	// Sum is the proven optimal k-median sum (ms); Bound its certified
	// lower bound (= Sum when Optimal); Nodes the branch-and-bound nodes.
	Sum, Bound float64
	Optimal    bool
	Nodes      int
	// SelectSum is what core.Select (the previous reference: exhaustive
	// for k ≤ 2, local search otherwise) finds; SelectSame that it chose
	// the same cores.
	SelectSum  float64
	SelectSame bool
	// Colocated is, per optimal core, the number of other candidates
	// within colocatedMs of it; Ties, per optimal core, the number of
	// candidates that can replace it within tieCost.
	Colocated, Ties []int
	// PaperSum is the measured k-median sum (players to their nearest
	// chosen core) of the paper's selection on measurements
	// (core.KMinimum); PaperSame that it chose the optimum's cores.
	PaperSum  float64
	PaperSame bool
	// Times: one core.KMinimum, one core.Select and one core.Prove on the
	// measured matrix.
	PaperTime, SelectTime, ProveTime time.Duration
}

// references computes the proven optimum and its ties for k = 1..MaxK on
// the measured matrix of a group.
func references(t *estimate.Truth, group []int, trial int, cfg Config) ([]coreRef, []RefRow, error) {
	m, err := estimate.Matrix(truthEstimator{t}, t.Names(), group, group)
	if err != nil {
		return nil, nil, err
	}
	var refs []coreRef
	var rows []RefRow
	for k := 1; k <= cfg.MaxK; k++ {
		p := core.Problem{PlayerCore: m, CoreCore: m, K: k, Objective: core.KMedian}
		t0 := time.Now()
		sel, err := core.Select(p, rand.New(rand.NewPCG(cfg.Seed, uint64(k))))
		if err != nil {
			return nil, nil, err
		}
		t1 := time.Now()
		pr, err := core.Prove(p, rand.New(rand.NewPCG(cfg.Seed, 0x70726f7665+uint64(k))), core.ProveOptions{})
		if err != nil {
			return nil, nil, err
		}
		t2 := time.Now()
		paper, err := core.KMinimum(p)
		if err != nil {
			return nil, nil, err
		}
		t3 := time.Now()
		opt := pr.Solution
		// Keep Select's set when it is optimal too: the reference then
		// changes only where Select was beaten.
		if sel.Sum <= opt.Sum {
			opt = sel
		}
		ref := coreRef{opt: opt, tie: swapTies(m, opt.Cores), paper: paper}
		row := RefRow{Trial: trial, K: k, Sum: opt.Sum, Bound: pr.Bound, Optimal: pr.Optimal, Nodes: pr.Nodes,
			SelectSum: sel.Sum, SelectSame: slices.Equal(sel.Cores, opt.Cores),
			PaperSum: paper.Sum, PaperSame: slices.Equal(paper.Cores, opt.Cores),
			SelectTime: t1.Sub(t0), ProveTime: t2.Sub(t1), PaperTime: t3.Sub(t2)}
		for i, o := range opt.Cores {
			col, ties := 0, 0
			for c := range m.Cols() {
				if c != o && m.At(o, c) <= colocatedMs {
					col++
				}
				if ref.tie[i][c] {
					ties++
				}
			}
			row.Colocated = append(row.Colocated, col)
			row.Ties = append(row.Ties, ties)
		}
		refs = append(refs, ref)
		rows = append(rows, row)
	}
	return refs, rows, nil
}

// swapTies returns tie[i][c]: replacing cores[i] by the non-core c raises
// the k-median sum of m by at most tieCost.
func swapTies(m *geo.Matrix, cores []int) [][]bool {
	delta, sum := swapDeltas(m, cores)
	tie := make([][]bool, len(cores))
	for i := range cores {
		tie[i] = make([]bool, m.Cols())
		for c, d := range delta[i] {
			tie[i][c] = !slices.Contains(cores, c) && d <= sum*tieCost
		}
	}
	return tie
}

// swapDeltas returns delta[i][c], the change of m's k-median sum when the
// candidate c replaces cores[i] (meaningless for c in cores), and the sum
// itself, in O(k·m·n) from each player's nearest and second-nearest core.
func swapDeltas(m *geo.Matrix, cores []int) ([][]float64, float64) {
	n := m.Rows()
	d1, d2 := make([]float64, n), make([]float64, n)
	near := make([]int, n)
	sum := 0.0
	for p := range n {
		d1[p], d2[p], near[p] = math.Inf(1), math.Inf(1), -1
		for i, c := range cores {
			if v := m.At(p, c); v < d1[p] {
				d1[p], d2[p], near[p] = v, d1[p], i
			} else if v < d2[p] {
				d2[p] = v
			}
		}
		sum += d1[p]
	}
	delta := make([][]float64, len(cores))
	for i := range cores {
		delta[i] = make([]float64, m.Cols())
		for c := range m.Cols() {
			s := 0.0
			for p := range n {
				base := d1[p]
				if near[p] == i {
					base = d2[p]
				}
				s += min(base, m.At(p, c))
			}
			delta[i][c] = s - sum
		}
	}
	return delta, sum
}

// tieHits returns the size of a largest matching of chosen cores to
// optimal cores in which a chosen core matches an optimal core it equals
// or ties with (ref.tie): the hits when interchangeable nodes count as one.
func tieHits(ref coreRef, chosen []int) int {
	k := len(ref.opt.Cores)
	match := make([]int, k) // optimal slot → index in chosen, or -1
	for i := range match {
		match[i] = -1
	}
	ok := func(s, i int) bool { return chosen[s] == ref.opt.Cores[i] || ref.tie[i][chosen[s]] }
	var try func(s int, seen []bool) bool
	try = func(s int, seen []bool) bool {
		for i := range k {
			if seen[i] || !ok(s, i) {
				continue
			}
			seen[i] = true
			if match[i] < 0 || try(match[i], seen) {
				match[i] = s
				return true
			}
		}
		return false
	}
	hits := 0
	for s := range chosen {
		if try(s, make([]bool, k)) {
			hits++
		}
	}
	return hits
}

// poolPerturb is the number of perturbed re-solves that rank candidates
// for a verify pool.
const poolPerturb = 12

// poolRanks ranks, for k = 1..MaxK, the group's candidates (indices into
// group) by how promising they are on e's estimates: the cores of the
// solution on the estimates first; then by how many of poolPerturb
// re-solves on perturbed estimates (each pair times e^N(0, u²), u the
// estimator's own uncertainty for the pair when it has one, else 5%)
// choose them, a sample of the near-optimal solutions the estimates cannot
// tell apart; then by how little the estimated cost rises when they replace
// their best core. rng draws the perturbations.
func poolRanks(e estimate.Estimator, t *estimate.Truth, group []int, cfg Config, rng *rand.Rand) ([][]int, error) {
	em, err := estimate.Matrix(e, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	n := len(group)
	unc := make([]float64, n*n)
	u, hasU := e.(estimate.Uncertain)
	for a, i := range group {
		for b, j := range group {
			unc[a*n+b] = 0.05
			if hasU {
				unc[a*n+b] = max(0, u.Uncertainty(i, j))
			}
		}
	}
	pert := make([]*geo.Matrix, poolPerturb)
	for r := range pert {
		data := make([][]float64, n)
		for a := range data {
			data[a] = make([]float64, n)
		}
		for a := range n {
			for b := a + 1; b < n; b++ {
				v := em.At(a, b) * math.Exp(unc[a*n+b]*rng.NormFloat64())
				data[a][b], data[b][a] = v, v
			}
		}
		names := em.RowNames()
		if pert[r], err = geo.NewMatrix(names, names, data); err != nil {
			return nil, err
		}
	}
	ranks := make([][]int, cfg.MaxK)
	for k := 1; k <= cfg.MaxK; k++ {
		sol, err := core.Select(core.Problem{PlayerCore: em, CoreCore: em, K: k, Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))))
		if err != nil {
			return nil, err
		}
		count := make([]int, n)
		for _, c := range sol.Cores {
			count[c] += poolPerturb + 1
		}
		for _, pm := range pert {
			ps, err := core.LocalSearch(core.Problem{PlayerCore: pm, K: k, Objective: core.KMedian}, rng, core.Options{})
			if err != nil {
				return nil, err
			}
			for _, c := range ps.Cores {
				count[c]++
			}
		}
		rise := swapRise(em, sol.Cores)
		order := rowsAll(n)
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(rise[a], rise[b])) })
		ranks[k-1] = order
	}
	return ranks, nil
}

// selectPool is core selection with a verify pool: measure every
// player's RTT to the top M = cr.Pool·k candidates of ranks (capped at the
// group size) and solve on those measurements restricted to the pool, to
// proven optimality. M goes to cr.Probed. The solutions carry e's
// estimated figures for the chosen cores, as the other rows do.
func selectPool(e estimate.Estimator, t *estimate.Truth, group []int, cfg Config, ranks [][]int, cr *CoreResult) ([]core.Solution, error) {
	em, err := estimate.Matrix(e, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	meas, err := estimate.Matrix(truthEstimator{t}, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	n := len(group)
	var out []core.Solution
	for k := 1; k <= cfg.MaxK; k++ {
		pool := slices.Clone(ranks[k-1][:min(n, cr.Pool*k)])
		slices.Sort(pool)
		sub, err := meas.Sub(rowsAll(n), pool)
		if err != nil {
			return nil, err
		}
		ps, err := core.Prove(core.Problem{PlayerCore: sub, K: k, Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))), core.ProveOptions{})
		if err != nil {
			return nil, err
		}
		chosen := make([]int, k)
		for i, c := range ps.Solution.Cores {
			chosen[i] = pool[c]
		}
		slices.Sort(chosen)
		sol, err := core.Evaluate(core.Problem{PlayerCore: em, CoreCore: em, K: k}, chosen)
		if err != nil {
			return nil, err
		}
		out = append(out, sol)
		cr.Probed = append(cr.Probed, len(pool))
	}
	return out, nil
}

// swapRise returns, per candidate, the rise of m's k-median sum when it
// replaces its best core of cores (−1 for the cores themselves, which rank
// first).
func swapRise(m *geo.Matrix, cores []int) []float64 {
	delta, _ := swapDeltas(m, cores)
	rise := make([]float64, m.Cols())
	for c := range rise {
		rise[c] = math.Inf(1)
		if slices.Contains(cores, c) {
			rise[c] = -1
			continue
		}
		for i := range cores {
			rise[c] = min(rise[c], delta[i][c])
		}
	}
	return rise
}

func rowsAll(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// selectBudget is core selection on estimates that measures at most
// B = cr.Budget·k candidate columns (every player's RTT to a candidate)
// per k, on top of the estimator's own probes; the number measured goes
// to cr.Probed.
//
// Facility location (cr.Paper false): verify within the budget — select on
// the estimates corrected by the columns measured so far, measure the
// chosen cores not yet measured, and repeat while the budget allows. When
// the last selection's cores are all measured it is the answer (the
// optimum of the corrected matrix, confirmed by core.Prove); otherwise
// what is left of the budget goes to close calls (the candidates whose
// swap into the best measured set costs least on the corrected estimates)
// and the answer is the proven optimum over the measured columns alone, on
// their measurements, so that no core is taken on an estimate that
// happened to be low (the winner's curse).
//
// The paper's selection (cr.Paper true): rank the candidates by their
// estimated total latency to the players, measure the B best-ranked
// columns, and keep the k with the least measured totals. It is exact
// when the true k best are among the B best on estimates; totals average
// the estimates over the players, so the ranking errs far less than the
// estimates do.
func selectBudget(e estimate.Estimator, t *estimate.Truth, group []int, cfg Config, cr *CoreResult) ([]core.Solution, error) {
	em, err := estimate.Matrix(e, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	meas, err := estimate.Matrix(truthEstimator{t}, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	n := len(group)
	names := em.RowNames()
	var out []core.Solution
	for k := 1; k <= cfg.MaxK; k++ {
		budget := min(n, cr.Budget*k)
		var chosen []int
		probed := 0
		if cr.Paper {
			costs, err := core.CandidateCosts(core.Problem{PlayerCore: em, K: k})
			if err != nil {
				return nil, err
			}
			order := rowsAll(n)
			slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[a], costs[b]) })
			pool := slices.Clone(order[:budget])
			slices.Sort(pool)
			probed = len(pool)
			sub, err := meas.Sub(rowsAll(n), pool)
			if err != nil {
				return nil, err
			}
			ps, err := core.KMinimum(core.Problem{PlayerCore: sub, K: k, Objective: core.KMedian})
			if err != nil {
				return nil, err
			}
			for _, c := range ps.Cores {
				chosen = append(chosen, pool[c])
			}
		} else {
			data := make([][]float64, n)
			for a := range data {
				data[a] = make([]float64, n)
				for b := range n {
					data[a][b] = em.At(a, b)
				}
			}
			measured := make([]bool, n)
			measure := func(c int) {
				measured[c] = true
				probed++
				for a := range n {
					data[a][c], data[c][a] = meas.At(a, c), meas.At(a, c)
				}
			}
			for {
				m, err := geo.NewMatrix(names, names, data)
				if err != nil {
					return nil, err
				}
				p := core.Problem{PlayerCore: m, CoreCore: m, K: k, Objective: core.KMedian}
				sol, err := core.Select(p, rand.New(rand.NewPCG(cfg.Seed, uint64(k))))
				if err != nil {
					return nil, err
				}
				var fresh []int
				for _, c := range sol.Cores {
					if !measured[c] {
						fresh = append(fresh, c)
					}
				}
				if len(fresh) == 0 {
					pr, err := core.Prove(p, rand.New(rand.NewPCG(cfg.Seed, uint64(k))), core.ProveOptions{})
					if err != nil {
						return nil, err
					}
					if pr.Solution.Sum < sol.Sum {
						sol = pr.Solution
					}
					for _, c := range sol.Cores {
						if !measured[c] {
							fresh = append(fresh, c)
						}
					}
					if len(fresh) == 0 {
						chosen = sol.Cores
						break
					}
				}
				if probed+len(fresh) > budget {
					break
				}
				for _, c := range fresh {
					measure(c)
				}
			}
			// Close calls: spend what is left of the budget on the
			// candidates that would cost least, on the corrected
			// estimates, in place of one of the best measured set's cores
			// (the alternatives the estimates cannot rule out); the
			// optimum over the measured columns can only improve.
			if chosen == nil && probed < budget {
				var pool []int
				for c, ok := range measured {
					if ok {
						pool = append(pool, c)
					}
				}
				sub, err := meas.Sub(rowsAll(n), pool)
				if err != nil {
					return nil, err
				}
				ps, err := core.Prove(core.Problem{PlayerCore: sub, K: min(k, len(pool)), Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))), core.ProveOptions{})
				if err != nil {
					return nil, err
				}
				best := make([]int, len(ps.Solution.Cores))
				for i, c := range ps.Solution.Cores {
					best[i] = pool[c]
				}
				m, err := geo.NewMatrix(names, names, data)
				if err != nil {
					return nil, err
				}
				rise := swapRise(m, best)
				order := rowsAll(n)
				slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rise[a], rise[b]) })
				for _, c := range order {
					if probed >= budget {
						break
					}
					if !measured[c] {
						measure(c)
					}
				}
			}
			if chosen == nil {
				var pool []int
				for c, ok := range measured {
					if ok {
						pool = append(pool, c)
					}
				}
				// The first selection's k cores fit any budget B·k ≥ k, so
				// at least k columns are measured.
				if len(pool) < k {
					return nil, fmt.Errorf("lab/region: %d columns measured for k = %d", len(pool), k)
				}
				slices.Sort(pool)
				sub, err := meas.Sub(rowsAll(n), pool)
				if err != nil {
					return nil, err
				}
				ps, err := core.Prove(core.Problem{PlayerCore: sub, K: k, Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))), core.ProveOptions{})
				if err != nil {
					return nil, err
				}
				for _, c := range ps.Solution.Cores {
					chosen = append(chosen, pool[c])
				}
			}
		}
		slices.Sort(chosen)
		sol, err := core.Evaluate(core.Problem{PlayerCore: em, CoreCore: em, K: k}, chosen)
		if err != nil {
			return nil, err
		}
		out = append(out, sol)
		cr.Probed = append(cr.Probed, probed)
	}
	return out, nil
}
