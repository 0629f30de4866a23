package core

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Options tune LocalSearch. The zero value is valid: one greedy start, the
// default swap cap.
type Options struct {
	// Restarts is the number of extra starts from random k-subsets after
	// the greedy start; the best local optimum wins. Each costs about as
	// much as the first.
	Restarts int
	// MaxSwaps caps the improving swaps per start, a guard against
	// floating-point cycling (every accepted swap must improve the cost by
	// a relative 1e-9, so it is never reached in practice). 0 means
	// 1000 + 100·k.
	MaxSwaps int
}

// DefaultOptions returns the options Select uses for an objective, measured
// against Exact on 150 PlanetLab groups (100 players, 40 candidates,
// k = 2..4; TestLocalSearchGapPlanetLab):
//
//   - KMedian: the greedy start plus 2 random restarts. The swap
//     neighbourhood suits a sum: with no restart 99% of the groups are
//     solved optimally (worst gap 2%), with 2 restarts all of them.
//   - KCenter: the greedy start plus 10 random restarts. A maximum has
//     plateaus a single swap cannot leave; with 2 restarts 95% are optimal
//     (worst gap 12%), with 10 all of them.
//
// Each restart costs about as much as the first start.
func DefaultOptions(o Objective) Options {
	if o == KCenter {
		return Options{Restarts: 10}
	}
	return Options{Restarts: 2}
}

// relTol is the relative improvement a swap must bring to be taken.
const relTol = 1e-9

// LocalSearch returns a local optimum of single swaps (replace one core by
// one non-core; Arya et al., "Local search heuristics for k-median and
// facility location problems", 2004), starting from the greedy solution
// (add the best core k times) and then from opts.Restarts random sets drawn
// from rng. Within a start, candidates are tried in an rng-shuffled order and
// the first one that improves the cost (with its best core to remove) is
// swapped in, until no swap improves. One pass over all swaps costs
// O(n·m + m·k) (Whitaker's fast interchange: each player's nearest and second
// nearest core make every removal's effect computable at once). The result is
// deterministic for a given rng state; Exact is false.
func LocalSearch(p Problem, rng *rand.Rand, opts Options) (Solution, error) {
	in, err := newInst(p)
	if err != nil {
		return Solution{}, err
	}
	if rng == nil {
		return Solution{}, ErrNilRand
	}
	return in.evaluate(in.localSearch(rng, opts)), nil
}

func (in *inst) localSearch(rng *rand.Rand, opts Options) []int {
	maxSwaps := opts.MaxSwaps
	if maxSwaps <= 0 {
		maxSwaps = 1000 + 100*in.k
	}
	ls := newSwapper(in)
	best := ls.run(in.greedy(), rng, maxSwaps)
	bestScore := ls.cur
	for range max(opts.Restarts, 0) {
		start := rng.Perm(in.m)[:in.k]
		set := ls.run(start, rng, maxSwaps)
		if in.obj.better(ls.cur, bestScore) {
			best, bestScore = set, ls.cur
		}
	}
	slices.Sort(best)
	return best
}

// greedy adds, k times, the candidate that most improves the set (ties to
// the lower index). O(k·m·n).
func (in *inst) greedy() []int {
	n := in.n
	near := make([]float64, n)
	for p := range near {
		near[p] = math.Inf(1)
	}
	chosen := make([]bool, in.m)
	set := make([]int, 0, in.k)
	for range in.k {
		bc, bs := -1, score{}
		for c := range in.m {
			if chosen[c] {
				continue
			}
			var s score
			for p, v := range in.lat[c*n : (c+1)*n] {
				v = min(v, near[p])
				s.sum += v
				s.max = max(s.max, v)
			}
			if bc < 0 || in.obj.better(s, bs) {
				bc, bs = c, s
			}
		}
		chosen[bc] = true
		set = append(set, bc)
		for p, v := range in.lat[bc*n : (bc+1)*n] {
			near[p] = min(near[p], v)
		}
	}
	return set
}

// swapper holds one local-search state: the cores by slot, and each
// player's nearest core slot and nearest and second-nearest latencies.
type swapper struct {
	in     *inst
	slots  []int  // slot → candidate
	isCore []bool // candidate is a core
	near   []int  // player → slot of nearest core
	d1, d2 []float64
	cur    score // exact score of slots

	extra, a, b []float64 // per slot scratch
}

func newSwapper(in *inst) *swapper {
	return &swapper{
		in:     in,
		slots:  make([]int, in.k),
		isCore: make([]bool, in.m),
		near:   make([]int, in.n),
		d1:     make([]float64, in.n),
		d2:     make([]float64, in.n),
		extra:  make([]float64, in.k),
		a:      make([]float64, in.k),
		b:      make([]float64, in.k),
	}
}

// reset recomputes nearest cores and the exact score (summing in player
// order, as evaluate does).
func (s *swapper) reset() {
	n := s.in.n
	s.cur = score{}
	for p := range n {
		d1, d2, near := math.Inf(1), math.Inf(1), -1
		for i, c := range s.slots {
			v := s.in.lat[c*n+p]
			if v < d1 {
				d1, d2, near = v, d1, i
			} else if v < d2 {
				d2 = v
			}
		}
		s.d1[p], s.d2[p], s.near[p] = d1, d2, near
		s.cur.sum += d1
		s.cur.max = max(s.cur.max, d1)
	}
}

// run improves start (k distinct candidates) to a local optimum and returns
// it; s.cur holds its exact score.
func (s *swapper) run(start []int, rng *rand.Rand, maxSwaps int) []int {
	in := s.in
	copy(s.slots, start)
	clear(s.isCore)
	for _, c := range s.slots {
		s.isCore[c] = true
	}
	s.reset()
	order := make([]int, in.m)
	for i := range order {
		order[i] = i
	}
	for swaps := 0; swaps < maxSwaps && in.k < in.m; {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		improved := false
		for _, c := range order {
			if s.isCore[c] {
				continue
			}
			r, sc := s.bestRemoval(c)
			if !s.improves(sc) {
				continue
			}
			s.isCore[s.slots[r]] = false
			s.isCore[c] = true
			s.slots[r] = c
			s.reset()
			improved = true
			if swaps++; swaps >= maxSwaps {
				break
			}
		}
		if !improved {
			break
		}
	}
	return slices.Clone(s.slots)
}

// bestRemoval returns the slot whose core is best replaced by candidate c,
// and the score of that swap, in O(n + k): a player whose nearest core stays
// ends at min(d1, d(c)), one whose nearest core leaves at min(d2, d(c)).
func (s *swapper) bestRemoval(c int) (int, score) {
	in := s.in
	n, k := in.n, in.k
	clear(s.extra)
	clear(s.a)
	clear(s.b)
	base := 0.0
	for p, v := range in.lat[c*n : (c+1)*n] {
		x, y := min(v, s.d1[p]), min(v, s.d2[p])
		i := s.near[p]
		base += x
		s.extra[i] += y - x
		s.a[i] = max(s.a[i], x)
		s.b[i] = max(s.b[i], y)
	}
	// The largest and second-largest a, to get max over the other slots.
	top, second, topSlot := 0.0, 0.0, -1
	for i, v := range s.a {
		if topSlot < 0 || v > top {
			second, top, topSlot = top, v, i
		} else if v > second {
			second = v
		}
	}
	bestSlot, best := -1, score{}
	for r := range k {
		others := top
		if r == topSlot {
			others = second
		}
		sc := score{base + s.extra[r], max(others, s.b[r])}
		if bestSlot < 0 || in.obj.better(sc, best) {
			bestSlot, best = r, sc
		}
	}
	return bestSlot, best
}

// improves reports whether sc beats the current score by more than the
// relative tolerance (on the objective, or on the tie-breaker when the
// objective is unchanged within tolerance).
func (s *swapper) improves(sc score) bool {
	a1, a2 := sc.key(s.in.obj)
	b1, b2 := s.cur.key(s.in.obj)
	t1, t2 := relTol*max(1, math.Abs(b1)), relTol*max(1, math.Abs(b2))
	return a1 < b1-t1 || (a1 <= b1+t1 && a2 < b2-t2)
}

// SelectExactWork bounds the work (players × subsets) for which Select
// runs Exact instead of LocalSearch. Exact k-median costs about 2–3 ns per
// player and subset (k-center far less, its running maximum cuts early), so
// this is at most about a quarter of a second; it admits k = 2 on 100
// players × 490 candidates and k = 3 on 100 × 100.
const SelectExactWork = 1e8

// Select solves p exactly when that is cheap (n·C(m,k) ≤ SelectExactWork
// and C(m,k) ≤ MaxExactSubsets) and otherwise runs LocalSearch with
// DefaultOptions(p.Objective). rng must not be nil even when Exact is used, so the choice
// never changes what a caller must pass.
func Select(p Problem, rng *rand.Rand) (Solution, error) {
	in, err := newInst(p)
	if err != nil {
		return Solution{}, err
	}
	if rng == nil {
		return Solution{}, ErrNilRand
	}
	if s := Subsets(in.m, in.k); s <= MaxExactSubsets && s*float64(in.n) <= SelectExactWork {
		sol := in.evaluate(in.exact())
		sol.Exact = true
		return sol, nil
	}
	return in.evaluate(in.localSearch(rng, DefaultOptions(in.obj))), nil
}
