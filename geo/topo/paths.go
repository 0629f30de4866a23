package topo

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/overworld/overworld/geo"
)

var (
	// ErrDisconnected reports that a requested pair of nodes has no path, so
	// its delay cannot go into a geo.Matrix.
	ErrDisconnected = errors.New("topo: nodes not connected")
	// ErrTooLarge reports an all-pairs request above MaxAllPairs nodes.
	ErrTooLarge = errors.New("topo: graph too large for all-pairs")
)

// MaxAllPairs is the largest graph AllPairs accepts: 2,500² delays are 50 MB
// (and the geo.Matrix copy as much again). For larger graphs ask DelayMatrix
// for the rows and columns you need; the CMA paper's 5,000-node all-pairs
// matrix would be 200 MB.
const MaxAllPairs = 2500

// ShortestFrom returns the shortest-path delay in ms from src to every node
// (Dijkstra with a binary heap, O((n + links)·log n)); unreachable nodes get
// +Inf and src gets 0. It panics if src is out of range, like a slice index.
func ShortestFrom(g *Graph, src int) []float64 {
	if src < 0 || src >= g.N() {
		panic(fmt.Sprintf("topo: ShortestFrom source %d out of range [0,%d)", src, g.N()))
	}
	var h dheap
	dist := make([]float64, g.N())
	h.run(g, src, dist)
	return dist
}

// ShortestFromMany returns ShortestFrom(g, s) for every s in srcs, in order.
// It spreads the sources over GOMAXPROCS goroutines; each result depends
// only on its source, so the output is the same whatever the scheduling.
// It panics if a source is out of range.
func ShortestFromMany(g *Graph, srcs []int) [][]float64 {
	checkNodes(g, srcs)
	out := make([][]float64, len(srcs))
	parallel(len(srcs), func(h *dheap, k int) {
		out[k] = make([]float64, g.N())
		h.run(g, srcs[k], out[k])
	})
	return out
}

// AllPairs returns the n×n shortest-path delay matrix of a connected graph
// of at most MaxAllPairs nodes, with endpoint names "n0000", "n0001", ...
// (see NodeName). The matrix is exactly symmetric: entry (i, j) and (j, i)
// are both the delay computed by Dijkstra from min(i, j). It fails with
// ErrTooLarge or ErrDisconnected.
func AllPairs(g *Graph) (*geo.Matrix, error) {
	n := g.N()
	if n > MaxAllPairs {
		return nil, fmt.Errorf("%w: %d nodes > %d; use DelayMatrix for the rows and columns you need", ErrTooLarge, n, MaxAllPairs)
	}
	flat := make([]float64, n*n)
	parallel(n, func(h *dheap, k int) { h.run(g, k, flat[k*n:(k+1)*n]) })
	for i := range n {
		for j := range i {
			flat[i*n+j] = flat[j*n+i]
		}
	}
	for i, d := range flat {
		if math.IsInf(d, 1) {
			return nil, fmt.Errorf("%w: no path from node %d to node %d", ErrDisconnected, i/n, i%n)
		}
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return geo.NewSquareFlat(names(all), flat)
}

// DelayMatrix returns the shortest-path delays in ms from every node in rows
// to every node in cols (for example players × mirrors), named by
// NodeName. The graph is undirected, so it runs Dijkstra only from the
// smaller of the two sets (rows on a tie) and keeps only the requested
// entries: 1,300 players × 20 mirrors on 5,000 nodes costs 20 Dijkstra runs
// and 26,000 numbers, not a 200 MB all-pairs matrix.
//
// Nodes must be in range and distinct within rows and within cols (a node
// may be both a row and a column). It fails with ErrNodeRange,
// ErrDuplicateNode or ErrDisconnected (naming a pair with no path).
//
// Each delay is summed along the path from the side Dijkstra ran from;
// floating-point addition is not associative, so it may differ in the last
// bit from the same delay summed from the other end (or by AllPairs). The
// result is deterministic for given arguments.
func DelayMatrix(g *Graph, rows, cols []int) (*geo.Matrix, error) {
	if err := distinctNodes(g, rows, "row"); err != nil {
		return nil, err
	}
	if err := distinctNodes(g, cols, "column"); err != nil {
		return nil, err
	}
	srcs, dsts, flip := rows, cols, false
	if len(cols) < len(rows) {
		srcs, dsts, flip = cols, rows, true
	}
	// Each source's delays to the other side go in their own slice (no
	// sharing between goroutines); the matrix is assembled afterwards.
	part := make([][]float64, len(srcs))
	parallel(len(srcs), func(h *dheap, k int) {
		dist := h.scratch(g.N())
		h.run(g, srcs[k], dist)
		part[k] = make([]float64, len(dsts))
		for t, v := range dsts {
			part[k][t] = dist[v]
		}
	})
	data := part
	if flip {
		data = make([][]float64, len(rows))
		for i := range data {
			data[i] = make([]float64, len(cols))
			for j := range data[i] {
				data[i][j] = part[j][i]
			}
		}
	}
	for i, r := range data {
		for j, d := range r {
			if math.IsInf(d, 1) {
				return nil, fmt.Errorf("%w: no path from node %d to node %d", ErrDisconnected, rows[i], cols[j])
			}
		}
	}
	return geo.NewMatrix(names(rows), names(cols), data)
}

// NodeName returns the endpoint name AllPairs and DelayMatrix give node i:
// "n" and the index padded to four digits ("n0042", "n12345").
func NodeName(i int) string { return fmt.Sprintf("n%04d", i) }

func names(nodes []int) []string {
	out := make([]string, len(nodes))
	for k, v := range nodes {
		out[k] = NodeName(v)
	}
	return out
}

func checkNodes(g *Graph, nodes []int) {
	for _, v := range nodes {
		if v < 0 || v >= g.N() {
			panic(fmt.Sprintf("topo: source %d out of range [0,%d)", v, g.N()))
		}
	}
}

func distinctNodes(g *Graph, nodes []int, what string) error {
	seen := make(map[int]int, len(nodes))
	for k, v := range nodes {
		if v < 0 || v >= g.N() {
			return fmt.Errorf("%w: %s %d is node %d, not in [0,%d)", ErrNodeRange, what, k, v, g.N())
		}
		if j, dup := seen[v]; dup {
			return fmt.Errorf("%w: node %d is %s %d and %s %d", ErrDuplicateNode, v, what, j, what, k)
		}
		seen[v] = k
	}
	return nil
}

// parallel calls f(h, k) for k in [0, n) on up to GOMAXPROCS goroutines,
// each with its own heap workspace, and returns when all calls have.
func parallel(n int, f func(h *dheap, k int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		var h dheap
		for k := range n {
			f(&h, k)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var h dheap
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				f(&h, k)
			}
		})
	}
	wg.Wait()
}

// dheap is Dijkstra's workspace: an indexed binary min-heap of nodes keyed
// by tentative distance, with decrease-key. It is reused across runs.
type dheap struct {
	nodes []int32   // heap order
	pos   []int32   // pos[v] = index of v in nodes, or -1
	key   []float64 // the distances being computed (the caller's slice)
	buf   []float64 // scratch distances for callers that keep only a few
}

func (h *dheap) scratch(n int) []float64 {
	if cap(h.buf) < n {
		h.buf = make([]float64, n)
	}
	return h.buf[:n]
}

// run fills dist (len n) with shortest-path delays from src.
func (h *dheap) run(g *Graph, src int, dist []float64) {
	n := g.N()
	if cap(h.pos) < n {
		h.pos = make([]int32, n)
	}
	h.pos = h.pos[:n]
	for i := range dist {
		dist[i] = math.Inf(1)
		h.pos[i] = -1
	}
	h.key, h.nodes = dist, h.nodes[:0]
	dist[src] = 0
	h.push(int32(src))
	for len(h.nodes) > 0 {
		u := h.pop()
		du := dist[u]
		for _, a := range g.adj[u] {
			nd := du + a.delay
			if nd < dist[a.to] {
				dist[a.to] = nd
				if h.pos[a.to] < 0 {
					h.push(a.to)
				} else {
					h.up(int(h.pos[a.to]))
				}
			}
		}
	}
	h.key = nil
}

func (h *dheap) push(v int32) {
	h.nodes = append(h.nodes, v)
	h.pos[v] = int32(len(h.nodes) - 1)
	h.up(len(h.nodes) - 1)
}

func (h *dheap) pop() int32 {
	top := h.nodes[0]
	last := len(h.nodes) - 1
	h.nodes[0] = h.nodes[last]
	h.pos[h.nodes[0]] = 0
	h.nodes = h.nodes[:last]
	h.pos[top] = -1
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *dheap) less(i, j int) bool {
	a, b := h.nodes[i], h.nodes[j]
	ka, kb := h.key[a], h.key[b]
	return ka < kb || (ka == kb && a < b)
}

func (h *dheap) swap(i, j int) {
	h.nodes[i], h.nodes[j] = h.nodes[j], h.nodes[i]
	h.pos[h.nodes[i]] = int32(i)
	h.pos[h.nodes[j]] = int32(j)
}

func (h *dheap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *dheap) down(i int) {
	n := len(h.nodes)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}
