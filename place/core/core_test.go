package core_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/core"
)

// family names a kind of random instance.
type family int

const (
	famUniform family = iota // independent uniform latencies (not metric)
	famInteger               // small integers: many ties
	famZeros                 // mostly zeros
	famPlane                 // points in a 200 ms square: metric
	famPlanet                // clustered "continents" plus access delay: PlanetLab-like
	numFamilies
)

func (f family) String() string {
	return [...]string{"uniform", "integer", "zeros", "plane", "planet"}[f]
}

func names(prefix string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return s
}

// point is a site in the latency plane; access is its last-mile delay.
type point struct{ x, y, access float64 }

func randPoints(rng *rand.Rand, n int, f family) []point {
	pts := make([]point, n)
	// Four continents, the first twice as popular, as on PlanetLab.
	centers := []point{{40, 60, 0}, {150, 50, 0}, {170, 160, 0}, {60, 170, 0}}
	for i := range pts {
		switch f {
		case famPlanet:
			c := centers[min(rng.IntN(5), 3)]
			pts[i] = point{c.x + rng.NormFloat64()*15, c.y + rng.NormFloat64()*15, rng.ExpFloat64() * 4}
		default:
			pts[i] = point{rng.Float64() * 200, rng.Float64() * 200, 0}
		}
	}
	return pts
}

func dist(a, b point) float64 { return math.Hypot(a.x-b.x, a.y-b.y) + a.access + b.access }

// instance draws a players × candidates problem; CoreCore is set for the
// geometric families (and for others, a random symmetric matrix).
func instance(t testing.TB, rng *rand.Rand, f family, n, m int) (pc, cc *geo.Matrix) {
	t.Helper()
	pcData := make([][]float64, n)
	ccData := make([][]float64, m)
	switch f {
	case famPlane, famPlanet:
		ps, cs := randPoints(rng, n, f), randPoints(rng, m, f)
		for i := range pcData {
			pcData[i] = make([]float64, m)
			for j := range m {
				pcData[i][j] = dist(ps[i], cs[j])
			}
		}
		for a := range ccData {
			ccData[a] = make([]float64, m)
			for b := range m {
				if a != b {
					ccData[a][b] = dist(cs[a], cs[b])
				}
			}
		}
	default:
		draw := func() float64 {
			switch f {
			case famInteger:
				return float64(rng.IntN(5))
			case famZeros:
				if rng.IntN(4) > 0 {
					return 0
				}
				return float64(rng.IntN(3))
			}
			return rng.Float64() * 300
		}
		for i := range pcData {
			pcData[i] = make([]float64, m)
			for j := range m {
				pcData[i][j] = draw()
			}
		}
		for a := range ccData {
			ccData[a] = make([]float64, m)
		}
		for a := range m {
			for b := a + 1; b < m; b++ {
				v := draw()
				ccData[a][b], ccData[b][a] = v, v
			}
		}
	}
	var err error
	if pc, err = geo.NewMatrix(names("p", n), names("c", m), pcData); err != nil {
		t.Fatal(err)
	}
	if cc, err = geo.NewSquare(names("c", m), ccData); err != nil {
		t.Fatal(err)
	}
	return pc, cc
}

// ref is an independent evaluation of a core set: nearest core per player
// (ties to the lower candidate index), sum and max in player order, and the
// O(n²) diameter.
type ref struct {
	sum, max, diam float64
	assign         []int
}

func evalRef(pc, cc *geo.Matrix, cores []int) ref {
	s := slices.Sorted(slices.Values(cores))
	r := ref{assign: make([]int, pc.Rows())}
	d := make([]float64, pc.Rows())
	for p := range pc.Rows() {
		best := math.Inf(1)
		for _, c := range s {
			if v := pc.At(p, c); v < best {
				best, r.assign[p] = v, c
			}
		}
		d[p] = best
		r.sum += best
		r.max = max(r.max, best)
	}
	for p := range pc.Rows() {
		for q := range pc.Rows() {
			if p == q {
				continue
			}
			hop := 0.0
			if cc != nil && r.assign[p] != r.assign[q] {
				hop = cc.At(r.assign[p], r.assign[q])
			}
			r.diam = max(r.diam, d[p]+hop+d[q])
		}
	}
	return r
}

func (r ref) key(o core.Objective) [2]float64 {
	if o == core.KCenter {
		return [2]float64{r.max, r.sum}
	}
	return [2]float64{r.sum, r.max}
}

func less(a, b [2]float64) bool { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]) }

// bruteForce enumerates every k-subset in lexicographic order and returns
// the first lexicographic optimum of (objective, other objective).
func bruteForce(pc *geo.Matrix, k int, o core.Objective) ([]int, ref) {
	m := pc.Cols()
	var best []int
	var bestRef ref
	set := make([]int, k)
	var rec func(i, start int)
	rec = func(i, start int) {
		if i == k {
			r := evalRef(pc, nil, set)
			if best == nil || less(r.key(o), bestRef.key(o)) {
				best, bestRef = slices.Clone(set), r
			}
			return
		}
		for c := start; c < m; c++ {
			set[i] = c
			rec(i+1, c+1)
		}
	}
	rec(0, 0)
	return best, bestRef
}

// checkSolution verifies everything a Solution claims against evalRef.
func checkSolution(t *testing.T, tag string, p core.Problem, s core.Solution) ref {
	t.Helper()
	if len(s.Cores) != p.K {
		t.Fatalf("%s: %d cores, want %d", tag, len(s.Cores), p.K)
	}
	for i, c := range s.Cores {
		if c < 0 || c >= p.PlayerCore.Cols() || (i > 0 && s.Cores[i-1] >= c) {
			t.Fatalf("%s: cores %v are not distinct ascending candidates", tag, s.Cores)
		}
	}
	r := evalRef(p.PlayerCore, p.CoreCore, s.Cores)
	want := r.sum
	if p.Objective == core.KCenter {
		want = r.max
	}
	n := float64(p.PlayerCore.Rows())
	if s.Cost != want || s.Sum != r.sum || s.Max != r.max || s.Mean != r.sum/n {
		t.Fatalf("%s: reported cost %v sum %v max %v mean %v; recomputed %v %v %v %v",
			tag, s.Cost, s.Sum, s.Max, s.Mean, want, r.sum, r.max, r.sum/n)
	}
	if !slices.Equal(s.Assignment, r.assign) {
		t.Fatalf("%s: assignment %v, want %v", tag, s.Assignment, r.assign)
	}
	if math.Abs(s.Diameter-r.diam) > 1e-9*max(1, r.diam) {
		t.Fatalf("%s: diameter %v, brute force %v", tag, s.Diameter, r.diam)
	}
	return r
}

var objectives = []core.Objective{core.KMedian, core.KCenter}

func TestExactMatchesBruteForce(t *testing.T) {
	for seed := uint64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 10))
		f := family(seed % uint64(numFamilies))
		n, m := 1+rng.IntN(9), 1+rng.IntN(8)
		pc, cc := instance(t, rng, f, n, m)
		for _, o := range objectives {
			p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 1 + rng.IntN(m), Objective: o}
			tag := fmt.Sprintf("seed %d (%v, n=%d m=%d k=%d %v)", seed, f, n, m, p.K, o)
			s, err := core.Exact(p)
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
			checkSolution(t, tag, p, s)
			want, _ := bruteForce(pc, p.K, o)
			if !slices.Equal(s.Cores, want) || !s.Exact {
				t.Fatalf("%s: Exact chose %v (exact=%v), brute force %v", tag, s.Cores, s.Exact, want)
			}
		}
	}
}

// gapStats accumulates relative gaps (cost/optimum − 1).
type gapStats struct {
	n, optimal int
	sum, max   float64
	worst      string
}

func (g *gapStats) add(cost, opt float64, tag string) float64 {
	gap := 0.0
	if cost > opt {
		gap = math.Inf(1)
		if opt > 0 {
			gap = cost/opt - 1
		}
	}
	g.n++
	if gap == 0 {
		g.optimal++
	}
	g.sum += gap
	if gap > g.max {
		g.max, g.worst = gap, tag
	}
	return gap
}

func (g *gapStats) String() string {
	return fmt.Sprintf("%5d instances, optimal %5.1f%%, mean gap %.4f%%, max gap %.3f%%",
		g.n, 100*float64(g.optimal)/float64(max(g.n, 1)), 100*g.sum/float64(max(g.n, 1)), 100*g.max)
}

// TestLocalSearchGap compares LocalSearch with Exact on thousands of random
// instances and logs the gap distribution per family and objective. It
// fails if any answer is invalid, if k-median on a metric exceeds the
// Arya et al. bound of 5× the optimum, or if the mean gap regresses.
func TestLocalSearchGap(t *testing.T) {
	type cfg struct {
		name         string
		count        int
		nMax, mMax   int
		kMax         int
		opts         core.Options
		maxMeanGap   float64 // regression guard on the mean gap, per objective
		familyFilter []family
	}
	cfgs := []cfg{
		{"small/greedy-only", 4000, 12, 9, 9, core.Options{}, 0.03, nil},
		{"small/default", 4000, 12, 9, 9, core.Options{Restarts: -1}, 0.01, nil},
		{"medium/default", 300, 60, 24, 5, core.Options{Restarts: -1}, 0.01, []family{famPlane, famPlanet}},
	}
	for _, c := range cfgs {
		stats := map[string]*gapStats{}
		for seed := uint64(0); seed < uint64(c.count); seed++ {
			rng := rand.New(rand.NewPCG(seed, 20))
			f := family(seed % uint64(numFamilies))
			if c.familyFilter != nil {
				f = c.familyFilter[seed%uint64(len(c.familyFilter))]
			}
			n, m := 1+rng.IntN(c.nMax), 1+rng.IntN(c.mMax)
			pc, cc := instance(t, rng, f, n, m)
			for _, o := range objectives {
				p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 1 + rng.IntN(min(m, c.kMax)), Objective: o}
				tag := fmt.Sprintf("%s seed %d (%v, n=%d m=%d k=%d %v)", c.name, seed, f, n, m, p.K, o)
				ex, err := core.Exact(p)
				if err != nil {
					t.Fatalf("%s: %v", tag, err)
				}
				opts := c.opts
				if opts.Restarts < 0 { // the Select defaults
					opts = core.DefaultOptions(o)
				}
				ls, err := core.LocalSearch(p, rand.New(rand.NewPCG(seed, 21)), opts)
				if err != nil {
					t.Fatalf("%s: %v", tag, err)
				}
				checkSolution(t, tag, p, ls)
				if ls.Exact {
					t.Fatalf("%s: LocalSearch claims exactness", tag)
				}
				if ls.Cost < ex.Cost {
					t.Fatalf("%s: local search %v beats the exact optimum %v", tag, ls.Cost, ex.Cost)
				}
				key := fmt.Sprintf("%-6s %-7v", o, f)
				if stats[key] == nil {
					stats[key] = &gapStats{}
				}
				gap := stats[key].add(ls.Cost, ex.Cost, tag)
				if o == core.KMedian && (f == famPlane || f == famPlanet) && gap > 4 {
					t.Fatalf("%s: gap %v exceeds the 5-approximation bound", tag, gap)
				}
			}
		}
		keys := make([]string, 0, len(stats))
		for k := range stats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		all := map[core.Objective]*gapStats{core.KMedian: {}, core.KCenter: {}}
		for _, k := range keys {
			s := stats[k]
			t.Logf("%-18s %s %s", c.name, k, s)
			o := core.KMedian
			if k[:6] == "center" {
				o = core.KCenter
			}
			all[o].n += s.n
			all[o].optimal += s.optimal
			all[o].sum += s.sum
			if s.max > all[o].max {
				all[o].max, all[o].worst = s.max, s.worst
			}
		}
		for _, o := range objectives {
			s := all[o]
			t.Logf("%-18s %-6s all     %s (worst: %s)", c.name, o, s, s.worst)
			if s.sum/float64(s.n) > c.maxMeanGap && !math.IsInf(s.sum, 1) {
				t.Errorf("%s %v: mean gap %.4f%% above the %.2f%% guard", c.name, o, 100*s.sum/float64(s.n), 100*c.maxMeanGap)
			}
		}
	}
}

func TestLowerBoundIsBelowOptimum(t *testing.T) {
	tight := map[core.Objective]*gapStats{core.KMedian: {}, core.KCenter: {}}
	for seed := uint64(0); seed < 1500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 30))
		f := family(seed % uint64(numFamilies))
		n, m := 1+rng.IntN(30), 1+rng.IntN(12)
		pc, cc := instance(t, rng, f, n, m)
		for _, o := range objectives {
			p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 1 + rng.IntN(min(m, 4)), Objective: o}
			ex, err := core.Exact(p)
			if err != nil {
				t.Fatal(err)
			}
			lb, err := core.LowerBound(p)
			if err != nil {
				t.Fatal(err)
			}
			if lb > ex.Cost || lb < 0 {
				t.Fatalf("seed %d (%v %v k=%d): lower bound %v, optimum %v", seed, f, o, p.K, lb, ex.Cost)
			}
			if lb > 0 || ex.Cost == 0 {
				tight[o].add(ex.Cost, lb, "") // how far the optimum is above the bound
			}
		}
	}
	for _, o := range objectives {
		t.Logf("optimum above LowerBound, %-6v: %s", o, tight[o])
	}
}

func TestDiameterAndEccentricity(t *testing.T) {
	pc, err := geo.NewMatrix([]string{"a", "b", "c"}, []string{"x", "y"}, [][]float64{
		{10, 50},
		{30, 20},
		{25, 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	// One core: the two largest latencies to it.
	if d, err := core.Diameter(pc, nil, []int{0}); err != nil || d != 55 {
		t.Fatalf("one core: diameter %v %v, want 30+25", d, err)
	}
	if e, err := core.Eccentricity(pc, []int{0}); err != nil || e != 30 {
		t.Fatalf("one core: eccentricity %v %v, want 30", e, err)
	}
	cc, err := geo.NewSquare([]string{"x", "y"}, [][]float64{{0, 100}, {100, 0}})
	if err != nil {
		t.Fatal(err)
	}
	// Two cores: a→x (10), b→y (20), c→y (5); a to b goes 10+100+20.
	if d, err := core.Diameter(pc, cc, []int{1, 0}); err != nil || d != 130 {
		t.Fatalf("two cores: diameter %v %v, want 130", d, err)
	}
	if d, err := core.Diameter(pc, nil, []int{0, 1}); err != nil || d != 30 {
		t.Fatalf("two cores, no hop: diameter %v %v, want 30", d, err)
	}
	one, _ := geo.NewMatrix([]string{"solo"}, []string{"x"}, [][]float64{{42}})
	if d, err := core.Diameter(one, nil, []int{0}); err != nil || d != 0 {
		t.Fatalf("one player: diameter %v %v, want 0", d, err)
	}
	for _, bad := range [][]int{nil, {0, 0}, {2}, {-1}} {
		if _, err := core.Eccentricity(pc, bad); !errors.Is(err, core.ErrCores) {
			t.Errorf("cores %v: err %v, want ErrCores", bad, err)
		}
	}
}

func TestValidation(t *testing.T) {
	pc, _ := geo.NewMatrix([]string{"a", "b"}, []string{"x", "y", "z"}, [][]float64{{1, 2, 3}, {4, 5, 6}})
	empty, _ := geo.NewMatrix(nil, []string{"x"}, nil)
	noCand, _ := geo.NewMatrix([]string{"a"}, nil, [][]float64{{}})
	wrongCC, _ := geo.NewSquare([]string{"x", "y"}, [][]float64{{0, 1}, {1, 0}})
	renamedCC, _ := geo.NewSquare([]string{"x", "y", "w"}, [][]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}})
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		name string
		p    core.Problem
		want error
	}{
		{"nil matrix", core.Problem{K: 1}, core.ErrNoPlayers},
		{"no players", core.Problem{PlayerCore: empty, K: 1}, core.ErrNoPlayers},
		{"no candidates", core.Problem{PlayerCore: noCand, K: 1}, core.ErrNoCandidates},
		{"k = 0", core.Problem{PlayerCore: pc, K: 0}, core.ErrK},
		{"k > m", core.Problem{PlayerCore: pc, K: 4}, core.ErrK},
		{"objective", core.Problem{PlayerCore: pc, K: 1, Objective: 7}, core.ErrObjective},
		{"core matrix size", core.Problem{PlayerCore: pc, CoreCore: wrongCC, K: 1}, core.ErrShape},
		{"core matrix names", core.Problem{PlayerCore: pc, CoreCore: renamedCC, K: 1}, core.ErrShape},
	}
	for _, c := range cases {
		if err := c.p.Validate(); !errors.Is(err, c.want) {
			t.Errorf("%s: Validate = %v, want %v", c.name, err, c.want)
		}
		if _, err := core.Exact(c.p); !errors.Is(err, c.want) {
			t.Errorf("%s: Exact = %v, want %v", c.name, err, c.want)
		}
		if _, err := core.LocalSearch(c.p, rng, core.Options{}); !errors.Is(err, c.want) {
			t.Errorf("%s: LocalSearch = %v, want %v", c.name, err, c.want)
		}
		if _, err := core.Select(c.p, rng); !errors.Is(err, c.want) {
			t.Errorf("%s: Select = %v, want %v", c.name, err, c.want)
		}
		if _, err := core.LowerBound(c.p); !errors.Is(err, c.want) {
			t.Errorf("%s: LowerBound = %v, want %v", c.name, err, c.want)
		}
	}
	ok := core.Problem{PlayerCore: pc, K: 2}
	if _, err := core.LocalSearch(ok, nil, core.Options{}); !errors.Is(err, core.ErrNilRand) {
		t.Errorf("nil rng: %v", err)
	}
	if _, err := core.Select(ok, nil); !errors.Is(err, core.ErrNilRand) {
		t.Errorf("nil rng: %v", err)
	}
	for _, s := range []string{"median", "K-Median", "center", "kcenter"} {
		if _, err := core.ParseObjective(s); err != nil {
			t.Errorf("ParseObjective(%q): %v", s, err)
		}
	}
	if _, err := core.ParseObjective("mean"); !errors.Is(err, core.ErrObjective) {
		t.Errorf("ParseObjective(mean): %v", err)
	}
}

func TestExactTooLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	pc, _ := instance(t, rng, famPlane, 3, 200)
	_, err := core.Exact(core.Problem{PlayerCore: pc, K: 5})
	var tl *core.TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, core.ErrTooLarge) || tl.Subsets != core.Subsets(200, 5) {
		t.Fatalf("err = %v, want a TooLargeError for C(200,5)", err)
	}
	if got := core.Subsets(490, 2); got != 119805 {
		t.Fatalf("Subsets(490,2) = %v", got)
	}
	if core.Subsets(3, 4) != 0 || core.Subsets(5, 0) != 1 {
		t.Fatal("Subsets edge cases")
	}
}

func TestDeterministicForSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	pc, cc := instance(t, rng, famPlanet, 300, 120)
	p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 8}
	a, err := core.LocalSearch(p, rand.New(rand.NewPCG(7, 7)), core.DefaultOptions(core.KMedian))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := core.LocalSearch(p, rand.New(rand.NewPCG(7, 7)), core.DefaultOptions(core.KMedian))
	if !slices.Equal(a.Cores, b.Cores) || a.Cost != b.Cost {
		t.Fatalf("same seed, different answers: %v vs %v", a.Cores, b.Cores)
	}
	checkSolution(t, "planet 300×120 k=8", p, a)
}

func TestSelectChoosesExactWhenCheap(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	pc, cc := instance(t, rng, famPlanet, 100, 100)
	for _, c := range []struct {
		k     int
		exact bool
	}{{1, true}, {2, true}, {3, true}, {4, false}, {100, true}} {
		s, err := core.Select(core.Problem{PlayerCore: pc, CoreCore: cc, K: c.k}, rng)
		if err != nil || s.Exact != c.exact {
			t.Errorf("k=%d: exact=%v err=%v, want exact=%v", c.k, s.Exact, err, c.exact)
		}
	}
}

// TestMoreCoresNeverHurt checks monotonicity: the exact optimum does not
// grow with k, and adding a core to a set never raises sum or max.
func TestMoreCoresNeverHurt(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 40))
		f := family(seed % uint64(numFamilies))
		n, m := 1+rng.IntN(15), 2+rng.IntN(7)
		pc, cc := instance(t, rng, f, n, m)
		for _, o := range objectives {
			prev := math.Inf(1)
			for k := 1; k <= m; k++ {
				s, err := core.Exact(core.Problem{PlayerCore: pc, CoreCore: cc, K: k, Objective: o})
				if err != nil {
					t.Fatal(err)
				}
				if s.Cost > prev {
					t.Fatalf("seed %d %v: optimum rises from %v to %v at k=%d", seed, o, prev, s.Cost, k)
				}
				prev = s.Cost
				if k < m {
					extra := -1
					for c := range m {
						if !slices.Contains(s.Cores, c) {
							extra = c
							break
						}
					}
					more, err := core.Evaluate(core.Problem{PlayerCore: pc}, append(slices.Clone(s.Cores), extra))
					if err != nil || more.Sum > s.Sum || more.Max > s.Max {
						t.Fatalf("seed %d: adding core %d to %v raised the cost (%v, %v → %v, %v)", seed, extra, s.Cores, s.Sum, s.Max, more.Sum, more.Max)
					}
				}
			}
		}
	}
}

func benchInstance(b *testing.B, n, m int) (*geo.Matrix, *geo.Matrix) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(m)))
	return instance(b, rng, famPlanet, n, m)
}

// BenchmarkLocalSearch runs LocalSearch with DefaultOptions (greedy start
// plus 2 restarts for k-median, 10 for k-center) on PlanetLab-like
// instances.
func BenchmarkLocalSearch(b *testing.B) {
	for _, o := range objectives {
		for _, n := range []int{100, 1000} {
			for _, m := range []int{100, 490} {
				for _, k := range []int{1, 5, 25} {
					b.Run(fmt.Sprintf("%v/n=%d/m=%d/k=%d", o, n, m, k), func(b *testing.B) {
						pc, cc := benchInstance(b, n, m)
						p := core.Problem{PlayerCore: pc, CoreCore: cc, K: k, Objective: o}
						rng := rand.New(rand.NewPCG(1, 2))
						b.ReportAllocs()
						for b.Loop() {
							if _, err := core.LocalSearch(p, rng, core.DefaultOptions(o)); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkExact runs Exact where it is feasible: k = 1 (a scan) and k = 2,
// 3 (branch and bound over C(m,k) subsets).
func BenchmarkExact(b *testing.B) {
	for _, o := range objectives {
		for _, n := range []int{100, 1000} {
			for _, m := range []int{100, 490} {
				for _, k := range []int{1, 2, 3} {
					if core.Subsets(m, k) > core.MaxExactSubsets {
						continue
					}
					b.Run(fmt.Sprintf("%v/n=%d/m=%d/k=%d", o, n, m, k), func(b *testing.B) {
						pc, cc := benchInstance(b, n, m)
						p := core.Problem{PlayerCore: pc, CoreCore: cc, K: k, Objective: o}
						b.ReportAllocs()
						for b.Loop() {
							if _, err := core.Exact(p); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkLowerBound measures the certificate the CLI prints with a
// heuristic answer.
func BenchmarkLowerBound(b *testing.B) {
	for _, o := range objectives {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%v/n=%d/m=490/k=5", o, n), func(b *testing.B) {
				pc, cc := benchInstance(b, n, 490)
				p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 5, Objective: o}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := core.LowerBound(p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestLocalSearchGapPlanetLab compares LocalSearch (DefaultOptions) with
// Exact on groups drawn from the real PlanetLab matrix: 100 random players,
// 40 random candidate servers, k = 2..4, and logs the gap distribution.
func TestLocalSearchGapPlanetLab(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive search on PlanetLab groups takes a few seconds")
	}
	pl, err := geo.PlanetLab(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objectives {
		var stats gapStats
		for seed := uint64(0); seed < 150; seed++ {
			rng := rand.New(rand.NewPCG(seed, 50))
			perm := rng.Perm(pl.Rows())
			players, cands := perm[:100], perm[100:140]
			pc, err := pl.Sub(players, cands)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := pl.SubSquare(cands)
			if err != nil {
				t.Fatal(err)
			}
			p := core.Problem{PlayerCore: pc, CoreCore: cc, K: 2 + int(seed%3), Objective: o}
			tag := fmt.Sprintf("planetlab seed %d k=%d %v", seed, p.K, o)
			ex, err := core.Exact(p)
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
			ls, err := core.LocalSearch(p, rng, core.DefaultOptions(o))
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
			checkSolution(t, tag, p, ls)
			checkSolution(t, tag, p, ex)
			if ls.Cost < ex.Cost {
				t.Fatalf("%s: local search %v beats the exact optimum %v", tag, ls.Cost, ex.Cost)
			}
			stats.add(ls.Cost, ex.Cost, tag)
		}
		t.Logf("planetlab 100 players × 40 candidates, k=2..4, %-6v: %s (worst: %s)", o, &stats, stats.worst)
		if stats.sum/float64(stats.n) > 0.01 {
			t.Errorf("%v: mean gap above 1%%", o)
		}
	}
}
