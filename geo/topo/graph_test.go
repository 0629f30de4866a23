package topo

import (
	"errors"
	"math"
	"testing"
)

func TestNewGraphRejectsBadEdges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		edges []Edge
		want  error
	}{
		{"negative n", -1, nil, ErrNodeRange},
		{"u out of range", 3, []Edge{{0, 1, 1}, {3, 1, 1}}, ErrNodeRange},
		{"v negative", 3, []Edge{{0, -1, 1}}, ErrNodeRange},
		{"self-loop", 3, []Edge{{2, 2, 1}}, ErrSelfLoop},
		{"duplicate", 3, []Edge{{0, 1, 1}, {0, 1, 2}}, ErrDuplicateEdge},
		{"duplicate reversed", 3, []Edge{{0, 1, 1}, {1, 0, 1}}, ErrDuplicateEdge},
		{"negative delay", 3, []Edge{{0, 1, -0.5}}, ErrDelay},
		{"NaN delay", 3, []Edge{{0, 1, math.NaN()}}, ErrDelay},
		{"infinite delay", 3, []Edge{{0, 1, math.Inf(1)}}, ErrDelay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGraph(tc.n, tc.edges)
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewGraph = %v, %v; want error %v", g, err, tc.want)
			}
			t.Logf("error: %v", err)
		})
	}
}

func TestAddEdgeLeavesGraphUnchangedOnError(t *testing.T) {
	g, err := NewGraph(3, []Edge{{1, 0, 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Edge{{0, 1, 1}, {2, 2, 1}, {0, 5, 1}, {0, 2, math.NaN()}} {
		if err := g.AddEdge(bad.U, bad.V, bad.Delay); err == nil {
			t.Errorf("AddEdge(%v) accepted", bad)
		}
	}
	if g.M() != 1 || g.Degree(0) != 1 || g.Degree(1) != 1 || g.Degree(2) != 0 {
		t.Fatalf("graph changed by rejected edges: %v", g.Edges())
	}
	if e := g.Edges()[0]; e != (Edge{0, 1, 2.5}) {
		t.Fatalf("edge not normalised to U < V: %v", e)
	}
	if d, ok := g.HasEdge(1, 0); !ok || d != 2.5 {
		t.Fatalf("HasEdge(1,0) = %v, %v", d, ok)
	}
	if _, ok := g.HasEdge(0, 2); ok {
		t.Fatal("HasEdge(0,2) true")
	}
	if _, ok := g.HasEdge(-1, 7); ok {
		t.Fatal("HasEdge out of range true")
	}
}

func TestNeighborsAndConnected(t *testing.T) {
	g, err := NewGraph(5, []Edge{{0, 1, 1}, {0, 2, 2}, {3, 4, 0}})
	if err != nil {
		t.Fatal(err)
	}
	var got []Edge
	for v, d := range g.Neighbors(0) {
		got = append(got, Edge{0, v, d})
	}
	if len(got) != 2 || got[0] != (Edge{0, 1, 1}) || got[1] != (Edge{0, 2, 2}) {
		t.Fatalf("Neighbors(0) = %v", got)
	}
	for range g.Neighbors(0) {
		break // early exit must not panic
	}
	if g.Connected() {
		t.Fatal("two components reported connected")
	}
	if err := g.AddEdge(2, 3, 0); err != nil {
		t.Fatal(err)
	}
	if !g.Connected() {
		t.Fatal("connected graph reported disconnected")
	}
	for _, n := range []int{0, 1} {
		if g, _ := NewGraph(n, nil); !g.Connected() {
			t.Errorf("%d-node graph not connected", n)
		}
	}
	if g, _ := NewGraph(2, nil); g.Connected() {
		t.Error("2 isolated nodes connected")
	}
}

func TestNodeAttributes(t *testing.T) {
	g, _ := NewGraph(3, nil)
	if _, ok := g.Coord(0); ok || g.Coords() != nil || g.AS(0) != -1 || g.NumAS() != 0 {
		t.Fatal("fresh graph has attributes")
	}
	if err := g.SetCoords([]Point{{0, 0}, {1, 1}}); !errors.Is(err, ErrAttr) {
		t.Errorf("short coords: %v", err)
	}
	if err := g.SetCoords([]Point{{0, 0}, {1, math.NaN()}, {2, 2}}); !errors.Is(err, ErrAttr) {
		t.Errorf("NaN coord: %v", err)
	}
	if err := g.SetAS([]int{0, -1, 0}); !errors.Is(err, ErrAttr) {
		t.Errorf("negative AS: %v", err)
	}
	xy := []Point{{0, 0}, {3, 4}, {1, 1}}
	if err := g.SetCoords(xy); err != nil {
		t.Fatal(err)
	}
	xy[1] = Point{9, 9} // the graph holds a copy
	if p, ok := g.Coord(1); !ok || p != (Point{3, 4}) {
		t.Fatalf("Coord(1) = %v, %v", p, ok)
	}
	if d := (Point{0, 0}).Dist(Point{3, 4}); d != 5 {
		t.Fatalf("Dist = %g", d)
	}
	if err := g.SetAS([]int{0, 2, 2}); err != nil {
		t.Fatal(err)
	}
	if g.AS(1) != 2 || g.NumAS() != 3 {
		t.Fatalf("AS(1) = %d, NumAS = %d", g.AS(1), g.NumAS())
	}
	_ = g.SetAS(nil)
	_ = g.SetCoords(nil)
	if g.AS(1) != -1 || g.Coords() != nil {
		t.Fatal("attributes not removed")
	}
}
