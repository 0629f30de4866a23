package cma

import "math"

// saEngine is the exact incremental J-SA/L-SA.
//
// The assignment is a flow in the network source → player → mirror → sink
// (T). Contracting players away leaves a residual graph on the mirrors plus
// T with edges
//
//	j → k  cost MC[j][k] = min over players p on j of d(p,k) − d(p,j)  (load_j > 0)
//	j → T  cost 0                                                        (load_j < cap_j)
//	T → j  cost 0                                                        (load_j > 0)
//
// and the assignment is optimal iff this graph has no negative cycle. The
// engine keeps MC in a pairIndex and keeps potentials phi on the mirrors
// (phi(T) = 0) such that every reduced cost c(u,v) + phi(u) − phi(v) ≥ 0, and
// empty mirrors have phi = 0. Then:
//
//   - Join p: if p's closest mirror has a spare seat, place p there (optimal,
//     and the potentials stay valid because spare mirrors have phi = 0 ≥ phi
//     of every non-empty full mirror). Otherwise one reverse Dijkstra from T
//     gives g(v), the cheapest chain from v to a spare seat; p goes to the
//     mirror minimising d(p,v) + g(v) and the chain is shifted. phi := −g.
//   - Leave p from mirror j: if j had a spare seat nothing else changes.
//     Otherwise j's freed seat is the only new residual edge (j → T), so the
//     only possible negative cycle is T → k ⇝ j → T: one forward Dijkstra
//     from T gives D(v); if D(j) < 0 the chain k ⇝ j is shifted. phi := D.
//
// Both updates are the successive-shortest-path step, which preserves the
// absence of negative cycles (and the validity of the new potentials); see
// the package tests, which check optimality against a generic min-cost flow
// after every event.
type saEngine struct {
	s    *state
	phi  []float64
	dist []float64
	link []int32 // Dijkstra tree: next hop (join) or predecessor (leave); -1 = T
	done []bool
	mv   []mover
}

type mover struct {
	slot int32
	to   int
}

// eps is the slack, in ms, under which a chain's gain is treated as zero
// (so float rounding never triggers moves that gain nothing).
const eps = 1e-9

func newSA(s *state) *saEngine {
	s.idx = newPairIndex(s.m)
	return &saEngine{
		s:    s,
		phi:  make([]float64, s.m),
		dist: make([]float64, s.m),
		link: make([]int32, s.m),
		done: make([]bool, s.m),
	}
}

func (e *saEngine) join(p int32) {
	s := e.s
	m := s.m
	d := s.row(p)
	best := 0
	for j := 1; j < m; j++ {
		if d[j] < d[best] {
			best = j
		}
	}
	if s.spare(best) {
		s.place(p, best)
		return
	}

	// Reverse Dijkstra to T over reduced costs: dist[v] = g(v) + phi(v).
	inf := math.Inf(1)
	for v := 0; v < m; v++ {
		e.done[v] = false
		e.link[v] = -1
		e.dist[v] = inf
		if s.spare(v) {
			e.dist[v] = math.Max(0, e.phi[v])
		}
	}
	top := s.idx.top
	for range m {
		u := e.closest()
		if u < 0 {
			break
		}
		e.done[u] = true
		du, pu := e.dist[u], e.phi[u]
		for v := 0; v < m; v++ {
			if e.done[v] || s.load[v] == 0 {
				continue
			}
			rc := top[v*m+u] + e.phi[v] - pu
			if rc < 0 {
				rc = 0
			}
			if nd := du + rc; nd < e.dist[v] {
				e.dist[v] = nd
				e.link[v] = int32(u)
			}
		}
	}

	// Choose the entry mirror; prefer a spare one (no moves) on a tie.
	j0, bestCost := -1, inf
	for v := 0; v < m; v++ {
		if e.dist[v] == inf {
			continue
		}
		c := d[v] + e.dist[v] - e.phi[v]
		if j0 < 0 || c < bestCost-eps || (c <= bestCost+eps && s.spare(v) && !s.spare(j0)) {
			j0, bestCost = v, c
		}
	}

	e.mv = e.mv[:0]
	for v := j0; e.link[v] >= 0; v = int(e.link[v]) {
		u := int(e.link[v])
		e.mv = append(e.mv, mover{slot: s.idx.minSlot(v, u), to: u})
	}
	for i := len(e.mv) - 1; i >= 0; i-- { // vacancy first: every step within capacity
		s.move(e.mv[i].slot, e.mv[i].to)
	}
	s.place(p, j0)

	for v := 0; v < m; v++ {
		if e.dist[v] < inf {
			e.phi[v] -= e.dist[v]
		}
	}
	e.normalize()
}

func (e *saEngine) leave(p int32) {
	s := e.s
	m := s.m
	j := int(s.mirror[p])
	wasFull := s.full(j)
	s.unplace(p)
	if !wasFull {
		e.normalize()
		return
	}

	// Forward Dijkstra from T: dist[v] = D(v) − phi(v).
	inf := math.Inf(1)
	any := false
	for v := 0; v < m; v++ {
		e.done[v] = false
		e.link[v] = -1
		e.dist[v] = inf
		if s.load[v] > 0 {
			e.dist[v] = math.Max(0, -e.phi[v])
			any = true
		}
	}
	if !any {
		e.normalize()
		return
	}
	top := s.idx.top
	for range m {
		u := e.closest()
		if u < 0 {
			break
		}
		e.done[u] = true
		if s.load[u] == 0 {
			continue
		}
		du, pu := e.dist[u], e.phi[u]
		row := top[u*m : (u+1)*m]
		for v := 0; v < m; v++ {
			if e.done[v] || v == u {
				continue
			}
			rc := row[v] + pu - e.phi[v]
			if rc < 0 {
				rc = 0
			}
			if nd := du + rc; nd < e.dist[v] {
				e.dist[v] = nd
				e.link[v] = int32(u)
			}
		}
	}

	if e.dist[j]+e.phi[j] < -eps {
		e.mv = e.mv[:0]
		for v := j; e.link[v] >= 0; v = int(e.link[v]) {
			u := int(e.link[v])
			e.mv = append(e.mv, mover{slot: s.idx.minSlot(u, v), to: v})
		}
		for _, mv := range e.mv {
			s.move(mv.slot, mv.to)
		}
	}
	for v := 0; v < m; v++ {
		if e.dist[v] < inf {
			e.phi[v] += e.dist[v]
		}
	}
	e.normalize()
}

// closest returns the unfinished mirror with the least finite tentative
// distance (lowest index on ties), or -1: the O(m) selection step of a
// dense-graph Dijkstra.
func (e *saEngine) closest() int {
	u := -1
	for v, d := range e.dist {
		if !e.done[v] && !math.IsInf(d, 1) && (u < 0 || d < e.dist[u]) {
			u = v
		}
	}
	return u
}

// normalize sets the potential of empty mirrors to phi(T) = 0, which keeps
// every reduced cost non-negative (an empty mirror's only out-edge goes to
// T) and lets a join place a player on any spare mirror without a search.
func (e *saEngine) normalize() {
	for v, l := range e.s.load {
		if l == 0 {
			e.phi[v] = 0
		}
	}
}
