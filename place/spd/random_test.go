package spd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomInstance draws a connected overlay of n servers (a random spanning
// tree plus extra links, latencies 1..30 ms, integers so that ties happen)
// and m players with latencies 5..80 ms.
func randomInstance(t testing.TB, rng *rand.Rand, n, m int) *Instance {
	t.Helper()
	servers := make([]string, n)
	for i := range servers {
		servers[i] = fmt.Sprintf("s%d", i)
	}
	players := make([]string, m)
	for i := range players {
		players[i] = fmt.Sprintf("p%d", i)
	}
	has := map[[2]int]bool{}
	var links []Link
	add := func(a, b int) {
		if a > b {
			a, b = b, a
		}
		if a == b || has[[2]int{a, b}] {
			return
		}
		has[[2]int{a, b}] = true
		links = append(links, Link{servers[a], servers[b], float64(1 + rng.IntN(30))})
	}
	for v := 1; v < n; v++ {
		add(v, rng.IntN(v))
	}
	for k := rng.IntN(n + 1); k > 0; k-- {
		add(rng.IntN(n), rng.IntN(n))
	}
	lat := make([][]float64, m)
	for i := range lat {
		lat[i] = make([]float64, n)
		for j := range lat[i] {
			lat[i][j] = float64(5 + rng.IntN(76))
		}
	}
	in, err := NewInstance(servers, links, players, lat)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func seeds(t *testing.T, full int) int {
	if testing.Short() {
		return full / 10
	}
	return full
}

// brute enumerates every (root, assignment) of a tiny instance and returns
// the least (servers, variation, delay) within the bound, the least delay
// of any assignment, and whether any is within the bound.
type bruteResult struct {
	servers          int
	variation, delay float64
	minDelay         float64
	ok               bool
}

func brute(in *Instance, model Model, bound float64) bruteResult {
	res := bruteResult{minDelay: math.Inf(1)}
	a := make([]int, in.m)
	roots := []int{-1}
	if model == CS {
		roots = roots[:0]
		for r := 0; r < in.n; r++ {
			roots = append(roots, r)
		}
	}
	for _, r := range roots {
		var rec func(i int)
		rec = func(i int) {
			if i == in.m {
				s := in.eval(model, r, a)
				res.minDelay = min(res.minDelay, s.Delay)
				if !within(s.Delay, bound) {
					return
				}
				k := len(s.Servers)
				if !res.ok || k < res.servers || k == res.servers && lessVD(s.Variation, s.Delay, res.variation, res.delay) {
					res = bruteResult{k, s.Variation, s.Delay, res.minDelay, true}
				}
				return
			}
			for s := 0; s < in.n; s++ {
				a[i] = s
				rec(i + 1)
			}
		}
		rec(0)
	}
	return res
}

// TestExactAgainstBruteForce checks Exact, and Γ as the least CS delay,
// against enumeration of every root and assignment.
func TestExactAgainstBruteForce(t *testing.T) {
	for seed := range uint64(seeds(t, 1500)) {
		rng := rand.New(rand.NewPCG(seed, 1))
		in := randomInstance(t, rng, 2+rng.IntN(4), 1+rng.IntN(5))
		g := in.Gamma()
		for _, model := range []Model{CS, P2P} {
			for _, f := range []float64{1, 1.15, 1.4} {
				bound := f * g
				b := brute(in, model, bound)
				if model == CS && b.minDelay != g {
					t.Fatalf("seed %d: Γ = %v, least CS delay by enumeration %v", seed, g, b.minDelay)
				}
				if model == P2P && b.minDelay > g {
					t.Fatalf("seed %d: least P2P delay %v > Γ %v (a CS tree is a P2P network)", seed, b.minDelay, g)
				}
				s, err := Exact(in, model, bound, ExactOptions{})
				if err != nil {
					t.Fatalf("seed %d %s f=%v: %v", seed, model, f, err)
				}
				if !within(s.Delay, bound) || len(s.Servers) != b.servers || s.Variation != b.variation || s.Delay != b.delay {
					t.Fatalf("seed %d %s f=%v: exact (%d servers, V %v, D %v), enumeration (%d, %v, %v)",
						seed, model, f, len(s.Servers), s.Variation, s.Delay, b.servers, b.variation, b.delay)
				}
				checkSolution(t, in, s, seed)
			}
		}
		// Just below Γ: CS is infeasible, and Exact says so with Γ.
		_, err := Exact(in, CS, g-1e-6, ExactOptions{})
		var ie *InfeasibleError
		if !errors.As(err, &ie) || ie.Gamma != g {
			t.Fatalf("seed %d: bound below Γ: %v", seed, err)
		}
	}
}

// checkSolution re-evaluates a solution from scratch.
func checkSolution(t *testing.T, in *Instance, s Solution, seed uint64) {
	t.Helper()
	ev, err := in.Evaluate(s.Model, s.Root, s.Assign)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if ev.Delay != s.Delay || ev.Variation != s.Variation || !slices.Equal(ev.Servers, s.Servers) {
		t.Fatalf("seed %d: solution %+v re-evaluates to %+v", seed, s, ev)
	}
}

// TestHeuristicInvariants runs every algorithm on random instances of
// moderate size: each result is within its bound, uses at least as many
// servers as the exact optimum (where it runs), and has delay ≥ Γ (CS).
// SPDVR never leaves the input's servers nor raises the variation, and
// SPDVR-CS reaches the least variation for the input's root and servers.
func TestHeuristicInvariants(t *testing.T) {
	for seed := range uint64(seeds(t, 2000)) {
		rng := rand.New(rand.NewPCG(seed, 2))
		n, m := 2+rng.IntN(7), 1+rng.IntN(9)
		in := randomInstance(t, rng, n, m)
		g := in.Gamma()
		f := []float64{1, 1.1, 1.2, 1.3, 1.4, 1.5}[seed%6]
		bound := f * g
		small := n <= 7 && m <= 6
		for _, model := range []Model{CS, P2P} {
			var ex Solution
			var exErr error
			if small {
				ex, exErr = Exact(in, model, bound, ExactOptions{})
				if exErr != nil {
					t.Fatalf("seed %d %s: exact: %v", seed, model, exErr)
				}
			}
			var sols []Solution
			add := func(name string, s Solution, err error) {
				t.Helper()
				if err != nil {
					if name == "zizo" && errors.Is(err, ErrNoSolution) {
						return // ZIZO may fail (the paper's Fig. 5)
					}
					t.Fatalf("seed %d %s %s: %v", seed, model, name, err)
				}
				checkSolution(t, in, s, seed)
				if !within(s.Delay, bound) {
					t.Fatalf("seed %d %s %s: delay %v > bound %v", seed, model, name, s.Delay, bound)
				}
				if model == CS && s.Delay < g {
					t.Fatalf("seed %d %s: delay %v < Γ %v", seed, name, s.Delay, g)
				}
				if small && len(s.Servers) < len(ex.Servers) {
					t.Fatalf("seed %d %s %s: %d servers < exact %d", seed, model, name, len(s.Servers), len(ex.Servers))
				}
				sols = append(sols, s)
			}
			add("matching", Matching(in, model), nil)
			var h Solution
			var err error
			if model == CS {
				h, err = SPDCSH(in, bound)
			} else {
				h, err = SPDP2PH(in, bound)
			}
			add("heuristic", h, err)
			z, err := ZIZO(in, model, bound)
			add("zizo", z, err)
			if k, err := KBest(in, model, bound, len(h.Servers), 0); err == nil {
				if len(k.Servers) > len(h.Servers) {
					t.Fatalf("seed %d %s: k-best uses %d servers > k = %d", seed, model, len(k.Servers), len(h.Servers))
				}
				add("kbest", k, nil)
			} else if !errors.Is(err, ErrNoSolution) || model == CS {
				t.Fatalf("seed %d %s: k-best: %v", seed, model, err)
			}
			if small {
				add("exact", ex, nil)
			}
			for _, s := range sols {
				var v Solution
				if model == CS {
					v, err = SPDVRCS(in, s, bound)
				} else {
					v, err = SPDVRP2P(in, s, bound)
				}
				if err != nil {
					t.Fatalf("seed %d %s: spdvr: %v", seed, model, err)
				}
				checkSolution(t, in, v, seed)
				if !within(v.Delay, bound) || v.Variation > s.Variation {
					t.Fatalf("seed %d %s: spdvr delay %v (bound %v), variation %v → %v", seed, model, v.Delay, bound, s.Variation, v.Variation)
				}
				for _, x := range v.Servers {
					if !slices.Contains(s.Servers, x) {
						t.Fatalf("seed %d %s: spdvr uses server %d outside %v", seed, model, x, s.Servers)
					}
				}
				if model == CS {
					if v.Root != s.Root {
						t.Fatalf("seed %d: spdvr-cs moved the root", seed)
					}
					if m <= 5 && len(s.Servers) <= 4 {
						if bv := bruteVarCS(in, s.Root, s.Servers, bound); bv != v.Variation {
							t.Fatalf("seed %d: spdvr-cs variation %v, least for the root and servers %v", seed, v.Variation, bv)
						}
					}
				}
			}
		}
	}
}

// TestBestChainMatchesScan checks the two-pointer Algorithm Chains against
// the plain scan from every head on random lists.
func TestBestChainMatchesScan(t *testing.T) {
	for seed := range uint64(seeds(t, 3000)) {
		rng := rand.New(rand.NewPCG(seed, 3))
		m := 1 + rng.IntN(6)
		L := make([]entry, rng.IntN(25))
		for i := range L {
			L[i] = entry{c: rng.IntN(m), s: rng.IntN(4), d: float64(rng.IntN(20))}
		}
		sortEntries(L)
		h, tl, ok := bestChain(L, m)
		chains := minimalChains(L, m)
		if ok != (len(chains) > 0) {
			t.Fatalf("seed %d: ok %v with %d chains", seed, ok, len(chains))
		}
		if !ok {
			continue
		}
		best := chains[0]
		for _, c := range chains {
			if L[c[1]].d-L[c[0]].d < L[best[1]].d-L[best[0]].d {
				best = c
			}
		}
		if h != best[0] || tl != best[1] {
			t.Fatalf("seed %d: two pointers %d..%d, scan %d..%d", seed, h, tl, best[0], best[1])
		}
	}
}

// TestSPDVRP2PAgainstNaive replays Algorithm 2 with a plain O(m²) list per
// trial and compares the results move for move.
func TestSPDVRP2PAgainstNaive(t *testing.T) {
	for seed := range uint64(seeds(t, 1000)) {
		rng := rand.New(rand.NewPCG(seed, 4))
		in := randomInstance(t, rng, 2+rng.IntN(8), 2+rng.IntN(14))
		bound := in.Gamma() * (1 + 0.1*float64(rng.IntN(6)))
		s, err := SPDP2PH(in, bound)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SPDVRP2P(in, s, bound)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveSPDVRP2P(in, s, bound)
		if !slices.Equal(got.Assign, want) {
			t.Fatalf("seed %d: %v, naive %v", seed, got.Assign, want)
		}
	}
}

func naiveSPDVRP2P(in *Instance, s Solution, bound float64) []int {
	a := slices.Clone(s.Assign)
	if in.m < 3 {
		return a
	}
	var contacts []int
	for _, x := range s.Assign {
		if !slices.Contains(contacts, x) {
			contacts = append(contacts, x)
		}
	}
	slices.Sort(contacts)
	pairs := func(a []int) (fi, fj, li, lj int, lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for i := 0; i < in.m; i++ {
			for j := i + 1; j < in.m; j++ {
				d := in.lat[i*in.n+a[i]] + in.Dist(a[i], a[j]) + in.lat[j*in.n+a[j]]
				if d < lo {
					lo, fi, fj = d, i, j
				}
				if d >= hi {
					hi, li, lj = d, i, j
				}
			}
		}
		return
	}
	reassign := func(c int) bool {
		_, _, _, _, lo, hi := pairs(a)
		best, bs := hi-lo, -1
		for _, s := range contacts {
			if s == a[c] {
				continue
			}
			b := slices.Clone(a)
			b[c] = s
			_, _, _, _, l2, h2 := pairs(b)
			if h2-l2 < best && within(h2, bound) {
				best, bs = h2-l2, s
			}
		}
		if bs < 0 {
			return false
		}
		a[c] = bs
		return true
	}
	for phase := 0; phase < 2; phase++ {
		for {
			fi, fj, li, lj, _, _ := pairs(a)
			i, j := fi, fj
			if phase == 1 {
				i, j = li, lj
			}
			if !reassign(i) && !reassign(j) {
				break
			}
		}
	}
	return a
}

func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	in := randomInstance(t, rng, 9, 30)
	bound := 1.3 * in.Gamma()
	a, _ := SPDP2PH(in, bound)
	b, _ := SPDP2PH(in, bound)
	va, _ := SPDVRP2P(in, a, bound)
	vb, _ := SPDVRP2P(in, b, bound)
	if !slices.Equal(va.Assign, vb.Assign) || !slices.Equal(a.Assign, b.Assign) {
		t.Fatal("same input, different output")
	}
}

// decimalInstance is randomInstance with latencies in tenths of a
// millisecond (link 0.1–3.0, player 0.5–8.0), so that equal sums differ
// in their last bits (0.1 + 0.2 ≠ 0.3) and ties must be recognised with
// Tolerance.
func decimalInstance(t testing.TB, rng *rand.Rand, n, m int) *Instance {
	t.Helper()
	in := randomInstance(t, rng, n, m)
	servers, players := in.Servers(), in.Players()
	var links []Link
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if rng.IntN(3) == 0 || b == a+1 {
				links = append(links, Link{servers[a], servers[b], float64(1+rng.IntN(30)) / 10})
			}
		}
	}
	lat := make([][]float64, m)
	for i := range lat {
		lat[i] = make([]float64, n)
		for j := range lat[i] {
			lat[i][j] = float64(5+rng.IntN(76)) / 10
		}
	}
	out, err := NewInstance(servers, links, players, lat)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExactTiesWithinTolerance checks, on instances whose equal sums
// differ by rounding, that Exact is never beaten by another solution on
// (servers, variation, delay) with variations equal within Tolerance
// counted as equal: not by enumeration, and not by any heuristic followed
// by SPDVR. A variation one rounding step larger must not make Exact keep
// a solution with a larger delay.
func TestExactTiesWithinTolerance(t *testing.T) {
	worse := func(s Solution, servers int, v, d float64) bool {
		if len(s.Servers) != servers {
			return len(s.Servers) > servers
		}
		return lessVD(v, d, s.Variation, s.Delay)
	}
	for seed := range uint64(seeds(t, 1500)) {
		rng := rand.New(rand.NewPCG(seed, 5))
		in := decimalInstance(t, rng, 2+rng.IntN(4), 2+rng.IntN(4))
		g := in.Gamma()
		for _, model := range []Model{CS, P2P} {
			for _, f := range []float64{1, 1.2, 1.5} {
				bound := f * g
				ex, err := Exact(in, model, bound, ExactOptions{})
				if err != nil {
					t.Fatalf("seed %d %s f=%v: %v", seed, model, f, err)
				}
				b := brute(in, model, bound)
				if worse(ex, b.servers, b.variation, b.delay) {
					t.Fatalf("seed %d %s f=%v: exact (%d servers, V %v, D %v), enumeration (%d, %v, %v)",
						seed, model, f, len(ex.Servers), ex.Variation, ex.Delay, b.servers, b.variation, b.delay)
				}
				var h Solution
				if model == CS {
					h, err = SPDCSH(in, bound)
				} else {
					h, err = SPDP2PH(in, bound)
				}
				if err != nil {
					t.Fatalf("seed %d %s: heuristic: %v", seed, model, err)
				}
				for _, s := range []Solution{h, Matching(in, model)} {
					if !within(s.Delay, bound) {
						continue
					}
					v := s
					if model == CS {
						v, err = SPDVRCS(in, s, bound)
					} else {
						v, err = SPDVRP2P(in, s, bound)
					}
					if err != nil {
						t.Fatalf("seed %d %s: spdvr: %v", seed, model, err)
					}
					for _, x := range []Solution{s, v} {
						if worse(ex, len(x.Servers), x.Variation, x.Delay) {
							t.Fatalf("seed %d %s f=%v: exact (%d servers, V %v, D %v) beaten by (%d, %v, %v)",
								seed, model, f, len(ex.Servers), ex.Variation, ex.Delay, len(x.Servers), x.Variation, x.Delay)
						}
					}
				}
			}
		}
	}
}
