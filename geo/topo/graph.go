package topo

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
)

// Sentinel errors, returned wrapped with the offending detail.
var (
	// ErrNodeRange reports a node index outside [0, n).
	ErrNodeRange = errors.New("topo: node out of range")
	// ErrSelfLoop reports an edge from a node to itself.
	ErrSelfLoop = errors.New("topo: self-loop")
	// ErrDuplicateEdge reports a second edge between the same two nodes
	// (in either orientation).
	ErrDuplicateEdge = errors.New("topo: duplicate edge")
	// ErrDuplicateNode reports a node listed twice where nodes must be
	// distinct (the rows, or the columns, of a delay matrix).
	ErrDuplicateNode = errors.New("topo: duplicate node")
	// ErrDelay reports a link delay that is NaN, infinite or negative.
	ErrDelay = errors.New("topo: invalid link delay")
	// ErrAttr reports node attributes (coordinates, AS membership) that do
	// not fit the graph: wrong length, non-finite coordinates, negative AS.
	ErrAttr = errors.New("topo: invalid node attributes")
)

// Edge is an undirected link between nodes U and V with a one-way delay in
// milliseconds. Edges returned by a Graph always have U < V.
type Edge struct {
	U, V  int
	Delay float64 // ms, finite and >= 0
}

// Point is a node position in the generator's plane, in the plane's units
// (see WaxmanConfig.Side).
type Point struct{ X, Y float64 }

// Dist returns the Euclidean distance between p and q. It is computed as
// the correctly rounded square root of explicitly rounded squares (not
// math.Hypot, which is assembly on some architectures, and without fused
// multiply-add), so it is bit-identical on every GOARCH.
func (p Point) Dist(q Point) float64 {
	dx, dy := p.X-q.X, p.Y-q.Y
	return math.Sqrt(float64(dx*dx) + float64(dy*dy))
}

// arc is one direction of an edge in an adjacency list.
type arc struct {
	to    int32
	delay float64
}

// Graph is an undirected graph with n nodes numbered 0..n-1 and weighted
// links (delay in ms). It optionally carries a plane position for every node
// and, for hierarchical topologies, the AS every node belongs to.
//
// A Graph is always valid: no self-loops, no parallel edges, every delay
// finite and non-negative. Mutating methods (AddEdge, SetCoords, SetAS)
// validate their input and leave the graph unchanged on error. A Graph is
// not safe for concurrent mutation; concurrent reads (including the
// shortest-path functions) are safe.
type Graph struct {
	adj    [][]arc
	edges  []Edge  // insertion order, U < V
	coords []Point // nil or len n
	as     []int32 // nil or len n
	numAS  int
}

// NewGraph returns a graph with n nodes and the given edges, added in order
// with AddEdge's validation. It fails, naming the first bad edge, on an
// out-of-range node, a self-loop, a duplicate edge or an invalid delay.
func NewGraph(n int, edges []Edge) (*Graph, error) {
	if n < 0 || n > math.MaxInt32 {
		return nil, fmt.Errorf("%w: graph of %d nodes", ErrNodeRange, n)
	}
	g := newGraph(n)
	for i, e := range edges {
		if err := g.AddEdge(e.U, e.V, e.Delay); err != nil {
			return nil, fmt.Errorf("edge %d: %w", i, err)
		}
	}
	return g, nil
}

func newGraph(n int) *Graph { return &Graph{adj: make([][]arc, n)} }

// N returns the number of nodes.
func (g *Graph) N() int { return len(g.adj) }

// M returns the number of edges.
func (g *Graph) M() int { return len(g.edges) }

// Edges returns a copy of the edges in the order they were added, each with
// U < V.
func (g *Graph) Edges() []Edge { return append([]Edge(nil), g.edges...) }

// Degree returns the number of links of node u. It panics if u is out of
// range, like a slice index.
func (g *Graph) Degree(u int) int { return len(g.adj[u]) }

// Neighbors yields every neighbour of u with the delay of the link to it, in
// the order the links were added. It panics if u is out of range.
func (g *Graph) Neighbors(u int) iter.Seq2[int, float64] {
	a := g.adj[u]
	return func(yield func(int, float64) bool) {
		for _, x := range a {
			if !yield(int(x.to), x.delay) {
				return
			}
		}
	}
}

// HasEdge reports whether u and v are linked, and the link's delay.
func (g *Graph) HasEdge(u, v int) (float64, bool) {
	if u < 0 || v < 0 || u >= len(g.adj) || v >= len(g.adj) {
		return 0, false
	}
	a, t := g.adj[u], int32(v)
	if len(g.adj[v]) < len(a) {
		a, t = g.adj[v], int32(u)
	}
	for _, x := range a {
		if x.to == t {
			return x.delay, true
		}
	}
	return 0, false
}

// AddEdge links u and v with the given delay in ms. It rejects, leaving the
// graph unchanged, out-of-range nodes, u == v, an existing link between u
// and v, and a NaN, infinite or negative delay.
func (g *Graph) AddEdge(u, v int, delay float64) error {
	n := len(g.adj)
	switch {
	case u < 0 || u >= n:
		return fmt.Errorf("%w: %d not in [0,%d)", ErrNodeRange, u, n)
	case v < 0 || v >= n:
		return fmt.Errorf("%w: %d not in [0,%d)", ErrNodeRange, v, n)
	case u == v:
		return fmt.Errorf("%w: node %d", ErrSelfLoop, u)
	case math.IsNaN(delay) || math.IsInf(delay, 0) || delay < 0:
		return fmt.Errorf("%w: %g ms on %d-%d", ErrDelay, delay, u, v)
	}
	if _, dup := g.HasEdge(u, v); dup {
		return fmt.Errorf("%w: %d-%d", ErrDuplicateEdge, u, v)
	}
	g.addEdge(u, v, delay)
	return nil
}

// addEdge links u and v without validation; callers guarantee validity.
func (g *Graph) addEdge(u, v int, delay float64) {
	if u > v {
		u, v = v, u
	}
	g.adj[u] = append(g.adj[u], arc{int32(v), delay})
	g.adj[v] = append(g.adj[v], arc{int32(u), delay})
	g.edges = append(g.edges, Edge{u, v, delay})
}

// Connected reports whether every node can reach every other node. The
// empty graph and a single node are connected.
func (g *Graph) Connected() bool {
	if len(g.adj) <= 1 {
		return true
	}
	return len(g.components()[0]) == len(g.adj)
}

// components returns the connected components, each sorted ascending, in
// order of their smallest node.
func (g *Graph) components() [][]int {
	n := len(g.adj)
	seen := make([]bool, n)
	var comps [][]int
	for s := range n {
		if seen[s] {
			continue
		}
		seen[s] = true
		comp := []int{s}
		for i := 0; i < len(comp); i++ {
			for _, x := range g.adj[comp[i]] {
				if !seen[x.to] {
					seen[x.to] = true
					comp = append(comp, int(x.to))
				}
			}
		}
		slices.Sort(comp)
		comps = append(comps, comp)
	}
	return comps
}

// Coords returns a copy of the node positions, or nil if the graph has none.
func (g *Graph) Coords() []Point { return append([]Point(nil), g.coords...) }

// Coord returns the position of node u and whether the graph has positions.
func (g *Graph) Coord(u int) (Point, bool) {
	if g.coords == nil {
		return Point{}, false
	}
	return g.coords[u], true
}

// SetCoords sets the position of every node (len(xy) == N(), all finite),
// or removes positions when xy is nil. The slice is copied.
func (g *Graph) SetCoords(xy []Point) error {
	if xy == nil {
		g.coords = nil
		return nil
	}
	if len(xy) != len(g.adj) {
		return fmt.Errorf("%w: %d coordinates for %d nodes", ErrAttr, len(xy), len(g.adj))
	}
	for i, p := range xy {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
			return fmt.Errorf("%w: node %d at (%g, %g)", ErrAttr, i, p.X, p.Y)
		}
	}
	g.coords = append([]Point(nil), xy...)
	return nil
}

// NumAS returns the number of ASes (1 + the largest AS id), or 0 if the
// graph has no AS membership.
func (g *Graph) NumAS() int { return g.numAS }

// AS returns the AS node u belongs to, or -1 if the graph has no AS
// membership.
func (g *Graph) AS(u int) int {
	if g.as == nil {
		return -1
	}
	return int(g.as[u])
}

// SetAS sets the AS of every node (len(as) == N(), ids >= 0), or removes
// membership when as is nil. The slice is copied.
func (g *Graph) SetAS(as []int) error {
	if as == nil {
		g.as, g.numAS = nil, 0
		return nil
	}
	if len(as) != len(g.adj) {
		return fmt.Errorf("%w: %d AS ids for %d nodes", ErrAttr, len(as), len(g.adj))
	}
	out, k := make([]int32, len(as)), 0
	for i, a := range as {
		if a < 0 || a > math.MaxInt32-1 {
			return fmt.Errorf("%w: node %d in AS %d", ErrAttr, i, a)
		}
		out[i], k = int32(a), max(k, a+1)
	}
	g.as, g.numAS = out, k
	return nil
}
