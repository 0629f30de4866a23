package topo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randomGraph returns a G(n, p) graph with random delays: integers in
// [0, 20] when integral (so sums are exact), otherwise floats in [0, 50)
// with some zero-delay links. It may be disconnected.
func randomGraph(r *rand.Rand, n int, p float64, integral bool) *Graph {
	g := newGraph(n)
	for u := range n {
		for v := u + 1; v < n; v++ {
			if r.Float64() >= p {
				continue
			}
			d := float64(r.IntN(21))
			if !integral {
				d = r.Float64() * 50
				if r.IntN(10) == 0 {
					d = 0
				}
			}
			g.addEdge(u, v, d)
		}
	}
	return g
}

// floydWarshall is the O(n³) reference.
func floydWarshall(g *Graph) [][]float64 {
	n := g.N()
	d := make([][]float64, n)
	for i := range d {
		d[i] = make([]float64, n)
		for j := range d[i] {
			d[i][j] = math.Inf(1)
		}
		d[i][i] = 0
	}
	for _, e := range g.Edges() {
		d[e.U][e.V] = min(d[e.U][e.V], e.Delay)
		d[e.V][e.U] = min(d[e.V][e.U], e.Delay)
	}
	for k := range n {
		for i := range n {
			for j := range n {
				if s := d[i][k] + d[k][j]; s < d[i][j] {
					d[i][j] = s
				}
			}
		}
	}
	return d
}

func sameDelay(a, b float64, exact bool) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return a == b
	}
	if exact {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a))
}

func TestDijkstraMatchesFloydWarshall(t *testing.T) {
	const cases = 400
	for k := range cases {
		seed := uint64(1000 + k)
		r := rng(seed)
		n := 1 + r.IntN(40)
		p := []float64{0.03, 0.08, 0.2, 0.6}[r.IntN(4)]
		integral := k%2 == 0
		g := randomGraph(r, n, p, integral)
		want := floydWarshall(g)
		srcs := r.Perm(n)
		many := ShortestFromMany(g, srcs)
		for i, src := range srcs {
			got := ShortestFrom(g, src)
			for v := range n {
				if !sameDelay(got[v], want[src][v], integral) {
					t.Fatalf("seed %d (n=%d p=%g integral=%v): dist(%d,%d) = %v, Floyd–Warshall %v", seed, n, p, integral, src, v, got[v], want[src][v])
				}
				if math.Float64bits(many[i][v]) != math.Float64bits(got[v]) {
					t.Fatalf("seed %d: ShortestFromMany[%d][%d] = %v, ShortestFrom = %v", seed, i, v, many[i][v], got[v])
				}
			}
		}
	}
}

func TestDijkstraOnGeneratedTopologies(t *testing.T) {
	for seed := range uint64(5) {
		c := DefaultHierConfig()
		c.AS.N, c.Router.N = 5, 20
		g, err := Hierarchical(c, rng(seed))
		if err != nil {
			t.Fatal(err)
		}
		want := floydWarshall(g)
		for src := range g.N() {
			got := ShortestFrom(g, src)
			for v := range got {
				if !sameDelay(got[v], want[src][v], false) {
					t.Fatalf("seed %d: dist(%d,%d) = %v, Floyd–Warshall %v", seed, src, v, got[v], want[src][v])
				}
			}
		}
	}
}

func TestDelayMatrixMatchesAllPairs(t *testing.T) {
	for seed := range uint64(30) {
		r := rng(seed)
		c := DefaultWaxmanConfig()
		c.N = 50 + r.IntN(150)
		g, err := Waxman(c, r)
		if err != nil {
			t.Fatal(err)
		}
		all, err := AllPairs(g)
		if err != nil {
			t.Fatal(err)
		}
		if !all.Square() || !all.Symmetric(0) || all.Rows() != g.N() || all.RowName(7) != "n0007" {
			t.Fatalf("seed %d: AllPairs not a symmetric %d-square named n0000...", seed, g.N())
		}
		// Fewer rows than columns, more rows than columns, equal, overlapping.
		for _, shape := range [][2]int{{3, 20}, {20, 3}, {10, 10}, {1, 1}, {0, 5}} {
			p := r.Perm(g.N())
			rows := p[:shape[0]]
			cols := r.Perm(g.N())[:shape[1]]
			m, err := DelayMatrix(g, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			if m.Rows() != len(rows) || m.Cols() != len(cols) {
				t.Fatalf("shape %v: got %d×%d", shape, m.Rows(), m.Cols())
			}
			for i, u := range rows {
				if m.RowName(i) != NodeName(u) {
					t.Fatalf("row %d named %q, want %q", i, m.RowName(i), NodeName(u))
				}
				for j, v := range cols {
					if got, want := m.At(i, j), all.At(u, v); !sameDelay(got, want, false) {
						t.Fatalf("seed %d shape %v: DelayMatrix(%d,%d) = %v, AllPairs %v", seed, shape, u, v, got, want)
					}
				}
			}
		}
	}
}

func TestDelayMatrixErrors(t *testing.T) {
	g, _ := NewGraph(4, []Edge{{0, 1, 1}, {2, 3, 1}})
	if _, err := DelayMatrix(g, []int{0}, []int{1, 2}); !errors.Is(err, ErrDisconnected) {
		t.Errorf("disconnected pair: %v", err)
	}
	if _, err := AllPairs(g); !errors.Is(err, ErrDisconnected) {
		t.Errorf("AllPairs on a disconnected graph: %v", err)
	}
	if _, err := DelayMatrix(g, []int{0, 4}, []int{1}); !errors.Is(err, ErrNodeRange) {
		t.Errorf("row out of range: %v", err)
	}
	if _, err := DelayMatrix(g, []int{0}, []int{-1}); !errors.Is(err, ErrNodeRange) {
		t.Errorf("column out of range: %v", err)
	}
	if _, err := DelayMatrix(g, []int{0, 1, 0}, []int{1}); !errors.Is(err, ErrDuplicateNode) {
		t.Errorf("repeated row: %v", err)
	}
	if _, err := AllPairs(newGraph(MaxAllPairs + 1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("AllPairs too large: %v", err)
	}
	m, err := DelayMatrix(g, []int{0, 1}, []int{1, 0})
	if err != nil || m.At(0, 0) != 1 || m.At(0, 1) != 0 {
		t.Errorf("a node may be both row and column: %v, %v", m, err)
	}
}

func TestShortestFromPanicsOutOfRange(t *testing.T) {
	g, _ := NewGraph(2, nil)
	for _, f := range []func(){
		func() { ShortestFrom(g, 2) },
		func() { ShortestFrom(g, -1) },
		func() { ShortestFromMany(g, []int{0, 5}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic for an out-of-range source")
				}
			}()
			f()
		}()
	}
	if d := ShortestFrom(g, 1); d[1] != 0 || !math.IsInf(d[0], 1) {
		t.Errorf("isolated nodes: %v", d)
	}
}

// TestDelayMatrixDeterministic runs the parallel paths several times: the
// matrix must be bit-identical whatever the goroutine scheduling.
func TestDelayMatrixDeterministic(t *testing.T) {
	g, err := Hierarchical(CMAPaper(), rng(21))
	if err != nil {
		t.Fatal(err)
	}
	r := rng(22)
	nodes := r.Perm(g.N())
	players, mirrors := nodes[:300], nodes[300:320]
	var first []uint64
	for run := range 4 {
		m, err := DelayMatrix(g, players, mirrors)
		if err != nil {
			t.Fatal(err)
		}
		var bits []uint64
		for i := range m.Rows() {
			for j := range m.Cols() {
				bits = append(bits, math.Float64bits(m.At(i, j)))
			}
		}
		if run == 0 {
			first = bits
			continue
		}
		if fmt.Sprint(bits) != fmt.Sprint(first) {
			t.Fatalf("run %d differs from run 0", run)
		}
	}
}
