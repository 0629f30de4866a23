package mcf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteTransport enumerates every assignment of n players to m mirrors
// (m^n of them) and returns the minimum total delay within capacities, or
// +Inf when none fits.
func bruteTransport(delays [][]float64, capacity []int) float64 {
	n, m := len(delays), len(capacity)
	best := math.Inf(1)
	load := make([]int, m)
	var rec func(p int, sum float64)
	rec = func(p int, sum float64) {
		if p == n {
			best = min(best, sum)
			return
		}
		for j := range m {
			if load[j] < capacity[j] {
				load[j]++
				rec(p+1, sum+delays[p][j])
				load[j]--
			}
		}
	}
	rec(0, 0)
	return best
}

// randomTransport draws a small instance. kind selects the cost shape:
// 0 float, 1 small integers (many ties), 2 all zero, 3 one value.
func randomTransport(rng *rand.Rand, kind int) ([][]float64, []int) {
	n := rng.IntN(7) // 0..6 players
	m := 1 + rng.IntN(4)
	delays := make([][]float64, n)
	for p := range delays {
		delays[p] = make([]float64, m)
		for j := range delays[p] {
			switch kind {
			case 0:
				delays[p][j] = rng.Float64() * 300
			case 1:
				delays[p][j] = float64(rng.IntN(4))
			case 2:
				delays[p][j] = 0
			case 3:
				delays[p][j] = 7.25
			}
		}
	}
	capacity := make([]int, m)
	for j := range capacity {
		switch rng.IntN(3) {
		case 0:
			capacity[j] = 1
		default:
			capacity[j] = rng.IntN(n + 1)
		}
	}
	return delays, capacity
}

func TestTransportMatchesExhaustive(t *testing.T) {
	const instances = 5000
	for seed := uint64(0); seed < instances; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		kind := int(seed % 4)
		delays, capacity := randomTransport(rng, kind)
		want := bruteTransport(delays, capacity)
		assign, total, err := Transport(delays, capacity)
		if math.IsInf(want, 1) {
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("seed %d: infeasible instance %v cap %v: err = %v, want ErrInfeasible", seed, delays, capacity, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: %v (delays %v cap %v)", seed, err, delays, capacity)
		}
		checkAssignment(t, seed, delays, capacity, assign, total)
		if math.Abs(total-want) > 1e-9*max(1, want) {
			t.Fatalf("seed %d: total %v, exhaustive optimum %v (delays %v cap %v assign %v)", seed, total, want, delays, capacity, assign)
		}
	}
}

func checkAssignment(t *testing.T, seed uint64, delays [][]float64, capacity []int, assign []int, total float64) {
	t.Helper()
	if len(assign) != len(delays) {
		t.Fatalf("seed %d: %d assignments for %d players", seed, len(assign), len(delays))
	}
	load := make([]int, len(capacity))
	sum := 0.0
	for p, j := range assign {
		if j < 0 || j >= len(capacity) {
			t.Fatalf("seed %d: player %d assigned to mirror %d", seed, p, j)
		}
		load[j]++
		sum += delays[p][j]
	}
	for j := range load {
		if load[j] > capacity[j] {
			t.Fatalf("seed %d: mirror %d holds %d > capacity %d", seed, j, load[j], capacity[j])
		}
	}
	if sum != total {
		t.Fatalf("seed %d: reported total %v, recomputed %v", seed, total, sum)
	}
}

// plainTransport solves the textbook network source → player → mirror →
// sink with Solve from zero flow: a cross-check of Transport's warm start on
// instances too big to enumerate.
func plainTransport(t *testing.T, delays [][]float64, capacity []int) float64 {
	t.Helper()
	n, m := len(delays), len(capacity)
	g := NewGraph(n + m + 2)
	for p := range n {
		g.AddEdge(0, 2+p, 1, 0)
		for j := range m {
			g.AddEdge(2+p, 2+n+j, 1, delays[p][j])
		}
	}
	for j, c := range capacity {
		g.AddEdge(2+n+j, 1, int64(c), 0)
	}
	r, err := g.Solve(0, 1, int64(n))
	if err != nil {
		t.Fatal(err)
	}
	return r.Cost
}

func TestTransportMatchesPlainNetwork(t *testing.T) {
	binding := 0 // instances where capacity forces someone off their nearest mirror
	for seed := uint64(0); seed < 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 4))
		n, m := 1+rng.IntN(80), 1+rng.IntN(6)
		d := randomDelays(rng, n, m)
		if seed%2 == 0 {
			d = skewedDelays(rng, n, m)
		}
		if seed%5 == 0 { // integer delays: ties
			for _, row := range d {
				for j := range row {
					row[j] = math.Floor(row[j] / 40)
				}
			}
		}
		capacity := make([]int, m)
		left := n + rng.IntN(3)
		for j := range capacity {
			capacity[j] = left / (m - j)
			if j < m-1 && capacity[j] > 0 {
				capacity[j] = rng.IntN(2 * capacity[j])
			}
			left -= min(capacity[j], left)
		}
		if sum(capacity) < n {
			capacity[m-1] += n - sum(capacity)
		}
		assign, total, err := Transport(d, capacity)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkAssignment(t, seed, d, capacity, assign, total)
		if want := plainTransport(t, d, capacity); math.Abs(total-want) > 1e-9*max(1, want) {
			t.Fatalf("seed %d (n=%d m=%d cap %v): Transport %v, plain network %v", seed, n, m, capacity, total, want)
		}
		free := 0.0
		for _, row := range d {
			free += slices.Min(row)
		}
		if total > free {
			binding++
		}
	}
	if binding < 200 {
		t.Fatalf("only %d of 400 instances bind capacity: generator too weak", binding)
	}
	t.Logf("%d of 400 instances bind capacity", binding)
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestTransportSingleMirrorAndCapacityOne(t *testing.T) {
	// One mirror: everyone goes there.
	d := [][]float64{{3}, {1}, {2}}
	assign, total, err := Transport(d, []int{3})
	if err != nil || total != 6 || fmt.Sprint(assign) != "[0 0 0]" {
		t.Fatalf("single mirror: %v %v %v", assign, total, err)
	}
	// Capacity 1 everywhere: a permutation (the assignment problem).
	d = [][]float64{
		{4, 1, 3},
		{2, 0, 5},
		{3, 2, 2},
	}
	assign, total, err = Transport(d, []int{1, 1, 1})
	if err != nil || total != 5 {
		t.Fatalf("assignment problem: %v %v %v, want total 5", assign, total, err)
	}
	// Nearest mirror is full: the player who loses least moves.
	d = [][]float64{{10, 11}, {10, 30}}
	assign, total, err = Transport(d, []int{1, 5})
	if err != nil || total != 21 || fmt.Sprint(assign) != "[1 0]" {
		t.Fatalf("overflow: %v %v %v, want [1 0] 21", assign, total, err)
	}
}

func TestTransportErrors(t *testing.T) {
	cases := []struct {
		name   string
		delays [][]float64
		cap    []int
		want   error
	}{
		{"ragged", [][]float64{{1, 2}, {1}}, []int{1, 1}, ErrShape},
		{"NaN", [][]float64{{1, math.NaN()}}, []int{1, 1}, ErrCost},
		{"negative delay", [][]float64{{-1, 2}}, []int{1, 1}, ErrCost},
		{"infinite delay", [][]float64{{math.Inf(1), 2}}, []int{1, 1}, ErrCost},
		{"negative capacity", [][]float64{{1, 2}}, []int{-1, 2}, ErrCapacity},
		{"too little capacity", [][]float64{{1, 2}, {1, 2}, {3, 4}}, []int{1, 1}, ErrInfeasible},
		{"no mirrors", [][]float64{{}}, []int{}, ErrInfeasible},
	}
	for _, c := range cases {
		assign, total, err := Transport(c.delays, c.cap)
		if !errors.Is(err, c.want) || assign != nil || total != 0 {
			t.Errorf("%s: got (%v, %v, %v), want error %v", c.name, assign, total, err, c.want)
		}
	}
	var ie *InfeasibleError
	_, _, err := Transport([][]float64{{1}, {1}, {1}}, []int{2})
	if !errors.As(err, &ie) || ie.Want != 3 || ie.Max != 2 {
		t.Errorf("InfeasibleError = %+v (%v), want Want 3 Max 2", ie, err)
	}
	if a, tot, err := Transport(nil, []int{1}); err != nil || len(a) != 0 || tot != 0 {
		t.Errorf("no players: %v %v %v", a, tot, err)
	}
}

func TestAddEdgeValidation(t *testing.T) {
	g := NewGraph(3)
	bad := []struct {
		from, to int
		cap      int64
		cost     float64
		want     error
	}{
		{-1, 1, 1, 0, ErrNode},
		{0, 3, 1, 0, ErrNode},
		{0, 1, -1, 0, ErrCapacity},
		{0, 1, 1, math.NaN(), ErrCost},
		{0, 1, 1, math.Inf(-1), ErrCost},
	}
	for _, b := range bad {
		if id, err := g.AddEdge(b.from, b.to, b.cap, b.cost); !errors.Is(err, b.want) || id != -1 {
			t.Errorf("AddEdge(%d,%d,%d,%g) = %d, %v; want %v", b.from, b.to, b.cap, b.cost, id, err, b.want)
		}
	}
	if g.Edges() != 0 {
		t.Fatalf("rejected edges changed the graph: %d edges", g.Edges())
	}
	if id, err := g.AddEdge(0, 1, 0, -2.5); err != nil || id != 0 {
		t.Fatalf("valid edge: %d %v", id, err)
	}
	if _, err := NewGraph(-4).AddEdge(0, 0, 1, 1); !errors.Is(err, ErrNode) {
		t.Fatalf("negative n: %v", err)
	}
	for _, c := range []struct {
		s, t int
		want int64
		err  error
	}{{0, 0, 1, ErrNode}, {0, 5, 1, ErrNode}, {0, 1, -1, ErrCapacity}} {
		if _, err := g.Solve(c.s, c.t, c.want); !errors.Is(err, c.err) {
			t.Errorf("Solve(%d,%d,%d) err = %v, want %v", c.s, c.t, c.want, err, c.err)
		}
	}
}

func TestNegativeCycle(t *testing.T) {
	g := NewGraph(4)
	g.AddEdge(0, 1, 5, 1)
	g.AddEdge(2, 3, 1, -1) // cycle 2→3→2 of cost -1, not on any s-t path
	g.AddEdge(3, 2, 1, 0)
	if _, err := g.Solve(0, 1, 1); !errors.Is(err, ErrNegativeCycle) {
		t.Fatalf("err = %v, want ErrNegativeCycle", err)
	}
	// The same cycle with zero capacity is harmless.
	h := NewGraph(4)
	h.AddEdge(0, 1, 5, 1)
	h.AddEdge(2, 3, 0, -1)
	h.AddEdge(3, 2, 1, 0)
	if r, err := h.Solve(0, 1, 2); err != nil || r.Cost != 2 || r.Flow != 2 {
		t.Fatalf("zero-capacity cycle: %+v %v", r, err)
	}
}

func TestNegativeCostsUseBellmanFord(t *testing.T) {
	// The cheap route needs the negative edge.
	g := NewGraph(4)
	g.AddEdge(0, 1, 1, 4)
	g.AddEdge(1, 3, 1, -3)
	g.AddEdge(0, 2, 2, 2)
	g.AddEdge(2, 3, 2, 0)
	r, err := g.Solve(0, 3, 2)
	if err != nil || r.Cost != 3 || fmt.Sprint(r.EdgeFlow) != "[1 1 1 1]" {
		t.Fatalf("got %+v %v, want cost 3 flows [1 1 1 1]", r, err)
	}
}

func TestInfeasibleReturnsMaxFlow(t *testing.T) {
	g := NewGraph(3)
	g.AddEdge(0, 1, 2, 1)
	g.AddEdge(1, 2, 3, 1)
	r, err := g.Solve(0, 2, math.MaxInt64)
	var ie *InfeasibleError
	if !errors.As(err, &ie) || ie.Max != 2 || r.Flow != 2 || r.Cost != 4 {
		t.Fatalf("got %+v %v", r, err)
	}
}

// randomGraph draws a small random network with parallel edges and
// self-loops. With allowNeg, costs are base + φ(u) − φ(v) for a random
// potential φ and base ≥ 0: edges can be negative but every cycle costs
// Σ base ≥ 0, so Solve must succeed. Integer costs stay integers.
func randomGraph(rng *rand.Rand, intCosts, allowNeg bool) *Graph {
	n := 2 + rng.IntN(7)
	g := NewGraph(n)
	phi := make([]float64, n)
	if allowNeg {
		for v := range phi {
			phi[v] = float64(rng.IntN(11) - 5)
			if !intCosts {
				phi[v] = rng.Float64()*10 - 5
			}
		}
	}
	edges := rng.IntN(3 * n)
	for range edges {
		u, v := rng.IntN(n), rng.IntN(n)
		base := rng.Float64() * 20
		if intCosts {
			base = float64(rng.IntN(10))
		}
		if _, err := g.AddEdge(u, v, int64(rng.IntN(5)), base+phi[u]-phi[v]); err != nil {
			panic(err)
		}
	}
	return g
}

// maxFlow is an independent Edmonds–Karp reference.
func maxFlow(g *Graph, s, t int) int64 {
	n := g.n
	capm := make([][]int64, n)
	for i := range capm {
		capm[i] = make([]int64, n)
	}
	for e := range g.to {
		if g.from[e] != g.to[e] {
			capm[g.from[e]][g.to[e]] += g.cap[e]
		}
	}
	var total int64
	for {
		prev := make([]int, n)
		for i := range prev {
			prev[i] = -1
		}
		prev[s] = s
		q := []int{s}
		for len(q) > 0 && prev[t] < 0 {
			u := q[0]
			q = q[1:]
			for v := range n {
				if prev[v] < 0 && capm[u][v] > 0 {
					prev[v] = u
					q = append(q, v)
				}
			}
		}
		if prev[t] < 0 {
			return total
		}
		f := int64(math.MaxInt64)
		for v := t; v != s; v = prev[v] {
			f = min(f, capm[prev[v]][v])
		}
		for v := t; v != s; v = prev[v] {
			capm[prev[v]][v] -= f
			capm[v][prev[v]] += f
		}
		total += f
	}
}

// residualHasNegativeCycle checks the optimality condition: a flow is of
// minimum cost for its value iff its residual network has no negative cycle.
func residualHasNegativeCycle(g *Graph, flow []int64, tol float64) bool {
	type arc struct {
		u, v int
		c    float64
	}
	var arcs []arc
	for e := range g.to {
		u, v := int(g.from[e]), int(g.to[e])
		if flow[e] < g.cap[e] {
			arcs = append(arcs, arc{u, v, g.cost[e]})
		}
		if flow[e] > 0 {
			arcs = append(arcs, arc{v, u, -g.cost[e]})
		}
	}
	dist := make([]float64, g.n)
	for range g.n + 1 {
		changed := false
		for _, a := range arcs {
			if dist[a.u]+a.c < dist[a.v]-tol {
				dist[a.v] = dist[a.u] + a.c
				changed = true
			}
		}
		if !changed {
			return false
		}
	}
	return true
}

func TestSolveInvariantsOnRandomGraphs(t *testing.T) {
	const instances = 4000
	for seed := uint64(0); seed < instances; seed++ {
		rng := rand.New(rand.NewPCG(seed, 2))
		intCosts := seed%2 == 0
		g := randomGraph(rng, intCosts, seed%3 != 0)
		s, tt := rng.IntN(g.n), rng.IntN(g.n)
		if s == tt {
			tt = (s + 1) % g.n
		}
		mf := maxFlow(g, s, tt)
		want := int64(rng.IntN(8))
		res, err := g.Solve(s, tt, want)
		switch {
		case want <= mf && err != nil:
			t.Fatalf("seed %d: want %d ≤ max flow %d but err %v", seed, want, mf, err)
		case want > mf && !errors.Is(err, ErrInfeasible):
			t.Fatalf("seed %d: want %d > max flow %d but err %v", seed, want, mf, err)
		}
		if res.Flow != min(want, mf) {
			t.Fatalf("seed %d: flow %d, want min(%d, %d)", seed, res.Flow, want, mf)
		}
		// Capacity and conservation.
		bal := make([]int64, g.n)
		cost := 0.0
		for e, f := range res.EdgeFlow {
			if f < 0 || f > g.cap[e] {
				t.Fatalf("seed %d: edge %d flow %d outside [0,%d]", seed, e, f, g.cap[e])
			}
			bal[g.from[e]] -= f
			bal[g.to[e]] += f
			cost += float64(f) * g.cost[e]
		}
		for v, b := range bal {
			wantBal := int64(0)
			switch v {
			case s:
				wantBal = -res.Flow
			case tt:
				wantBal = res.Flow
			}
			if b != wantBal {
				t.Fatalf("seed %d: node %d imbalance %d, want %d", seed, v, b, wantBal)
			}
		}
		if math.Abs(cost-res.Cost) > 1e-9*max(1, math.Abs(cost)) {
			t.Fatalf("seed %d: reported cost %v, recomputed %v", seed, res.Cost, cost)
		}
		if intCosts && cost != math.Round(cost) {
			t.Fatalf("seed %d: integer costs gave cost %v", seed, cost)
		}
		if residualHasNegativeCycle(g, res.EdgeFlow, 1e-7) {
			t.Fatalf("seed %d: residual network has a negative cycle: flow is not of minimum cost", seed)
		}
	}
}

func TestNegativeCycleDetectionOnRandomGraphs(t *testing.T) {
	found := 0
	for seed := uint64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 2 + rng.IntN(6)
		g := NewGraph(n)
		for range rng.IntN(3 * n) {
			g.AddEdge(rng.IntN(n), rng.IntN(n), int64(rng.IntN(3)), float64(rng.IntN(13)-3))
		}
		neg := residualHasNegativeCycle(g, make([]int64, g.Edges()), 0)
		_, err := g.Solve(0, 1, 1)
		if neg != errors.Is(err, ErrNegativeCycle) {
			t.Fatalf("seed %d: reference says negative cycle = %v, Solve err = %v", seed, neg, err)
		}
		if neg {
			found++
		}
	}
	if found < 100 {
		t.Fatalf("only %d instances had a negative cycle: generator too weak", found)
	}
}

func TestSolveDoesNotModifyGraph(t *testing.T) {
	g := NewGraph(3)
	g.AddEdge(0, 1, 2, 1)
	g.AddEdge(1, 2, 2, 1)
	for range 3 {
		if r, err := g.Solve(0, 2, 2); err != nil || r.Cost != 4 {
			t.Fatalf("repeat solve: %+v %v", r, err)
		}
	}
}

// skewedDelays places mirrors on a 200×200 ms square and players so that
// half of them crowd around mirror 0; delay is 5 ms plus the distance. With
// capacities only 5% above the player count, mirror 0 overflows and a large
// share of the players must be moved.
func skewedDelays(rng *rand.Rand, n, m int) [][]float64 {
	mx, my := make([]float64, m), make([]float64, m)
	for j := range m {
		mx[j], my[j] = rng.Float64()*200, rng.Float64()*200
	}
	d := make([][]float64, n)
	for p := range d {
		x, y := rng.Float64()*200, rng.Float64()*200
		if p%2 == 0 {
			x, y = mx[0]+rng.NormFloat64()*10, my[0]+rng.NormFloat64()*10
		}
		d[p] = make([]float64, m)
		for j := range d[p] {
			d[p][j] = 5 + math.Hypot(x-mx[j], y-my[j])
		}
	}
	return d
}

// BenchmarkTransport measures Transport on n players × m mirrors in two
// regimes: "skewed" (skewedDelays, capacities summing to 1.05·n, so mirror 0
// overflows and many players must move: the worst case for the solver) and
// "uniform" (uniform random delays, 20% spare capacity: few moves). The
// "moved" metric is the fraction of players not at their nearest mirror.
func BenchmarkTransport(b *testing.B) {
	for _, load := range []string{"skewed", "uniform"} {
		for _, m := range []int{5, 20} {
			for _, n := range []int{100, 1000, 10000} {
				b.Run(fmt.Sprintf("load=%s/n=%d/m=%d", load, n, m), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(uint64(n), uint64(m)))
					d, spare := skewedDelays(rng, n, m), 21.0/20
					if load == "uniform" {
						d, spare = randomDelays(rng, n, m), 6.0/5
					}
					capacity := make([]int, m)
					for j := range capacity {
						capacity[j] = int(math.Ceil(float64(n) * spare / float64(m)))
					}
					var assign []int
					var err error
					b.ReportAllocs()
					for b.Loop() {
						if assign, _, err = Transport(d, capacity); err != nil {
							b.Fatal(err)
						}
					}
					moved := 0
					for p, j := range assign {
						if d[p][j] > slices.Min(d[p]) {
							moved++
						}
					}
					b.ReportMetric(float64(moved)/float64(n), "moved")
				})
			}
		}
	}
}

func randomDelays(rng *rand.Rand, n, m int) [][]float64 {
	d := make([][]float64, n)
	for p := range d {
		d[p] = make([]float64, m)
		for j := range d[p] {
			d[p][j] = 5 + rng.Float64()*295
		}
	}
	return d
}
