package arena

import "math"

// Obstacle is an axis-aligned rectangle bots cannot enter (m).
type Obstacle struct {
	MinX, MinY, MaxX, MaxY float64
}

// Contains reports whether (x, y) lies inside o grown by margin.
func (o Obstacle) Contains(x, y, margin float64) bool {
	return x > o.MinX-margin && x < o.MaxX+margin && y > o.MinY-margin && y < o.MaxY+margin
}

// segmentHits reports whether the segment (x0,y0)-(x1,y1) meets o grown by
// margin (slab test, boundaries included).
func (o Obstacle) segmentHits(x0, y0, x1, y1, margin float64) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := x1-x0, y1-y0
	clip := func(p, q float64) bool { // p·t <= q
		if p == 0 {
			return q >= 0
		}
		r := q / p
		if p < 0 {
			if r > t1 {
				return false
			}
			t0 = max(t0, r)
		} else {
			if r < t0 {
				return false
			}
			t1 = min(t1, r)
		}
		return true
	}
	return clip(-dx, x0-(o.MinX-margin)) && clip(dx, (o.MaxX+margin)-x0) &&
		clip(-dy, y0-(o.MinY-margin)) && clip(dy, (o.MaxY+margin)-y0) && t0 <= t1
}

// cellGrid is a static uniform grid over [0,w]×[0,h] listing, for every
// cell, the items whose bounding box overlaps it (CSR layout).
type cellGrid struct {
	cell   float64
	nx, ny int
	start  []int32 // len nx*ny+1
	items  []int32
}

// newCellGrid indexes n items whose bounding boxes box(i) returns.
func newCellGrid(w, h, cell float64, n int, box func(i int) (x0, y0, x1, y1 float64)) *cellGrid {
	g := &cellGrid{cell: cell, nx: max(1, int(math.Ceil(w/cell))), ny: max(1, int(math.Ceil(h/cell)))}
	count := make([]int32, g.nx*g.ny+1)
	each := func(i int, fn func(c int)) {
		x0, y0, x1, y1 := box(i)
		cx0, cx1 := g.clampCell(x0), g.clampCell(x1)
		cy0, cy1 := g.clampCellY(y0), g.clampCellY(y1)
		for cy := cy0; cy <= cy1; cy++ {
			for cx := cx0; cx <= cx1; cx++ {
				fn(cy*g.nx + cx)
			}
		}
	}
	for i := range n {
		each(i, func(c int) { count[c+1]++ })
	}
	for c := 1; c < len(count); c++ {
		count[c] += count[c-1]
	}
	g.start = count
	g.items = make([]int32, count[len(count)-1])
	fill := make([]int32, g.nx*g.ny)
	for i := range n {
		each(i, func(c int) {
			g.items[g.start[c]+fill[c]] = int32(i)
			fill[c]++
		})
	}
	return g
}

func (g *cellGrid) clampCell(x float64) int {
	c := int(math.Floor(x / g.cell))
	return min(max(c, 0), g.nx-1)
}

func (g *cellGrid) clampCellY(y float64) int {
	c := int(math.Floor(y / g.cell))
	return min(max(c, 0), g.ny-1)
}

// visit calls fn for every item listed in a cell overlapping the box (an
// item may be visited more than once) until fn returns false.
func (g *cellGrid) visit(x0, y0, x1, y1 float64, fn func(i int32) bool) {
	cx0, cx1 := g.clampCell(x0), g.clampCell(x1)
	cy0, cy1 := g.clampCellY(y0), g.clampCellY(y1)
	for cy := cy0; cy <= cy1; cy++ {
		for cx := cx0; cx <= cx1; cx++ {
			c := cy*g.nx + cx
			for _, it := range g.items[g.start[c]:g.start[c+1]] {
				if !fn(it) {
					return
				}
			}
		}
	}
}
