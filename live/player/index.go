package player

import (
	"cmp"
	"math"
	"slices"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/world"
)

// The interest filter. Every frame the gateway buckets the node's objects
// into a uniform grid over the first two attributes of the space (one, in a
// one-dimensional space), with cells about half as wide as the players'
// interest boxes. A player's visible set is then read from the cells its
// boxes overlap instead of from every object on the node. Boxes that are
// unbounded in a gridded attribute fall back to the scan of every object.

// maxCellsPerObject bounds the grid's size (cells grow if a sparse world
// would need more).
const maxCellsPerObject = 4

type grid struct {
	on         bool
	gd         int // gridded dimensions: 1 or 2
	cell       float64
	min        [2]float64
	n          [2]int
	start      []int32 // CSR: objects of cell c are idx[start[c]:start[c+1]]
	idx        []int32
	stamp      []uint32 // per object: the query that last collected it
	query      uint32
	candidates []int32
}

type replicaInfo = replica.Info

// index builds the grid over g.objs for this frame's players' boxes.
func (g *Gateway) index(n *node.Node) {
	g.grid.on = false
	if len(g.objs) < 64 || len(g.order) == 0 { // a scan is as cheap
		return
	}
	// Cell: half the mean width of the players' first boxes.
	var sum float64
	var k int
	for _, s := range g.order {
		if obj, _, ok := n.Lookup(s.avatar); ok {
			g.boxes = obj.Interest(g.boxes[:0])
			if len(g.boxes) > 0 {
				if w := g.boxes[0].Max[0] - g.boxes[0].Min[0]; w > 0 && !math.IsInf(w, 0) {
					sum += w
					k++
				}
			}
		}
	}
	if k > 0 {
		g.grid.build(g.objs, g.dims, sum/float64(k)/2)
	}
}

// build buckets objs into cells of side cell (grown if the world is
// sparse). Objects at a non-finite location are left out: no box contains
// them.
func (gr *grid) build(objs []replicaInfo, dims int, cell float64) {
	gr.on = false
	gr.gd = min(dims, 2)
	lo := [2]float64{math.Inf(1), math.Inf(1)}
	hi := [2]float64{math.Inf(-1), math.Inf(-1)}
	for i := range objs {
		p := objs[i].State.Location()
		if gr.finite(p) {
			for d := range gr.gd {
				lo[d], hi[d] = min(lo[d], p[d]), max(hi[d], p[d])
			}
		}
	}
	if math.IsInf(lo[0], 1) { // no object at a finite location
		lo, hi = [2]float64{}, [2]float64{}
	}
	if !(cell > 0) || math.IsInf(cell, 0) {
		return
	}
	for {
		cells := 1.0
		for d := range gr.gd {
			cells *= math.Floor((hi[d]-lo[d])/cell) + 1
		}
		if cells <= float64(maxCellsPerObject*len(objs)+16) {
			break
		}
		cell *= 2
	}
	cells := 1
	for d := range gr.gd {
		gr.n[d] = int((hi[d]-lo[d])/cell) + 1
		cells *= gr.n[d]
	}
	gr.cell, gr.min = cell, lo
	// Counting sort of the objects by cell (objects stay in ID order within
	// a cell).
	gr.start = slices.Grow(gr.start[:0], cells+1)[:cells+1]
	clear(gr.start)
	for i := range objs {
		if p := objs[i].State.Location(); gr.finite(p) {
			gr.start[gr.cellOf(p)+1]++
		}
	}
	for c := 1; c <= cells; c++ {
		gr.start[c] += gr.start[c-1]
	}
	gr.idx = slices.Grow(gr.idx[:0], int(gr.start[cells]))[:gr.start[cells]]
	pos := append(gr.candidates[:0], gr.start[:cells]...) // next free slot per cell
	for i := range objs {
		if p := objs[i].State.Location(); gr.finite(p) {
			c := gr.cellOf(p)
			gr.idx[pos[c]] = int32(i)
			pos[c]++
		}
	}
	gr.candidates = pos[:0]
	gr.stamp = slices.Grow(gr.stamp[:0], len(objs))[:len(objs)]
	clear(gr.stamp)
	gr.query = 0
	gr.on = true
}

func (gr *grid) finite(p world.Point) bool {
	for d := range gr.gd {
		if math.IsInf(p[d], 0) || math.IsNaN(p[d]) {
			return false
		}
	}
	return true
}

func (gr *grid) coord(v float64, d int) int {
	c := (v - gr.min[d]) / gr.cell
	if !(c > 0) { // negative or NaN
		return 0
	}
	return min(int(min(c, float64(gr.n[d]-1))), gr.n[d]-1)
}

func (gr *grid) cellOf(p world.Point) int {
	c := gr.coord(p[0], 0)
	if gr.gd == 2 {
		c += gr.n[0] * gr.coord(p[1], 1)
	}
	return c
}

// visible returns the indices in g.objs (ascending, so in ID order) of the
// objects inside g.boxes, plus the avatar's.
func (g *Gateway) visible(avatar world.ObjectID) []int32 {
	return g.grid.visible(g.objs, g.boxes, g.dims, avatar)
}

// visible returns the indices in objs (ascending) of the objects inside
// boxes, plus avatar's; objs are the ones the grid was built over.
func (gr *grid) visible(objs []replicaInfo, boxes []world.Box, dims int, avatar world.ObjectID) []int32 {
	out := gr.candidates[:0]
	bounded := gr.on
	for _, b := range boxes {
		for d := range gr.gd {
			if math.IsInf(b.Min[d], 0) || math.IsInf(b.Max[d], 0) {
				bounded = false
			}
		}
	}
	if !bounded { // the reference: every object against every box
		for i := range objs {
			o := &objs[i]
			in := o.ID == avatar
			for j := 0; j < len(boxes) && !in; j++ {
				in = boxes[j].Contains(o.State.Location(), dims)
			}
			if in {
				out = append(out, int32(i))
			}
		}
		gr.candidates = out
		return out
	}
	gr.query++
	if gr.query == 0 { // wrapped: forget every stamp
		clear(gr.stamp)
		gr.query = 1
	}
	var lo, hi [2]int
	for _, b := range boxes {
		if b.Validate(dims) != nil || b.Empty(dims) {
			continue
		}
		for d := range gr.gd {
			lo[d], hi[d] = gr.coord(b.Min[d], d), gr.coord(b.Max[d], d)
		}
		if gr.gd == 1 {
			lo[1], hi[1] = 0, 0
		}
		for y := lo[1]; y <= hi[1]; y++ {
			for x := lo[0]; x <= hi[0]; x++ {
				c := x + gr.n[0]*y
				for _, i := range gr.idx[gr.start[c]:gr.start[c+1]] {
					if gr.stamp[i] != gr.query && b.Contains(objs[i].State.Location(), dims) {
						gr.stamp[i] = gr.query
						out = append(out, i)
					}
				}
			}
		}
	}
	if i, ok := slices.BinarySearchFunc(objs, avatar, func(o replicaInfo, id world.ObjectID) int { return cmp.Compare(o.ID, id) }); ok && gr.stamp[i] != gr.query {
		out = append(out, int32(i))
	}
	slices.Sort(out)
	gr.candidates = out
	return out
}
