package core

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/overworld/overworld/geo"
)

// Objective says what a set of cores minimises.
type Objective int

const (
	// KMedian minimises the sum (equivalently the mean) over players of the
	// latency to the nearest core: facility-location k-median, best on
	// average. With KMinimum it is the paper's k-median instead, the
	// k-minimum-pairwise problem.
	KMedian Objective = iota
	// KCenter minimises the largest latency from a player to its nearest
	// core (the eccentricity of the core set): facility-location k-center,
	// best for the worst-placed player. With KMinimum it is the paper's
	// k-center instead, the k-minimum-eccentricity problem.
	KCenter
)

// String returns "median" or "center".
func (o Objective) String() string {
	switch o {
	case KMedian:
		return "median"
	case KCenter:
		return "center"
	}
	return fmt.Sprintf("Objective(%d)", int(o))
}

// ParseObjective accepts "median", "k-median", "kmedian", "center",
// "k-center" or "kcenter" (any case).
func ParseObjective(s string) (Objective, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "median", "k-median", "kmedian":
		return KMedian, nil
	case "center", "k-center", "kcenter":
		return KCenter, nil
	}
	return 0, fmt.Errorf("%w: %q (want median or center)", ErrObjective, s)
}

// Sentinel errors. Errors returned by this package wrap one of these.
var (
	// ErrNoPlayers reports a group with no players (or a nil matrix).
	ErrNoPlayers = errors.New("core: empty group")
	// ErrNoCandidates reports a matrix with no candidate columns.
	ErrNoCandidates = errors.New("core: no candidates")
	// ErrK reports k outside [1, number of candidates].
	ErrK = errors.New("core: k out of range")
	// ErrObjective reports an unknown objective.
	ErrObjective = errors.New("core: unknown objective")
	// ErrShape reports a core-to-core matrix that does not match the
	// candidates of the player-to-core matrix.
	ErrShape = errors.New("core: mismatched matrices")
	// ErrLatency reports a NaN, infinite or negative latency. geo.Matrix
	// constructors already reject these; the check guards the invariant.
	ErrLatency = errors.New("core: invalid latency")
	// ErrCores reports a core set that is empty, repeats a candidate or
	// names one out of range.
	ErrCores = errors.New("core: bad core set")
	// ErrNilRand reports a nil *rand.Rand where randomness is needed.
	ErrNilRand = errors.New("core: nil *rand.Rand")
	// ErrTooLarge reports an instance with too many k-subsets for
	// exhaustive search; the error is a *TooLargeError.
	ErrTooLarge = errors.New("core: too large for exhaustive search")
)

// TooLargeError says how far an instance is beyond exhaustive search. It
// wraps ErrTooLarge.
type TooLargeError struct {
	Candidates, K int
	Subsets       float64 // C(Candidates, K)
	Limit         float64 // MaxExactSubsets
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("core: too large for exhaustive search: C(%d,%d) = %.3g subsets, limit %.3g; use LocalSearch",
		e.Candidates, e.K, e.Subsets, e.Limit)
}

// Unwrap returns ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// Problem is one core-selection instance.
type Problem struct {
	// PlayerCore holds the latency (ms) from each player (row) to each
	// candidate server (column). Required, at least 1×1.
	PlayerCore *geo.Matrix
	// CoreCore optionally holds the latency between candidates (a
	// Cols×Cols matrix in the column order of PlayerCore; when both carry
	// the same names they must match). It only affects the diameter: when
	// nil, the hop between two different cores counts as 0, so Diameter is
	// a lower bound for k > 1 (and exact for k = 1). Its diagonal is ignored.
	CoreCore *geo.Matrix
	// K is the number of cores to choose, in [1, PlayerCore.Cols()].
	K int
	// Objective is KMedian or KCenter.
	Objective Objective
}

// Validate reports whether p is a well-formed instance.
func (p Problem) Validate() error {
	_, err := newInst(p)
	return err
}

// Solution is a set of cores and how good it is. All latencies are in ms.
type Solution struct {
	// Cores are the chosen candidates (column indices of PlayerCore),
	// ascending.
	Cores []int
	// Cost is the objective value: Sum for KMedian, Max for KCenter.
	Cost float64
	// Sum, Mean and Max summarise the latency from each player to its
	// nearest core; Max is the eccentricity of the core set.
	Sum, Mean, Max float64
	// Diameter is the largest latency between two different players routed
	// through their cores: max over p ≠ q of
	// d(p,c_p) + d(c_p,c_q) + d(c_q,q), where c_p is p's core, d(c,c) = 0
	// and d(c_p,c_q) comes from CoreCore (0 when it is nil). It is 0 for a
	// group of one player.
	Diameter float64
	// Assignment gives each player's core (a candidate index): its nearest
	// core, ties to the lower candidate index.
	Assignment []int
	// Exact reports that Cores is proven optimal (lexicographically, see
	// the package doc).
	Exact bool
}

// inst is a validated Problem in the layout the solvers use.
type inst struct {
	n, m, k int
	obj     Objective
	lat     []float64 // column-major: lat[c*n+p] = d(player p, candidate c)
	cc      []float64 // m×m row-major core-to-core latency, or nil
}

func newInst(p Problem) (*inst, error) {
	pc := p.PlayerCore
	switch {
	case pc == nil || pc.Rows() == 0:
		return nil, ErrNoPlayers
	case pc.Cols() == 0:
		return nil, ErrNoCandidates
	case p.K < 1 || p.K > pc.Cols():
		return nil, fmt.Errorf("%w: k = %d, want 1 ≤ k ≤ %d candidates", ErrK, p.K, pc.Cols())
	case p.Objective != KMedian && p.Objective != KCenter:
		return nil, fmt.Errorf("%w: %d", ErrObjective, int(p.Objective))
	}
	n, m := pc.Rows(), pc.Cols()
	in := &inst{n: n, m: m, k: p.K, obj: p.Objective, lat: make([]float64, n*m)}
	for i := range n {
		for c := range m {
			v := pc.At(i, c)
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("%w: player %q to candidate %q is %g", ErrLatency, pc.RowName(i), pc.ColName(c), v)
			}
			in.lat[c*n+i] = v
		}
	}
	if cc := p.CoreCore; cc != nil {
		if cc.Rows() != m || cc.Cols() != m {
			return nil, fmt.Errorf("%w: core-to-core matrix is %d×%d, want %d×%d (candidates)", ErrShape, cc.Rows(), cc.Cols(), m, m)
		}
		if !slices.Equal(cc.RowNames(), cc.ColNames()) {
			return nil, fmt.Errorf("%w: core-to-core matrix rows and columns name different endpoints", ErrShape)
		}
		names := pc.ColNames()
		for c := range m {
			if cc.RowName(c) != names[c] {
				return nil, fmt.Errorf("%w: core-to-core endpoint %d is %q, candidate %d is %q", ErrShape, c, cc.RowName(c), c, names[c])
			}
		}
		in.cc = make([]float64, m*m)
		for a := range m {
			for b := range m {
				v := cc.At(a, b)
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					return nil, fmt.Errorf("%w: core %q to core %q is %g", ErrLatency, cc.RowName(a), cc.ColName(b), v)
				}
				if a != b {
					in.cc[a*m+b] = v
				}
			}
		}
	}
	return in, nil
}

// score is a set's (sum, max) of player-to-nearest-core latency.
type score struct{ sum, max float64 }

// key returns (primary, secondary) for the objective.
func (s score) key(o Objective) (float64, float64) {
	if o == KCenter {
		return s.max, s.sum
	}
	return s.sum, s.max
}

// better reports whether a beats b lexicographically under o, exactly.
func (o Objective) better(a, b score) bool {
	a1, a2 := a.key(o)
	b1, b2 := b.key(o)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}

// checkCores validates a core set and returns it sorted (a copy).
func (in *inst) checkCores(cores []int) ([]int, error) {
	if len(cores) == 0 {
		return nil, fmt.Errorf("%w: no cores", ErrCores)
	}
	s := slices.Clone(cores)
	slices.Sort(s)
	for i, c := range s {
		if c < 0 || c >= in.m {
			return nil, fmt.Errorf("%w: candidate %d outside [0,%d)", ErrCores, c, in.m)
		}
		if i > 0 && s[i-1] == c {
			return nil, fmt.Errorf("%w: candidate %d chosen twice", ErrCores, c)
		}
	}
	return s, nil
}

// evaluate scores a sorted, valid core set: every figure of Solution but
// Exact. Sums run in player order, as every solver's do, so equal sets give
// bit-identical costs.
func (in *inst) evaluate(cores []int) Solution {
	n := in.n
	sol := Solution{Cores: slices.Clone(cores), Assignment: make([]int, n)}
	dist := make([]float64, n)
	for p := range n {
		best, bc := math.Inf(1), -1
		for _, c := range cores {
			if v := in.lat[c*n+p]; v < best {
				best, bc = v, c
			}
		}
		dist[p], sol.Assignment[p] = best, bc
		sol.Sum += best
		sol.Max = max(sol.Max, best)
	}
	sol.Mean = sol.Sum / float64(n)
	sol.Cost, _ = score{sol.Sum, sol.Max}.key(in.obj)
	sol.Diameter = in.diameter(cores, sol.Assignment, dist)
	return sol
}

// diameter computes max over p ≠ q of dist[p] + hop(c_p, c_q) + dist[q] in
// O(n + k²): for each core only its two farthest players matter (the pair
// may share that core, or use the farthest of each of two cores).
func (in *inst) diameter(cores, assign []int, dist []float64) float64 {
	if in.n < 2 {
		return 0
	}
	k := len(cores)
	slot := make(map[int]int, k)
	for i, c := range cores {
		slot[c] = i
	}
	// top1[i] ≥ top2[i] are the two largest latencies among the players of
	// core i; -1 marks "fewer players than that" (latencies are ≥ 0).
	top1, top2 := make([]float64, k), make([]float64, k)
	for i := range k {
		top1[i], top2[i] = -1, -1
	}
	for p, c := range assign {
		i, v := slot[c], dist[p]
		if v > top1[i] {
			top1[i], top2[i] = v, top1[i]
		} else if v > top2[i] {
			top2[i] = v
		}
	}
	d := 0.0
	for i := range k {
		if top2[i] >= 0 {
			d = max(d, top1[i]+top2[i])
		}
		if top1[i] < 0 {
			continue
		}
		for j := range k {
			if j == i || top1[j] < 0 {
				continue
			}
			hop := 0.0
			if in.cc != nil {
				hop = in.cc[cores[i]*in.m+cores[j]]
			}
			d = max(d, top1[i]+hop+top1[j])
		}
	}
	return d
}

// Evaluate scores a given set of cores on p (p.K is not checked against
// len(cores); any non-empty set of distinct candidates will do). Use it to
// score cores chosen on one matrix (estimated latencies) against another
// (measured ones). The result has Exact false.
func Evaluate(p Problem, cores []int) (Solution, error) {
	pp := p
	pp.K = 1 // any valid k: cores carry their own count
	in, err := newInst(pp)
	if err != nil {
		return Solution{}, err
	}
	s, err := in.checkCores(cores)
	if err != nil {
		return Solution{}, err
	}
	return in.evaluate(s), nil
}

// Eccentricity returns the largest latency from a player (row of
// playerCore) to its nearest core in cores (column indices): the k-center
// cost of the set, the paper's "eccentricity of the cores".
func Eccentricity(playerCore *geo.Matrix, cores []int) (float64, error) {
	s, err := Evaluate(Problem{PlayerCore: playerCore}, cores)
	return s.Max, err
}

// Diameter returns the group diameter through cores (see
// Solution.Diameter). coreCore may be nil (hops between different cores
// count as 0).
func Diameter(playerCore, coreCore *geo.Matrix, cores []int) (float64, error) {
	s, err := Evaluate(Problem{PlayerCore: playerCore, CoreCore: coreCore}, cores)
	return s.Diameter, err
}
