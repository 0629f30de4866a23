package core_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/overworld/overworld/place/core"
)

// TestProveMatchesExact checks Prove's optimality claim against Exact on
// random instances of every family, from a weak start (greedy local optimum
// only) so that the branch and bound has to find the optimum, not just
// certify it; and that a node cap leaves a valid bound.
func TestProveMatchesExact(t *testing.T) {
	seeds := uint64(1500)
	if testing.Short() {
		seeds = 400
	}
	proven, capped := 0, 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 60))
		f := family(seed % uint64(numFamilies))
		n, m := 1+rng.IntN(40), 1+rng.IntN(18)
		pc, cc := instance(t, rng, f, n, m)
		p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 1 + rng.IntN(min(m, 6))}
		tag := fmt.Sprintf("seed %d (%v, n=%d m=%d k=%d)", seed, f, n, m, p.K)
		ex, err := core.Exact(p)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		tol := 1e-9 * max(1, ex.Sum)
		for _, opts := range []core.ProveOptions{{Restarts: -1}, {Restarts: -1, MaxNodes: 2}} {
			pr, err := core.Prove(p, rand.New(rand.NewPCG(seed, 61)), opts)
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
			s := pr.Solution
			checkSolution(t, tag, p, s)
			if s.Sum < ex.Sum-tol {
				t.Fatalf("%s: Prove's %v (sum %v) beats Exact's %v (sum %v)", tag, s.Cores, s.Sum, ex.Cores, ex.Sum)
			}
			if pr.Bound > ex.Sum+tol || pr.Bound < 0 || math.IsNaN(pr.Gap) || pr.Gap < 0 {
				t.Fatalf("%s %+v: bound %v, gap %v, optimum %v", tag, opts, pr.Bound, pr.Gap, ex.Sum)
			}
			if pr.Optimal {
				if s.Sum > ex.Sum+tol || pr.Gap != 0 {
					t.Fatalf("%s %+v: claims optimal with sum %v (gap %v), optimum %v", tag, opts, s.Sum, pr.Gap, ex.Sum)
				}
				if opts.MaxNodes == 0 {
					proven++
				}
			} else if opts.MaxNodes == 0 {
				t.Fatalf("%s: not proven within the default node cap (%d nodes)", tag, pr.Nodes)
			} else {
				capped++
			}
		}
	}
	t.Logf("%d/%d proven optimal; %d capped runs left a valid bound", proven, seeds, capped)
}

func TestProveRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pc, cc := instance(t, rng, famPlane, 10, 6)
	if _, err := core.Prove(core.Problem{PlayerCore: pc, CoreCore: cc, K: 2, Objective: core.KCenter}, rng, core.ProveOptions{}); !errors.Is(err, core.ErrObjective) {
		t.Errorf("k-center: %v, want ErrObjective", err)
	}
	if _, err := core.Prove(core.Problem{PlayerCore: pc, K: 2}, nil, core.ProveOptions{}); !errors.Is(err, core.ErrNilRand) {
		t.Errorf("nil rng: %v, want ErrNilRand", err)
	}
	if _, err := core.Prove(core.Problem{PlayerCore: pc, K: 7}, rng, core.ProveOptions{}); !errors.Is(err, core.ErrK) {
		t.Errorf("k > m: %v, want ErrK", err)
	}
}

func BenchmarkProve(b *testing.B) {
	for _, k := range []int{5, 15, 25} {
		b.Run(fmt.Sprintf("n=100/k=%d", k), func(b *testing.B) {
			pc, cc := benchInstance(b, 100, 100)
			p := core.Problem{PlayerCore: pc, CoreCore: cc, K: k}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := core.Prove(p, rand.New(rand.NewPCG(1, 1)), core.ProveOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
