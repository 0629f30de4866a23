package core_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/core"
)

// paperCost is the region-migration paper's objective of a set D,
// computed from scratch: Σ_{u∈D} Σ_players d(p,u) (k-minimum-pairwise)
// or Σ_{u∈D} max_players d(p,u) (k-minimum-eccentricity), and the same
// with the other statistic (the tie-break).
func paperCost(pc *geo.Matrix, set []int, o core.Objective) [2]float64 {
	var sum, ecc float64
	for _, c := range set {
		s, e := 0.0, 0.0
		for p := range pc.Rows() {
			s += pc.At(p, c)
			e = max(e, pc.At(p, c))
		}
		sum += s
		ecc += e
	}
	if o == core.KCenter {
		return [2]float64{ecc, sum}
	}
	return [2]float64{sum, ecc}
}

// TestKMinimumMatchesBruteForce checks the paper's selections against
// enumeration of every k-subset on seeded random instances of every
// family: the set has the least paper cost, then the least sum of the
// other statistic (within rounding), and on integer families, where sums
// are exact, it is the lexicographically first such set. Its figures are
// those of the set scored from scratch.
func TestKMinimumMatchesBruteForce(t *testing.T) {
	for seed := uint64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 25))
		f := family(seed % uint64(numFamilies))
		n, m := 1+rng.IntN(7), 1+rng.IntN(8)
		pc, cc := instance(t, rng, f, n, m)
		k := 1 + rng.IntN(m)
		for _, o := range objectives {
			p := core.Problem{PlayerCore: pc, CoreCore: cc, K: k, Objective: o}
			s, err := core.KMinimum(p)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			checkSolution(t, "kminimum", p, s)
			if k == 1 {
				ex, err := core.Exact(p)
				if err != nil || !slices.Equal(ex.Cores, s.Cores) {
					t.Fatalf("seed %d %s: k = 1: KMinimum %v, Exact %v (%v)", seed, o, s.Cores, ex.Cores, err)
				}
			}
			if s.Exact {
				t.Fatalf("seed %d: KMinimum claims the facility-location optimum", seed)
			}
			var best []int
			var bestC [2]float64
			set := make([]int, k)
			var rec func(i, start int)
			rec = func(i, start int) {
				if i == k {
					c := paperCost(pc, set, o)
					if best == nil || less(c, bestC) {
						best, bestC = slices.Clone(set), c
					}
					return
				}
				for c := start; c < m; c++ {
					set[i] = c
					rec(i+1, c+1)
				}
			}
			rec(0, 0)
			got := paperCost(pc, s.Cores, o)
			tol := 1e-9 * max(1, bestC[0], bestC[1])
			if got[0] > bestC[0]+tol || math.Abs(got[0]-bestC[0]) <= tol && got[1] > bestC[1]+tol {
				t.Fatalf("seed %d %s %s n=%d m=%d k=%d: cores %v cost %v, enumeration %v cost %v",
					seed, f, o, n, m, k, s.Cores, got, best, bestC)
			}
			if (f == famInteger || f == famZeros) && !slices.Equal(s.Cores, best) {
				t.Fatalf("seed %d %s %s: cores %v, enumeration's first optimum %v", seed, f, o, s.Cores, best)
			}
			costs, err := core.CandidateCosts(p)
			if err != nil {
				t.Fatal(err)
			}
			total := 0.0
			for _, c := range s.Cores {
				total += costs[c]
			}
			if math.Abs(total-got[0]) > tol {
				t.Fatalf("seed %d: CandidateCosts sum to %v over the cores, recomputed %v", seed, total, got[0])
			}
		}
	}
}

func TestKMinimumRejects(t *testing.T) {
	pc, _ := instance(t, rand.New(rand.NewPCG(1, 1)), famPlane, 3, 4)
	for _, p := range []core.Problem{{}, {PlayerCore: pc, K: 5}, {PlayerCore: pc, K: 0}, {PlayerCore: pc, K: 1, Objective: 7}} {
		if _, err := core.KMinimum(p); err == nil {
			t.Errorf("%+v: no error", p)
		}
		if _, err := core.CandidateCosts(p); err == nil {
			t.Errorf("CandidateCosts %+v: no error", p)
		}
	}
	if _, err := core.KMinimum(core.Problem{PlayerCore: pc, K: 5}); !errors.Is(err, core.ErrK) {
		t.Errorf("k = 5 of 4: %v, want ErrK", err)
	}
}
