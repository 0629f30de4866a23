package region

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/core"
)

func randSquare(t *testing.T, rng *rand.Rand, n int) *geo.Matrix {
	t.Helper()
	names := make([]string, n)
	data := make([][]float64, n)
	for i := range n {
		names[i] = fmt.Sprint("n", i)
		data[i] = make([]float64, n)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := float64(1 + rng.IntN(20)) // small integers: many exact ties
			data[i][j], data[j][i] = v, v
		}
	}
	m, err := geo.NewSquare(names, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSwapTiesAndHits checks swapTies and swapRise against core.Evaluate of
// every swap, and tieHits against a brute-force largest matching.
func TestSwapTiesAndHits(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 5))
		n := 3 + rng.IntN(10)
		m := randSquare(t, rng, n)
		k := 1 + rng.IntN(min(4, n-1))
		p := core.Problem{PlayerCore: m, K: k}
		opt, err := core.Exact(p)
		if err != nil {
			t.Fatal(err)
		}
		tie := swapTies(m, opt.Cores)
		rise := swapRise(m, opt.Cores)
		for c := range n {
			best := 1e300
			for i, o := range opt.Cores {
				if slices.Contains(opt.Cores, c) {
					if tie[i][c] {
						t.Fatalf("seed %d: core %d ties with itself", seed, c)
					}
					continue
				}
				set := slices.Clone(opt.Cores)
				set[i] = c
				s, err := core.Evaluate(p, set)
				if err != nil {
					t.Fatal(err)
				}
				want := s.Sum <= opt.Sum*(1+tieCost)
				if tie[i][c] != want {
					t.Fatalf("seed %d: tie[%d→%d] = %v, swap sum %v vs optimum %v", seed, o, c, tie[i][c], s.Sum, opt.Sum)
				}
				best = min(best, s.Sum-opt.Sum)
			}
			if !slices.Contains(opt.Cores, c) && (rise[c] < best-1e-9 || rise[c] > best+1e-9) {
				t.Fatalf("seed %d: rise of %d is %v, want %v", seed, c, rise[c], best)
			}
		}
		ref := coreRef{opt: opt, tie: tie}
		chosen := rng.Perm(n)[:k]
		got := tieHits(ref, chosen)
		// Brute force: try every assignment of chosen cores to optimal slots.
		want := 0
		var rec func(s int, used []bool, hits int)
		rec = func(s int, used []bool, hits int) {
			if s == k {
				want = max(want, hits)
				return
			}
			rec(s+1, used, hits)
			for i := range k {
				if !used[i] && (chosen[s] == opt.Cores[i] || tie[i][chosen[s]]) {
					used[i] = true
					rec(s+1, used, hits+1)
					used[i] = false
				}
			}
		}
		rec(0, make([]bool, k), 0)
		if got != want {
			t.Fatalf("seed %d: tieHits %d, brute force %d", seed, got, want)
		}
		strict := 0
		for _, c := range chosen {
			if slices.Contains(opt.Cores, c) {
				strict++
			}
		}
		if got < strict {
			t.Fatalf("seed %d: tie-aware hits %d below strict %d", seed, got, strict)
		}
	}
}
