package topo

import (
	"math"
	"math/rand/v2"
)

// Waxman generates a flat router-level Waxman topology as BRITE does (see
// the package comment for the exact procedure). The graph has coordinates,
// no AS membership, and is connected. It fails only on an invalid config
// or a nil r.
func Waxman(cfg WaxmanConfig, r *rand.Rand) (*Graph, error) {
	if err := checkRand(r); err != nil {
		return nil, err
	}
	c, err := cfg.filled()
	if err != nil {
		return nil, err
	}
	return waxman(c, r), nil
}

// BarabasiAlbert generates a flat Barabási–Albert topology as BRITE's BA-1
// model does (see the package comment). The graph has coordinates (used
// only by DelayDistance), no AS membership, and is connected. It fails only
// on an invalid config or a nil r.
func BarabasiAlbert(cfg BAConfig, r *rand.Rand) (*Graph, error) {
	if err := checkRand(r); err != nil {
		return nil, err
	}
	c, err := cfg.filled()
	if err != nil {
		return nil, err
	}
	return barabasiAlbert(c, r, true), nil
}

// Hierarchical generates a two-level top-down topology as BRITE does: an
// AS-level Barabási–Albert graph, one router-level Waxman graph per AS, and
// one router-to-router link per AS-level link (see the package comment).
// Routers of AS a are the nodes [a·R, (a+1)·R) for R = cfg.Router.N; the
// graph records AS membership and router coordinates, and is connected. It
// fails only on an invalid config or a nil r.
func Hierarchical(cfg HierConfig, r *rand.Rand) (*Graph, error) {
	if err := checkRand(r); err != nil {
		return nil, err
	}
	c, err := cfg.filled()
	if err != nil {
		return nil, err
	}
	asg := barabasiAlbert(c.AS, r, false)
	nAS, nR := c.AS.N, c.Router.N
	g := newGraph(nAS * nR)
	g.coords = make([]Point, 0, nAS*nR)
	g.as = make([]int32, nAS*nR)
	g.numAS = nAS
	for a := range nAS {
		rg := waxman(c.Router, r)
		off := a * nR
		for _, e := range rg.edges {
			g.addEdge(off+e.U, off+e.V, e.Delay)
		}
		g.coords = append(g.coords, rg.coords...)
		for i := range nR {
			g.as[off+i] = int32(a)
		}
	}
	for _, e := range asg.edges {
		u := border(g, c.Border, e.U*nR, nR, r)
		v := border(g, c.Border, e.V*nR, nR, r)
		g.addEdge(u, v, c.AS.Delay.draw(r, g.coords[u], g.coords[v]))
	}
	return g, nil
}

// border picks the router of the AS whose routers are [off, off+n) that
// carries a new inter-AS link.
func border(g *Graph, b Border, off, n int, r *rand.Rand) int {
	if b == BorderRandom {
		return off + r.IntN(n)
	}
	best := off
	for u := off + 1; u < off+n; u++ {
		if len(g.adj[u]) < len(g.adj[best]) {
			best = u
		}
	}
	return best
}

// place draws n points uniformly in [0, side)², X then Y for each node in
// order.
func place(n int, side float64, r *rand.Rand) []Point {
	pts := make([]Point, n)
	for i := range pts {
		pts[i] = Point{r.Float64() * side, r.Float64() * side}
	}
	return pts
}

// waxman builds the Waxman graph for a filled config.
func waxman(c WaxmanConfig, r *rand.Rand) *Graph {
	g := newGraph(c.N)
	g.coords = place(c.N, c.Side, r)
	switch c.Growth {
	case GrowthIncremental:
		growIncremental(g, c, r)
	case GrowthAllAtOnce:
		growAllAtOnce(g, c, r)
		connect(g, func(u, v int) float64 { return c.Delay.draw(r, g.coords[u], g.coords[v]) })
	}
	return g
}

// growIncremental adds BRITE's incremental Waxman links to a graph of
// placed, unlinked nodes.
func growIncremental(g *Graph, c WaxmanConfig, r *rand.Rand) {
	n, m := c.N, c.M
	s := &nearSampler{pts: g.coords, scale: c.Beta * math.Sqrt2 * c.Side}
	// Nodes M..N-1 join in order (they were placed independently, so the
	// order is random); each links to M distinct earlier nodes.
	for i := m; i < n; i++ {
		s.reset(i)
		for j := range i {
			s.add(j)
		}
		for range m {
			j := s.draw(r)
			g.addEdge(i, j, c.Delay.draw(r, g.coords[i], g.coords[j]))
		}
	}
	// Then each of the first M nodes adds M links to nodes that joined
	// after it and are not yet linked to it, so that they too have M
	// links of their own.
	for i := range m {
		s.reset(i)
		for j := m; j < n; j++ {
			if _, linked := g.HasEdge(i, j); !linked {
				s.add(j)
			}
		}
		for k := 0; k < m && s.len() > 0; k++ {
			j := s.draw(r)
			g.addEdge(i, j, c.Delay.draw(r, g.coords[i], g.coords[j]))
		}
	}
}

// growAllAtOnce adds BRITE's all-at-once Waxman links to a graph of placed,
// unlinked nodes: pick a random node, link it to up to M random others it
// is not linked to, until no node is isolated. The result may be
// disconnected.
func growAllAtOnce(g *Graph, c WaxmanConfig, r *rand.Rand) {
	n, m := c.N, c.M
	s := &nearSampler{pts: g.coords, scale: c.Beta * math.Sqrt2 * c.Side}
	isolated := n
	mark := make([]int, n) // mark[v] == stamp: v is linked to the source
	for stamp := 1; isolated > 0; stamp++ {
		i := r.IntN(n)
		for _, x := range g.adj[i] {
			mark[x.to] = stamp
		}
		s.reset(i)
		for j := range n {
			if j != i && mark[j] != stamp {
				s.add(j)
			}
		}
		for k := 0; k < m && isolated > 0 && s.len() > 0; k++ {
			j := s.draw(r)
			for _, v := range [2]int{i, j} {
				if len(g.adj[v]) == 0 {
					isolated--
				}
			}
			g.addEdge(i, j, c.Delay.draw(r, g.coords[i], g.coords[j]))
		}
	}
}

// connect joins the components of g that do not hold the largest component
// (the first one on ties) to it, one link per component, in order of the
// component's smallest node: the link is the closest pair (Euclidean) between
// the component and everything joined so far, ties to the lowest indices.
func connect(g *Graph, delay func(u, v int) float64) {
	comps := g.components()
	if len(comps) <= 1 {
		return
	}
	big := 0
	for k, c := range comps {
		if len(c) > len(comps[big]) {
			big = k
		}
	}
	joined := append([]int(nil), comps[big]...)
	for k, c := range comps {
		if k == big {
			continue
		}
		bu, bv, bd := -1, -1, math.Inf(1)
		for _, u := range c {
			for _, v := range joined {
				if d := g.coords[u].Dist(g.coords[v]); d < bd {
					bu, bv, bd = u, v, d
				}
			}
		}
		g.addEdge(bu, bv, delay(bu, bv))
		joined = append(joined, c...)
	}
}

// nearSampler draws, without replacement, candidates with probability
// proportional to exp(−d/scale), d being the distance from a source point.
// This is exactly the distribution of BRITE's Waxman loop ("pick a
// candidate uniformly, keep it with probability α·exp(−d/(β·L)), retry
// otherwise") conditioned on keeping one, computed directly so that small
// α or β cannot make it spin. Weights are taken relative to the nearest
// remaining candidate, so they cannot all underflow to zero.
type nearSampler struct {
	pts   []Point
	scale float64
	src   Point
	cand  []int
	dist  []float64
	w     []float64
	dmin  float64
	fresh bool // w holds weights for the current dmin
}

func (s *nearSampler) reset(src int) {
	s.src = s.pts[src]
	s.cand, s.dist, s.w = s.cand[:0], s.dist[:0], s.w[:0]
	s.dmin, s.fresh = math.Inf(1), false
}

func (s *nearSampler) add(j int) {
	d := s.src.Dist(s.pts[j])
	s.cand = append(s.cand, j)
	s.dist = append(s.dist, d)
	s.dmin = min(s.dmin, d)
}

func (s *nearSampler) len() int { return len(s.cand) }

func (s *nearSampler) weigh() {
	s.w = s.w[:0]
	for _, d := range s.dist {
		s.w = append(s.w, math.Exp(-(d-s.dmin)/s.scale))
	}
	s.fresh = true
}

// draw removes and returns one candidate; there must be one.
func (s *nearSampler) draw(r *rand.Rand) int {
	if !s.fresh {
		s.weigh()
	}
	total := 0.0
	for _, w := range s.w {
		total += w
	}
	if total == 0 { // every remaining weight underflowed: re-anchor
		s.dmin = math.Inf(1)
		for _, d := range s.dist {
			s.dmin = min(s.dmin, d)
		}
		s.weigh()
		for _, w := range s.w {
			total += w
		}
	}
	u, pick, acc := r.Float64()*total, -1, 0.0
	for k, w := range s.w {
		if w == 0 {
			continue
		}
		acc += w
		pick = k
		if u < acc {
			break
		}
	}
	j := s.cand[pick]
	last := len(s.cand) - 1
	s.cand[pick], s.dist[pick], s.w[pick] = s.cand[last], s.dist[last], s.w[last]
	s.cand, s.dist, s.w = s.cand[:last], s.dist[:last], s.w[:last]
	return j
}

// barabasiAlbert builds the BA graph for a filled config. Without delays
// (for the AS level of a hierarchy, whose links are realised later) every
// link gets delay 0 and no randomness is spent on delays.
func barabasiAlbert(c BAConfig, r *rand.Rand, delays bool) *Graph {
	n, m := c.N, c.M
	g := newGraph(n)
	g.coords = place(n, c.Side, r)
	link := func(u, v int) {
		d := 0.0
		if delays {
			d = c.Delay.draw(r, g.coords[u], g.coords[v])
		}
		g.addEdge(u, v, d)
	}
	// ends lists every link end point once: a uniform pick from it is a
	// node chosen with probability proportional to its degree.
	ends := make([]int32, 0, 2*(m*(m+1)/2+(n-m-1)*m))
	for i := 0; i <= m; i++ {
		for j := i + 1; j <= m; j++ {
			link(i, j)
			ends = append(ends, int32(i), int32(j))
		}
	}
	chosen := make([]int32, 0, m)
	for i := m + 1; i < n; i++ {
		chosen = chosen[:0]
		for len(chosen) < m {
			k := ends[r.IntN(len(ends))]
			if !contains(chosen, k) {
				chosen = append(chosen, k)
			}
		}
		for _, k := range chosen {
			link(i, int(k))
			ends = append(ends, k, int32(i))
		}
	}
	return g
}

func contains(a []int32, x int32) bool {
	for _, y := range a {
		if y == x {
			return true
		}
	}
	return false
}
