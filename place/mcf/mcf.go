package mcf

import (
	"errors"
	"fmt"
	"math"
)

// Epsilon is the relative tolerance for floating-point costs. A Bellman–Ford
// relaxation must improve a distance by more than Epsilon·scale to count
// (scale is max(1, largest |edge cost|)), so rounding cannot fake a negative
// cycle; and in Dijkstra a reduced cost made slightly negative by rounding is
// clamped to zero. The reported cost is therefore optimal up to a rounding
// error of the order of Epsilon·scale per unit of flow and path edge.
const Epsilon = 1e-9

// Sentinel errors. Errors returned by this package wrap one of these.
var (
	// ErrNode reports a node index outside [0, n), or a source equal to the sink.
	ErrNode = errors.New("mcf: bad node")
	// ErrCapacity reports a negative edge capacity, mirror capacity or flow demand.
	ErrCapacity = errors.New("mcf: negative capacity")
	// ErrCost reports an edge cost or a delay that is NaN, infinite, or
	// (for delays) negative.
	ErrCost = errors.New("mcf: invalid cost")
	// ErrShape reports a ragged delay matrix (rows of different lengths).
	ErrShape = errors.New("mcf: ragged delay matrix")
	// ErrNegativeCycle reports a cycle of negative total cost and positive
	// capacity: successive shortest paths cannot cancel it.
	ErrNegativeCycle = errors.New("mcf: negative-cost cycle")
	// ErrInfeasible reports a demand that cannot be routed; the returned
	// error is an *InfeasibleError.
	ErrInfeasible = errors.New("mcf: infeasible")
)

// InfeasibleError says how much of the demand could be routed. It wraps
// ErrInfeasible.
type InfeasibleError struct {
	Want int64 // units asked for
	Max  int64 // maximum units that can be routed
}

func (e *InfeasibleError) Error() string {
	return fmt.Sprintf("mcf: infeasible: only %d of %d units can be routed", e.Max, e.Want)
}

// Unwrap returns ErrInfeasible, so errors.Is(err, ErrInfeasible) holds.
func (e *InfeasibleError) Unwrap() error { return ErrInfeasible }

// Graph is a directed network with integer capacities and real costs. The
// zero value is an empty graph with no nodes; use NewGraph.
type Graph struct {
	n    int
	from []int32
	to   []int32
	cap  []int64
	cost []float64
}

// NewGraph returns an empty graph on nodes 0..n-1. A negative n is treated
// as 0 (every AddEdge then fails with ErrNode).
func NewGraph(n int) *Graph {
	return &Graph{n: max(n, 0)}
}

// Nodes returns the number of nodes.
func (g *Graph) Nodes() int { return g.n }

// Edges returns the number of edges added so far.
func (g *Graph) Edges() int { return len(g.to) }

// AddEdge adds an edge from → to with the given capacity (≥ 0) and cost per
// unit of flow (finite, may be negative) and returns its id: ids are
// 0, 1, 2, … in insertion order and index Result.EdgeFlow. Parallel edges
// and self-loops are allowed. On error the graph is unchanged.
func (g *Graph) AddEdge(from, to int, capacity int64, cost float64) (int, error) {
	if from < 0 || from >= g.n || to < 0 || to >= g.n {
		return -1, fmt.Errorf("%w: edge %d→%d outside [0,%d)", ErrNode, from, to, g.n)
	}
	if capacity < 0 {
		return -1, fmt.Errorf("%w: edge %d→%d has capacity %d", ErrCapacity, from, to, capacity)
	}
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		return -1, fmt.Errorf("%w: edge %d→%d has cost %g", ErrCost, from, to, cost)
	}
	if g.n > math.MaxInt32 || len(g.to) >= math.MaxInt32/2 {
		return -1, fmt.Errorf("%w: graph too large", ErrNode)
	}
	g.from = append(g.from, int32(from))
	g.to = append(g.to, int32(to))
	g.cap = append(g.cap, capacity)
	g.cost = append(g.cost, cost)
	return len(g.to) - 1, nil
}

// Result is a minimum-cost flow.
type Result struct {
	Flow     int64   // units routed from s to t
	Cost     float64 // Σ EdgeFlow[e] · cost(e)
	EdgeFlow []int64 // flow on each edge, indexed by the id AddEdge returned
}

// Solve routes want units from s to t at minimum total cost, over all flows
// of that value (circulations included: any negative-cost cycle of positive
// capacity in the graph makes Solve fail with ErrNegativeCycle). The graph is
// not modified.
//
// When fewer than want units can be routed, Solve returns a minimum-cost
// maximum flow together with an *InfeasibleError (errors.Is ErrInfeasible).
// To ask for a minimum-cost maximum flow, pass want = math.MaxInt64 and
// accept that error. Any other error comes with a zero Result.
func (g *Graph) Solve(s, t int, want int64) (Result, error) {
	switch {
	case s < 0 || s >= g.n || t < 0 || t >= g.n:
		return Result{}, fmt.Errorf("%w: terminals %d, %d outside [0,%d)", ErrNode, s, t, g.n)
	case s == t:
		return Result{}, fmt.Errorf("%w: source and sink are both %d", ErrNode, s)
	case want < 0:
		return Result{}, fmt.Errorf("%w: demand %d", ErrCapacity, want)
	}
	r := newResidual(g)
	if err := r.initPotentials(); err != nil {
		return Result{}, err
	}
	flow := r.run(int32(s), int32(t), want)
	res := Result{Flow: flow, EdgeFlow: make([]int64, len(g.to))}
	for e := range g.to {
		f := g.cap[e] - r.rcap[2*e]
		res.EdgeFlow[e] = f
		res.Cost += float64(f) * g.cost[e]
	}
	if flow < want {
		return res, &InfeasibleError{Want: want, Max: flow}
	}
	return res, nil
}

// residual is the residual network: arc 2e is edge e forward, arc 2e+1 its
// reverse. Arcs are grouped by tail in CSR form (adj[start[v]:start[v+1]]).
type residual struct {
	n     int
	head  []int32   // arc → head node
	rcap  []int64   // arc → residual capacity
	cost  []float64 // arc → cost (reverse arcs carry the negated cost)
	start []int32
	adj   []int32
	pot   []float64
	scale float64

	// Dijkstra scratch, reused across augmentations.
	dist  []float64
	prev  []int32 // arc used to reach v
	stamp []int32 // dist/prev valid iff stamp[v] == round
	done  []int32 // v settled iff done[v] == round
	round int32
	heap  minHeap
	order []int32 // settled nodes this round
}

func newResidual(g *Graph) *residual {
	m := len(g.to)
	r := &residual{
		n:     g.n,
		head:  make([]int32, 2*m),
		rcap:  make([]int64, 2*m),
		cost:  make([]float64, 2*m),
		start: make([]int32, g.n+1),
		adj:   make([]int32, 2*m),
		pot:   make([]float64, g.n),
		dist:  make([]float64, g.n),
		prev:  make([]int32, g.n),
		stamp: make([]int32, g.n),
		done:  make([]int32, g.n),
		scale: 1,
	}
	for e := range m {
		u, v := g.from[e], g.to[e]
		r.head[2*e], r.head[2*e+1] = v, u
		r.rcap[2*e] = g.cap[e]
		r.cost[2*e], r.cost[2*e+1] = g.cost[e], -g.cost[e]
		r.start[u+1]++
		r.start[v+1]++
		r.scale = max(r.scale, math.Abs(g.cost[e]))
	}
	for v := 0; v < g.n; v++ {
		r.start[v+1] += r.start[v]
	}
	fill := append([]int32(nil), r.start[:g.n]...)
	for a := range 2 * m {
		tail := r.head[a^1]
		r.adj[fill[tail]] = int32(a)
		fill[tail]++
	}
	return r
}

// initPotentials makes every residual arc's reduced cost non-negative. With
// non-negative costs the zero potential does; otherwise Bellman–Ford from a
// virtual source joined to every node at cost 0 computes one, or finds a
// negative cycle.
func (r *residual) initPotentials() error {
	neg := false
	for a := 0; a < len(r.head); a += 2 {
		if r.rcap[a] > 0 && r.cost[a] < 0 {
			neg = true
			break
		}
	}
	if !neg {
		return nil
	}
	tol := Epsilon * r.scale
	for range r.n + 1 {
		changed := false
		for a := 0; a < len(r.head); a++ {
			if r.rcap[a] <= 0 {
				continue
			}
			u, v := r.head[a^1], r.head[a]
			if d := r.pot[u] + r.cost[a]; d < r.pot[v]-tol {
				r.pot[v] = d
				changed = true
			}
		}
		if !changed {
			return nil
		}
	}
	return ErrNegativeCycle
}

// run augments along shortest paths until want units flow or t is cut off,
// and returns the flow routed.
func (r *residual) run(s, t int32, want int64) int64 {
	var flow int64
	for flow < want {
		if !r.dijkstra(s, t) {
			break
		}
		// Johnson update, shifted by -dist[t] so only settled nodes change:
		// settled v gets pot += dist[v] - dist[t], the rest keep theirs.
		dt := r.dist[t]
		for _, v := range r.order {
			r.pot[v] += r.dist[v] - dt
		}
		f := want - flow
		for v := t; v != s; {
			a := r.prev[v]
			f = min(f, r.rcap[a])
			v = r.head[a^1]
		}
		for v := t; v != s; {
			a := r.prev[v]
			r.rcap[a] -= f
			r.rcap[a^1] += f
			v = r.head[a^1]
		}
		flow += f
	}
	return flow
}

// dijkstra computes reduced-cost distances from s, stopping once t is
// settled. It reports whether t is reachable.
func (r *residual) dijkstra(s, t int32) bool {
	r.round++
	r.heap = r.heap[:0]
	r.order = r.order[:0]
	r.dist[s], r.stamp[s] = 0, r.round
	r.heap.push(item{0, s})
	for len(r.heap) > 0 {
		it := r.heap.pop()
		u := it.v
		if r.done[u] == r.round || it.d > r.dist[u] {
			continue
		}
		r.done[u] = r.round
		r.order = append(r.order, u)
		if u == t {
			return true
		}
		pu := r.pot[u]
		for _, a := range r.adj[r.start[u]:r.start[u+1]] {
			if r.rcap[a] <= 0 {
				continue
			}
			v := r.head[a]
			if r.done[v] == r.round {
				continue
			}
			rc := r.cost[a] + pu - r.pot[v]
			if rc < 0 {
				rc = 0 // rounding; see Epsilon
			}
			d := it.d + rc
			if r.stamp[v] != r.round || d < r.dist[v] {
				r.dist[v], r.prev[v], r.stamp[v] = d, a, r.round
				r.heap.push(item{d, v})
			}
		}
	}
	return false
}

type item struct {
	d float64
	v int32
}

// minHeap is a binary heap of items by d (lazy deletion: stale entries are
// skipped when popped).
type minHeap []item

func (h *minHeap) push(x item) {
	*h = append(*h, x)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].d <= a[i].d {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *minHeap) pop() item {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(a) {
			break
		}
		c := l
		if r := l + 1; r < len(a) && a[r].d < a[l].d {
			c = r
		}
		if a[i].d <= a[c].d {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}
