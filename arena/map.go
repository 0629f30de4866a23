package arena

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
)

// Map generation parameters (m). They give a 16-player map about 65
// obstacles (14% of its area) and 160 waypoints 6 m or more apart.
const (
	// BotRadius is the clearance every waypoint and graph edge keeps from
	// obstacles and from the map's edge: Quake's player box is 32 units
	// (1 m) wide.
	BotRadius = 0.5
	// waypointMargin is the extra distance between a waypoint and an
	// obstacle, so that lingering bots stand in the open.
	waypointMargin  = 1.0
	obstacleArea    = 250.0 // m² of map per obstacle
	obstacleMinSide = 2.0
	obstacleMaxSide = 10.0
	waypointArea    = 100.0 // m² of map per waypoint (before spacing rejects some)
	waypointSpacing = 6.0
	edgeRange       = 15.0 // waypoints closer than this are joined if the segment is clear
	goalRadius      = 0.6 * Diameter16
	zipfExponent    = 1.0 // default popularity of the k-th waypoint of a tile ∝ 1/k (Config.Zipf)
	gridCell        = 16.0
)

// Waypoint is a node of the map's waypoint graph.
type Waypoint struct {
	X, Y float64
	// Weight is the waypoint's popularity: within each Diameter16 ×
	// Diameter16 tile of the map, the k-th most popular waypoint has
	// weight 1/k^s (Zipf; s is Config.Zipf, 1 for NewMap), times 1/j^t
	// for the j-th most popular tile (t is Config.TileZipf, 0 for NewMap).
	Weight float64
}

// Map is a generated arena: a W × H rectangle (m) with obstacles and a
// connected waypoint graph whose edges keep BotRadius clear of every
// obstacle. It is immutable after NewMap and safe for concurrent use.
type Map struct {
	W, H      float64
	Obstacles []Obstacle
	Waypoints []Waypoint

	adjStart []int32 // CSR adjacency of the waypoint graph
	adj      []int32
	obsGrid  *cellGrid
	wpGrid   *cellGrid
	cumW     []float64 // cumulative waypoint weights, for spawn draws
	scratch  sync.Pool // *searchScratch
}

// ErrMap reports a map whose waypoint graph came out too small.
var ErrMap = errors.New("arena: map generation failed")

// NewMap generates the map of a w × h arena from rng: random obstacles,
// waypoints by dart throwing in free space, edges between close waypoints
// with a clear line, the largest connected component kept.
func NewMap(w, h float64, rng *rand.Rand) (*Map, error) {
	return newMap(w, h, zipfExponent, 0, rng)
}

// newMap is NewMap with waypoint popularity exponent zipf within a tile
// and tileZipf across tiles (Config.Zipf, Config.TileZipf).
func newMap(w, h, zipf, tileZipf float64, rng *rand.Rand) (*Map, error) {
	if !(w >= 1 && h >= 1) || math.IsInf(w*h, 0) {
		return nil, fmt.Errorf("%w: size %g × %g m", ErrMap, w, h)
	}
	m := &Map{W: w, H: h}
	area := w * h
	nObs := int(math.Round(area / obstacleArea))
	for range nObs {
		sx := obstacleMinSide + rng.Float64()*(obstacleMaxSide-obstacleMinSide)
		sy := obstacleMinSide + rng.Float64()*(obstacleMaxSide-obstacleMinSide)
		cx, cy := rng.Float64()*w, rng.Float64()*h
		m.Obstacles = append(m.Obstacles, Obstacle{cx - sx/2, cy - sy/2, cx + sx/2, cy + sy/2})
	}
	m.obsGrid = newCellGrid(w, h, gridCell, len(m.Obstacles), func(i int) (float64, float64, float64, float64) {
		o := m.Obstacles[i]
		return o.MinX - waypointMargin - BotRadius, o.MinY - waypointMargin - BotRadius, o.MaxX + waypointMargin + BotRadius, o.MaxY + waypointMargin + BotRadius
	})

	// Waypoints by dart throwing with a minimum spacing.
	target := max(4, int(math.Round(area/waypointArea)))
	pts := make([][2]float64, 0, target)
	near := make(map[[2]int][]int32) // spacing grid, cell = spacing
	key := func(x, y float64) [2]int {
		return [2]int{int(x / waypointSpacing), int(y / waypointSpacing)}
	}
	edge := BotRadius + waypointMargin
	for try := 0; try < 30*target && len(pts) < target; try++ {
		x := edge + rng.Float64()*(w-2*edge)
		y := edge + rng.Float64()*(h-2*edge)
		if !(x >= edge && x <= w-edge && y >= edge && y <= h-edge) || !m.free(x, y, edge) {
			continue
		}
		k := key(x, y)
		ok := true
		for dx := -1; dx <= 1 && ok; dx++ {
			for dy := -1; dy <= 1 && ok; dy++ {
				for _, j := range near[[2]int{k[0] + dx, k[1] + dy}] {
					if math.Hypot(pts[j][0]-x, pts[j][1]-y) < waypointSpacing {
						ok = false
						break
					}
				}
			}
		}
		if ok {
			near[k] = append(near[k], int32(len(pts)))
			pts = append(pts, [2]float64{x, y})
		}
	}
	all := newCellGrid(w, h, gridCell, len(pts), func(i int) (float64, float64, float64, float64) {
		return pts[i][0], pts[i][1], pts[i][0], pts[i][1]
	})
	// Edges to waypoints within edgeRange with a clear line.
	nbr := make([][]int32, len(pts))
	for i, p := range pts {
		all.visit(p[0]-edgeRange, p[1]-edgeRange, p[0]+edgeRange, p[1]+edgeRange, func(j int32) bool {
			q := pts[j]
			if int(j) > i && math.Hypot(q[0]-p[0], q[1]-p[1]) <= edgeRange && m.Clear(p[0], p[1], q[0], q[1]) {
				nbr[i] = append(nbr[i], j)
				nbr[j] = append(nbr[j], int32(i))
			}
			return true
		})
	}
	// Keep the largest connected component.
	comp := make([]int32, len(pts))
	for i := range comp {
		comp[i] = -1
	}
	best, bestSize := int32(-1), 0
	for s := range pts {
		if comp[s] >= 0 {
			continue
		}
		c, size := int32(s), 0
		stack := []int32{int32(s)}
		comp[s] = c
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			size++
			for _, u := range nbr[v] {
				if comp[u] < 0 {
					comp[u] = c
					stack = append(stack, u)
				}
			}
		}
		if size > bestSize {
			best, bestSize = c, size
		}
	}
	if bestSize < 2 {
		return nil, fmt.Errorf("%w: %g × %g m: the waypoint graph has fewer than 2 connected waypoints", ErrMap, w, h)
	}
	newIdx := make([]int32, len(pts))
	for i := range pts {
		newIdx[i] = -1
		if comp[i] == best {
			newIdx[i] = int32(len(m.Waypoints))
			m.Waypoints = append(m.Waypoints, Waypoint{X: pts[i][0], Y: pts[i][1]})
		}
	}
	m.adjStart = make([]int32, 1, len(m.Waypoints)+1)
	for i := range pts {
		if newIdx[i] < 0 {
			continue
		}
		for _, j := range nbr[i] {
			m.adj = append(m.adj, newIdx[j])
		}
		slices.Sort(m.adj[m.adjStart[len(m.adjStart)-1]:])
		m.adjStart = append(m.adjStart, int32(len(m.adj)))
	}
	m.wpGrid = newCellGrid(w, h, gridCell, len(m.Waypoints), func(i int) (float64, float64, float64, float64) {
		p := m.Waypoints[i]
		return p.X, p.Y, p.X, p.Y
	})
	m.assignPopularity(rng, zipf, tileZipf)
	return m, nil
}

// assignPopularity ranks the waypoints of each Diameter16 tile in random
// order and gives the k-th weight 1/k^zipf; with tileZipf > 0, it then
// ranks the tiles in random order and scales the weights of the j-th by
// 1/j^tileZipf.
func (m *Map) assignPopularity(rng *rand.Rand, zipf, tileZipf float64) {
	tiles := map[[2]int][]int{}
	var keys [][2]int
	for i, p := range m.Waypoints {
		k := [2]int{int(p.X / Diameter16), int(p.Y / Diameter16)}
		if _, ok := tiles[k]; !ok {
			keys = append(keys, k)
		}
		tiles[k] = append(tiles[k], i)
	}
	for _, k := range keys { // first-seen order: deterministic
		ids := tiles[k]
		rng.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
		for r, i := range ids {
			m.Waypoints[i].Weight = 1 / math.Pow(float64(r+1), zipf)
		}
	}
	if tileZipf > 0 {
		rng.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
		for j, k := range keys {
			f := 1 / math.Pow(float64(j+1), tileZipf)
			for _, i := range tiles[k] {
				m.Waypoints[i].Weight *= f
			}
		}
	}
	m.cumW = make([]float64, len(m.Waypoints))
	sum := 0.0
	for i, p := range m.Waypoints {
		sum += p.Weight
		m.cumW[i] = sum
	}
}

// free reports whether (x, y) is inside the map and at least margin from
// every obstacle.
func (m *Map) free(x, y, margin float64) bool {
	if !(x >= 0 && x <= m.W && y >= 0 && y <= m.H) {
		return false
	}
	g := m.obsGrid
	c := g.clampCellY(y)*g.nx + g.clampCell(x)
	for _, i := range g.items[g.start[c]:g.start[c+1]] {
		if m.Obstacles[i].Contains(x, y, margin) {
			return false
		}
	}
	return true
}

// Inside reports whether (x, y) is inside the map and outside every
// obstacle.
func (m *Map) Inside(x, y float64) bool { return m.free(x, y, 0) }

// Clear reports whether a bot can walk the straight line between two points:
// the segment stays BotRadius from every obstacle. (Its ends must be in the
// map; the map is convex.)
func (m *Map) Clear(x0, y0, x1, y1 float64) bool { return m.clear(x0, y0, x1, y1, BotRadius) }

// Visible reports whether nothing blocks the line of sight between two
// points (obstacles are walls from floor to ceiling).
func (m *Map) Visible(x0, y0, x1, y1 float64) bool { return m.clear(x0, y0, x1, y1, 0) }

// clear walks the obstacle grid's cells itself rather than through
// cellGrid.visit: a line of sight is tested for every opponent a bot scans
// and every rocket every frame, and the callback cost more than the test.
func (m *Map) clear(x0, y0, x1, y1, margin float64) bool {
	g := m.obsGrid
	cx0, cx1 := g.clampCell(min(x0, x1)), g.clampCell(max(x0, x1))
	cy0, cy1 := g.clampCellY(min(y0, y1)), g.clampCellY(max(y0, y1))
	for cy := cy0; cy <= cy1; cy++ {
		for c := cy*g.nx + cx0; c <= cy*g.nx+cx1; c++ {
			for _, i := range g.items[g.start[c]:g.start[c+1]] {
				if m.Obstacles[i].segmentHits(x0, y0, x1, y1, margin) {
					return false
				}
			}
		}
	}
	return true
}

// Neighbours returns the waypoints joined to waypoint i (read-only).
func (m *Map) Neighbours(i int) []int32 { return m.adj[m.adjStart[i]:m.adjStart[i+1]] }

// DrawWaypoint returns a waypoint drawn with probability proportional to
// its weight.
func (m *Map) DrawWaypoint(rng *rand.Rand) int {
	x := rng.Float64() * m.cumW[len(m.cumW)-1]
	return min(sort.SearchFloat64s(m.cumW, x), len(m.cumW)-1)
}

// ChooseGoal returns a destination for a bot at waypoint cur: a waypoint
// other than cur within goalRadius, drawn with probability proportional to
// its weight (cur's neighbour if there is no other candidate).
func (m *Map) ChooseGoal(cur int, rng *rand.Rand) int {
	s := m.getScratch()
	defer m.scratch.Put(s)
	p := m.Waypoints[cur]
	cand := s.cand[:0]
	sum := 0.0
	m.wpGrid.visit(p.X-goalRadius, p.Y-goalRadius, p.X+goalRadius, p.Y+goalRadius, func(j int32) bool {
		q := m.Waypoints[j]
		if int(j) != cur && math.Hypot(q.X-p.X, q.Y-p.Y) <= goalRadius {
			cand = append(cand, j)
		}
		return true
	})
	slices.Sort(cand) // grid order is deterministic too, but make it obvious
	s.cand = cand
	if len(cand) == 0 {
		return int(m.Neighbours(cur)[0])
	}
	for _, j := range cand {
		sum += m.Waypoints[j].Weight
	}
	x := rng.Float64() * sum
	for _, j := range cand {
		x -= m.Waypoints[j].Weight
		if x < 0 {
			return int(j)
		}
	}
	return int(cand[len(cand)-1])
}

// NearestWaypoint returns the waypoint nearest to (x, y) (ties: lowest
// index).
func (m *Map) NearestWaypoint(x, y float64) int {
	best, bestD := -1, math.Inf(1)
	for r := gridCell; best < 0 || r < bestD+gridCell; r *= 2 {
		m.wpGrid.visit(x-r, y-r, x+r, y+r, func(j int32) bool {
			q := m.Waypoints[j]
			d := math.Hypot(q.X-x, q.Y-y)
			if d < bestD || (d == bestD && int(j) < best) {
				best, bestD = int(j), d
			}
			return true
		})
		if r > 2*(m.W+m.H) {
			break
		}
	}
	return best
}

// searchScratch is the per-search state of NextHop, reused through a pool.
type searchScratch struct {
	stamp  []uint32
	gen    uint32
	g      []float64
	parent []int32
	open   openHeap
	cand   []int32
}

func (m *Map) getScratch() *searchScratch {
	if s, ok := m.scratch.Get().(*searchScratch); ok {
		return s
	}
	n := len(m.Waypoints)
	return &searchScratch{stamp: make([]uint32, n), g: make([]float64, n), parent: make([]int32, n)}
}

type openItem struct {
	f float64
	v int32
}

// openHeap is a binary min-heap on (f, v), written out so that pushes do
// not box their items.
type openHeap []openItem

func (h openHeap) less(i, j int) bool {
	return h[i].f < h[j].f || (h[i].f == h[j].f && h[i].v < h[j].v)
}

func (h *openHeap) push(it openItem) {
	*h = append(*h, it)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *openHeap) pop() openItem {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a.less(l, m) {
			m = l
		}
		if r < n && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func (m *Map) dist(a, b int32) float64 {
	p, q := m.Waypoints[a], m.Waypoints[b]
	return math.Hypot(p.X-q.X, p.Y-q.Y)
}

// Path returns the shortest path over the waypoint graph from waypoint a to
// waypoint b (A* with the straight-line distance), as the waypoints after a
// up to and including b, appended to dst. The graph is connected, so a path
// always exists; a == b gives no waypoints.
func (m *Map) Path(dst []int32, a, b int) []int32 {
	if a == b {
		return dst
	}
	s := m.getScratch()
	defer m.scratch.Put(s)
	s.gen++
	if s.gen == 0 { // wrapped: clear the stamps
		clear(s.stamp)
		s.gen = 1
	}
	src, goal := int32(a), int32(b)
	s.open = s.open[:0]
	s.stamp[src], s.g[src], s.parent[src] = s.gen, 0, -1
	s.open.push(openItem{m.dist(src, goal), src})
	for len(s.open) > 0 {
		it := s.open.pop()
		v := it.v
		if it.f > s.g[v]+m.dist(v, goal)+1e-9 {
			continue // stale entry
		}
		if v == goal {
			break
		}
		for _, u := range m.Neighbours(int(v)) {
			g := s.g[v] + m.dist(v, u)
			if s.stamp[u] != s.gen || g < s.g[u] {
				s.stamp[u], s.g[u], s.parent[u] = s.gen, g, v
				s.open.push(openItem{g + m.dist(u, goal), u})
			}
		}
	}
	start := len(dst)
	for v := goal; v != src; v = s.parent[v] {
		dst = append(dst, v)
	}
	slices.Reverse(dst[start:])
	return dst
}

// Region returns the index of the RegionSize × RegionSize cell holding
// (x, y), row-major over the map, and the number of cells.
func (m *Map) Region(x, y float64) (idx, n int) {
	nx := int(math.Ceil(m.W / RegionSize))
	ny := int(math.Ceil(m.H / RegionSize))
	cx := min(max(int(x/RegionSize), 0), nx-1)
	cy := min(max(int(y/RegionSize), 0), ny-1)
	return cy*nx + cx, nx * ny
}
